"""The teacher: a Witten-Bell interpolated character n-gram, with a calculator for arithmetic facts.

It gives a full next-character distribution at every position, is fitted in seconds with numpy
counts, and beats the small student on every domain (the premise of distillation)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from toyscale.llm.corpus import ALPHABET, VOCAB_SIZE, decode


def _context_codes(ids: np.ndarray, length: int) -> np.ndarray:
    """For every position t ≥ length, the previous `length` ids as one base-V integer."""
    n = len(ids)
    code = np.zeros(n - length, dtype=np.int64)
    for j in range(length):
        code = code * VOCAB_SIZE + ids[j : n - length + j]
    return code


class NGramTeacher:
    """A character n-gram LM with Witten–Bell interpolation: a full next-character distribution.

    With C(h, c) the count of character c after the context h (the last k characters), C(h) its
    total and T(h) the number of distinct characters seen after h, the order-k estimate is

        P_k(c | h) = (C(h, c) + T(h) · P_{k−1}(c | h′)) / (C(h) + T(h))     (h′: h less its oldest character)

    and P_k = P_{k−1} for a context never seen. The recursion ends in add-one unigram
    frequencies, P_0(c) = (C(c) + 1) / (n + V), so no character ever has probability zero.
    Counts are kept sorted (NumPy), one table per context length 0 … order − 1.
    """

    def __init__(self, texts: Sequence[np.ndarray], order: int = 5, *, calculator: bool = True) -> None:
        if not isinstance(order, int) or order < 1:
            raise ValueError(f"order must be a positive int, got {order!r}")
        if isinstance(texts, np.ndarray) or not texts:
            raise TypeError("texts must be a non-empty sequence of id arrays (one per domain)")
        arrays = [np.asarray(t).astype(np.int64) for t in texts]
        for a in arrays:
            if a.ndim != 1 or len(a) <= order or a.min() < 0 or a.max() >= VOCAB_SIZE:
                raise ValueError(f"each text must be 1-D ids in [0, {VOCAB_SIZE}) longer than order = {order}")
        self.order = order
        self.calculator = calculator
        unigram = np.bincount(np.concatenate(arrays), minlength=VOCAB_SIZE).astype(np.float64)
        # P_0(c) = (C(c) + 1) / (n + V)
        self.unigram = ((unigram + 1) / (unigram.sum() + VOCAB_SIZE)).astype(np.float32)
        self.tables: list[tuple[np.ndarray, ...]] = []
        for k in range(1, order):
            keys = np.concatenate([_context_codes(a, k) * VOCAB_SIZE + a[k:] for a in arrays])
            pairs, counts = np.unique(keys, return_counts=True)  # sorted (context, next) keys
            contexts, first, types = np.unique(pairs // VOCAB_SIZE, return_index=True, return_counts=True)
            totals = np.add.reduceat(counts, first)
            self.tables.append((pairs % VOCAB_SIZE, counts, contexts, first, types, totals))

    def log_probs(self, windows: np.ndarray) -> np.ndarray:
        """log P(windows[:, t+1] = c | windows[:, ≤ t]) for every t and c: shape (B, L − 1, V).

        The context is cut at the window's start, so the teacher sees exactly the characters a
        student reading the same window sees (and at most order − 1 of them).
        """
        w = np.asarray(windows).astype(np.int64)
        if w.ndim != 2 or w.shape[1] < 2:
            raise ValueError(f"windows must have shape (B, L) with L >= 2, got {w.shape}")
        B, T = w.shape[0], w.shape[1] - 1
        # positions first, (T, B, V): the rows of positions t ≥ k − 1 are then one contiguous block
        p = np.broadcast_to(self.unigram, (T, B, VOCAB_SIZE)).copy()
        for k, (chars, counts, contexts, first, types, totals) in enumerate(self.tables, start=1):
            if k > T:
                break
            # positions t ≥ k − 1 have k characters of context inside the window: w[t−k+1 … t]
            code = np.zeros((T - k + 1, B), dtype=np.int64)
            for j in range(k):
                code = code * VOCAB_SIZE + w[:, j : T - k + 1 + j].T
            where = np.minimum(np.searchsorted(contexts, code.ravel()), len(contexts) - 1)
            seen = np.nonzero(contexts[where] == code.ravel())[0]
            index = where[seen]
            n_types, total = types[index].astype(np.float32), totals[index].astype(np.float32)
            # gather the (next char, count) entries of every seen context into dense rows
            n_entries = types[index]
            row = np.repeat(np.arange(len(seen)), n_entries)
            entry = first[index][row] + np.arange(row.size) - np.repeat(np.cumsum(n_entries) - n_entries, n_entries)
            dense = np.zeros((len(seen), VOCAB_SIZE), dtype=np.float32)
            dense[row, chars[entry]] = counts[entry]
            view = p[k - 1 :].reshape(-1, VOCAB_SIZE)  # a view into p
            # P_k(c | h) = (C(h, c) + T(h) · P_{k−1}(c | h′)) / (C(h) + T(h))
            view[seen] = (dense + n_types[:, None] * view[seen]) / (total + n_types)[:, None]
        p = p.transpose(1, 0, 2)
        if self.calculator:
            p = calculator_override(w, p, CALCULATOR_CONFIDENCE)
        return np.log(p)


_FACT = re.compile(r"\n(\d+)([+\-*])(\d+)=")
CALCULATOR_CONFIDENCE = 0.99  # the probability the calculator puts on the answer's next character


def calculator_override(windows: np.ndarray, p: np.ndarray, confidence: float) -> np.ndarray:
    """The teacher's arithmetic: after `a+b=` (`-`, `*`) seen whole in the window, it knows the answer.

    windows: (B, L) ids; p: (B, L − 1, V) next-character probabilities, changed in place and
    returned. For each fact whose line starts inside the window (a newline before it, so no
    operand is cut off), the characters of the result and the newline after it get
    p ← confidence · onehot(true character) + (1 − confidence) · p. Other positions are unchanged.
    """
    rows, positions, chars = [], [], []
    equals = ALPHABET.index("=")
    for b in np.nonzero((windows == equals).any(axis=1))[0]:
        row = windows[b]
        for fact in _FACT.finditer(decode(row)):
            a, op, c = int(fact.group(1)), fact.group(2), int(fact.group(3))
            answer = str({"+": a + c, "-": a - c, "*": a * c}[op]) + "\n"
            for j, ch in enumerate(answer[: len(row) - fact.end()]):
                # row t of p predicts window[t + 1]: the answer's j-th character is window[end + j]
                rows.append(b)
                positions.append(fact.end() + j - 1)
                chars.append(ALPHABET.index(ch))
    if rows:
        b_index, t_index = np.asarray(rows), np.asarray(positions)
        p[b_index, t_index] *= 1 - confidence
        p[b_index, t_index, np.asarray(chars)] += confidence
    return p
