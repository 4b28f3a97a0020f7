"""Train, validation and test splits of whole units (contexts, users, images, sequences).

Every chapter with learned or tuned parts has three splits (CLAIMS.md §3): choices are made on
validation data and the test split is read once per arm. Samples of one unit never straddle two
splits, so a model is never scored on a context it was trained on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .seeding import rng


@dataclass(frozen=True)
class Split:
    """Sample indices of each split, each sorted; together they cover every sample exactly once."""

    train: np.ndarray
    validation: np.ndarray
    test: np.ndarray


def split_units(units: ArrayLike, *, validation: float, test: float, seed: int) -> Split:
    """Split samples into train / validation / test by whole units, at random by `seed`.

    units: one unit id per sample (any integers); validation, test: the shares of the *units* that
    go to each split (the rest train). The test units depend only on `seed` and `test`, so adding a
    validation split never changes what a chapter is tested on.
    """
    ids = np.asarray(units)
    if ids.ndim != 1 or ids.size == 0:
        raise ValueError(f"units must be a non-empty 1-D array of unit ids, got shape {ids.shape}")
    if not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"units must hold integer ids, got dtype {ids.dtype}")
    for name, share in (("validation", validation), ("test", test)):
        if not 0.0 <= share < 1.0:
            raise ValueError(f"{name} must be a share in [0, 1), got {share}")
    if validation + test >= 1.0:
        raise ValueError(f"validation + test must leave units to train on, got {validation} + {test}")
    unique, local = np.unique(ids, return_inverse=True)
    order = rng(seed).permutation(unique.size)
    n_test = round(test * unique.size)
    n_validation = round(validation * unique.size)
    if n_test + n_validation >= unique.size:
        raise ValueError(f"{unique.size} units are too few to split {validation} / {test} and keep some to train on")
    which = np.zeros(unique.size, dtype=np.int8)  # 0 train, 1 validation, 2 test
    which[order[:n_test]] = 2
    which[order[n_test : n_test + n_validation]] = 1
    per_sample = which[local]
    return Split(*(np.flatnonzero(per_sample == k) for k in (0, 1, 2)))
