"""The quality judge: a small digit classifier, the Fréchet distance in its features, class diversity."""

from __future__ import annotations

import math
import warnings
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F
from scipy import linalg
from torch import Tensor, nn

from toyscale.core.seeding import seed_everything
from toyscale.genmm import digits

from .codec import (
    PIXELS,
    _check_images,
)

# ---------------------------------------------------------------------------------------------
# The quality judge: a small digit classifier, Fréchet distance, diversity
# ---------------------------------------------------------------------------------------------


class DigitClassifier(nn.Module):
    """An MLP 64 → hidden → features → 10 whose penultimate layer gives the Fréchet features."""

    def __init__(self, hidden: int = 64, features: int = 32) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(PIXELS, hidden), nn.ReLU(), nn.Linear(hidden, features), nn.ReLU())
        self.head = nn.Linear(features, digits.N_CLASSES)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.body(x))


@lru_cache(maxsize=4)
def train_classifier(epochs: int = 150, seed: int = 0) -> DigitClassifier:
    """The judge, trained on the training digits only (full batch, Adam, light pixel noise).

    Deterministic and cached in memory: about a second of CPU, so nothing is written to disk.
    """
    split = digits.split()
    generator = seed_everything(seed)
    model = DigitClassifier()
    x = torch.as_tensor(digits.to_unit(split.train_images).reshape(-1, PIXELS))
    y = torch.as_tensor(split.train_labels)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(epochs):
        noisy = x + 0.05 * torch.randn(x.shape, generator=generator)
        loss = F.cross_entropy(model(noisy), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    model.eval()
    return model


def _judge_inputs(images: np.ndarray) -> Tensor:
    return torch.as_tensor(_check_images(images).reshape(-1, PIXELS), dtype=torch.float32)


def classifier_features(classifier: DigitClassifier, images: np.ndarray) -> np.ndarray:
    """Penultimate-layer features of images in [0, 1], as float64 of shape (n, features)."""
    with torch.no_grad():
        return classifier.body(_judge_inputs(images)).double().numpy()


def frechet_distance(features_a: np.ndarray, features_b: np.ndarray) -> float:
    """The Fréchet distance between Gaussians fitted to two feature sets (FID's formula).

    FD = ‖μ_a − μ_b‖² + tr(Σ_a + Σ_b − 2 (Σ_a Σ_b)^{1/2}).
    """
    a, b = np.asarray(features_a, np.float64), np.asarray(features_b, np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or min(len(a), len(b)) < 2:
        raise ValueError(f"features must be (n, d) arrays with the same d and n >= 2, got {a.shape} and {b.shape}")
    mu_a, mu_b = a.mean(axis=0), b.mean(axis=0)
    cov_a, cov_b = _covariance(a), _covariance(b)
    # (Σ_a Σ_b)^{1/2}; its tiny imaginary part is round-off. Dead features (a blank image
    # set) make Σ singular: scipy then warns but its square root is still the one we want.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", linalg.LinAlgWarning)
        root = linalg.sqrtm(cov_a @ cov_b)
    value = np.sum((mu_a - mu_b) ** 2) + np.trace(cov_a + cov_b - 2.0 * np.real(root))
    return float(max(value, 0.0))


def _covariance(x: np.ndarray) -> np.ndarray:
    """The sample covariance of the rows of x, (d, d), computed by torch: it keeps to torch's thread count,
    where NumPy's BLAS would spread a small product over every core and, on a shared machine, wait for them."""
    return np.atleast_2d(torch.cov(torch.from_numpy(np.ascontiguousarray(x.T))).numpy())


def class_diversity(classifier: DigitClassifier, images: np.ndarray) -> float:
    """Entropy of the predicted-class histogram over log 10: 1 when all ten digits are equally common."""
    with torch.no_grad():
        predicted = classifier(_judge_inputs(images)).argmax(dim=1).numpy()
    share = np.bincount(predicted, minlength=digits.N_CLASSES) / max(predicted.size, 1)
    share = share[share > 0]
    return float(max(0.0, -(share * np.log(share)).sum() / math.log(digits.N_CLASSES)))


def classifier_confidence(classifier: DigitClassifier, images: np.ndarray) -> float:
    """Mean over images of the classifier's top softmax probability (0.1 for pure doubt)."""
    with torch.no_grad():
        return float(torch.softmax(classifier(_judge_inputs(images)), dim=1).max(dim=1).values.mean())
