"""The data: digit videos with order-free Chinese captions, the tokenizer, frozen PCA frame features fitted
on training digits only, three image pools (train, validation, test), and the two order tests: group-6 sets
(one video's segments in every order) and the twin gallery (independent videos of the same digits in every
order)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from itertools import combinations, permutations

import numpy as np

from toyscale.core import split_units
from toyscale.genmm import digits

N_FRAMES = 6  # frames per video
SEGMENTS = 3  # digits per video in the default world, each shown for a segment of consecutive frames
GROUP_SIZE = 6  # candidates of an order question: every order when there are at most 6, else the true one and 5
SPECIALS = ["[PAD]", "[CLS]", "[MASK]"]
CHARS = list("数字出现，") + [str(d) for d in range(digits.N_CLASSES)]
VOCAB = SPECIALS + CHARS
TOKEN = {t: i for i, t in enumerate(VOCAB)}
CLS, MASK = TOKEN["[CLS]"], TOKEN["[MASK]"]
DIGIT_TOKENS = np.array([TOKEN[str(d)] for d in range(digits.N_CLASSES)])  # the token of each digit
SEGMENT_TEMPLATE = "数字{}出现"  # one caption segment per digit, all alike: no word says which comes first
SEPARATOR = "，"
VALIDATION_SHARE = 0.2  # of the training images, kept apart for choosing checkpoints and learning rates
DIGIT_SPLIT_SEED = 0  # the train/test split of the digits and the validation images: the same for every seed


def caption(events: Sequence[int]) -> str:
    """The caption of a video whose digits appear in the order `events`: 数字3出现，数字7出现，数字1出现.

    The segments are alike, so the order is stated only by where each digit sits in the sentence.
    """
    return SEPARATOR.join(SEGMENT_TEMPLATE.format(d) for d in _check_events(events))


def caption_length(segments: int) -> int:
    """Tokens of a caption with `segments` digits: [CLS] + 5 characters per segment + the separators."""
    return 1 + len(caption(range(segments)))


def tokenize(text: str) -> list[int]:
    """[CLS] followed by one token per character; every character must be in the vocabulary."""
    unknown = sorted({c for c in text if c not in TOKEN})
    if unknown:
        raise ValueError(f"text holds characters outside the vocabulary: {unknown}; allowed: {''.join(CHARS)}")
    return [CLS] + [TOKEN[c] for c in text]


def _check_events(events: Sequence[int]) -> tuple[int, ...]:
    events = tuple(int(d) for d in events)
    if not 1 <= len(events) <= N_FRAMES or len(set(events)) != len(events) or not all(0 <= d < 10 for d in events):
        raise ValueError(f"events must be 1 to {N_FRAMES} different digits 0–9, got {events}")
    return events


@dataclass(frozen=True)
class Layout:
    """What the number of segments k fixes: the k! segment orders, the ways to cut the frames, the captions.

    orders: the k! orders (orders[0] is the identity, the video as shot); lengths: (patterns, k), the
    ways to cut N_FRAMES frames into k non-empty segments; segment_of_frame: (patterns, N_FRAMES);
    frame_index: (patterns, k!, N_FRAMES), which frame of the video plays at each time when its
    segments are played in order o; digit_position: (k,), where each segment's digit sits in a caption.
    """

    segments: int
    orders: tuple[tuple[int, ...], ...]
    lengths: np.ndarray
    segment_of_frame: np.ndarray
    frame_index: np.ndarray
    digit_position: np.ndarray

    @property
    def caption_length(self) -> int:
        return caption_length(self.segments)

    @property
    def group_size(self) -> int:
        """Candidates of an order question: min(k!, GROUP_SIZE)."""
        return min(len(self.orders), GROUP_SIZE)


@cache
def layout(segments: int = SEGMENTS) -> Layout:
    """The layout of videos with `segments` digits (1 to N_FRAMES)."""
    if isinstance(segments, bool) or not isinstance(segments, int) or not 1 <= segments <= N_FRAMES:
        raise ValueError(f"segments must be an int from 1 to {N_FRAMES}, got {segments!r}")
    orders = tuple(permutations(range(segments)))
    cuts = [c for c in combinations(range(1, N_FRAMES), segments - 1)]
    lengths = np.array([np.diff([0, *c, N_FRAMES]) for c in cuts], dtype=np.int64).reshape(len(cuts), segments)
    segment_of_frame = np.stack([np.repeat(np.arange(segments), row) for row in lengths])
    starts = np.concatenate([np.zeros((len(lengths), 1), dtype=np.int64), np.cumsum(lengths, axis=1)], axis=1)
    frame_index = np.array(
        [[np.concatenate([np.arange(s[k], s[k + 1]) for k in order]) for order in orders] for s in starts]
    )
    digit_position = 1 + np.arange(segments) * (len(SEGMENT_TEMPLATE.format(0)) + len(SEPARATOR)) + 2
    return Layout(segments, orders, lengths, segment_of_frame, frame_index, digit_position)


def caption_tokens(events: np.ndarray, segments: int) -> np.ndarray:
    """Token ids (n, caption_length) of the captions of `events` (n, k): the template with each digit in place."""
    events = np.asarray(events, dtype=np.int64).reshape(-1, segments)
    grid = layout(segments)
    template = np.array(tokenize(caption(range(segments))), dtype=np.int64)
    tokens = np.tile(template, (len(events), 1))
    tokens[:, grid.digit_position] = DIGIT_TOKENS[events]
    return tokens


def caption_ids(events: np.ndarray) -> np.ndarray:
    """A caption's id: its ordered digits read as a number in base 11 (distinct captions, distinct ids)."""
    events = np.asarray(events, dtype=np.int64)
    return ((events + 1) * 11 ** np.arange(events.shape[1])).sum(axis=1)


