"""The tiny VLA: a frame encoder over the last k frames, a causal transformer decoder, training and decoding."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from . import aot, game


class TinyVLA(nn.Module):
    """p(y_j | y_<j, frames) with a visual prefix: [v₁ … v_m, y₀ … y_{j−1}] → causal transformer.

    The frame encoder is an MLP on the k stacked frames, v = MLP(concat(f_{t−k+1}, …, f_t)),
    split into `prefix` tokens of width `width`; token and position embeddings follow; the
    decoder is `blocks` pre-norm causal transformer blocks and a linear head over the vocabulary.
    """

    def __init__(self, k: int, width: int = 48, blocks: int = 2, heads: int = 4, prefix: int = 2, hidden: int = 128):
        super().__init__()
        self.k, self.width, self.prefix = k, width, prefix
        self.encoder = nn.Sequential(
            nn.Linear(k * game.FRAME_SIZE, hidden), nn.GELU(), nn.Linear(hidden, prefix * width)
        )
        self.embed = nn.Embedding(aot.VOCAB, width)
        self.position = nn.Parameter(torch.zeros(prefix, width))
        layer = nn.TransformerEncoderLayer(
            width, heads, 2 * width, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, blocks, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, aot.VOCAB)
        nn.init.normal_(self.position, std=0.02)

    def visual(self, frames: Tensor) -> Tensor:
        """(n, k, HEIGHT·WIDTH) frames → (n, prefix, width) visual tokens."""
        return self.encoder(frames.flatten(1)).reshape(len(frames), self.prefix, self.width)

    def forward(self, frames: Tensor, tokens: Tensor, visual: Tensor | None = None) -> Tensor:
        """Next-token logits (n, len(tokens), VOCAB): position j predicts tokens[j + 1]."""
        v = self.visual(frames) if visual is None else visual
        # positions only for the visual tokens: every slot has its own token ids and a fixed
        # order, so the text needs none, and an explanation reads the same before or after <TRUNC>
        x = torch.cat([v + self.position, self.embed(tokens)], dim=1)
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device)
        h = self.blocks(x, mask=mask, is_causal=True)
        return self.head(self.norm(h[:, self.prefix :]))


def sequence_loss(logits: Tensor, tokens: Tensor, action_weight: float = 1.0, thought_weight: float = 1.0) -> Tensor:
    """Next-token cross-entropy over non-pad targets, key tokens weighted by `action_weight`.

    L = Σ_j w_j · CE(logits_j, y_{j+1}) / Σ_j w_j, w_j = action_weight when y_{j+1} is a key,
    thought_weight when it is an explanation slot, 1 otherwise, 0 for padding: the simple part
    of the paper's action-weighted loss (thought_weight = 0 leaves the explanation unlearned).
    """
    target = tokens[:, 1:]
    logits = logits[:, :-1]
    ce = F.cross_entropy(logits.reshape(-1, aot.VOCAB), target.reshape(-1), reduction="none").view_as(target)
    is_key = (target >= aot.ACTION0) & (target < aot.ACTION0 + len(game.KEYS))
    is_thought = target >= aot.ACTION0 + len(game.KEYS)
    weight = torch.where(is_key, action_weight, torch.where(is_thought, thought_weight, 1.0)) * (target != aot.PAD)
    return (ce * weight).sum() / weight.sum().clamp_min(1e-9)


#: The training formats: the AoT formats, and 'ahead', full AoT whose key is the one for `lead` ticks later.
STAGE_FORMATS = ("video", "none", "full", "truncated", "ahead")


def stage_data(data: aot.Recording, fmt: str, lead: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(rows of `data` a stage trains on, their token sequences (rows, MAX_LEN)) for a training format.

    'video' uses the windows with k distinct frames; 'ahead' pairs the frames before tick t and the
    explanation of tick t with the key the expert pressed at t + lead (rows where the fight lasts).
    """
    if fmt not in STAGE_FORMATS:
        raise ValueError(f"fmt must be one of {STAGE_FORMATS}, got {fmt!r}")
    if fmt == "video":
        rows = np.flatnonzero(data.video_ok)
        return rows, aot.sequences("video", data.video[rows])
    if fmt == "ahead":
        if not 1 <= lead <= aot.MAX_LEAD:
            raise ValueError(f"lead must lie in [1, {aot.MAX_LEAD}] ticks, got {lead!r}")
        rows = np.flatnonzero(data.ahead[:, lead - 1] >= 0)
        return rows, aot.sequences("full", data.ahead[rows, lead - 1], data.thoughts[rows])
    rows = np.arange(len(data.actions))
    return rows, aot.sequences(fmt, data.actions, data.thoughts)


