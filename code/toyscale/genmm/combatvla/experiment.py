"""The CombatVLA experiment: whole-fight splits, every arm early-stopped on validation inside its budget.

The protocol (the book's CLAIMS.md, §2–3). The recorded expert fights are split by whole fights into
train, validation and test (`core.split_units`). After a shared video-level stage every arm gets the
same number of Adam steps and ends at its own best validation point within them (key accuracy on the
validation fights' recorded windows, checked every `eval_every` steps; the steps used are reported
against the budget in `Result.budgets`):

- `none`: no thought, the key alone;
- `full`: full AoT, the paper's frame-level stage for all its steps (explain, then act);
- `ahead`: latency-aware full AoT: after the frame-level stage (branched off the `full` arm) the same
  format trained on the key the expert would press `lead` ticks later had nothing been pressed
  meanwhile, where `lead` is full AoT's delay at the cost it plays at: a full-AoT model told about its
  latency, trained once per lead the played costs need (`Config.leads`);
- `truncated`: the method, truncated AoT trained by the paper's curriculum: frame-level AoT for
  `stage2_share` of the steps (branched off the `full` arm), then truncated AoT (act, `<TRUNC>`, explain);
- `multi_call`: the full-AoT model sampled `calls` times per decision, with a vote.

Each model arm is one configuration (no arm is tuned over more than the method is). Validation fights
(their own game seeds) score every arm paused and at the claim cost: the claims pick the strongest
alternative per seed by that validation win rate, and the difficulty rule (`SATURATION_CEILING`) reads the
paused one. The test split and the test fights are read once per arm at the end. Trained weights are
memoised per training settings, arm and seed, so a falsifier that changes only how the method decodes,
or which model plays under its name, reruns the evaluation on the same weights.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from toyscale.core import device, split_units
from toyscale.core.seeding import seed_everything

from . import aot, game
from .evaluate import (
    QUESTIONS,
    benchmark,
    break_even,
    decision_times,
    fight,
    multi_call_agent,
    scripted_agent,
    vla_agent,
)
from .model import Stopping, TinyVLA, decode, parse_action, train_stages

ARMS = ("none", "full", "ahead", "truncated", "multi_call")  # the arms a run plays
#: The alternatives to the method in real time, each one configuration (as the method is).
ALTERNATIVES = ("full", "ahead", "none")
#: The duel's difficulty rule, written before the game was changed to meet it: neither no thought nor full AoT
#: may win more than this share of the validation fights paused (mean over seeds), so at least one fight in ten
#: is left where understanding the fight can show (CLAIMS.md §7: a saturated game hides what thought adds).
SATURATION_CEILING = 0.9
#: What the method's arm (`truncated`) is in a run; every value but the first is a falsifier's change:
#: 'decode_all' decodes its explanation before acting, 'no_explanation' trains its truncated stage on the key
#: alone, and 'full', 'ahead', 'none' put that alternative's model under the method's name.
METHODS = ("truncated", "decode_all", "no_explanation", "full", "ahead", "none")
FULL_TOKENS = len(aot.SLOTS) + 2  # what full AoT decodes per decision: six slots, the key, <eos>
ARM_LABELS = {
    "none": "no thought",
    "full": "full AoT (explain, then act)",
    "ahead": "latency-aware full AoT (acts for t + lead, trained per lead)",
    "truncated": "truncated AoT (the paper's curriculum: frame-level, then truncated)",
    "multi_call": "multi-call agent (full AoT × calls, vote)",
    "expert": "scripted expert",
    "random": "random keys",
}


def lead_at(cost: float) -> int:
    """Ticks full AoT's decision takes at `cost` ticks per token (at least one): the latency-aware arm's lead."""
    return max(1, round(FULL_TOKENS * cost))


@dataclass(frozen=True)
class Config:
    """Toy defaults for the CombatVLA experiment."""

    k: int = 3  # frames the model sees per decision (the latest k, strictly before the key)
    train_games: int = 100  # recorded expert fights to train on
    validation_games: int = 60  # recorded fights for early stopping (whole fights, apart from training)
    test_games: int = 100  # recorded fights for the benchmark, read once per arm
    width: int = 32  # transformer width d
    blocks: int = 1  # causal transformer blocks (one: the budget must reach every arm's best point on a CPU)
    video_steps: int = 50  # stage 1, shared by all arms: video-level AoT (a clip's actions)
    # every arm's budget of Adam steps after stage 1; each stops at its best validation point, which must lie
    # inside the budget (not in its last tenth: CLAIMS.md §3, v2)
    steps: int = 2000
    batch_size: int = 64  # key events per step
    lr: float = 6e-3  # Adam learning rate
    action_weight: float = 4.0  # loss weight of key tokens against thought tokens
    stage2_share: float = 1 / 3  # the curriculum's share of its steps on frame-level AoT (the paper's stage 2)
    eval_every: int = 100  # steps between validation checks of an arm (and after its last step)
    calls: int = 5  # full generations per decision of the multi-call agent
    eval_games: int = 80  # test fights per arm and cost, played in parallel
    validation_fights: int = 80  # validation fights (own game seeds) that pick the strongest alternative
    # game ticks per decoded token at which every arm plays (0 = paused); the committed results sweep more
    costs: tuple[float, ...] = (0.0, 0.125)
    claim_cost: float = 0.125  # the real-time cost at which the claims compare arms (full AoT: one tick a decision)
    timing_windows: int = 10  # decisions timed one at a time per arm (wall clock; machine-dependent)
    arms: tuple[str, ...] = ARMS  # the arms to train and play (a falsifier plays only those its claims read)
    method: str = "truncated"  # what the method's arms are (see METHODS; the falsifiers change it)

    def __post_init__(self) -> None:
        for name in ("k", "train_games", "validation_games", "test_games", "width", "blocks", "steps"):
            self._positive(name)
        for name in ("batch_size", "calls", "eval_games", "validation_fights", "eval_every"):
            self._positive(name)
        for name in ("video_steps", "timing_windows"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative int, got {value!r}")
        if self.width % 4:
            raise ValueError(f"width must be a multiple of 4 (the heads), got {self.width}")
        if not self.costs or self.costs[0] != 0.0 or list(self.costs) != sorted(set(self.costs)):
            raise ValueError(f"costs must start at 0.0 (paused) and increase, got {self.costs}")
        if self.claim_cost not in self.costs or self.claim_cost == 0.0:
            raise ValueError(f"claim_cost must be one of the non-zero costs {self.costs}, got {self.claim_cost}")
        if not 0.0 < self.stage2_share < 1.0:
            raise ValueError(
                f"stage2_share must lie in (0, 1) (the curriculum has both stages), got {self.stage2_share}"
            )
        if not 1 <= max(self.leads) <= aot.MAX_LEAD:
            raise ValueError(f"costs {self.costs} need leads {self.leads} ticks; allowed 1..{aot.MAX_LEAD}")
        unknown = [arm for arm in self.arms if arm not in ARMS]
        if unknown or not self.arms:
            raise ValueError(f"arms must be a non-empty subset of {ARMS}, got {self.arms}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")

    def _positive(self, name: str) -> None:
        value = getattr(self, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")

    @property
    def lead(self) -> int:
        """Ticks full AoT's decision takes at the claim cost: how far ahead the latency-aware arm acts."""
        return lead_at(self.claim_cost)

    @property
    def leads(self) -> tuple[int, ...]:
        """The leads the latency-aware arm is trained for: one per played cost (paused plays the claim cost's)."""
        return tuple(sorted({self.lead} | {lead_at(c) for c in self.costs if c > 0}))

    @property
    def stage2_steps(self) -> int:
        """The curriculum's frame-level steps (where it branches off the full arm)."""
        return round(self.steps * self.stage2_share)

    @classmethod
    def fast(cls) -> Config:
        """Less training, fewer fights and a three-call agent, for tests."""
        return cls(
            train_games=100,
            video_steps=30,
            steps=500,
            eval_every=50,
            eval_games=60,
            validation_fights=60,
            calls=3,
            timing_windows=3,
        )


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm][metric] for the model arms (ARMS), 'expert' and 'random': 'paused' (win rate with the
    game paused during inference), 'realtime' (win rate at claim_cost game ticks per token), 'tokens'
    (decoded per decision), 'time_ms' (best-of-repeats median wall time of one decision at batch size 1:
    machine-dependent), 'benchmark' (toy CUBench average; NaN without an explanation) and its categories,
    'action_accuracy', 'steps' (Adam steps after the video stage behind the weights kept), 'validation'
    (their validation key accuracy), 'validation_realtime' and 'validation_paused' (win rates on the
    validation fights at the claim cost and paused), 'break_even' (cost per token at which the win rate
    falls to half its paused value); metrics['truncated']['stage2_benchmark'] is the benchmark of its
    frame-level checkpoint; metrics['tracker']: 'leaks', 'naive_leaks', 'pairs'. sweep[arm]: win rate per
    cost in `costs` (NaN where the arm was not played; the latency-aware arm plays each cost with the
    model trained for its lead); benchmark[arm]: accuracy per question; history[arm]: training losses;
    validation[arm]: (step, validation key accuracy) per check; story: one paused fight of the truncated
    model, its frames (T, HEIGHT, WIDTH), its AoT text per tick and its keys; budgets[arm]: (steps behind
    the weights kept, the budget `steps`) for every trained arm (CLAIMS.md §3, v2).
    """

    config: Config
    seed: int
    costs: list[float]
    metrics: dict[str, dict[str, float]]
    sweep: dict[str, list[float]]
    benchmark: dict[str, dict[str, float]]
    history: dict[str, list[float]]
    validation: dict[str, list[tuple[int, float]]]
    story: dict[str, list]
    budgets: dict[str, tuple[int, int]] = field(default_factory=dict)


@dataclass
class Splits:
    """The recorded fights of one seed, split by whole fights, and the whole recording (for the tracker)."""

    train: aot.Recording
    validation: aot.Recording
    test: aot.Recording
    whole: aot.Recording


def make_splits(config: Config, seed: int) -> Splits:
    """Record every fight of a seed at once and split the key events by fight (CLAIMS.md §3)."""
    total = config.train_games + config.validation_games + config.test_games
    whole = aot.record(total, config.k, seed=1000 * seed)
    split = split_units(
        whole.fight, validation=config.validation_games / total, test=config.test_games / total, seed=seed
    )
    return Splits(whole.take(split.train), whole.take(split.validation), whole.take(split.test), whole)


def key_accuracy(model: TinyVLA, fmt: str, data: aot.Recording, lead: int = 0) -> float:
    """Share of recorded events whose decoded key is the expert's (at t + lead for the latency-aware arm)."""
    target = data.actions if lead == 0 else data.ahead[:, lead - 1]
    rows = np.flatnonzero(target >= 0)
    on = next(model.parameters()).device
    x = torch.as_tensor(data.frames[data.windows[rows]], device=on)
    tokens, _ = decode(model, x, truncate=fmt == "truncated")
    return float((parse_action(tokens) == target[rows]).mean())


