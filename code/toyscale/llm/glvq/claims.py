"""GLVQ's claims, their margins (set on calibration seeds), and the falsifiers under which they must fail.

Re-audit v2 (issue 44). Every language-model comparison is at 2 bits nominal and at the same charged
size: index bits plus the side information, its per-group part (G, μ, s, the width codes) charged at
the paper's share (`experiment.PAPER_SIDE_CHARGE`, the regime), the per-row scales and steps in full
(`quantize`'s equal-budget rule). Every salience arm uses the method's allocation. Each alternative
chooses among as many configurations on validation as GLVQ (its three step sizes): RTN and GPTQ their
scale block, the lattice kept at its start its compander's μ⁽⁰⁾. The warm-up compares the learned
lattice with three scalar transform coders (RTN, PCA + RTN, whitening by the Cholesky factor + RTN),
each in GLVQ's place against the strongest remaining one.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace

from toyscale.core import BASELINE_IN_PLACE, MECHANISM_OFF, Falsifier, Verdict, all_of, paired, vanishes, within
from toyscale.core.builders import RecordClaims, paired_check, vanishing_check
from toyscale.core.calibration import load_record
from toyscale.core.claims import at_most, per_seed
from toyscale.core.protocol import ONE_SIDED, Alternative, Alternatives, Band, Knob, Regime

from .experiment import PAPER_SIDE_CHARGE, Config, Result
from .lattice import MU_GRID
from .synthetic import SCALAR_ARMS, sqnr_at_rate

_config = Config()
# Margins from `python -m toyscale calibrate glvq --seeds 12 --jobs 1` on calibration seeds 1000–1011, default
# config, native numerics (calibration/default.json) and ATEN_CPU_CAPABILITY=default (default.aten-default.json).
# "q05" / "q95": the 5th / 95th percentile of the means over five-seed windows of those seeds.
#: The smallest 2-bit gain over a scalar grid the chapter calls an effect, fixed before calibration: a twentieth
#: of a bit per character (the paper's 2-bit gains over RTN are orders of magnitude larger). GLVQ's window means
#: over RTN: q05 −0.022, q95 0.077 (pass rate 0.20): not expected. Over GPTQ: q95 −0.115.
BEATS_MARGIN = 0.05  # bpc
#: method q05 0.495 > 0.3 > salience_shuffled q95 −0.145
SALIENCE_MARGIN = 0.3  # bpc
#: method q05 0.135 > 0.03 > learning_off q95 0.000 (its Δ: GLVQ at G⁽⁰⁾ with μ⁽⁰⁾ picked on calibration error,
#: against the start with μ⁽⁰⁾ picked on validation)
LEARN_MARGIN = 0.03  # bpc
#: method q05 0.095 > 0.05 > 0 (the margin the record was first made with) and the lattices_swapped falsifier
PER_GROUP_MARGIN = 0.05  # bpc
#: method q05 0.014 < 0.03 < companding_off q95 0.165: no margin separates them, not expected
COMPAND_MARGIN = 0.03  # bpc
#: method q05 0.313, but whitened RTN in GLVQ's place reaches a q95 of 0.522 over RTN and PCA + RTN: no margin fits
#: between them, so the warm-up's claim is not expected
SQNR_MARGIN = 0.3  # dB
#: The 4-bit control's band, fixed before calibration: half the 2-bit effect's margin, two-sided.
TOP_BAND = Band(0.5)
#: The Gaussian control's band, fixed before calibration: a gain of at most half the warm-up's margin (one-sided).
GAUSSIAN_BAND = Band(0.5, ONE_SIDED)
BPW_TOLERANCE = 0.01  # half a group's bits (1,024 of 104,448 weights): the equal-budget rule's rounding
# The paper's 2-bit Llama-2-7B against FP16 on WikiText-2: perplexity 5.41 vs 5.12, a relative increase
# of the cross-entropy (log perplexity) by ln 5.41 / ln 5.12 − 1
PAPER_CE_INCREASE = math.log(5.41) / math.log(5.12) - 1

#: The regime of the language-model claims (CLAIMS.md §7, v2): the side information's share at the paper's setting.
SIDE_REGIME = Regime(
    "per-group side information charged (share of the toy's)",
    PAPER_SIDE_CHARGE,
    "the paper's groups, 128 columns of 4,096-row matrices at d = 8, spend 8² fp16 numbers on 524,288 weights, "
    "1/64 of the share the toy's 4 × 4 generators on 2,048 weights cost (experiment.PAPER_SIDE_CHARGE); fixed "
    "before this calibration",
)
#: The warm-up's regime: heavy tails and a shape per group, the premise of a learned per-group lattice.
TAIL_REGIME = Regime(
    "tail heaviness 1/ν of stretched, rotated groups",
    1 / 3,
    "the paper's premise that weights are heavy-tailed and correlated within a group, read as Student-t with "
    "ν = 3 (the heaviest integer ν with a finite variance); the warm-up's world, fixed before this re-audit",
)

_BLOCK = Knob(
    "scale block (weights of a row; 0: per row)", tuple(b or 0 for b in _config.scale_blocks), "standard practice"
)
_LR = Knob("lattice step size lr", _config.glvq_lrs, "standard practice")
_MU0 = Knob("compander μ⁽⁰⁾ (no learning to tune)", tuple(MU_GRID), "paper")
_GRID = len(_config.glvq_lrs)


def _alternatives(arm: Alternative, why: str, pick_by: str = "val_bpc@2") -> Alternatives:
    return Alternatives(arms=(arm,), pick_by=pick_by, higher_is_better=False, method_grid=_GRID, only_one=why)


RTN = _alternatives(
    Alternative("rtn_sb", (_BLOCK,)),
    "the paper's claim is against round-to-nearest; GPTQ, the error-feedback coder, is beats_gptq_at_2_bits",
)
GPTQ = _alternatives(
    Alternative("gptq_sb", (_BLOCK,)),
    "GPTQ stands in for QuIP# and QTIP, the paper's error-feedback baselines, whose codebooks are not built here",
)
SCALARS = Alternatives(
    arms=(Alternative("rtn_sb", (_BLOCK,)), Alternative("gptq_sb", (_BLOCK,))),
    pick_by="val_bpc@2",
    higher_is_better=False,
    method_grid=_GRID,
)
FP = Alternatives(
    arms=(Alternative("fp"),),
    pick_by="val_bpc",
    higher_is_better=False,
    method_grid=1,
    only_one="the claim compares the 2-bit model with the model it codes, not with another coder",
)
UNIFORM = _alternatives(
    Alternative("glvq_uniform", (_LR,)), "an ablation inside the method: the same lattices with N bits for every group"
)
INITIAL = _alternatives(
    Alternative("glvq_init", (_MU0,)), "an ablation inside the method: the same lattices at their Cholesky start"
)
SHARED = _alternatives(
    Alternative("glvq_shared", (_LR,)), "the paper's ablation: one lattice per matrix and width instead of per group"
)
GLOBAL_MU = _alternatives(
    Alternative("glvq_global_mu", (_LR,)), "the paper's ablation: one compander μ for the matrix instead of per group"
)
WARM_UP = Alternatives(
    arms=tuple(Alternative(arm) for arm in SCALAR_ARMS),
    pick_by="sqnr",
    method_grid=1,
)

REASONS = {
    "beats_gptq_at_2_bits": (
        "GPTQ's error feedback through the inverse Hessian, given the same salience bits and size, codes this model "
        "better than the learned lattice: the lattice fits each group's output error on its own, while GPTQ also "
        "corrects the error of the columns it has already rounded"
    ),
    "close_to_full_precision": (
        "a 100k-weight model has little redundancy to lose at 2 bits: every coder's 2-bit model sits far above the "
        "fp16 model, the lattice included; the paper's small loss is that of a 7B model"
    ),
    "per_group_beats_shared": (
        "what a lattice per group gains over one per matrix and width does not clear the margin on enough windows, "
        "or the lattices swapped between groups clear it too"
    ),
    "companding_helps": (
        "per-group μ beats one global μ, but switching companding off beats both: the groups are close to "
        "Gaussian, where the paper's range of μ bends the grid the wrong way and a per-group μ only bends it less; "
        "the companding-off falsifier clears the margin, so the gain cannot be credited to per-group companding"
    ),
    "gap_shrinks_with_bits": (
        "the strongest scalar grid is GPTQ, which leads GLVQ at every width, by the most at 2 bits: there is no "
        "advantage to shrink (the boundary over bits)"
    ),
    "no_edge_at_4_bits": (
        "at 4 bits GLVQ trails RTN by more than half the 2-bit margin: the compander, held to the paper's range "
        "of μ, costs it more at 4 bits than the lattice's shape gains"
    ),
    "beats_rtn_at_2_bits": (
        "at the paper's side-information share the lattice's lead over RTN does not clear the margin on enough "
        "windows: the compander, held to the paper's range of μ on close-to-Gaussian groups, costs part of what the "
        "lattice gains"
    ),
    "learned_beats_initial": "learning the lattice does not clear the margin over its start on enough windows",
    "salience_bits_help": "the salience bits do not clear the margin on enough windows",
    "synthetic_sqnr": (
        "the learned lattice leads the strongest scalar coder, Cholesky-whitened RTN, but whitened RTN in the "
        "lattice's place leads RTN and PCA + RTN by as much: what the warm-up's margin measures is the gain of a "
        "transform coder with the group's shape, which the lattice's Cholesky start already has, not of the learned "
        "lattice over it"
    ),
    "no_gain_on_gaussian": "the learned lattice gains over the scalar grids on i.i.d. Gaussian vectors",
}


@dataclass(frozen=True)
class SameSize:
    """A check, and every arm it reads held to GLVQ's charged size at 2 bits."""

    check: object
    sized: tuple[str, ...]

    @property
    def arms(self) -> tuple[str, ...]:
        """The arms the check reads: GLVQ and its alternatives."""
        return self.check.arms

    def __call__(self, results: Sequence[Result]) -> Verdict:
        sizes = [_same_size(results, arm) for arm in self.sized]
        return all_of(self.check(results), *sizes)

    def excluding(self, arm: str) -> SameSize:
        return SameSize(self.check.excluding(arm), self.sized)


