"""Every chapter meets the claims protocol's static parts (the project's CLAIMS.md).

Each claim declares a kind; an expected effect has two falsifiers (the mechanism off, the strongest
baseline in the method's place) whose claims exist; a falsifier names only effects. Chapters whose
re-audit has not landed yet are listed in RE_AUDIT_PENDING and are held to the kinds only: the list
shrinks to empty as each chapter is converted.
"""

from __future__ import annotations

import pytest

from toyscale.chapters import CHAPTERS
from toyscale.core.claims import BASELINE_IN_PLACE, EFFECT, KINDS, MECHANISM_OFF
from toyscale.core.pending import RE_AUDIT_PENDING as V2_PENDING

RE_AUDIT_PENDING: set[str] = set()


@pytest.mark.parametrize("name", list(CHAPTERS))
def test_every_claim_declares_its_kind(name: str) -> None:
    module = CHAPTERS[name].load()
    assert all(claim.kind in KINDS for claim in module.CLAIMS)


@pytest.mark.parametrize("name", sorted(set(CHAPTERS) - RE_AUDIT_PENDING))
def test_every_expected_effect_has_both_falsifiers(name: str) -> None:
    module = CHAPTERS[name].load()
    claims = {claim.id: claim for claim in module.CLAIMS}
    falsifiers = list(getattr(module, "FALSIFIERS", ()))
    for falsifier in falsifiers:
        for claim_id in falsifier.claims:
            assert claim_id in claims, f"{name}: falsifier {falsifier.name} names no claim {claim_id!r}"
            assert claims[claim_id].kind == EFFECT, f"{name}: falsifier {falsifier.name} names a non-effect"
    for claim in claims.values():
        if claim.kind == EFFECT and claim.expected:
            kinds = {f.kind for f in falsifiers if claim.id in f.claims}
            # a claim with a single alternative (it says why there is no other) has none to put in the method's place
            single = claim.alternatives is not None and len(claim.alternatives.arms) == 1
            needed = {MECHANISM_OFF} if single else {MECHANISM_OFF, BASELINE_IN_PLACE}
            assert needed <= kinds, f"{name}: {claim.id} has falsifiers of kinds {kinds}"


def test_the_pending_list_names_only_chapters() -> None:
    assert set(CHAPTERS) >= RE_AUDIT_PENDING


def test_the_v2_pending_list_names_only_chapters() -> None:
    # core's list of chapters awaiting the v2 re-audit (issue 39): emptied as each re-audit lands
    assert set(CHAPTERS) >= V2_PENDING
