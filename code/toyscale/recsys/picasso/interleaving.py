"""Interleaving: a producer that parses and hashes raw records, pipelined with training."""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from toyscale.core.seeding import rng
from toyscale.recsys.world import FieldLog

from .packing import (
    WideAndDeep,
)
from .timing import (
    _sync,
)

# ---------------------------------------------------------------------------------------------
# Interleaving: a producer that parses and hashes raw records, pipelined with training
# ---------------------------------------------------------------------------------------------

# splitmix64's finalizer constants: a fast, well-mixing 64-bit hash
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


@dataclass(frozen=True)
class RawRecords:
    """Records as the data loader reads them: text lines of F·L feature keys, 16 hex digits each.

    A key is what upstream logging wrote for a feature value (a 64-bit hash of a string, say),
    written as `%016x` and followed by a tab (a newline after the last key of a record). The trainer
    must parse the text and hash each key to a row; `salt[f]` makes field f's hash its own.
    """

    data: bytes  # N · F · L · 17 bytes of ASCII
    n_fields: int  # F
    ids_per_field: int  # L
    salt: np.ndarray  # (F,) uint64

    @property
    def record_bytes(self) -> int:
        return self.n_fields * self.ids_per_field * KEY_BYTES

    def head(self, n_records: int) -> RawRecords:
        """The first `n_records` records."""
        return RawRecords(self.data[: n_records * self.record_bytes], self.n_fields, self.ids_per_field, self.salt)


KEY_BYTES = 17  # 16 hex digits and a separator
_NIBBLE_SHIFTS = np.arange(60, -1, -4, dtype=np.uint64)  # the weight 16^(15−j) of digit j, as a shift


def encode_records(log: FieldLog, *, seed: int) -> RawRecords:
    """Turn a log's ids into text records: each (field, id) gets a random 64-bit key, as a logged value would."""
    generator = rng(seed)
    n, n_fields, length = log.ids.shape
    keys = generator.integers(0, 2**63, size=(n_fields, log.n_rows), dtype=np.uint64)
    raw = keys[np.arange(n_fields)[None, :, None], log.ids].reshape(n, n_fields * length)
    # 16 hex digits per key, most significant first
    digits = ((raw[..., None] >> _NIBBLE_SHIFTS) & np.uint64(15)).astype(np.uint8)
    text = np.where(digits < 10, digits + ord("0"), digits - 10 + ord("a")).astype(np.uint8)
    separator = np.full((n, n_fields * length, 1), ord("\t"), dtype=np.uint8)
    separator[:, -1] = ord("\n")
    salt = generator.integers(0, 2**63, size=n_fields, dtype=np.uint64)
    data = np.concatenate([text, separator], axis=2).tobytes()
    return RawRecords(data=data, n_fields=n_fields, ids_per_field=length, salt=salt)


def parse_and_hash(records: RawRecords, start: int, stop: int, n_rows: int, *, rounds: int = 2) -> np.ndarray:
    """The producer stage: parse text records start..stop−1 and hash their keys to packed-table rows.

    key = Σ_j digit_j · 16^(15−j) from the text; row = o_f + h(key ⊕ salt_f) mod V, with h the
    splitmix64 finalizer applied `rounds` times and o_f = f·V the field's offset in the packed
    table. NumPy releases the GIL in these loops, so a producer thread can run beside training.
    """
    if not 0 <= start < stop <= len(records.data) // records.record_bytes:
        raise ValueError(f"start, stop must satisfy 0 <= start < stop <= n_records, got {start}, {stop}")
    view = memoryview(records.data)[start * records.record_bytes : stop * records.record_bytes]
    n_keys = records.n_fields * records.ids_per_field
    # parse: ASCII hex digits -> nibbles ('0'..'9' -> 0..9, 'a'..'f' -> 10..15) -> 64-bit keys
    chars = np.frombuffer(view, dtype=np.uint8).reshape(stop - start, n_keys, KEY_BYTES)[..., :16]
    nibbles = chars - np.uint8(ord("0"))
    nibbles = np.where(nibbles > 9, nibbles - np.uint8(ord("a") - ord("0") - 10), nibbles)
    keys = (nibbles.astype(np.uint64) << _NIBBLE_SHIFTS).sum(axis=2, dtype=np.uint64)
    x = keys.reshape(stop - start, records.n_fields, records.ids_per_field) ^ records.salt[None, :, None]
    with np.errstate(over="ignore"):
        for _ in range(rounds):
            # splitmix64: x ^= x >> 30; x *= C1; x ^= x >> 27; x *= C2; x ^= x >> 31
            x = x ^ (x >> np.uint64(30))
            x = x * _MIX1
            x = x ^ (x >> np.uint64(27))
            x = x * _MIX2
            x = x ^ (x >> np.uint64(31))
    # row = o_f + h mod V
    rows = (x % np.uint64(n_rows)).astype(np.int64)
    return rows + (np.arange(records.n_fields, dtype=np.int64) * n_rows)[None, :, None]