def _same_size(results: Sequence[Result], arm: str, bits: int = 2) -> Verdict:
    sizes = zip(per_seed(results, arm, f"cbpw@{bits}"), per_seed(results, "glvq", f"cbpw@{bits}"), strict=True)
    gaps = [a - g for a, g in sizes]
    return within(gaps, -BPW_TOLERANCE, BPW_TOLERANCE, name=f"charged bpw, {arm} − GLVQ")


def _against(alternatives: Alternatives, margin: float) -> SameSize:
    """GLVQ beats the alternative at 2 bits by more than `margin` bpc, at the same charged size."""
    check = paired_check(
        "glvq",
        alternatives,
        "bpc@2",
        margin=margin,
        higher_is_better=False,
        name=f"Δ bpc at 2 bits ({'/'.join(alternatives.names)} − GLVQ)",
    )
    return SameSize(check, alternatives.names)


def _best_scalar(results: Sequence[Result], bits: int) -> list[float]:
    """The scalar salience arm with the lower validation bpc at `bits`, per seed: its test bpc."""
    out = []
    for r in results:
        best = min(("rtn_sb", "gptq_sb"), key=lambda arm: r.metrics[arm][f"val_bpc@{bits}"])
        out.append(r.metrics[best][f"bpc@{bits}"])
    return out


