"""`toyscale audit` on a toy chapter: the clean toy has no finding, and each broken rule is caught once, by name.

The toy chapter (synthetic results, no training) has one effect against two alternatives picked on
validation, in a declared regime, with a mechanism-off falsifier and each alternative in the method's
place; one control validating it with a band of half its margin; interior budgets; a notebook whose
prose glues its numbers. Its calibration record is made by `core.calibration.calibrate`, as a
chapter's is, with a twin standing for the record made under perturbed numerics. Each defect below
breaks one rule of it.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from toyscale.core import BASELINE_IN_PLACE, MECHANISM_OFF, Claim, Falsifier, Verdict, vanishes
from toyscale.core.audit import ChapterFiles, audit, violations
from toyscale.core.builders import paired_check, vanishing_check
from toyscale.core.calibration import calibrate
from toyscale.core.pending import RE_AUDIT_PENDING
from toyscale.core.protocol import Alternative, Alternatives, Band, Knob, Regime

MARGIN = 0.05
KNOB = Knob("lr", (1e-3, 1e-2), "standard practice")
ALTERNATIVES = Alternatives((Alternative("alt_a", (KNOB,)), Alternative("alt_b", (KNOB,))), "val", method_grid=2)
REGIME = Regime("side information share", 0.3, "the paper's setting")


@dataclass(frozen=True)
class Config:
    method: str = "method"  # what plays under the method's name: 'method', 'off', 'alt_a' or 'alt_b'


@dataclass
class Result:
    metrics: dict[str, dict[str, float]]
    budgets: dict[str, tuple[int, int]] = field(default_factory=dict)


def run(config: Config, *, seed: int) -> Result:
    """The toy experiment: the method gains 0.1 over either alternative; the flat world has no gain."""
    wobble = [0.02 * math.sin(seed * k + 1.0) for k in (1.3, 2.1, 2.9, 3.7, 4.3)]
    alt_a, alt_b = 0.70 + wobble[0], 0.70 + wobble[1]
    method = {"method": 0.80 + wobble[2], "off": 0.70 + wobble[2], "alt_a": alt_a, "alt_b": alt_b}[config.method]
    return Result(
        {
            "method": {"score": method, "val": 0.7},
            "alt_a": {"score": alt_a, "val": 0.5 + wobble[0]},
            "alt_b": {"score": alt_b, "val": 0.5 + wobble[1]},
            "method_flat": {"score": 0.7 + wobble[3]},
            "alt_flat": {"score": 0.7 + wobble[4]},
        },
        budgets={"method": (60 + seed % 7, 100), "alt_a": (50 + seed % 5, 100), "alt_b": (70, 100)},
    )


def _claims() -> list[Claim]:
    return [
        Claim(
            "beats",
            "The method beats every alternative.",
            "test score, method vs the strongest alternative on validation",
            paired_check("method", ALTERNATIVES, "score", margin=MARGIN),
            "effect",
            regime=REGIME,
        ),
        Claim(
            "flat_no_gain",
            "(negative control) Without side information the method has nothing to use.",
            "test score in the flat world",
            vanishing_check(
                "method_flat", "alt_flat", "score", band=Band(0.5), effect_margin=MARGIN, validates="beats"
            ),
            "control",
        ),
    ]


FALSIFIERS = [
    Falsifier("mechanism_off", MECHANISM_OFF, ("beats",), lambda c: replace(c, method="off"), "the key term off"),
    *(
        Falsifier(f"{arm}_as_method", BASELINE_IN_PLACE, ("beats",), lambda c, a=arm: replace(c, method=a), arm, arm)
        for arm in ALTERNATIVES.names
    ),
]

NOTEBOOK = """# %% [markdown]
# # Toy: the paper reports a gain of 4.4 % online
#
# %%
result = run(Config(), seed=0)

