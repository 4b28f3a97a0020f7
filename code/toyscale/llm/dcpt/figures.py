"""D-CPT's figures: the largest model's curves with the law, held-out predictions, the decision, the boundaries."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from toyscale.core import plot
from toyscale.core.boundary import Boundary, fig_boundary

from .experiment import ARMS, POLICIES, POLICY_LABELS, SPLITS, Result

SHORT_LABELS = {"dcpt": "D-CPT", "no_interaction": "no interaction", "per_ratio": "per-ratio", "law_free": "law-free"}


def _ratio_colors(ratios: Sequence[float]) -> list[str]:
    """A sequential scale from the baseline blue (r = 0, general only) to the method red (r = 1)."""
    start, end = np.array([0x2E, 0x5F, 0x8A]), np.array([0xD1, 0x49, 0x5B])
    return ["#" + "".join(f"{int(v):02X}" for v in start + q * (end - start)) for q in ratios]


def fig_curves(result: Result, loss: str = "domain") -> go.Figure:
    """The largest model's loss against D per ratio (markers) with the law fitted on the smaller models (lines)."""
    if loss not in ("domain", "general"):
        raise ValueError(f"loss must be 'domain' or 'general', got {loss!r}")
    if not result.curves:
        raise ValueError("this result has no curves (a falsifier's run): rerun with the default method")
    curves = result.curves
    law = curves[f"law_{loss}"]
    title = {
        "domain": "Fitted on the smaller models, the law follows the largest model's fan of slopes in D",
        "general": "The general loss: more domain text costs general loss, which the law only levels out",
    }[loss]
    fig = plot.figure(title, "continual pre-training tokens D (characters, log scale)", f"{loss} loss (bits/char)")
    fig.update_xaxes(type="log")
    for q, color in zip(curves["ratios"], _ratio_colors(curves["ratios"]), strict=True):
        fig.add_trace(
            go.Scatter(
                x=curves["D"][q],
                y=curves[loss][q],
                mode="markers",
                marker=dict(color=color, size=6),
                name=f"r = {q:g}",
                legendgroup=f"{q}",
                hovertemplate=f"r = {q:g}<br>D = %{{x:,.0f}}<br>measured %{{y:.3f}}<extra></extra>",
            )
        )
        if q in law:
            fig.add_trace(
                go.Scatter(
                    x=curves["D_line"],
                    y=law[q],
                    mode="lines",
                    line=dict(color=color, width=2),
                    name=f"law, r = {q:g}",
                    legendgroup=f"{q}",
                    showlegend=False,
                    hovertemplate=f"law, r = {q:g}<br>D = %{{x:,.0f}}<br>predicted %{{y:.3f}}<extra></extra>",
                )
            )
    return fig


def fig_held_out(result: Result) -> go.Figure:
    """Predicted against measured domain loss on the held-out points of every split, per predictor."""
    colors = plot.colors(list(ARMS), method="dcpt")
    fig = plot.figure(
        "Held-out domain loss, predicted against measured (click a baseline in the legend to compare)",
        "measured domain loss (bits/char)",
        "predicted domain loss (bits/char)",
    )
    symbols = {"ratio": "circle", "model": "diamond", "late": "square"}
    values = np.concatenate([result.held_out[s]["L"] for s in SPLITS])
    lo, hi = float(values.min()) - 0.05, float(values.max()) + 0.05
    fig.add_trace(
        go.Scatter(
            x=[lo, hi], y=[lo, hi], mode="lines", name="perfect prediction", line=dict(color="#CCCCCC", dash="dot")
        )
    )
    for arm in ARMS:
        for split in SPLITS:
            points = result.held_out[split]
            error = result.metrics[arm][f"rmse_{split}"]
            fig.add_trace(
                go.Scatter(
                    x=points["L"],
                    y=points["predicted"][arm],
                    mode="markers",
                    marker=dict(color=colors[arm], symbol=symbols[split], size=5, opacity=0.7),
                    name=f"{SHORT_LABELS[arm]}, {split} (RMSE {error:.3f})",
                    visible=True if arm == "dcpt" else "legendonly",
                )
            )
    fig.update_xaxes(range=[lo, hi])
    fig.update_yaxes(range=[lo, hi])
    fig.update_layout(height=640)
    return fig


