"""Fangorn's figures: the job graph before and after the plug-ins, the straggler, job times, the replay check."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from toyscale.core import plot

from .cluster import task_seconds
from .experiment import ADAPTIVE, OPTIMIZER, ORACLE, WORKLOADS, Result
from .graph import Stage


def _layout(stages: list[Stage]) -> dict[str, tuple[int, float]]:
    """Columns by depth in the graph, rows spread within a column."""
    depth: dict[str, int] = {}
    names = {s.name for s in stages}
    for s in stages:
        depth[s.name] = 1 + max((depth[d] for d in s.deps if d in names), default=-1)
    pos = {}
    for d in set(depth.values()):
        col = [s.name for s in stages if depth[s.name] == d]
        for i, n in enumerate(col):
            pos[n] = (d, (len(col) - 1) / 2 - i)
    return pos


def fig_graph(result: Result, workload: str = "join, small side", before: str | None = None) -> go.Figure:
    """The job graph as planned by a static plan (default: the best static policy) and as adaptive reshaped it."""
    if workload not in result.records:
        raise ValueError(f"workload must be one of {list(result.records)}, got {workload!r}")
    before = before or result.best_static
    fig = make_subplots(
        rows=2, cols=1, vertical_spacing=0.14, subplot_titles=(f"planned: {before}", "as run: adaptive")
    )
    for row, arm in ((1, before), (2, ADAPTIVE)):
        stages = result.records[workload][arm].stages
        pos = _layout(stages)
        for s in stages:
            for d in s.deps:
                if d in pos:
                    (x0, y0), (x1, y1) = pos[d], pos[s.name]
                    fig.add_trace(
                        go.Scatter(
                            x=[x0, x1],
                            y=[y0, y1],
                            mode="lines",
                            line=dict(color="#BBBBBB", width=2),
                            hoverinfo="skip",
                            showlegend=False,
                        ),
                        row=row,
                        col=1,
                    )
        color = plot.METHOD_COLOR if arm == ADAPTIVE else plot.BASELINE_COLORS[0]
        fig.add_trace(
            go.Scatter(
                x=[pos[s.name][0] for s in stages],
                y=[pos[s.name][1] for s in stages],
                mode="markers+text",
                marker=dict(
                    size=[14 + 4 * np.log2(len(s.tasks)) for s in stages],
                    color=color,
                    symbol=["diamond" if s.mode == "bubble" else "circle" for s in stages],
                ),
                text=[f"{s.name}<br>{len(s.tasks)} task{'s' if len(s.tasks) > 1 else ''}, {s.mode}" for s in stages],
                textposition="top center",
                name=arm,
                showlegend=False,
                hovertemplate="%{text}<extra></extra>",
            ),
            row=row,
            col=1,
        )
    decided = "; ".join(result.records[workload][ADAPTIVE].decisions)
    fig.update_layout(
        template="toyscale",
        height=560,
        margin=dict(t=90, b=60),
        title=f"{workload}: the plug-ins rewrite the plan between stages<br><sup>{decided}</sup>",
    )
    fig.update_xaxes(visible=False, range=[-0.5, 3.5])
    fig.update_yaxes(visible=False, range=[-1.4, 1.6])
    return fig


def fig_task_times(result: Result, workload: str = "zipf hot key", arms: tuple[str, ...] | None = None) -> go.Figure:
    """Simulated reduce-task times, longest first: a static plan's straggler (default: the best static), adaptive's."""
    if workload not in result.records:
        raise ValueError(f"workload must be one of {list(result.records)}, got {workload!r}")
    arms = arms or (result.best_static, ADAPTIVE)
    sim = replace(result.config.cluster, rows_scale=result.config.rows_scale)
    fig = plot.figure(
        f"{workload}: splitting the hot bucket removes the straggler",
        "reduce task (longest first)",
        "simulated task time (s)",
        barmode="group",
        hovermode="x",  # a label anywhere above a task, even over the short bars
    )
    cols = plot.colors(list(arms), ADAPTIVE) if ADAPTIVE in arms else plot.colors(list(arms), arms[0])
    for arm in arms:
        red = next(s for s in result.records[workload][arm].stages if s.name == "reduce")
        t = sorted((task_seconds(task.work, result.costs, sim) for task in red.tasks), reverse=True)
        fig.add_trace(go.Bar(x=list(range(1, len(t) + 1)), y=t, name=f"{arm} ({len(t)} tasks)", marker_color=cols[arm]))
    return fig


def fig_job_times(
    result: Result,
    metric: str = "job_s",
    arms: tuple[str, ...] = ("static P=16", "static P=64", "static P=256", OPTIMIZER, ORACLE, ADAPTIVE),
) -> go.Figure:
    """Job time (or slot-seconds) per workload: a few static policies, the optimizer, the oracle and adaptive."""
    if metric not in ("job_s", "slot_s"):
        raise ValueError(f"metric must be 'job_s' or 'slot_s', got {metric!r}")
    missing = [a for a in arms if a not in result.metrics]
    if missing:
        raise ValueError(f"arms {missing} are not in the result; choose from {list(result.metrics)}")
    cols = plot.colors(list(arms), ADAPTIVE)
    label = "simulated job time (s)" if metric == "job_s" else "slot-seconds held (s)"
    title = (
        "Each static policy is slow somewhere; adaptive is never far off, and far ahead on the hot key"
        if metric == "job_s"
        else "Slot-seconds: many small tasks cost start latency on every slot"
    )
    fig = plot.figure(title, "workload", label, barmode="group")
    for arm in arms:
        name = f"{arm} (best static)" if arm == result.best_static else arm
        fig.add_trace(
            go.Bar(
                x=list(WORKLOADS),
                y=[result.metrics[arm][f"{metric} {w}"] for w in WORKLOADS],
                name=name,
                marker_color=cols[arm],
            )
        )
    fig.update_yaxes(type="log")
    return fig


def fig_replay_check(result: Result) -> go.Figure:
    """Every task the real executor ran: its measured wall time against the cost model's prediction for it.

    The prediction is Σ_k b_k n_k on the toy rows (no scale, no scheduling overhead): the replay's
    per-task time before it is scaled to production rows. Points on the diagonal mean the committed
    cost model describes this machine's tasks; a band around it is this machine's noise.
    """
    x, y, kinds = [], [], []
    for recs in result.records.values():
        for rec in recs.values():
            for stage in rec.stages:
                for task in stage.tasks:
                    if task.wall_s > 0:
                        x.append(sum(result.costs.per_row_s[k] * n for k, n in task.work.items()))
                        y.append(task.wall_s)
                        kinds.append(stage.name)
    fig = plot.figure(
        "The replay's task times against the real executor's, task by task",
        "predicted by the committed cost model (s, toy rows)",
        "measured wall time on this machine (s)",
    )
    cols = plot.colors(sorted(set(kinds)), [])
    for kind in sorted(set(kinds)):
        pick = [i for i, k in enumerate(kinds) if k == kind]
        fig.add_trace(
            go.Scatter(
                x=[x[i] for i in pick],
                y=[y[i] for i in pick],
                mode="markers",
                name=kind,
                marker=dict(size=4, opacity=0.5, color=cols[kind]),
            )
        )
    span = [max(min(x), 1e-7), max(x)]
    fig.add_trace(go.Scatter(x=span, y=span, mode="lines", name="measured = predicted", line=dict(color="#333333")))
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log")
    return fig
