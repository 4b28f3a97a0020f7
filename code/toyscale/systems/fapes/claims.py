"""FaPES's claims, their margins (set on calibration seeds), and the falsifiers under which they must fail.

Re-audit v2 (issue 51). The JCT claim compares FaPES with the strongest of the elastic schemes that
do not lend, Optimus-like (GPUs only) and Pollux-like (GPUs and batch from the same fitted model),
picked per seed on a validation day. What lending adds over Pollux-like is credited to the
checkpointed scale-in reclaim, whose mechanism-off falsifier reclaims by kills (the forecast board
kept). The SLO claim compares the two lending policies at a common SLO target: each picks its
headroom on the validation day, then JCT, lent GPU-hours and violations are compared on the test
day. The fitted step-time model against its own prior is a mechanism, not an effect. Goodput is
reported against static allocation, labelled as such, beside the elastic negative.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace

from toyscale.core import BASELINE_IN_PLACE, MECHANISM_OFF, Falsifier, Verdict, paired
from toyscale.core.builders import RecordClaims, paired_check, values, vanishing_check
from toyscale.core.calibration import load_record
from toyscale.core.protocol import Alternative, Alternatives, Band, Knob, Regime

from .cluster import Config
from .experiment import Result

# Margins from `python -m toyscale calibrate fapes --seeds 24 --jobs 1` on calibration seeds 1000–1023, default
# config, native numerics (calibration/default.json) and ATEN_CPU_CAPABILITY=default (default.aten-default.json).
# "q05" / "q95": the 5th / 95th percentile of the means over five-seed windows of those seeds.
#: The smallest whole minute above the q95 (15.1) of Pollux-like put in FaPES's place against Optimus-like: the
#: one margin that could catch a scheme without lending. FaPES's own window means (q95 11.9) stay below it.
JCT_MARGIN = 16.0  # minutes
#: Below FaPES's q05 over Pollux-like (4.6); kills in place of the scale-in reach a q95 of 7.2, above it, so no
#: margin separates the two (the claim is not expected).
LENDING_MARGIN = 3.0  # minutes
#: Between the scale-in-off falsifier's q95 (3.1) and FaPES's q05 at the common SLO target (3.9); twelve seeds
#: put 3.0 in a gap of 2.9 to 3.7, which 24 seeds closed (the falsifier failed 93 % of windows there).
RECLAIM_MARGIN = 3.5  # minutes
GOODPUT_FACTOR = 1.8  # the paper's "up to 1.8×"
#: The low-load control's band, fixed before calibration as a share of the lending effect's margin.
LOW_LOAD_BAND = Band(0.5)

_config = Config()
#: The regime (CLAIMS.md §7, v2). The paper's premise: training is oversubscribed while the inference pool
#: idles off-peak, and lending must keep the inference SLO. The training load is the chapter's world (load 1),
#: fixed before this re-audit; the SLO target reads "guarantee the SLO" as four nines of requests within it.
LOAD_REGIME = Regime(
    "training load (× the default jobs)",
    _config.load,
    "the paper's premise: the training pool is oversubscribed while inference GPUs idle off-peak; the chapter's "
    "world, fixed before this calibration",
)
SLO_REGIME = Regime(
    "SLO target (violations per 1000 requests, validation day)",
    _config.slo_target_per_1000,
    "the paper's premise that reclaim guarantees the SLO, read as four nines (99.99 %) of requests within it; "
    "fixed before this calibration",
)

#: The JCT claim's alternatives: the elastic schemes that do not lend, neither with a knob (as FaPES has none
#: here), the stronger picked per seed by its mean JCT on the validation day.
ELASTIC = Alternatives(
    arms=(Alternative("optimus"), Alternative("pollux")),
    pick_by="val_mean_jct_min",
    higher_is_better=False,
    method_grid=1,
)
POLLUX = replace(
    ELASTIC,
    arms=ELASTIC.arms[1:],
    only_one="the claim is what lending adds to Pollux-like scaling, which shares FaPES's model and joint batch choice",
)
#: The SLO claim's one alternative: naive lending, tuned on as many headrooms as FaPES on the validation day.
_HEADROOM = "headroom on the demand estimate"
NAIVE = Alternatives(
    arms=(Alternative("loan_naive", (Knob(_HEADROOM, _config.headrooms, "standard practice"),)),),
    pick_by="val_slo_per_1000",
    higher_is_better=False,
    method_grid=len(_config.headrooms),
    table="matched",
    only_one="naive lending (recent demand plus headroom, reclaim by kills) is the one lending scheme without "
    "FaPES's parts; the non-lending schemes cannot trade lent GPUs against the SLO",
)
OPTIMUS = Alternatives(
    arms=ELASTIC.arms[:1],
    pick_by="val_mean_jct_min",
    higher_is_better=False,
    method_grid=1,
    only_one="the paper's factor is per-job goodput against an elastic baseline that, like its own, keeps the user's "
    "batch; Pollux-like changes the batch, which moves goodput's statistical efficiency, not the scheduler's",
)
STATIC = Alternatives(
    arms=(Alternative("static"),),
    pick_by="mean_jct_min",
    higher_is_better=False,
    method_grid=1,
    only_one="the paper's factor appears against non-elastic allocation; the elastic comparison is goodput_1_8x",
)

NO_BUDGETS = "a simulator: no arm is trained, so none can stop at a budget before its validation score peaks"

REASONS = {
    "goodput_1_8x": (
        "the baseline is elastic too and uses the same fitted model, lent GPUs exist only in the evening and "
        "at night, and a job's speed-up is bounded by its synchronization cost and its noise scale: against "
        "an elastic scheme the ratio has a ceiling well below the paper's factor"
    ),
    "goodput_over_static": (
        "against static allocation the elastic schemes all raise cluster throughput, by a factor that depends on "
        "how far the static queue backs up; here it stays below the paper's factor on every five-seed window"
    ),
    "jct_over_strongest": (
        "the strongest non-lending scheme on validation is Pollux-like, which shares FaPES's model and joint "
        "batch choice: what remains is lending's cut, smaller than the cut Pollux-like already has over "
        "Optimus-like, so no margin separates FaPES from Pollux-like in its place"
    ),
    "lending_over_pollux": (
        "with reclaim by kills instead of checkpointed scale-in, lending keeps about half its cut, enough to clear "
        "the margin on about half the calibration windows: the cut cannot be credited to the scale-in, and lending "
        "itself has no falsifier that is not Pollux-like under another name"
    ),
}


def _check_goodput(results: Sequence[Result]) -> Verdict:
    ratio = [r.metrics["fapes"]["job_goodput"] / r.metrics["optimus"]["job_goodput"] for r in results]
    return paired(
        ratio, [GOODPUT_FACTOR] * len(results), margin=0.0, name="per-job goodput ratio, FaPES / Optimus-like − 1.8"
    )


def _check_goodput_static(results: Sequence[Result]) -> Verdict:
    ratio = [
        a / b
        for a, b in zip(values(results, "fapes", "throughput"), values(results, "static", "throughput"), strict=True)
    ]
    return paired(
        ratio,
        [GOODPUT_FACTOR] * len(results),
        margin=0.0,
        name="cluster throughput ratio, FaPES / static allocation − 1.8",
    )


def _check_model(results: Sequence[Result]) -> Verdict:
    return paired(
        values(results, "fapes", "model_error"),
        values(results, "fapes", "prior_error"),
        margin=0.0,
        higher_is_better=False,
        name="held-out step-time error, prior − fitted",
    )


_claims = RecordClaims(load_record(sys.modules[__package__]), REASONS)

CLAIMS = [
    _claims.effect(
        "jct_over_strongest",
        "FaPES reduces job completion time by up to 24.8 % against representative elastic scaling schemes.",
        "mean JCT (minutes) at the main load, FaPES vs the stronger on the validation day of Optimus-like (GPUs "
        "only) and Pollux-like (GPUs and batch) elastic scaling, neither lending, paired by seed",
        paired_check(
            "fapes",
            ELASTIC,
            "mean_jct_min",
            margin=JCT_MARGIN,
            higher_is_better=False,
            name="Δ mean JCT, min (strongest elastic − FaPES)",
        ),
        regime=LOAD_REGIME,
    ),
    _claims.effect(
        "goodput_1_8x",
        "FaPES raises goodput up to 1.8× against representative elastic scaling schemes.",
        "per-job goodput (a job's work over its running time, relative to its requested configuration), "
        "mean over jobs, FaPES / Optimus-like, required above 1.8 on each seed",
        _check_goodput,
        regime=LOAD_REGIME,
        alternatives=OPTIMUS,
        arms=("fapes", "optimus"),
    ),
    _claims.effect(
        "goodput_over_static",
        "(against static allocation) FaPES raises goodput up to 1.8×.",
        "cluster throughput (useful work per minute while jobs are in the system), FaPES / static FIFO "
        "allocation at the requested GPUs, required above 1.8, paired by seed",
        _check_goodput_static,
        regime=LOAD_REGIME,
        alternatives=STATIC,
        arms=("fapes", "static"),
    ),
    _claims.effect(
        "lending_over_pollux",
        "(what lending with checkpointed scale-in adds) Loaning idle inference GPUs to training, and reclaiming "
        "them by checkpointed scale-in, shortens jobs beyond what Pollux-like scaling gets from its own pool.",
        "mean JCT (minutes) at the main load, FaPES vs Pollux-like elastic scaling (same model, no lending), "
        "paired by seed; the falsifier reclaims by kills (the chapter's attribution table adds board off)",
        paired_check(
            "fapes",
            POLLUX,
            "mean_jct_min",
            margin=LENDING_MARGIN,
            higher_is_better=False,
            name="Δ mean JCT, min (Pollux-like − FaPES)",
        ),
        regime=LOAD_REGIME,
    ),
    _claims.control(
        "low_load_no_lending_gain",
        "(negative control) When the training pool has GPUs to spare, lending has nothing to add.",
        "mean JCT (minutes), FaPES vs Pollux-like, at a quarter of the default training load",
        vanishing_check(
            "fapes",
            "pollux",
            "mean_jct_min",
            band=LOW_LOAD_BAND,
            effect_margin=LENDING_MARGIN,
            validates="lending_over_pollux",
            higher_is_better=False,
            table="low",
            name="Δ mean JCT, min (Pollux-like − FaPES), low load",
        ),
    ),
    _claims.effect(
        "reclaim_at_slo_target",
        "Loaned GPUs are reclaimed on demand with minimal preemption overhead to guarantee the SLO.",
        "at a common SLO target: naive lending and FaPES each at the smallest headroom that meets it on the "
        "validation day, then mean JCT (minutes) on the test day, paired by seed (lent GPU-hours and absolute "
        "violation counts beside it)",
        paired_check(
            "fapes",
            NAIVE,
            "mean_jct_min",
            margin=RECLAIM_MARGIN,
            higher_is_better=False,
            table="matched",
            name="Δ mean JCT, min (naive − FaPES), each at its validated headroom",
        ),
        regime=SLO_REGIME,
    ),
    _claims.mechanism(
        "model_beats_prior",
        "Training configurations are chosen from an ML-based performance model.",
        "mean relative step-time error on the configurations a job never ran, FaPES's fitted models vs the "
        "population prior they start from (a property of fitting, not a comparison with another learner)",
        _check_model,
    ),
]

_ALL_ARMS = ("static", "optimus", "pollux", "loan_naive", "fapes")
# What must make each effect fail (CLAIMS.md §5, v2). Each change runs only the arms its claims read.
FALSIFIERS = [
    Falsifier(
        "joint_off",
        MECHANISM_OFF,
        ("jct_over_strongest", "goodput_over_static"),
        lambda c: replace(c, method="fapes_gpus_only", arms=(*_ALL_ARMS[:3], "fapes"), control=False, matched=False),
        "FaPES choosing GPUs only, at the user's batch (lending, forecast and cost-aware reclaim kept)",
    ),
    Falsifier(
        "optimus_in_place",
        BASELINE_IN_PLACE,
        ("jct_over_strongest",),
        lambda c: replace(c, method="optimus", arms=("optimus", "pollux", "fapes"), control=False, matched=False),
        "Optimus-like elastic scaling run under FaPES's name, against Pollux-like",
        in_place="optimus",
    ),
    Falsifier(
        "pollux_in_place",
        BASELINE_IN_PLACE,
        ("jct_over_strongest",),
        lambda c: replace(c, method="pollux", arms=("optimus", "pollux", "fapes"), control=False, matched=False),
        "Pollux-like elastic scaling run under FaPES's name, against Optimus-like",
        in_place="pollux",
    ),
    Falsifier(
        "scale_in_off",
        MECHANISM_OFF,
        ("lending_over_pollux", "reclaim_at_slo_target"),
        lambda c: replace(c, method="fapes_kills", arms=("pollux", "loan_naive", "fapes"), control=False),
        "FaPES reclaiming by killing the newest jobs instead of checkpointed scale-in (its board kept)",
    ),
]
