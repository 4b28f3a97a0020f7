"""The GLVQ experiment: its configuration, `run`, the claims checked over seeds, and the figures."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import plotly.graph_objects as go

from toyscale.core import plot
from toyscale.core.claims import Claim, Verdict, all_of, at_most, paired, per_seed
from toyscale.core.seeding import seed_everything
from toyscale.llm.corpus import build_corpus
from toyscale.llm.glvq.lattice import GLVQSettings
from toyscale.llm.glvq.model import LMTraining, trained_model
from toyscale.llm.glvq.quantize import (
    ABLATION_ARMS,
    LM_ARMS,
    SYNTHETIC_ARMS,
    calibration_hessians,
    fisher_diagonal,
    lattice_picture,
    quantize_model,
    salience_bits,
    synthetic_groups,
    synthetic_sqnr,
    with_weights,
)
from toyscale.llm.tinylm import bits_per_char

# ---------------------------------------------------------------------------------------------
# The experiment
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    """Toy defaults for the GLVQ experiment."""

    training: LMTraining = field(default_factory=LMTraining)  # the LM and its training (default: committed)
    calibration_windows: int = 64  # windows of validation text whose activations fit the quantizers
    eval_chars: int = 10_000  # characters of the test split the bits per character are measured on
    bits: tuple[int, ...] = (2, 3, 4)  # nominal bits per weight for RTN, GPTQ and GLVQ
    ablation_bits: tuple[int, ...] = (2,)  # nominal bits for the ablations (shared, no companding, uniform)
    glvq: GLVQSettings = field(default_factory=GLVQSettings)  # lattice dim, group size, fit settings
    salience_fraction: float = 0.25  # share of groups given N + 1 bits (and as many given N − 1)
    synthetic_groups: int = 16  # groups in the synthetic warm-up
    synthetic_vectors: int = 256  # vectors per synthetic group
    synthetic_dim: int = 8  # their dimension (and the synthetic lattice's)
    synthetic_bits: tuple[int, ...] = (2, 3, 4)  # bits per coordinate in the warm-up

    def __post_init__(self) -> None:
        if not isinstance(self.training, LMTraining):
            raise TypeError(f"training must be an LMTraining, got {type(self.training).__name__}")
        if not isinstance(self.glvq, GLVQSettings):
            raise TypeError(f"glvq must be GLVQSettings, got {type(self.glvq).__name__}")
        for name in ("calibration_windows", "eval_chars", "synthetic_groups", "synthetic_vectors", "synthetic_dim"):
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
        if not 0 <= self.salience_fraction <= 0.5:
            raise ValueError(f"salience_fraction must be in [0, 0.5], got {self.salience_fraction}")

    @classmethod
    def fast(cls) -> Config:
        """The same (committed) LM, coded at 2 and 4 bits only (not 3), with a smaller synthetic warm-up."""
        return cls(
            bits=(2, 4),
            synthetic_groups=8,
            synthetic_bits=(2,),
        )


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm]: 'bpc@b' (held-out bits per character) and 'bpw@b' (true bits per weight) at each
    nominal b (`config.bits` for RTN, GPTQ and GLVQ, `config.ablation_bits` for the ablations),
    and 'bpc' for 'fp' (the fp16 model); synthetic[kind][arm]: SQNR (dB) per synthetic bit width,
    kind 'structured' or 'gaussian'; lattice: the 2-D picture; train_history: the LM's training
    loss (nats, one value per 100 steps); lm_loaded: whether the LM came from the committed file.
    """

    config: Config
    seed: int
    metrics: dict[str, dict[str, float]]
    synthetic: dict[str, dict[str, list[float]]]
    lattice: dict[str, list]
    train_history: list[float]
    n_weights: int
    lm_loaded: bool


