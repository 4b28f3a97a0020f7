"""Caching: hit rates of a small fast tier under skewed ids, and a two-tier embedding table."""

from __future__ import annotations

from collections import Counter, OrderedDict, deque

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from toyscale.recsys.world import zipf_probabilities

# ---------------------------------------------------------------------------------------------
# Caching: hit rates of a small fast tier under skewed ids, and a two-tier table
# ---------------------------------------------------------------------------------------------


def lru_hits(stream: np.ndarray, capacity: int) -> np.ndarray:
    """For every access of `stream`, whether an LRU cache of `capacity` ids held it (True = hit).

    On a miss the id is inserted and, when the cache is full, the least recently used id leaves.
    """
    if capacity < 0:
        raise ValueError(f"capacity must be >= 0, got {capacity}")
    cache: OrderedDict[int, None] = OrderedDict()
    hits = np.zeros(stream.size, dtype=bool)
    for i, key in enumerate(stream.tolist()):
        if key in cache:
            hits[i] = True
            cache.move_to_end(key)
        elif capacity:
            cache[key] = None
            if len(cache) > capacity:
                cache.popitem(last=False)
    return hits


def static_top_k(profile: np.ndarray, n_rows: int, capacity: int) -> np.ndarray:
    """A static cache: the `capacity` ids most frequent in the `profile` stream (ties: lower id first)."""
    if not 0 <= capacity <= n_rows:
        raise ValueError(f"capacity must be in [0, {n_rows}], got {capacity}")
    counts = np.bincount(profile, minlength=n_rows)
    return np.argsort(-counts, kind="stable")[:capacity]


def static_hits(stream: np.ndarray, hot: np.ndarray, n_rows: int) -> np.ndarray:
    """For every access of `stream`, whether it falls in the static cache `hot`."""
    is_hot = np.zeros(n_rows, dtype=bool)
    is_hot[hot] = True
    return is_hot[stream]


def zipf_top_share(n_rows: int, exponent: float, capacity: int) -> float:
    """The best possible hit rate of a cache of `capacity` rows: Σ_{r ≤ k} P(r) of the finite Zipf law."""
    return float(zipf_probabilities(n_rows, exponent)[:capacity].sum())


class TwoTierEmbedding(nn.Module):
    """An embedding table split into a small hot tier and a large cold tier, pooled by sum.

    tier(i) and slot(i) say where row i lives; a lookup gathers W_hot[slot(i)] for hot ids and
    W_cold[slot(i)] for the rest, and e_n = Σ_l W_{tier(id_{n,l})}[slot(id_{n,l})]. Each row lives in
    exactly one tier, so this computes the same numbers as one table (`merged_weight`).
    """

    def __init__(self, weight: Tensor, hot: Tensor) -> None:
        super().__init__()
        n_rows = weight.shape[0]
        is_hot = torch.zeros(n_rows, dtype=torch.bool, device=weight.device)
        is_hot[hot] = True
        if int(is_hot.sum()) != hot.numel():
            raise ValueError("hot must hold distinct row ids")
        slot = torch.empty(n_rows, dtype=torch.long, device=weight.device)
        slot[is_hot] = torch.arange(int(is_hot.sum()), device=weight.device)
        slot[~is_hot] = torch.arange(int((~is_hot).sum()), device=weight.device)
        self.register_buffer("is_hot", is_hot)
        self.register_buffer("slot", slot)
        self.hot = nn.Parameter(weight.detach()[is_hot].clone())
        self.cold = nn.Parameter(weight.detach()[~is_hot].clone())

    def forward(self, ids: Tensor) -> Tensor:
        """Sum-pooled embeddings (N, d) of ids (N, L)."""
        hot, slot = self.is_hot[ids], self.slot[ids]
        # the hot tier answers hot ids; a cold lookup of a hot id reads a harmless row and is masked out
        rows = torch.where(
            hot[..., None],
            F.embedding(slot.clamp_max(self.hot.shape[0] - 1), self.hot),
            F.embedding(slot.clamp_max(self.cold.shape[0] - 1), self.cold),
        )
        # e_n = Σ_l W_tier[slot]
        return rows.sum(dim=1)

    def merged_weight(self) -> Tensor:
        """The equivalent single table: row i is W_hot[slot(i)] or W_cold[slot(i)]."""
        merged = torch.empty(self.is_hot.shape[0], self.hot.shape[1], dtype=self.hot.dtype, device=self.hot.device)
        merged[self.is_hot] = self.hot.detach()
        merged[~self.is_hot] = self.cold.detach()
        return merged


class SingleTable(nn.Module):
    """The reference: one table, pooled by sum exactly as TwoTierEmbedding pools (gather, then sum)."""

    def __init__(self, weight: Tensor) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight.detach().clone())

    def forward(self, ids: Tensor) -> Tensor:
        # e_n = Σ_l W[id_{n,l}]
        return F.embedding(ids, self.weight).sum(dim=1)


# ---------------------------------------------------------------------------------------------
# Traffic: rows a two-tier table moves over the slow link, step by step, under a drifting stream
# ---------------------------------------------------------------------------------------------

POLICIES = ("static", "lru")  # how the fast tier chooses its rows


