"""Agents, the execution loop (paused or real time), the combat-understanding benchmark, and timing."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from . import aot, game
from .model import TinyVLA, decode, parse_action, parse_thoughts

# An agent maps k-frame windows (n, k, HEIGHT·WIDTH) to (keys (n,), decoded tokens (n,)).
Agent = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def vla_agent(model: TinyVLA, fmt: str, truncate: bool | None = None) -> Agent:
    """One call per decision: decode in the model's format and execute its key.

    'truncated' stops at <TRUNC> (the action is out before the explanation); 'full' and 'none'
    decode to <eos>. `truncate=False` makes a truncated model decode its explanation too before
    the call returns (the key is the same, the latency is full AoT's).
    """
    if fmt not in ("none", "full", "truncated"):
        raise ValueError(f"fmt must be 'none', 'full' or 'truncated', got {fmt!r}")
    stop = fmt == "truncated" if truncate is None else bool(truncate)
    on = next(model.parameters()).device

    def act(frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        tokens, count = decode(model, torch.as_tensor(frames, device=on), truncate=stop)
        return parse_action(tokens), count

    return act


def multi_call_agent(
    model: TinyVLA, calls: int, seed: int, temperature: float = 1.0, sequential: bool = False
) -> Agent:
    """Several full generations per decision, then a majority vote over their keys.

    The shape of agent frameworks that call a model once per module (perception, reflection,
    planning ...): every call decodes a full explanation, so the tokens per decision add up.
    The calls are independent samples; the fights run them as one batch to save simulation
    time, and `sequential=True` runs them one after another, as a framework does, for timing.
    """
    if calls < 1:
        raise ValueError(f"calls must be >= 1, got {calls}")
    on = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)

    def generate(x: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        if not sequential:
            return decode(model, x, truncate=False, temperature=temperature, generator=generator)
        parts = [
            decode(model, part, truncate=False, temperature=temperature, generator=generator) for part in x.chunk(calls)
        ]
        return np.concatenate([t for t, _ in parts]), np.concatenate([c for _, c in parts])

    def act(frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = len(frames)
        # call c of row i at c·n + i
        x = torch.as_tensor(frames, device=on).repeat(calls, 1, 1)
        tokens, count = generate(x)
        keys = parse_action(tokens).reshape(calls, n)
        votes = np.zeros((n, len(game.KEYS)), dtype=np.int64)
        for c in range(calls):
            ok = keys[c] >= 0
            votes[np.flatnonzero(ok), keys[c, ok]] += 1
        keys = np.where(votes.sum(axis=1) > 0, votes.argmax(axis=1), game.IDLE)
        # latency: the calls run one after another, so their tokens add up
        return keys, count.reshape(calls, n).sum(axis=0)

    return act


def scripted_agent(policy: str, seed: int) -> Callable[[game.Battle], np.ndarray]:
    """The expert or the random player, reading the game state directly (no model, no latency)."""
    rng = np.random.default_rng(seed)
    if policy == "expert":
        return game.expert_keys
    if policy == "random":
        return lambda b: game.random_keys(rng, b.n)
    raise ValueError(f"policy must be 'expert' or 'random', got {policy!r}")


@dataclass
class Fights:
    """Outcome of a batch of fights: wins, mean decoded tokens and game ticks of delay per decision."""

    win_rate: float
    tokens_per_decision: float
    delay_per_decision: float
    decisions: int
    mean_ticks: float


def fight(
    agent: Agent | Callable[[game.Battle], np.ndarray],
    n_games: int,
    seed: int,
    k: int,
    cost: float = 0.0,
    scripted: bool = False,
) -> Fights:
    """The execution loop over `n_games` fights at once.

    Each fight whose agent is free grabs its latest k frames and calls the agent; the decoded
    tokens cost `cost` game ticks each, and the game does not wait: the fight runs on with no
    key pressed for ⌊tokens · cost⌋ ticks (fractions carry over to the next decision), then the
    key takes effect. cost = 0 is the paused mode (the game waits for the model every tick).
    """
    if cost < 0:
        raise ValueError(f"cost must be >= 0 game ticks per token, got {cost}")
    b = game.new_battles(n_games, seed)
    rng = np.random.default_rng(seed + 1)
    frames = np.repeat(game.render(b).reshape(n_games, 1, -1), k, axis=1).astype(np.float32)
    pending = np.full(n_games, game.IDLE)
    wait = np.zeros(n_games, dtype=np.int64)
    carry = np.zeros(n_games)
    busy = np.zeros(n_games, dtype=bool)
    tokens = delay = decisions = 0.0
    while not b.done.all():
        need = ~busy & ~b.done
        if need.any():
            if scripted:
                keys, count = agent(b)[need], np.zeros(int(need.sum()))
            else:
                keys, count = agent(frames[need])
            # delay = tokens decoded · game ticks per token, whole ticks now, the rest carried
            late = carry[need] + count * cost
            pending[need], wait[need], carry[need] = keys, np.floor(late), late - np.floor(late)
            busy |= need
            tokens, delay, decisions = tokens + count.sum(), delay + (count * cost).sum(), decisions + len(keys)
        fire = busy & (wait == 0)
        b = game.step(b, np.where(fire, pending, game.IDLE), game.draw_attacks(rng, n_games))
        busy &= ~fire
        wait = np.where(busy, wait - 1, wait)
        frames = np.concatenate([frames[:, 1:], game.render(b).reshape(n_games, 1, -1).astype(np.float32)], axis=1)
    return Fights(
        win_rate=float(b.won.mean()),
        tokens_per_decision=float(tokens / max(decisions, 1)),
        delay_per_decision=float(delay / max(decisions, 1)),
        decisions=int(decisions),
        mean_ticks=float(b.tick.mean()),
    )


# --- the combat-understanding benchmark ---------------------------------------------------------

# Questions from the simulator's ground truth, grouped as in CUBench.
QUESTIONS = {
    "gathering": ("phase", "hp", "potions"),  # what is on screen
    "comprehension": ("strike", "distance", "ready"),  # what it means for the fight
    "reasoning": ("threat", "action"),  # does the coming strike hit if I do nothing; what to press
}


def threat(values: np.ndarray) -> np.ndarray:
    """Answer 'will a strike hit this tick if I do nothing?' from slot values (phase, strike, distance)."""
    phase, strike, distance = values[:, 0], values[:, 1], values[:, 2] + 1
    reach = np.where(phase == game.WINDUP_SWEEP, game.REACH[game.WINDUP_SWEEP], game.REACH[game.WINDUP_THRUST])
    return ((strike == 1) & (distance <= reach)).astype(np.int64)


def benchmark(model: TinyVLA, fmt: str, data: aot.Recording) -> dict[str, float]:
    """Accuracy per question and category on held-out recorded frames.

    The model decodes its whole sequence (the truncated format past <TRUNC>); slot answers are
    read from its explanation, the threat question is derived from its phase, strike and
    distance slots, and the action question is its key against the expert's. A format without
    an explanation ('none') answers only the action.
    """
    on = next(model.parameters()).device
    x = torch.as_tensor(data.frames[data.windows], device=on)
    tokens, _ = decode(model, x, truncate=False)
    keys = parse_action(tokens)
    scores = {"action": float((keys == data.actions).mean())}
    if fmt != "none":
        said = parse_thoughts(tokens)
        for j, name in enumerate(aot.SLOT_NAMES):
            scores[name] = float((said[:, j] == data.thoughts[:, j]).mean())
        scores["threat"] = float((threat(said) == threat(data.thoughts)).mean())
    for group, names in QUESTIONS.items():
        values = [scores[q] for q in names if q in scores]
        scores[group] = float(np.mean(values)) if len(values) == len(names) else float("nan")
    scores["average"] = float(np.mean([scores[g] for g in QUESTIONS]))
    return scores


def decision_time(agent: Agent, windows: np.ndarray, repeats: int = 3) -> float:
    """Median wall-clock seconds of one decision at batch size 1 (the latency a single game feels)."""
    return decision_times({"agent": agent}, windows, repeats)["agent"]


def decision_times(agents: dict[str, Agent], windows: np.ndarray, repeats: int = 3) -> dict[str, float]:
    """Wall-clock seconds of one decision at batch size 1 per agent, measured side by side.

    Every window is decided by every agent in turn, `repeats` times (so a burst of load hits them
    alike); an agent's time is the median over windows of its fastest repeat. Machine-dependent:
    only ratios measured in one run mean anything (CLAIMS.md §9).
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    fastest = {name: np.full(len(windows), math.inf) for name in agents}
    for _ in range(repeats):
        for i, w in enumerate(windows):
            for name, agent in agents.items():
                start = time.perf_counter()
                agent(w[None])
                fastest[name][i] = min(fastest[name][i], time.perf_counter() - start)
    return {name: float(np.median(times)) for name, times in fastest.items()}


def break_even(costs: Sequence[float], wins: Sequence[float]) -> float:
    """The cost per token at which the win rate first falls to half its paused value (linear between points).

    costs: increasing, starting at 0 (paused); wins: the win rate at each. NaN when the arm never
    falls that far within the sweep (or never wins paused).
    """
    costs, wins = np.asarray(costs, dtype=float), np.asarray(wins, dtype=float)
    if costs.shape != wins.shape or costs[0] != 0.0:
        raise ValueError(f"need one win rate per cost and costs starting at 0, got {costs} and {wins}")
    half = wins[0] / 2
    if half <= 0:
        return math.nan
    for i in range(1, len(costs)):
        if wins[i] <= half:
            return float(costs[i - 1] + (costs[i] - costs[i - 1]) * (wins[i - 1] - half) / (wins[i - 1] - wins[i]))
    return math.nan
