"""The transmission: a lossless codec over L grey levels, its rate control, the rate estimate of the hinge."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from toyscale.genmm import digits

ARMS = ("cascade", "naive", "badiff")
DIAGNOSTICS = ("badiff_full", "real")  # BADiff's model run all T steps; real training digits, same link
LADDER = (2, 3, 4, 5, 6, 8, 11, 17)  # the grey levels the codec offers, coarse to lossless (17 = 0..16)
PIXELS = digits.SIDE * digits.SIDE


def _check_images(images: np.ndarray, name: str = "images") -> np.ndarray:
    """images as float64 of shape (n, 8, 8) in [0, 1]; ValueError naming `name` otherwise."""
    array = np.asarray(images, dtype=np.float64)
    if array.ndim == 2 and array.shape[1] == PIXELS:
        array = array.reshape(-1, digits.SIDE, digits.SIDE)
    if array.ndim != 3 or array.shape[1:] != (digits.SIDE, digits.SIDE):
        raise ValueError(f"{name} must have shape (n, 8, 8) or (n, 64), got {np.shape(images)}")
    if array.size and (not np.isfinite(array).all() or array.min() < 0.0 or array.max() > 1.0):
        raise ValueError(f"{name} must hold finite intensities in [0, 1]")
    return array


def _check_levels(levels: int) -> int:
    if isinstance(levels, bool) or not isinstance(levels, int | np.integer) or not 2 <= levels <= 256:
        raise ValueError(f"levels must be an int in [2, 256], got {levels!r}")
    return int(levels)


# ---------------------------------------------------------------------------------------------
# The transmission: a real codec and its rate control
# ---------------------------------------------------------------------------------------------


def quantize(images: np.ndarray, levels: int) -> np.ndarray:
    """The grey-level symbols q = round(x · (L − 1)) ∈ {0, …, L − 1} of images x in [0, 1]."""
    x, levels = _check_images(images), _check_levels(levels)
    return np.clip(np.rint(x * (levels - 1)), 0, levels - 1).astype(np.int64)


def dequantize(symbols: np.ndarray, levels: int) -> np.ndarray:
    """What the receiver shows: x̃ = q / (L − 1)."""
    return np.asarray(symbols, dtype=np.float64) / (_check_levels(levels) - 1)


def causal_context(symbols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The already-decoded neighbours of every pixel: (left, top), 0 (black) outside the image."""
    n, h, w = symbols.shape
    padded = np.zeros((n, h + 1, w + 1), dtype=np.int64)
    padded[:, 1:, 1:] = symbols
    return padded[:, 1:, :-1], padded[:, :-1, 1:]


@lru_cache(maxsize=64)
def context_model(levels: int) -> np.ndarray:
    """The codec's fixed causal context model at L levels: log₂ p(q | left, top), shape (L, L, L).

    p(q | l, t) = (n(l, t, q) + ½) / (n(l, t) + L/2), counted once on the training digits of the
    default split (the Krichevsky–Trofimov estimator). Sender and receiver share the table, so
    Σ −log₂ p is the length an arithmetic coder achieves to within two bits per image.
    """
    levels = _check_levels(levels)
    train = digits.to_unit(digits.split().train_images)
    q = quantize(train, levels)
    left, top = causal_context(q)
    counts = np.full((levels, levels, levels), 0.5)
    np.add.at(counts, (left.ravel(), top.ravel(), q.ravel()), 1.0)
    table = np.log2(counts / counts.sum(axis=-1, keepdims=True))
    table.setflags(write=False)
    return table


def codec_bits(images: np.ndarray, levels: int) -> np.ndarray:
    """Bits per pixel of each image, quantised to L levels and coded under the context model.

    rate(x) = (1/64) Σ_ij −log₂ p(q_ij | q_i,j−1, q_i−1,j), q = quantize(x, L).
    """
    q = quantize(images, levels)
    left, top = causal_context(q)
    table = context_model(_check_levels(levels))
    return -table[left, top, q].reshape(q.shape[0], -1).mean(axis=1)


@dataclass(frozen=True)
class Transmission:
    """What rate control sent: the received images, their rate (bits per pixel) and their level."""

    received: np.ndarray
    bpp: np.ndarray
    levels: np.ndarray