def _edge(results: Sequence[Result], bits: int) -> list[float]:
    """The strongest scalar grid's bpc minus GLVQ's at `bits` (positive favours GLVQ)."""
    glvq = per_seed(results, "glvq", f"bpc@{bits}")
    return [s - g for s, g in zip(_best_scalar(results, bits), glvq, strict=True)]


def _check_gap(results: Sequence[Result]) -> Verdict:
    top = max(results[0].config.bits)
    return paired(_edge(results, 2), _edge(results, top), margin=0.0, name=f"GLVQ's edge at 2 bits − at {top} bits")


def _check_near_fp(results: Sequence[Result]) -> Verdict:
    fp = per_seed(results, "fp", "bpc")
    increase = [g / f - 1 for g, f in zip(per_seed(results, "glvq", "bpc@2"), fp, strict=True)]
    return at_most(increase, PAPER_CE_INCREASE, "relative bpc increase over fp16, GLVQ at 2 bits")


def _synthetic(results: Sequence[Result], kind: str, excluded: Sequence[str] = ()) -> tuple[list[float], list[float]]:
    """GLVQ's SQNR at 2 index bits and the best remaining scalar coder's at the same total bits per coordinate.

    The best is taken on the same groups (a choice that can only favour the scalar coders)."""
    glvq, scalar = [], []
    arms = [arm for arm in SCALAR_ARMS if arm not in excluded]
    for r in results:
        points = r.synthetic[kind]
        k = points["glvq"]["bits"].index(2)
        glvq.append(points["glvq"]["sqnr"][k])
        scalar.append(max(sqnr_at_rate(points[arm], points["glvq"]["rate"][k]) for arm in arms))
    return glvq, scalar


