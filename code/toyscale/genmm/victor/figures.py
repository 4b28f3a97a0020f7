"""The Victor figures: example videos with their captions, validation group-6 during training, and the
attribution of the order gain to each proxy task."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from toyscale.core import plot
from toyscale.genmm import digits

from .claims import chance
from .data import N_FRAMES
from .experiment import Result
from .training import ARMS

ARM_LABELS = {
    "cooccur": "co-occurrence only (MLM + in-batch alignment)",
    "cooccur_steps": "co-occurrence at the Victor arm's steps (less compute)",
    "sentence_order": "+ sentence order (cross encoder)",
    "frame_order": "+ frame order",
    "masked_frame": "+ masked frames",
    "order_tasks": "+ all three order tasks",
    "victor": "Victor: all three + queue alignment",
    "shuffled": "control: + frame order, captions with shuffled digit order",
    "bag": "video encoder without frame positions",
    "bag_oracle": "caption-leak oracle (true digits, no order)",
    "order_oracle": "order oracle (true digits in order)",
}
#: The attribution rows: nothing added, each proxy task alone, all three, all three with queues.
ATTRIBUTION = ("cooccur", "sentence_order", "masked_frame", "frame_order", "order_tasks", "victor")


def arm_colors() -> dict[str, str]:
    """A color per arm: the frame-order and Victor arms in the method's colors, the others in blues and greys."""
    return plot.colors(list(ARMS), method=["frame_order", "victor"])


def fig_examples(result: Result) -> go.Figure:
    """A few test videos, one row each: the six frames in order (the captions are printed beside)."""
    rows = len(result.examples)
    titles = [f"video {i + 1}, frame {t + 1}" for i in range(rows) for t in range(N_FRAMES)]
    fig = make_subplots(rows=rows, cols=N_FRAMES, subplot_titles=titles, vertical_spacing=0.08, horizontal_spacing=0.02)
    for i, example in enumerate(result.examples):
        for t, image in enumerate(example["images"]):
            fig.add_trace(
                go.Heatmap(
                    z=digits.to_unit(image)[::-1],
                    colorscale="Greys",
                    zmin=0,
                    zmax=1,
                    showscale=False,
                    hovertemplate=f"video {i + 1}, frame {t + 1}: intensity %{{z:.2f}}<extra></extra>",
                ),
                row=i + 1,
                col=t + 1,
            )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    for k in range(1, rows * N_FRAMES + 1):
        suffix = "" if k == 1 else str(k)
        fig.layout[f"yaxis{suffix}"].update(scaleanchor=f"x{suffix}", scaleratio=1, constrain="domain")
    fig.update_annotations(font_size=10)
    orders = "; ".join(" → ".join(str(d) for d in e["events"]) for e in result.examples)
    fig.update_layout(
        template="toyscale",
        title=f"Test videos: digits one after another ({orders})",
        height=170 * rows + 80,
        margin=dict(l=10, r=10, t=80, b=10),
    )
    return fig


def fig_group6_curves(results: Sequence[Result], arms: Sequence[str] | None = None) -> go.Figure:
    """Validation group-6 accuracy during training, one thin line per seed and arm, against compute.

    `arms` defaults to every arm the results hold.
    """
    arms = list(results[0].curves) if arms is None else list(arms)
    unknown = [a for a in arms if a not in results[0].curves]
    if unknown:
        raise ValueError(f"arms {unknown} are not in the results; choose from {sorted(results[0].curves)}")
    colors = arm_colors()
    fig = plot.figure(
        "Validation group-6 during training, each arm at the same compute",
        "compute (steps of the Victor arm with the same token-layer passes)",
        "validation group-6 accuracy",
    )
    for arm in arms:
        for k, result in enumerate(results):
            compute, accuracy = result.curves[arm][:2]
            fig.add_trace(
                go.Scatter(
                    x=compute,
                    y=accuracy,
                    mode="lines",
                    name=ARM_LABELS[arm],
                    legendgroup=arm,
                    showlegend=k == 0,
                    line=dict(color=colors[arm], width=1.5),
                    hovertemplate=f"seed {result.seed}: %{{y:.2f}} at %{{x}}<extra>{ARM_LABELS[arm]}</extra>",
                )
            )
    fig.add_hline(y=chance(results), line=dict(color="#999999", dash="dot"), annotation_text="chance")
    fig.update_yaxes(range=[0, 1.02])
    # room below the axis title for a legend of several rows
    fig.update_layout(height=560, legend=dict(y=-0.28), margin=dict(b=60))
    return fig


def fig_attribution(results: Sequence[Result], metric: str = "group6") -> go.Figure:
    """One bar per attribution row (each proxy task alone, all three, with queues): mean ± sd over seeds."""
    names = {
        "group6": "test group-6 accuracy",
        "twin6": "twin order accuracy",
        "twin_r1": "twin-gallery R@1",
        "r1": "test R@1",
    }
    if metric not in names:
        raise ValueError(f"metric must be one of {sorted(names)}, got {metric!r}")
    arms = [arm for arm in ATTRIBUTION if arm in results[0].metrics]
    values = np.array([[r.metrics[arm][metric] for r in results] for arm in arms])
    colors = arm_colors()
    fig = plot.figure(
        f"Each proxy task alone and together: {names[metric]}, equal compute",
        "",
        names[metric],
    )
    fig.add_trace(
        go.Bar(
            x=[ARM_LABELS[arm] for arm in arms],
            y=values.mean(axis=1),
            error_y=dict(type="data", array=values.std(axis=1, ddof=1) if values.shape[1] > 1 else None),
            marker_color=[colors[arm] for arm in arms],
            hovertemplate="%{x}: %{y:.3f}<extra></extra>",
            showlegend=False,
        )
    )
    if metric in ("group6", "twin6"):
        fig.add_hline(y=chance(results), line=dict(color="#999999", dash="dot"), annotation_text="chance")
    fig.update_layout(height=480)
    return fig
