"""The CombatVLA experiment: the configuration, the run, the claims and the figures."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from toyscale.core import device, mean_std, plot
from toyscale.core.claims import Claim, Verdict, all_of, at_most, paired, per_seed, within
from toyscale.core.seeding import seed_everything

from . import aot, game
from .evaluate import (
    QUESTIONS,
    benchmark,
    decision_time,
    fight,
    multi_call_agent,
    scripted_agent,
    vla_agent,
)
from .model import TinyVLA, decode, parse_action, train_stages

ARMS = ("none", "full", "truncated", "multi_call")  # the model arms; 'expert' and 'random' are references
ARM_LABELS = {
    "none": "no thought",
    "full": "full AoT (explain, then act)",
    "truncated": "truncated AoT (act, <TRUNC>, explain)",
    "multi_call": "multi-call agent (full AoT × calls, vote)",
    "expert": "scripted expert",
    "random": "random keys",
}


@dataclass(frozen=True)
class Config:
    """Toy defaults for the CombatVLA experiment."""

    k: int = 3  # frames the model sees per decision (the latest k, strictly before the key)
    train_games: int = 300  # expert fights recorded through the tracker for training
    test_games: int = 100  # held-out recorded fights for the benchmark (other seeds)
    width: int = 32  # transformer width d
    blocks: int = 2  # causal transformer blocks
    video_steps: int = 50  # stage 1, shared by all arms: video-level AoT (a clip's actions)
    steps: int = 240  # Adam steps per arm after stage 1 (the same for every arm)
    batch_size: int = 128  # key events per step
    lr: float = 6e-3  # Adam learning rate
    action_weight: float = 4.0  # loss weight of key tokens against thought tokens
    # share of the truncated arm's steps spent on frame-level (full) AoT before truncated AoT: the
    # paper's stage 2; 0 skips it (the default: at this budget it costs the truncated arm, see the notebook)
    stage2_share: float = 0.0
    calls: int = 5  # full generations per decision of the multi-call agent
    eval_games: int = 100  # fights per arm and cost, played in parallel
    costs: tuple[float, ...] = (0.0, 0.0625, 0.125, 0.25)  # game ticks per decoded token (0 = paused)
    claim_cost: float = 0.125  # the real-time cost at which the claims compare arms
    timing_windows: int = 10  # decisions timed one at a time per arm (wall clock)

    def __post_init__(self) -> None:
        for name in ("k", "train_games", "test_games", "width", "blocks", "steps", "batch_size", "calls"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        for name in ("video_steps", "eval_games", "timing_windows"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative int, got {value!r}")
        if self.width % 4:
            raise ValueError(f"width must be a multiple of 4 (the heads), got {self.width}")
        if not self.costs or self.costs[0] != 0.0 or list(self.costs) != sorted(set(self.costs)):
            raise ValueError(f"costs must start at 0.0 (paused) and increase, got {self.costs}")
        if self.claim_cost not in self.costs or self.claim_cost == 0.0:
            raise ValueError(f"claim_cost must be one of the non-zero costs {self.costs}, got {self.claim_cost}")
        if not 0.0 <= self.stage2_share < 1.0:
            raise ValueError(f"stage2_share must lie in [0, 1), got {self.stage2_share}")
        if self.eval_games < 1:
            raise ValueError(f"eval_games must be >= 1, got {self.eval_games}")

    @classmethod
    def fast(cls) -> Config:
        """A shorter video stage, two costs and a three-call agent, for tests."""
        return cls(video_steps=40, costs=(0.0, 0.125), calls=3)


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm][metric] for the arms 'none', 'full', 'truncated', 'multi_call', 'expert',
    'random': 'paused' (win rate with the game paused during inference), 'realtime' (win rate
    at claim_cost game ticks per token), 'tokens' (decoded per decision), 'time_ms' (median
    wall time of one decision, batch size 1), 'benchmark' (toy CUBench average; NaN without an
    explanation) and its categories; metrics['tracker']: 'leaks', 'naive_leaks', 'pairs'.
    sweep[arm]: win rate per cost in `costs`; benchmark[arm]: accuracy per question;
    history[arm]: the training losses; story: one paused fight of the truncated model, its
    frames (T, HEIGHT, WIDTH), its AoT text per tick and its keys.
    """

    config: Config
    seed: int
    costs: list[float]
    metrics: dict[str, dict[str, float]]
    sweep: dict[str, list[float]]
    benchmark: dict[str, dict[str, float]]
    history: dict[str, list[float]]
    story: dict[str, list]


