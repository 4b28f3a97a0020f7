"""Quantizing a model: the baselines (RTN with a clip search, GPTQ-style error feedback), salience
bits, the synthetic warm-up, and every Linear layer of a TinyLM coded by one method."""

from __future__ import annotations

import itertools
import math

import numpy as np
import torch
from torch import Tensor, nn

from toyscale.core.devices import device
from toyscale.llm.glvq.lattice import (
    FP16_BITS,
    GLVQCode,
    GLVQSettings,
    _check_bits,
    bits_per_weight,
    decode,
    glvq_quantize,
    group_rows,
    index_range,
    replace_settings,
)
from toyscale.llm.tinylm import TinyLM, from_state_arrays, lm_loss, state_arrays

# ---------------------------------------------------------------------------------------------
# Baselines: round-to-nearest with a clip search, and GPTQ-style error feedback
# ---------------------------------------------------------------------------------------------


def rtn_levels(w: Tensor, step: Tensor, bits: int) -> Tensor:
    """Round to the nearest of the 2^b midrise levels step · (q + ½), q ∈ [−2^(b−1), 2^(b−1) − 1]."""
    lo, hi = index_range(bits)
    q = torch.clamp(torch.floor(w / step), lo, hi)
    return step * (q + 0.5)


def rtn_quantize(W: Tensor, bits: int, *, block: int | None = None, clips: int = 20) -> tuple[Tensor, Tensor]:
    """RTN: one fp16 step per block of `block` consecutive weights (default: a row), chosen by a clip search.

    The step is step = c · max|w| / 2^(b−1) with the clip ratio c on a grid in [0.2, 1] that
    minimizes the block's squared weight error. Returns (Ŵ, steps).
    """
    _check_bits(bits)
    block = block or W.shape[-1]
    if W.numel() % block:
        raise ValueError(f"block ({block}) must divide the {W.numel()} weights")
    blocks = W.detach().double().reshape(-1, block)
    top = blocks.abs().amax(dim=1, keepdim=True).clamp_min(1e-12) / 2 ** (bits - 1)
    ratios = torch.linspace(0.2, 1.0, clips, dtype=blocks.dtype, device=W.device)
    errors = torch.stack([((blocks - rtn_levels(blocks, top * c, bits)) ** 2).sum(dim=1) for c in ratios])
    step = top * ratios[torch.argmin(errors, dim=0)][:, None]
    return rtn_levels(blocks, step, bits).reshape(W.shape), step.reshape(-1)


def gptq_quantize(W: Tensor, H: Tensor, bits: int, damp: float = 0.01) -> Tensor:
    """GPTQ-style error feedback on RTN's grid (per-row steps from the clip search).

    Columns are quantized in order; each column's error, scaled by the inverse Hessian's Cholesky
    factor, is pushed onto the columns not yet quantized: W[:, j>i] −= e_i · U[i, j>i] / U[i, i],
    with U the upper Cholesky factor of (H + damp · mean diag(H) · I)⁻¹.
    """
    W = W.detach().double().clone()
    H = H.detach().double().to(W.device)
    _, step = rtn_quantize(W, bits)
    step = step[:, None]
    n = H.shape[0]
    H = H + damp * H.diagonal().mean() * torch.eye(n, dtype=H.dtype, device=H.device)
    U = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(H)), upper=True)
    Q = torch.zeros_like(W)
    for i in range(n):
        Q[:, i] = rtn_levels(W[:, i : i + 1], step, bits)[:, 0]
        error = (W[:, i] - Q[:, i]) / U[i, i]
        W[:, i + 1 :] -= error[:, None] * U[i, i + 1 :][None, :]
    return Q


# ---------------------------------------------------------------------------------------------
# Salience bit allocation
# ---------------------------------------------------------------------------------------------


def allocate_bits(salience: Tensor, bits: int, fraction: float = 0.25) -> Tensor:
    """Bits per group: the k most salient get N + 1, the k least N − 1, the rest N; k = ⌊fraction · g⌋.

    With groups of equal size the mean is exactly N: Σ_g b_g = g · N. Needs N ≥ 2 when k > 0.
    """
    if salience.dim() != 1:
        raise ValueError(f"salience must be 1-D (one value per group), got shape {tuple(salience.shape)}")
    if not 0 <= fraction <= 0.5:
        raise ValueError(f"fraction must be in [0, 0.5], got {fraction}")
    _check_bits(bits)
    g = salience.numel()
    k = int(fraction * g)
    if k and bits < 2:
        raise ValueError(f"bits must be >= 2 to give some groups N − 1 bits, got {bits}")
    order = torch.argsort(salience, descending=True, stable=True)
    out = torch.full((g,), bits, dtype=torch.long)
    out[order[:k]] = bits + 1
    out[order[g - k :]] = bits - 1 if k else bits
    # the mean stays exactly N
    assert int(out.sum()) == g * bits
    return out


# ---------------------------------------------------------------------------------------------
# The synthetic warm-up
# ---------------------------------------------------------------------------------------------


