"""Three-way splits of whole units."""

from __future__ import annotations

import numpy as np
import pytest

from toyscale.core import split_units


def test_split_keeps_units_whole_and_covers_every_sample_once() -> None:
    units = np.repeat(np.arange(200), np.arange(200) % 7 + 1)  # units of 1 to 7 samples
    split = split_units(units, validation=0.2, test=0.25, seed=3)
    together = np.concatenate([split.train, split.validation, split.test])
    assert np.array_equal(np.sort(together), np.arange(units.size))
    sets = [set(units[part].tolist()) for part in (split.train, split.validation, split.test)]
    assert not (sets[0] & sets[1] or sets[0] & sets[2] or sets[1] & sets[2])
    assert [len(s) for s in sets] == [110, 40, 50]


def test_same_seed_same_split_and_the_test_units_do_not_depend_on_the_validation_share() -> None:
    units = np.arange(100)
    a, b = split_units(units, validation=0.2, test=0.3, seed=5), split_units(units, validation=0.2, test=0.3, seed=5)
    assert all(np.array_equal(x, y) for x, y in zip(vars(a).values(), vars(b).values(), strict=True))
    none = split_units(units, validation=0.0, test=0.3, seed=5)
    assert np.array_equal(a.test, none.test) and none.validation.size == 0
    assert not np.array_equal(a.test, split_units(units, validation=0.2, test=0.3, seed=6).test)


def test_bad_shares_and_units_raise_naming_the_argument() -> None:
    with pytest.raises(ValueError, match="validation"):
        split_units(np.arange(10), validation=1.2, test=0.1, seed=0)
    with pytest.raises(ValueError, match="validation \\+ test"):
        split_units(np.arange(10), validation=0.5, test=0.5, seed=0)
    with pytest.raises(ValueError, match="integer"):
        split_units(np.linspace(0, 1, 10), validation=0.2, test=0.2, seed=0)
    with pytest.raises(ValueError, match="too few"):
        split_units(np.arange(2), validation=0.4, test=0.4, seed=0)
    with pytest.raises(ValueError, match="1-D"):
        split_units(np.zeros((2, 2), dtype=int), validation=0.2, test=0.2, seed=0)