# ---------------------------------------------------------------------------------------------
# Training, memoised: the same settings, arm and seed give the same weights
# ---------------------------------------------------------------------------------------------

_TRAINED: OrderedDict[tuple, tuple[dict[str, torch.Tensor], dict]] = OrderedDict()
_MEMO_SIZE = 160
_TRAINING_FIELDS = (
    "k",
    "train_games",
    "validation_games",
    "test_games",
    "width",
    "blocks",
    "video_steps",
    "steps",
    "batch_size",
    "lr",
    "action_weight",
    "stage2_share",
    "eval_every",
)


def clear_trained() -> None:
    """Forget every memoised model (the next run trains from scratch)."""
    _TRAINED.clear()


def _memo(key: tuple, train: Callable[[], tuple[dict[str, torch.Tensor], dict]]) -> tuple[dict, dict]:
    if key in _TRAINED:
        _TRAINED.move_to_end(key)
    else:
        _TRAINED[key] = train()
        while len(_TRAINED) > _MEMO_SIZE:
            _TRAINED.popitem(last=False)
    return _TRAINED[key]


def _state(model: TinyVLA) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def train_arms(config: Config, splits: Splits, seed: int, needed: set[str]) -> tuple[dict[str, TinyVLA], dict]:
    """Train the video stage and every needed arm at equal steps; each keeps its best validation weights.

    Returns the models (plus 'stage2', the truncated arm's frame-level checkpoint, when it is needed, and
    'ahead@L' for every lead L of `config.leads`; 'ahead' is the claim cost's) and per arm its training
    losses, its validation checks and the steps behind its weights.
    """
    on = device()
    settings = (*tuple(getattr(config, name) for name in _TRAINING_FIELDS), str(on), seed)
    common = dict(batch_size=config.batch_size, lr=config.lr, action_weight=config.action_weight)
    explain = 0.0 if config.method == "no_explanation" else 1.0  # thought weight of the truncated stage
    train, validation, steps = splits.train, splits.validation, config.steps

    def fresh(state: dict[str, torch.Tensor]) -> TinyVLA:
        model = TinyVLA(config.k, config.width, config.blocks).to(on)
        model.load_state_dict(state)
        return model

    def video() -> tuple[dict, dict]:
        seed_everything(seed)
        model = TinyVLA(config.k, config.width, config.blocks).to(on)
        losses = train_stages(model, train, [("video", config.video_steps)], seed=seed, **common)
        return _state(model), {"losses": losses}

    base, _ = _memo((*settings, "video"), video)

    def arm(fmt: str, rng_seed: int, *, lead: int = 0, start: tuple[dict, int] | None = None, weight: float = 1.0):
        def make() -> tuple[dict, dict]:
            state, step0 = start if start is not None else (base, 0)
            model = fresh(state)
            score_fmt = "full" if fmt == "ahead" else fmt
            stopping = Stopping(lambda m: key_accuracy(m, score_fmt, validation, lead), every=config.eval_every)
            keep = {config.stage2_steps: {}} if fmt == "full" else None
            losses = train_stages(
                model,
                train,
                [(fmt, steps - step0)],
                seed=rng_seed,
                lead=max(lead, 1),
                thought_weight=weight,
                stopping=stopping,
                step0=step0,
                snapshots=keep,
                **common,
            )
            stopping.restore(model)
            info = {"losses": losses, "validation": stopping.scores, "steps": stopping.best_step}
            if keep is not None:
                info["stage2"] = keep[config.stage2_steps]
            return _state(model), info

        return make

    def stage2() -> tuple[dict, int]:
        """The full arm's weights after the frame-level stage: where the curriculum and the latency-aware arm branch."""
        _, full_info = _memo((*settings, "full"), arm("full", seed + 2))
        return full_info["stage2"], config.stage2_steps

    def ahead(lead: int) -> Callable[[], Callable[[], tuple[dict, dict]]]:
        return lambda: arm("ahead", seed + 5 + 10 * (lead - 1), lead=lead, start=stage2())

    plans = {
        "none": (("none",), lambda: arm("none", seed + 1)),
        "full": (("full",), lambda: arm("full", seed + 2)),
        "truncated": (("curriculum", explain), lambda: arm("truncated", seed + 3, start=stage2(), weight=explain)),
        "ahead": (("ahead", config.lead), ahead(config.lead)),
    }
    if "ahead" in needed:
        for lead in config.leads:
            if lead != config.lead:
                plans[f"ahead@{lead}"] = (("ahead", lead), ahead(lead))
                needed = needed | {f"ahead@{lead}"}
    models: dict[str, TinyVLA] = {}
    info: dict[str, dict] = {}
    for name, (tag, make) in plans.items():
        if name in needed:
            state, info[name] = _memo((*settings, *tag), make())
            models[name] = fresh(state).eval()
    if "ahead" in models:
        models[f"ahead@{config.lead}"] = models["ahead"]
    if "truncated" in needed:
        models["stage2"] = fresh(stage2()[0]).eval()
    return models, info


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Player:
    """An arm at play: its model, the format it decodes, whether it stops at <TRUNC>, its benchmark format."""

    model: TinyVLA
    fmt: str
    truncate: bool
    bench_fmt: str