def plans(config: Config) -> dict[str, list[tuple[str, int]]]:
    """The training formats per arm after the shared video stage, equal steps for every arm.

    The truncated arm follows the paper's progressive training: frame-level AoT (stage 2) for
    `stage2_share` of its steps, then truncated AoT (stage 3). `run` trains stage 2 once, as the start
    of the full arm, and branches the truncated arm off it.
    """
    half = round(config.steps * config.stage2_share)
    return {
        "none": [("none", config.steps)],
        "full": [("full", config.steps)],
        "truncated": [("full", half), ("truncated", config.steps - half)],
    }


def tell_story(model: TinyVLA, k: int, seed: int) -> dict[str, list]:
    """One paused fight of the truncated model: frames, the decoded AoT per tick, the keys."""
    on = next(model.parameters()).device
    b = game.new_battles(1, seed)
    rng = np.random.default_rng(seed + 1)
    frames = [game.render(b)[0]]
    texts, keys, phases = [], [], []
    while not b.done.all():
        window = np.stack([frames[max(len(frames) - k + i, 0)] for i in range(k)]).reshape(1, k, -1)
        tokens, _ = decode(model, torch.as_tensor(window, dtype=torch.float32, device=on), truncate=False)
        key = parse_action(tokens)
        texts.append(aot.describe(tokens[0, 1:]))
        keys.append(int(key[0]))
        phases.append(int(b.phase[0]))
        b = game.step(b, key, game.draw_attacks(rng, 1))
        frames.append(game.render(b)[0])
    return {"frames": frames[:-1], "text": texts, "keys": keys, "phases": phases, "won": [bool(b.won[0])]}


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """Record expert play, train the three formats at equal steps, and evaluate every arm."""
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a combatvla.Config, got {type(config).__name__}")
    on = device()
    train = aot.record(config.train_games, config.k, seed=1000 * seed)
    test = aot.record(config.test_games, config.k, seed=1000 * seed + 500)
    seed_everything(seed)
    base = TinyVLA(config.k, config.width, config.blocks).to(on)
    common = dict(batch_size=config.batch_size, lr=config.lr, action_weight=config.action_weight)
    history = {"video": train_stages(base, train, [("video", config.video_steps)], seed=seed, **common)}
    half = round(config.steps * config.stage2_share)
    models = {"none": copy.deepcopy(base), "full": copy.deepcopy(base)}
    history["none"] = train_stages(models["none"], train, [("none", config.steps)], seed=seed + 1, **common)
    # stage 2 (frame-level AoT) is the start of the full arm's training: the truncated arm branches off there
    history["full"] = train_stages(models["full"], train, [("full", half)], seed=seed + 2, **common)
    models["truncated"] = copy.deepcopy(models["full"])
    history["truncated"] = history["full"] + train_stages(
        models["truncated"], train, [("truncated", config.steps - half)], seed=seed + 3, **common
    )
    history["full"] += train_stages(models["full"], train, [("full", config.steps - half)], seed=seed + 3, **common)
    agents = {arm: vla_agent(models[arm], arm) for arm in models}
    agents["multi_call"] = multi_call_agent(models["full"], config.calls, seed=seed)
    metrics: dict[str, dict[str, float]] = {}
    scores = {arm: benchmark(models[arm], arm, test) for arm in models}
    scores["multi_call"] = scores["full"]
    sweep: dict[str, list[float]] = {}
    windows = test.frames[test.windows[: config.timing_windows]]
    games_seed = 10_000 + seed
    for arm, agent in agents.items():
        runs = [fight(agent, config.eval_games, games_seed, config.k, c) for c in config.costs]
        sweep[arm] = [r.win_rate for r in runs]
        at = config.costs.index(config.claim_cost)
        metrics[arm] = {
            "paused": runs[0].win_rate,
            "realtime": runs[at].win_rate,
            "tokens": runs[0].tokens_per_decision,
            "time_ms": 1e3 * decision_time(agent, windows) if config.timing_windows else math.nan,
            "action_accuracy": scores[arm]["action"],
            **{q: scores[arm][q] for q in (*QUESTIONS, "average")},
        }
        metrics[arm]["benchmark"] = metrics[arm].pop("average")
    for name in ("expert", "random"):
        result = fight(scripted_agent(name, seed), config.eval_games, games_seed, config.k, 0.0, scripted=True)
        # the scripted players read the state, decode nothing and so feel no latency
        sweep[name] = [result.win_rate] * len(config.costs)
        metrics[name] = {"paused": result.win_rate, "realtime": result.win_rate, "tokens": 0.0}
    metrics["tracker"] = {
        "leaks": float(train.leaks + test.leaks),
        "naive_leaks": float(train.naive_leaks + test.naive_leaks),
        "pairs": float(train.pairs + test.pairs),
    }
    return Result(
        config=config,
        seed=seed,
        costs=list(config.costs),
        metrics=metrics,
        sweep=sweep,
        benchmark=scores,
        history=history,
        story=tell_story(models["truncated"], config.k, seed=20_000 + seed),
    )


