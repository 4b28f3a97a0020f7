"""PICASSO's figures: step time against the number of fields, where a step's time goes, the pipeline, the traffic."""

from __future__ import annotations

import statistics

import plotly.graph_objects as go

from toyscale.core import plot

from .experiment import Result
from .timing import PHASES


def fig_packing(result: Result) -> go.Figure:
    """Median ms per training step against the number of fields, per-field bags vs one packed table."""
    colors = plot.colors(["packed", "per_field"], method="packed")
    fig = plot.figure(
        "One packed lookup instead of F: the gap grows with the number of fields",
        "number of feature fields F",
        "ms per training step (median)",
    )
    labels = {"per_field": "per-field bags (F lookups)", "packed": "packed table (one lookup)"}
    for arm in ("per_field", "packed"):
        medians = [1e3 * statistics.median(times) for times in result.step_seconds[arm]]
        fig.add_trace(
            go.Scatter(
                x=result.field_counts,
                y=medians,
                mode="lines+markers",
                name=labels[arm],
                line=dict(color=colors[arm]),
                hovertemplate="F = %{x}: %{y:.1f} ms<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_xaxes(type="log")
    return fig


def fig_timeline(result: Result, n_micro: int = 8) -> go.Figure:
    """The first `n_micro` micro-batches of the serial and the interleaved pass, stage by stage."""
    colors = plot.colors(["train", "produce"], method="train")
    fig = plot.figure(
        "Serial: parse, then train. Interleaved: the parser runs ahead in its own thread",
        "time since the pass started (ms)",
        "",
        barmode="overlay",
    )
    names = {"produce": "parse and hash (producer)", "train": "forward, backward, Adam (trainer)"}
    for stage in ("produce", "train"):
        xs, bases, ys, text = [], [], [], []
        for arm in ("serial", "interleaved"):
            for event in result.timeline[arm]:
                if event.stage == stage and event.micro < n_micro:
                    bases.append(1e3 * event.start)
                    xs.append(1e3 * (event.end - event.start))
                    ys.append(f"{arm}: {'producer' if stage == 'produce' else 'trainer'}")
                    text.append(f"micro-batch {event.micro}")
        fig.add_trace(
            go.Bar(
                x=xs,
                base=bases,
                y=ys,
                orientation="h",
                name=names[stage],
                marker_color=colors[stage],
                text=text,
                hovertemplate="%{text}: %{base:.1f} to %{x:.1f} ms long<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_yaxes(
        categoryorder="array",
        categoryarray=["interleaved: trainer", "interleaved: producer", "serial: trainer", "serial: producer"],
    )
    return fig


def fig_phases(result: Result) -> go.Figure:
    """Median ms per phase of a training step (forward, backward, Adam) at each F, per-field vs packed."""
    colors = plot.colors(["packed", "per_field"], method="packed")
    fig = plot.figure(
        "Where a step's time goes: packing removes most of the forward and optimizer time",
        "phase of a training step, at F fields",
        "ms (median)",
        barmode="group",
    )
    labels = {"per_field": "per-field bags (foreach Adam)", "packed": "packed table (foreach Adam)"}
    x = [f"{phase}, F = {f}" for f in result.field_counts[1:] for phase in PHASES]
    for arm in ("per_field", "packed"):
        y = [result.phases[arm][f][phase] for f in result.field_counts[1:] for phase in PHASES]
        fig.add_trace(go.Bar(x=x, y=y, name=labels[arm], marker_color=colors[arm]))
    fig.update_yaxes(type="log")
    return fig


def fig_traffic(result: Result) -> go.Figure:
    """Slow-link rows per step: one table, a static hot set and LRU, on the skewed stream and on uniform ids."""
    traffic = result.metrics["traffic"]
    arms = ["single", "static", "lru"]
    colors = plot.colors(["lru", "static", "single"], method=result.policy)
    labels = {"single": "one table (slow tier)", "static": "two tiers, static hot set", "lru": "two tiers, LRU"}
    fig = plot.figure(
        "Rows moved over the slow link per training step",
        "id stream",
        "rows per step (reads + write-backs)",
        barmode="group",
    )
    for arm in arms:
        fig.add_trace(
            go.Bar(
                x=[f"Zipf s = {result.config.skew:g}, drifting", "uniform ids"],
                y=[traffic[f"rows_{arm}"], traffic[f"uniform_rows_{arm}"]],
                name=labels[arm] + (" (chosen on validation)" if arm == result.policy else ""),
                marker_color=colors[arm],
            )
        )
    return fig
