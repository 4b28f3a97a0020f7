"""C4's claims, their margins (set on calibration seeds), and the falsifiers under which they must fail.

Re-audit v2 (issue 50). The detection claim compares C4D with the detector a practitioner has without
per-connection timings: per-rank compute time, i.e. the last rank to arrive at the synchronization
point, by the same threshold. On the faults that detector sees by the very rule C4D applies first
(visible slow compute, a rank's hang) C4D − last arrival vanishes by design: a mechanism, since the two
apply the same rules there and the difference cannot move (no control of the detection effect can fail
without one). Every
detector in the table is scored by one criterion (kind and culprits named exactly). The planning
effect is read on a 2:1 oversubscribed fabric with background flows: C4P plans on a model of how
flows share links (max-min rates), ECMP gets the same model and the same number of evaluated
assignments spent on hash draws, and both pick their queue pairs per connection on validation
placements. The downtime claims are a renewal model fed with C4D's measured detection times: `modelled`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace

from toyscale.core import MECHANISM_OFF, Falsifier, Verdict, all_of, at_most, paired
from toyscale.core.builders import RecordClaims, paired_check, values
from toyscale.core.calibration import load_record
from toyscale.core.claims import within
from toyscale.core.protocol import Alternative, Alternatives, Band, Knob, Regime

from .experiment import Config, Result

# Margins from `python -m toyscale calibrate c4 --seeds 16 --jobs 1` on calibration seeds 1000–1015 (default config)
# and `--seeds 12 --fast` on 1000–1011 (the tests' config), native numerics (calibration/default.json, fast.json) and
# ATEN_CPU_CAPABILITY=default (default.aten-default.json; the fast run under it agreed). "q05" / "q95": the 5th / 95th
# percentile of the means over five-seed windows of those seeds.
#: About midway between the scrambled-connections falsifier's q95 (0.14 in every record) and C4D's q05 (0.34 default,
#: 0.36 fast, both environments): the review's fresh five-seed window (0.28) lay below the old record's q05, so the
#: margin keeps room on both sides.
LOCALIZE_MARGIN = 0.24  # share of faults named exactly
FALSE_ALARM_LIMIT = 0.2  # C4D's false alarms on the healthy episodes (2 in 10 allowed; q95 0 in every record)
#: The visible-fault check's band: a share of the detection effect's margin, fixed before calibration.
VISIBLE_BAND = Band(0.5)
#: Step time / ideal. The load-blind falsifier's q95 lies far below zero (−0.30), and C4P's q05 over tuned ECMP only
#: just above it (0.0028 default, 0.0037 fast): on most placements ECMP's hash search reaches the plan's step time
#: (the fabric's floor), so C4P wins four of five seeds in too few windows (16 % default, 25 % fast): not expected.
CUT_MARGIN = 0.002
DOWNTIME_MARGIN = 0.05  # modelled: Δ downtime window means q05 0.097–0.106 (its spread is C4D's misses)
DOWNTIME_FACTOR = 1.2  # modelled: watchdog / C4D downtime window means q05 1.48–1.53
PLAN_TOLERANCE = 1.05  # the plan's ring step time on the 1:1 fabric must stay within 5 % of ideal (by construction)
HANG_LIMIT_S = 10.0  # a hang must be declared within this many seconds (the stall timeout plus the report delay)
PAPER_C4D_DOWNTIME = 0.0116  # the paper's downtime with C4D
PAPER_COMM_CUT = 0.15  # the paper's cut in communication cost

_config = Config()
#: The regimes (CLAIMS.md §7, v2), fixed in code before this calibration.
FAULT_REGIME = Regime(
    "share of communication faults (links, NICs, connections) among the faulty episodes",
    0.7,
    "the paper's premise that many slowdowns and hangs sit in the network, where per-rank timings cannot see "
    "them; the chapter's episode mix (7 of 10), fixed before this re-audit",
)
FABRIC_REGIME = Regime(
    "leaf oversubscription (hosts per leaf : spines), background flows present",
    _config.fabric.hosts_per_leaf / 2,
    "the paper's premise that ECMP's hashing collides on shared uplinks of a busy multi-tenant fabric; "
    "the chapter's hard fabric (2:1, other tenants' flows), fixed before this re-audit",
)

#: The detection claim's one alternative.
LAST_ARRIVAL = Alternatives(
    arms=(Alternative("last_arrival"),),
    pick_by="accuracy",
    method_grid=1,
    only_one=(
        "without per-connection timings a practitioner reads per-rank times, i.e. who arrives last at the "
        "synchronization point; the all-pairs ping mesh after an alarm is the other alternative, not yet an arm "
        "(JobConfig.ping_mesh is an exercise), so the claim credits C4D against per-rank timing only"
    ),
)
#: The planning claim's one alternative: ECMP, its queue pairs tuned on validation like C4P's, and given the
#: planner's search budget as hash draws scored by the planner's own sharing model.
_QPS = "queue pairs per connection (NCCL_IB_QPS_PER_CONNECTION)"
ECMP = Alternatives(
    arms=(Alternative("ecmp", (Knob(_QPS, _config.qps_grid, "library docs"),)),),
    pick_by="val_step_ratio",
    higher_is_better=False,
    method_grid=len(_config.qps_grid),
    only_one=(
        "ECMP is the fabric's path selection; tuned, it has its queue pairs and its hash draws, both given here "
        "at C4P's budget; plain ECMP (the mean over hash seeds) is the same alternative with one draw, printed "
        "beside it"
    ),
)

NO_BUDGETS = "a simulator and a real job: nothing is trained, so no arm can stop at a budget before it peaks"

REASONS = {
    "downtime_about_one_percent": (
        "the model keeps the restart and the work lost since the last checkpoint, which fast detection does "
        "not remove: a perfect detector's floor (printed beside) already lies above the paper's figure, which "
        "needs faster restarts and checkpoints as well"
    ),
    "downtime_falls": (
        "a fault C4D misses is charged the watchdog and the manual search, so on seeds where small slow faults "
        "fall below its thresholds the modelled cut shrinks below the margin"
    ),
    "c4p_cuts_comm_time": (
        "given the planner's sharing model and search budget as hash draws, and the same choice of queue pairs, "
        "ECMP reaches the plan's step time on most placements, where the oversubscribed uplinks and the other "
        "tenants' flows set a floor both meet; the plan is never worse and gains on the rest, too rarely for a "
        "paired win on four of five seeds; against plain hashing its cut is large (the boundary shows both)"
    ),
}


def _check_localize(results: Sequence[Result]) -> Verdict:
    return all_of(
        paired_check(
            "c4d", LAST_ARRIVAL, "accuracy", margin=LOCALIZE_MARGIN, name="faults named exactly, C4D − last arrival"
        )(results),
        at_most(values(results, "c4d", "false_alarm"), FALSE_ALARM_LIMIT, name="C4D false-alarm rate"),
    )


def _check_visible(results: Sequence[Result]) -> Verdict:
    delta = [
        c - b
        for c, b in zip(
            values(results, "c4d", "control_named"), values(results, "last_arrival", "control_named"), strict=True
        )
    ]
    width = VISIBLE_BAND.width(LOCALIZE_MARGIN)
    return within(delta, -width, width, name="faults named on the visible faults, C4D − last arrival")


def _check_hang(results: Sequence[Result]) -> Verdict:
    return within(values(results, "c4d", "detection_latency_s"), 0.0, HANG_LIMIT_S, name="hang detection (s)")


def _check_downtime(results: Sequence[Result]) -> Verdict:
    watchdog, c4d = values(results, "watchdog", "downtime"), values(results, "c4d", "downtime")
    return all_of(
        paired(c4d, watchdog, margin=DOWNTIME_MARGIN, higher_is_better=False, name="Δ downtime (watchdog − C4D)"),
        within(
            [w / c for w, c in zip(watchdog, c4d, strict=True)],
            DOWNTIME_FACTOR,
            float("inf"),
            "downtime watchdog / C4D",
        ),
    )


def _check_downtime_one_percent(results: Sequence[Result]) -> Verdict:
    return within(values(results, "c4d", "downtime"), 0.0, 2 * PAPER_C4D_DOWNTIME, name="C4D downtime")


def _check_plan(results: Sequence[Result]) -> Verdict:
    return all_of(
        within(values(results, "c4p", "step_ratio"), 1.0, PLAN_TOLERANCE, name="planned step time / ideal, 1:1"),
        within(values(results, "c4p", "max_planned_load"), 0.0, 1.0, name="planned max link load, 1:1"),
    )


_claims = RecordClaims(load_record(sys.modules[__package__]), REASONS)

CLAIMS = [
    _claims.effect(
        "c4d_localizes",
        "Comparing ranks at each synchronization point, C4D tells communication from non-communication "
        "hangs and slowness and localizes the faulty rank, NIC or link.",
        "share of faults named exactly (kind and rank, NIC side or link) on the real 4-rank job: per seed two "
        "episodes of each slow kind (compute, link, NIC egress, ingress) with sizes drawn over 2–40 ms, a "
        "non-communication and a communication hang; vs the last-arrival baseline (per-rank compute time, "
        "the same threshold), paired by seed; C4D's false-alarm rate on the healthy episodes stays low",
        _check_localize,
        regime=FAULT_REGIME,
        alternatives=LAST_ARRIVAL,
        arms=("c4d", "last_arrival"),
    ),
    _claims.mechanism(
        "visible_faults_agree",
        "Where a fault shows in per-rank timing (a visible straggler, a rank that hangs), C4D's connection "
        "timings add nothing: it names what the last-arrival baseline names.",
        "share of faults named exactly on two slow-compute faults at a visible size and the non-communication "
        "hang, C4D − last arrival, within half the detection margin (C4D applies the baseline's lateness and hang "
        "rules before its own, so the two agree here by design: a check of that order, not a control)",
        _check_visible,
    ),
    _claims.mechanism(
        "hang_found_in_seconds",
        "C4D notices a hang in seconds, where the collective's watchdog waits for its timeout.",
        "seconds from a hang's onset to the master's verdict (the stall timeout plus the pending report)",
        _check_hang,
    ),
    _claims.modelled(
        "downtime_falls",
        "C4D cuts error-induced downtime (the paper: from about 31 % of a job's time, with watchdog "
        "timeouts and manual diagnosis).",
        "renewal model at the fault rate where the watchdog + manual baseline loses 31 %, C4D fed per seed "
        "with its measured detection time of every fault (a missed fault costs the baseline's)",
        _check_downtime,
    ),
    _claims.modelled(
        "downtime_about_one_percent",
        "With C4D, error-induced downtime is about 1 % (1.16 %).",
        "modelled C4D downtime, required within 2 × 1.16 % (a perfect detector's floor printed beside)",
        _check_downtime_one_percent,
    ),
    _claims.mechanism(
        "planned_paths_near_ideal",
        "On a non-blocking fabric, planned paths put no two ring flows on one link.",
        "ring step time / ideal and the most loaded link on the 1:1 leaf-spine fabric",
        _check_plan,
    ),
    _claims.effect(
        "c4p_cuts_comm_time",
        "Planned paths avoid ECMP's collisions: communication cost down about 15 %.",
        "mean ring step time / ideal on held-out placements of a 2:1 oversubscribed fabric with background "
        "flows, C4P vs ECMP, each at the queue pairs per connection (1, 2, 4 or 8) it picked on validation "
        "placements, ECMP with the planner's search budget spent on hash draws, paired by seed",
        paired_check(
            "c4p",
            ECMP,
            "tuned_step_ratio",
            margin=CUT_MARGIN,
            higher_is_better=False,
            name="Δ step time / ideal (tuned ECMP − C4P)",
        ),
        regime=FABRIC_REGIME,
    ),
]

# What must make each effect fail (CLAIMS.md §5, v2). Each change runs only the half its claim reads. Each effect
# has a single alternative, so the mechanism-off falsifier is its test (an alternative in the method's place would
# have no remaining alternative to face).
FALSIFIERS = [
    Falsifier(
        "connections_scrambled",
        MECHANISM_OFF,
        ("c4d_localizes",),
        lambda c: replace(c, detector="c4d_scrambled", parts=("c4d",)),
        "C4D reading the per-connection timings with their rank labels shifted: it still sees that a "
        "connection is slow, not which",
    ),
    Falsifier(
        "plan_reads_no_loads",
        MECHANISM_OFF,
        ("c4p_cuts_comm_time",),
        lambda c: replace(c, planner="random", parts=("c4p",)),
        "C4P with its sharing model off: every job flow on a path drawn without looking at the links",
    ),
]