def random_events(n: int, segments: int, generator: np.random.Generator) -> np.ndarray:
    """n ordered tuples of `segments` different digits, uniform over all of them."""
    return np.argsort(generator.random((n, digits.N_CLASSES)), axis=1)[:, :segments]


def distinct_events(n: int, segments: int, generator: np.random.Generator) -> np.ndarray:
    """min(n, all) ordered tuples of different digits, no two the same (a gallery of distinct captions)."""
    total = math.perm(digits.N_CLASSES, segments)
    chosen = generator.choice(total, size=min(n, total), replace=False)
    if total <= 5040:
        return np.array(list(permutations(range(digits.N_CLASSES), segments)), dtype=np.int64)[np.sort(chosen)]
    seen: dict[tuple[int, ...], None] = {}
    while len(seen) < min(n, total):
        seen.setdefault(tuple(random_events(1, segments, generator)[0].tolist()), None)
    return np.array(list(seen), dtype=np.int64)


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
    # the eigenvectors of the 64 × 64 covariance are the right singular vectors of the centred pixels
    values, vectors = np.linalg.eigh((x - mean).T @ (x - mean) / (len(x) - 1))
    top = np.argsort(values)[::-1][:dim]
    components = vectors[:, top].T
    components *= np.where(components.sum(axis=1, keepdims=True) < 0, -1.0, 1.0)  # a fixed sign per direction
    return FrameEncoder(mean, components, np.sqrt(values[top]))


@dataclass(frozen=True)
class Pool:
    """One pool of images a video draws its frames from: the images, their labels and frozen features."""

    images: np.ndarray
    labels: np.ndarray
    features: np.ndarray


@dataclass(frozen=True)
class Pools:
    """The three image pools: train (what training videos show), validation (checkpoints, learning rates)
    and test (the final scores), disjoint by image; and the frozen encoder, fitted on the train pool."""

    train: Pool
    validation: Pool
    test: Pool
    encoder: FrameEncoder
    unseen_fraction: float  # share of test images whose pixels appear in no training or validation image


@lru_cache(maxsize=4)
def image_pools(feature_dim: int) -> Pools:
    """Split the digits into the three pools (the same for every seed) and encode every image."""
    split = digits.split(seed=DIGIT_SPLIT_SEED)
    index = np.arange(len(split.train_labels))
    parts = split_units(index, validation=VALIDATION_SHARE, test=0.0, seed=DIGIT_SPLIT_SEED)
    train_images, train_labels = split.train_images[parts.train], split.train_labels[parts.train]
    encoder = fit_frame_encoder(train_images, feature_dim)

    def pool(images: np.ndarray, labels: np.ndarray) -> Pool:
        return Pool(images, labels, encoder(images))

    return Pools(
        pool(train_images, train_labels),
        pool(split.train_images[parts.validation], split.train_labels[parts.validation]),
        pool(split.test_images, split.test_labels),
        encoder,
        split.unseen_fraction(),
    )


