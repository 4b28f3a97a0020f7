"""JRC's figures: the validation paths of every arm, reliability, gains by user activity, the weight sweep."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from toyscale.core import plot

from .experiment import Result

ARM_LABELS = {
    "pointwise": "pointwise log loss",
    "combined": "combined (log loss + softmax, one logit)",
    "jrc": "JRC",
    "jrc_other": "JRC, other-label denominator (production)",
    "oracle": "oracle (true p)",
}


def arm_colors() -> dict[str, str]:
    """The book's colors: both JRC variants in the method's shades, the baselines in blues and greys."""
    return plot.colors(list(ARM_LABELS), method=["jrc", "jrc_other"])


def fig_paths(result: Result) -> go.Figure:
    """Each arm's validation GAUC against its validation log loss after every epoch, at its chosen rate.

    Up and to the left is better on both. The ringed point is the arm's ranking checkpoint (best
    validation GAUC), the square its calibration checkpoint (best validation log loss).
    """
    colors = arm_colors()
    fig = plot.figure(
        "Ranking against calibration over training, on validation data (ring: best GAUC; square: best log loss)",
        "validation log loss (lower is better)",
        "validation GAUC (higher is better)",
    )
    for arm, (gaucs, log_losses) in result.paths.items():
        epochs = list(range(1, len(gaucs) + 1))
        fig.add_trace(
            go.Scatter(
                x=log_losses,
                y=gaucs,
                mode="lines+markers",
                name=ARM_LABELS[arm],
                line=dict(color=colors[arm]),
                marker=dict(size=5),
                customdata=epochs,
                hovertemplate="epoch %{customdata}: log loss %{x:.4f}, GAUC %{y:.4f}<extra>%{fullData.name}</extra>",
            )
        )
        best = int(np.argmax(gaucs))
        calibrated = int(np.argmin(log_losses))
        for index, symbol in ((best, "circle-open"), (calibrated, "square-open")):
            fig.add_trace(
                go.Scatter(
                    x=[log_losses[index]],
                    y=[gaucs[index]],
                    mode="markers",
                    marker=dict(symbol=symbol, size=14, color=colors[arm], line=dict(width=2)),
                    showlegend=False,
                    hovertemplate=f"epoch {index + 1}<extra>{ARM_LABELS[arm]}</extra>",
                )
            )
    return fig


def fig_reliability(result: Result) -> go.Figure:
    """Observed click rate against mean predicted p in equal-mass bins, each arm at its calibration checkpoint."""
    colors = arm_colors()
    fig = plot.figure(
        "Reliability of each arm at its best validation log loss (test data)",
        "mean predicted p(click) in the bin",
        "observed click rate in the bin",
    )
    top = max(max(max(p), max(y)) for p, y in result.reliability.values())
    fig.add_trace(
        go.Scatter(
            x=[0, top], y=[0, top], mode="lines", name="perfect calibration", line=dict(color="#CCCCCC", dash="dot")
        )
    )
    for arm, (mean_p, mean_y) in result.reliability.items():
        dash = "dash" if arm == "oracle" else "solid"
        fig.add_trace(
            go.Scatter(
                x=mean_p, y=mean_y, mode="lines+markers", name=ARM_LABELS[arm], line=dict(color=colors[arm], dash=dash)
            )
        )
    return fig


def fig_activity(results: Sequence[Result]) -> go.Figure:
    """GAUC gain over the pointwise model per user-activity bucket (mean ± sd over the results' seeds)."""
    colors = arm_colors()
    first = results[0]
    fig = plot.figure(
        f"GAUC gain over pointwise by user activity, mean ± sd over {len(results)} seeds (ranking checkpoints)",
        "users, by training sessions owned",
        "GAUC − GAUC(pointwise)",
        barmode="group",
    )
    for arm in ("combined", "jrc", "jrc_other"):
        gains = np.array(
            [[v - b for v, b in zip(r.by_activity[arm], r.by_activity["pointwise"], strict=True)] for r in results]
        )
        sd = gains.std(axis=0, ddof=1) if len(results) > 1 else np.zeros(gains.shape[1])
        fig.add_trace(
            go.Bar(
                x=first.activity_names,
                y=gains.mean(axis=0).tolist(),
                error_y=dict(type="data", array=sd.tolist(), visible=True),
                name=ARM_LABELS[arm],
                marker_color=colors[arm],
                hovertemplate="%{x}: %{y:+.4f}<extra>%{fullData.name}</extra>",
            )
        )
    return fig


SWEEP_TITLES = {
    "gauc": ("Test GAUC against the ranking weight (each point tuned and stopped on validation)", "GAUC (test)"),
    "log_loss": ("Test log loss against the ranking weight, at each arm's best validation log loss", "log loss (test)"),
}


def fig_sweep(weights: Sequence[float], sweep: dict[str, np.ndarray], metric: str) -> go.Figure:
    """A test metric against the ranking weight 1 − α for JRC and the combined loss, mean ± sd over seeds.

    sweep[method]: (seeds, weights) values of `metric`, as the committed results hold them.
    """
    if metric not in SWEEP_TITLES:
        raise ValueError(f"metric must be one of {sorted(SWEEP_TITLES)}, got {metric!r}")
    colors = arm_colors()
    title, y_title = SWEEP_TITLES[metric]
    fig = plot.figure(title, "ranking weight 1 − α", y_title)
    for method, values in sweep.items():
        values = np.asarray(values)
        fig.add_trace(
            go.Scatter(
                x=list(weights),
                y=values.mean(axis=0).tolist(),
                error_y=dict(type="data", array=values.std(axis=0, ddof=1).tolist(), visible=True),
                mode="lines+markers",
                name=f"{ARM_LABELS[method]}, mean ± sd over {values.shape[0]} seeds",
                line=dict(color=colors[method]),
            )
        )
    return fig
