"""STAR's figures: per-domain AUC, the attribution grid, the learned domain weights, the validation paths."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from toyscale.core import plot

from .experiment import ARMS, GRID, Result

ARM_LABELS = {
    "star": "STAR",
    "star_no_aux": "STAR without aux net",
    "shared_pd": "shared model (per-domain norm.)",
    "mmoe_pd": "MMoE (per-domain norm.)",
    "shared_bottom_pd": "shared-bottom (per-domain norm.)",
    "separate": "separate per-domain models",
    "star_bn": "STAR with batch norm (mixed batches)",
    "star_bn_pd": "STAR with batch norm behind per-domain standardization",
    "star_pn_shared": "STAR with PN's statistics shared by all domains",
    "shared": "shared model (global norm.)",
    "mmoe": "MMoE (global norm.)",
    "star_bn_single": "STAR with batch norm (single-domain batches)",
    "oracle": "oracle (true p)",
}


def arm_colors() -> dict[str, str]:
    """The book's colors: STAR in the method's shades, the baselines and ablations in blues and greys."""
    return plot.colors(list(ARM_LABELS), method=["star", "star_no_aux"])


def _domain_names(result: Result) -> list[str]:
    total = sum(result.train_rows)
    return [f"domain {d} ({n / total:.0%})" for d, n in enumerate(result.train_rows)]


def fig_domain_auc(result: Result, arms: Sequence[str] | None = None) -> go.Figure:
    """Test AUC of every domain for each arm (bars) and the oracle (markers)."""
    arms = [a for a in (arms or ARMS) if a in result.domain_auc]
    colors, names = arm_colors(), _domain_names(result)
    fig = plot.figure(
        "Per-domain test AUC of every arm, each tuned and stopped on its own validation score",
        "domain (share of the training impressions)",
        "test AUC",
        barmode="group",
    )
    for arm in arms:
        fig.add_trace(
            go.Bar(
                x=names,
                y=result.domain_auc[arm],
                name=ARM_LABELS[arm],
                marker_color=colors[arm],
                hovertemplate="%{x}: AUC %{y:.4f}<extra>%{fullData.name}</extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=names,
            y=result.domain_auc["oracle"],
            mode="markers",
            name=ARM_LABELS["oracle"],
            marker=dict(color=colors["oracle"], symbol="line-ew-open", size=28, line=dict(width=2)),
        )
    )
    every = [v for arm in [*arms, "oracle"] for v in result.domain_auc[arm]]
    fig.update_yaxes(range=[min(every) - 0.01, max(every) + 0.005])
    return fig


def grid_deltas(
    results: Sequence[Result], metric: str = "auc_weighted"
) -> dict[str, tuple[float, float, float, float]]:
    """The attribution grid: per architecture, Δ of the global- and per-domain-normalized arm against the
    global-normalized shared model, as (mean, sd, mean, sd) over the results' seeds."""
    base = np.array([r.metrics["shared"][metric] for r in results])
    out = {}
    for name, global_arm, domain_arm in GRID:
        cells = []
        for arm in (global_arm, domain_arm):
            delta = np.array([r.metrics[arm][metric] for r in results]) - base
            cells += [float(delta.mean()), float(delta.std(ddof=1)) if delta.size > 1 else 0.0]
        out[name] = (cells[0], cells[1], cells[2], cells[3])
    return out


def fig_grid(results: Sequence[Result], metric: str = "auc_weighted") -> go.Figure:
    """The attribution grid as grouped bars: each architecture with global and with per-domain normalization,
    Δ test AUC against the global-normalized shared model, mean ± sd over seeds."""
    cells = grid_deltas(results, metric)
    names = list(cells)
    fig = plot.figure(
        "What carries STAR's lead: each architecture with global and with per-domain normalization",
        "architecture",
        f"Δ test {'AUC' if metric == 'auc_weighted' else metric} vs shared model with global normalization",
        barmode="group",
    )
    for i, (label, color) in enumerate(
        (("global normalization", plot.BASELINE_COLORS[1]), ("per-domain normalization", plot.METHOD_COLOR))
    ):
        fig.add_trace(
            go.Bar(
                x=names,
                y=[cells[n][2 * i] for n in names],
                error_y=dict(type="data", array=[cells[n][2 * i + 1] for n in names], visible=True),
                name=label,
                marker_color=color,
                hovertemplate="%{x}: Δ %{y:+.4f}<extra>" + label + "</extra>",
            )
        )
    fig.add_hline(y=0.0, line=dict(color="#BBBBBB", dash="dot"))
    return fig


def fig_domain_weights(result: Result, layer: int = 0) -> go.Figure:
    """Heat maps of STAR's learned domain weights W_p of one layer, one panel per domain.

    W_p started at 1 everywhere: what is left of 1 is what domain p changed of the shared layer.
    """
    weights = result.domain_weights
    if not isinstance(layer, int) or not 0 <= layer < len(weights):
        raise ValueError(f"layer must be an int in [0, {len(weights)}), got {layer!r}")
    w = weights[layer]
    m = w.shape[0]
    cols = min(3, m)
    rows = math.ceil(m / cols)
    names = _domain_names(result)
    spread = float(max(np.abs(w - 1.0).max(), 1e-6))
    fig = make_subplots(
        rows=rows, cols=cols, subplot_titles=names, horizontal_spacing=0.06, vertical_spacing=0.22 / max(rows - 1, 1)
    )
    for d in range(m):
        fig.add_trace(
            go.Heatmap(
                z=w[d],
                zmin=1.0 - spread,
                zmax=1.0 + spread,
                colorscale="RdBu_r",
                showscale=d == 0,
                colorbar=dict(title="W_p"),
                hovertemplate="unit %{y}, input %{x}: W_p = %{z:.3f}<extra>" + names[d] + "</extra>",
            ),
            row=d // cols + 1,
            col=d % cols + 1,
        )
    fig.update_layout(
        template="toyscale",
        title=f"Learned domain weights W_p of layer {layer + 1}: every domain reshapes the shared layer its own way",
        height=260 * rows + 120,
    )
    # axis titles on the outer panels only: inside the grid they would sit on the next panel's title
    fig.update_xaxes(showgrid=False)
    fig.update_yaxes(showgrid=False, autorange="reversed")
    for c in range(1, cols + 1):
        fig.update_xaxes(title_text="input unit", row=rows, col=c)
    for r in range(1, rows + 1):
        fig.update_yaxes(title_text="output unit", row=r, col=1)
    return fig


def fig_paths(result: Result) -> go.Figure:
    """Validation score per epoch of every arm at its chosen rate; the marker is the epoch it kept."""
    colors = arm_colors()
    fig = plot.figure(
        "Every arm trains until its own validation score stops improving (marker: the epoch it keeps)",
        "epoch",
        "validation AUC, weighted over domains (separate: the smallest domain's model)",
    )
    for arm, path in result.paths.items():
        if arm not in ARM_LABELS:
            continue
        epochs = list(range(1, len(path) + 1))
        fig.add_trace(go.Scatter(x=epochs, y=path, mode="lines", name=ARM_LABELS[arm], line=dict(color=colors[arm])))
        best = int(np.argmax(path))
        fig.add_trace(
            go.Scatter(
                x=[best + 1],
                y=[path[best]],
                mode="markers",
                marker=dict(color=colors[arm], size=9, symbol="circle-open", line=dict(width=2)),
                showlegend=False,
                hovertemplate=f"{ARM_LABELS[arm]}: kept epoch %{{x}}, %{{y:.4f}}<extra></extra>",
            )
        )
    return fig
