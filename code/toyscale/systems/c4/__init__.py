"""C4: find the faulty rank from its collective-communication syndrome, and plan the traffic.

Jianbo Dong, Bin Luo, Jun Zhang, Pengcheng Zhang, Fei Feng, Yikai Zhu, Ang Liu, Zian Chen, Yi Shi,
Hairong Jiao, Gang Lu, Yu Guan, Ennan Zhai, Wencong Xiao, Hanyu Zhao, Man Yuan, Siran Yang,
Xiang Li, Jiamang Wang, Rui Men, Jianwei Zhang, Chang Zhou, Dennis Cai, Yuan Xie and Binzhang Fu.
*Enhancing Large-Scale AI Training Efficiency: The C4 Solution for Real-Time Anomaly Detection
and Communication Optimization.* HPCA 2025 (arXiv:2406.04594, first titled *Boosting Large-scale
Parallel Training Efficiency with C4: A Communication-Driven Approach*).

**The problem.** A synchronous training job of thousands of GPUs stops or slows down as a whole
when one GPU, NIC or link misbehaves: every iteration ends in a collective that waits for the
slowest member. Without help, a hang is noticed only when the collective library's watchdog
times out (minutes to half an hour) and the culprit is then found by hand (hours). And the few
long-lived flows of collective communication collide under ECMP hashing, so the network delivers
far less than its capacity.

**C4D** (`diagnose`) instruments the collective library. Every rank reports when it enters and
leaves each collective and how long each point-to-point transfer took; a master compares ranks at
each synchronization point. A rank that never enters while the others wait is a
*non-communication hang*; a rank that consistently enters late is *non-communication slow*; a
slow row, column or cell of the communication latency matrix is a slow NIC or link
(*communication slow*). The culprit is isolated and the job restarts from its checkpoint. The
paper reports error-induced downtime falling from about 31 % to about 1 %.

**C4P** (`plan`) plans the paths of the collective's flows over the leaf-spine fabric instead of
hashing them, and balances a bonded NIC's ports: the paper reports communication cost down by
about 15 % and, with C4D, system efficiency (effective training time) up from 30 % to 45 %.

**What the toy keeps.** A *real* four-rank job (torch.distributed, gloo, loopback) whose ranks
report enter/exit and transfer timings through a thin instrumentation layer; four injected
faults (slow compute, slow link, slow NIC, hang) that live below that layer; C4D's classification
and latency-matrix localization, reading only the reports; the naive baseline that blames the
rank with the slowest collective; a renewal model of effective training time with the detection
latency measured on the real job; and a flow-level leaf-spine fabric with max-min fair rates,
where ECMP (a distribution over hash seeds) meets a planned assignment, with bonded dual-port
NICs and a failed link as variants.

**What it drops.** GPUs, NCCL/ACCL and RDMA: "compute" is a sleep with a little matmul, links are
loopback TCP, and faults are delays of tens of milliseconds, far above the scheduling noise of
a shared two-core machine (real faults are often subtler). The production fault mix, the
isolation machinery and the multi-tier fabric are replaced by assumptions stated in `Config`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import plotly.graph_objects as go
from torch.distributed.constants import default_pg_timeout

from toyscale.core import plot
from toyscale.core.claims import Claim, Verdict, all_of, paired, per_seed, within
from toyscale.core.seeding import seed_everything

from . import diagnose, plan
from .diagnose import (
    FAULT_KINDS,
    Diagnosis,
    Fault,
    JobConfig,
    JobRun,
    Recovery,
    Thresholds,
    collective_time_ms,
    detection_latency_s,
    draw_faults,
    effective_training_time,
    enter_lateness_ms,
    fault_rate_for_downtime,
    latency_matrix,
    run_job,
    slowest_collective,
)
from .plan import Fabric, FabricConfig, ecmp_paths, job_step_times, link_loads, plan_paths, ring_flows, simulate

__all__ = [
    "CLAIMS",
    "FAULT_KINDS",
    "VARIANTS",
    "Config",
    "Diagnosis",
    "Fault",
    "JobConfig",
    "Recovery",
    "Result",
    "Thresholds",
    "diagnose",
    "fig_downtime",
    "fig_latency_matrix",
    "fig_step_times",
    "fig_timeline",
    "plan",
    "run",
    "run_job",
    "slowest_collective",
]

# The fabric variants of the C4P experiment: name → changes to the base FabricConfig
VARIANTS: dict[str, dict[str, object]] = {
    "non-blocking fabric": {},
    "bonded dual-port NICs": {"ports_per_nic": 2},
    "one leaf-spine link down": {"failed_links": ((0, 0),)},
}


@dataclass(frozen=True)
class Config:
    """Toy defaults for the C4 experiment."""

    job: JobConfig = field(default_factory=JobConfig)  # the real multi-process job and its faults
    thresholds: Thresholds = field(default_factory=Thresholds)  # C4D's decision thresholds
    fabric: FabricConfig = field(default_factory=FabricConfig)  # the leaf-spine fabric and its jobs
    hash_seeds: int = 100  # ECMP hash seeds drawn per run (ECMP is reported as a distribution)
    n_nodes: int = 128  # nodes of the modeled production job (1,024 GPUs at 8 per node)
    watchdog_s: float = default_pg_timeout.total_seconds()  # the collective watchdog (torch's default, 30 min)
    manual_diagnosis_s: float = 2 * 3600.0  # an engineer finding the faulty node by hand (assumed)
    restart_s: float = 600.0  # isolate, reschedule, reload the checkpoint, re-initialize (assumed)
    checkpoint_interval_s: float = 1800.0  # time between checkpoints; half of it is lost per fault (assumed)
    baseline_downtime: float = 0.31  # the paper's downtime before C4D: calibrates the fault rate
    rate_multipliers: tuple[float, ...] = (0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)  # downtime curve

    def __post_init__(self) -> None:
        for name, kind in (("job", JobConfig), ("thresholds", Thresholds), ("fabric", FabricConfig)):
            if not isinstance(getattr(self, name), kind):
                raise TypeError(f"{name} must be a {kind.__name__}, got {type(getattr(self, name)).__name__}")
        if self.hash_seeds < 2:
            raise ValueError(f"hash_seeds must be >= 2 (a distribution), got {self.hash_seeds}")
        if self.n_nodes < 1:
            raise ValueError(f"n_nodes must be >= 1, got {self.n_nodes}")
        for name in ("watchdog_s", "manual_diagnosis_s", "restart_s", "checkpoint_interval_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 0 < self.baseline_downtime < 1:
            raise ValueError(f"baseline_downtime must be in (0, 1), got {self.baseline_downtime}")
        if not self.rate_multipliers or min(self.rate_multipliers) <= 0:
            raise ValueError(f"rate_multipliers must be positive, got {self.rate_multipliers}")

    @classmethod
    def fast(cls) -> Config:
        """Fewer iterations and hash seeds for tests: a few seconds per seed."""
        return cls(job=JobConfig(iterations=5), hash_seeds=50)

    def watchdog_recovery(self) -> Recovery:
        """The baseline: the watchdog times out, then an engineer diagnoses by hand."""
        return Recovery(self.watchdog_s, self.manual_diagnosis_s, self.restart_s, self.checkpoint_interval_s)


@dataclass
class FaultRecord:
    """One faulty (or healthy) job and what each detector said about it."""

    fault: Fault | None
    reports: diagnose.Reports  # what the ranks reported (the detector's only input)
    diagnosis: Diagnosis
    c4d_correct: bool
    blamed: int  # the rank the slowest-collective baseline blames
    blamed_correct: bool
    wall_s: float


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm][metric] for the arms 'c4d', 'slowest_collective', 'watchdog', 'ecmp', 'c4p';
    records: one FaultRecord per job (healthy first, then one per fault kind); timeline: the
    slow-compute job's per-rank begin/enter/exit/end of its median iteration (ms); matrices: the
    latency matrix (ms) of the healthy, slow-link and slow-NIC jobs; downtime: the curve of
    error-induced downtime against faults per node per day for both detectors; step_ratios: per
    fabric variant, ECMP's per-hash-seed mean step time / ideal and the plan's.
    """

    config: Config
    seed: int
    metrics: dict[str, dict[str, float]]
    records: list[FaultRecord]
    timeline: dict[str, object]
    matrices: dict[str, np.ndarray]
    downtime: dict[str, list[float]]
    step_ratios: dict[str, dict[str, object]]
    planned_max_load: dict[str, float]
    delivered_bytes: dict[str, tuple[float, float]]


