"""The action tracker: frames and key events logged on their own clocks, paired without leaks."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .game import KEYS


@dataclass
class ActionTracker:
    """Log game frames and key events as two separate streams and align them.

    The paper's tracker runs a screen-capture thread and a keyboard/mouse hook side by side,
    each stamping its events with the time it saw them. Events may reach the log late and out
    of order. `pairs(k)` gives every key event the k latest frames captured *strictly before*
    it: a frame stamped at or after the key press may already show the press's outcome (the
    enemy's HP dropping, the dodge roll), which would leak the answer into the model's input.
    """

    frame_times: list[float] = field(default_factory=list)
    frame_ids: list[int] = field(default_factory=list)  # what the frame is (a row of the frame store)
    key_times: list[float] = field(default_factory=list)
    keys: list[int] = field(default_factory=list)

    def log_frame(self, time: float, frame_id: int) -> None:
        """The capture thread saw frame `frame_id` at `time` (seconds on the shared clock)."""
        self.frame_times.append(float(time))
        self.frame_ids.append(int(frame_id))

    def log_key(self, time: float, key: int) -> None:
        """The keyboard hook saw key `key` (an index into KEYS) pressed at `time`."""
        if not 0 <= int(key) < len(KEYS):
            raise ValueError(f"key must be an index into KEYS (0..{len(KEYS) - 1}), got {key!r}")
        self.key_times.append(float(time))
        self.keys.append(int(key))

    def pairs(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(frame ids (m, k), keys (m,), key times (m,)) for every key with a frame before it.

        For a key at time τ, frame i is eligible when t_i < τ (strictly); the k latest eligible
        frames, oldest first, are its input (the oldest repeated when fewer than k exist).
        Keys that no frame precedes are dropped.
        """
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        frame_times = np.asarray(self.frame_times, dtype=np.float64)
        frame_ids = np.asarray(self.frame_ids, dtype=np.int64)
        # both streams may arrive out of order: sort each by its own timestamps (stable)
        order = np.argsort(frame_times, kind="stable")
        frame_times, frame_ids = frame_times[order], frame_ids[order]
        key_order = np.argsort(np.asarray(self.key_times), kind="stable")
        key_times = np.asarray(self.key_times, dtype=np.float64)[key_order]
        keys = np.asarray(self.keys, dtype=np.int64)[key_order]
        # last = index of the latest frame with t < τ: searchsorted 'left' finds the first t ≥ τ
        last = np.searchsorted(frame_times, key_times, side="left") - 1
        keep = last >= 0
        last, keys, key_times = last[keep], keys[keep], key_times[keep]
        window = np.maximum(last[:, None] - np.arange(k - 1, -1, -1)[None, :], 0)
        return frame_ids[window].reshape(-1, k), keys, key_times

    def leaks(self, k: int) -> int:
        """How many pairs hold a frame stamped at or after their key (0 for a correct tracker)."""
        ids, _, key_times = self.pairs(k)
        time_of = dict(zip(self.frame_ids, self.frame_times, strict=True))
        stamps = np.vectorize(time_of.__getitem__, otypes=[float])(ids) if ids.size else ids
        return int((stamps >= key_times[:, None]).any(axis=1).sum()) if ids.size else 0


def nearest_frame_pairs(frame_times: np.ndarray, key_times: np.ndarray) -> np.ndarray:
    """The naive alignment the tracker avoids: each key gets the frame nearest in time."""
    frame_times, key_times = np.asarray(frame_times), np.asarray(key_times)
    return np.abs(frame_times[None, :] - key_times[:, None]).argmin(axis=1)


def session_clocks(ticks: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Timestamps of a recorded session with one frame and one key per game tick.

    The frame of tick t (the state the player sees) is captured at t + U(0, 0.4) seconds of
    game time; the player's key for tick t is pressed after a reaction delay, at
    t + 0.5 + U(0, 0.45). Both jitters are drawn independently, as two threads would see them.
    """
    rng = np.random.default_rng(seed)
    t = np.arange(ticks, dtype=np.float64)
    return t + rng.uniform(0, 0.4, ticks), t + 0.5 + rng.uniform(0, 0.45, ticks)