@dataclass(frozen=True)
class Event:
    """One stage's work on one micro-batch: which stage, which micro-batch, start and end (s)."""

    stage: str  # "produce" or "train"
    micro: int
    start: float
    end: float


def _micro_spans(n_records: int, batch_size: int, micro_batches: int) -> list[list[tuple[int, int]]]:
    """For every whole batch, the record spans of its micro-batches."""
    if batch_size % micro_batches:
        raise ValueError(f"batch_size {batch_size} must be a multiple of micro_batches {micro_batches}")
    micro = batch_size // micro_batches
    return [
        [(b + m * micro, b + (m + 1) * micro) for m in range(micro_batches)]
        for b in range(0, n_records - batch_size + 1, batch_size)
    ]


def train_pipeline(
    model: WideAndDeep,
    records: RawRecords,
    y: np.ndarray,
    *,
    batch_size: int,
    micro_batches: int,
    lr: float,
    interleave: bool,
    queue_depth: int = 4,
    hash_rounds: int = 2,
) -> list[Event]:
    """One pass of training over `records` in micro-batches, serial or interleaved; returns the timeline.

    Every batch of `batch_size` records is split into `micro_batches` micro-batches; each is
    parsed and hashed (produce) and its gradient accumulated (train), then Adam steps once per
    batch. Serial: produce and train alternate in one thread. Interleaved (D-interleaving): a
    producer thread runs ahead through a bounded queue of `queue_depth` micro-batches while this
    thread trains. The arithmetic is the same in both, in the same order, so the trained model is
    bit-identical.
    """
    if not model.packed:
        raise ValueError("train_pipeline needs a packed model (the producer emits packed-table rows)")
    if queue_depth < 1:
        raise ValueError(f"queue_depth must be >= 1, got {queue_depth}")
    on = next(model.parameters()).device
    n_rows = model.deep.bag.num_embeddings // model.n_fields
    spans = _micro_spans(len(y), batch_size, micro_batches)
    labels = torch.as_tensor(y, dtype=torch.long, device=on)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    events: list[Event] = []
    origin = time.perf_counter()

    def produce(span: tuple[int, int]) -> Tensor:
        return torch.from_numpy(parse_and_hash(records, *span, n_rows, rounds=hash_rounds)).to(on)

    def train_micro(rows: Tensor, span: tuple[int, int]) -> None:
        deep, wide = model.deep(rows, packed=True), model.wide(rows, packed=True)
        logits = wide.sum(dim=(1, 2)) + model.mlp(deep.flatten(1)).squeeze(1)
        target = labels[span[0] : span[1]].float()
        # Σ_n log loss / batch_size: micro-batch gradients add up to the batch's
        loss = F.binary_cross_entropy_with_logits(logits, target, reduction="sum") / batch_size
        loss.backward()

    flat = [span for batch in spans for span in batch]
    inbox: queue.Queue = queue.Queue(maxsize=queue_depth)

    def producer() -> None:
        try:
            for k, span in enumerate(flat):
                start = time.perf_counter() - origin
                rows = produce(span)
                events.append(Event("produce", k, start, time.perf_counter() - origin))
                inbox.put(rows)
        except BaseException as error:  # hand the failure to the training thread
            inbox.put(error)

    thread = None
    if interleave:
        thread = threading.Thread(target=producer, daemon=True)
        thread.start()
    k = 0
    try:
        for batch in spans:
            optimizer.zero_grad()
            for span in batch:
                if interleave:
                    rows = inbox.get()
                    if isinstance(rows, BaseException):
                        raise rows
                else:
                    start = time.perf_counter() - origin
                    rows = produce(span)
                    events.append(Event("produce", k, start, time.perf_counter() - origin))
                start = time.perf_counter() - origin
                train_micro(rows, span)
                if span is batch[-1]:
                    optimizer.step()
                _sync(on)
                events.append(Event("train", k, start, time.perf_counter() - origin))
                k += 1
    finally:
        if thread is not None:
            thread.join()
    return events