def arm_bits(config: Config, arm: str) -> tuple[int, ...]:
    """The nominal bit widths an arm is run at."""
    return config.ablation_bits if arm in ABLATION_ARMS else config.bits


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """The synthetic warm-up, then the LM: load (or train), calibrate, quantize with every arm, measure.

    The LM trains on the prose's train split; the quantizers see activations of its validation
    split only (calibration); bits per character are measured on its test split.
    """
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a glvq.Config, got {type(config).__name__}")
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    seed_everything(seed)
    # (1) synthetic groups: structured (heavy-tailed, anisotropic) and the i.i.d. Gaussian control
    synthetic: dict[str, dict[str, list[float]]] = {}
    for kind, heavy in (("structured", True), ("gaussian", False)):
        X = synthetic_groups(
            config.synthetic_groups, config.synthetic_vectors, config.synthetic_dim, seed=seed, heavy_tailed=heavy
        )
        rows = [synthetic_sqnr(X, b, config.synthetic_groups, config.glvq) for b in config.synthetic_bits]
        synthetic[kind] = {arm: [r[arm] for r in rows] for arm in SYNTHETIC_ARMS}
    lattice = lattice_picture(seed)

    # (2) the language model: train on prose, calibrate on validation text, evaluate on test text
    prose = build_corpus(["prose"], seed=seed)["prose"]
    model, history, loaded = trained_model(config.training, prose.train, seed)
    test_ids = prose.test[: config.eval_chars]
    hessians = calibration_hessians(model, prose.val, config.calibration_windows)
    fisher = fisher_diagonal(model, prose.val, config.calibration_windows)
    layers = model.linear_layers()
    metrics: dict[str, dict[str, float]] = {"fp": {"bpc": bits_per_char(model, test_ids)}}
    all_bits = sorted(set(config.bits) | set(config.ablation_bits))
    allocations = {
        b: salience_bits(layers, hessians, fisher, b, config.glvq, config.salience_fraction) for b in all_bits
    }
    for arm in LM_ARMS:
        metrics[arm] = {}
        for bits in arm_bits(config, arm):
            weights, bpw = quantize_model(model, hessians, bits, arm, config.glvq, allocations[bits])
            metrics[arm][f"bpc@{bits}"] = bits_per_char(with_weights(model, weights), test_ids)
            metrics[arm][f"bpw@{bits}"] = bpw
    n_weights = sum(layer.weight.numel() for layer in layers.values())
    return Result(config, seed, metrics, synthetic, lattice, history, n_weights, loaded)


# ---------------------------------------------------------------------------------------------
# The claims
# ---------------------------------------------------------------------------------------------

# Margins, set from the seed noise of the paired differences, measured first (mean ± std, smallest).
# Default config, seeds 0-2: RTN − GLVQ at 2 bits +0.63 ± 0.11 bpc (min +0.51); shared − per-group
# +0.09 ± 0.05 (min +0.06); uniform − salience bits +0.67 ± 0.13; GPTQ − GLVQ +0.69 ± 0.23 (min
# +0.53); no companding − GLVQ −0.01 ± 0.14; RTN − FP at 4 bits +0.10 ± 0.03; synthetic SQNR GLVQ
# − RTN +1.7 ± 0.7 dB (min +1.1); Gaussian control −0.72 ± 0.03 dB. Config.fast(), seeds 0-4
# (the same LM at 2 and 4 bits): RTN − GLVQ +0.62 ± 0.14 (min +0.44); shared − per-group
# +0.14 ± 0.12 (min +0.06); GPTQ − GLVQ +0.74 ± 0.39 (min +0.31); SQNR +1.5 ± 0.7 dB (min +0.6).
RTN_MARGIN = 0.3  # GLVQ must beat RTN at 2 bits by this many bits per character on average
SHARED_MARGIN = 0.05  # per-group lattices must beat one shared lattice at 2 bits by this (bpc)
GAP_MARGIN = 0.3  # the 2-bit gap to RTN must exceed the 4-bit gap by this (bpc)
NEAR_FP = 0.15  # "near full precision" at 4 bits: at most this many bpc above the fp16 model
SQNR_MARGIN = 1.0  # synthetic groups: GLVQ must beat per-group RTN by this many dB at 2 bits
CONTROL_TOLERANCE = 0.5  # i.i.d. Gaussian control: GLVQ may not beat RTN by more than this (dB)
GPTQ_MARGIN = 0.2  # GLVQ must beat GPTQ-style error feedback at 2 bits by this (bpc)
ABLATION_MARGIN = 0.05  # the companding and salience ablations must cost at least this (bpc)