def drifting_stream(
    n_rows: int, exponent: float, size: int, *, drift: float, segments: int, generator: np.random.Generator
) -> np.ndarray:
    """`size` Zipf ids whose hot set drifts: the stream is cut into `segments` equal parts and, before
    each part after the first, a share `drift` of the ranks trade their ids in random pairs.

    The popularity law stays the same; which rows are hot changes (yesterday's best seller is not
    today's). drift = 0 is a fixed law; drift = 1 redraws the rank of every row each segment.
    """
    if not 0 <= drift <= 1 or segments < 1 or size < segments:
        raise ValueError(f"need 0 <= drift <= 1 and 1 <= segments <= size, got {drift}, {segments}, {size}")
    order = generator.permutation(n_rows)
    p = zipf_probabilities(n_rows, exponent)
    parts = []
    for i, n in enumerate(np.diff(np.linspace(0, size, segments + 1).round().astype(int))):
        if i:
            moved = generator.choice(n_rows, size=2 * (int(drift * n_rows) // 2), replace=False)
            a, b = moved[: len(moved) // 2], moved[len(moved) // 2 :]
            order[a], order[b] = order[b].copy(), order[a].copy()
        parts.append(order[generator.choice(n_rows, size=n, p=p)])
    return np.concatenate(parts).astype(np.int64)


def slow_tier_rows(
    steps: list[np.ndarray],
    policy: str,
    capacity: int,
    profile: np.ndarray,
    n_rows: int,
    *,
    refresh: int = 0,
    admit_after: int = 1,
    admission_window: int = 4,
    frozen: bool = False,
) -> np.ndarray:
    """Rows moved over the slow link at each training step (reads of missing rows + write-backs).

    Each step looks up the unique ids of its batch. A single table (capacity 0) reads every one
    from the slow tier and writes every updated row back.

    'static': the fast tier holds the `capacity` rows most frequent in `profile`; a miss is read and
    written back. With `refresh` = R > 0 the hot set is recounted every R steps over the latest
    window of as many ids as the profile holds, and the swap is paid for: every row that enters is
    read, every row that leaves is written back.

    'lru': the fast tier holds the `capacity` most recently used rows, warmed on `profile`; a missed
    row enters the fast tier (the row it evicts is written back, since embeddings change as they
    train) once it has missed on `admit_after` of the last `admission_window` steps, this one
    included (1: on every miss, plain LRU; 2: a row seen once is kept out, as 2Q and TinyLFU's
    doorkeeper do); a row kept out is read and written back. `frozen` stops every update after the
    warm-up: the tier keeps the profile's most recent rows (recency without adaptation).
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    if refresh < 0 or admit_after < 1 or admission_window < admit_after:
        raise ValueError(
            f"need refresh >= 0 and 1 <= admit_after <= admission_window, got {refresh}, {admit_after}, "
            f"{admission_window}"
        )
    if policy == "static":
        return _static_rows(steps, capacity, profile, n_rows, refresh)
    return _lru_rows(steps, capacity, profile, admit_after, admission_window, frozen)


def _static_rows(steps: list[np.ndarray], capacity: int, profile: np.ndarray, n_rows: int, refresh: int) -> np.ndarray:
    moved = np.zeros(len(steps), dtype=np.int64)
    is_hot = np.zeros(n_rows, dtype=bool)
    is_hot[static_top_k(profile, n_rows, capacity)] = True
    recent = profile
    for i, ids in enumerate(steps):
        if refresh and i and i % refresh == 0:
            fresh = np.zeros(n_rows, dtype=bool)
            fresh[static_top_k(recent, n_rows, capacity)] = True
            moved[i] += int((fresh & ~is_hot).sum()) + int((is_hot & ~fresh).sum())  # reads in, write-backs out
            is_hot = fresh
        moved[i] += 2 * int((~is_hot[np.unique(ids)]).sum())
        recent = np.concatenate([recent, ids])[-profile.size :]
    return moved


def _lru_rows(
    steps: list[np.ndarray], capacity: int, profile: np.ndarray, admit_after: int, window: int, frozen: bool
) -> np.ndarray:
    moved = np.zeros(len(steps), dtype=np.int64)
    cache: OrderedDict[int, None] = OrderedDict()
    for key in profile.tolist():  # warm the cache on the profile, as the previous window left it
        if capacity:
            cache[key] = None
            cache.move_to_end(key)
            if len(cache) > capacity:
                cache.popitem(last=False)
    misses: deque[list[int]] = deque(maxlen=window - 1)  # the rows missed on each of the previous steps
    for i, ids in enumerate(steps):
        reads = writes = 0
        missed_before = Counter(key for step in misses for key in step)
        missed = []
        for key in np.unique(ids).tolist():
            if key in cache:
                if not frozen:
                    cache.move_to_end(key)
                continue
            reads += 1
            missed.append(key)
            if frozen or not capacity or missed_before[key] + 1 < admit_after:
                writes += 1
                continue
            cache[key] = None
            if len(cache) > capacity:
                cache.popitem(last=False)
                writes += 1
        misses.append(missed)
        moved[i] = reads + writes
    return moved