@dataclass
class Stopping:
    """Early stopping on a validation score (higher is better), checked every `every` steps.

    `check` records the score after a step and keeps the best weights; `restore` loads them back,
    so an arm ends at its own best validation point within the shared budget (CLAIMS.md §2).
    """

    score: Callable[[TinyVLA], float]
    every: int
    scores: list[tuple[int, float]] = field(default_factory=list)  # (global step, validation score)
    best_step: int = 0
    best_score: float = -math.inf
    best_state: dict[str, Tensor] | None = None

    def check(self, model: TinyVLA, step: int) -> None:
        model.eval()
        value = float(self.score(model))
        model.train()
        self.scores.append((step, value))
        if value > self.best_score:
            self.best_step, self.best_score = step, value
            self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}

    def restore(self, model: TinyVLA) -> None:
        if self.best_state is not None:
            model.load_state_dict(self.best_state)
        model.eval()


def train_stages(
    model: TinyVLA,
    data: aot.Recording,
    stages: Sequence[tuple[str, int]],
    *,
    batch_size: int,
    lr: float,
    action_weight: float,
    seed: int,
    thought_weight: float = 1.0,
    lead: int = 1,
    stopping: Stopping | None = None,
    step0: int = 0,
    snapshots: dict[int, dict[str, Tensor]] | None = None,
) -> list[float]:
    """Train through (format, steps) stages in order (progressive training); return the losses.

    Every stage draws batches of key events from the recording, builds the frames window and the
    format's token sequence (`stage_data`), and takes Adam steps on `sequence_loss`. With
    `stopping`, the model is scored on validation after every `stopping.every`-th step (counted
    from `step0`, the steps the model had before this call) and after the last step. The weights
    after each step named in `snapshots` are stored in it (where a later stage branches off).
    """
    on = next(model.parameters()).device
    rng = np.random.default_rng(seed)
    frames = torch.as_tensor(data.frames, device=on)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    model.train()
    step = step0
    total = step0 + sum(n for _, n in stages)
    for fmt, steps in stages:
        pool, seqs = stage_data(data, fmt, lead)
        seqs_t = torch.as_tensor(seqs, device=on)
        for _ in range(steps):
            pick = rng.integers(0, len(pool), batch_size)
            x = frames[torch.as_tensor(data.windows[pool[pick]], device=on)]
            y = seqs_t[torch.as_tensor(pick, device=on)]
            loss = sequence_loss(model(x, y), y, action_weight, thought_weight)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            step += 1
            if snapshots is not None and step in snapshots:
                snapshots[step] = {k: v.detach().clone() for k, v in model.state_dict().items()}
            if stopping is not None and (step % stopping.every == 0 or step == total):
                stopping.check(model, step)
    model.eval()
    return losses


@torch.no_grad()
def decode(
    model: TinyVLA,
    frames: Tensor,
    *,
    truncate: bool = True,
    start: int = aot.BOS,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Generate after `start` until <eos>, or until <TRUNC> when `truncate` (the paper's truncated decoding).

    Greedy at temperature 0, else sampled from softmax(logits / temperature).
    Returns (tokens (n, MAX_LEN) with the start token first and <pad> after the stop,
    decoded (n,): tokens generated per row, the stop token included).
    """
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    n = len(frames)
    on = frames.device
    visual = model.visual(frames)
    tokens = torch.full((n, 1), start, dtype=torch.long, device=on)
    done = torch.zeros(n, dtype=torch.bool, device=on)
    count = torch.zeros(n, dtype=torch.long, device=on)
    for _ in range(aot.MAX_LEN - 1):
        logits = model(frames, tokens, visual=visual)[:, -1]
        if temperature == 0:
            nxt = logits.argmax(dim=1)
        else:
            probs = torch.softmax(logits / temperature, dim=1)
            nxt = torch.multinomial(probs.cpu(), 1, generator=generator).squeeze(1).to(on)
        nxt = torch.where(done, aot.PAD, nxt)
        count += (~done).long()
        tokens = torch.cat([tokens, nxt[:, None]], dim=1)
        stop = (nxt == aot.EOS) | (truncate & (nxt == aot.TRUNC))
        done = done | stop
        if bool(done.all()):
            break
    out = np.full((n, aot.MAX_LEN), aot.PAD, dtype=np.int64)
    out[:, : tokens.shape[1]] = tokens.cpu().numpy()
    return out, count.cpu().numpy()


def parse_action(tokens: np.ndarray) -> np.ndarray:
    """The first key token of each decoded row as a key index (IDLE when there is none)."""
    is_key = (tokens >= aot.ACTION0) & (tokens < aot.ACTION0 + len(game.KEYS))
    first = is_key.argmax(axis=1)
    keys = tokens[np.arange(len(tokens)), first] - aot.ACTION0
    return np.where(is_key.any(axis=1), keys, game.IDLE)


def parse_thoughts(tokens: np.ndarray) -> np.ndarray:
    """Each slot's value from the decoded explanation, (n, 6); −1 where the slot is missing."""
    out = np.full((len(tokens), len(aot.SLOTS)), -1, dtype=np.int64)
    for j, name in enumerate(aot.SLOT_NAMES):
        lo, size = aot.SLOT_OFFSET[name], len(aot.SLOTS[name])
        hit = (tokens >= lo) & (tokens < lo + size)
        first = hit.argmax(axis=1)
        out[:, j] = np.where(hit.any(axis=1), tokens[np.arange(len(tokens)), first] - lo, -1)
    return out
