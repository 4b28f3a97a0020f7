"""The 8×8 handwritten digits that ship with scikit-learn, and deterministic train/test splits.

`sklearn.datasets.load_digits` holds 1,797 grey images of the digits 0–9, 8×8 pixels with
integer intensities 0–16 (Alpaydin and Kaynak's UCI "optical recognition of handwritten digits"
test set, bundled inside scikit-learn: nothing is downloaded). The genmm chapters share them:
BADiff generates digits and transmits them, Victor strings them into little videos.

A split is stratified by class and fixed by its seed, and the two sides share no image index,
so a test image is one a model never saw in training (the data set holds a few pixel-identical
duplicates, which a split by index cannot separate; `unseen_fraction` counts them).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from toyscale.core.seeding import rng

MAX_VALUE = 16  # the brightest intensity of a pixel; the darkest is 0
SIDE = 8  # images are SIDE × SIDE pixels
N_CLASSES = 10


@lru_cache(maxsize=1)
def _load() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images = np.rint(bunch.images).astype(np.uint8)
    labels = bunch.target.astype(np.int64)
    images.setflags(write=False)
    labels.setflags(write=False)
    return images, labels


def load() -> tuple[np.ndarray, np.ndarray]:
    """All 1,797 images as uint8 of shape (n, 8, 8) with values 0–16, and their labels 0–9.

    The arrays are read-only views of one cached copy: copy before changing them.
    """
    return _load()


def to_unit(images: np.ndarray) -> np.ndarray:
    """Intensities 0–16 (any integer or float array) as float32 in [0, 1]: x = v / 16."""
    images = np.asarray(images)
    if images.size and (images.min() < 0 or images.max() > MAX_VALUE):
        raise ValueError(f"images must hold intensities in [0, {MAX_VALUE}], got [{images.min()}, {images.max()}]")
    return images.astype(np.float32) / MAX_VALUE


@dataclass(frozen=True)
class DigitSplit:
    """A train/test split of the digits: images (uint8, 0–16), labels, and the indices into `load()`."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    train_index: np.ndarray
    test_index: np.ndarray

    def unseen_fraction(self) -> float:
        """The share of test images whose exact pixels appear nowhere in the training images."""
        seen = {image.tobytes() for image in self.train_images}
        return float(np.mean([image.tobytes() not in seen for image in self.test_images]))


def split(test_fraction: float = 0.3, seed: int = 0) -> DigitSplit:
    """A stratified split: in every class, round(test_fraction · n_class) random images go to test.

    Same seed, same split. The two sides are disjoint by image index.
    """
    if not isinstance(test_fraction, float | int) or not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction!r}")
    images, labels = load()
    generator = rng(seed)
    test = []
    for digit in range(N_CLASSES):
        members = np.flatnonzero(labels == digit)
        n_test = round(test_fraction * members.size)
        if n_test < 1 or n_test >= members.size:
            raise ValueError(f"test_fraction={test_fraction} leaves class {digit} with an empty side")
        test.append(generator.choice(members, size=n_test, replace=False))
    test_index = np.sort(np.concatenate(test))
    train_index = np.setdiff1d(np.arange(labels.size), test_index)
    return DigitSplit(
        train_images=images[train_index],
        train_labels=labels[train_index],
        test_images=images[test_index],
        test_labels=labels[test_index],
        train_index=train_index,
        test_index=test_index,
    )


def by_class(images: np.ndarray, labels: np.ndarray) -> dict[int, np.ndarray]:
    """The images of each digit: {digit: images[labels == digit]} for the digits 0–9."""
    images, labels = np.asarray(images), np.asarray(labels)
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"images and labels must have the same length, got {images.shape[0]} and {labels.shape[0]}")
    return {digit: images[labels == digit] for digit in range(N_CLASSES)}


def reference_arrays() -> dict[str, np.ndarray]:
    """The images (uint8), their labels and the default split's test mask: what the data card fingerprints."""
    images, labels = load()
    mask = np.zeros(labels.size, dtype=np.uint8)
    mask[split().test_index] = 1
    return {"images": np.ascontiguousarray(images), "labels": labels.astype(np.int64), "test_mask": mask}
