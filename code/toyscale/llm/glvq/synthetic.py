"""The synthetic warm-up: groups of vectors with heavy tails and a shape, coded at equal total bits.

Each group holds vectors v = A_g s: s has i.i.d. Student-t coordinates with ν degrees of freedom at
unit variance (ν = ∞: Gaussian) and A_g = Q_g diag(σ_g) stretches and rotates them (a random
rotation and log-spread scales; the identity without `mixing`). The arms code every group at b
index bits per coordinate and are compared at equal *total* bits per coordinate, side information
included: GLVQ stores a d × d generator, μ and s per group in fp16; RTN one fp16 step per group;
PCA + RTN a d × d rotation and d steps. A scalar arm's SQNR at GLVQ's total rate is read off the
chord between its b- and (b + 1)-bit points: SQNR in dB grows a little faster than linearly with
bits, so the chord slightly flatters the scalar arms.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from toyscale.llm.glvq.lattice import (
    FP16_BITS,
    GLVQCode,
    GLVQSettings,
    decode,
    glvq_quantize,
    index_range,
    replace_settings,
)
from toyscale.llm.glvq.quantize import rtn_quantize

SYNTHETIC_ARMS = ("rtn", "pca_rtn", "white_rtn", "glvq")
SCALAR_ARMS = ("rtn", "pca_rtn", "white_rtn")  # the scalar transform coders GLVQ is compared with
#: What may run under GLVQ's name in the warm-up: the method, or a falsifier's change (a scalar arm in its place).
SYNTHETIC_METHODS = ("glvq", "scalar_grid", *SCALAR_ARMS)


def synthetic_groups(
    n_groups: int, n_vectors: int, dim: int, *, seed: int, dof: float = 3.0, mixing: bool = True
) -> Tensor:
    """Groups of vectors v = A_g s, stacked as rows: (n_groups · n_vectors, dim), float64.

    s: i.i.d. Student-t coordinates with `dof` degrees of freedom, scaled to unit variance
    (ν / (ν − 2)); dof = inf gives Gaussian ones. With `mixing`, A_g = Q_g diag(σ_g), a random
    rotation and scales log-uniform in [e^−1.5, e^1.5]: the shape a per-group lattice can learn.
    dof = inf without mixing is the negative control, i.i.d. Gaussian vectors, where no lattice
    shape and no compander has anything to act on.
    """
    if not dof > 2:
        raise ValueError(f"dof must be > 2 (a finite variance) or inf, got {dof}")
    for name, value in (("n_groups", n_groups), ("n_vectors", n_vectors), ("dim", dim)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    generator = np.random.default_rng(seed)
    shape = (n_groups, n_vectors, dim)
    if math.isinf(dof):
        s = generator.standard_normal(shape)
    else:
        s = generator.standard_t(dof, shape) / math.sqrt(dof / (dof - 2))
    if mixing:
        Q, _ = np.linalg.qr(generator.standard_normal((n_groups, dim, dim)))
        sigma = np.exp(generator.uniform(-1.5, 1.5, (n_groups, dim)))
        s = s @ np.transpose(Q * sigma[:, None, :], (0, 2, 1))
    return torch.from_numpy(np.ascontiguousarray(s.reshape(n_groups * n_vectors, dim)))


def sqnr_db(X: Tensor, X_hat: Tensor) -> float:
    """Signal-to-quantization-noise ratio, 10 log₁₀(‖X‖² / ‖X − X̂‖²) in dB."""
    return float(10 * torch.log10((X**2).sum() / ((X - X_hat) ** 2).sum().clamp_min(1e-300)))


def pca_rtn(X: Tensor, bits: int, n_groups: int) -> Tensor:
    """Per group: rotate onto the principal axes, RTN with one step per axis, rotate back (rotation in fp16)."""
    groups = X.reshape(n_groups, -1, X.shape[1])
    out = []
    for V in groups:
        _, vectors = torch.linalg.eigh(V.T @ V / V.shape[0])
        vectors = vectors.half().double()  # stored in fp16
        coords = V @ vectors  # (n, d) principal coordinates
        coords_hat, _ = rtn_quantize(coords.T.contiguous(), bits)  # a step per axis
        out.append(coords_hat.T @ vectors.T)
    return torch.cat(out)


def white_rtn(X: Tensor, bits: int, n_groups: int) -> Tensor:
    """Per group: whiten with the Cholesky factor L of the covariance (stored in fp16), RTN with one step, then L·q.

    A scalar transform coder with the lattice's own starting shape: G⁽⁰⁾ = α L is this grid, before
    companding and learning."""
    groups = X.reshape(n_groups, -1, X.shape[1])
    out = []
    for V in groups:
        L = torch.linalg.cholesky(V.T @ V / V.shape[0]).half().double()  # stored in fp16
        Z = torch.linalg.solve_triangular(L, V.T, upper=False)  # (d, n) whitened coordinates
        Z_hat, _ = rtn_quantize(Z.reshape(1, -1), bits)  # one step for the group
        out.append((L @ Z_hat.reshape(Z.shape)).T)
    return torch.cat(out)


_CODERS = {
    "rtn": lambda X, b, g: rtn_quantize(X, b, block=X.numel() // g)[0],
    "pca_rtn": pca_rtn,
    "white_rtn": white_rtn,
}


def _side_bits(arm: str, dim: int, n_groups: int, code: GLVQCode | None = None) -> int:
    """Side information of one arm over all groups: RTN one step, PCA + RTN a rotation and d steps, GLVQ its code's."""
    if code is not None:
        return code.side_bits()
    per_group = {"rtn": 1, "pca_rtn": dim * dim + dim, "white_rtn": dim * (dim + 1) // 2 + 1}[arm]
    return n_groups * per_group * FP16_BITS


def synthetic_points(
    X: Tensor, bits: Sequence[int], n_groups: int, settings: GLVQSettings, method: str = "glvq"
) -> dict[str, dict[str, list[float]]]:
    """Every arm's (index bits, total bits per coordinate, SQNR) at each b of `bits`; scalar arms also at b + 1.

    `method` is what runs under GLVQ's name: the method ('glvq'), its lattice replaced by a scalar
    grid ('scalar_grid': G = α σ I, companded, not learned) or a scalar arm ('rtn', 'pca_rtn',
    'white_rtn'): the falsifiers.
    """
    if method not in SYNTHETIC_METHODS:
        raise ValueError(f"method must be one of {SYNTHETIC_METHODS}, got {method!r}")
    group_size = X.numel() // n_groups
    identity = torch.eye(X.shape[1], dtype=X.dtype)
    per_group = replace_settings(settings, dim=X.shape[1], group_size=group_size, shared=False, row_scale=False)
    lattices = {
        "glvq": per_group,
        "scalar_grid": replace_settings(per_group, cubic=True, learn=False),
    }
    points: dict[str, dict[str, list[float]]] = {arm: {"bits": [], "rate": [], "sqnr": []} for arm in SYNTHETIC_ARMS}

    def add(arm: str, b: int, X_hat: Tensor, side: int) -> None:
        points[arm]["bits"].append(b)
        points[arm]["rate"].append((b * X.numel() + side) / X.numel())
        points[arm]["sqnr"].append(sqnr_db(X, X_hat))

    scalar_bits = sorted(set(bits) | {b + 1 for b in bits})
    for b in scalar_bits:
        for arm in SCALAR_ARMS:
            add(arm, b, _CODERS[arm](X, b, n_groups), _side_bits(arm, X.shape[1], n_groups))
    for b in bits:
        if method in SCALAR_ARMS:
            add("glvq", b, _CODERS[method](X, b, n_groups), _side_bits(method, X.shape[1], n_groups))
        else:
            code = glvq_quantize(X, identity, b, lattices[method])
            add("glvq", b, decode(code), code.side_bits())
    return points


def sqnr_at_rate(point: dict[str, list[float]], rate: float) -> float:
    """An arm's SQNR at `rate` total bits per coordinate: on the chord between its two nearest points
    (extended linearly beyond its first or last one)."""
    rates, sqnrs = np.asarray(point["rate"]), np.asarray(point["sqnr"])
    if len(rates) < 2:
        raise ValueError("an arm needs at least two points to be read at another rate")
    order = np.argsort(rates)
    rates, sqnrs = rates[order], sqnrs[order]
    i = int(np.clip(np.searchsorted(rates, rate) - 1, 0, len(rates) - 2))
    t = (rate - rates[i]) / (rates[i + 1] - rates[i])
    return float((1 - t) * sqnrs[i] + t * sqnrs[i + 1])


def equal_rate_gain(points: dict[str, dict[str, list[float]]], bits: int, against: str) -> float:
    """GLVQ's SQNR at b index bits minus `against`'s at the same total bits per coordinate (dB)."""
    k = points["glvq"]["bits"].index(bits)
    rate, sqnr = points["glvq"]["rate"][k], points["glvq"]["sqnr"][k]
    if against == "best_scalar":
        return sqnr - max(sqnr_at_rate(points[arm], rate) for arm in SCALAR_ARMS)
    return sqnr - sqnr_at_rate(points[against], rate)


def lattice_picture(seed: int, bits: int = 2, n_vectors: int = 600) -> dict[str, list]:
    """One 2-D group, coded by GLVQ (d = 2) and by RTN at `bits` per coordinate: the points and both codebooks."""
    X = synthetic_groups(1, n_vectors, 2, seed=seed)
    code = glvq_quantize(
        X, torch.eye(2, dtype=X.dtype), bits, GLVQSettings(dim=2, group_size=X.numel(), row_scale=False)
    )
    lo, hi = index_range(bits)
    grid = torch.tensor(list(itertools.product(range(lo, hi + 1), repeat=2)), dtype=X.dtype)
    # the GLVQ codebook: F⁻¹(G (z + ½)) for every z in the b-bit box
    book = GLVQCode(grid.T[None], code.G[:1], code.mu[:1], code.scale[:1], code.bits[:1], (grid.shape[0], 2), 1)
    glvq_book = decode(book)
    rtn_hat, step = rtn_quantize(X, bits, block=X.numel())
    rtn_book = step[0] * (grid + 0.5)
    return {
        "points": X.tolist(),
        "glvq_codebook": glvq_book.tolist(),
        "rtn_codebook": rtn_book.tolist(),
        "glvq_sqnr": [sqnr_db(X, decode(code))],
        "rtn_sqnr": [sqnr_db(X, rtn_hat)],
    }
