"""The v2 protocol in core: alternatives picked per seed, falsifiers that can catch something, fixed control
bands, budgets and the undertrained status, the regime; each refusal once."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import torch

from toyscale.core import (
    BASELINE_IN_PLACE,
    Claim,
    ClaimError,
    EarlyStopping,
    Falsifier,
    check_results,
    claims_table,
    tally,
    train,
)
from toyscale.core.builders import RecordClaims, non_inferior_check, paired_check, vanishing_check
from toyscale.core.calibration import calibrate
from toyscale.core.claims import UNDERTRAINED, falsify, mark_undertrained, vanishes
from toyscale.core.pending import RE_AUDIT_PENDING
from toyscale.core.protocol import (
    ONE_SIDED,
    Alternative,
    Alternatives,
    Band,
    Knob,
    ProtocolError,
    Regime,
    budgets_of,
    undertrained_arms,
)

LR = Knob("lr", (1e-3, 3e-3), "standard practice")
ALTERNATIVES = Alternatives((Alternative("base_a", (LR,)), Alternative("base_b", (LR,))), pick_by="val", method_grid=2)


@dataclass
class _Result:
    metrics: dict[str, dict[str, float]]
    budgets: dict[str, tuple[int, int]] = field(default_factory=dict)


def _results() -> list[_Result]:
    """Five seeds: base_a wins on validation on seeds 0-2, base_b on 3-4; the method beats both on test."""
    out = []
    for s in range(5):
        a_val, b_val = (0.6, 0.5) if s < 3 else (0.5, 0.6)
        out.append(
            _Result(
                {
                    "method": {"auc": 0.80 + 0.01 * s, "val": 0.7},
                    "base_a": {"auc": 0.70 + 0.002 * s, "val": a_val},
                    "base_b": {"auc": 0.75 - 0.003 * s, "val": b_val},
                }
            )
        )
    return out


def test_a_knob_names_where_it_comes_from() -> None:
    with pytest.raises(ProtocolError, match="source must be one of"):
        Knob("lr", (1e-3,), "my hunch")


def test_every_alternative_gets_the_methods_tuning_budget() -> None:
    with pytest.raises(ProtocolError, match=r"base_b \(1\) differ"):
        Alternatives((Alternative("base_a", (LR,)), Alternative("base_b")), pick_by="val", method_grid=2)


def test_a_single_alternative_says_why_there_is_no_other() -> None:
    with pytest.raises(ProtocolError, match="only_one"):
        Alternatives((Alternative("base_a", (LR,)),), pick_by="val", method_grid=2)
    only = Alternatives((Alternative("base_a", (LR,)),), pick_by="val", method_grid=2, only_one="the one library")
    assert only.names == ("base_a",)


def test_core_picks_the_strongest_alternative_per_seed_and_names_it() -> None:
    results = _results()
    assert ALTERNATIVES.strongest(results) == ["base_a"] * 3 + ["base_b"] * 2
    check = paired_check("method", ALTERNATIVES, "auc", margin=0.01)
    claim = Claim("beats", "s", "m", check, "effect")
    assert claim.alternatives is ALTERNATIVES and claim.arms == ("method", "base_a", "base_b")
    (outcome,) = check_results([claim], results, range(5))
    assert outcome.verdict.winners == ("base_a", "base_a", "base_a", "base_b", "base_b")
    assert "per seed: base_a, base_a, base_a, base_b, base_b" in outcome.verdict.detail
    # each seed's Δ is against that seed's winner, never the better of the two on test
    assert outcome.verdict.values[3] == pytest.approx(0.83 - 0.741)
    record = outcome.as_dict()
    assert record["alternatives"] == {
        "arms": ["base_a", "base_b"],
        "pick_by": "val",
        "winners": ["base_a", "base_a", "base_a", "base_b", "base_b"],
    }


def test_an_alternative_in_the_methods_place_meets_the_strongest_remaining_one() -> None:
    claim = Claim("beats", "s", "m", paired_check("method", ALTERNATIVES, "auc", margin=0.01), "effect")
    in_place = Falsifier("a_as_method", BASELINE_IN_PLACE, ("beats",), lambda c: c, "base_a as the method", "base_a")

    def run(config: object, *, seed: int) -> _Result:
        result = _results()[seed]
        result.metrics["method"] = dict(result.metrics["base_a"])  # base_a trained under the method's name
        return result

    (outcome,) = falsify(in_place, [claim], run, range(5), None)
    assert outcome.verdict.winners == ("base_b",) * 5  # base_a is excluded from the pick
    assert not outcome.verdict.passed


def test_a_falsifier_whose_values_are_exactly_zero_is_refused_once_the_chapter_left_the_pending_list() -> None:
    claim = Claim("beats", "s", "m", paired_check("method", "base_a", "auc", margin=0.01), "effect")
    same = Falsifier("a_as_method", BASELINE_IN_PLACE, ("beats",), lambda c: c, "base_a under the method's name")

    def run(config: object, *, seed: int) -> _Result:
        result = _results()[seed]
        result.metrics["method"] = dict(result.metrics["base_a"])
        return result

    with pytest.raises(ClaimError, match=r"exactly zero on every seed .* can never catch a weak baseline"):
        falsify(same, [claim], run, range(5), None, "toy")
    pending = sorted(RE_AUDIT_PENDING)[0]
    assert not falsify(same, [claim], run, range(5), None, pending)[0].verdict.passed  # pending: not refused


def test_a_control_band_is_at_most_half_the_effects_margin() -> None:
    with pytest.raises(ProtocolError, match=r"fraction in \(0, 0.5\]"):
        Band(0.6)
    with pytest.raises(ClaimError, match="validates and its band together"):
        Claim("ctl", "s", "m", lambda rs: vanishes([1.0, 2.0], [1.0, 2.1], band=0.1), "control", validates="beats")


def test_core_refuses_a_control_whose_band_is_wider_than_it_declares() -> None:
    results = _results()
    effect = Claim("beats", "s", "m", paired_check("method", "base_a", "auc", margin=0.02), "effect")
    wide = vanishing_check("base_b", "base_a", "auc", band=Band(0.5), effect_margin=0.2, validates="beats")
    control = Claim("ctl", "s", "m", wide, "control")
    assert control.validates == "beats" and control.band == Band(0.5)
    with pytest.raises(ClaimError, match=r"wider than 0\.5 of the margin 0\.02"):
        check_results([effect, control], results, range(5), "toy")
    assert check_results([effect, control], results, range(5), sorted(RE_AUDIT_PENDING)[0])  # pending: not refused


def test_a_one_sided_control_shows_a_loss_beyond_its_band_as_its_own_row() -> None:
    results = _results()
    effect = Claim("beats", "s", "m", paired_check("method", "base_a", "auc", margin=0.02), "effect")
    check = vanishing_check("base_a", "method", "auc", band=Band(0.5, ONE_SIDED), effect_margin=0.02, validates="beats")
    control = Claim("ctl", "s", "m", check, "control")
    outcomes = check_results([effect, control], results, range(5), "toy")
    assert outcomes[1].verdict.passed  # the gain vanishes (it is a loss)...
    assert "loses beyond the band −0.01" in outcomes[1].control_loss  # ...and the loss is reported
    rows = claims_table(outcomes).rows
    assert rows[-1][0] == "ctl (loss)" and rows[-1][-1] == "loss beyond the band"
    assert outcomes[1].as_dict()["band"] == {"fraction": 0.5, "sided": ONE_SIDED}


def test_non_inferiority_from_names() -> None:
    results = _results()
    assert non_inferior_check("base_a", "base_b", "auc", margin=0.1)(results).passed
    assert not non_inferior_check("base_a", "base_b", "auc", margin=0.01)(results).passed


def test_the_regime_shows_in_the_table_and_the_json() -> None:
    regime = Regime("context shift σ_z", 1.0, "the paper's page views")
    claim = Claim("beats", "s", "m", paired_check("method", "base_a", "auc", margin=0.01), "effect", regime=regime)
    (outcome,) = check_results([claim], _results(), range(5))
    assert "[regime: context shift σ_z = 1]" in claims_table([outcome]).rows[0][3]
    assert outcome.as_dict()["regime"] == {"property": "context shift σ_z", "value": 1.0, "source": regime.source}


def test_train_reports_the_steps_used_against_the_budget() -> None:
    model = torch.nn.Linear(1, 1)
    x = torch.ones(4, 1)
    scores = iter([0.1, 0.5, 0.4, 0.3, 0.2, 0.1])
    log = train(
        model,
        lambda m, b: ((m(b) - 1) ** 2).mean(),
        lambda epoch: [x, x],
        epochs=6,
        lr=0.01,
        early_stopping=EarlyStopping(lambda m: next(scores), patience=2),
    )
    assert log.budget == (4, 12)  # best after epoch 2 of 6, two steps an epoch


def test_an_arm_peaking_at_the_end_of_its_budget_on_most_seeds_is_undertrained() -> None:
    results = _results()
    for s, result in enumerate(results):
        result.budgets = {"method": (40, 100), "base_a": (100 if s < 3 else 50, 100)}
    budgets = budgets_of(results)
    late = undertrained_arms(budgets)
    assert list(late) == ["base_a"] and "3 of 5 calibration seeds" in late["base_a"] and "100/100" in late["base_a"]
    claim = Claim("beats", "s", "m", paired_check("method", "base_a", "auc", margin=0.01), "effect")
    other = Claim("other", "s", "m", paired_check("method", "base_b", "auc", margin=0.5), "effect")
    outcomes = mark_undertrained(check_results([claim, other], results, range(5)), budgets)
    assert outcomes[0].status == UNDERTRAINED and not outcomes[0].fails_strict and not outcomes[0].reproduced
    assert outcomes[1].status == "FAIL" and outcomes[1].fails_strict  # it reads no undertrained arm
    assert outcomes[0].as_dict()["budgets"]["base_a"][0] == [100, 100]
    assert "undertrained" in outcomes[0].as_dict()
    assert tally(outcomes).undertrained == 1
    assert calibrate("toy", [claim], results, range(1000, 1005)).as_dict()["budgets"]["base_a"][0] == [100, 100]


def test_expected_and_reason_come_from_the_calibration_record() -> None:
    record = {"chapter": "toy", "claims": [{"id": "beats", "expected": False}, {"id": "holds", "expected": True}]}
    declared = RecordClaims(record, {"beats": "the alternatives tie once tuned alike"})
    check = paired_check("method", "base_a", "auc", margin=0.01)
    claim = declared.effect("beats", "s", "m", check)
    assert not claim.expected and claim.reason == "the alternatives tie once tuned alike"
    assert declared.effect("holds", "s", "m", check).expected
    with pytest.raises(ClaimError, match="not in the calibration record of toy"):
        declared.effect("absent", "s", "m", check)
    with pytest.raises(ClaimError, match="give its reason"):
        RecordClaims(record).effect("beats", "s", "m", check)
