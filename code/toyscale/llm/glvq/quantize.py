"""Quantizing a model: the scalar baselines (RTN with a clip search, GPTQ error feedback, per row or
per block of a row), salience bits, the equal-budget rule, and every Linear layer of a TinyLM coded
by one arm.

**Equal budgets.** Every arm at N nominal bits is held to the same *true* size: the total bits of
the full GLVQ (N bits per weight plus its side information). An arm that stores less side
information spends the difference on index bits, one bit more for whole groups of weights (the
groups GLVQ's bits are allocated over); one that stores more gives bits up the same way. Salience
arms add and remove bits in the order of the method's salience; arms without salience bits start
from N bits everywhere and use the groups' output energy ‖W_g X‖² for that order, which knows
nothing of the loss. The sizes then agree to within half a group's bits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from toyscale.core.devices import device
from toyscale.llm.glvq.lattice import (
    FP16_BITS,
    WIDTH_CODE_BITS,
    GLVQSettings,
    _check_bits,
    decode,
    glvq_quantize,
    group_rows,
    index_range,
    output_error,
    replace_settings,
)
from toyscale.llm.tinylm import TinyLM, from_state_arrays, lm_loss, state_arrays

# ---------------------------------------------------------------------------------------------
# Baselines: round-to-nearest with a clip search, and GPTQ-style error feedback
# ---------------------------------------------------------------------------------------------


def rtn_levels(w: Tensor, step: Tensor, bits: int | Tensor) -> Tensor:
    """Round to the nearest of the 2^b midrise levels step · (q + ½), q ∈ [−2^(b−1), 2^(b−1) − 1].

    `bits` is one int, or a tensor that broadcasts against w (one width per row or block).
    """
    lo, hi = index_range(bits if isinstance(bits, int) else bits.to(w.dtype))
    q = torch.clamp(torch.floor(w / step), lo, hi)
    return step * (q + 0.5)


def rtn_quantize(W: Tensor, bits: int | Tensor, *, block: int | None = None, clips: int = 40) -> tuple[Tensor, Tensor]:
    """RTN: one fp16 step per block of `block` consecutive weights (default: a row), chosen by a clip search.

    The step is step = c · max|w| / 2^(b−1) with the clip ratio c on a log grid in [0.05, 1]
    (wide enough for heavy tails, whose maximum lies far out) that minimizes the block's squared
    weight error, then rounded to fp16 as it is stored. `bits` is one int or one per block.
    Returns (Ŵ, steps).
    """
    _check_bits(bits)
    block = block or W.shape[-1]
    if W.numel() % block:
        raise ValueError(f"block ({block}) must divide the {W.numel()} weights")
    blocks = W.detach().double().reshape(-1, block)
    if isinstance(bits, Tensor):
        if bits.numel() != blocks.shape[0]:
            raise ValueError(f"bits must hold one width per block ({blocks.shape[0]}), got {bits.numel()}")
        bits = bits.to(blocks.device).reshape(-1, 1)
    top = blocks.abs().amax(dim=1, keepdim=True).clamp_min(1e-12) / 2.0 ** (bits - 1)
    ratios = torch.logspace(math.log10(0.05), 0.0, clips, dtype=blocks.dtype, device=W.device)
    # every clip ratio at once: (clips, blocks, block)
    candidates = top[None] * ratios[:, None, None]
    errors = ((blocks[None] - rtn_levels(blocks[None], candidates, bits)) ** 2).sum(dim=2)
    # the step is stored in fp16
    step = (top * ratios[torch.argmin(errors, dim=0)][:, None]).half().double()
    return rtn_levels(blocks, step, bits).reshape(W.shape), step.reshape(-1)


def scale_block(in_features: int, block: int | None) -> int:
    """The width of a scale block along a row: `block` weights, or the whole row (None, or wider than it)."""
    width = in_features if block is None else min(block, in_features)
    if width < 1 or in_features % width:
        raise ValueError(f"scale block {block} must divide the row's {in_features} weights")
    return width


def rtn_matrix(W: Tensor, bits: int | Tensor, block: int | None = None) -> Tensor:
    """RTN of a matrix with one fp16 step per `block` weights of a row (None: per row); bits per row or one int."""
    width = scale_block(W.shape[1], block)
    per_block = bits if isinstance(bits, int) else bits.repeat_interleave(W.shape[1] // width)
    return rtn_quantize(W, per_block, block=width)[0]


def gptq_quantize(W: Tensor, H: Tensor, bits: int | Tensor, *, block: int | None = None, damp: float = 0.01) -> Tensor:
    """GPTQ error feedback on RTN's grid, with one fp16 step per `block` columns of a row (None: per row).

    Columns are quantized in order; each column's error, scaled by the inverse Hessian's Cholesky
    factor, is pushed onto the columns not yet quantized: W[:, j>i] −= e_i · U[i, j>i] / U[i, i],
    with U the upper Cholesky factor of (H + damp · mean diag(H) · I)⁻¹. As in GPTQ with groups,
    a block's steps come from the clip search on its columns as they stand when the block is
    reached (after the feedback from earlier blocks). `bits`: one int, or one width per row.
    """
    W = W.detach().double().clone()
    H = H.detach().double().to(W.device)
    out_features, n = W.shape
    width = scale_block(n, block)
    row_bits = torch.as_tensor(bits, device=W.device).long().expand(out_features).clone()
    _check_bits(row_bits)
    H = H + damp * H.diagonal().mean() * torch.eye(n, dtype=H.dtype, device=H.device)
    U = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(H)), upper=True)
    Q = torch.zeros_like(W)
    lo, hi = index_range(row_bits.double())
    step = torch.empty(out_features, dtype=W.dtype, device=W.device)
    for i in range(n):
        if i % width == 0:
            # the block's steps, from its columns after the feedback so far
            step = rtn_quantize(W[:, i : i + width], row_bits, block=width)[1]
        # RTN's level for column i: step · (clamp(floor(w / step)) + ½)
        Q[:, i] = step * (torch.clamp(torch.floor(W[:, i] / step), lo, hi) + 0.5)
        # push the error onto the columns still to come
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


def _groups_of(layers: dict[str, nn.Linear], settings: GLVQSettings) -> dict[str, slice]:
    """Each layer's groups as a slice of the model's groups (layers in forward order)."""
    out, start = {}, 0
    for name, layer in layers.items():
        rows = group_rows(layer.weight, settings.group_size, settings.dim)
        out[name] = slice(start, start + layer.weight.shape[0] // rows)
        start = out[name].stop
    return out


def group_salience(
    layers: dict[str, nn.Linear],
    hessians: dict[str, Tensor],
    fisher: dict[str, Tensor],
    bits: int,
    settings: GLVQSettings,
) -> Tensor:
    """Salience of every group of the model: Σ_{i∈g} F_ii Δw_i², the loss increase its N-bit error is
    expected to cause (F the diagonal Fisher information, Δw the error of the initial lattice G⁽⁰⁾)."""
    initial = replace_settings(settings, learn=False)
    out = []
    for name, layer in layers.items():
        W = layer.weight.detach().double()
        rows = group_rows(W, settings.group_size, settings.dim)
        delta = W - decode(glvq_quantize(W, hessians[name], bits, initial))
        out.append((fisher[name] * delta**2).reshape(-1, rows * W.shape[1]).sum(dim=1).cpu())
    return torch.cat(out)


def group_energy(layers: dict[str, nn.Linear], hessians: dict[str, Tensor], settings: GLVQSettings) -> Tensor:
    """Output energy ‖W_g X‖² of every group: the order in which arms without salience bits match the budget."""
    out = []
    for name, layer in layers.items():
        W = layer.weight.detach().double()
        rows = group_rows(W, settings.group_size, settings.dim)
        out.append(output_error(W, torch.zeros_like(W), hessians[name].double(), rows).cpu())
    return torch.cat(out)


def match_bits(allocation: Tensor, priority: Tensor, extra: int) -> Tensor:
    """Move `extra` groups one bit up (extra > 0) or down (extra < 0) from `allocation` (widths N − 1..N + 1).

    Up: the highest-priority groups not already above N; down: the lowest-priority groups not already
    below N. N is the allocation's median width.
    """
    if allocation.shape != priority.shape or allocation.dim() != 1:
        raise ValueError(f"allocation and priority must be 1-D and alike, got {allocation.shape}, {priority.shape}")
    n = int(allocation.median())
    out = allocation.clone()
    if extra > 0:
        order = [int(i) for i in torch.argsort(priority, descending=True, stable=True) if out[i] <= n]
    else:
        order = [int(i) for i in torch.argsort(priority, stable=True) if out[i] >= n]
    if abs(extra) > len(order):
        raise ValueError(f"cannot move {extra} groups: only {len(order)} can move")
    for i in order[: abs(extra)]:
        out[i] += 1 if extra > 0 else -1
    _check_bits(out)
    return out


# ---------------------------------------------------------------------------------------------
# The arms and the budget they share
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Arm:
    """One way to code every Linear layer of the model."""

    coder: str  # 'rtn' or 'gptq' (scalar grids; their scale block is chosen on validation), or 'glvq'
    salience: bool = True  # the method's salience allocation (N ± 1 bits); False: N bits for every group
    learn: bool = True  # glvq: learn G on the output error (False: its scaled Cholesky start G⁽⁰⁾)
    shared: bool = False  # glvq: one lattice per layer and bit width instead of one per group
    companding: bool = True  # glvq: μ-law companding (False: μ → 0, the identity)
    shuffled: bool = False  # the salience order shuffled: the same N ± 1 mix, not by salience (a falsifier)
    global_mu: bool = False  # glvq: one μ per matrix instead of one per group (the paper's companding ablation)
    mu_free: bool = False  # glvq: μ free down to ~0 instead of the paper's [10, 255] (a departure)
    nominal: bool = False  # at the nominal index bits: no top-up for the side information it does not store
    swapped: bool = False  # glvq: each group coded with another group's fitted lattice (a falsifier)

    def __post_init__(self) -> None:
        if self.coder not in ("rtn", "gptq", "glvq"):
            raise ValueError(f"coder must be 'rtn', 'gptq' or 'glvq', got {self.coder!r}")

    def settings(self, base: GLVQSettings) -> GLVQSettings:
        """The lattice settings of a GLVQ arm."""
        return replace_settings(
            base,
            learn=self.learn,
            shared=self.shared,
            companding=self.companding,
            global_mu=self.global_mu,
            mu_free=self.mu_free,
            swapped=self.swapped,
        )


#: The arms of the attribution table: each idea of GLVQ on its own and together, at the same budget.
ARMS: dict[str, Arm] = {
    "rtn": Arm("rtn", salience=False),
    "gptq": Arm("gptq", salience=False),
    "glvq_init_uniform": Arm("glvq", salience=False, learn=False),
    "glvq_uniform": Arm("glvq", salience=False),
    "rtn_sb": Arm("rtn"),
    "gptq_sb": Arm("gptq"),
    "glvq_init": Arm("glvq", learn=False),
    "glvq_shared": Arm("glvq", shared=True),
    "glvq_no_compand": Arm("glvq", companding=False),
    "glvq_global_mu": Arm("glvq", global_mu=True),
    "rtn_sb_nominal": Arm("rtn", nominal=True),
    "glvq_mu_free": Arm("glvq", mu_free=True),
    "glvq": Arm("glvq"),
}
#: What may run under GLVQ's name: the method, or a falsifier's change.
METHODS: dict[str, Arm] = {
    "glvq": ARMS["glvq"],
    "glvq_uniform": ARMS["glvq_uniform"],
    "glvq_init": ARMS["glvq_init"],
    "glvq_salience_shuffled": Arm("glvq", shuffled=True),
    "glvq_global_mu": ARMS["glvq_global_mu"],
    "glvq_no_compand": ARMS["glvq_no_compand"],
    "glvq_lattices_swapped": Arm("glvq", swapped=True),
}


@dataclass
class BitPlan:
    """What every arm at N nominal bits shares: the budget and the groups' orders.

    budget: the full GLVQ's charged bits (N per weight plus `side_charge` × its side information); salience and
    energy: one value per group of the model; allocation: the method's N ± 1 bits by salience;
    shuffled: the same widths dealt by a seeded shuffle of the salience order (a falsifier's).
    """

    bits: int
    budget: int
    group_weights: int
    n_weights: int
    groups: dict[str, slice]
    salience: Tensor
    energy: Tensor
    allocation: Tensor
    shuffled_salience: Tensor
    shuffled: Tensor
    side_charge: float = 1.0


def scalar_side_bits(layers: dict[str, nn.Linear], block: int | None, n_groups: int) -> int:
    """A scalar grid's side information: one fp16 step per scale block of every row, and a width code per group."""
    steps = sum(
        layer.weight.shape[0] * (layer.weight.shape[1] // scale_block(layer.weight.shape[1], block))
        for layer in layers.values()
    )
    return FP16_BITS * steps + WIDTH_CODE_BITS * n_groups


def glvq_side_bits(
    layers: dict[str, nn.Linear], settings: GLVQSettings, allocation: Tensor, groups: dict[str, slice]
) -> int:
    """GLVQ's side information (what `GLVQCode.side_bits` charges), without coding: d² fp16 numbers
    per stored lattice, μ and s in fp16 per group when companding, a width code per group, one fp16
    scale per row."""
    total = 0
    for name, layer in layers.items():
        widths = allocation[groups[name]]
        n_lattices = len(torch.unique(widths)) if settings.shared else widths.numel()
        per_group = WIDTH_CODE_BITS + (FP16_BITS if settings.companding else 0)
        mus = (1 if settings.global_mu else widths.numel()) if settings.companding else 0
        rows = FP16_BITS * layer.weight.shape[0] if settings.row_scale else 0
        total += n_lattices * settings.dim**2 * FP16_BITS + widths.numel() * per_group + mus * FP16_BITS + rows
    return total


def per_row_side_bits(layers: dict[str, nn.Linear], block: int | None = None, coder: str = "glvq") -> int:
    """The part of an arm's side information that does not shrink with larger groups: GLVQ's fp16 scale per
    row, a scalar grid's fp16 step per scale block of every row. The rest (G, μ, s and the width codes, per
    group) is what larger groups amortize, and what `BitPlan.side_charge` scales."""
    if coder == "glvq":
        return sum(FP16_BITS * layer.weight.shape[0] for layer in layers.values())
    return scalar_side_bits(layers, block, 0)


def charged_bits(side: int, per_row: int, charge: float) -> float:
    """Side bits as the equal-budget rule charges them: the per-row part in full, the per-group part × charge."""
    return per_row + charge * (side - per_row)


def bit_plan(
    layers: dict[str, nn.Linear],
    hessians: dict[str, Tensor],
    fisher: dict[str, Tensor],
    bits: int,
    settings: GLVQSettings,
    fraction: float,
    seed: int,
    side_charge: float = 1.0,
) -> BitPlan:
    """The budget and orders at N = `bits`: the full GLVQ (`settings`, salience bits) sets the budget.

    `side_charge`: the share of every arm's side information the equal-budget rule charges (1: all of
    it, the toy's groups; the paper's share: `experiment.PAPER_SIDE_CHARGE`)."""
    groups = _groups_of(layers, settings)
    salience = group_salience(layers, hessians, fisher, bits, settings)
    allocation = allocate_bits(salience, bits, fraction)
    n_weights = sum(layer.weight.numel() for layer in layers.values())
    side = glvq_side_bits(layers, settings, allocation, groups)
    rows = per_row_side_bits(layers) if settings.row_scale else 0
    budget = bits * n_weights + charged_bits(side, rows, side_charge)
    generator = torch.Generator().manual_seed(seed)
    shuffled_salience = salience[torch.randperm(salience.numel(), generator=generator)]
    return BitPlan(
        bits=bits,
        budget=budget,
        group_weights=settings.group_size,
        n_weights=n_weights,
        groups=groups,
        salience=salience,
        energy=group_energy(layers, hessians, settings),
        allocation=allocation,
        shuffled_salience=shuffled_salience,
        shuffled=allocate_bits(shuffled_salience, bits, fraction),
        side_charge=side_charge,
    )


def arm_allocation(plan: BitPlan, arm: Arm, side_bits: Callable[[Tensor], int]) -> Tensor:
    """The arm's bits per group at the plan's budget: its start (salience, shuffled or uniform N) with
    whole groups moved one bit so that index + side bits come within half a group of the budget."""
    if arm.shuffled:
        start, priority = plan.shuffled, plan.shuffled_salience
    elif arm.salience:
        start, priority = plan.allocation, plan.salience
    else:
        start, priority = torch.full_like(plan.allocation, plan.bits), plan.energy
    allocation = start
    if arm.nominal:
        return allocation
    for _ in range(3):  # the side bits of a shared lattice depend on the widths a layer holds
        spare = plan.budget - side_bits(allocation) - int(start.sum()) * plan.group_weights
        moved = match_bits(start, priority, round(spare / plan.group_weights))
        if torch.equal(moved, allocation):
            break
        allocation = moved
    return allocation


def quantize_model(
    model: TinyLM,
    hessians: dict[str, Tensor],
    plan: BitPlan,
    arm: Arm,
    settings: GLVQSettings,
    block: int | None = None,
) -> tuple[dict[str, Tensor], dict[str, float]]:
    """Every Linear layer of `model` coded by `arm` at the plan's budget: the new weights and the sizes.

    `block`: the scale block of a scalar arm (None: per row). Returns (weights, {'bpw': true bits
    per weight, 'index': index bits, 'side': side bits, 'width': mean index bits per weight}).
    """
    layers = model.linear_layers()
    n_groups = plan.allocation.numel()
    lattice = arm.settings(settings)
    c = plan.side_charge
    if arm.coder == "glvq":
        rows = per_row_side_bits(layers) if lattice.row_scale else 0
        allocation = arm_allocation(
            plan, arm, lambda a: charged_bits(glvq_side_bits(layers, lattice, a, plan.groups), rows, c)
        )
    else:
        rows = per_row_side_bits(layers, block, arm.coder)
        side = scalar_side_bits(layers, block, n_groups)
        allocation = arm_allocation(plan, arm, lambda a: charged_bits(side, rows, c))
    weights: dict[str, Tensor] = {}
    index = side = 0
    steps = []
    for name, layer in layers.items():
        W = layer.weight.detach()
        widths = allocation[plan.groups[name]].to(W.device)
        if arm.coder == "glvq":
            code = glvq_quantize(W, hessians[name], widths, lattice)
            weights[name] = decode(code)
            index += code.index_bits()
            side += code.side_bits()
            if code.steps is not None and code.steps[1] > 0:
                steps.append(code.steps)
            continue
        row_bits = widths.repeat_interleave(W.shape[0] // widths.numel())
        if arm.coder == "rtn":
            weights[name] = rtn_matrix(W.double(), row_bits, block)
        else:
            weights[name] = gptq_quantize(W, hessians[name], row_bits, block=block)
        index += int((row_bits * W.shape[1]).sum())
    if arm.coder == "glvq":
        assert side == glvq_side_bits(layers, lattice, allocation, plan.groups), "side bits miscounted"
    else:
        side = scalar_side_bits(layers, block, n_groups)
    assert index == int(allocation.sum()) * plan.group_weights
    sizes = {
        "bpw": (index + side) / plan.n_weights,
        "cbpw": (index + charged_bits(side, rows, c)) / plan.n_weights,
        "index": float(index),
        "side": float(side),
        "width": index / plan.n_weights,
    }
    if steps:
        # the alternation at each lattice's best calibration error, median over the matrices' medians
        sizes["step"], sizes["limit"] = float(np.median([s for s, _ in steps])), float(steps[0][1])
    return weights, sizes


def with_weights(model: TinyLM, weights: dict[str, Tensor]) -> TinyLM:
    """A copy of `model` whose Linear layers hold `weights`."""
    clone = from_state_arrays(model.config, state_arrays(model))
    for name, layer in clone.linear_layers().items():
        layer.weight.data.copy_(weights[name].to(layer.weight.dtype))
    return clone
