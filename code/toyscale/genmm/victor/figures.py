"""The Victor figures: example videos with their captions, group-6 accuracy over training, retrieval."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from toyscale.core import plot
from toyscale.genmm import digits

from .claims import (
    CHANCE,
)
from .data import (
    N_FRAMES,
)
from .experiment import (
    Result,
)
from .training import (
    ARMS,
)

ARM_LABELS = {
    "cooccur": "co-occurrence only (MLM + in-batch alignment)",
    "sentence_order": "+ sentence order",
    "order_tasks": "+ sentence order, frame order, masked frames",
    "victor": "Victor: all tasks + queue alignment",
    "bag": "bag-of-digits control (no frame positions)",
    "bag_oracle": "caption-leak oracle (true digits, no order)",
    "order_oracle": "order oracle (true digits in order)",
}


def arm_colors() -> dict[str, str]:
    """A color per arm: Victor and the order-task arm in the method's colors, baselines in blues and greys."""
    return plot.colors(list(ARMS), method=["victor", "order_tasks"])


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
    orders = "; ".join(" → ".join(str(d) for d in e["triplet"]) for e in result.examples)
    fig.update_layout(
        template="toyscale",
        title=f"Test videos: three digits, one after another ({orders})",
        height=170 * rows + 80,
        margin=dict(l=10, r=10, t=80, b=10),
    )
    return fig


def fig_group6_curves(results: Sequence[Result], arms: Sequence[str] | None = None) -> go.Figure:
    """Group-6 accuracy during training, one thin line per seed and arm, against compute.

    `arms` defaults to every arm the results hold.
    """
    arms = list(results[0].curves) if arms is None else list(arms)
    unknown = [a for a in arms if a not in results[0].curves]
    if unknown:
        raise ValueError(f"arms {unknown} are not in the results; choose from {sorted(results[0].curves)}")
    colors = arm_colors()
    fig = plot.figure(
        "Group-6 climbs with the frame-order task; co-occurrence levels off low",
        "compute (steps of the Victor arm with the same token-layer passes)",
        "group-6 accuracy (chance = 1/6)",
    )
    for arm in arms:
        for k, result in enumerate(results):
            compute, accuracy = result.curves[arm]
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
    fig.add_hline(y=CHANCE, line=dict(color="#999999", dash="dot"), annotation_text="chance")
    fig.update_yaxes(range=[0, 1.02])
    # room below the axis title for a legend of three rows
    fig.update_layout(height=540, legend=dict(y=-0.28), margin=dict(b=60))
    return fig