# %% [markdown]
# The method's gain is {glue:text}`gain`, at $\\rho = 0.3$, with `margin=0.05`.
"""


def _record(claims: list[Claim], falsifiers: list[Falsifier]) -> dict[str, Any]:
    seeds = range(1000, 1012)
    results = [run(Config(), seed=s) for s in seeds]
    falsified = [(f, [run(f.change(Config()), seed=s) for s in seeds]) for f in falsifiers]
    return calibrate("toy", claims, results, seeds, falsified=falsified).as_dict()


CLEAN_RECORD = _record(_claims(), FALSIFIERS)
TWIN = "default.aten-default"  # the default config's record under perturbed numerics (`PERTURBED_NUMERICS`)


def _files(tmp_path: Path, name: str = "toy", notebook: str = NOTEBOOK, **changes: Any) -> ChapterFiles:
    path = tmp_path / "toy.py"
    path.write_text(notebook)
    files = ChapterFiles(
        name=name,
        claims=_claims(),
        falsifiers=FALSIFIERS,
        records={"default": copy.deepcopy(CLEAN_RECORD), TWIN: copy.deepcopy(CLEAN_RECORD)},
        notebook=path,
        results=[run(Config(), seed=s) for s in range(5)],
    )
    return replace(files, **changes)


def _part(record: dict[str, Any], claim_id: str) -> dict[str, Any]:
    return next(c for c in record["claims"] if c["id"] == claim_id)["parts"][0]


def test_the_clean_toy_chapter_meets_every_rule(tmp_path: Path) -> None:
    assert CLEAN_RECORD["claims"][0]["pass_rate"] >= 0.95
    assert all(rate >= 0.95 for f in CLEAN_RECORD["falsifiers"] for rate in f["fail_rates"].values())
    assert audit(_files(tmp_path)) == []


# ----- one defect per rule: (what it breaks, the change, the rule, a phrase of the message) -----


def _with_claim(files: ChapterFiles, index: int, claim: Claim) -> ChapterFiles:
    claims = list(files.claims)
    claims[index] = claim
    return replace(files, claims=claims)


def _bad_kind(files: ChapterFiles) -> ChapterFiles:
    unmeasured = Claim("online", "An online test.", "none", None, "effect", expected=False, needs="an A/B test")
    object.__setattr__(unmeasured, "kind", "result")  # what Claim refuses: a claim of no known kind
    return replace(files, claims=[*files.claims, unmeasured])


def _expected_off_record(files: ChapterFiles) -> ChapterFiles:
    return _with_claim(files, 0, replace(files.claims[0], expected=False, reason="the alternatives tie"))


def _not_expected_but_supported(files: ChapterFiles) -> ChapterFiles:
    for record in files.records.values():
        next(c for c in record["claims"] if c["id"] == "beats")["expected"] = False
    return _expected_off_record(files)


def _twin_does_not_support(files: ChapterFiles) -> ChapterFiles:
    next(c for c in files.records[TWIN]["claims"] if c["id"] == "beats")["pass_rate"] = 0.8
    return files


def _falsifier_not_rerun(files: ChapterFiles) -> ChapterFiles:
    falsifiers = files.records[TWIN]["falsifiers"]
    falsifiers[:] = [f for f in falsifiers if f["name"] != "alt_b_as_method"]  # as `calibrate --no-falsifiers` would
    return files


def _no_twin(files: ChapterFiles) -> ChapterFiles:
    del files.records[TWIN]
    return files


def _margin_off_record(files: ChapterFiles) -> ChapterFiles:
    check = paired_check("method", ALTERNATIVES, "score", margin=0.06)
    return _with_claim(files, 0, replace(files.claims[0], check=check))


def _few_seeds(files: ChapterFiles) -> ChapterFiles:
    files.records["default"]["seeds"] = files.records["default"]["seeds"][:8]
    return files


def _fixed_baseline(files: ChapterFiles) -> ChapterFiles:
    claim = Claim("beats", "s", "m", paired_check("method", "alt_a", "score", margin=MARGIN), "effect", regime=REGIME)
    return _with_claim(files, 0, claim)


def _alternative_never_in_place(files: ChapterFiles) -> ChapterFiles:
    return replace(files, falsifiers=[f for f in files.falsifiers if f.in_place != "alt_b"])


def _zero_falsifier(files: ChapterFiles) -> ChapterFiles:
    part = files.records["default"]["falsifiers"][1]["parts"]["beats"][0]
    part.update(mean=0.0, sd=0.0)  # what a baseline under the method's name against itself records
    return files


def _undertrained_arm(files: ChapterFiles) -> ChapterFiles:
    files.records["default"]["budgets"]["alt_a"] = [[100, 100]] * 8 + [[60, 100]] * 4
    return files


def _flat_check(band: float) -> Callable[[list[Result]], Verdict]:
    """The control's check written by hand, with its band typed in."""

    def check(results: list[Result]) -> Verdict:
        flat = [r.metrics["method_flat"]["score"] for r in results]
        return vanishes(flat, [r.metrics["alt_flat"]["score"] for r in results], band=band)

    return check


def _control_without_band(files: ChapterFiles) -> ChapterFiles:
    return _with_claim(files, 1, Claim("flat_no_gain", "s", "m", _flat_check(0.025), "control"))


def _wide_band(files: ChapterFiles) -> ChapterFiles:
    # a band typed by hand, fitted to the control's own values, and calibrated with it
    claim = Claim("flat_no_gain", "s", "m", _flat_check(0.04), "control", validates="beats", band=Band(0.5))
    _part(files.records["default"], "flat_no_gain")["margin"] = 0.04
    return _with_claim(files, 1, claim)


def _control_cannot_move(files: ChapterFiles) -> ChapterFiles:
    _part(files.records["default"], "flat_no_gain")["sd"] = 0.0
    return files


def _near_deterministic(files: ChapterFiles) -> ChapterFiles:
    _part(files.records["default"], "beats")["sd"] = 0.001
    return files


def _no_regime(files: ChapterFiles) -> ChapterFiles:
    return _with_claim(files, 0, replace(files.claims[0], regime=None))


def _typed_prose(files: ChapterFiles) -> ChapterFiles:
    files.notebook.write_text(NOTEBOOK + "# %% [markdown]\n# So the method gains 0.12 over the baseline.\n")
    return files