# ---------------------------------------------------------------------------------------------
# The claims
# ---------------------------------------------------------------------------------------------

# Margins, set from the seed noise of the paired differences (see the notebook's account).
TOKEN_RATIO = 3.0  # full AoT must decode at least this many times the truncated tokens, every seed
TIME_RATIO = 1.5  # ... and take at least this many times the wall time per decision, every seed
BENCH_MARGIN = 0.06  # truncated may trail full AoT on the benchmark average by at most this, on average
REALTIME_MARGIN = 0.2  # truncated must win this many more fights than full AoT in real time, on average
PAUSED_GAP = 0.05  # |mean paired paused win-rate difference, truncated − full AoT| that counts as close
MULTI_TOKEN_RATIO = 8.0  # the multi-call agent decodes at least this many times the truncated tokens


def _ratio(a: Sequence[float], b: Sequence[float]) -> list[float]:
    return [x / y for x, y in zip(a, b, strict=True)]


def _check_efficiency(results: Sequence[Result]) -> Verdict:
    full_t, trunc_t = per_seed(results, "full", "tokens"), per_seed(results, "truncated", "tokens")
    full_s, trunc_s = per_seed(results, "full", "time_ms"), per_seed(results, "truncated", "time_ms")
    full_b, trunc_b = per_seed(results, "full", "benchmark"), per_seed(results, "truncated", "benchmark")
    return all_of(
        within(_ratio(full_t, trunc_t), TOKEN_RATIO, math.inf, name="tokens full / truncated"),
        within(_ratio(full_s, trunc_s), TIME_RATIO, math.inf, name="wall time full / truncated"),
        at_most([f - t for f, t in zip(full_b, trunc_b, strict=True)], BENCH_MARGIN, name="benchmark full − truncated"),
    )


def _close(deltas: Sequence[float], limit: float, name: str) -> Verdict:
    """'Close': the mean paired difference lies within ±limit (the seeds may go either way)."""
    mean, std = mean_std(deltas)
    wins = sum(d > 0 for d in deltas)
    detail = f"{name} = {mean:+.4f} ± {std:.4f}, positive on {wins}/{len(deltas)} seeds (|mean| limit {limit:g})"
    return Verdict(abs(mean) <= limit, detail)


def _check_realtime(results: Sequence[Result]) -> Verdict:
    return paired(
        per_seed(results, "truncated", "realtime"),
        per_seed(results, "full", "realtime"),
        margin=REALTIME_MARGIN,
        name="Δ real-time win rate (truncated − full)",
    )


def _check_paused(results: Sequence[Result]) -> Verdict:
    trunc, full = per_seed(results, "truncated", "paused"), per_seed(results, "full", "paused")
    return _close([t - f for t, f in zip(trunc, full, strict=True)], PAUSED_GAP, "Δ paused win rate (truncated − full)")


def _check_multi_call(results: Sequence[Result]) -> Verdict:
    multi, trunc = per_seed(results, "multi_call", "tokens"), per_seed(results, "truncated", "tokens")
    return all_of(
        within(_ratio(multi, trunc), MULTI_TOKEN_RATIO, math.inf, name="tokens multi-call / truncated"),
        paired(
            per_seed(results, "truncated", "realtime"),
            per_seed(results, "multi_call", "realtime"),
            margin=REALTIME_MARGIN,
            name="Δ real-time win rate (truncated − multi-call)",
        ),
    )


