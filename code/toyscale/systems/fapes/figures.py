"""The FaPES figures: GPUs over the day, completion times, and request latency around reclaims and the burst."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from toyscale.core import plot

from .cluster import ARMS, DAY, POLICY_LABELS, TIMELINE_COLUMNS
from .experiment import Result
from .simulation import SimResult


def _colors() -> dict[str, str]:
    return plot.colors(list(ARMS), "fapes")


def _theme(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(template="toyscale", title=title, height=height)
    return fig


def _sample(timeline: np.ndarray, column: str, minutes: np.ndarray) -> np.ndarray:
    """A timeline column as a step function sampled at the given minutes (last value at or before)."""
    idx = np.searchsorted(timeline[:, 0], minutes, side="right") - 1
    return timeline[np.clip(idx, 0, None), TIMELINE_COLUMNS.index(column)]


def fig_gpus_over_day(result: Result, arms: tuple[str, ...] = ("pollux", "loan_naive", "fapes")) -> go.Figure:
    """GPUs per pool over the first day: replicas, GPUs training holds, and the loaned part of it."""
    minutes = np.arange(0.0, DAY + 1, 2.0)
    hours = minutes / 60
    fig = make_subplots(
        rows=len(arms),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.06,
        subplot_titles=[POLICY_LABELS[a] for a in arms],
    )
    c = result.config.cluster
    styles = {
        "replicas": ("inference replicas", plot.BASELINE_COLORS[0]),
        "held": ("GPUs held by training", plot.BASELINE_COLORS[3]),
        "loaned": ("of which loaned inference GPUs", plot.METHOD_COLOR),
    }
    for row, arm in enumerate(arms, start=1):
        tl = result.sims[arm].timeline
        for column, (label, color) in styles.items():
            fig.add_trace(
                go.Scatter(
                    x=hours,
                    y=_sample(tl, column, minutes),
                    name=label,
                    line=dict(color=color, width=1.6),
                    line_shape="hv",
                    showlegend=row == 1,
                    legendgroup=column,
                ),
                row=row,
                col=1,
            )
        fig.add_hline(y=c.train_gpus, line=dict(color="#BBBBBB", dash="dot", width=1), row=row, col=1)
        fig.update_yaxes(title_text="GPUs", range=[0, c.train_gpus + c.infer_gpus + 1], row=row, col=1)
    fig.update_xaxes(title_text="hour of the first day", row=len(arms), col=1)
    return _theme(
        fig,
        "Idle inference GPUs go to training in the evening, as requests fall and jobs pile up",
        200 + 220 * len(arms),
    )


def fig_jct(result: Result) -> go.Figure:
    """The distribution of job completion times per policy (main load)."""
    colors = _colors()
    fig = plot.figure(
        "Completion times per policy (the diamond is the mean)", "policy", "job completion time (minutes)"
    )
    for arm in result.sims:
        fig.add_trace(go.Box(y=result.sims[arm].jct, name=POLICY_LABELS[arm], marker_color=colors[arm], boxmean=True))
    fig.update_layout(showlegend=False, yaxis_type="log")
    return fig


def _p99_per_bin(sim: SimResult, bin_min: float, end: float) -> tuple[np.ndarray, np.ndarray]:
    """The p99 latency of the requests arriving in each bin of `bin_min` minutes (nan for an empty bin)."""
    edges = np.arange(0.0, end + bin_min, bin_min)
    which = np.digitize(sim.request_minutes, edges) - 1
    p99 = np.full(edges.size - 1, np.nan)
    for b in np.unique(which[(which >= 0) & (which < p99.size)]):
        p99[b] = np.percentile(sim.latency_s[which == b], 99)
    return (edges[:-1] + bin_min / 2) / 60, p99


def fig_latency(result: Result, day: str = "normal", bin_min: float = 10.0) -> go.Figure:
    """The true request rate with FaPES's forecast (top), and each lending policy's p99 latency (bottom).

    day: 'normal' (the main trace) or 'burst' (the same trace with the evening burst).
    """
    if day not in ("normal", "burst"):
        raise ValueError(f"day must be 'normal' or 'burst', got {day!r}")
    sims = result.sims if day == "normal" else result.burst_sims
    if "fapes" not in sims or "loan_naive" not in sims:
        raise ValueError(f"the result has no {day} day run of FaPES and naive lending (Config.control and arms)")
    config = result.config
    end = config.window_min
    colors = _colors()
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.4, 0.6])
    board = sims["fapes"].forecast
    fig.add_trace(
        go.Scatter(
            x=board[:, 0] / 60,
            y=board[:, 1],
            name="FaPES's forecast of the next 30 minutes' peak",
            line=dict(color=plot.METHOD_COLOR, width=1.2),
        ),
        row=1,
        col=1,
    )
    truth = result.rate[day]
    fig.add_trace(
        go.Scatter(
            x=(np.arange(truth.size) + 0.5) / 60,
            y=truth,
            name="true request rate",
            line=dict(color=plot.BASELINE_COLORS[3], width=1.2),
        ),
        row=1,
        col=1,
    )
    for arm in ("loan_naive", "fapes"):
        x, p99 = _p99_per_bin(sims[arm], bin_min, end)
        fig.add_trace(
            go.Scatter(x=x, y=p99, name=f"{POLICY_LABELS[arm]}: p99 latency", line=dict(color=colors[arm], width=1.6)),
            row=2,
            col=1,
        )
    fig.add_hline(y=config.slo_s, line=dict(color="#8C8C8C", dash="dash", width=1), row=2, col=1)
    fig.update_yaxes(title_text="requests / minute", row=1, col=1)
    fig.update_yaxes(title_text=f"p99 latency per {bin_min:g} min (s)", type="log", row=2, col=1)
    fig.update_xaxes(title_text="hour", row=2, col=1)
    title = (
        "A normal day: the forecast keeps replicas ahead; the dashed line is the SLO"
        if day == "normal"
        else "The burst day: a surge the forecast has never seen reaches both policies at once"
    )
    if day == "burst" and result.burst_span is not None:
        for row in (1, 2):
            fig.add_vrect(
                x0=result.burst_span[0] / 60,
                x1=result.burst_span[1] / 60,
                fillcolor="#DDDDDD",
                opacity=0.4,
                line_width=0,
                row=row,
                col=1,
            )
    return _theme(fig, title, 620)