@dataclass
class VideoBatch:
    """Videos and their captions.

    frames: (n, 6, dim) frozen frame features; labels: (n, 6) the digit in each frame;
    image_index: (n, 6) which image of its pool each frame shows; events: (n, k) the digits in
    order of appearance; pattern: (n,) which way of cutting the frames (a row of `Layout.lengths`);
    lengths: (n, k) the segment lengths; tokens: (n, L) the caption; caption_id: (n,) its id.
    """

    frames: np.ndarray
    labels: np.ndarray
    image_index: np.ndarray
    events: np.ndarray
    pattern: np.ndarray
    lengths: np.ndarray
    tokens: np.ndarray
    caption_id: np.ndarray


def make_videos(
    pool: Pool, events: np.ndarray, generator: np.random.Generator, pattern: np.ndarray | None = None
) -> VideoBatch:
    """One video per row of `events`: random segment lengths, a random image of each digit per frame.

    Every frame comes from `pool` (training, validation or test images only), so a test video
    never shows a training image.
    """
    events = np.asarray(events, dtype=np.int64)
    n, segments = events.shape
    grid = layout(segments)
    if pattern is None:
        pattern = generator.integers(0, len(grid.lengths), n)
    frame_digit = np.take_along_axis(events, grid.segment_of_frame[pattern], axis=1)
    image_index = np.zeros((n, N_FRAMES), dtype=np.int64)
    for d in range(digits.N_CLASSES):
        where = frame_digit == d
        if where.any():
            image_index[where] = generator.choice(np.flatnonzero(pool.labels == d), size=int(where.sum()))
    tokens = caption_tokens(events, segments)
    return VideoBatch(
        pool.features[image_index],
        frame_digit,
        image_index,
        events,
        np.asarray(pattern),
        grid.lengths[pattern],
        tokens,
        caption_ids(events),
    )


def scramble_captions(batch: VideoBatch, generator: np.random.Generator) -> VideoBatch:
    """The same videos with captions that name their digits in a random order (the negative control's data).

    Each caption says which digits the video shows but its order is drawn independently of the
    video's, so nothing in the pair says which digit comes first.
    """
    segments = batch.events.shape[1]
    shuffle = np.argsort(generator.random((len(batch.events), segments)), axis=1)
    said = np.take_along_axis(batch.events, shuffle, axis=1)
    return VideoBatch(
        batch.frames,
        batch.labels,
        batch.image_index,
        batch.events,
        batch.pattern,
        batch.lengths,
        caption_tokens(said, segments),
        caption_ids(said),
    )


def shuffle_caption(events: Sequence[int], order: Sequence[int]) -> np.ndarray:
    """The caption with its segments in `order`: exactly the caption of the digits events[order[0]], …

    Since every segment looks alike, a shuffled caption is another video's true caption: the text
    alone cannot say how it was shuffled, only the video can.
    """
    events = _check_events(events)
    return caption_tokens(np.array([[events[k] for k in order]]), len(events))[0]


def candidate_orders(n: int, segments: int, generator: np.random.Generator) -> np.ndarray:
    """(n, group size) order indices per question, the identity (the true order) in column 0.

    Every order when there are at most GROUP_SIZE; else the identity and GROUP_SIZE − 1 others at random.
    """
    grid = layout(segments)
    if len(grid.orders) <= GROUP_SIZE:
        return np.tile(np.arange(len(grid.orders)), (n, 1))
    others = np.argsort(generator.random((n, len(grid.orders) - 1)), axis=1)[:, : GROUP_SIZE - 1] + 1
    return np.concatenate([np.zeros((n, 1), dtype=np.int64), others], axis=1)


