"""The GLVQ experiment: its configuration and `run`, every arm at the same true size.

The protocol (the book's CLAIMS.md, §2–3). The language model trains on the prose's train split.
Its validation split is cut in two: the first `calibration_windows` windows give every quantizer
its calibration activations (H = X Xᵀ / n) and the Fisher information behind the salience bits;
the next `eval_chars` characters choose what a baseline may tune (the scale block of RTN and GPTQ,
per row or per 64 or 32 weights of a row). The test split is read once per arm, at the end.
At N nominal bits every arm is held to the full GLVQ's true size, side information included
(`quantize`: the equal-budget rule), and the salience arms share the method's allocation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from torch import Tensor

from toyscale.core.seeding import seed_everything
from toyscale.llm.corpus import build_corpus
from toyscale.llm.glvq.lattice import MU_GRID, GLVQSettings, replace_settings
from toyscale.llm.glvq.model import LMTraining, trained_model
from toyscale.llm.glvq.quantize import (
    ARMS,
    METHODS,
    Arm,
    BitPlan,
    bit_plan,
    calibration_hessians,
    fisher_diagonal,
    quantize_model,
    with_weights,
)
from toyscale.llm.glvq.synthetic import SYNTHETIC_METHODS, lattice_picture, synthetic_groups, synthetic_points
from toyscale.llm.tinylm import TinyLM, bits_per_char

#: Arms run at every nominal width of `Config.bits`; the other arms of `ARMS` at `Config.ablation_bits`.
MAIN_ARMS = ("rtn_sb", "gptq_sb", "glvq")
#: The scalar arms with the method's salience bits: the strongest of them (on validation) is `best_scalar`.
SALIENCE_SCALARS = ("rtn_sb", "gptq_sb")
#: The two synthetic worlds: structured groups (heavy tails, a shape) and the i.i.d. Gaussian control.
SYNTHETIC_KINDS = {"structured": (3.0, True), "gaussian": (float("inf"), False)}

#: The paper's side information (CLAIMS.md §7, v2): a d × d generator in fp16 per group of 128 columns of a
#: 4,096-row matrix at d = 8, Llama-2-7B's projections: 8² · 16 / (128 · 4096) bits per weight.
PAPER_G_BPW = 8**2 * 16 / (128 * 4096)
#: The toy's: a 4 × 4 generator per group of 2,048 weights, 4² · 16 / 2048 bits per weight (64 times the paper's).
TOY_G_BPW = 4**2 * 16 / 2048
#: The share of the side information the equal-budget rule charges in the paper's regime. A d = 4 lattice would
#: need groups of 131,072 weights to cost the paper's share, more than the whole toy model holds, so the toy
#: reaches the regime in its accounting: every arm's side information is charged at the paper's rate, 1/64 of
#: what the toy's groups cost. 1 charges all of it: the chapter's previous world, a point on the boundary.
PAPER_SIDE_CHARGE = PAPER_G_BPW / TOY_G_BPW
#: The arms the claims read: what `Config.fast` runs.
FAST_ARMS = ("rtn_sb", "gptq_sb", "glvq_uniform", "glvq_init", "glvq_shared", "glvq_global_mu", "glvq")
#: Alternations of the lattice fit: the budget within which each lattice keeps its lowest calibration error.
FIT_ITERATIONS = 60


@dataclass(frozen=True)
class Config:
    """Toy defaults for the GLVQ experiment."""

    training: LMTraining = field(default_factory=LMTraining)  # the LM and its training (default: committed)
    calibration_windows: int = 64  # windows of validation text whose activations fit the quantizers
    eval_chars: int = 10_000  # characters of the test split every arm is measured on
    bits: tuple[int, ...] = (2, 3, 4)  # nominal bits per weight of `MAIN_ARMS` (the boundary over bits)
    ablation_bits: tuple[int, ...] = (2,)  # nominal bits of the other arms of the attribution table
    arms: tuple[str, ...] = tuple(ARMS)  # the arms to run (a falsifier runs only those its claims read)
    method: str = "glvq"  # what runs under GLVQ's name in the LM (a falsifier's change: see quantize.METHODS)
    scale_blocks: tuple[int | None, ...] = (None, 64, 32)  # RTN's and GPTQ's choices (None: per row)
    glvq_lrs: tuple[float, ...] = (0.003, 0.01, 0.03)  # a learned lattice's choices of its step size lr
    selection_chars: int = 5_000  # characters of validation text (after the calibration windows) they choose on
    glvq: GLVQSettings = field(default_factory=lambda: GLVQSettings(iterations=FIT_ITERATIONS))  # dim, groups, fit
    side_charge: float = PAPER_SIDE_CHARGE  # share of the side information the budget charges (the regime)
    salience_fraction: float = 0.25  # share of groups given N + 1 bits (and as many given N − 1)
    lm: bool = True  # run the language-model experiment (a synthetic falsifier skips it)
    synthetic: bool = True  # run the synthetic warm-up
    synthetic_groups: int = 16  # groups in the synthetic warm-up
    synthetic_vectors: int = 1024  # vectors per group: G's fp16 cost is 1/8 bit per coordinate, as in the LM
    synthetic_dim: int = 8  # their dimension (and the synthetic lattice's)
    synthetic_bits: tuple[int, ...] = (2,)  # index bits per coordinate in the warm-up
    synthetic_method: str = "glvq"  # what runs under GLVQ's name in the warm-up (see synthetic.SYNTHETIC_METHODS)

    def __post_init__(self) -> None:
        if not isinstance(self.training, LMTraining):
            raise TypeError(f"training must be an LMTraining, got {type(self.training).__name__}")
        if not isinstance(self.glvq, GLVQSettings):
            raise TypeError(f"glvq must be GLVQSettings, got {type(self.glvq).__name__}")
        for name in (
            "calibration_windows",
            "eval_chars",
            "selection_chars",
            "synthetic_groups",
            "synthetic_vectors",
            "synthetic_dim",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("bits", "ablation_bits", "synthetic_bits"):
            values = getattr(self, name)
            if not values or not all(isinstance(b, int) and 1 <= b <= 8 for b in values):
                raise ValueError(f"{name} must be a non-empty tuple of ints in [1, 8], got {values}")
        if min(self.bits) < 2 or min(self.ablation_bits) < 2:
            raise ValueError(
                f"bits and ablation_bits must be >= 2 (salience gives some groups N − 1), got {self.bits}, "
                f"{self.ablation_bits}"
            )
        if 2 not in self.bits or 2 not in self.ablation_bits or 2 not in self.synthetic_bits:
            raise ValueError("bits, ablation_bits and synthetic_bits must include 2, where the claims are checked")
        unknown = [arm for arm in self.arms if arm not in ARMS]
        if unknown or not self.arms or "glvq" not in self.arms:
            raise ValueError(f"arms must be a subset of {tuple(ARMS)} that includes 'glvq', got {self.arms}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {tuple(METHODS)}, got {self.method!r}")
        if self.synthetic_method not in SYNTHETIC_METHODS:
            raise ValueError(f"synthetic_method must be one of {SYNTHETIC_METHODS}, got {self.synthetic_method!r}")
        if not self.glvq_lrs or not all(lr > 0 for lr in self.glvq_lrs):
            raise ValueError(f"glvq_lrs must be a non-empty tuple of positive step sizes, got {self.glvq_lrs}")
        if len(self.glvq_lrs) != len(self.scale_blocks):
            raise ValueError(
                f"every arm gets the same number of choices: {len(self.glvq_lrs)} glvq_lrs but "
                f"{len(self.scale_blocks)} scale_blocks"
            )
        if not self.scale_blocks or not all(b is None or (isinstance(b, int) and b >= 1) for b in self.scale_blocks):
            raise ValueError(f"scale_blocks must hold None (per row) or positive ints, got {self.scale_blocks}")
        if not (self.lm or self.synthetic):
            raise ValueError("lm and synthetic cannot both be False: nothing would run")
        if not 0 <= self.side_charge <= 1:
            raise ValueError(f"side_charge must be in [0, 1], got {self.side_charge}")
        if not 0 <= self.salience_fraction <= 0.5:
            raise ValueError(f"salience_fraction must be in [0, 0.5], got {self.salience_fraction}")

    @classmethod
    def fast(cls) -> Config:
        """For tests: no 3-bit point, no choice on validation (RTN and GPTQ per row, GLVQ at lr 0.01), and only
        the arms the claims read (the attribution table's other rows come from the default configuration)."""
        return cls(bits=(2, 4), scale_blocks=(None,), glvq_lrs=(0.01,), arms=FAST_ARMS)


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm]: at each nominal b the arm ran at, 'bpc@b' (test bits per character), 'bpw@b' (true
    bits per weight), 'cbpw@b' (charged bits per weight: index bits plus `Config.side_charge` × side
    bits, what the equal-budget rule equalizes), 'val_bpc@b' (on the validation slice) and, for
    RTN and GPTQ, 'block@b' (the scale block chosen on validation, 0 for per row); 'fp' holds
    'bpc' and 'val_bpc' of the fp16 model; 'best_scalar' copies the salience scalar arm with the
    lower validation bpc at each b (which one: chosen['best_scalar@b']). synthetic[kind][arm]:
    'bits', 'rate' (total bits per coordinate) and 'sqnr' (dB) per point, kind 'structured' or
    'gaussian'; lattice: the 2-D picture; train_history: the LM's training loss (nats, one value
    per 100 steps); lm_loaded: whether the LM came from the committed file; budgets: per learned
    lattice arm at 2 bits, (the median alternation at its lattices' best calibration error, the
    alternations allowed).
    """

    config: Config
    seed: int
    metrics: dict[str, dict[str, float]]
    chosen: dict[str, str]
    synthetic: dict[str, dict[str, dict[str, list[float]]]]
    lattice: dict[str, list]
    train_history: list[float]
    n_weights: int
    lm_loaded: bool
    budgets: dict[str, tuple[int, int]] = field(default_factory=dict)


def arm_bits(config: Config, arm: str) -> tuple[int, ...]:
    """The nominal bit widths an arm is run at."""
    return config.bits if arm in MAIN_ARMS else config.ablation_bits


def run_synthetic(config: Config, seed: int) -> dict[str, dict[str, dict[str, list[float]]]]:
    """The warm-up: every synthetic arm on the structured groups and on the i.i.d. Gaussian control."""
    out = {}
    for kind, (dof, mixing) in SYNTHETIC_KINDS.items():
        X = synthetic_groups(
            config.synthetic_groups, config.synthetic_vectors, config.synthetic_dim, seed=seed, dof=dof, mixing=mixing
        )
        out[kind] = synthetic_points(
            X, config.synthetic_bits, config.synthetic_groups, config.glvq, config.synthetic_method
        )
    return out


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """The synthetic warm-up, then the LM: load (or train), calibrate, code with every arm at equal size, measure."""
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a glvq.Config, got {type(config).__name__}")
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    seed_everything(seed)
    synthetic = run_synthetic(config, seed) if config.synthetic else {}
    lattice = lattice_picture(seed) if config.synthetic else {}
    if not config.lm:
        return Result(config, seed, {}, {}, synthetic, lattice, [], 0, False)

    prose = build_corpus(["prose"], seed=seed)["prose"]
    model, history, loaded = trained_model(config.training, prose.train, seed)
    context = config.training.lm.context
    calibration = prose.val[: config.calibration_windows * context]
    selection = prose.val[config.calibration_windows * context :][: config.selection_chars]
    test_ids = prose.test[: config.eval_chars]
    if len(selection) < config.selection_chars:
        raise ValueError(f"the validation split leaves {len(selection)} characters to choose on; use fewer windows")
    hessians = calibration_hessians(model, calibration, config.calibration_windows)
    fisher = fisher_diagonal(model, calibration, config.calibration_windows)
    layers = model.linear_layers()
    metrics: dict[str, dict[str, float]] = {
        "fp": {"bpc": bits_per_char(model, test_ids), "val_bpc": bits_per_char(model, selection)}
    }
    chosen: dict[str, str] = {}
    budgets: dict[str, tuple[int, int]] = {}
    all_bits = sorted(set(config.bits) | set(config.ablation_bits))
    for bits in all_bits:
        plan = bit_plan(layers, hessians, fisher, bits, config.glvq, config.salience_fraction, seed, config.side_charge)
        for name in config.arms:
            if bits not in arm_bits(config, name):
                continue
            arm = METHODS[config.method] if name == "glvq" else ARMS[name]
            row = metrics.setdefault(name, {})
            weights, sizes, choice, val_bpc = _fit_arm(model, hessians, plan, arm, config, selection)
            # the test split, read once per arm and width
            row[f"bpc@{bits}"] = bits_per_char(with_weights(model, weights), test_ids)
            row[f"bpw@{bits}"] = sizes["bpw"]
            row[f"cbpw@{bits}"] = sizes["cbpw"]
            if bits == 2 and "step" in sizes:
                budgets[name] = (int(sizes["step"]), int(sizes["limit"]))
            row[f"val_bpc@{bits}"] = val_bpc
            if arm.coder != "glvq":
                row[f"block@{bits}"] = float(choice or 0)
            elif choice is not None:
                row[f"lr@{bits}"] = float(choice)
        ran = [name for name in SALIENCE_SCALARS if f"val_bpc@{bits}" in metrics.get(name, {})]
        if ran:
            best = min(ran, key=lambda name: metrics[name][f"val_bpc@{bits}"])
            chosen[f"best_scalar@{bits}"] = best
            metrics.setdefault("best_scalar", {}).update(
                {k: v for k, v in metrics[best].items() if k.endswith(f"@{bits}")}
            )
    n_weights = sum(layer.weight.numel() for layer in layers.values())
    return Result(config, seed, metrics, chosen, synthetic, lattice, history, n_weights, loaded, budgets)


def _fit_arm(
    model: TinyLM, hessians: dict[str, Tensor], plan: BitPlan, arm: Arm, config: Config, selection: np.ndarray
) -> tuple[dict[str, Tensor], dict[str, float], float | None, float]:
    """Code the model with one arm at each of its choices and keep the best on validation.

    The choices, as many for every arm: a scalar arm's scale block, a learned lattice's step size
    (a lattice kept at its start has nothing to choose). Returns (weights, sizes, choice, validation bpc).
    """
    if arm.coder != "glvq":
        choices = [(block, config.glvq) for block in config.scale_blocks]
    elif arm.learn:
        choices = [(lr, replace_settings(config.glvq, lr=lr)) for lr in config.glvq_lrs]
    else:
        # a lattice kept at its start chooses its compander's μ⁽⁰⁾ on validation instead, as many choices
        grid = [
            MU_GRID[round(i * (len(MU_GRID) - 1) / max(len(config.glvq_lrs) - 1, 1))]
            for i in range(len(config.glvq_lrs))
        ]
        choices = [(None, replace_settings(config.glvq, mu_init=(mu,))) for mu in grid]
    best = None
    for choice, settings in choices:
        block = choice if arm.coder != "glvq" else None
        weights, sizes = quantize_model(model, hessians, plan, arm, settings, block)
        val_bpc = bits_per_char(with_weights(model, weights), selection)
        if best is None or val_bpc < best[3]:
            best = (weights, sizes, choice, val_bpc)
    assert best is not None
    return best
