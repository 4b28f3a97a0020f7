"""The shared digits module: loading, deterministic stratified splits, classes, bad input."""

import numpy as np
import pytest

from toyscale.genmm import digits


def test_load_gives_uint8_images_and_labels():
    images, labels = digits.load()
    assert images.shape == (1797, 8, 8) and images.dtype == np.uint8
    assert images.min() == 0 and images.max() == digits.MAX_VALUE
    assert labels.shape == (1797,) and set(np.unique(labels)) == set(range(10))
    with pytest.raises(ValueError):
        images[0, 0, 0] = 1  # read-only: the cached copy cannot be changed by accident


def test_split_is_deterministic_disjoint_and_stratified():
    a, b = digits.split(0.3, seed=0), digits.split(0.3, seed=0)
    np.testing.assert_array_equal(a.test_index, b.test_index)
    assert not set(a.train_index) & set(a.test_index)
    assert len(a.train_index) + len(a.test_index) == 1797
    for digit in range(10):
        share = np.sum(a.test_labels == digit) / np.sum(digits.load()[1] == digit)
        assert share == pytest.approx(len(a.test_labels) / 1797, abs=0.01)
    assert not np.array_equal(digits.split(0.3, seed=1).test_index, a.test_index)
    assert a.unseen_fraction() > 0.95


def test_by_class_and_to_unit():
    split = digits.split()
    groups = digits.by_class(split.train_images, split.train_labels)
    assert sorted(groups) == list(range(10))
    assert sum(len(g) for g in groups.values()) == len(split.train_labels)
    unit = digits.to_unit(split.train_images)
    assert unit.dtype == np.float32 and unit.min() == 0.0 and unit.max() == 1.0


def test_bad_input():
    with pytest.raises(ValueError, match="test_fraction"):
        digits.split(1.5)
    with pytest.raises(ValueError, match="images"):
        digits.to_unit(np.full((1, 8, 8), 17))
    with pytest.raises(ValueError, match="same length"):
        digits.by_class(np.zeros((3, 8, 8)), np.zeros(2))
