"""The data: digit videos with Chinese captions that state the order, the tokenizer, frozen PCA frame
features fitted on training digits only, and the group-6 test sets."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import permutations

import numpy as np

from toyscale.genmm import digits

N_FRAMES = 6  # frames per video
N_EVENTS = 3  # digits per video, each shown for a segment of consecutive frames
PERMUTATIONS = list(permutations(range(N_EVENTS)))  # the 6 orders of three segments
TRIPLETS = list(permutations(range(digits.N_CLASSES), N_EVENTS))  # 720 ordered digit triplets
TRIPLET_ID = {t: i for i, t in enumerate(TRIPLETS)}  # a caption's id: its ordered triplet
SPECIALS = ["[PAD]", "[CLS]", "[MASK]"]
CHARS = list("数字先出现然后是最，") + [str(d) for d in range(digits.N_CLASSES)]
VOCAB = SPECIALS + CHARS
TOKEN = {t: i for i, t in enumerate(VOCAB)}
CLS, MASK = TOKEN["[CLS]"], TOKEN["[MASK]"]
SEGMENT_TEMPLATES = ("数字{}先出现", "，然后是{}", "，最后是{}")  # the three segments of a caption
CAPTION_LENGTH = 1 + sum(len(s.format(0)) for s in SEGMENT_TEMPLATES)  # [CLS] + 16 characters


def caption(triplet: Sequence[int]) -> str:
    """The caption of a video whose digits appear in the order `triplet`: 数字a先出现，然后是b，最后是c."""
    return "".join(s.format(d) for s, d in zip(SEGMENT_TEMPLATES, _check_triplet(triplet), strict=True))


def caption_segments(triplet: Sequence[int]) -> list[list[int]]:
    """The token ids of the caption's three segments (what sentence-order modeling shuffles)."""
    return [[TOKEN[c] for c in s.format(d)] for s, d in zip(SEGMENT_TEMPLATES, _check_triplet(triplet), strict=True)]


def tokenize(text: str) -> list[int]:
    """[CLS] followed by one token per character; every character must be in the vocabulary."""
    unknown = sorted({c for c in text if c not in TOKEN})
    if unknown:
        raise ValueError(f"text holds characters outside the vocabulary: {unknown}; allowed: {''.join(CHARS)}")
    return [CLS] + [TOKEN[c] for c in text]


def _check_triplet(triplet: Sequence[int]) -> tuple[int, ...]:
    triplet = tuple(int(d) for d in triplet)
    if len(triplet) != N_EVENTS or len(set(triplet)) != N_EVENTS or not all(0 <= d < 10 for d in triplet):
        raise ValueError(f"triplet must be {N_EVENTS} different digits 0–9, got {triplet}")
    return triplet


SEGMENT_LENGTHS = [
    (a, b, N_FRAMES - a - b) for a in range(1, N_FRAMES) for b in range(1, N_FRAMES - a) if N_FRAMES - a - b >= 1
]  # the 10 ways to cut 6 frames into three non-empty segments


@dataclass(frozen=True)
class FrameEncoder:
    """The frozen frame features: x ↦ W(x − μ) / s, a PCA of the training digits (whitened).

    Fitted once on training images only; it stands in for the pre-extracted visual backbone
    that video-language pre-training keeps frozen.
    """

    mean: np.ndarray  # μ: (64,)
    components: np.ndarray  # W: (dim, 64), the top principal directions
    scale: np.ndarray  # s: (dim,), the standard deviation along each direction

    def __call__(self, images: np.ndarray) -> np.ndarray:
        """Features (n, dim) of images (n, 8, 8) with intensities 0–16."""
        x = digits.to_unit(images).reshape(len(images), -1)
        return ((x - self.mean) @ self.components.T / self.scale).astype(np.float32)


def fit_frame_encoder(train_images: np.ndarray, dim: int) -> FrameEncoder:
    """PCA of the training images: the top `dim` right singular vectors of the centred pixels."""
    if not isinstance(dim, int) or not 1 <= dim <= digits.SIDE**2:
        raise ValueError(f"dim must be an int in [1, 64], got {dim!r}")
    x = digits.to_unit(train_images).reshape(len(train_images), -1).astype(np.float64)
    mean = x.mean(axis=0)
    _, s, vt = np.linalg.svd(x - mean, full_matrices=False)
    scale = s[:dim] / math.sqrt(len(x) - 1)
    return FrameEncoder(mean, vt[:dim], scale)


@dataclass
class VideoBatch:
    """Videos and their captions.

    frames: (n, 6, dim) frozen frame features; labels: (n, 6) the digit in each frame;
    image_index: (n, 6) which image of its pool each frame shows; triplet: (n, 3) the digits
    in order of appearance; lengths: (n, 3) the segment lengths; tokens: (n, 17) the caption;
    caption_id: (n,) the caption's id (its ordered triplet, 0–719).
    """

    frames: np.ndarray
    labels: np.ndarray
    image_index: np.ndarray
    triplet: np.ndarray
    lengths: np.ndarray
    tokens: np.ndarray
    caption_id: np.ndarray


