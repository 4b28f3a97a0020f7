"""The arms (one architecture, different losses), their compute per step, the momentum encoder with its
queues, and the training loop: equal compute, each arm's learning rate chosen on validation, and two
checkpoints per arm chosen on validation (its best group-6, its best retrieval)."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from toyscale.core import device
from toyscale.core.seeding import seed_everything
from toyscale.genmm import digits

from .data import (
    N_FRAMES,
    SEGMENTS,
    Group6,
    Pool,
    VideoBatch,
    candidate_orders,
    caption_tokens,
    group6_accuracy,
    layout,
    make_videos,
    random_events,
    reorder,
    scramble_captions,
)
from .losses import (
    MemoryQueue,
    alignment_loss,
    frame_order_loss,
    mask_caption,
    masked_frame_loss,
    masked_language_modeling,
    momentum_update,
    order_loss,
    queue_alignment_loss,
)
from .model import (
    Victor,
)

ARMS = (
    "cooccur",
    "cooccur_steps",
    "sentence_order",
    "frame_order",
    "masked_frame",
    "order_tasks",
    "victor",
    "shuffled",
)
TASKS = {
    "cooccur": ("mlm", "align"),
    "cooccur_steps": ("mlm", "align"),
    "sentence_order": ("mlm", "align", "sentence_order"),
    "frame_order": ("mlm", "align", "frame_order"),
    "masked_frame": ("mlm", "align", "masked_frame"),
    "order_tasks": ("mlm", "align", "sentence_order", "frame_order", "masked_frame"),
    "victor": ("mlm", "align", "sentence_order", "frame_order", "masked_frame", "queue"),
    "shuffled": ("mlm", "align", "frame_order"),
}
EQUAL_STEPS = ("cooccur_steps",)  # arms given the Victor arm's steps instead of its compute
SCRAMBLED = ("shuffled",)  # arms trained on captions that name their digits in a random order (the control)
METHOD_ARMS = ("frame_order", "victor")  # the arms the claims credit: what a falsifier's stand-in replaces
LEARNING_RATE_GRID = (3e-3, 1e-2, 3e-2)  # AdamW rates every arm is tuned over, on validation
CHECKPOINTS = ("order", "retrieval")  # an arm's two checkpoints: best validation group-6, best validation R@1
RATE_RECORDS = {"default": "learning_rates.json", "fast": "learning_rates_fast.json"}  # beside this package


def load_tuning(rates: str = "default") -> dict:
    """A committed tuning record (`tuning`): every arm's validation scores at every rate, and the rates chosen.

    rates: 'default' (the default config's, calibration/learning_rates.json) or 'fast' (Config.fast()'s,
    learning_rates_fast.json), each written by `python -m toyscale.genmm.victor.tuning [--fast]`.
    """
    if rates not in RATE_RECORDS:
        raise ValueError(f"rates must be one of {sorted(RATE_RECORDS)}, got {rates!r}")
    return json.loads((Path(__file__).parent / "calibration" / RATE_RECORDS[rates]).read_text())


@functools.cache
def tuned_rates(rates: str = "default") -> dict[str, tuple[float, float]]:
    """Each arm's (order, retrieval) rate from a tuning record: the best mean validation group-6 and the
    best mean validation R@1 over LEARNING_RATE_GRID on tuning seeds 1100–1101 (never a test score)."""
    return {arm: (row["order_lr"], row["retrieval_lr"]) for arm, row in load_tuning(rates)["arms"].items()}


#: The default config's rates per arm, (order, retrieval), as the default tuning record chose them.
LEARNING_RATES = tuned_rates("default")


def pass_cost(task: str, segments: int = SEGMENTS) -> int:
    """Encoder tokens a task pushes through a layer per sample; a pass with gradients counts 3
    (forward + backward), a momentum pass without gradients 1. A step costs the sum over its tasks."""
    grid = layout(segments)
    text, video = grid.caption_length, N_FRAMES
    costs = {
        "mlm": 3 * (text + (text + video)),  # the masked caption, then the cross encoder over caption and video
        "align": 3 * (text + video),  # the caption and the video
        "sentence_order": 3 * (text + (text + video)),  # a shuffled caption, then a cross pass with the video
        "frame_order": 3 * grid.group_size * video,  # the video in its candidate segment orders
        "masked_frame": 3 * video,  # the video with one frame masked
        "queue": 1 * (text + video),  # the momentum encoder's keys
    }
    if task not in costs:
        raise ValueError(f"task must be one of {sorted(costs)}, got {task!r}")
    return costs[task]


def step_cost(arm: str, segments: int = SEGMENTS) -> int:
    """Token-layer passes per sample of one training step of `arm` (gradient passes count 3)."""
    if arm not in TASKS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    return sum(pass_cost(task, segments) for task in TASKS[arm])


def arm_steps(arm: str, budget_steps: int, segments: int = SEGMENTS) -> int:
    """Steps that give `arm` the compute of `budget_steps` steps of the full Victor arm.

    The arms in EQUAL_STEPS get the Victor arm's steps instead (less compute): the comparison that
    tells fewer alignment steps from interference between the tasks.
    """
    if arm in EQUAL_STEPS:
        return budget_steps
    return max(1, round(budget_steps * step_cost("victor", segments) / step_cost(arm, segments)))


@dataclass(frozen=True)
class Config:
    """Toy defaults for the Victor experiment."""

    feature_dim: int = 16  # frozen PCA features per frame (fitted on training digits only)
    width: int = 32  # transformer width of every encoder
    layers: int = 1  # layers of the text and video encoders (the cross encoder has one)
    heads: int = 2  # attention heads
    out: int = 32  # pooled feature size used for alignment and retrieval
    segments: int = SEGMENTS  # digits (segments) per video: how much order there is to learn
    budget_steps: int = 200  # steps of the full Victor arm; the other arms get the same compute
    batch_size: int = 32  # videos per step
    lr: float | None = None  # AdamW rate (warm-up, cosine decay to 0) for every arm; None: each arm's tuned rates
    rates: str = "default"  # whose tuned rates (None lr): 'default' or 'fast', each tuned at its own budget
    temperature: float = 0.1  # τ of every InfoNCE loss
    mlm_rate: float = 0.15  # share of caption characters masked for MLM
    queue_size: int = 1024  # memory queue entries (video and text keys)
    momentum: float = 0.98  # m of the momentum (key) encoder
    eval_every: int = 25  # compute-equivalent steps between validation measurements (checkpoint choices)
    validation_groups: int = 100  # group-6 sets of validation videos, for the order checkpoint
    validation_gallery: int = 100  # validation videos (distinct captions), for the retrieval checkpoint
    test_groups: int = 300  # group-6 sets of test videos: the final group-6 accuracy
    gallery: int = 200  # test videos (distinct captions) in the retrieval gallery (at most one per caption)
    twin_families: int = 40  # digit sets in the twin gallery, each in its candidate orders (at most all sets)
    arms: tuple[str, ...] = ARMS  # the arms to train (a falsifier trains only those its claims read)
    proxy_weight: float = 1.0  # weight of the proxy tasks beyond MLM and alignment in every arm (0: switched off)
    stand_in: str = ""  # an arm whose recipe every arm of METHOD_ARMS trains instead (a falsifier's change)

    def __post_init__(self) -> None:
        for name in (
            "feature_dim",
            "width",
            "layers",
            "heads",
            "out",
            "segments",
            "budget_steps",
            "batch_size",
            "queue_size",
            "eval_every",
            "validation_groups",
            "validation_gallery",
            "test_groups",
            "gallery",
            "twin_families",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.width % self.heads:
            raise ValueError(f"heads must divide width, got heads={self.heads} and width={self.width}")
        if self.feature_dim > digits.SIDE**2:
            raise ValueError(f"feature_dim must be at most 64, got {self.feature_dim}")
        if self.segments > N_FRAMES:
            raise ValueError(f"segments must be at most {N_FRAMES} (one frame each), got {self.segments}")
        if not 0 < self.mlm_rate < 1:
            raise ValueError(f"mlm_rate must lie in (0, 1), got {self.mlm_rate}")
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum must lie in [0, 1), got {self.momentum}")
        if (self.lr is not None and not self.lr > 0) or not self.temperature > 0:
            raise ValueError(f"lr (or None) and temperature must be > 0, got {self.lr} and {self.temperature}")
        if not self.proxy_weight >= 0:
            raise ValueError(f"proxy_weight must be >= 0, got {self.proxy_weight}")
        unknown = [a for a in self.arms if a not in ARMS]
        if unknown or not self.arms or len(set(self.arms)) != len(self.arms):
            raise ValueError(f"arms must be a non-empty subset of {ARMS} without repeats, got {self.arms}")
        if self.rates not in RATE_RECORDS:
            raise ValueError(f"rates must be one of {sorted(RATE_RECORDS)}, got {self.rates!r}")
        if self.stand_in and self.stand_in not in ARMS:
            raise ValueError(f"stand_in must be '' or one of {ARMS}, got {self.stand_in!r}")

    @classmethod
    def fast(cls) -> Config:
        """For tests: half the budget and smaller evaluation sets. Every arm, each at the rates tuned for this
        budget on validation (calibration/learning_rates_fast.json), so every claim can be checked; a test
        trains only the arms its claims read (an arm's numbers do not depend on which others train)."""
        return cls(
            budget_steps=100,
            validation_groups=60,
            validation_gallery=60,
            test_groups=150,
            gallery=120,
            twin_families=25,
            rates="fast",
        )


def recipe(arm: str, config: Config) -> str:
    """The arm whose losses, data and steps `arm` trains: its own, or the falsifier's stand-in for a method arm."""
    return config.stand_in if config.stand_in and arm in METHOD_ARMS else arm


def learning_rate(arm: str, config: Config, checkpoint: str) -> float:
    """The rate behind `arm`'s order or retrieval checkpoint: config.lr when set, else the rate tuned (in the
    config's tuning record) for that checkpoint of the recipe the arm trains."""
    if checkpoint not in CHECKPOINTS:
        raise ValueError(f"checkpoint must be one of {CHECKPOINTS}, got {checkpoint!r}")
    if config.lr is not None:
        return config.lr
    return tuned_rates(config.rates)[recipe(arm, config)][CHECKPOINTS.index(checkpoint)]


PROXY_TASKS = ("sentence_order", "frame_order", "masked_frame")  # Victor's tasks beyond MLM and alignment


def weights(tasks: Sequence[str], config: Config) -> dict[str, float]:
    """Each task's loss weight. Alignment weighs 1 in every arm: with queues it is split between the
    in-batch and the queue term (½ each), so no arm gets more alignment than another. The proxy
    tasks weigh `config.proxy_weight` (1; a falsifier sets 0)."""
    w = {task: config.proxy_weight if task in PROXY_TASKS else 1.0 for task in tasks}
    if "queue" in w:
        w["align"] = w["queue"] = 0.5
    return w


@dataclass
class Checkpoint:
    """An arm's weights at its best validation score: where (step), and the score that chose it."""

    step: int
    score: float
    state: dict[str, Tensor]


@dataclass
class TrainedArm:
    """One trained arm: its two checkpoints, steps taken, and its validation scores during training.

    order: the best validation group-6 accuracy; retrieval: the best validation R@1.
    """

    model: Victor
    steps: int
    order: Checkpoint
    retrieval: Checkpoint
    curve_steps: list[int]  # the arm's steps at each validation measurement
    curve_compute: list[int]  # compute-equivalent steps (of the Victor arm) at each measurement
    curve_group6: list[float]  # validation group-6 accuracy
    curve_r1: list[float]  # validation R@1


def new_model(config: Config, positional: bool = True) -> Victor:
    """The architecture every arm shares, for videos with `config.segments` segments."""
    grid = layout(config.segments)
    return Victor(
        config.feature_dim,
        config.width,
        config.layers,
        config.heads,
        config.out,
        positional,
        grid.caption_length,
        len(grid.orders),
    )


@torch.no_grad()
def pooled_features(model: Victor, frames: np.ndarray | None = None, tokens: np.ndarray | None = None) -> Tensor:
    """Unimodal pooled features (normalised): the video encoder's for frames, the text encoder's for tokens."""
    on = next(model.parameters()).device
    if frames is not None:
        return F.normalize(model.video(torch.as_tensor(frames, device=on))[1], dim=-1)
    return F.normalize(model.text(torch.as_tensor(tokens, device=on))[1], dim=-1)


@torch.no_grad()
def group6_scores(model: Victor, group: Group6) -> np.ndarray:
    """Cosine similarity between each caption and its candidates, from pooled features."""
    groups, candidates = group.frames.shape[:2]
    video = pooled_features(model, frames=group.frames.reshape(groups * candidates, N_FRAMES, -1))
    text = pooled_features(model, tokens=group.tokens)
    return (video.reshape(groups, candidates, -1) * text[:, None]).sum(-1).cpu().numpy()


def retrieval_ranks(text: Tensor, video: Tensor) -> np.ndarray:
    """Rank (1 = best) of each caption's own video among the gallery, by cosine similarity.

    text and video are (n, d) normalised features, row i of each from the same video.
    """
    scores = (text @ video.T).cpu().numpy()
    own = scores[np.arange(len(scores)), np.arange(len(scores))]
    return 1 + (scores > own[:, None]).sum(axis=1)


def gallery_ranks(model: Victor, gallery: VideoBatch) -> np.ndarray:
    """Text→video ranks of every caption of the gallery among its videos."""
    return retrieval_ranks(pooled_features(model, tokens=gallery.tokens), pooled_features(model, frames=gallery.frames))


def _streams(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """Two generators: the training videos (the same for every arm) and the tasks' own draws."""
    return np.random.default_rng([seed, 0]), np.random.default_rng([seed, 1])


def training_losses(
    model: Victor,
    key_model: Victor | None,
    queue: MemoryQueue | None,
    batch: VideoBatch,
    generator: np.random.Generator,
    torch_generator: torch.Generator,
    tasks: dict[str, float],
    config: Config,
) -> tuple[dict[str, Tensor], tuple[Tensor, Tensor] | None]:
    """Every proxy-task loss of one step (the tasks with a non-zero weight), and the momentum keys (or None).

    The inputs of all tasks go through each encoder as one stacked batch (the caption, its
    masked copy and its shuffled copy through the text encoder; the video, its candidate segment
    orders and its copy with a masked frame through the video encoder), so a step costs a few
    large passes. Permutations and masks are drawn per sample.
    """
    on = next(model.parameters()).device
    n = len(batch.caption_id)
    grid = layout(batch.events.shape[1])
    active = {task for task, w in tasks.items() if w > 0}
    frames = torch.as_tensor(batch.frames, device=on)
    tokens = torch.as_tensor(batch.tokens, device=on)
    caption_id = torch.as_tensor(batch.caption_id, device=on)
    masked_tokens, masked = mask_caption(tokens, config.mlm_rate, torch_generator)
    text_in, video_in, frame_mask = [tokens, masked_tokens], [frames], [torch.zeros(n, N_FRAMES, dtype=torch.bool)]
    if "sentence_order" in active:
        # the caption's segments in order π: the caption of the digits events[π], one π per sample
        sentence_perm = generator.integers(0, len(grid.orders), n)
        said = np.take_along_axis(batch.events, np.array(grid.orders)[sentence_perm], axis=1)
        text_in.append(torch.as_tensor(caption_tokens(said, grid.segments), device=on))
    if "frame_order" in active:
        # the candidate orders (the true one in column 0), then shuffled per sample so the label varies
        orders = candidate_orders(n, grid.segments, generator)
        placement = np.argsort(generator.random(orders.shape), axis=1)
        orders = np.take_along_axis(orders, placement, axis=1)
        frame_label = torch.as_tensor(np.argmin(placement, axis=1), device=on)
        candidates = reorder(batch, orders)[0]
        video_in.append(torch.as_tensor(candidates.reshape(-1, N_FRAMES, candidates.shape[-1]), device=on))
        frame_mask.append(torch.zeros(candidates.shape[0] * candidates.shape[1], N_FRAMES, dtype=torch.bool))
    if "masked_frame" in active:
        masked_at = torch.as_tensor(generator.integers(0, N_FRAMES, n), device=on)
        video_in.append(frames)
        frame_mask.append(F.one_hot(masked_at, N_FRAMES).bool().cpu())
    text_states, text_pooled = model.text(torch.cat(text_in))
    video_states, video_pooled = model.video(torch.cat(video_in), torch.cat(frame_mask).to(on))
    terms = {
        "mlm": masked_language_modeling(
            model.mlm_head(model.cross(text_states[n : 2 * n], video_states[:n])[:, : grid.caption_length]),
            tokens,
            masked,
        ),
        "align": alignment_loss(text_pooled[:n], video_pooled[:n], caption_id, config.temperature),
    }
    if "sentence_order" in active:
        # MSOM in the cross encoder: the shuffled caption with the video, read at the caption's [CLS]
        cls = model.cross(text_states[2 * n :], video_states[:n])[:, 0]
        terms["sentence_order"] = order_loss(model.sentence_order_head(cls), torch.as_tensor(sentence_perm, device=on))
    if "frame_order" in active:
        m = grid.group_size
        pooled = video_pooled[n : n + m * n].reshape(n, m, -1)
        terms["frame_order"] = frame_order_loss(text_pooled[:n], pooled, frame_label, config.temperature)
    if "masked_frame" in active:
        states = video_states[-n:][torch.arange(n, device=on), masked_at]
        terms["masked_frame"] = masked_frame_loss(model.frame_head(states), frames, masked_at, config.temperature)
    keys = None
    if "queue" in active and key_model is not None and queue is not None:
        with torch.no_grad():
            text_keys, video_keys = key_model.text(tokens)[1], key_model.video(frames)[1]
        terms["queue"] = queue_alignment_loss(
            text_pooled[:n], video_pooled[:n], text_keys, video_keys, caption_id, queue, config.temperature
        )
        keys = (video_keys, text_keys)
    return {task: tasks[task] * value for task, value in terms.items()}, keys


def train_arm(
    arm: str,
    train_pool: Pool,
    validation: tuple[Group6, VideoBatch],
    config: Config,
    seed: int,
    lr: float,
) -> TrainedArm:
    """Train one arm at rate `lr` for the compute of `config.budget_steps` Victor steps on training videos.

    Every arm starts from the same initial weights (same seed) and sees the same stream of
    training videos; only the losses (and hence the steps) differ. At every `eval_every`
    compute-equivalent steps it is scored on the validation group-6 sets and gallery, and the
    weights with the best score of each are kept: the order and the retrieval checkpoint.
    """
    if arm not in TASKS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    trains = recipe(arm, config)
    tasks = weights(TASKS[trains], config)
    grid = layout(config.segments)
    on = device()
    torch_generator = seed_everything(seed)
    model = new_model(config).to(on)
    key_model, queue = None, None
    if "queue" in tasks:
        key_model = new_model(config).to(on)
        key_model.load_state_dict(model.state_dict())
        key_model.requires_grad_(False)
        queue = MemoryQueue(config.queue_size, config.out, on)
    steps = arm_steps(trains, config.budget_steps, config.segments)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, foreach=True)
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)),
    )
    videos, draws = _streams(seed)
    compute_per_step = step_cost(trains, config.segments) / step_cost("victor", config.segments)
    # a validation measurement every `eval_every` compute-equivalent steps, and one at the end
    points = range(0, config.budget_steps + 1, config.eval_every)
    eval_steps = sorted({*(min(steps, round(c / compute_per_step)) for c in points), steps})
    group, gallery = validation
    curve_compute, curve_group6, curve_r1 = [], [], []
    best: dict[str, Checkpoint] = {}
    for step in range(steps + 1):
        if step in eval_steps:
            model.eval()
            scores = {
                "order": group6_accuracy(group6_scores(model, group), group.answer),
                "retrieval": float(np.mean(gallery_ranks(model, gallery) <= 1)),
            }
            curve_compute.append(round(step * compute_per_step))
            curve_group6.append(scores["order"])
            curve_r1.append(scores["retrieval"])
            for name, score in scores.items():
                if name not in best or score > best[name].score:
                    best[name] = Checkpoint(step, score, {k: v.detach().clone() for k, v in model.state_dict().items()})
            model.train()
        if step == steps:
            break
        events = random_events(config.batch_size, grid.segments, videos)
        batch = make_videos(train_pool, events, videos)
        if trains in SCRAMBLED:
            batch = scramble_captions(batch, draws)
        if key_model is not None:
            # MoCo: the key encoder trails the query encoder by an exponential moving average
            momentum_update(model, key_model, config.momentum)
        terms, keys = training_losses(model, key_model, queue, batch, draws, torch_generator, tasks, config)
        loss = sum(terms.values())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        if keys is not None:
            queue.push(*keys, torch.as_tensor(batch.caption_id, device=queue.video.device))
    model.eval()
    return TrainedArm(model, steps, best["order"], best["retrieval"], eval_steps, curve_compute, curve_group6, curve_r1)