@dataclass(frozen=True)
class SyntheticCheck:
    """GLVQ's SQNR over the strongest remaining scalar coder's, on structured groups (an effect) or i.i.d.
    Gaussian ones (its control, one-sided: the gain must vanish)."""

    kind: str
    margin: float
    excluded: tuple[str, ...] = ()
    band_width: float | None = None

    def __call__(self, results: Sequence[Result]) -> Verdict:
        glvq, scalar = _synthetic(results, self.kind, self.excluded)
        if self.band_width is not None:
            return vanishes(
                glvq,
                scalar,
                band=self.band_width,
                sided=ONE_SIDED,
                name="Δ SQNR dB on i.i.d. Gaussian at equal total bits (GLVQ − best scalar coder)",
            )
        return paired(glvq, scalar, margin=self.margin, name="Δ SQNR dB at equal total bits (GLVQ − best scalar coder)")

    def excluding(self, arm: str) -> SyntheticCheck:
        return replace(self, excluded=(*self.excluded, arm))


_claims = RecordClaims(load_record(sys.modules[__package__]), REASONS)

CLAIMS = [
    _claims.effect(
        "beats_rtn_at_2_bits",
        "At 2 bits GLVQ is far ahead of round-to-nearest (the paper's 2-bit Llama-2-7B: GLVQ 5.41 "
        "perplexity on WikiText-2, against RTN's thousands).",
        "test bits per character at 2 bits, GLVQ vs RTN with the same salience bits and charged size (side "
        "information at the paper's share), RTN's scale block chosen on validation, paired by seed",
        _against(RTN, BEATS_MARGIN),
        regime=SIDE_REGIME,
        alternatives=RTN,
    ),
    _claims.effect(
        "beats_gptq_at_2_bits",
        "GLVQ beats error-feedback quantizers at 2 bits (QuIP# 6.19, QTIP 5.91 vs GLVQ 5.41).",
        "test bits per character at 2 bits, GLVQ vs GPTQ with the same salience bits and charged size, its scale "
        "block (per row, per 64 or per 32 weights) chosen on validation",
        _against(GPTQ, BEATS_MARGIN),
        regime=SIDE_REGIME,
        alternatives=GPTQ,
    ),
    _claims.effect(
        "close_to_full_precision",
        "2-bit GLVQ stays close to full precision (Llama-2-7B: 5.41 against 5.12 for FP16, a cross-entropy a few "
        "per cent higher).",
        "GLVQ's test bits per character at 2 bits relative to the fp16 model's, at most the paper's relative "
        "increase of the cross-entropy",
        _check_near_fp,
        regime=SIDE_REGIME,
        alternatives=FP,
        arms=("glvq", "fp"),
    ),
    _claims.effect(
        "salience_bits_help",
        "Salience-based bit allocation helps (ablation: uniform bits 5.79 vs 5.64).",
        "test bits per character at 2 bits, GLVQ vs GLVQ with N bits for every group, same charged size",
        _against(UNIFORM, SALIENCE_MARGIN),
        regime=SIDE_REGIME,
        alternatives=UNIFORM,
    ),
    _claims.effect(
        "learned_beats_initial",
        "Learning each group's generator on the output error improves on its Cholesky initialization.",
        "test bits per character at 2 bits, GLVQ (fitted until its calibration error stops falling, within the "
        "budget) vs the same lattices at their scaled Cholesky start G⁽⁰⁾, same allocation and size",
        _against(INITIAL, LEARN_MARGIN),
        regime=SIDE_REGIME,
        alternatives=INITIAL,
    ),
    _claims.effect(
        "per_group_beats_shared",
        "A lattice per group beats one shared lattice (ablation: 5.64 vs 5.89 perplexity).",
        "test bits per character at 2 bits, one G per group vs one G per matrix and bit width, the shared arm "
        "spending the side information it saves on index bits",
        _against(SHARED, PER_GROUP_MARGIN),
        regime=SIDE_REGIME,
        alternatives=SHARED,
    ),
    _claims.effect(
        "companding_helps",
        "Per-group companding helps (ablation: global instead of group companding 5.87 vs 5.64).",
        "test bits per character at 2 bits, GLVQ vs GLVQ with one μ per matrix (global companding), same charged size",
        _against(GLOBAL_MU, COMPAND_MARGIN),
        regime=SIDE_REGIME,
        alternatives=GLOBAL_MU,
    ),
    _claims.effect(
        "gap_shrinks_with_bits",
        "GLVQ's advantage is largest at the lowest bit widths.",
        "GLVQ's edge over the strongest scalar grid on validation (bpc) at 2 bits minus at 4 bits",
        _check_gap,
        regime=SIDE_REGIME,
        alternatives=SCALARS,
        arms=("glvq", "rtn_sb", "gptq_sb"),
    ),
    _claims.control(
        "no_edge_at_4_bits",
        "(negative control) At 4 bits every coder is near the fp16 model and there is nothing left for a "
        "lattice to win over RTN.",
        "test bits per character at 4 bits, GLVQ vs RTN with the same salience bits and charged size",
        vanishing_check(
            "glvq",
            "rtn_sb",
            "bpc@4",
            band=TOP_BAND,
            effect_margin=BEATS_MARGIN,
            validates="beats_rtn_at_2_bits",
            higher_is_better=False,
            name="Δ bpc at 4 bits (rtn_sb − GLVQ)",
        ),
    ),
    _claims.effect(
        "synthetic_sqnr",
        "On heavy-tailed, anisotropic groups a learned per-group lattice beats scalar grids (our warm-up; the "
        "paper reports no such experiment).",
        "SQNR at 2 index bits per coordinate on synthetic 8-D groups (Student-t, ν = 3, stretched and rotated), "
        "GLVQ vs the best of RTN, PCA + RTN and Cholesky-whitened RTN at the same total bits per coordinate",
        SyntheticCheck("structured", SQNR_MARGIN),
        regime=TAIL_REGIME,
        alternatives=WARM_UP,
        arms=("glvq", *SCALAR_ARMS),
    ),
    _claims.control(
        "no_gain_on_gaussian",
        "(negative control) On i.i.d. Gaussian vectors a learned lattice has no shape and no tails to adapt to, "
        "so it gains nothing over a scalar grid (it pays for its side information).",
        "SQNR at 2 index bits on i.i.d. Gaussian 8-D groups, GLVQ − the best scalar coder at the same total bits "
        "per coordinate, at most half the warm-up's margin",
        SyntheticCheck("gaussian", 0.0, band_width=GAUSSIAN_BAND.width(SQNR_MARGIN)),
        validates="synthetic_sqnr",
        band=GAUSSIAN_BAND,
        arms=("glvq", *SCALAR_ARMS),
    ),
]