def make_videos(
    features: np.ndarray,
    labels: np.ndarray,
    triplets: np.ndarray,
    generator: np.random.Generator,
    lengths: np.ndarray | None = None,
) -> VideoBatch:
    """One video per ordered triplet: random segment lengths, a random image of each digit per frame.

    `features` and `labels` are an image pool (training or test images only), so a test video
    never shows a training image.
    """
    triplets = np.asarray(triplets, dtype=np.int64).reshape(-1, N_EVENTS)
    n = len(triplets)
    if lengths is None:
        lengths = np.array(SEGMENT_LENGTHS)[generator.integers(0, len(SEGMENT_LENGTHS), n)]
    pools = [np.flatnonzero(labels == d) for d in range(digits.N_CLASSES)]
    frame_digit = np.stack([np.repeat(t, ln) for t, ln in zip(triplets, lengths, strict=True)])
    image_index = np.zeros((n, N_FRAMES), dtype=np.int64)
    for d in range(digits.N_CLASSES):
        where = frame_digit == d
        image_index[where] = generator.choice(pools[d], size=int(where.sum()))
    tokens = np.array([tokenize(caption(t)) for t in triplets], dtype=np.int64)
    ids = np.array([TRIPLET_ID[tuple(t)] for t in triplets], dtype=np.int64)
    return VideoBatch(features[image_index], frame_digit, image_index, triplets, np.asarray(lengths), tokens, ids)


def reorder_segments(batch: VideoBatch, index: int, order: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Video `index` of the batch with its segments played in `order`: (frames, frame labels).

    The frames (the very same images) keep their segment; only the segments move.
    """
    starts = np.concatenate([[0], np.cumsum(batch.lengths[index])])
    pieces = [np.arange(starts[k], starts[k + 1]) for k in order]
    frames = np.concatenate(pieces)
    return batch.frames[index][frames], batch.labels[index][frames]


@dataclass
class Group6:
    """Group-6 evaluation sets: for each group, the 6 orderings of one video and its true caption.

    frames: (groups, 6, 6, dim) candidates; labels: (groups, 6, 6) their frame digits;
    tokens: (groups, 17) the caption; answer: (groups,) which candidate is the true video.
    """

    frames: np.ndarray
    labels: np.ndarray
    tokens: np.ndarray
    answer: np.ndarray


def make_group6(videos: VideoBatch) -> Group6:
    """Group-6 sets from videos: each video's segments in all 6 orders, the caption of the true one.

    Every candidate holds the same images in the same segments, so an order-blind model sees six
    identical bags and can do no better than 1/6.
    """
    frames, labels = [], []
    for i in range(len(videos.triplet)):
        pairs = [reorder_segments(videos, i, p) for p in PERMUTATIONS]
        frames.append(np.stack([f for f, _ in pairs]))
        labels.append(np.stack([lab for _, lab in pairs]))
    answer = np.full(len(videos.triplet), PERMUTATIONS.index((0, 1, 2)))
    return Group6(np.stack(frames), np.stack(labels), videos.tokens.copy(), answer)


def group6_accuracy(scores: np.ndarray, answer: np.ndarray, tolerance: float = 1e-4) -> float:
    """Share of groups whose true candidate scores highest; a k-way tie at the top counts 1/k.

    The tie rule makes an order-blind scorer (all six scores equal) land exactly on chance, 1/6.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2 or scores.shape[0] != len(answer):
        raise ValueError(f"scores must be (groups, candidates) with one row per answer, got {scores.shape}")
    top = scores.max(axis=1, keepdims=True)
    tied = scores >= top - tolerance
    hit = tied[np.arange(len(answer)), answer]
    return float(np.mean(hit / tied.sum(axis=1)))


def bag_oracle_scores(group: Group6) -> np.ndarray:
    """The caption-leak oracle: score = 1 when the caption's bag of digits equals the candidate's.

    It knows every frame's true digit and every caption character but not their order; it
    scores all six candidates alike, so its group-6 accuracy must be 1/6. If the captions or
    the candidates leaked the order through what they contain, it would score higher.
    """
    scores = np.zeros(group.labels.shape[:2])
    digit_tokens = {TOKEN[str(d)]: d for d in range(digits.N_CLASSES)}
    for g in range(len(group.tokens)):
        said = sorted(digit_tokens[t] for t in group.tokens[g] if t in digit_tokens)
        for c in range(group.labels.shape[1]):
            seen = sorted(set(group.labels[g, c].tolist()))
            scores[g, c] = float(said == seen)
    return scores


def order_oracle_scores(group: Group6) -> np.ndarray:
    """An oracle that reads the order: 1 when the caption's digits appear in the candidate's order."""
    digit_tokens = {TOKEN[str(d)]: d for d in range(digits.N_CLASSES)}
    scores = np.zeros(group.labels.shape[:2])
    for g in range(len(group.tokens)):
        said = [digit_tokens[t] for t in group.tokens[g] if t in digit_tokens]
        for c in range(group.labels.shape[1]):
            shown = list(dict.fromkeys(group.labels[g, c].tolist()))
            scores[g, c] = float(said == shown)
    return scores
