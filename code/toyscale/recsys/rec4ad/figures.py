"""Rec4Ad's figures and tables: where each policy exposes, the online test, tuning on validation, attribution."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from toyscale.core import Table, mean_std, plot

from .experiment import ARM_SPECS, ATTRIBUTION_ARMS, Result, grid_of

ARM_LABELS = {
    "ads_only": "ads only",
    "naive_mix": "naive mix (ads + recs)",
    "mix_domain": "mix + domain information",
    "naive_mix_recal": "naive mix, recalibrated on validation",
    "ads_only_recal": "ads only, recalibrated on validation",
    "rec4ad": "Rec4Ad (mix + domain + modules)",
    "ips": "IPS (true propensities)",
    "ips_mix": "IPS + recs + domain",
    "private": "mix + domain + private encoders",
    "alignment": "… + alignment",
    "decorrelation": "… + decorrelation",
    "legacy": "legacy ranker",
    "oracle": "oracle (true p)",
}


def arm_colors() -> dict[str, str]:
    """The book's colors: the reproduced core idea (mix + domain) and Rec4Ad in the method's shades."""
    return plot.colors(list(ARM_LABELS), method=["mix_domain", "rec4ad"])


def fig_exposure(result: Result, feature: str = "affinity") -> go.Figure:
    """Where each policy exposes items: the distribution of a feature over its impressions."""
    titles = {
        "affinity": (
            "The legacy ranker shows ads from a narrow slice; recommendations cover other ground",
            "true click score f(x) of the impression (no ad penalty)",
        ),
        "bid_feature": (
            "The legacy ranker favours items whose feature drives the bid",
            "item feature b_i[0] (log bids follow it)",
        ),
    }
    if feature not in titles:
        raise ValueError(f"feature must be one of {sorted(titles)}, got {feature!r}")
    title, x_title = titles[feature]
    fig = plot.figure(title, x_title, "share of impressions (%)", barmode="overlay")
    palette = [plot.ORACLE_COLOR, plot.BASELINE_COLORS[0], plot.BASELINE_COLORS[2]]
    for (name, values), color in zip(result.exposure.items(), palette, strict=True):
        fig.add_trace(
            go.Histogram(
                x=values[feature],
                name=name,
                histnorm="percent",
                opacity=0.55,
                marker_color=color,
                xbins=dict(size=0.25),
            )
        )
    return fig


def fig_online(results: Sequence[Result], arms: Sequence[str] | None = None) -> go.Figure:
    """Simulated online CTR and RPM of each model (at its calibration checkpoint) as a fraction of the oracle's:
    mean ± sd over the results."""
    colors = arm_colors()
    arms = list(arms or ("legacy", *results[0].config.arms))
    fig = plot.figure(
        "Simulated online test: share of the oracle's CTR and RPM each model reaches",
        "metric",
        "fraction of the oracle (1 = ranks like the true p × bid)",
        barmode="group",
    )
    low = 1.0
    for arm in arms:
        stats = [mean_std([r.calibrated[arm][m] for r in results]) for m in ("ctr", "rpm")]
        low = min(low, *(mean - sd for mean, sd in stats))
        fig.add_trace(
            go.Bar(
                x=["CTR", "RPM"],
                y=[mean for mean, _ in stats],
                error_y=dict(type="data", array=[sd for _, sd in stats], visible=len(results) > 1),
                name=ARM_LABELS[arm],
                marker_color=colors[arm],
            )
        )
    fig.update_yaxes(range=[max(0.0, low - 0.05), 1.02])
    return fig


KNOB_NAMES = {"lr": "learning rate", "clip": "IPS clip", "both": "λ_a = λ_d", "align": "λ_a", "decorrelation": "λ_d"}


def fig_grid(result: Result, metric: str = "auc") -> go.Figure:
    """Tuning on validation: each arm's best validation AUC (or log loss) at each of the settings of its grid."""
    if metric not in ("auc", "log_loss"):
        raise ValueError(f"metric must be 'auc' or 'log_loss', got {metric!r}")
    colors = arm_colors()
    better = "higher" if metric == "auc" else "lower"
    fig = plot.figure(
        "Every arm tries the same number of settings of its knob and keeps the best on validation",
        "setting of the arm's grid (its values in the legend; ∞ = no clip)",
        f"best validation {metric.replace('_', ' ').replace('auc', 'AUC')} ({better} is better)",
    )
    for arm, scores in result.grid.items():
        spec = ARM_SPECS.get(arm)
        if spec is None or spec.recalibrated:  # a regime's rerun, or a base arm's fit again
            continue
        values = grid_of(spec, result.config)
        labels = ", ".join("∞" if math.isinf(v) else f"{v:g}" for v in values)
        fig.add_trace(
            go.Scatter(
                x=list(range(1, len(values) + 1)),
                y=scores[metric],
                mode="lines+markers",
                name=f"{ARM_LABELS[arm]} ({KNOB_NAMES[spec.knob]} {labels})",
                line=dict(color=colors[arm]),
            )
        )
    return fig


def attribution_table(results: Sequence[Result], arms: Sequence[str] = ATTRIBUTION_ARMS) -> Table:
    """Rec4Ad's ideas one at a time: test AUC and its paired Δ against mix + domain (ranking checkpoints),
    |PCOC − 1| and online CTR (calibration checkpoints)."""
    base = np.array([r.metrics["mix_domain"]["auc"] for r in results])
    rows = []
    for arm in arms:
        auc = np.array([r.metrics[arm]["auc"] for r in results])
        delta, sd = mean_std((auc - base).tolist())
        wins = int(np.sum(auc - base > 0))
        knobs = [r.metrics[arm]["knob"] for r in results]
        chosen = "—" if all(math.isnan(k) for k in knobs) else ", ".join(f"{k:g}" for k in knobs)
        rows.append(
            [
                ARM_LABELS[arm],
                float(auc.mean()),
                "—" if arm == "mix_domain" else f"{delta:+.4f} ± {sd:.4f} ({wins}/{len(results)})",
                float(np.mean([abs(r.calibrated[arm]["pcoc"] - 1) for r in results])),
                float(np.mean([r.calibrated[arm]["ctr"] for r in results])),
                chosen,
            ]
        )
    seeds = [r.seed for r in results]
    return Table(
        ["arm", "test AUC", "Δ AUC vs mix + domain (seeds won)", "|PCOC − 1|", "online CTR / oracle", "knob chosen"],
        rows,
        f"Attribution: Rec4Ad's ideas added one at a time to mix + domain, means over seeds {seeds}",
    )