def _synth(results: Sequence[Result], kind: str, arm: str, bits: int) -> list[float]:
    return [r.synthetic[kind][arm][r.config.synthetic_bits.index(bits)] for r in results]


def _check_rtn(results: Sequence[Result]) -> Verdict:
    return paired(
        per_seed(results, "glvq", "bpc@2"),
        per_seed(results, "rtn", "bpc@2"),
        margin=RTN_MARGIN,
        higher_is_better=False,
        name="Δ bpc at 2 bits (RTN − GLVQ)",
    )


def _check_shared(results: Sequence[Result]) -> Verdict:
    return paired(
        per_seed(results, "glvq", "bpc@2"),
        per_seed(results, "glvq_shared", "bpc@2"),
        margin=SHARED_MARGIN,
        higher_is_better=False,
        name="Δ bpc at 2 bits (shared − per-group)",
    )


def _check_gap(results: Sequence[Result]) -> Verdict:
    top = max(results[0].config.bits)
    gap = {
        b: [
            r - g
            for r, g in zip(per_seed(results, "rtn", f"bpc@{b}"), per_seed(results, "glvq", f"bpc@{b}"), strict=True)
        ]
        for b in (2, top)
    }
    fp = per_seed(results, "fp", "bpc")
    return all_of(
        paired(gap[2], gap[top], margin=GAP_MARGIN, name=f"gap to RTN at 2 bits − at {top} bits"),
        at_most(
            [r - f for r, f in zip(per_seed(results, "rtn", f"bpc@{top}"), fp, strict=True)],
            NEAR_FP,
            f"RTN − FP at {top} bits",
        ),
        at_most(
            [g - f for g, f in zip(per_seed(results, "glvq", f"bpc@{top}"), fp, strict=True)],
            NEAR_FP,
            f"GLVQ − FP at {top} bits",
        ),
    )


def _check_synthetic(results: Sequence[Result]) -> Verdict:
    return all_of(
        paired(
            _synth(results, "structured", "glvq", 2),
            _synth(results, "structured", "rtn", 2),
            margin=SQNR_MARGIN,
            name="Δ SQNR dB at 2 bits (GLVQ − RTN)",
        ),
        paired(
            _synth(results, "structured", "glvq", 2),
            _synth(results, "structured", "pca_rtn", 2),
            margin=0.0,
            name="Δ SQNR dB at 2 bits (GLVQ − PCA+RTN)",
        ),
    )


def _check_control(results: Sequence[Result]) -> Verdict:
    deltas = [
        g - r
        for g, r in zip(_synth(results, "gaussian", "glvq", 2), _synth(results, "gaussian", "rtn", 2), strict=True)
    ]
    return at_most(deltas, CONTROL_TOLERANCE, "Δ SQNR dB on i.i.d. Gaussian at 2 bits (GLVQ − RTN)")


def _check_ablation(arm: str) -> Callable[[Sequence[Result]], Verdict]:
    def check(results: Sequence[Result]) -> Verdict:
        return paired(
            per_seed(results, "glvq", "bpc@2"),
            per_seed(results, arm, "bpc@2"),
            margin=ABLATION_MARGIN,
            higher_is_better=False,
            name=f"Δ bpc at 2 bits ({arm} − GLVQ)",
        )

    return check


