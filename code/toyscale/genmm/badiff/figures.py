"""The BADiff figures: what the phone receives, quality against rate, compute, and the hinge at a fixed level."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from toyscale.core import plot
from toyscale.genmm import digits

from .codec import _check_images
from .experiment import Result

ARM_LABELS = {
    "badiff": "BADiff (its model and stop policy)",
    "badiff_constant": "BADiff's model, constant stop per target",
    "badiff_full": "BADiff's model, all T steps",
    "conditioned": "conditioned, no hinge, all T steps",
    "cascade": "full sampling + codec (cascade)",
    "naive": "naive early stop (x̂₀)",
    "naive_shuffled": "naive, BADiff's per-image stops shuffled",
    "strided": "shorter sampler (as many DDIM steps, finished)",
    "received": "conditioned on x₀ as received at L(R), stopped early",
    "postprocess": "cascade, pixels below θ zeroed (post-process)",
    "cascade_redraw": "cascade, a second draw of x_T",
    "real": "real training digits + codec",
}


def arm_colors() -> dict[str, str]:
    """One colour per arm: BADiff's in the method's colour family, the baselines in blues and greys."""
    method = ["badiff", "badiff_constant", "badiff_full"]
    arms = [
        *method,
        "cascade",
        "naive",
        "strided",
        "received",
        "postprocess",
        "conditioned",
        "naive_shuffled",
        "cascade_redraw",
    ]
    return plot.colors(arms, method=method) | {"real": plot.ORACLE_COLOR}


def montage(images: np.ndarray, columns: int = 4) -> np.ndarray:
    """Tile images (n, 8, 8) into one array with a one-pixel grey gap, `columns` per row (NaN gaps)."""
    images = _check_images(images)
    rows = math.ceil(images.shape[0] / columns)
    side = digits.SIDE + 1
    canvas = np.full((rows * side - 1, columns * side - 1), np.nan)
    for i, image in enumerate(images):
        r, c = divmod(i, columns)
        canvas[r * side : r * side + digits.SIDE, c * side : c * side + digits.SIDE] = image
    return canvas


def fig_samples(result: Result, arms: Sequence[str] = ("cascade", "naive", "badiff", "real")) -> go.Figure:
    """What the phone receives: eight transmitted images per arm (rows) and target rate (columns)."""
    unknown = [a for a in arms if a not in result.samples]
    if unknown:
        raise ValueError(f"arms {unknown} are not in the result; choose from {sorted(result.samples)}")
    titles = [f"{ARM_LABELS[a]}, R = {r:g} bpp" for a in arms for r in result.targets]
    fig = make_subplots(
        rows=len(arms), cols=len(result.targets), subplot_titles=titles, vertical_spacing=0.06, horizontal_spacing=0.03
    )
    for i, arm in enumerate(arms):
        for j, _ in enumerate(result.targets):
            canvas = montage(result.samples[arm][j])
            fig.add_trace(
                go.Heatmap(
                    z=canvas[::-1],
                    colorscale="Greys",
                    zmin=0,
                    zmax=1,
                    showscale=False,
                    hovertemplate="intensity %{z:.2f}<extra></extra>",
                ),
                row=i + 1,
                col=j + 1,
            )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    for k in range(1, len(arms) * len(result.targets) + 1):
        # square pixels: each panel's y axis keeps the scale of its own x axis
        suffix = "" if k == 1 else str(k)
        fig.layout[f"yaxis{suffix}"].update(scaleanchor=f"x{suffix}", scaleratio=1, constrain="domain")
    fig.update_annotations(font_size=11)
    fig.update_layout(
        template="toyscale",
        title="Received digits: every arm is legible at the higher rates; the lowest rate binarizes them all",
        height=190 * len(arms) + 80,
        margin=dict(l=10, r=10, t=80, b=10),
    )
    return fig


def fig_quality_vs_rate(result: Result) -> go.Figure:
    """Fréchet distance against the achieved rate, one point per target, for every arm."""
    colors = arm_colors()
    fig = plot.figure(
        "Quality against the rate rate control achieved: BADiff's stops cost it more than naive early stopping's",
        "achieved rate (bits per pixel, measured by the codec)",
        "Fréchet distance to test digits (lower is better)",
    )
    for arm in ("cascade", "naive", "badiff_constant", "badiff", "real"):
        values = result.by_target[arm]
        fig.add_trace(
            go.Scatter(
                x=values["bpp"],
                y=values["fd"],
                mode="lines+markers",
                name=ARM_LABELS[arm],
                line=dict(color=colors[arm], dash="dash" if arm == "real" else "solid"),
                customdata=np.stack([result.targets, values["evals"]], axis=1),
                hovertemplate=(
                    "target %{customdata[0]:g} bpp: achieved %{x:.3f} bpp, FD %{y:.1f}, "
                    "%{customdata[1]:.1f} evaluations<extra>%{fullData.name}</extra>"
                ),
            )
        )
    return fig


def fig_evals(result: Result) -> go.Figure:
    """Denoiser evaluations per image at each target rate, per arm (BADiff's spread as error bars)."""
    colors = arm_colors()
    fig = plot.figure(
        "Denoiser evaluations per image: BADiff stops early; the naive arm gets the same budget",
        "target rate (bits per pixel)",
        "denoiser evaluations per image",
        barmode="group",
    )
    labels = [f"{r:g}" for r in result.targets]
    for arm in ("cascade", "naive", "badiff"):
        error = None
        if arm == "badiff":
            error = dict(type="data", array=[float(np.std(s)) for s in result.stop_steps], color="#555555")
        fig.add_trace(
            go.Bar(
                x=labels,
                y=result.by_target[arm]["evals"],
                name=ARM_LABELS[arm],
                marker_color=colors[arm],
                error_y=error,
                hovertemplate="R = %{x} bpp: %{y:.1f} evaluations<extra>%{fullData.name}</extra>",
            )
        )
    return fig


def fig_over_budget(result: Result, arms: Sequence[str] = ("cascade", "conditioned", "badiff_full")) -> go.Figure:
    """Without rate control: the share of finished samples over the target when sent at the design level L(R)."""
    colors = arm_colors()
    fig = plot.figure(
        "Sent at the sender's fixed level, BADiff's own samples overshoot the budget less often",
        "target rate R (bits per pixel), design level L(R)",
        "share of images over the target (no rate control)",
        barmode="group",
    )
    labels = [f"{r:g} (L = {level})" for r, level in zip(result.targets, result.design_levels, strict=True)]
    for arm in arms:
        fig.add_trace(
            go.Bar(
                x=labels,
                y=result.by_target[arm]["over_budget"],
                name=ARM_LABELS[arm],
                marker_color=colors[arm],
                hovertemplate="R = %{x}: %{y:.1%} over the target<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_yaxes(tickformat=".0%")
    return fig
