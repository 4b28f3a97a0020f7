"""Claims: paired checks, bounds, evaluation over seeds and the table."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from toyscale.core import Claim, Verdict, all_of, at_most, claims_table, evaluate, paired, per_seed, unmet, within


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
        Claim("x", "s", "m", lambda rs: Verdict(True, ""), expected=False)


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
    )
    hopeless = Claim(
        "hopeless",
        "A gains +4% online",
        "score",
        lambda rs: paired([r.baseline for r in rs], [r.score for r in rs], margin=0.0),
        expected=False,
        reason="no online traffic in a toy",
    )
    outcomes = evaluate([good, hopeless], _run, seeds=[0, 1, 2], chapter="toy")
    assert [o.status for o in outcomes] == ["pass", "not reproduced at toy scale"]
    assert not any(o.fails_strict for o in outcomes) and unmet(outcomes) == []
    table = claims_table(outcomes)
    assert table.column("verdict") == ["pass", "not reproduced at toy scale"]
    assert "no online traffic" in str(table) and "<table" in table._repr_html_()
    assert outcomes[1].as_dict()["expected"] is False


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
        "A beats B by 100%",
        "score",
        lambda rs: paired([r.score for r in rs], [r.baseline for r in rs], margin=1.0),
    )
    outcomes = evaluate([too_strict], _run, seeds=[0, 1], chapter="toy")
    assert len(unmet(outcomes)) == 1 and unmet(outcomes)[0].startswith("strict: ")