def players(config: Config, models: dict[str, TinyVLA]) -> dict[str, Player]:
    """Each trained arm as it plays; the method's arm follows `config.method` (a falsifier's change).

    'decode_all': the truncated model decodes its explanation before acting; 'full', 'ahead', 'none':
    the method's name holds that alternative's model, played in its own format (no thought's benchmarked
    in the truncated format, which it cannot write).
    """
    out = {}
    for name in ("none", "full", "ahead"):
        if name in models:
            fmt = "full" if name == "ahead" else name
            out[name] = Player(models[name], fmt, False, fmt)
    if "truncated" in config.arms:
        if config.method in ALTERNATIVES:
            fmt = "none" if config.method == "none" else "full"
            out["truncated"] = Player(models[config.method], fmt, False, "truncated" if fmt == "none" else "full")
        else:
            out["truncated"] = Player(models["truncated"], "truncated", config.method != "decode_all", "truncated")
    return out


def _needed(config: Config) -> set[str]:
    """The arms to train: those played, and the one a falsifier puts under the method's name."""
    needed = {arm for arm in config.arms if arm != "multi_call"} | ({"full"} if "multi_call" in config.arms else set())
    if config.method in ALTERNATIVES:
        needed = (needed - {"truncated"}) | {config.method}
    return needed


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
    """Record and split expert play, train every arm at equal steps, score them on validation, and test once."""
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a combatvla.Config, got {type(config).__name__}")
    splits = make_splits(config, seed)
    models, info = train_arms(config, splits, seed, _needed(config))
    at = config.costs.index(config.claim_cost)
    play = players(config, models)
    agents = {name: vla_agent(p.model, p.fmt, p.truncate) for name, p in play.items()}
    # every model arm on the validation fights (their own game seeds), paused and at the claim cost
    validation_seed = 30_000 + seed
    validation = {
        name: [
            fight(agent, config.validation_fights, validation_seed, config.k, c).win_rate
            for c in (0.0, config.claim_cost)
        ]
        for name, agent in agents.items()
    }
    # the test split and the test fights, once per arm
    if "multi_call" in config.arms:
        agents["multi_call"] = multi_call_agent(models["full"], config.calls, seed=seed)
    scores = {name: benchmark(p.model, p.bench_fmt, splits.test) for name, p in play.items()}
    if "multi_call" in agents:
        scores["multi_call"] = scores["full"]
    games_seed = 10_000 + seed
    # one call per decision, timed; a multi-call framework's calls run one after another, so its time
    # is about `calls` times full AoT's (its tokens are counted in the fights)
    timed = {name: agents[name] for name in agents if name != "multi_call"}
    windows = splits.test.frames[splits.test.windows[: config.timing_windows]]
    times = decision_times(timed, windows) if config.timing_windows else {}
    # the model that plays each arm at a cost: the latency-aware arm the one trained for that cost's lead
    source_of = {"multi_call": "full", "truncated": config.method if config.method in ALTERNATIVES else "truncated"}
    metrics: dict[str, dict[str, float]] = {}
    sweep: dict[str, list[float]] = {}
    for name, agent in agents.items():
        # the multi-call agent loses every fight once latency counts: it is played up to the claim cost only
        played = config.costs[: at + 1] if name == "multi_call" else config.costs
        runs = []
        for c in played:
            if name == "multi_call":  # it samples: a fresh sampler per cost, so no cost's fights depend on the sweep
                agent = multi_call_agent(models["full"], config.calls, seed=seed)
            elif source_of.get(name, name) == "ahead" and c > 0:
                agent = vla_agent(models[_ahead(c)], "full")
            runs.append(fight(agent, config.eval_games, games_seed, config.k, c))
        sweep[name] = [r.win_rate for r in runs] + [math.nan] * (len(config.costs) - len(played))
        source = source_of.get(name, name)
        metrics[name] = {
            "paused": runs[0].win_rate,
            "realtime": runs[at].win_rate,
            "tokens": runs[0].tokens_per_decision,
            "time_ms": 1e3 * times[name] if name in times else math.nan,
            "action_accuracy": scores[name]["action"],
            **{q: scores[name][q] for q in (*QUESTIONS, "average")},
            "steps": float(info[source]["steps"]) if source in info else math.nan,
            "validation": dict(info[source]["validation"])[info[source]["steps"]] if source in info else math.nan,
            "break_even": break_even(played, [r.win_rate for r in runs]),
        }
        metrics[name]["benchmark"] = metrics[name].pop("average")
        if name in validation:
            metrics[name]["validation_paused"], metrics[name]["validation_realtime"] = validation[name]
    if "truncated" in metrics and "stage2" in models:
        metrics["truncated"]["stage2_benchmark"] = benchmark(models["stage2"], "full", splits.test)["average"]
    for name in ("expert", "random"):
        result = fight(scripted_agent(name, seed), config.eval_games, games_seed, config.k, 0.0, scripted=True)
        # the scripted players read the state, decode nothing and so feel no latency
        sweep[name] = [result.win_rate] * len(config.costs)
        metrics[name] = {"paused": result.win_rate, "realtime": result.win_rate, "tokens": 0.0}
    whole = splits.whole
    metrics["tracker"] = {
        "leaks": float(whole.leaks),
        "naive_leaks": float(whole.naive_leaks),
        "pairs": float(whole.pairs),
    }
    story_model = play["truncated"].model if "truncated" in play else next(iter(models.values()))
    return Result(
        config=config,
        seed=seed,
        costs=list(config.costs),
        metrics=metrics,
        sweep=sweep,
        benchmark=scores,
        history={name: value["losses"] for name, value in info.items()},
        validation={name: value["validation"] for name, value in info.items()},
        story=tell_story(story_model, config.k, seed=20_000 + seed),
        budgets=budgets_of_metrics(metrics, config.steps),
    )


def _ahead(cost: float) -> str:
    """The latency-aware model trained for `cost`'s lead."""
    return f"ahead@{lead_at(cost)}"


def budgets_of_metrics(metrics: dict[str, dict[str, float]], limit: int) -> dict[str, tuple[int, int]]:
    """(steps behind the weights kept, the budget) of every arm whose metrics report its steps."""
    return {
        name: (int(row["steps"]), limit)
        for name, row in metrics.items()
        if "steps" in row and math.isfinite(row["steps"])
    }


def with_method(config: Config, method: str, arms: tuple[str, ...]) -> Config:
    """`config` with the method's arm changed and only `arms` played, at paused and the claim cost (untimed)."""
    return replace(config, method=method, arms=arms, costs=(0.0, config.claim_cost), timing_windows=0)


__all__ = [
    "ALTERNATIVES",
    "ARMS",
    "ARM_LABELS",
    "FULL_TOKENS",
    "METHODS",
    "SATURATION_CEILING",
    "Config",
    "Player",
    "Result",
    "Splits",
    "budgets_of_metrics",
    "clear_trained",
    "key_accuracy",
    "lead_at",
    "make_splits",
    "players",
    "run",
    "tell_story",
    "train_arms",
    "with_method",
]