def _check_tracker(results: Sequence[Result]) -> Verdict:
    leaks = per_seed(results, "tracker", "leaks")
    naive = [r.metrics["tracker"]["naive_leaks"] / r.metrics["tracker"]["pairs"] for r in results]
    return all_of(
        within(leaks, 0.0, 0.0, name="tracker pairs with a frame at/after the key"),
        within(naive, 0.05, 1.0, name="share the nearest-frame pairing leaks"),
    )


CLAIMS = [
    Claim(
        id="truncation_cuts_tokens_and_time",
        kind="mechanism",
        statement=(
            "Truncated AoT decodes far fewer tokens and takes less time per decision than full AoT "
            "(43.1 vs 116.6 tokens, 1.85 vs 3.73 s) without losing combat understanding "
            "(CUBench rises from 57.27 to 63.61 after stage 3)."
        ),
        metric="decoded tokens and median wall ms per decision, and the toy benchmark average, truncated vs full AoT",
        check=_check_efficiency,
    ),
    Claim(
        id="realtime_truncated_wins",
        kind="effect",
        statement=(
            "Deciding fast matters in a live fight: one truncated call per decision is what makes CombatVLA "
            "playable in real time, where slower decoding loses to its own latency."
        ),
        metric="share of fights won when each decoded token costs claim_cost game ticks, truncated vs full AoT",
        check=_check_realtime,
    ),
    Claim(
        id="paused_close",
        kind="effect",
        statement=(
            "Truncation costs no decision quality: with the game paused during inference, truncated AoT plays "
            "as well as full AoT (the paper: stage 3 keeps or raises every score)."
        ),
        metric="share of fights won with the game paused, truncated vs full AoT (mean paired difference)",
        check=_check_paused,
        expected=False,
        reason=(
            "full AoT, which computes the key from its own explanation (a small chain of thought), is the "
            "better paused player on most seeds at this budget (on all five of the tests' seeds), and the "
            "paired difference swings widely from seed to seed, so a mean over three seeds may land "
            "inside the margin by chance; the toy does not establish that truncation is free"
        ),
    ),
    Claim(
        id="one_call_beats_multi_call",
        kind="mechanism",
        statement=(
            "One truncated call per decision instead of an agent framework's 5–10 full calls: 1.85 s vs "
            "61.7 s (Cradle) and 90.2 s (VARP), the '50×'."
        ),
        metric="decoded tokens per decision and real-time win rate, truncated vs the multi-call agent",
        check=_check_multi_call,
    ),
    Claim(
        id="tracker_never_leaks",
        kind="mechanism",
        statement="The action tracker pairs each action with the frames before it.",
        metric="pairs with an input frame stamped at or after the key (recorded play), vs nearest-frame pairing",
        check=_check_tracker,
    ),
]


# ---------------------------------------------------------------------------------------------
# The figures
# ---------------------------------------------------------------------------------------------


SHORT_LABELS = {"truncated": "truncated", "none": "no thought", "full": "full AoT", "multi_call": "multi-call"}


def _colors() -> dict[str, str]:
    arms = ["truncated", "full", "none", "multi_call", "oracle"]
    c = plot.colors(arms, method="truncated")
    return c | {"expert": plot.ORACLE_COLOR, "random": "#B5B5B5"}


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
        "In real time full AoT loses to its own latency; truncated AoT keeps winning longer",
        "game time per decoded token (ticks; 0 = game paused during inference)",
        "fights won (share)",
    )
    for arm in ("truncated", "full", "none", "multi_call", "expert", "random"):
        fig.add_trace(
            go.Scatter(
                x=result.costs,
                y=result.sweep[arm],
                mode="lines+markers",
                name=ARM_LABELS[arm],
                line=dict(color=colors[arm], dash="dash" if arm in ("expert", "random") else "solid"),
                hovertemplate="%{x:g} ticks/token: %{y:.2f} won<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_yaxes(range=[-0.03, 1.03])
    return fig


def fig_cost_per_decision(result: Result) -> go.Figure:
    """Decoded tokens and wall-clock milliseconds per decision, per arm."""
    colors = _colors()
    arms = ("truncated", "none", "full", "multi_call")
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("decoded tokens per decision", "wall time per decision (ms, batch 1)")
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
