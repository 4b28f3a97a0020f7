"""The CombatVLA figures: a fight as the model sees it, wins against the cost per token, cost per decision,
and where the real-time effect lives (the latency boundary)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from toyscale.core import plot
from toyscale.core.boundary import Boundary, fig_boundary

from . import game
from .experiment import ARM_LABELS, Result

SHORT_LABELS = {
    "truncated": "truncated",
    "none": "no thought",
    "full": "full AoT",
    "ahead": "latency-aware",
    "multi_call": "multi-call",
}
#: The alternatives the latency boundary takes the best of, at each cost.
ENVELOPE = ("full", "ahead", "none")
#: The arms the win-rate figure draws.
PLAYED = ("truncated", "full", "ahead", "none", "multi_call", "expert", "random")


def _colors() -> dict[str, str]:
    arms = ["truncated", "full", "none", "multi_call", "ahead", "oracle"]
    c = plot.colors(arms, method="truncated")
    return c | {
        "expert": plot.ORACLE_COLOR,
        "random": "#B5B5B5",
    }


def fig_story(result: Result, count: int = 4) -> go.Figure:
    """`count` consecutive frames of the truncated model's fight, ending at its first avoided strike."""
    story = result.story
    ticks = len(story["frames"])
    avoid = {game.A, game.D, game.SPACE, game.SHIFT}
    hits = [t for t in range(ticks) if story["keys"][t] in avoid] or [min(count, ticks) - 1]
    end = max(hits[0] + 1, min(count, ticks))
    picked = list(range(max(end - count, 0), end))
    fig = make_subplots(rows=1, cols=len(picked), subplot_titles=[f"tick {t}" for t in picked])
    for i, t in enumerate(picked):
        fig.add_trace(
            go.Heatmap(
                z=story["frames"][t][::-1],  # row 0 (the HP bar) on top
                colorscale=[[0.0, "#DDDDDD"], [1.0, "#000000"]],  # unlit pixels light grey, lit ones dark
                zmin=0,
                zmax=1,
                showscale=False,
                hovertemplate="pixel %{z:.2f}<extra></extra>",
            ),
            row=1,
            col=i + 1,
        )
        text = "<br>".join(story["text"][t].split())  # one decoded token per line
        fig.add_annotation(
            text=text,
            xref=f"x{i + 1 if i else ''} domain",
            yref="paper",
            x=0.5,
            y=-0.08,
            showarrow=False,
            yanchor="top",
            font=dict(size=10),
        )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    for j in range(1, len(picked) + 1):
        suffix = "" if j == 1 else str(j)
        fig.layout[f"yaxis{suffix}"].update(scaleanchor=f"x{suffix}", scaleratio=1, constrain="domain")
    fig.update_layout(
        template="toyscale",
        title="The truncated model acts first, explains after: the key comes before <TRUNC>",
        height=470,
        margin=dict(l=10, r=10, t=80, b=190),
    )
    return fig