def _check_gptq(results: Sequence[Result]) -> Verdict:
    return paired(
        per_seed(results, "glvq", "bpc@2"),
        per_seed(results, "gptq", "bpc@2"),
        margin=GPTQ_MARGIN,
        higher_is_better=False,
        name="Δ bpc at 2 bits (GPTQ − GLVQ)",
    )


CLAIMS = [
    Claim(
        id="beats_rtn_at_2_bits",
        kind="effect",
        statement="At 2 bits GLVQ stays close to full precision (Llama-2-7B perplexity 5.41 vs FP16 5.12), "
        "far ahead of uniform quantization.",
        metric="held-out bits per character at 2 bits, GLVQ vs RTN with a clip search, paired by seed",
        check=_check_rtn,
    ),
    Claim(
        id="per_group_beats_shared",
        kind="effect",
        statement="A lattice per group beats one shared lattice (ablation: 5.64 vs 5.89 perplexity).",
        metric="bits per character at 2 bits, per-group G vs one G per layer and bit width",
        check=_check_shared,
    ),
    Claim(
        id="gap_shrinks_with_bits",
        kind="effect",
        statement="The advantage is largest at the lowest bit widths; at 4 bits every method is near full precision.",
        metric="(RTN − GLVQ) bpc at 2 bits vs at 4 bits; both within 0.15 bpc of FP at 4 bits",
        check=_check_gap,
    ),
    Claim(
        id="synthetic_sqnr",
        kind="effect",
        statement="On heavy-tailed, anisotropic groups a learned per-group lattice beats per-group RTN and "
        "PCA + RTN (our warm-up; a prototype measured 6.95 vs 6.32 dB).",
        metric="SQNR at 2 bits per coordinate on synthetic 8-D groups",
        check=_check_synthetic,
    ),
    Claim(
        id="no_gain_on_gaussian",
        kind="control",
        statement="Negative control: on i.i.d. Gaussian weights a learned lattice does not beat RTN "
        "(a prototype measured 8.41 vs 9.09 dB): the gain comes from group structure.",
        metric="SQNR at 2 bits on i.i.d. Gaussian vectors, GLVQ − RTN",
        check=_check_control,
    ),
    Claim(
        id="companding_helps",
        kind="effect",
        statement="Companding helps (ablation: global instead of group companding 5.87 vs 5.64).",
        metric="bits per character at 2 bits, GLVQ vs GLVQ without companding",
        check=_check_ablation("glvq_no_compand"),
        expected=False,
        reason=(
            "the toy's weights are close to Gaussian within a group, and the paper's μ ≥ 10 bends the "
            "grid even where that does not pay: with or without companding is within seed noise here, "
            "winning on some seeds and losing on others"
        ),
    ),
    Claim(
        id="salience_bits_help",
        kind="effect",
        statement="Salience-based bit allocation helps (ablation: uniform bits 5.79 vs 5.64).",
        metric="bits per character at 2 bits, GLVQ vs GLVQ with uniform bits",
        check=_check_ablation("glvq_uniform"),
    ),
    Claim(
        id="beats_gptq_at_2_bits",
        kind="effect",
        statement="GLVQ beats error-feedback quantizers at 2 bits (QuIP# 6.19, QTIP 5.91 vs 5.41).",
        metric="bits per character at 2 bits, GLVQ vs GPTQ-style error feedback on RTN's grid (a stand-in: "
        "QuIP# and QTIP round with the same kind of error feedback, but their codebooks are not built here)",
        check=_check_gptq,
    ),
]


# ---------------------------------------------------------------------------------------------
# The figures
# ---------------------------------------------------------------------------------------------

ARM_LABELS = {
    "rtn": "RTN (clip search)",
    "gptq": "GPTQ-style error feedback",
    "pca_rtn": "PCA + RTN",
    "glvq_shared": "GLVQ, one lattice shared",
    "glvq_no_compand": "GLVQ, no companding",
    "glvq_uniform": "GLVQ, uniform bits",
    "glvq": "GLVQ",
}


