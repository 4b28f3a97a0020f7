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
report enter/exit times and the timing of every message of the collective itself (a hand-rolled
two-shot all-reduce, every connection busy at once) through a thin instrumentation layer; six
injected faults (slow compute, slow link, slow NIC egress, slow ingress, a rank hang, a connection
that stops delivering) that live below that layer, with sizes drawn over 2–40 ms; C4D's
classification and latency-matrix localization, reading only the reports; its two alternatives,
the last rank to arrive (per-rank timing, by the same threshold) and an all-pairs ping mesh with
the same probe budget as the collective's own messages; a renewal model of effective training
time with an explicit fault mix (stops and slowdowns), fed with the detection times C4D measured
and each slowdown's measured share of the job's speed; and a flow-level leaf-spine
fabric with max-min fair rates, where ECMP (a distribution over hash seeds) meets a planned
assignment, on a non-blocking fabric, with bonded NICs, with a failed link, and on a 2:1
oversubscribed fabric with background flows, where the plan (on a model of max-min sharing) and
ECMP (with a hash search at the planner's budget) each pick their queue pairs per connection on
validation placements.

**What the toy finds.** The claims table says which claims hold, with the numbers. In short: C4D
names communication faults that the last-arrival baseline cannot, but a ping mesh with the same
probe budget names the same ones (C4D's saving is the mesh's probes, not what it localizes), and
all miss faults smaller than the synchronization points' noise (the boundary over the fault size
shows where detection starts); the downtime claims are a model whose output follows its assumed restart and checkpoint
costs, and the paper's 1 % is not reached; the plan's ideal step time on the 1:1 fabric holds by
construction, and on the hard fabric the plan's cut against tuned ECMP is measured beside the
paper's 15 %, with its boundary over the queue pairs per connection.

**What it drops.** GPUs, NCCL/ACCL and RDMA: "compute" is a sleep with a little matmul, links are
loopback TCP, and faults are delays of milliseconds on a shared two-core machine (real faults are
often subtler against far less noise). The production fault mix (`Config.stop_share`), the
isolation machinery and the multi-tier fabric are replaced by assumptions stated in `Config`.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from toyscale.core import plot

from . import diagnose, plan
from .claims import CLAIMS, FALSIFIERS
from .diagnose import (
    FAULT_KINDS,
    SLOW_KINDS,
    Diagnosis,
    Fault,
    JobConfig,
    Recovery,
    Thresholds,
    last_arrival,
    run_job,
    run_session,
    slowest_collective,
)
from .experiment import HARD, VARIANTS, Config, FaultRecord, Result, run

__all__ = [
    "CLAIMS",
    "FALSIFIERS",
    "FAULT_KINDS",
    "HARD",
    "SLOW_KINDS",
    "VARIANTS",
    "Config",
    "Diagnosis",
    "Fault",
    "FaultRecord",
    "JobConfig",
    "Recovery",
    "Result",
    "Thresholds",
    "diagnose",
    "fig_detection",
    "fig_downtime",
    "fig_downtime_mix",
    "fig_latency_matrix",
    "fig_step_times",
    "fig_timeline",
    "last_arrival",
    "plan",
    "run",
    "run_job",
    "run_session",
    "slowest_collective",
]


# ---------------------------------------------------------------------------------------------
# The figures
# ---------------------------------------------------------------------------------------------

PHASE_COLORS = {"compute": "#B5B5B5", "all-reduce": plot.BASELINE_COLORS[0], "step end": "#A7C4DA"}


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
    phases = [("compute", "begin", "enter"), ("all-reduce", "enter", "exit"), ("step end", "exit", "end")]
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
    "slow_nic": "A slow NIC egress is a slow row of the latency matrix",
    "slow_ingress": "A slow ingress is a slow column",
    "slow_link": "A slow link is a single slow cell",
    "healthy": "A healthy job: every connection alike",
}


def fig_latency_matrix(result: Result, kind: str = "slow_nic") -> go.Figure:
    """Heat map of the latency matrix M[i, j] (median ms of the collective's messages i → j) of one episode."""
    if kind not in MATRIX_TITLES:
        raise ValueError(f"kind must be one of {sorted(MATRIX_TITLES)}, got {kind!r}")
    M = result.matrices[kind]
    n = M.shape[0]
    record = next(r for r in result.records if (r.fault.kind if r.fault else "healthy") == kind and not r.control)
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