def transmit(images: np.ndarray, target_bpp: float, ladder: Sequence[int] = LADDER) -> Transmission:
    """Rate control: send each image at the finest level L of the ladder with codec_bits ≤ target.

    An image that does not fit even at the coarsest level is sent there anyway and overshoots
    the target (it shows up in |achieved − target|).
    """
    x = _check_images(images)
    if not target_bpp > 0:
        raise ValueError(f"target_bpp must be > 0, got {target_bpp!r}")
    ladder = sorted(_check_levels(level) for level in ladder)
    if not ladder:
        raise ValueError("ladder must hold at least one level")
    rates = np.stack([codec_bits(x, level) for level in ladder])  # (levels, n)
    fits = rates <= target_bpp
    # the finest fitting level; the coarsest when none fits
    choice = np.where(fits.any(axis=0), len(ladder) - 1 - np.argmax(fits[::-1], axis=0), 0)
    levels = np.asarray(ladder)[choice]
    received = np.empty_like(x)
    for level in np.unique(levels):
        rows = levels == level
        received[rows] = dequantize(quantize(x[rows], int(level)), int(level))
    return Transmission(received, rates[choice, np.arange(x.shape[0])], levels)


def rate_features(x: Tensor) -> Tensor:
    """Smooth statistics of images x (n, 64) in [0, 1] that the codec's rate follows.

    φ(x) = [1, mean x, mean(|x_ij − x_i,j−1| + |x_ij − x_i−1,j|), mean x(1 − x)]: ink, edges
    (the total variation against the causal neighbours, black outside), and greyness (pixels
    between black and white are the expensive ones).
    """
    if x.dim() != 2 or x.shape[1] != PIXELS:
        raise ValueError(f"x must have shape (n, 64), got {tuple(x.shape)}")
    image = x.reshape(-1, digits.SIDE, digits.SIDE)
    padded = F.pad(image, (1, 0, 1, 0))
    edges = (image - padded[:, 1:, :-1]).abs() + (image - padded[:, :-1, 1:]).abs()
    ones = torch.ones(x.shape[0], dtype=x.dtype, device=x.device)
    return torch.stack([ones, x.mean(dim=1), edges.flatten(1).mean(dim=1), (x * (1 - x)).mean(dim=1)], dim=1)


@lru_cache(maxsize=64)
def rate_surrogate_weights(levels: int) -> tuple[float, ...]:
    """Least-squares weights w with codec_bits(x, L) ≈ w · φ(x), fitted to the real codec.

    The fit uses the training digits and four distortions of them (blurred, noisy, mixed,
    faded), so that it also covers the blurry and grey estimates a sampler produces.
    """
    levels = _check_levels(levels)
    x = digits.to_unit(digits.split().train_images).astype(np.float64)
    generator = np.random.default_rng(0)
    blurred = (x + np.roll(x, 1, 1) + np.roll(x, -1, 1) + np.roll(x, 1, 2) + np.roll(x, -1, 2)) / 5
    noisy = np.clip(x + 0.1 * generator.standard_normal(x.shape), 0, 1)
    mixed = 0.5 * x + 0.5 * x[generator.permutation(len(x))]
    fit = np.concatenate([x, blurred, noisy, mixed, 0.6 * x])
    phi = rate_features(torch.as_tensor(fit.reshape(-1, PIXELS))).numpy()
    weights, *_ = np.linalg.lstsq(phi, codec_bits(fit, levels), rcond=None)
    return tuple(float(w) for w in weights)


def rate_surrogate(x: Tensor, levels: int) -> Tensor:
    """The differentiable rate estimate Ĥ_L(x) = w_L · φ(x) in bits per pixel, for x (n, 64) in [0, 1]."""
    w = torch.as_tensor(rate_surrogate_weights(levels), dtype=x.dtype, device=x.device)
    # Ĥ(x) = w · φ(x)
    return rate_features(x) @ w


def hinge_rate_loss(rate_estimate: Tensor, target_bpp: Tensor) -> Tensor:
    """BADiff's entropy hinge, averaged over the batch: max(0, Ĥ(x̂₀) − H_target)."""
    if rate_estimate.shape != target_bpp.shape:
        raise ValueError(
            f"rate_estimate and target_bpp must have the same shape, got {tuple(rate_estimate.shape)} "
            f"and {tuple(target_bpp.shape)}"
        )
    # max(0, Ĥ − H_target)
    return F.relu(rate_estimate - target_bpp).mean()


def design_level(target_bpp: float, train_images: np.ndarray, ladder: Sequence[int] = LADDER) -> int:
    """The level BADiff aims its hinge at for a target R: the finest level of the ladder at which
    the median training digit fits R (the coarsest level when none does)."""
    fitting = [level for level in sorted(ladder) if np.median(codec_bits(train_images, level)) <= target_bpp]
    return int(fitting[-1]) if fitting else int(min(ladder))