def _lm_only(config: Config, *arms: str) -> Config:
    """The change of a language-model falsifier: only the arms its claims read, at 2 bits, no warm-up."""
    return replace(config, arms=arms, bits=(2,), ablation_bits=(2,), synthetic=False)


FALSIFIERS = [
    Falsifier(
        "lattice_off",
        MECHANISM_OFF,
        ("beats_rtn_at_2_bits",),
        lambda c: replace(_lm_only(c, "glvq", "rtn_sb"), glvq=replace(c.glvq, cubic=True, iterations=0)),
        "GLVQ's lattice replaced by a scalar grid G = α σ I (companded, not learned), RTN's scale and bits kept",
    ),
    Falsifier(
        "salience_shuffled",
        MECHANISM_OFF,
        ("salience_bits_help",),
        lambda c: replace(_lm_only(c, "glvq", "glvq_uniform"), method="glvq_salience_shuffled"),
        "GLVQ with the same N ± 1 mix of widths dealt in a shuffled order, not by salience",
    ),
    Falsifier(
        "learning_off",
        MECHANISM_OFF,
        ("learned_beats_initial",),
        lambda c: replace(_lm_only(c, "glvq", "glvq_init"), glvq=replace(c.glvq, iterations=0)),
        "no alternating steps: every arm's lattice stays at its scaled Cholesky start",
    ),
    Falsifier(
        "lattices_swapped",
        MECHANISM_OFF,
        ("per_group_beats_shared",),
        lambda c: replace(_lm_only(c, "glvq", "glvq_shared"), method="glvq_lattices_swapped"),
        "a lattice per group still stored, but each group coded with the fitted lattice of another group of its "
        "width in the same matrix",
    ),
    Falsifier(
        "companding_off",
        MECHANISM_OFF,
        ("companding_helps",),
        lambda c: replace(_lm_only(c, "glvq", "glvq_global_mu"), method="glvq_no_compand"),
        "GLVQ without companding (μ → 0) under the method's name, against one global μ",
    ),
    Falsifier(
        "scalar_grid",
        MECHANISM_OFF,
        ("synthetic_sqnr",),
        lambda c: replace(c, lm=False, synthetic_method="scalar_grid"),
        "the warm-up's lattice replaced by a scalar grid G = α σ I (companded, not learned)",
    ),
    *(
        Falsifier(
            f"{arm}_in_place",
            BASELINE_IN_PLACE,
            ("synthetic_sqnr",),
            lambda c, arm=arm: replace(c, lm=False, synthetic_method=arm),
            f"{arm} run under GLVQ's name in the warm-up, against the strongest remaining scalar coder",
            in_place=arm,
        )
        for arm in SCALAR_ARMS
    ),
]