def synthetic_groups(n_groups: int, n_vectors: int, dim: int, *, seed: int, heavy_tailed: bool = True) -> Tensor:
    """Groups of vectors, stacked as rows: (n_groups · n_vectors, dim), float64.

    heavy_tailed: v = A_g s with s i.i.d. Student-t (3 degrees of freedom, unit variance) and a
    mixing matrix per group, A_g = Q_g diag(σ_g) (a random rotation, log-spread scales): the
    structure a per-group lattice can learn. Otherwise v is i.i.d. standard Gaussian: the
    negative control, where no lattice shape has anything to learn.
    """
    generator = torch.Generator().manual_seed(seed)
    if not heavy_tailed:
        return torch.randn(n_groups * n_vectors, dim, generator=generator, dtype=torch.float64)
    # Student-t with ν = 3: z / sqrt(χ²_ν / ν), scaled to unit variance (var = ν / (ν − 2) = 3)
    z = torch.randn(n_groups, n_vectors, dim, generator=generator, dtype=torch.float64)
    chi2 = (torch.randn(n_groups, n_vectors, 3, generator=generator, dtype=torch.float64) ** 2).sum(dim=2)
    s = z / torch.sqrt(chi2 / 3.0)[:, :, None] / math.sqrt(3.0)
    Q, _ = torch.linalg.qr(torch.randn(n_groups, dim, dim, generator=generator, dtype=torch.float64))
    sigma = torch.exp(torch.rand(n_groups, dim, generator=generator, dtype=torch.float64) * 3.0 - 1.5)
    A = Q * sigma[:, None, :]
    return (s @ A.transpose(1, 2)).reshape(n_groups * n_vectors, dim)


def sqnr_db(X: Tensor, X_hat: Tensor) -> float:
    """Signal-to-quantization-noise ratio, 10 log₁₀(‖X‖² / ‖X − X̂‖²) in dB."""
    return float(10 * torch.log10((X**2).sum() / ((X - X_hat) ** 2).sum().clamp_min(1e-300)))


def pca_rtn(X: Tensor, bits: int, n_groups: int) -> Tensor:
    """Per group: rotate onto the principal axes, RTN with one step per axis, rotate back."""
    groups = X.reshape(n_groups, -1, X.shape[1])
    out = []
    for V in groups:
        _, vectors = torch.linalg.eigh(V.T @ V / V.shape[0])
        coords = V @ vectors  # (n, d) principal coordinates
        coords_hat, _ = rtn_quantize(coords.T.contiguous(), bits)  # a step per axis
        out.append(coords_hat.T @ vectors.T)
    return torch.cat(out)


SYNTHETIC_ARMS = ("rtn", "pca_rtn", "glvq_shared", "glvq")


def synthetic_sqnr(X: Tensor, bits: int, n_groups: int, settings: GLVQSettings) -> dict[str, float]:
    """SQNR (dB) of each synthetic arm at `bits` per coordinate (index bits; H = I, so output error = MSE)."""
    group_size = X.numel() // n_groups
    identity = torch.eye(X.shape[1], dtype=X.dtype)
    rtn_hat, _ = rtn_quantize(X, bits, block=group_size)
    per_group = replace_settings(settings, dim=X.shape[1], group_size=group_size, shared=False, row_scale=False)
    out = {
        "rtn": sqnr_db(X, rtn_hat),
        "pca_rtn": sqnr_db(X, pca_rtn(X, bits, n_groups)),
        "glvq_shared": sqnr_db(X, decode(glvq_quantize(X, identity, bits, replace_settings(per_group, shared=True)))),
        "glvq": sqnr_db(X, decode(glvq_quantize(X, identity, bits, per_group))),
    }
    return out


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


# ---------------------------------------------------------------------------------------------
# The language model, its calibration statistics, and quantizing every Linear layer
# ---------------------------------------------------------------------------------------------


@torch.no_grad()
def calibration_hessians(model: TinyLM, tokens: np.ndarray, n_windows: int) -> dict[str, Tensor]:
    """H = X Xᵀ / n of every Linear layer's inputs X over `n_windows` windows of calibration text."""
    context = model.config.context
    if len(tokens) < n_windows * context:
        raise ValueError(f"calibration text holds {len(tokens)} ids, fewer than {n_windows} windows of {context}")
    ids = torch.as_tensor(tokens[: n_windows * context].astype(np.int64), device=device()).view(n_windows, context)
    sums: dict[str, Tensor] = {}
    hooks = []
    for name, layer in model.linear_layers().items():

        def hook(module: nn.Module, inputs: tuple[Tensor], output: Tensor, name: str = name) -> None:
            x = inputs[0].reshape(-1, inputs[0].shape[-1]).double()
            sums[name] = sums.get(name, 0) + x.T @ x

        hooks.append(layer.register_forward_hook(hook))
    try:
        model(ids)
    finally:
        for h in hooks:
            h.remove()
    return {name: s / (n_windows * context) for name, s in sums.items()}


