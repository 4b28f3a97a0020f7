"""Seeds: one call makes every random number in a run reproducible."""

from __future__ import annotations

import random

import numpy as np
import torch

#: Seeds the book's tables, tests and `reproduce` check by default (CLAIMS.md §4).
BOOK_SEEDS = tuple(range(5))
#: The first calibration seed: margins are set on seeds from here on, never on the book's seeds.
CALIBRATION_SEED_START = 1000


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python, NumPy and torch (CPU and CUDA) with `seed`; return a torch.Generator seeded the same way.

    Functions that draw random numbers should still take their own `seed` or generator, so that
    one part of an experiment does not shift the random stream of another.
    """
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    generator = torch.Generator()
    generator.manual_seed(seed)
    return generator


def rng(seed: int) -> np.random.Generator:
    """A NumPy generator for `seed`: the way every data generator in the book draws its numbers."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    return np.random.default_rng(seed)
