"""The declarative builders fit the chapters' hand-written claims: built from names, the same outcome.

Each test rebuilds one existing claim with `core.builders` (its expected field read from the chapter's
committed calibration record) and checks it on synthetic results: the outcome's JSON must be identical,
so a chapter's re-audit can switch to the builders with no verdict change.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from toyscale.core import Claim, check_results
from toyscale.core.builders import RecordClaims, non_inferior
from toyscale.core.calibration import load_record
from toyscale.genmm import combatvla
from toyscale.genmm.combatvla import claims as combatvla_claims
from toyscale.recsys import jrc, rec4ad
from toyscale.recsys.rec4ad import claims as rec4ad_claims


def _synthetic(arms: tuple[str, ...], metrics: tuple[str, ...], seed: int = 0) -> list[SimpleNamespace]:
    """Five results whose `metrics` and `calibrated` tables hold random values for every arm and metric."""
    generator = np.random.default_rng(seed)

    def table() -> dict[str, dict[str, float]]:
        return {arm: {m: float(generator.normal(0.7, 0.02)) for m in metrics} for arm in arms}

    return [SimpleNamespace(metrics=table(), calibrated=table()) for _ in range(5)]


def _same_outcome(original: Claim, built: Claim, results: Sequence[SimpleNamespace]) -> None:
    """The two claims' outcomes on `results`, as JSON, are equal."""
    ours = check_results([original], results, range(5), "x", guard=False)[0].as_dict()
    theirs = check_results([built], results, range(5), "x", guard=False)[0].as_dict()
    assert theirs == ours


def _original(claims: Sequence[Claim], claim_id: str) -> Claim:
    return next(c for c in claims if c.id == claim_id)


def test_the_reference_chapter_declares_every_effect_with_alternatives_and_a_regime() -> None:
    # JRC, the first chapter re-audited under v2: every measured effect names its alternatives and regime
    for claim in jrc.CLAIMS:
        if claim.kind == "effect" and claim.measurable:
            assert claim.alternatives is not None and claim.regime is not None, claim.id
        if claim.kind == "control":
            assert claim.validates and claim.band is not None, claim.id


def test_rec4ad_headline_compares_with_the_alternative_stronger_on_validation() -> None:
    # Rec4Ad's headline is built from names with alternatives (ads only, IPS): per seed, its baseline is the one
    # with the higher validation AUC, so it equals a fixed-baseline check against that arm, seed by seed
    original = _original(rec4ad.CLAIMS, "rec_samples_raise_auc")
    assert original.alternatives.names == ("ads_only", "ips")
    results = _synthetic(("mix_domain", "ads_only", "ips"), ("auc", "validation_auc"))
    for r in results:
        r.metrics["mix_domain"]["auc"] += 0.03
    picked = [max(("ads_only", "ips"), key=lambda arm: r.metrics[arm]["validation_auc"]) for r in results]
    verdict = check_results([original], results, range(5), guard=False)[0].verdict
    assert list(verdict.winners) == picked
    expected = [r.metrics["mix_domain"]["auc"] - r.metrics[arm]["auc"] for r, arm in zip(results, picked, strict=True)]
    assert np.allclose(verdict.values, expected)
    assert verdict.passed and verdict.margin == rec4ad_claims.AUC_MARGIN


def test_combatvla_expected_is_what_its_record_says_and_non_inferiority_is_cores() -> None:
    declared = RecordClaims(load_record(combatvla), combatvla_claims.REASONS)
    for claim_id, expected in combatvla_claims.EXPECTED.items():
        assert declared.expected(claim_id) == expected
        assert declared.reason(claim_id) == ("" if expected else combatvla_claims.REASONS[claim_id])
    a, b = [0.5, 0.52, 0.47, 0.49, 0.51], [0.5, 0.5, 0.5, 0.5, 0.5]
    for margin in (0.0, 0.01, 0.04):
        ours = non_inferior(a, b, margin=margin, name="Δ benchmark")
        theirs = combatvla_claims.non_inferior(a, b, margin=margin, name="Δ benchmark")
        assert ours == theirs