LM_ARMS = ("rtn", "gptq", "glvq_shared", "glvq_no_compand", "glvq_uniform", "glvq")
ABLATION_ARMS = ("glvq_shared", "glvq_no_compand", "glvq_uniform")  # GLVQ with one piece changed


def quantize_model(
    model: TinyLM,
    hessians: dict[str, Tensor],
    bits: int,
    arm: str,
    settings: GLVQSettings,
    allocation: dict[str, Tensor] | None = None,
) -> tuple[dict[str, Tensor], float]:
    """Every Linear layer of `model` coded by `arm` at `bits`: the new weights and the true bits per weight.

    `allocation` (bits per group and layer, from `salience_bits`) is used by the GLVQ arms except
    'glvq_uniform'; without it every group gets `bits`.
    """
    if arm not in LM_ARMS:
        raise ValueError(f"arm must be one of {LM_ARMS}, got {arm!r}")
    layers = model.linear_layers()
    n_weights = sum(layer.weight.numel() for layer in layers.values())
    weights: dict[str, Tensor] = {}
    if arm in ("rtn", "gptq"):
        index = side = 0
        for name, layer in layers.items():
            W = layer.weight.detach()
            weights[name] = rtn_quantize(W, bits)[0] if arm == "rtn" else gptq_quantize(W, hessians[name], bits)
            index += bits * W.numel()
            side += FP16_BITS * W.shape[0]  # one fp16 step per row
        return weights, bits_per_weight(index, side, n_weights)
    choice = {
        "glvq": settings,
        "glvq_uniform": settings,
        "glvq_shared": replace_settings(settings, shared=True),
        "glvq_no_compand": replace_settings(settings, companding=False),
    }[arm]
    if arm == "glvq_uniform" or allocation is None:
        per_layer_bits = {name: torch.tensor(bits) for name in layers}
    else:
        per_layer_bits = allocation
    index = side = 0
    for name, layer in layers.items():
        code = glvq_quantize(layer.weight, hessians[name], per_layer_bits[name], choice)
        weights[name] = decode(code)
        index += code.index_bits()
        side += code.side_bits()
    return weights, bits_per_weight(index, side, n_weights)


def fisher_diagonal(model: TinyLM, tokens: np.ndarray, n_windows: int, batch_windows: int = 4) -> dict[str, Tensor]:
    """The diagonal Fisher information of every Linear weight, F_ii ≈ mean over mini-batches of (∂ℓ/∂w_i)².

    Estimated on `n_windows` windows of calibration text in mini-batches of `batch_windows`.
    """
    context = model.config.context
    ids = torch.as_tensor(tokens[: n_windows * context].astype(np.int64), device=device()).view(n_windows, context)
    layers = model.linear_layers()
    fisher = {name: torch.zeros_like(layer.weight, dtype=torch.float64) for name, layer in layers.items()}
    n_batches = 0
    for start in range(0, n_windows - 1, batch_windows):
        chunk = ids[start : start + batch_windows]
        model.zero_grad(set_to_none=True)
        lm_loss(model, (chunk[:, :-1], chunk[:, 1:])).backward()
        for name, layer in layers.items():
            fisher[name] += layer.weight.grad.double() ** 2
        n_batches += 1
    model.zero_grad(set_to_none=True)
    return {name: f / n_batches for name, f in fisher.items()}


def salience_bits(
    layers: dict[str, nn.Linear],
    hessians: dict[str, Tensor],
    fisher: dict[str, Tensor],
    bits: int,
    settings: GLVQSettings,
    fraction: float,
) -> dict[str, Tensor]:
    """Bits per group for every layer, from one allocation over all groups of the model.

    Salience of a group: the increase of the LM's loss that its N-bit error is expected to cause,
    Σ_{i∈g} F_ii Δw_i², with F the diagonal Fisher information and Δw the error of the initial
    lattice G⁽⁰⁾ at N bits. Every group holds `group_size` weights, so the mean stays exactly N.
    """
    initial = replace_settings(settings, learn=False)
    saliences, sizes = [], {}
    for name, layer in layers.items():
        W = layer.weight.detach().double()
        rows = group_rows(W, settings.group_size, settings.dim)
        delta = W - decode(glvq_quantize(W, hessians[name], bits, initial))
        saliences.append((fisher[name] * delta**2).reshape(-1, rows * W.shape[1]).sum(dim=1))
        sizes[name] = saliences[-1].numel()
    allocation = allocate_bits(torch.cat(saliences).cpu(), bits, fraction)
    out, start = {}, 0
    for name, size in sizes.items():
        out[name] = allocation[start : start + size].to(layers[name].weight.device)
        start += size
    return out


def with_weights(model: TinyLM, weights: dict[str, Tensor]) -> TinyLM:
    """A copy of `model` whose Linear layers hold `weights`."""
    clone = from_state_arrays(model.config, state_arrays(model))
    for name, layer in clone.linear_layers().items():
        layer.weight.data.copy_(weights[name].to(layer.weight.dtype))
    return clone
