"""Action-of-thought (AoT): the token vocabulary, the thought slots, the formats, the recorded data."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from . import game
from .tracker import ActionTracker, nearest_frame_pairs, session_clocks

# --- the vocabulary ---------------------------------------------------------------------------
PAD, BOS, EOS, TRUNC, VID = range(5)
SPECIAL = ("<pad>", "<bos>", "<eos>", "<TRUNC>", "<video>")
ACTION0 = len(SPECIAL)  # the ten key tokens follow the special tokens
# The explanation: one token per slot, each slot with its own values (so a sequence is unambiguous).
SLOTS = {
    "phase": game.PHASES,
    "strike": ("none", "now", "next", "later"),
    "distance": ("1", "2", "3", "4+"),
    "hp": ("low", "mid", "high"),
    "potions": ("0", "1", "2"),
    "ready": tuple(
        "+".join(n for n, bit in zip(("dodge", "heavy", "immob"), bits, strict=True) if bit) or "none"
        for bits in ((i & 1, i >> 1 & 1, i >> 2 & 1) for i in range(8))
    ),
}
SLOT_NAMES = tuple(SLOTS)
SLOT_OFFSET = {}
_next = ACTION0 + len(game.KEYS)
for _name, _values in SLOTS.items():
    SLOT_OFFSET[_name] = _next
    _next += len(_values)
VOCAB = _next
TOKENS = (
    *SPECIAL,
    *(f"[{k}]" for k in game.KEYS),
    *(f"{name}={v}" for name, values in SLOTS.items() for v in values),
)
FORMATS = ("none", "full", "truncated", "video")
MAX_LEN = 2 + len(SLOTS) + 2  # the longest sequence: <bos>, thoughts, action, <TRUNC>/<eos> ... <eos>


def thought_values(b: game.Battle) -> np.ndarray:
    """The ground-truth explanation of each fight's current state: (n, 6) slot value indices.

    phase; when the strike lands (none / now: at the end of this tick / next tick / later);
    distance (1, 2, 3, 4+); own HP (≤4, 5–7, 8–10); potions; which cooldowns are ready.
    """
    s = b.strike_in
    strike = np.select([s < 0, s == 0, s == 1], [0, 1, 2], default=3)
    distance = np.clip(b.distance, 1, 4) - 1
    hp = np.select([b.hp <= 4, b.hp <= 7], [0, 1], default=2)
    ready = (b.dodge_cd == 0) * 1 + (b.heavy_cd == 0) * 2 + (b.immobilize_cd == 0) * 4
    return np.stack([b.phase, strike, distance, hp, b.potions, ready], axis=1).astype(np.int64)


def thought_tokens(values: np.ndarray) -> np.ndarray:
    """Slot values (n, 6) → their token ids."""
    offsets = np.array([SLOT_OFFSET[n] for n in SLOT_NAMES])
    return np.asarray(values) + offsets[None, :]


def sequences(fmt: str, actions: np.ndarray, thoughts: np.ndarray | None = None) -> np.ndarray:
    """Token sequences (n, MAX_LEN), padded with <pad>, in one of the AoT formats.

    none:      <bos> [action] <eos>
    full:      <bos> thought₁ … thought₆ [action] <eos>            (explain, then act)
    truncated: <bos> [action] <TRUNC> thought₁ … thought₆ <eos>    (act, then explain)
    video:     <video> [action₁] … [action_{k−1}] <eos>            (the actions between a clip's frames)
    For 'video', `actions` is (n, k − 1); otherwise (n,) key indices and `thoughts` (n, 6) values.
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    actions = np.asarray(actions)
    n = len(actions)
    out = np.full((n, MAX_LEN), PAD, dtype=np.int64)
    col = lambda x: np.asarray(x).reshape(n, -1)  # noqa: E731
    if fmt == "video":
        parts = [col(np.full(n, VID)), actions + ACTION0, col(np.full(n, EOS))]
    else:
        if thoughts is None and fmt != "none":
            raise ValueError(f"format {fmt!r} needs the thought values")
        act = col(actions + ACTION0)
        bos, eos = col(np.full(n, BOS)), col(np.full(n, EOS))
        if fmt == "none":
            parts = [bos, act, eos]
        elif fmt == "full":
            parts = [bos, thought_tokens(thoughts), act, eos]
        else:
            parts = [bos, act, col(np.full(n, TRUNC)), thought_tokens(thoughts), eos]
    joined = np.concatenate(parts, axis=1)
    out[:, : joined.shape[1]] = joined
    return out


def describe(tokens: np.ndarray | list[int]) -> str:
    """A token sequence as text, e.g. '[space] <TRUNC> phase=windup_sweep strike=now …'."""
    return " ".join(TOKENS[int(t)] for t in tokens if int(t) != PAD)


#: The furthest tick ahead whose expert key a recording keeps for each event (the latency-aware target).
MAX_LEAD = 3


@dataclass
class Recording:
    """Expert play recorded through the tracker.

    frames: (F, HEIGHT·WIDTH) every captured frame; windows: (m, k) frame rows per key event,
    oldest first; actions: (m,) the key; thoughts: (m, 6) the explanation of the state in the
    newest input frame; video: (m, k − 1) the keys pressed between the window's frames
    (video_ok marks windows with k distinct frames); ahead: (m, MAX_LEAD) the key the expert would
    press j = 1, 2, … ticks after the event had nothing been pressed in between (the fight stepped on
    with no key and the recorded enemy draws; IDLE when it ends first): what a model whose decision
    takes j ticks should press; fight: (m,) the fight
    each event belongs to (the unit of the train / validation / test split); fight_leaks,
    fight_naive, fight_pairs: per fight, the pairs with a frame at or after the key (must be 0),
    what nearest-in-time pairing would have leaked, and the pairs made.
    """

    frames: np.ndarray
    windows: np.ndarray
    actions: np.ndarray
    thoughts: np.ndarray
    video: np.ndarray
    video_ok: np.ndarray
    ahead: np.ndarray
    fight: np.ndarray
    fight_leaks: np.ndarray
    fight_naive: np.ndarray
    fight_pairs: np.ndarray

    def _fights(self) -> np.ndarray:
        return np.unique(self.fight)

    @property
    def leaks(self) -> int:
        """Pairs of this recording's fights with a frame at or after their key."""
        return int(self.fight_leaks[self._fights()].sum())

    @property
    def naive_leaks(self) -> int:
        """Pairs that nearest-in-time pairing would have given a frame at or after the key."""
        return int(self.fight_naive[self._fights()].sum())

    @property
    def pairs(self) -> int:
        return int(self.fight_pairs[self._fights()].sum())

    def take(self, rows: np.ndarray) -> Recording:
        """The key events `rows` (whole fights, as `core.split_units` gives them); the frame store is shared."""
        rows = np.asarray(rows)
        per_event = ("windows", "actions", "thoughts", "video", "video_ok", "ahead", "fight")
        return replace(self, **{name: getattr(self, name)[rows] for name in per_event})


def record(n_games: int, k: int, seed: int) -> Recording:
    """Play `n_games` expert fights and align their frames and keys with the ActionTracker."""
    b = game.new_battles(n_games, seed)
    rng = np.random.default_rng(seed + 1)
    frames, states, keys, battles, attacks = [], [], [], [], []
    while not b.done.all():
        live = ~b.done
        frames.append(game.render(b).reshape(n_games, -1))
        states.append(thought_values(b))
        key = game.expert_keys(b)
        keys.append(np.where(live, key, game.IDLE))
        battles.append(b)
        attacks.append(game.draw_attacks(rng, n_games))
        b = game.step(b, key, attacks[-1])
    ticks = len(frames)
    attacks += [np.full(n_games, game.WINDUP_THRUST)] * MAX_LEAD
    # the counterfactual keys: from each tick's state, step on with no key pressed for j ticks
    later = np.full((n_games, ticks, MAX_LEAD), game.IDLE)
    for t, state in enumerate(battles):
        for j in range(MAX_LEAD):
            state = game.step(state, np.full(n_games, game.IDLE), attacks[t + j])
            later[:, t, j] = np.where(state.done, game.IDLE, game.expert_keys(state))
    frames_arr = np.stack(frames, axis=1).reshape(n_games * ticks, -1).astype(np.float32)
    states_arr = np.stack(states, axis=1).reshape(n_games * ticks, -1)
    keys_arr = np.stack(keys, axis=1)
    windows, actions, video, video_ok, ahead, fight = [], [], [], [], [], []
    leaks, naive, total = (np.zeros(n_games, dtype=np.int64) for _ in range(3))
    clock_rng = np.random.default_rng(seed + 2)
    for g in range(n_games):
        played = int((keys_arr[g] != game.IDLE).sum())
        frame_t, key_t = session_clocks(played, int(clock_rng.integers(2**31)))
        tracker = ActionTracker()
        # the two threads flush their buffers in their own order: log them shuffled
        for i in clock_rng.permutation(played):
            tracker.log_frame(frame_t[i], g * ticks + i)
        for i in clock_rng.permutation(played):
            tracker.log_key(key_t[i], keys_arr[g, i])
        ids, pressed, _ = tracker.pairs(k)
        leaks[g] = tracker.leaks(k)
        total[g] = len(pressed)
        naive[g] = int((frame_t[nearest_frame_pairs(frame_t, key_t)] >= key_t).sum())
        tick_of = ids[:, -1] - g * ticks
        windows.append(ids)
        actions.append(pressed)
        before = tick_of[:, None] - np.arange(k - 1, 0, -1)[None, :]
        video_ok.append(before.min(axis=1) >= 0)
        video.append(keys_arr[g, np.clip(before, 0, None)])
        ahead.append(later[g, tick_of])
        fight.append(np.full(len(pressed), g))
    windows_arr = np.concatenate(windows)
    return Recording(
        frames=frames_arr,
        windows=windows_arr,
        actions=np.concatenate(actions),
        thoughts=states_arr[windows_arr[:, -1]],
        video=np.concatenate(video),
        video_ok=np.concatenate(video_ok),
        ahead=np.concatenate(ahead),
        fight=np.concatenate(fight),
        fight_leaks=leaks,
        fight_naive=naive,
        fight_pairs=total,
    )


def reference_arrays() -> dict[str, np.ndarray]:
    """The recorded expert play of seed 0 (300 fights, k = 3) as integer arrays: what the data card fingerprints.

    Frame pixels take the values 0, 0.35, 0.5, 0.7 and 1, stored exactly as twentieths (uint8).
    """
    rec = record(300, 3, seed=0)
    return {
        "frames": np.round(rec.frames * 20).astype(np.uint8),
        "windows": rec.windows.astype(np.int64),
        "actions": rec.actions.astype(np.int64),
        "thoughts": rec.thoughts.astype(np.int64),
        "video": rec.video.astype(np.int64),
        "ahead": rec.ahead.astype(np.int64),
        "fight": rec.fight.astype(np.int64),
    }
