"""Claims: paired checks, bounds, evaluation over seeds and the table."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from toyscale.core import (
    BASELINE_IN_PLACE,
    MECHANISM_OFF,
    Claim,
    ClaimError,
    Falsifier,
    TooFewSeeds,
    Verdict,
    all_of,
    at_most,
    check_results,
    claims_table,
    evaluate,
    falsify,
    paired,
    per_seed,
    survivors,
    tally,
    unmet,
    vanishes,
    within,
)
from toyscale.core.claims import STATUS_MEANINGS


def test_paired_passes_only_with_margin_and_wins() -> None:
    assert paired([1.0, 1.1, 1.2], [0.0, 0.0, 0.0], margin=0.5).passed
    assert not paired([1.0, 1.1, 1.2], [0.0, 0.0, 0.0], margin=2.0).passed  # mean below margin
    # a big mean carried by one seed while the others lose does not pass
    assert not paired([10.0, -0.1, -0.1], [0.0, 0.0, 0.0], margin=0.1).passed


def test_paired_lower_is_better_flips_the_sign() -> None:
    verdict = paired([0.30, 0.31], [0.40, 0.41], margin=0.05, higher_is_better=False, name="Δ loss")
    assert verdict.passed
    assert "+0.1000" in verdict.detail and "wins 2/2" in verdict.detail


def test_paired_rejects_mismatched_seeds() -> None:
    with pytest.raises(ValueError, match="same seeds"):
        paired([1.0], [1.0, 2.0], margin=0.0)


def test_within_at_most_and_all_of() -> None:
    assert within([0.98, 1.02], 0.95, 1.05, "PCOC").passed
    assert at_most([0.001, 0.003], 0.005, "Δ loss").passed
    assert not at_most([0.001, 0.013], 0.005, "Δ loss").passed
    assert not within([0.98, 1.2], 0.95, 1.05, "PCOC").passed
    assert not all_of(Verdict(True, "a"), Verdict(False, "b")).passed


def test_unreproducible_claim_needs_a_reason() -> None:
    with pytest.raises(ValueError, match="reason"):
        Claim("x", "s", "m", lambda rs: Verdict(True, ""), "effect", expected=False)


@dataclass
class _Result:
    score: float
    baseline: float


def _run(config: object = None, *, seed: int = 0) -> _Result:
    return _Result(score=1.0 + 0.01 * seed, baseline=0.5)


def test_evaluate_runs_each_seed_once_and_builds_the_table() -> None:
    good = Claim(
        "better",
        "A beats B by 10%",
        "score",
        lambda rs: paired([r.score for r in rs], [r.baseline for r in rs], margin=0.1),
        "effect",
    )
    hopeless = Claim(
        "hopeless",
        "A gains +4% online",
        "score",
        lambda rs: paired([r.baseline for r in rs], [r.score for r in rs], margin=0.0),
        "effect",
        expected=False,
        reason="no online traffic in a toy",
    )
    outcomes = evaluate([good, hopeless], _run, seeds=[0, 1, 2], chapter="toy")
    assert [o.status for o in outcomes] == ["reproduced", "not reproduced"]
    assert not any(o.fails_strict for o in outcomes) and unmet(outcomes) == []
    table = claims_table(outcomes)
    assert table.column("verdict") == ["reproduced", "not reproduced"]
    assert table.column("claim") == ["better", "hopeless"]
    # the caption defines the verdicts the table prints, and only those
    assert "reproduced: an effect" in table.caption and "not reproduced: the toy" in table.caption
    assert "holds:" not in table.caption
    assert table.column("kind") == ["effect", "effect"]
    assert "no online traffic" in str(table) and "<table" in table._repr_html_()
    assert outcomes[1].as_dict()["expected"] is False
    # the cells stay short: what is measured, the full check and why a claim is not expected are notes
    row = dict(zip(table.columns, table.rows[1], strict=True))
    assert "no online traffic" not in " ".join(map(str, row.values()))
    assert row["the toy's numbers"].startswith("Δ: ") and "margin 0" in row["the toy's numbers"]
    (term, note) = table.notes[1]
    assert term == "hopeless" and "Measured: score." in note and "not expected: no online traffic" in note
    assert '<dl class="toyscale-table-notes"' in table._repr_html_()


def test_per_seed_reads_one_metric_per_result_and_names_what_is_missing() -> None:
    @dataclass
    class _R:
        metrics: dict

    results = [_R({"a": {"auc": 0.5}}), _R({"a": {"auc": 0.75}})]
    assert per_seed(results, "a", "auc") == [0.5, 0.75]
    with pytest.raises(ValueError, match="'gauc'"):
        per_seed(results, "a", "gauc")


def test_unmet_names_each_expected_claim_that_failed() -> None:
    too_strict = Claim(
        "strict",
        "A beats B by 60%",
        "score",
        lambda rs: paired([r.score for r in rs], [r.baseline for r in rs], margin=0.6),
        "effect",
    )
    outcomes = evaluate([too_strict], _run, seeds=[0, 1], chapter="toy")
    assert len(unmet(outcomes)) == 1 and unmet(outcomes)[0].startswith("strict: ")


# ---------------------------------------------------------------------------------------------
# Kinds, statuses, the zero-spread guard, falsifiers and the tally (CLAIMS.md §1, §5)
# ---------------------------------------------------------------------------------------------


def _claim(kind: str, check, **extra) -> Claim:
    return Claim("c", "the paper says", "the toy measures", check, kind, **extra)


def _passes(rs) -> Verdict:
    return paired([r.score for r in rs], [r.baseline for r in rs], margin=0.1)


def _fails(rs) -> Verdict:
    return paired([r.baseline for r in rs], [r.score for r in rs], margin=0.0)


@pytest.mark.parametrize(
    ("kind", "expected", "check", "status", "strict"),
    [
        ("effect", True, _passes, "reproduced", False),
        ("effect", True, _fails, "FAIL", True),
        ("effect", False, _fails, "not reproduced", False),
        ("effect", False, _passes, "not reproduced (margin cleared)", False),
        ("control", True, _passes, "holds", False),
        ("control", True, _fails, "FAIL", True),
        ("mechanism", True, _passes, "by construction", False),
        ("mechanism", True, _fails, "FAIL", True),
        ("modelled", True, _passes, "modelled", False),
        ("modelled", True, _fails, "FAIL", True),
        ("modelled", False, _fails, "not reproduced", False),
    ],
)
def test_every_kind_expected_and_outcome_has_a_status(kind, expected, check, status, strict) -> None:
    claim = _claim(kind, check, expected=expected, reason="" if expected else "the toy lacks the mechanism")
    (outcome,) = check_results([claim], [_run(seed=s) for s in range(3)], [0, 1, 2])
    assert outcome.status == status and outcome.fails_strict is strict
    # every status is defined, only a reproduced effect is counted, and none says "pass"
    assert status in STATUS_MEANINGS and "pass" not in status
    assert outcome.reproduced is (status == "reproduced")


def test_a_claim_that_needs_what_the_toy_lacks_is_not_measurable() -> None:
    claim = _claim("effect", None, expected=False, needs="an online A/B test")
    (outcome,) = check_results([claim], [_run(seed=0)], [0])
    assert outcome.status == "not measurable here" and not outcome.fails_strict and not outcome.verdict.passed
    assert "an online A/B test" in str(claims_table([outcome]))
    with pytest.raises(ClaimError, match="check=None"):
        _claim("effect", _passes, expected=False, needs="an online A/B test")
    with pytest.raises(ClaimError, match="no check"):
        _claim("effect", None)


def test_kind_is_required_and_checked() -> None:
    with pytest.raises(TypeError):
        Claim("c", "s", "m", _passes)  # type: ignore[call-arg]
    with pytest.raises(ClaimError, match="kind"):
        _claim("finding", _passes)


def test_a_reason_may_not_type_a_measured_number() -> None:
    with pytest.raises(ClaimError, match="types a number"):
        _claim("effect", _fails, expected=False, reason="the gain is only 0.004, below the margin")
    with pytest.raises(ClaimError, match="types a number"):
        _claim("effect", _fails, expected=False, reason="within 5 % of the baseline")
    _claim("effect", _fails, expected=False, reason="the within-context term cancels what a page shares")


@dataclass
class _Flat:
    score: float
    baseline: float


def test_the_guard_refuses_an_effect_whose_values_cannot_vary() -> None:
    constant = [_Flat(score=2.0, baseline=1.0) for _ in range(4)]
    with pytest.raises(ClaimError, match="modelled"):
        check_results([_claim("effect", _passes)], constant, range(4))
    with pytest.raises(ClaimError, match="modelled"):
        check_results([_claim("control", _passes)], constant, range(4))
    # a spread under 1 % of the margin is as good as none
    barely = [_Flat(score=2.0 + 1e-5 * s, baseline=1.0) for s in range(4)]
    with pytest.raises(ClaimError, match="barely vary"):
        check_results([_claim("effect", _passes)], barely, range(4))
    # declared honestly, the same numbers are accepted
    assert check_results([_claim("modelled", _passes)], constant, range(4))[0].status == "modelled"
    assert check_results([_claim("mechanism", _passes)], constant, range(4))[0].status == "by construction"
    saturated = _claim("effect", _passes, saturated="every culprit named on every seed")
    assert check_results([saturated], constant, range(4))[0].status == "reproduced"
    # one seed has no spread to judge; falsified runs switch the guard off
    assert check_results([_claim("effect", _passes)], constant[:1], [0])[0].status == "reproduced"
    assert check_results([_claim("effect", _passes)], constant, range(4), guard=False)[0].status == "reproduced"
    with pytest.raises(ClaimError, match="saturated"):
        _claim("mechanism", _passes, saturated="why")


def test_a_constant_side_condition_does_not_trip_the_guard_when_the_comparison_varies() -> None:
    results = [_run(seed=s) for s in range(4)]

    def check(rs) -> Verdict:
        return all_of(_passes(rs), within([1.0 for _ in rs], 0.5, 1.5, name="equal budget"))

    assert check_results([_claim("effect", check)], results, range(4))[0].status == "reproduced"


def test_verdicts_carry_their_values_and_margin() -> None:
    verdict = paired([0.3, 0.5], [0.1, 0.1], margin=0.1, name="Δ")
    assert verdict.values == pytest.approx((0.2, 0.4)) and verdict.margin == 0.1 and verdict.name == "Δ"
    lower = paired([0.1, 0.1], [0.3, 0.5], margin=0.1, higher_is_better=False)
    assert lower.values == pytest.approx((0.2, 0.4))  # signed so that positive favours a
    both = all_of(verdict, within([1.0, 2.0], 0.0, 3.0, "x"))
    assert [leaf.values for leaf in both.leaves()] == [verdict.values, (1.0, 2.0)]
    assert within([1.0], 0.0, float("inf"), "x").margin == 0.0  # a one-sided bound sets no scale


def test_vanishes_passes_only_inside_its_band() -> None:
    assert vanishes([0.51, 0.49, 0.5], [0.5, 0.5, 0.5], band=0.02).passed
    assert not vanishes([0.6, 0.58, 0.61], [0.5, 0.5, 0.5], band=0.02).passed
    assert not vanishes([0.4, 0.42, 0.39], [0.5, 0.5, 0.5], band=0.02).passed  # a large loss is no control either
    with pytest.raises(ValueError, match="band"):
        vanishes([1.0], [1.0], band=0.0)


@dataclass(frozen=True)
class _ToyConfig:
    mechanism: bool = True  # the method's key term
    method_is_baseline: bool = False  # run the baseline under the method's name


def _toy_run(config: _ToyConfig | None = None, *, seed: int = 0) -> _Result:
    config = config or _ToyConfig()
    noise = 0.01 * ((seed * 7) % 5)
    baseline = 0.5 + noise
    gain = 0.3 if config.mechanism and not config.method_is_baseline else 0.0
    return _Result(score=baseline + gain + 0.002 * seed, baseline=baseline)


TOY_FALSIFIERS = [
    Falsifier("term_off", MECHANISM_OFF, ("better",), lambda c: replace(c, mechanism=False), "the key term off"),
    Falsifier(
        "baseline_as_method", BASELINE_IN_PLACE, ("better",), lambda c: replace(c, method_is_baseline=True), "baseline"
    ),
]


def test_falsify_reruns_the_experiment_and_the_claim_fails_under_each_falsifier() -> None:
    good = _claim("effect", _passes)
    good = replace(good, id="better")
    assert not unmet(evaluate([good], _toy_run, range(5), _ToyConfig()))
    for falsifier in TOY_FALSIFIERS:
        outcomes = falsify(falsifier, [good], _toy_run, range(5), _ToyConfig())
        assert not survivors(outcomes), survivors(outcomes)
    # a claim that survives its falsifier is named
    lenient = replace(good, check=lambda rs: Verdict(True, "always", values=(1.0, 2.0)))
    assert survivors(falsify(TOY_FALSIFIERS[0], [lenient], _toy_run, range(5), _ToyConfig()))[0].startswith("better")
    with pytest.raises(ValueError, match="unknown claims"):
        falsify(TOY_FALSIFIERS[0], [replace(good, id="other")], _toy_run, range(3), _ToyConfig())
    with pytest.raises(ClaimError, match="kind"):
        Falsifier("f", "switched off", ("better",), lambda c: c, "")


def test_tally_counts_effects_controls_and_the_rest() -> None:
    results = [_run(seed=s) for s in range(3)]
    claims = [
        replace(_claim("effect", _passes), id="e1"),
        replace(_claim("effect", _fails, expected=False, reason="the toy lacks it"), id="e2"),
        replace(_claim("effect", None, expected=False, needs="an online test"), id="e3"),
        replace(_claim("control", _passes), id="c1"),
        replace(_claim("mechanism", _passes), id="m1"),
        replace(_claim("modelled", _passes), id="d1"),
    ]
    counts = tally(check_results(claims, results, range(3)))
    assert (counts.effects, counts.reproduced, counts.not_measurable) == (2, 1, 1)
    assert (counts.controls, counts.controls_passed, counts.by_construction, counts.modelled) == (1, 1, 1, 1)
    assert counts.line() == (
        "effects 1 of 2 reproduced · controls 1/1 · by construction 1 · modelled 1 · not measurable 1"
    )


def test_outcome_json_has_kind_seeds_and_per_seed_values() -> None:
    (outcome,) = check_results([_claim("effect", _passes)], [_run(seed=s) for s in (3, 4)], [3, 4], "toy")
    record = outcome.as_dict()
    assert record["kind"] == "effect" and record["seeds"] == [3, 4] and record["status"] == "reproduced"
    assert record["values"] == pytest.approx([0.53, 0.54])
    assert record["parts"][0]["margin"] == 0.1


def test_a_check_that_needs_more_seeds_says_so_in_its_row() -> None:
    def spread(results: list) -> Verdict:
        if len(results) < 2:
            raise TooFewSeeds(2, len(results))
        return Verdict(True, "ok", (1.0, 2.0), 0.5)

    claim = Claim("spread", "a spread over seeds", "sd", spread, kind="mechanism")
    (outcome,) = check_results([claim], [object()], [7])
    assert outcome.status == "needs at least 2 seeds" and "needs at least 2 seeds, got 1" in outcome.verdict.detail
    assert outcome.fails_strict  # not checked is not as expected
    (outcome,) = check_results([claim], [object(), object()], [7, 8])
    assert outcome.status == "by construction"
