"""Fangorn's claims, their margins (set on calibration seeds), and the falsifiers under which they must fail.

Adaptive execution meets the strongest static policy a platform could fix in advance, tuned on
validation jobs (`experiment`), on job time, slot-seconds and a mix of concurrent jobs; the two
plug-ins that only run-time statistics make possible are credited apart: the hot-key split
(against the oracle, the best static plan in hindsight, which no static plan can beat on a hot key)
and the join branch from the real side size (against adaptive with the branch from the estimate).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from toyscale.core import BASELINE_IN_PLACE, MECHANISM_OFF, Claim, Falsifier, Verdict, at_most, paired, vanishes

from .experiment import ADAPTIVE, BEST_STATIC, OPTIMIZER, ORACLE, WORKLOADS, Result, cut

# Margins and win rules from `python -m toyscale calibrate fangorn --seeds 20` on calibration seeds 1000–1019,
# default config and --fast (the records: calibration/default.json and fast.json beside this module).
# "q05" / "q95": the 5th / 95th percentile of the means over five-seed windows of those seeds. The replay uses
# the committed cost model, so a seed repeats its numbers; the spread over seeds is the data's.
# Each margin sits about halfway between the falsifiers' q95 and the method's q05; every check wins on 4 of 5 seeds.
JOB_MARGIN = 0.11  # geomean job-time cut: method q05 0.228 (default) / 0.231 (fast) > 0.11 > falsifiers q95 0 / 0
SKEW_MARGIN = 0.3  # zipf cut vs the oracle: method q05 0.615 / 0.612 > 0.3 > falsifiers q95 −0.008 / −0.006
JOIN_MARGIN = 0.1  # small-join cut vs the estimate: method q05 0.192 / 0.186 > 0.1 > falsifiers q95 0.008 / 0.003
SLOT_MARGIN = 0.2  # slot-seconds cut (modelled): q05 0.336 / 0.339 > 0.2 > estimates q95 0.067 / 0.068
MIX_MARGIN = 0.2  # five-job mix, mean job-time cut: method q05 0.378 / 0.393 > 0.2 > falsifiers q95 0.012 / 0.010
UNIFORM_BAND = 0.03  # the uniform control's window means: [−0.013, −0.009] (default) / [−0.001, 0.006] (fast), so
# ±0.03 passes every window on both; the effects' window means lie far above it (geomean q05 0.228)
# near_oracle_everywhere passes no window on either config (its window means' q05 1.446 / 1.433); like the
# slot-seconds it barely moves over seeds, so both are declared modelled.
NEAR_ORACLE = 1.25  # adaptive's job time at most this × the oracle's on every workload
FAR_OFF = 1.5  # a static policy "loses badly" at this × the oracle


def _zeros(results: Sequence[Result]) -> list[float]:
    return [0.0] * len(results)


def _cut_check(metric: str, baseline: str, margin: float, name: str):
    def check(results: Sequence[Result]) -> Verdict:
        return paired([cut(r, metric, baseline) for r in results], _zeros(results), margin=margin, name=name)

    return check


def _check_uniform(results: Sequence[Result]) -> Verdict:
    d = [cut(r, "job_s uniform", BEST_STATIC) for r in results]
    return vanishes(d, _zeros(results), band=UNIFORM_BAND, name="uniform job-time cut, adaptive vs best static")


def _check_near_oracle(results: Sequence[Result]) -> Verdict:
    return at_most(
        [r.metrics[ADAPTIVE]["worst ratio"] for r in results], NEAR_ORACLE, name="adaptive / oracle, worst workload"
    )


def _statics(result: Result) -> list[str]:
    return [a for a in result.metrics if a.startswith("static")]


def _check_statics_lose(results: Sequence[Result]) -> Verdict:
    # the static policy that comes closest to the oracle everywhere: its worst ratio must still be ≥ FAR_OFF
    best = [min(r.metrics[a]["worst ratio"] for a in _statics(r)) for r in results]
    return paired(best, [FAR_OFF] * len(results), margin=0.0, name="min over static policies of the worst ratio − 1.5")


CLAIMS = [
    Claim(
        id="beats_best_static",
        kind="effect",
        statement=(
            "Adaptive execution on a mutable job graph shortens jobs against plans fixed before they run "
            "(dynamic adjustment removed about a billion task instances in a day in production)."
        ),
        metric=(
            "geometric-mean simulated job time over the five test workloads on 64 slots, adaptive vs the best static "
            "policy (the grid of fixed parallelisms and the static optimizer, chosen on validation jobs), paired by "
            "seed; the attribution table credits each plug-in"
        ),
        check=_cut_check("geomean job_s", BEST_STATIC, JOB_MARGIN, "geomean job-time cut, adaptive vs best static"),
    ),
    Claim(
        id="skew_split",
        kind="effect",
        statement="Splitting a skewed partition removes the straggler that no static plan can avoid.",
        metric="zipf hot key: job time, adaptive vs the oracle (the best static plan on this job, in hindsight)",
        check=_cut_check("job_s zipf hot key", ORACLE, SKEW_MARGIN, "zipf job-time cut, adaptive vs oracle"),
    ),
    Claim(
        id="join_branch",
        kind="effect",
        statement="Choosing the join branch from the real size of a side beats choosing it from the estimate.",
        metric="join, small side (1 % flagged, 50 % assumed): job time, adaptive vs adaptive with the join from the "
        "estimate (every other plug-in the same)",
        check=_cut_check(
            "job_s join, small side",
            "adaptive, join from estimate",
            JOIN_MARGIN,
            "small-join job-time cut, real vs estimated side",
        ),
    ),
    Claim(
        id="uniform_no_gain",
        kind="control",
        statement=(
            "(negative control) On uniform keys with no filter and no join, the statistics say what the estimates "
            "said: adaptive has nothing to add to the best static plan."
        ),
        metric="uniform: job time, adaptive vs the best static policy",
        check=_check_uniform,
    ),
    Claim(
        id="slot_seconds",
        kind="modelled",
        statement="Adaptive execution holds fewer resources: coalescing removes near-empty tasks.",
        metric=(
            "geometric-mean slot-seconds over the five workloads, adaptive vs the best static policy; the cut is set "
            "by the task counts the plans choose and the assumed start latency each batch task holds its slot "
            "through, so it barely moves over seeds: a model output"
        ),
        check=_cut_check("geomean slot_s", BEST_STATIC, SLOT_MARGIN, "geomean slot-seconds cut, vs best static"),
    ),
    Claim(
        id="mix_of_jobs",
        kind="effect",
        statement=(
            "Adaptive execution pays on a shared cluster, where jobs queue for the same slots and warm workers."
        ),
        metric="the five jobs submitted together on 64 slots and 16 warm workers: mean job time, adaptive vs the best "
        "static policy",
        check=_cut_check("mix job_s", BEST_STATIC, MIX_MARGIN, "mix mean job-time cut, adaptive vs best static"),
    ),
    Claim(
        id="near_oracle_everywhere",
        kind="modelled",
        statement="Adaptive execution stays within a small factor of the best static plan on every workload.",
        metric=(
            f"job time, adaptive ≤ {NEAR_ORACLE}× the oracle on each of the five workloads; the plans' structure sets "
            "the worst ratio, so seeds barely move it (a model output)"
        ),
        check=_check_near_oracle,
        expected=False,
        reason=(
            "coalescing aims at the batch target, so on the selective filter a couple of tasks hold the few rows "
            "that pass, while a static plan small enough for the warm workers runs more of them side by side"
        ),
    ),
    Claim(
        id="every_static_loses_somewhere",
        kind="modelled",
        statement="A plan fixed up front pays for every misestimate: each static plan loses badly on some workload.",
        metric=(
            f"the smallest, over the static policies, of the worst job time over the oracle's, against {FAR_OFF}; "
            "where a fixed plan loses is set by the assumed start latency and warm pool"
        ),
        check=_check_statics_lose,
    ),
]

# What must make each effect fail (CLAIMS.md §5).
_EFFECTS = ("beats_best_static", "skew_split", "join_branch", "mix_of_jobs")
FALSIFIERS = [
    Falsifier(
        "estimates",
        MECHANISM_OFF,
        _EFFECTS,
        lambda c: replace(c, method="estimates"),
        "the adaptive arm plans from the optimizer's estimates instead of the map stage's statistics "
        f"(it becomes the {OPTIMIZER})",
    ),
    Falsifier(
        "best_static_as_adaptive",
        BASELINE_IN_PLACE,
        _EFFECTS,
        lambda c: replace(c, method="best static"),
        "the static policy chosen on validation jobs runs under the adaptive arm's name",
    ),
]

__all__ = ["CLAIMS", "FALSIFIERS", "WORKLOADS"]
