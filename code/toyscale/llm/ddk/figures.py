"""The DDK figures: r over training per domain, the per-domain ratio of every arm, the worst domain's gap."""

from __future__ import annotations

import plotly.graph_objects as go

from toyscale.core import plot

from .experiment import ARMS, DDK_ARMS, Result

ARM_LABELS = {
    "cpt": "CPT (cross-entropy, uniform mix)",
    "kd": "KD (uniform mix)",
    "static": "static first mixture",
    "ddk_no_smoothing": "DDK without smoothing",
    "ddk": "DDK",
}
DOMAIN_COLORS = ["#6A4C93", "#2E5F8A", "#EDAE49", "#66A182", "#8C8C8C"]  # not the method red: lines are domains


def _arm_colors() -> dict[str, str]:
    return plot.colors(list(ARM_LABELS), method=["ddk", "ddk_no_smoothing"])


def fig_mixture(result: Result) -> go.Figure:
    """r over training steps per domain: DDK (solid) and DDK without smoothing (dotted)."""
    n, alpha = len(result.domains), result.config.alpha
    fig = plot.figure(
        "DDK moves the mixture towards the lagging domains; smoothing keeps it steady",
        "distillation step",
        "sampling weight r of the domain",
    )
    K = result.config.update_every
    for i, domain in enumerate(result.domains):
        color = DOMAIN_COLORS[i % len(DOMAIN_COLORS)]
        for arm, dash in (("ddk", "solid"), ("ddk_no_smoothing", "dot")):
            history = result.r_history[arm]
            # each r holds for K steps; the last one until the arm stopped
            steps = [K * t for t in range(len(history) + 1)]
            fig.add_trace(
                go.Scatter(
                    x=steps,
                    y=[row[i] for row in history] + [history[-1][i]],
                    mode="lines",
                    line=dict(color=color, dash=dash, width=3 if arm == "ddk" else 2, shape="hv"),
                    name=f"{domain}, {ARM_LABELS[arm]}",
                    legendgroup=domain,
                    hovertemplate="step %{x}: r = %{y:.3f}<extra>%{fullData.name}</extra>",
                )
            )
    for bound in ((1 - alpha) / n, alpha + (1 - alpha) / n):
        fig.add_hline(y=bound, line=dict(color="#BBBBBB", dash="dash", width=1))
    fig.add_hline(y=1 / n, line=dict(color="#BBBBBB", width=1))
    # ten legend entries: leave them room below the axis title
    fig.update_layout(height=560, legend=dict(y=-0.28))
    top = max(max(max(row) for row in result.r_history[arm]) for arm in DDK_ARMS)
    fig.update_yaxes(range=[0, min(1.0, max(top, alpha + (1 - alpha) / n) + 0.05)])
    return fig


def fig_ratios(result: Result) -> go.Figure:
    """Per-domain test perplexity ratio student/teacher at the end, for every arm (1 = the teacher)."""
    colors = _arm_colors()
    fig = plot.figure(
        "Each arm's test ratio per domain (1 = as good as the teacher)",
        "domain",
        "test perplexity ratio student / teacher",
        barmode="group",
    )
    for arm in ARMS:
        fig.add_trace(
            go.Bar(
                x=result.domains,
                y=[result.metrics[arm][f"ratio_{d}"] for d in result.domains],
                name=ARM_LABELS[arm],
                marker_color=colors[arm],
                hovertemplate="%{x}: %{y:.3f}<extra>%{fullData.name}</extra>",
            )
        )
    fig.add_hline(y=1.0, line=dict(color=plot.ORACLE_COLOR, dash="dash", width=1))
    return fig


def fig_worst_gap(result: Result) -> go.Figure:
    """The largest validation ratio over domains every K steps, for every arm."""
    colors = _arm_colors()
    fig = plot.figure(
        "The worst domain's validation ratio as each arm trains (each stops at its own best mean)",
        "distillation step",
        "worst validation ratio (student / teacher)",
    )
    K = result.config.update_every
    for arm in ARMS:
        history = result.val_ratio_history[arm]
        fig.add_trace(
            go.Scatter(
                x=[K * (t + 1) for t in range(len(history))],
                y=[max(row) for row in history],
                mode="lines+markers",
                name=ARM_LABELS[arm],
                line=dict(color=colors[arm], width=3 if arm == "ddk" else 2),
                hovertemplate="step %{x}: %{y:.3f}<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_layout(height=500, legend=dict(y=-0.25))
    return fig


def fig_gamma(gammas: list[float], sweep: dict, metric: str = "val_mean_ratio") -> go.Figure:
    """KD's and DDK's `metric` (mean ± sd over seeds) at each KL weight γ, with CPT (no teacher) for scale.

    sweep: '<arm>_<metric>' -> (seeds, γ) arrays, as `sweeps.gamma_sweep` returns them.
    """
    if f"kd_{metric}" not in sweep:
        raise ValueError(f"metric must be one the sweep holds, got {metric!r}")
    colors = _arm_colors()
    split = "validation" if metric.startswith("val_") else "test"
    fig = plot.figure(
        f"Every distilled arm at each KL weight γ ({split} mean ratio, mean ± sd over seeds)",
        "KL weight γ",
        f"{split} mean ratio student / teacher",
    )
    for arm in ("cpt", "kd", "ddk"):
        values = sweep[f"{arm}_{metric}"]
        fig.add_trace(
            go.Scatter(
                x=list(gammas),
                y=values.mean(axis=0).tolist(),
                error_y=dict(type="data", array=values.std(axis=0, ddof=1).tolist(), visible=True),
                mode="lines+markers",
                name=ARM_LABELS[arm],
                line=dict(color=colors[arm], dash="dot" if arm == "cpt" else "solid"),
                hovertemplate="γ = %{x}: %{y:.3f}<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_xaxes(type="log")
    return fig