def _colors() -> dict[str, str]:
    return plot.colors(list(ARM_LABELS), method="glvq")


def fig_synthetic(result: Result) -> go.Figure:
    """SQNR against bits per coordinate on the synthetic groups (solid) and the Gaussian control (dashed)."""
    colors = _colors()
    fig = plot.figure(
        "A learned lattice per group wins on structured groups, not on i.i.d. Gaussian ones",
        "bits per coordinate (index bits)",
        "SQNR (dB)",
    )
    for kind, dash, suffix in (("structured", "solid", ""), ("gaussian", "dot", " — Gaussian control")):
        for arm in SYNTHETIC_ARMS:
            fig.add_trace(
                go.Scatter(
                    x=list(result.config.synthetic_bits),
                    y=result.synthetic[kind][arm],
                    mode="lines+markers",
                    name=ARM_LABELS[arm] + suffix,
                    line=dict(color=colors[arm], dash=dash),
                    legendgroup=kind,
                )
            )
    return fig


def fig_tradeoff(result: Result) -> go.Figure:
    """Held-out bits per character against true bits per weight, one line per method."""
    colors = _colors()
    fig = plot.figure(
        "GLVQ keeps the language model usable at 2 bits, where RTN falls apart",
        "true bits per weight (indices + side information)",
        "held-out bits per character",
    )
    for arm in LM_ARMS:
        bits = arm_bits(result.config, arm)
        fig.add_trace(
            go.Scatter(
                x=[result.metrics[arm][f"bpw@{b}"] for b in bits],
                y=[result.metrics[arm][f"bpc@{b}"] for b in bits],
                mode="lines+markers" if len(bits) > 1 else "markers",
                name=ARM_LABELS[arm],
                line=dict(color=colors[arm], width=3 if arm == "glvq" else 2),
                marker=dict(size=10 if arm == "glvq" else 8),
                customdata=[[b] for b in bits],
                hovertemplate="%{customdata[0]} bits nominal: %{x:.3f} bpw, %{y:.3f} bpc"
                "<extra>%{fullData.name}</extra>",
            )
        )
    fp = result.metrics["fp"]["bpc"]
    xs = [result.metrics["rtn"][f"bpw@{b}"] for b in result.config.bits]
    fig.add_trace(
        go.Scatter(
            x=[min(xs), max(xs)],
            y=[fp, fp],
            mode="lines",
            name="unquantized (fp16 weights)",
            line=dict(color=plot.ORACLE_COLOR, dash="dash"),
        )
    )
    return fig


def fig_lattice(result: Result) -> go.Figure:
    """One 2-D group: its vectors, RTN's square grid and GLVQ's learned (companded) lattice at 2 bits."""
    colors = _colors()
    lat = result.lattice
    fig = plot.figure(
        "One group in 2-D: the learned lattice follows the data; RTN's square grid does not",
        "first coordinate",
        "second coordinate",
    )
    points = np.asarray(lat["points"])
    fig.add_trace(
        go.Scatter(
            x=points[:, 0],
            y=points[:, 1],
            mode="markers",
            name="weights of the group",
            marker=dict(color="#BBBBBB", size=4),
        )
    )
    for key, arm, symbol, sqnr in (
        ("rtn_codebook", "rtn", "square", "rtn_sqnr"),
        ("glvq_codebook", "glvq", "diamond", "glvq_sqnr"),
    ):
        book = np.asarray(lat[key])
        fig.add_trace(
            go.Scatter(
                x=book[:, 0],
                y=book[:, 1],
                mode="markers",
                name=f"{ARM_LABELS[arm]} codebook, SQNR {lat[sqnr][0]:.2f} dB",
                marker=dict(color=colors[arm], size=10, symbol=symbol, line=dict(color="white", width=1)),
            )
        )
    fig.update_yaxes(scaleanchor="x", scaleratio=1)
    return fig