_DOWNTIME_NAMES = {
    "watchdog": "watchdog timeout + manual diagnosis",
    "c4d": "C4D (fed its measured detection times)",
    "perfect": "a perfect detector (the floor)",
}


def _downtime_traces(fig: go.Figure, x: list[float], curves: dict[str, list[float]], unit: str) -> None:
    colors = plot.colors(list(_DOWNTIME_NAMES), method="c4d")
    for arm, name in _DOWNTIME_NAMES.items():
        fig.add_trace(
            go.Scatter(
                x=x,
                y=curves[arm],
                mode="lines+markers",
                name=name,
                line=dict(color=colors[arm], dash="dot" if arm == "perfect" else "solid"),
                hovertemplate="%{x:.3f} " + unit + ": %{y:.1%}<extra>" + name + "</extra>",
            )
        )
    fig.update_yaxes(tickformat=".0%")


def fig_downtime(downtime: dict[str, list[float]], rate: float) -> go.Figure:
    """Modelled error-induced downtime against the fault rate (the calibrated one dotted), every detector."""
    fig = plot.figure(
        "Modelled: C4D's measured detection against the watchdog and a manual search",
        "faults per node per day",
        "error-induced downtime (share of wall time)",
    )
    _downtime_traces(fig, downtime["faults_per_node_day"], downtime, "faults/node/day")
    fig.add_vline(x=rate, line=dict(color="#CCCCCC", dash="dot"))
    return fig


def fig_downtime_mix(downtime: dict[str, list[float]], share: float) -> go.Figure:
    """Modelled downtime against the share of faults that stop the job (the assumed one dotted), at the
    calibrated fault rate."""
    fig = plot.figure(
        "Modelled: the fault mix decides how much a detector can save",
        "share of faults that stop the job (the rest slow it)",
        "error-induced downtime (share of wall time)",
    )
    _downtime_traces(fig, downtime["stop_shares"], {k: downtime[f"{k}_by_mix"] for k in _DOWNTIME_NAMES}, "stops")
    fig.add_vline(x=share, line=dict(color="#CCCCCC", dash="dot"))
    return fig


def fig_step_times(result: Result) -> go.Figure:
    """Ring step time / ideal: ECMP's distribution over hash seeds vs the plan, per fabric variant."""
    fig = plot.figure(
        "Planned paths against ECMP's hash draws, per fabric",
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


def fig_detection(points, named: dict[str, np.ndarray], false_alarm: dict[str, np.ndarray]) -> go.Figure:
    """Detection rate and false-alarm rate of C4D and its two alternatives over the injected fault's size.

    named[detector]: (points, seeds, kinds) 0/1 per slow fault; false_alarm[detector]: (points, seeds).
    Mean ± sd over seeds at each point.
    """
    fig = plot.figure(
        "Detection against false alarms over the fault's size", "injected fault size (ms)", "share of episodes"
    )
    styles = {
        "c4d": (METHOD_COLOR, "C4D"),
        "ping_mesh": (plot.BASELINE_COLORS[1], "ping mesh"),
        "last_arrival": (plot.BASELINE_COLORS[0], "last arrival"),
    }
    for detector, (color, label) in styles.items():
        rate = named[detector].mean(axis=2)
        fig.add_trace(
            go.Scatter(
                x=list(points),
                y=rate.mean(axis=1).tolist(),
                error_y=dict(type="data", array=rate.std(axis=1, ddof=1).tolist(), visible=True),
                mode="lines+markers",
                name=f"{label}: slow faults named exactly",
                line=dict(color=color),
            )
        )
        fig.add_trace(
            go.Scatter(
                x=list(points),
                y=false_alarm[detector].mean(axis=1).tolist(),
                mode="lines+markers",
                name=f"{label}: false alarms on the healthy episode",
                line=dict(color=color, dash="dot"),
            )
        )
    fig.update_xaxes(type="log")
    return fig