def fig_success_vs_cost(result: Result) -> go.Figure:
    """Win rate against the game time each decoded token costs, per arm (0 = paused)."""
    colors = _colors()
    fig = plot.figure(
        "Fights won against the game time each decoded token costs (seed 0)",
        "game time per decoded token (ticks; 0 = game paused during inference)",
        "fights won (share)",
    )
    for arm in PLAYED:
        if arm not in result.sweep:
            continue
        dash = "dash" if arm in ("expert", "random") else "solid"
        fig.add_trace(
            go.Scatter(
                x=result.costs,
                y=result.sweep[arm],
                mode="lines+markers",
                name=ARM_LABELS[arm],
                line=dict(color=colors[arm], dash=dash),
                hovertemplate="%{x:g} ticks/token: %{y:.2f} won<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_yaxes(range=[-0.03, 1.03])
    return fig


def fig_cost_per_decision(result: Result) -> go.Figure:
    """Decoded tokens and wall-clock milliseconds per decision, per arm (the milliseconds are this machine's)."""
    colors = _colors()
    arms = ("truncated", "none", "full", "multi_call")
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("decoded tokens per decision", "wall time per decision (ms, batch 1, this machine)"),
    )
    for col, metric in enumerate(("tokens", "time_ms"), start=1):
        fig.add_trace(
            go.Bar(
                x=[SHORT_LABELS[a] for a in arms],
                y=[result.metrics[a][metric] for a in arms],
                marker_color=[colors[a] for a in arms],
                showlegend=False,
                hovertemplate="%{x}: %{y:.2f}<extra></extra>",
            ),
            row=1,
            col=col,
        )
    fig.update_xaxes(tickangle=0)
    fig.update_yaxes(title_text="tokens", row=1, col=1)
    fig.update_yaxes(title_text="milliseconds", row=1, col=2)
    fig.update_layout(
        template="toyscale",
        title="Truncation decodes a quarter of full AoT's tokens; the multi-call agent multiplies them",
        height=420,
    )
    return fig


def latency_boundary(results: Sequence[Result]) -> Boundary:
    """Where the real-time effect lives (CLAIMS.md §7): Δ win rate across the cost per decoded token.

    Δ at cost c is the truncated model's win rate minus the best of its alternatives *at that cost*:
    full AoT, latency-aware full AoT trained for that cost's lead, and both no-thought recipes (an
    envelope of test win rates, which favours the baseline), per seed. Paused, latency costs nothing,
    and what remains is what thought adds over no thought.
    """
    costs = results[0].costs
    if any(r.costs != costs for r in results):
        raise ValueError("the results must share their costs")
    deltas = np.array(
        [
            [r.sweep["truncated"][i] - max(r.sweep[arm][i] for arm in ENVELOPE if arm in r.sweep) for r in results]
            for i in range(len(costs))
        ]
    )
    return Boundary(
        "game ticks per decoded token",
        tuple(costs),
        tuple(r.seed for r in results),
        deltas,
        "Δ win rate (truncated − the best alternative at that cost)",
    )


def break_even_table(
    results: Sequence[Result],
    arms: Sequence[str] = ("truncated", "none", "full", "ahead", "multi_call"),
):
    """Per arm, the cost per token at which its win rate falls to half its paused value: mean ± sd over seeds."""
    from toyscale.core import Table, mean_std

    rows = []
    for arm in arms:
        values = [r.metrics[arm]["break_even"] for r in results if arm in r.metrics]
        found = [v for v in values if np.isfinite(v)]
        mean, sd = mean_std(found) if found else (float("nan"), float("nan"))
        rows.append([ARM_LABELS[arm], mean, sd, f"{len(found)}/{len(values)}"])
    return Table(
        ["arm", "break-even cost (ticks / token)", "sd", "seeds within the sweep"], rows, "Break-even cost per arm"
    )


def fig_latency_boundary(results: Sequence[Result], margin: float) -> go.Figure:
    """The latency boundary, with the claim's margin and each arm's break-even cost (mean over seeds) marked."""
    boundary = latency_boundary(results)
    fig = fig_boundary(
        boundary,
        "Truncation's real-time gain over the best alternative, across the cost per decoded token",
        margin=margin,
    )
    colors = _colors()
    for arm in ("truncated", "full", "ahead", "none"):
        values = [r.metrics[arm]["break_even"] for r in results]
        found = [v for v in values if np.isfinite(v)]
        if not found:
            continue
        x = float(np.mean(found))
        fig.add_trace(
            go.Scatter(
                x=[x, x],
                y=[float(boundary.mean.min()) - 0.05, float(boundary.mean.max()) + 0.05],
                mode="lines",
                name=f"break-even, {SHORT_LABELS[arm]}",
                line=dict(color=colors[arm], dash="dot", width=1),
                hovertemplate=f"{SHORT_LABELS[arm]}: half its paused wins at %{{x:.3f}} ticks/token<extra></extra>",
            )
        )
    return fig
