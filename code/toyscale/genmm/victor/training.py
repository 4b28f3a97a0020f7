"""The arms (one architecture, different losses), their compute per step, the momentum encoder with
its queues, and the training loop at equal compute."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from toyscale.core import device
from toyscale.core.seeding import seed_everything
from toyscale.genmm import digits

from .data import (
    CAPTION_LENGTH,
    N_FRAMES,
    PERMUTATIONS,
    TRIPLETS,
    Group6,
    VideoBatch,
    group6_accuracy,
    make_videos,
    reorder_segments,
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
    shuffle_caption,
)
from .model import (
    Victor,
)

ARMS = ("cooccur", "sentence_order", "order_tasks", "victor", "bag")
TASKS = {
    "cooccur": ("mlm", "align"),
    "sentence_order": ("mlm", "align", "sentence_order"),
    "order_tasks": ("mlm", "align", "sentence_order", "frame_order", "masked_frame"),
    "victor": ("mlm", "align", "sentence_order", "frame_order", "masked_frame", "queue"),
    "bag": ("mlm", "align"),
}
# Encoder tokens each task pushes through a layer per sample; a pass with gradients costs 3
# (forward + backward), a momentum pass without gradients 1. The cost of a step is their sum.
PASS_COST = {
    "mlm": 3 * (CAPTION_LENGTH + (CAPTION_LENGTH + N_FRAMES)),  # masked caption + cross encoder
    "align": 3 * (CAPTION_LENGTH + N_FRAMES),  # the caption and the video
    "sentence_order": 3 * CAPTION_LENGTH,  # a shuffled caption
    "frame_order": 3 * len(PERMUTATIONS) * N_FRAMES,  # the video in its 6 segment orders
    "masked_frame": 3 * N_FRAMES,  # a video with one frame masked
    "queue": 1 * (CAPTION_LENGTH + N_FRAMES),  # the momentum encoder's keys
}


def step_cost(arm: str) -> int:
    """Token-layer passes per sample of one training step of `arm` (gradient passes count 3)."""
    if arm not in TASKS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    return sum(PASS_COST[task] for task in TASKS[arm])


BAG_SHARE = 0.25  # the bag-of-digits control gets this share of the budget (its group-6 is 1/6 for any weights)


def arm_steps(arm: str, budget_steps: int) -> int:
    """Steps that give `arm` the compute of `budget_steps` steps of the full Victor arm.

    The bag-of-digits control is the exception: it scores every group-6 candidate alike for
    any weights, so it gets BAG_SHARE of the compute, which is enough to show that training
    does not change that.
    """
    share = BAG_SHARE if arm == "bag" else 1.0
    return max(1, round(share * budget_steps * step_cost("victor") / step_cost(arm)))


@dataclass(frozen=True)
class Config:
    """Toy defaults for the Victor experiment."""

    feature_dim: int = 16  # frozen PCA features per frame (fitted on training digits only)
    width: int = 32  # transformer width of every encoder
    layers: int = 1  # layers of the text and video encoders (the cross encoder has one)
    heads: int = 2  # attention heads
    out: int = 32  # pooled feature size used for alignment and retrieval
    budget_steps: int = 200  # steps of the full Victor arm; the cheaper arms get the same compute
    batch_size: int = 32  # videos per step
    lr: float = 1e-2  # AdamW learning rate (linear warm-up, cosine decay to 0)
    temperature: float = 0.1  # τ of every InfoNCE loss
    mlm_rate: float = 0.15  # share of caption characters masked for MLM
    queue_size: int = 1024  # memory queue entries (video and text keys)
    momentum: float = 0.98  # m of the momentum (key) encoder
    eval_every: int = 25  # compute-equivalent steps between group-6 measurements during training
    eval_groups: int = 100  # groups in each group-6 measurement during training
    test_groups: int = 300  # groups in the final group-6 accuracy
    gallery: int = 200  # test videos (distinct ordered triplets) in the retrieval gallery
    arms: tuple[str, ...] = ARMS  # the arms to train

    def __post_init__(self) -> None:
        for name in (
            "feature_dim",
            "width",
            "layers",
            "heads",
            "out",
            "budget_steps",
            "batch_size",
            "queue_size",
            "eval_every",
            "eval_groups",
            "test_groups",
            "gallery",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.width % self.heads:
            raise ValueError(f"heads must divide width, got heads={self.heads} and width={self.width}")
        if self.feature_dim > digits.SIDE**2:
            raise ValueError(f"feature_dim must be at most 64, got {self.feature_dim}")
        if self.gallery > len(TRIPLETS):
            raise ValueError(f"gallery must be at most {len(TRIPLETS)} (distinct captions), got {self.gallery}")
        if not 0 < self.mlm_rate < 1:
            raise ValueError(f"mlm_rate must lie in (0, 1), got {self.mlm_rate}")
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum must lie in [0, 1), got {self.momentum}")
        if not self.lr > 0 or not self.temperature > 0:
            raise ValueError(f"lr and temperature must be > 0, got {self.lr} and {self.temperature}")
        unknown = [a for a in self.arms if a not in ARMS]
        if unknown or not self.arms:
            raise ValueError(f"arms must be a non-empty subset of {ARMS}, got {self.arms}")

    @classmethod
    def fast(cls) -> Config:
        """A smaller budget and evaluation sets for tests."""
        return cls(
            budget_steps=150,
            test_groups=200,
            gallery=150,
            eval_every=50,
            arms=("cooccur", "order_tasks", "victor", "bag"),
        )


@dataclass
class TrainedArm:
    """One trained arm: its model, steps taken, and group-6 accuracy during training."""

    model: Victor
    steps: int
    curve_compute: list[int]  # compute-equivalent steps (of the Victor arm) at each measurement
    curve_group6: list[float]
    losses: dict[str, list[float]]


@torch.no_grad()
def pooled_features(model: Victor, frames: np.ndarray | None = None, tokens: np.ndarray | None = None) -> Tensor:
    """Unimodal pooled features (normalised): the video encoder's for frames, the text encoder's for tokens."""
    on = next(model.parameters()).device
    if frames is not None:
        return F.normalize(model.video(torch.as_tensor(frames, device=on))[1], dim=-1)
    return F.normalize(model.text(torch.as_tensor(tokens, device=on))[1], dim=-1)


@torch.no_grad()
def group6_scores(model: Victor, group: Group6) -> np.ndarray:
    """Cosine similarity between each caption and its six candidates, from pooled features."""
    groups, candidates = group.frames.shape[:2]
    video = pooled_features(model, frames=group.frames.reshape(groups * candidates, N_FRAMES, -1))
    text = pooled_features(model, tokens=group.tokens)
    return (video.reshape(groups, candidates, -1) * text[:, None]).sum(-1).cpu().numpy()


def _batch_generator(features: np.ndarray, labels: np.ndarray, seed: int, batch_size: int):
    generator = np.random.default_rng(seed)
    while True:
        triplets = np.array(TRIPLETS)[generator.integers(0, len(TRIPLETS), batch_size)]
        yield make_videos(features, labels, triplets, generator), generator


def training_losses(
    model: Victor,
    key_model: Victor | None,
    queue: MemoryQueue | None,
    batch: VideoBatch,
    generator: np.random.Generator,
    torch_generator: torch.Generator,
    tasks: Sequence[str],
    config: Config,
) -> tuple[dict[str, Tensor], tuple[Tensor, Tensor] | None]:
    """Every proxy-task loss of one step, for the tasks of an arm, and the momentum keys (or None).

    The inputs of all tasks go through each encoder as one stacked batch (the caption, its
    masked copy and its shuffled copy through the text encoder; the video, its six segment orders
    and its copy with a masked frame through the video encoder), so a step costs a few large
    passes.
    Permutations and masks are drawn per sample.
    """
    on = next(model.parameters()).device
    n = len(batch.caption_id)
    frames = torch.as_tensor(batch.frames, device=on)
    tokens = torch.as_tensor(batch.tokens, device=on)
    caption_id = torch.as_tensor(batch.caption_id, device=on)
    masked_tokens, masked = mask_caption(tokens, config.mlm_rate, torch_generator)
    text_in, video_in, frame_mask = (
        [tokens, masked_tokens],
        [frames],
        [torch.zeros(n, N_FRAMES, dtype=torch.bool, device=on)],
    )
    if "sentence_order" in tasks:
        sentence_perm = generator.integers(0, len(PERMUTATIONS), n)  # one permutation per sample
        text_in.append(
            torch.as_tensor(
                np.stack([shuffle_caption(batch.triplet[i], PERMUTATIONS[p]) for i, p in enumerate(sentence_perm)]),
                device=on,
            )
        )
    if "frame_order" in tasks:
        # candidate k plays the segments in order (k + shift) mod 6; the shift is drawn per sample
        shift = generator.integers(0, len(PERMUTATIONS), n)
        frame_label = torch.as_tensor((-shift) % len(PERMUTATIONS), device=on)
        candidates = [
            reorder_segments(batch, i, PERMUTATIONS[(k + shift[i]) % len(PERMUTATIONS)])[0]
            for i in range(n)
            for k in range(len(PERMUTATIONS))
        ]
        video_in.append(torch.as_tensor(np.stack(candidates), device=on))
        frame_mask.append(torch.zeros(len(candidates), N_FRAMES, dtype=torch.bool, device=on))
    if "masked_frame" in tasks:
        masked_at = torch.as_tensor(generator.integers(0, N_FRAMES, n), device=on)
        video_in.append(frames)
        frame_mask.append(F.one_hot(masked_at, N_FRAMES).bool())
    text_states, text_pooled = model.text(torch.cat(text_in))
    video_states, video_pooled = model.video(torch.cat(video_in), torch.cat(frame_mask))
    terms = {
        "mlm": masked_language_modeling(
            model.mlm_head(model.cross(text_states[n : 2 * n], video_states[:n])[:, :CAPTION_LENGTH]), tokens, masked
        ),
        "align": alignment_loss(text_pooled[:n], video_pooled[:n], caption_id, config.temperature),
    }
    if "sentence_order" in tasks:
        terms["sentence_order"] = order_loss(
            model.sentence_order_head(text_states[2 * n :, 0]), torch.as_tensor(sentence_perm, device=on)
        )
    if "frame_order" in tasks:
        pooled = video_pooled[n : n + len(PERMUTATIONS) * n].reshape(n, len(PERMUTATIONS), -1)
        terms["frame_order"] = frame_order_loss(text_pooled[:n], pooled, frame_label, config.temperature)
    if "masked_frame" in tasks:
        states = video_states[-n:][torch.arange(n, device=on), masked_at]
        terms["masked_frame"] = masked_frame_loss(model.frame_head(states), frames, masked_at, config.temperature)
    if "queue" in tasks and key_model is not None and queue is not None:
        with torch.no_grad():
            text_keys, video_keys = key_model.text(tokens)[1], key_model.video(frames)[1]
        terms["queue"] = queue_alignment_loss(
            text_pooled[:n], video_pooled[:n], text_keys, video_keys, caption_id, queue, config.temperature
        )
        return terms, (video_keys, text_keys)
    return terms, None


def train_arm(
    arm: str, features: np.ndarray, labels: np.ndarray, eval_group: Group6, config: Config, seed: int
) -> TrainedArm:
    """Train one arm for the compute of `config.budget_steps` Victor steps on training videos.

    Every arm starts from the same initial weights (same seed) and draws its videos, masks and
    permutations from the same seeded streams; only the losses (and hence the steps) differ.
    """
    if arm not in TASKS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    tasks = TASKS[arm]
    on = device()
    torch_generator = seed_everything(seed)
    model = Victor(config.feature_dim, config.width, config.layers, config.heads, config.out, arm != "bag").to(on)
    key_model = None
    queue = None
    if "queue" in tasks:
        key_model = Victor(config.feature_dim, config.width, config.layers, config.heads, config.out, True).to(on)
        key_model.load_state_dict(model.state_dict())
        key_model.requires_grad_(False)
        queue = MemoryQueue(config.queue_size, config.out, on)
    steps = arm_steps(arm, config.budget_steps)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.01, foreach=True)
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)),
    )
    stream = _batch_generator(features, labels, seed, config.batch_size)
    eval_steps = sorted(
        {round(c * steps / config.budget_steps) for c in range(0, config.budget_steps + 1, config.eval_every)}
    )
    curve_compute, curve_group6 = [], []
    losses: dict[str, list[float]] = {task: [] for task in tasks}
    for step in range(steps + 1):
        if step in eval_steps:
            model.eval()
            # compute spent so far, in steps of the Victor arm
            curve_compute.append(round(step * step_cost(arm) / step_cost("victor")))
            curve_group6.append(group6_accuracy(group6_scores(model, eval_group), eval_group.answer))
            model.train()
        if step == steps:
            break
        batch, generator = next(stream)
        if key_model is not None:
            # MoCo: the key encoder trails the query encoder by an exponential moving average
            momentum_update(model, key_model, config.momentum)
        terms, keys = training_losses(model, key_model, queue, batch, generator, torch_generator, tasks, config)
        loss = sum(terms.values())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        if keys is not None:
            queue.push(*keys, torch.as_tensor(batch.caption_id, device=queue.video.device))
        for task, value in terms.items():
            losses[task].append(value.item())
    model.eval()
    return TrainedArm(model, steps, curve_compute, curve_group6, losses)