def reorder(batch: VideoBatch, orders: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each video with its segments played in each of its `orders` (n, m): frames (n, m, 6, dim), labels (n, m, 6).

    The frames (the very same images) keep their segment; only the segments move.
    """
    grid = layout(batch.events.shape[1])
    index = grid.frame_index[batch.pattern[:, None], orders]  # (n, m, 6)
    rows = np.arange(len(index))[:, None, None]
    return batch.frames[rows, index], batch.labels[rows, index]


@dataclass
class Group6:
    """Group-6 sets: for each group, the candidate orders of one video and its true caption.

    frames: (groups, m, 6, dim) candidates; labels: (groups, m, 6) their frame digits;
    tokens: (groups, L) the caption; answer: (groups,) which candidate is the true video.
    m is 6 in the default world (min(k!, 6) with k segments).
    """

    frames: np.ndarray
    labels: np.ndarray
    tokens: np.ndarray
    answer: np.ndarray

    def head(self, groups: int) -> Group6:
        """The first `groups` groups."""
        return Group6(self.frames[:groups], self.labels[:groups], self.tokens[:groups], self.answer[:groups])


def make_group6(videos: VideoBatch, generator: np.random.Generator | None = None) -> Group6:
    """Group-6 sets from videos: each video's segments in its candidate orders, the caption of the true one.

    Every candidate holds the same images in the same segments, so an order-blind model sees
    identical bags and can do no better than chance. (`generator` draws the other orders when a
    video has more than GROUP_SIZE of them.)
    """
    segments = videos.events.shape[1]
    orders = candidate_orders(len(videos.events), segments, generator or np.random.default_rng(0))
    frames, labels = reorder(videos, orders)
    return Group6(frames, labels, videos.tokens.copy(), np.zeros(len(videos.events), dtype=np.int64))


def make_twin_gallery(pool: Pool, families: int, segments: int, generator: np.random.Generator) -> VideoBatch:
    """A retrieval gallery of reordered twins: `families` digit sets, each in its candidate orders.

    Every video is drawn on its own (its own images and segment lengths), so twins share digits
    and nothing else; with all captions distinct, a caption must find its own video among its
    twins and among the other families. Unlike group-6 and the frame-order task, no two videos
    show the same frames.
    """
    sets = np.array(list(combinations(range(digits.N_CLASSES), segments)), dtype=np.int64)
    chosen = sets[np.sort(generator.choice(len(sets), size=min(families, len(sets)), replace=False))]
    base = np.take_along_axis(chosen, np.argsort(generator.random(chosen.shape), axis=1), axis=1)
    orders = np.array(layout(segments).orders)[candidate_orders(len(base), segments, generator)]  # (f, m, k)
    events = np.take_along_axis(base[:, None, :].repeat(orders.shape[1], axis=1), orders, axis=2)
    return make_videos(pool, events.reshape(-1, segments), generator)


def group6_accuracy(scores: np.ndarray, answer: np.ndarray, tolerance: float = 1e-4) -> float:
    """Share of groups whose true candidate scores highest; a k-way tie at the top counts 1/k.

    The tie rule makes an order-blind scorer (all scores equal) land exactly on chance.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2 or scores.shape[0] != len(answer):
        raise ValueError(f"scores must be (groups, candidates) with one row per answer, got {scores.shape}")
    top = scores.max(axis=1, keepdims=True)
    tied = scores >= top - tolerance
    hit = tied[np.arange(len(answer)), answer]
    return float(np.mean(hit / tied.sum(axis=1)))


def _said(tokens: np.ndarray) -> list[int]:
    """The digits a caption names, in the order it names them."""
    digit_of = {int(t): d for d, t in enumerate(DIGIT_TOKENS)}
    return [digit_of[int(t)] for t in tokens if int(t) in digit_of]


def bag_oracle_scores(group: Group6) -> np.ndarray:
    """The caption-leak oracle: score = 1 when the caption's bag of digits equals the candidate's.

    It knows every frame's true digit and every caption character but not their order; it
    scores all candidates alike, so its group-6 accuracy is chance by construction. If the
    captions or the candidates leaked the order through what they contain, it would score higher.
    """
    scores = np.zeros(group.labels.shape[:2])
    for g in range(len(group.tokens)):
        said = sorted(_said(group.tokens[g]))
        for c in range(group.labels.shape[1]):
            scores[g, c] = float(said == sorted(set(group.labels[g, c].tolist())))
    return scores


def order_oracle_scores(group: Group6) -> np.ndarray:
    """An oracle that reads the order: 1 when the caption's digits appear in the candidate's order."""
    scores = np.zeros(group.labels.shape[:2])
    for g in range(len(group.tokens)):
        said = _said(group.tokens[g])
        for c in range(group.labels.shape[1]):
            scores[g, c] = float(said == list(dict.fromkeys(group.labels[g, c].tolist())))
    return scores
