"""FaPES's claims, their margins (set on calibration seeds), and the falsifiers under which they must fail.

The headline is split in two (the review of 2026-12-01): FaPES against Optimus-like elastic
scaling (GPUs only, the user's batch), which is what the paper's "representative elastic scaling
schemes" most resemble, and what lending with cost-aware reclaim adds over Pollux-like elastic
scaling (GPUs and batch chosen together from the same fitted model), the strongest baseline that
does not lend. The SLO claim compares FaPES with naive lending, paired, on request latency.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from toyscale.core import BASELINE_IN_PLACE, MECHANISM_OFF, Claim, Falsifier, Verdict, all_of, at_most, paired, vanishes

from .experiment import Result, jct_cut, violation_cut

# Margins and win rules from `python -m toyscale calibrate fapes --seeds 20` on calibration seeds 1000–1019,
# default config and --fast (the records: calibration/default.json and fast.json beside this module).
# "q05" / "q95": the 5th / 95th percentile of the means over five-seed windows of those seeds. Each margin sits
# about halfway between the falsifiers' q95 and the method's q05; every check wins on 4 of 5 seeds.
JCT_MARGIN = 0.10  # method q05 0.149 (default) / 0.156 (fast) > 0.10 > joint_off q95 0.066 / 0.054
LENDING_MARGIN = 0.02  # method q05 0.043 / 0.040 > 0.02 > lending_off and pollux_as_fapes q95 0 / 0
# (Reclaim by kills, FaPES with its board but killing the newest jobs, was first tried as this claim's
# mechanism-off falsifier: it kept a cut of +0.030 ± 0.037, q95 0.054 above the method's q05, and failed only
# 59 % of windows: the checkpointed scale-in carries part of lending's cut, not all of it. The claim credits
# lending, so its mechanism-off falsifier is lending off; the notebook's attribution table shows the kills.)
SLO_MARGIN = 0.1  # share of fewer violations: method q05 0.239 / 0.242 > 0.1 > forecast_off, naive_as_fapes q95 0 / 0
P99_MARGIN = 0.03  # p99 latency (s): method q05 0.064 / 0.084 > 0.03 > forecast_off q95 −0.0002 / −0.0004
BURST_BAND = 0.06  # the burst control's window means: q05–q95 [−0.049, 0.008] (default) / [−0.029, 0.045] (fast),
# so ±0.06 passes ≥ 95 % of windows on both; on the normal day the effect's window means lie above it (q05 0.239)
LOW_LOAD_BAND = 0.02  # the low-load control's window means: [−0.007, 0.013] / [−0.006, 0.016], so ±0.02 passes
# ≥ 95 % on both; at the main load the lending effect's window means lie above it (q05 0.043 / 0.040)
MODEL_MARGIN = 0.03  # held-out error, prior − fitted: method q05 0.059 / 0.067 > 0.03 > fit_off q95 0 / 0
# goodput_1_8x passes no window on either config (its ratio's window means q95 1.21 / 1.23): expected=False.
GOODPUT_FACTOR = 1.8  # the paper's "up to 1.8×"


def _zeros(results: Sequence[Result]) -> list[float]:
    return [0.0] * len(results)


def _check_jct_over_optimus(results: Sequence[Result]) -> Verdict:
    cut = [jct_cut(r.metrics, "fapes", "optimus") for r in results]
    unfinished = [1.0 - min(m["completed"] for m in r.metrics.values()) for r in results]
    return all_of(
        paired(cut, _zeros(results), margin=JCT_MARGIN, name="mean-JCT cut, FaPES vs Optimus-like"),
        at_most(unfinished, 0.0, name="share of jobs unfinished (any policy)"),
    )


def _check_goodput(results: Sequence[Result]) -> Verdict:
    ratio = [r.metrics["fapes"]["job_goodput"] / r.metrics["optimus"]["job_goodput"] for r in results]
    return paired(
        ratio, [GOODPUT_FACTOR] * len(results), margin=0.0, name="per-job goodput ratio, FaPES / Optimus-like − 1.8"
    )


def _check_lending(results: Sequence[Result]) -> Verdict:
    cut = [jct_cut(r.metrics, "fapes", "pollux") for r in results]
    return paired(cut, _zeros(results), margin=LENDING_MARGIN, name="mean-JCT cut, FaPES vs Pollux-like")


def _check_slo(results: Sequence[Result]) -> Verdict:
    fewer = [violation_cut(r.metrics) for r in results]
    return all_of(
        paired(fewer, _zeros(results), margin=SLO_MARGIN, name="share of fewer SLO violations, FaPES vs naive"),
        paired(
            [r.metrics["fapes"]["p99_latency_s"] for r in results],
            [r.metrics["loan_naive"]["p99_latency_s"] for r in results],
            margin=P99_MARGIN,
            higher_is_better=False,
            name="p99 latency (s), naive − FaPES",
        ),
    )


def _check_burst(results: Sequence[Result]) -> Verdict:
    fewer = [violation_cut(r.burst, "burst_slo_per_1000") for r in results]
    return vanishes(fewer, _zeros(results), band=BURST_BAND, name="share of fewer SLO violations in the burst")


def _check_low_load(results: Sequence[Result]) -> Verdict:
    cut = [jct_cut(r.low, "fapes", "pollux") for r in results]
    return vanishes(cut, _zeros(results), band=LOW_LOAD_BAND, name="mean-JCT cut, FaPES vs Pollux-like, low load")


def _check_model(results: Sequence[Result]) -> Verdict:
    return paired(
        [r.metrics["fapes"]["model_error"] for r in results],
        [r.metrics["fapes"]["prior_error"] for r in results],
        margin=MODEL_MARGIN,
        higher_is_better=False,
        name="held-out step-time error, prior − fitted",
    )


CLAIMS = [
    Claim(
        id="jct_over_optimus",
        kind="effect",
        statement=("FaPES reduces job completion time by up to 24.8 % against representative elastic scaling schemes."),
        metric=(
            "mean JCT at the main load, FaPES vs Optimus-like elastic scaling (GPUs from the same fitted model, "
            "the user's batch, no lending), paired by seed; every policy finishes every job. Most of the cut is "
            "the joint batch choice, which Pollux-like scaling shares (see lending_over_pollux)"
        ),
        check=_check_jct_over_optimus,
    ),
    Claim(
        id="goodput_1_8x",
        kind="effect",
        statement="FaPES raises goodput up to 1.8× against representative elastic scaling schemes.",
        metric=(
            "per-job goodput (a job's work over its running time, relative to its requested configuration), "
            "mean over jobs, FaPES / Optimus-like, required above 1.8 on each seed"
        ),
        check=_check_goodput,
        expected=False,
        reason=(
            "the baseline is elastic too and uses the same fitted model, lent GPUs exist only in the evening and "
            "at night, and a job's speed-up is bounded by its synchronization cost and its noise scale; the paper's "
            "factor is a best case against its own baselines"
        ),
    ),
    Claim(
        id="lending_over_pollux",
        kind="effect",
        statement=(
            "(what lending adds) Loaning idle inference GPUs to training, and reclaiming them with minimal "
            "preemption overhead, shortens jobs beyond what joint GPU and batch-size scaling (Pollux) gets from "
            "the training pool alone."
        ),
        metric=(
            "mean JCT at the main load, FaPES vs Pollux-like elastic scaling (same model, no lending), paired by "
            "seed. The cut is lending's: with reclaim by kills instead of checkpointed scale-in, part of it remains "
            "(the chapter's attribution table)"
        ),
        check=_check_lending,
    ),
    Claim(
        id="low_load_no_lending_gain",
        kind="control",
        statement="(negative control) When the training pool has GPUs to spare, lending has nothing to add.",
        metric="mean JCT, FaPES vs Pollux-like, at a quarter of the default training load",
        check=_check_low_load,
    ),
    Claim(
        id="slo_over_naive",
        kind="effect",
        statement="Loaned GPUs are reclaimed on demand with minimal preemption overhead to guarantee the SLO.",
        metric=(
            "request latency at the main load (SLO 6 s against reclaims that take minutes), FaPES vs naive lending "
            "(Pollux-like, sized from the last 5 minutes with the same headroom, reclaim by killing the newest "
            "jobs), paired by seed: the share of fewer SLO violations (v_naive − v_FaPES)/(v_naive + v_FaPES), "
            "and the p99 latency"
        ),
        check=_check_slo,
    ),
    Claim(
        id="burst_no_gain",
        kind="control",
        statement=(
            "(negative control) On a burst the seasonal forecast has never seen, FaPES has nothing to foresee: "
            "its SLO edge over naive lending vanishes."
        ),
        metric=(
            "share of fewer SLO violations, FaPES vs naive lending, over the requests of an evening burst (three "
            "times the rate for an hour, and the half hour after) on the same trace"
        ),
        check=_check_burst,
    ),
    Claim(
        id="model_beats_prior",
        kind="effect",
        statement="Training configurations are chosen from an ML-based performance model.",
        metric=(
            "mean relative step-time error on the configurations a job never ran, FaPES's fitted models vs the "
            "population prior they start from; the true step time has a contention term the fitted form lacks"
        ),
        check=_check_model,
    ),
]

# What must make each effect fail (CLAIMS.md §5). Each change runs only the arms its claims read.
FALSIFIERS = [
    Falsifier(
        "joint_off",
        MECHANISM_OFF,
        ("jct_over_optimus",),
        lambda c: replace(c, method="fapes_gpus_only", arms=("optimus", "fapes"), control=False),
        "FaPES choosing GPUs only, at the user's batch (lending, forecast and cost-aware reclaim kept)",
    ),
    Falsifier(
        "optimus_as_fapes",
        BASELINE_IN_PLACE,
        ("jct_over_optimus",),
        lambda c: replace(c, method="optimus", arms=("optimus", "fapes"), control=False),
        "Optimus-like elastic scaling run under FaPES's name",
    ),
    Falsifier(
        "lending_off",
        MECHANISM_OFF,
        ("lending_over_pollux",),
        lambda c: replace(c, method="pollux", arms=("pollux", "fapes"), control=False),
        "FaPES with lending switched off: it keeps every inference GPU, which leaves the Pollux-like policy "
        "(the same run as pollux_as_fapes)",
    ),
    Falsifier(
        "pollux_as_fapes",
        BASELINE_IN_PLACE,
        ("lending_over_pollux",),
        lambda c: replace(c, method="pollux", arms=("pollux", "fapes"), control=False),
        "Pollux-like elastic scaling (no lending) run under FaPES's name",
    ),
    Falsifier(
        "forecast_off",
        MECHANISM_OFF,
        ("slo_over_naive",),
        lambda c: replace(c, method="fapes_reactive", arms=("loan_naive", "fapes"), control=False),
        "FaPES sizing its replicas from the last 5 minutes, like naive lending (cost-aware reclaim kept)",
    ),
    Falsifier(
        "naive_as_fapes",
        BASELINE_IN_PLACE,
        ("slo_over_naive",),
        lambda c: replace(c, method="loan_naive", arms=("loan_naive", "fapes"), control=False),
        "naive lending run under FaPES's name",
    ),
    Falsifier(
        "fit_off",
        MECHANISM_OFF,
        ("model_beats_prior",),
        lambda c: replace(c, method="fapes_no_fit", arms=("fapes",), control=False),
        "FaPES discarding its observed steps: every job's model stays at the population prior",
    ),
    Falsifier(
        "prior_as_model",
        BASELINE_IN_PLACE,
        ("model_beats_prior",),
        lambda c: replace(c, method="fapes_no_fit", arms=("fapes",), control=False),
        "the population prior (what an operator knows before a job runs) under the fitted model's name; "
        "the same run as fit_off, since a model that never fits is the prior",
    ),
]