def fig_choice(result: Result) -> go.Figure:
    """The decision: the law's predicted general and domain loss of the largest model against r, the measured
    losses, the limit, and every policy's choice."""
    c = result.choice
    colors = plot.colors(["domain", "general"], method="domain")
    fig = plot.figure(
        f"The law's ratio r = {c['picks']['law']:g}; the grid's best within the limit r = {c['best']:g}",
        "domain ratio r of continual pre-training",
        "loss of the largest model at the last checkpoint (bits/char)",
    )
    for loss in ("domain", "general"):
        fig.add_trace(
            go.Scatter(
                x=c["r"],
                y=c[f"predicted_{loss}"],
                mode="lines",
                line=dict(color=colors[loss]),
                name=f"{loss} loss, law (fitted on the small models)",
            )
        )
        fig.add_trace(
            go.Scatter(
                x=c["grid_r"],
                y=c[f"actual_{loss}"],
                mode="markers",
                marker=dict(color=colors[loss], size=8, symbol="x"),
                name=f"{loss} loss, measured on the grid",
            )
        )
    lines = [
        (c["limit"], "general-loss limit: (1 + T) × the measured r = 0 run", "dash"),
        (c["predicted_limit"], "the law's limit: (1 + T) × its predicted r = 0 run", "dot"),
    ]
    if "start_general" in c:
        lines.append((c["start_general"], "general loss of the base model before CPT", "dashdot"))
    for value, name, dash in lines:
        fig.add_trace(
            go.Scatter(x=[0, 1], y=[value] * 2, mode="lines", line=dict(color=plot.ORACLE_COLOR, dash=dash), name=name)
        )
    y_top = float(max(np.max(c["actual_domain"]), np.max(c["actual_general"])))
    marks = plot.colors(list(POLICIES), method="law")
    for k, policy in enumerate(POLICIES):
        fig.add_trace(
            go.Scatter(
                x=[c["picks"][policy]],
                y=[y_top + 0.04 * (k + 1)],
                mode="markers",
                marker=dict(color=marks[policy], size=11, symbol="triangle-down"),
                name=f"choice: {POLICY_LABELS[policy]}",
            )
        )
    return fig


#: Per swept axis: the figure's title and its x axis (log-scaled for N and D).
AXIS_TITLES = {
    "ratio": (
        "Ratios further beyond the fitted ones: the law pulls ahead of the measurements, until few ratios are fitted",
        "distance Δr of the held-out ratio from the fitted ratios (0: between two fitted ratios)",
        False,
    ),
    "tokens": (
        "Later checkpoints further from the fitted ones: the law against carry-forward and per-ratio laws",
        "extrapolation in D: the predicted checkpoint's D over the largest fitted D (log scale)",
        True,
    ),
    "size": (
        "A held-out model further from the fitted sizes: the law against the neighbouring sizes' measurements",
        "N of the held-out model over the largest fitted N (log scale; below 1: inside the fitted sizes)",
        True,
    ),
}


#: How each further comparison is drawn beside the law-free one (solid): its colour index and dash.
_COMPARISON_STYLE = {"per_ratio": (1, "dashdot"), "linear": (2, "dot"), "no_interaction": (0, "dash")}


def fig_boundary_axis(boundaries: dict[str, Boundary], axis: str) -> go.Figure:
    """The boundary along one axis (CLAIMS.md §7): the law's RMSE advantage, mean ± sd over seeds, against the
    law-free predictor (solid), the per-ratio laws, the law without its interaction term and (in r) the line
    through the two highest fitted ratios, as the held-out runs move away."""
    if axis not in AXIS_TITLES:
        raise ValueError(f"axis must be one of {sorted(AXIS_TITLES)}, got {axis!r}")
    title, x_title, log = AXIS_TITLES[axis]
    fig = fig_boundary(boundaries["law_free"], title, x_title=x_title)
    fig.update_yaxes(title_text="Δ RMSE of the held-out domain loss (baseline − D-CPT), bits/char")
    for name, (color, dash) in _COMPARISON_STYLE.items():
        if name not in boundaries:
            continue
        other = boundaries[name]
        fig.add_trace(
            go.Scatter(
                x=list(other.points),
                y=other.mean.tolist(),
                error_y=dict(type="data", array=other.sd.tolist(), visible=True),
                mode="lines+markers",
                name=f"{other.delta_name}, mean ± sd over {len(other.seeds)} seeds",
                line=dict(color=plot.BASELINE_COLORS[color % len(plot.BASELINE_COLORS)], dash=dash),
                customdata=[f"{w}/{len(other.seeds)}" for w in other.wins],
                hovertemplate="%{x}: %{y:+.4f} (wins %{customdata})<extra></extra>",
            )
        )
    if log:
        fig.update_xaxes(type="log")
    return fig