DEFECTS: dict[str, tuple[Callable[[ChapterFiles], ChapterFiles], str, str]] = {
    "a claim of no known kind": (_bad_kind, "kinds", "has kind 'result'"),
    "expected against the record": (_expected_off_record, "record", "expected=False in code, True in the default"),
    "a margin the record was not made with": (_margin_off_record, "record", "checks margins [0.06] in code"),
    "not expected, though its record supports it": (_not_expected_but_supported, "record", "default record supports"),
    "expected, and not supported on other numerics": (
        _twin_does_not_support,
        "record",
        f"its {TWIN} record passes 80%",
    ),
    "a falsifier the record did not rerun": (_falsifier_not_rerun, "record", "did not rerun the falsifiers ['alt_b"),
    "eight calibration seeds": (_few_seeds, "seeds", "8 calibration seeds, fewer than 12"),
    "no record under perturbed numerics": (_no_twin, "environments", "no twin made under a perturbed numerical"),
    "a fixed baseline": (_fixed_baseline, "alternatives", "compares with a fixed baseline"),
    "an alternative never in the method's place": (_alternative_never_in_place, "falsifiers", "'alt_b' of 'beats'"),
    "a falsifier with Δ ≡ 0": (_zero_falsifier, "falsifiers", "exactly zero on every calibration seed"),
    "an arm stopped at its budget": (_undertrained_arm, "budgets", "arm 'alt_a' peaks in the last tenth"),
    "a control with no band": (_control_without_band, "controls", "names no effect it validates"),
    "a band wider than half the margin": (_wide_band, "controls", "over 0.5 of the margin 0.05 of 'beats'"),
    "a control that cannot move": (_control_cannot_move, "controls", "does not move over the calibration seeds"),
    "a near-deterministic effect": (_near_deterministic, "near-deterministic", "under a tenth of it"),
    "no regime": (_no_regime, "regime", "does not record the regime"),
    "a number typed in prose": (_typed_prose, "prose", "toy.py:10 types a number"),
}


@pytest.mark.parametrize("defect", list(DEFECTS))
def test_audit_catches_each_broken_rule_with_its_message(tmp_path: Path, defect: str) -> None:
    breaks, rule, message = DEFECTS[defect]
    findings = audit(breaks(_files(tmp_path)))
    assert {f.rule for f in findings} == {rule}, [f.line() for f in findings]  # a record defect: once per record
    assert any(message in f.message for f in findings) and all(f.fix for f in findings)
    assert violations(findings) == findings


def test_the_fix_for_a_perturbed_record_names_its_numerics(tmp_path: Path) -> None:
    (finding,) = audit(_no_twin(_files(tmp_path)))
    assert finding.fix.startswith("add it: ATEN_CPU_CAPABILITY=default python -m toyscale calibrate toy")


def test_a_pending_chapter_only_warns(tmp_path: Path) -> None:
    pending = sorted(RE_AUDIT_PENDING)[0]
    findings = audit(_no_regime(_files(tmp_path, name=pending)))
    assert findings and all(f.warning for f in findings) and not violations(findings)
    assert findings[0].line().startswith(f"warning {pending} [regime]")


def test_a_record_without_budgets_warns_and_does_not_fail(tmp_path: Path) -> None:
    files = _files(tmp_path)
    del files.records["default"]["budgets"]
    (finding,) = audit(files)
    assert finding.rule == "budgets" and finding.warning and "reports no budgets" in finding.message
    # a chapter whose arms stop at no validation point says why, and the warning goes
    assert not audit(replace(files, no_budgets="a simulator: no arm is trained"))


def test_a_record_whose_code_changed_or_that_has_no_fingerprint_is_a_finding(tmp_path: Path) -> None:
    files = _files(tmp_path)
    current = {"toyscale.x": "1", "config": "2"}
    for record in files.records.values():
        record["fingerprint"] = dict(current)
    assert not audit(replace(files, fingerprints={"default": current}))
    changed = {**current, "toyscale.x": "3"}
    findings = audit(replace(files, fingerprints={"default": changed}))  # the twin is of the default config too
    assert [f.message.split(":")[0] for f in findings] == ["the default record", f"the {TWIN} record"]
    assert all(f.rule == "fingerprint" and "toyscale.x changed" in f.message for f in findings)
    assert "calibrate" in findings[0].fix and findings[1].fix.startswith("recalibrate: ATEN_CPU_CAPABILITY=default")
    del files.records["default"]["fingerprint"]
    (finding, _) = audit(replace(files, fingerprints={"default": changed}))
    assert "records no compute-path fingerprint" in finding.message


def test_committed_results_that_cannot_be_read_are_a_finding_not_a_crash(tmp_path: Path) -> None:
    problem = "data file toy.npz is stale: toyscale.x changed. Rebuild it with: python -m toyscale data --rebuild toy"
    (finding,) = audit(_files(tmp_path, results=None, results_problem=problem))
    assert finding.rule == "fingerprint" and "cannot be read" in finding.message and "stale" in finding.message
    assert not finding.warning
