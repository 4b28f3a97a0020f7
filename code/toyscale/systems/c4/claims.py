"""C4's claims, their margins (set on calibration seeds), and the falsifiers under which they must fail.

Re-audit v2 (issue 50). The detection claim compares C4D with the two detectors a practitioner has:
per-rank compute time (the last rank to arrive at the synchronization point, by the same threshold)
and an all-pairs ping mesh that times as many messages per connection as the collective carries (the
same probe budget, as extra traffic); the stronger on each seed's validation session is the claim's
baseline. On the faults per-rank timing sees by the very rule C4D applies first (visible slow compute,
a rank's hang) C4D − last arrival vanishes by design: a mechanism, since the two apply the same rules
there and the difference cannot move. Every detector in the table is scored by one criterion (kind and
culprits named exactly). The planning
effect is read on a 2:1 oversubscribed fabric with background flows: C4P plans on a model of how
flows share links (max-min rates), ECMP gets the same model and the same number of evaluated
assignments spent on hash draws, and both pick their queue pairs per connection on validation
placements. The downtime claims are a renewal model with an explicit fault mix (`Config.stop_share`, assumed),
fed with C4D's measured detection times and each slowdown's measured share of the job's speed:
`modelled`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace

from toyscale.core import BASELINE_IN_PLACE, MECHANISM_OFF, Falsifier, Verdict, all_of, at_most, paired
from toyscale.core.builders import RecordClaims, paired_check, values
from toyscale.core.calibration import load_record
from toyscale.core.claims import within
from toyscale.core.protocol import Alternative, Alternatives, Band, Knob, Regime

from .experiment import Config, Result

# Margins from `python -m toyscale calibrate c4 --seeds 16 --jobs 1` on calibration seeds 1000–1015 (default config)
# and `--seeds 12 --fast` on 1000–1011 (the tests' config), native numerics (calibration/default.json, fast.json) and
# ATEN_CPU_CAPABILITY=default (default.aten-default.json; the fast run under it agreed). "q05" / "q95": the 5th / 95th
# percentile of the means over five-seed windows of those seeds.
#: The previous record's margin (about midway between the scrambled falsifier and C4D against last arrival), kept:
#: against the ping mesh at the same probe budget C4D's Δ is +0.025 to +0.038 (window means q05 0.00, q95 0.06 to
#: 0.08 in the three records), and the mesh in C4D's place beats last arrival by +0.375 (q95 0.44 to 0.46), so no
#: margin separates C4D from its falsifiers: not expected.
LOCALIZE_MARGIN = 0.24  # share of faults named exactly
MESH_TOLERANCE = 0.1  # C4D may name one fault in ten fewer than the ping mesh (a mechanism: the same timings)
FALSE_ALARM_LIMIT = 0.2  # C4D's false alarms on the healthy episodes (2 in 10 allowed; q95 0 in every record)
#: The visible-fault check's band: a share of the detection effect's margin, fixed before calibration.
VISIBLE_BAND = Band(0.5)
#: Step time / ideal. The load-blind falsifier's q95 lies far below zero (−0.30), and C4P's q05 over tuned ECMP only
#: just above it (0.0028 default, 0.0037 fast): on most placements ECMP's hash search reaches the plan's step time
#: (the fabric's floor), so C4P wins four of five seeds in too few windows (16 % default, 25 % fast): not expected.
CUT_MARGIN = 0.002
#: Modelled, with the fault mix: Δ downtime (watchdog − C4D) window means q05 0.23 to 0.24, watchdog / C4D q05 3.9 to
#: 4.2 (the three records); the claim asks for ten points and a halving, well inside both (its spread is C4D's misses
#: and the slowdowns' sizes).
DOWNTIME_MARGIN = 0.1
DOWNTIME_FACTOR = 2.0
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

#: The detection claim's alternatives, the stronger picked per seed on its validation session (ties go to the mesh).
DETECTION = Alternatives(
    arms=(Alternative("ping_mesh"), Alternative("last_arrival")),
    pick_by="val_accuracy",
    method_grid=1,
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
    "c4d_localizes": (
        "at the same probe budget an all-pairs ping mesh times the same delayed connections and names nearly every "
        "fault C4D names, so against the stronger alternative C4D gains little in what it localizes; what "
        "it saves is the mesh itself (its probe time per iteration, printed beside, and in production a job "
        "stopped for the test); against per-rank timing alone its gain is large (the in-place rows show it)"
    ),
    "c4p_cuts_comm_time": (
        "given the planner's sharing model and search budget as hash draws, and the same choice of queue pairs, "
        "ECMP reaches the plan's step time on most placements, where the oversubscribed uplinks and the other "
        "tenants' flows set a floor both meet; the plan is never worse and gains on the rest, too rarely for a "
        "paired win on four of five seeds; against plain hashing its cut is large (the boundary shows both)"
    ),
}


def _check_quiet(results: Sequence[Result]) -> Verdict:
    return at_most(values(results, "c4d", "false_alarm"), FALSE_ALARM_LIMIT, name="C4D false-alarm rate")


def _check_as_mesh(results: Sequence[Result]) -> Verdict:
    delta = [
        c - m for c, m in zip(values(results, "c4d", "accuracy"), values(results, "ping_mesh", "accuracy"), strict=True)
    ]
    return within(delta, -MESH_TOLERANCE, float("inf"), name="faults named exactly, C4D − ping mesh")


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
        "non-communication and a communication hang; vs the stronger on validation of the last-arrival "
        "baseline (per-rank compute time, the same threshold) and an all-pairs ping mesh at the same probe "
        "budget, paired by seed",
        paired_check(
            "c4d", DETECTION, "accuracy", margin=LOCALIZE_MARGIN, name="faults named exactly, C4D − strongest"
        ),
        regime=FAULT_REGIME,
    ),
    _claims.mechanism(
        "c4d_as_good_as_mesh",
        "C4D needs no probes: the collective's own messages time every connection.",
        "share of faults named exactly, C4D − the ping mesh (its probes as many messages per connection as the "
        "collective's, one connection at a time), at most one fault in ten behind on every seed; the mesh's "
        "cost, its probe time per iteration, printed beside the job's step",
        _check_as_mesh,
    ),
    _claims.mechanism(
        "few_false_alarms",
        "C4D raises no alarm on a healthy job.",
        "C4D's false-alarm rate on the healthy episodes (one per session)",
        _check_quiet,
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
        "renewal model with a fault mix (a share `stop_share` of faults stop the job, the rest slow it), at the "
        "fault rate where the watchdog + manual baseline loses 31 %; C4D fed per seed with its measured "
        "detection time of every fault and each slowdown's measured share of the job's speed (a stop it misses "
        "waits for the watchdog, a slowdown it misses runs slowed until the next restart)",
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

# What must make each effect fail (CLAIMS.md §5, v2). Each change runs only the half its claim reads. The detection
# effect has two alternatives, each run in C4D's place against the other; the planning effect has one, so its
# mechanism-off falsifier is its test.
FALSIFIERS = [
    Falsifier(
        "connections_scrambled",
        MECHANISM_OFF,
        ("c4d_localizes",),
        lambda c: replace(c, detector="c4d_scrambled", parts=("c4d",)),
        "C4D reading the per-connection timings with their rank labels shifted: it still sees that a "
        "connection is slow, not which",
    ),
    *(
        Falsifier(
            f"{name}_in_place",
            BASELINE_IN_PLACE,
            ("c4d_localizes",),
            lambda c, arm=arm: replace(c, detector=arm, parts=("c4d",)),
            f"the {label} run under C4D's name, against the {other}",
            in_place=arm,
        )
        for name, arm, label, other in (
            ("mesh", "ping_mesh", "ping mesh", "last-arrival baseline"),
            ("last_arrival", "last_arrival", "last-arrival baseline", "ping mesh"),
        )
    ),
    Falsifier(
        "plan_reads_no_loads",
        MECHANISM_OFF,
        ("c4p_cuts_comm_time",),
        lambda c: replace(c, planner="random", parts=("c4p",)),
        "C4P with its sharing model off: every job flow on a path drawn without looking at the links",
    ),
]