def _truth_ranks(fault: Fault) -> set[int]:
    """The ranks a rank-level blame may name: the faulty rank (either end of a slow link)."""
    return {fault.rank, int(fault.peer)} if fault.peer is not None else {fault.rank}


def _timeline(job: JobRun) -> dict[str, object]:
    """The per-rank phases (ms from the earliest begin) of the job's median complete iteration."""
    r = job.reports
    full = r.complete_iterations()
    durations = np.nanmax(r.end[:, full], axis=0) - np.nanmin(r.begin[:, full], axis=0)
    t = int(full[np.argsort(durations)[len(durations) // 2]])
    origin = float(np.min(r.begin[:, t]))
    ms = {name: ((getattr(r, name)[:, t] - origin) * 1000.0).tolist() for name in ("begin", "enter", "exit", "end")}
    return {"iteration": t, "culprit": job.fault.rank if job.fault else None, **ms}


def _c4d_experiment(config: Config, seed: int) -> tuple[list[FaultRecord], dict, dict, float, float]:
    faults: list[Fault | None] = [None, *draw_faults(config.job, seed)]
    records, matrices, timeline = [], {}, {}
    latency, diagnose_s = float("nan"), 0.0
    for fault in faults:
        job = run_job(config.job, fault, seed=seed)
        started = time.perf_counter()
        verdict = diagnose.diagnose(job.reports, config.thresholds)
        diagnose_s = max(diagnose_s, time.perf_counter() - started)
        blamed = slowest_collective(job.reports)
        kind = fault.kind if fault else "healthy"
        records.append(
            FaultRecord(
                fault=fault,
                reports=job.reports,
                diagnosis=verdict,
                c4d_correct=verdict.matches(fault),
                blamed=blamed,
                blamed_correct=fault is not None and blamed in _truth_ranks(fault),
                wall_s=job.wall_s,
            )
        )
        if kind in ("healthy", "slow_link", "slow_nic"):
            matrices[kind] = latency_matrix(job.reports)
        if kind == "slow_compute":
            timeline = _timeline(job)
            timeline["lateness_ms"] = enter_lateness_ms(job.reports).tolist()
            timeline["collective_ms"] = collective_time_ms(job.reports).tolist()
        if kind == "hang":
            latency = detection_latency_s(job)
    return records, matrices, timeline, latency, diagnose_s


def _c4p_experiment(config: Config, seed: int) -> tuple[dict, dict, dict]:
    step_ratios, max_loads, delivered = {}, {}, {}
    for name, changes in VARIANTS.items():
        fabric_config = FabricConfig(**{**config.fabric.__dict__, **changes})
        fabric = Fabric(fabric_config)
        flows = ring_flows(fabric_config, seed)
        ideal = fabric_config.step_bytes  # every flow at the NIC's line rate of 1
        planned = plan_paths(flows, fabric, seed=seed)
        plan_run = simulate(flows, planned, fabric)
        ecmp = []
        ecmp_bytes = 0.0
        for h in range(config.hash_seeds):
            run_h = simulate(flows, ecmp_paths(flows, fabric, seed * 100_003 + h), fabric)
            ecmp.append(float(job_step_times(flows, run_h, ideal).mean()))
            ecmp_bytes = float(run_h.delivered.sum())
        step_ratios[name] = {"ecmp": ecmp, "c4p": float(job_step_times(flows, plan_run, ideal).mean())}
        max_loads[name] = max(link_loads(flows, planned, fabric).values())
        delivered[name] = (float(plan_run.delivered.sum()), ecmp_bytes)
    return step_ratios, max_loads, delivered


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """Run the real job healthy and with each fault, diagnose it both ways, model the downtime, and
    compare ECMP with planned paths on the fabric variants."""
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a c4.Config, got {type(config).__name__}")
    seed_everything(seed)
    records, matrices, timeline, latency, diagnose_s = _c4d_experiment(config, seed)
    faulty = [r for r in records if r.fault is not None]
    slow_compute = next(r for r in faulty if r.fault.kind == "slow_compute")

    # effective training time: the fault rate at which the watchdog baseline loses `baseline_downtime`
    watchdog = config.watchdog_recovery()
    c4d = Recovery(latency, diagnose_s, config.restart_s, config.checkpoint_interval_s)
    job_rate = fault_rate_for_downtime(config.baseline_downtime, watchdog)  # faults per hour
    node_rate_per_day = job_rate * 24.0 / config.n_nodes
    rates = [m * node_rate_per_day for m in config.rate_multipliers]
    downtime = {
        "faults_per_node_day": rates,
        "watchdog": [1 - effective_training_time(r * config.n_nodes / 24.0, watchdog) for r in rates],
        "c4d": [1 - effective_training_time(r * config.n_nodes / 24.0, c4d) for r in rates],
    }
    ett_watchdog, ett_c4d = effective_training_time(job_rate, watchdog), effective_training_time(job_rate, c4d)

    step_ratios, max_loads, delivered = _c4p_experiment(config, seed)
    headline = step_ratios["non-blocking fabric"]
    metrics = {
        "c4d": {
            "accuracy": float(np.mean([r.c4d_correct for r in faulty])),
            "slow_compute_correct": float(slow_compute.c4d_correct),
            "false_alarm": float(records[0].diagnosis.alarm),
            "detection_latency_s": latency,
            "diagnose_ms": diagnose_s * 1000.0,
            "downtime": 1 - ett_c4d,
            "effective_training_time": ett_c4d,
        },
        "slowest_collective": {
            "accuracy": float(np.mean([r.blamed_correct for r in faulty])),
            "slow_compute_correct": float(slow_compute.blamed_correct),
            "false_alarm": 1.0,  # it always blames somebody
        },
        "watchdog": {
            "detection_latency_s": watchdog.detect_s,
            "downtime": 1 - ett_watchdog,
            "effective_training_time": ett_watchdog,
            "faults_per_node_day": node_rate_per_day,
        },
        "ecmp": {
            "step_ratio": float(np.mean(headline["ecmp"])),
            "step_ratio_p95": float(np.percentile(headline["ecmp"], 95)),
            "step_ratio_best": float(np.min(headline["ecmp"])),
            "bonded_step_ratio": float(np.mean(step_ratios["bonded dual-port NICs"]["ecmp"])),
            "link_down_step_ratio": float(np.mean(step_ratios["one leaf-spine link down"]["ecmp"])),
        },
        "c4p": {
            "step_ratio": headline["c4p"],
            "bonded_step_ratio": step_ratios["bonded dual-port NICs"]["c4p"],
            "link_down_step_ratio": step_ratios["one leaf-spine link down"]["c4p"],
            "max_planned_load": max_loads["non-blocking fabric"],
        },
    }
    return Result(
        config=config,
        seed=seed,
        metrics=metrics,
        records=records,
        timeline=timeline,
        matrices=matrices,
        downtime=downtime,
        step_ratios=step_ratios,
        planned_max_load=max_loads,
        delivered_bytes=delivered,
    )


# ---------------------------------------------------------------------------------------------
# The claims
# ---------------------------------------------------------------------------------------------

# Margins, set from measured seed noise (default config, seeds 0–7): C4D named every culprit and
# raised no false alarm on every seed; the baseline never named the slow-compute rank; the
# downtime ratio watchdog / C4D is a deterministic 4.9 (it moves with the assumptions, not with
# the seed: the measured detection latency, ~1.5 s, is negligible against the restart); ECMP's
# mean step time is 2.2–2.7× ideal per seed (std ≈ 0.15) and the plan is exactly 1.0×.
DETECTOR_MARGIN = 0.5  # C4D's slow-compute hit rate must beat the baseline's by this (of 1.0)
DOWNTIME_MARGIN = 0.15  # watchdog − C4D downtime (fraction of wall time) must exceed this
DOWNTIME_FACTOR = 3.0  # ... and the downtime must fall by at least this factor
PLAN_TOLERANCE = 1.05  # the plan's ring step time must stay within 5 % of ideal
ECMP_MARGIN = 0.3  # ECMP's mean step / ideal must exceed the plan's by this (≈ 2 seed stds)
PAPER_C4D_DOWNTIME = 0.0116  # the paper's downtime with C4D


def _check_detector(results: Sequence[Result]) -> Verdict:
    return all_of(
        within(per_seed(results, "c4d", "accuracy"), 1.0, 1.0, "C4D culprit accuracy over the 4 fault kinds"),
        within(per_seed(results, "c4d", "false_alarm"), 0.0, 0.0, "C4D alarm on the healthy job"),
        paired(
            per_seed(results, "c4d", "slow_compute_correct"),
            per_seed(results, "slowest_collective", "slow_compute_correct"),
            margin=DETECTOR_MARGIN,
            name="slow-compute culprit named (C4D − slowest collective)",
        ),
    )


def _check_downtime(results: Sequence[Result]) -> Verdict:
    watchdog, c4d = per_seed(results, "watchdog", "downtime"), per_seed(results, "c4d", "downtime")
    return all_of(
        paired(c4d, watchdog, margin=DOWNTIME_MARGIN, higher_is_better=False, name="Δ downtime (watchdog − C4D)"),
        within(
            [w / c for w, c in zip(watchdog, c4d, strict=True)],
            DOWNTIME_FACTOR,
            float("inf"),
            name="downtime watchdog / C4D",
        ),
    )


def _check_downtime_one_percent(results: Sequence[Result]) -> Verdict:
    return within(per_seed(results, "c4d", "downtime"), 0.0, 2 * PAPER_C4D_DOWNTIME, name="C4D downtime")


def _check_plan(results: Sequence[Result]) -> Verdict:
    plan, ecmp = per_seed(results, "c4p", "step_ratio"), per_seed(results, "ecmp", "step_ratio")
    return all_of(
        within(plan, 1.0, PLAN_TOLERANCE, name="planned step time / ideal"),
        within(per_seed(results, "c4p", "max_planned_load"), 0.0, 1.0, name="planned max link load"),
        paired(plan, ecmp, margin=ECMP_MARGIN, higher_is_better=False, name="Δ step / ideal (ECMP mean − planned)"),
    )


CLAIMS = [
    Claim(
        id="c4d_names_culprit",
        kind="effect",
        statement=(
            "Comparing ranks at each synchronization point, C4D tells communication from "
            "non-communication hangs and slowness and localizes the faulty rank, NIC or link; "
            "the slowest collective belongs to a victim, not the culprit."
        ),
        metric=(
            "culprit named exactly (kind and rank/link) on the real 4-rank job, per fault kind "
            "with a random culprit; the healthy job raises no alarm; vs blaming the slowest collective"
        ),
        check=_check_detector,
        saturated=(
            "C4D names every injected culprit on every seed and the healthy job raises no alarm: "
            "its accuracy sits at the ceiling, and the slowest-collective baseline at its floor"
        ),
    ),
    Claim(
        id="downtime_falls",
        kind="modelled",
        statement="C4D cuts error-induced downtime from about 31 % to about 1 % (30 % less error-induced overhead).",
        metric=(
            "modeled downtime at the fault rate where the watchdog + manual baseline loses 31 %, "
            "with C4D's detection latency measured on the real job"
        ),
        check=_check_downtime,
    ),
    Claim(
        id="downtime_about_one_percent",
        kind="modelled",
        statement="With C4D, error-induced downtime is about 1 % (1.16 %).",
        metric="modeled C4D downtime, required within 2 × 1.16 %",
        check=_check_downtime_one_percent,
        expected=False,
        reason=(
            "the model keeps the restart and the work lost since the last checkpoint, which fast "
            "detection does not remove; the paper's figure also needs faster restarts and checkpoints"
        ),
    ),
    Claim(
        id="planned_paths_near_ideal",
        kind="mechanism",
        statement="Planned paths avoid ECMP's collisions: communication cost down about 15 %.",
        metric="ring step time / ideal on a 1:1 leaf-spine fabric: planned vs ECMP's mean over hash seeds",
        check=_check_plan,
    ),
]


# ---------------------------------------------------------------------------------------------
# The figures
# ---------------------------------------------------------------------------------------------

PHASE_COLORS = {"compute": "#B5B5B5", "all-reduce": plot.BASELINE_COLORS[0], "probes": "#A7C4DA"}


def fig_timeline(result: Result) -> go.Figure:
    """One iteration of the slow-compute job: each rank's compute, all-reduce and probes (ms)."""
    tl = result.timeline
    culprit = tl["culprit"]
    n = len(tl["begin"])
    labels = [f"rank {r}" + (" (slow compute)" if r == culprit else "") for r in range(n)]
    fig = plot.figure(
        f"Rank {culprit} computes late; the others wait inside the all-reduce",
        f"time within iteration {tl['iteration']} (ms)",
        "",
        barmode="overlay",
    )
    phases = [("compute", "begin", "enter"), ("all-reduce", "enter", "exit"), ("probes", "exit", "end")]
    for name, start, stop in phases:
        base = np.array(tl[start])
        width = np.array(tl[stop]) - base
        color = [METHOD_COLOR if (name == "compute" and r == culprit) else PHASE_COLORS[name] for r in range(n)]
        fig.add_trace(
            go.Bar(
                y=labels,
                x=width,
                base=base,
                orientation="h",
                name=name,
                marker_color=color,
                hovertemplate="%{y}: " + name + " from %{base:.1f} ms for %{x:.1f} ms<extra></extra>",
            )
        )
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(margin=dict(l=150))  # room for the culprit's label
    return fig


METHOD_COLOR = plot.METHOD_COLOR
MATRIX_TITLES = {
    "slow_nic": "A slow NIC is a slow row of the latency matrix",
    "slow_link": "A slow link is a single slow cell",
    "healthy": "A healthy job: every connection alike",
}


def fig_latency_matrix(result: Result, kind: str = "slow_nic") -> go.Figure:
    """Heat map of the communication latency matrix M[i, j] (median transfer ms) of one job."""
    if kind not in MATRIX_TITLES:
        raise ValueError(f"kind must be one of {sorted(MATRIX_TITLES)}, got {kind!r}")
    M = result.matrices[kind]
    n = M.shape[0]
    record = next(r for r in result.records if (r.fault.kind if r.fault else "healthy") == kind)
    fig = plot.figure(f"{MATRIX_TITLES[kind]}: C4D says {record.diagnosis.evidence}", "receiver j", "sender i")
    text = [[("" if np.isnan(v) else f"{v:.1f}") for v in row] for row in M]
    fig.add_trace(
        go.Heatmap(
            z=M,
            x=[f"rank {j}" for j in range(n)],
            y=[f"rank {i}" for i in range(n)],
            text=text,
            texttemplate="%{text}",
            colorscale=[[0, "#F7F7F7"], [1, METHOD_COLOR]],
            colorbar=dict(title="ms"),
            hovertemplate="%{y} → %{x}: %{z:.2f} ms<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(height=420, title_font_size=13)
    return fig


def fig_downtime(result: Result) -> go.Figure:
    """Error-induced downtime against the fault rate, watchdog + manual diagnosis vs C4D."""
    d = result.downtime
    colors = plot.colors(["watchdog", "c4d"], method="c4d")
    fig = plot.figure(
        "C4D keeps downtime low where the watchdog baseline loses a third of the job",
        "faults per node per day",
        "error-induced downtime (share of wall time)",
    )
    names = {"watchdog": "watchdog timeout + manual diagnosis", "c4d": "C4D (measured detection)"}
    for arm in ("watchdog", "c4d"):
        fig.add_trace(
            go.Scatter(
                x=d["faults_per_node_day"],
                y=d[arm],
                mode="lines+markers",
                name=names[arm],
                line=dict(color=colors[arm]),
                hovertemplate="%{x:.3f} faults/node/day: %{y:.1%}<extra>" + names[arm] + "</extra>",
            )
        )
    rate = result.metrics["watchdog"]["faults_per_node_day"]
    fig.add_vline(x=rate, line=dict(color="#CCCCCC", dash="dot"))
    fig.update_yaxes(tickformat=".0%")
    return fig


def fig_step_times(result: Result) -> go.Figure:
    """Ring step time / ideal: ECMP's distribution over hash seeds vs the plan, per fabric variant."""
    fig = plot.figure(
        "Planned paths stay at the ideal step time; ECMP collides",
        "fabric",
        "ring step time / ideal (mean over jobs)",
    )
    names = list(result.step_ratios)
    fig.add_trace(
        go.Box(
            x=[n for n in names for _ in result.step_ratios[n]["ecmp"]],
            y=[v for n in names for v in result.step_ratios[n]["ecmp"]],
            name=f"ECMP ({result.config.hash_seeds} hash seeds)",
            marker_color=plot.BASELINE_COLORS[0],
            boxpoints="outliers",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=names,
            y=[result.step_ratios[n]["c4p"] for n in names],
            mode="markers",
            name="C4P planned paths",
            marker=dict(color=METHOD_COLOR, size=14, symbol="diamond"),
            hovertemplate="%{x}: %{y:.3f}× ideal<extra>C4P</extra>",
        )
    )
    fig.add_hline(y=1.0, line=dict(color="#CCCCCC", dash="dot"))
    return fig
