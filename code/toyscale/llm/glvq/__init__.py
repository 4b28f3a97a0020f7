"""GLVQ: grouped lattice vector quantization of a language model's weights.

Xi Zhang, Xiaolin Wu, Jiamang Wang and Weisi Lin. *Learning Grouped Lattice Vector Quantizers for
Low-Bit LLM Compression.* NeurIPS 2025 (arXiv:2510.20984). This toy is written from the paper's
description; it does not use the authors' code.

**The problem.** Storing a language model's weights in 2 to 4 bits cuts its memory several
times over, but uniform round-to-nearest (RTN) on a square grid wastes the few levels it has:
weights are heavy-tailed, correlated within a group, and not all equally important to the
layer's output.

**The method.** The weights are split into groups. Each group g has its own lattice with a
learnable generator matrix G_g (d × d): a sub-vector w of d weights is stored as an integer
vector z, and decoded as ŵ = G_g z, one matrix-vector product. The integer coordinates come from
Babai rounding, z = round(G_g⁻¹ w), clamped to the range a b-bit index can hold. Before coding,
a per-group μ-law compander F_μ(w) = s · sign(w) · ln(1 + μ|w|/s) / ln(1 + μ) spends more levels
near zero where heavy-tailed weights crowd. G_g starts from the Cholesky factor of the group's
covariance and is learned, with μ, by alternating (a) Babai rounding with G fixed and (b) a
gradient step on G and μ with z fixed, on the layer's output error over calibration activations X:

    L_g(G, μ) = ‖W_g X − Ŵ_g X‖² + λ ‖G − G⁽⁰⁾‖².

Bits follow salience: some groups get N + 1 bits, as many get N − 1, the rest N, so the mean
is exactly N. The paper reports 2-bit Llama-2-7B at WikiText-2 perplexity 5.41 (FP16 5.12),
ahead of QuIP# (6.19) and QTIP (5.91), and ablations in which one shared lattice (5.89 vs 5.64),
uniform bits (5.79) or global companding (5.87) each do worse.

**What the toy keeps.** Babai rounding with b-bit clamping, per-group μ-law companding (μ in the
paper's [10, 255], or one global μ in the paper's ablation), the learnable per-group generator
with Cholesky initialization and the λ-anchored alternating fit on output error, salience bit
allocation with an exact mean, decoding as G z, and an honest bit count: index bits plus side
information (G, μ and the compander's scale stored and charged in fp16, a 2-bit code of each
group's width) in true bits per weight.

**How it is compared** (`experiment`, `quantize`): a small character transformer
(`toyscale.llm.tinylm`, committed weights: `model`) has every Linear layer coded at 2, 3 and 4
bits. Every arm is held to the full GLVQ's charged size: index bits plus side information, whose
per-group part (G, μ, s, the width codes) is charged at the paper's share (its 8 × 8 generators on
groups of 128 columns × 4,096 rows cost a 64th of what the toy's 4 × 4 generators on 2,048-weight
groups cost; `experiment.PAPER_SIDE_CHARGE`) and whose per-row part (scales, a scalar grid's steps)
is charged in full. An arm that stores less spends the difference on index bits of whole groups.
The baselines are RTN with a clip search and GPTQ error feedback, each per row or per block of 64
or 32 weights of a row, that block chosen on validation text, with the method's salience
allocation or with uniform bits; GLVQ chooses its learning step on validation too, and the
lattice kept at its start its compander's μ⁽⁰⁾, so every arm has three choices. The lattice fit
keeps each lattice's lowest calibration output error within `experiment.FIT_ITERATIONS`
alternations (early stopping on the fitted objective). An attribution table switches each of
GLVQ's ideas on alone (the lattice with uniform bits, learned or at its Cholesky start; salience
bits for the scalar grids; one shared lattice; one global μ; μ → 0), with RTN at nominal index
bits and GLVQ with μ free below the paper's range (a departure). The LM boundary sweeps the
share of side information charged, from none through the paper's to all of it (the toy's own
groups, the chapter's previous world). A synthetic warm-up codes heavy-tailed, stretched groups
at equal total bits per coordinate against RTN, PCA + RTN and Cholesky-whitened RTN, with an
i.i.d. Gaussian control; its boundary sweeps the tails' heaviness (`results`). Margins come from
calibration seeds (`claims`).

**What the toy finds.** The claims table says which claims hold and which do not, and why:
GPTQ's error feedback codes this model better than the learned lattice; what carries GLVQ's
gain over uniform bits is the salience allocation, which helps every coder; learning the
lattice improves on its Cholesky start; in the warm-up the learned lattice wins only where the
groups have heavy tails and a shape to learn.

**What it drops.** Scale (a 100k-weight model, not 7B), the paper's lattice dimensions (d = 4
here instead of 8 to 32, so that fp16 side information stays near 0.15 bits per weight on our
2,048-weight groups, before the regime's charge), QuIP#'s and QTIP's codebooks, GPTQ's
activation ordering, and fine-tuning after quantization. Our own choices, where the paper is
not specific: groups are blocks of whole rows (output channels) of 2,048 weights, sub-vectors are d
consecutive weights of a row, μ⁽⁰⁾ is picked from {10, 40, 255} by output error, salience is the
Fisher-weighted squared error Σ F_ii Δw_i² of a group at N bits, and the code is a lattice coset
G(z + ½) so that the 2^b levels per coordinate sit symmetrically about zero, as RTN's do.

The package: `lattice` (Babai rounding, companding, the learned lattice of one matrix, bit
accounting), `quantize` (the baselines, salience bits, the equal-budget rule, the arms),
`synthetic` (the warm-up), `model` (the trained LM, committed, with its load key), `experiment`
(`Config`, `run`), `claims` (`CLAIMS`, `FALSIFIERS`), `figures`, `results` (the committed five
seeds and boundary).
"""

from .claims import CLAIMS, FALSIFIERS
from .experiment import MAIN_ARMS, SALIENCE_SCALARS, SYNTHETIC_KINDS, Config, Result, arm_bits, run, run_synthetic
from .figures import ARM_LABELS, attribution_table, fig_attribution, fig_lattice, fig_synthetic, fig_tradeoff
from .lattice import (
    FP16_BITS,
    WIDTH_CODE_BITS,
    GLVQCode,
    GLVQSettings,
    babai_round,
    bits_per_weight,
    decode,
    glvq_quantize,
    index_range,
    mu_law,
    mu_law_inverse,
    nearest_point,
    replace_settings,
)
from .model import LMTraining, code_fingerprint, trained_model
from .quantize import (
    ARMS,
    METHODS,
    Arm,
    BitPlan,
    allocate_bits,
    bit_plan,
    glvq_side_bits,
    gptq_quantize,
    match_bits,
    quantize_model,
    rtn_matrix,
    rtn_quantize,
    scalar_side_bits,
)
from .synthetic import (
    SCALAR_ARMS,
    SYNTHETIC_ARMS,
    SYNTHETIC_METHODS,
    equal_rate_gain,
    pca_rtn,
    sqnr_at_rate,
    sqnr_db,
    synthetic_groups,
    synthetic_points,
)

__all__ = [
    "ARMS",
    "ARM_LABELS",
    "CLAIMS",
    "FALSIFIERS",
    "FP16_BITS",
    "MAIN_ARMS",
    "METHODS",
    "SALIENCE_SCALARS",
    "SCALAR_ARMS",
    "SYNTHETIC_ARMS",
    "SYNTHETIC_KINDS",
    "SYNTHETIC_METHODS",
    "WIDTH_CODE_BITS",
    "Arm",
    "BitPlan",
    "Config",
    "GLVQCode",
    "GLVQSettings",
    "LMTraining",
    "Result",
    "allocate_bits",
    "arm_bits",
    "attribution_table",
    "babai_round",
    "bit_plan",
    "bits_per_weight",
    "code_fingerprint",
    "decode",
    "equal_rate_gain",
    "fig_attribution",
    "fig_lattice",
    "fig_synthetic",
    "fig_tradeoff",
    "glvq_quantize",
    "glvq_side_bits",
    "gptq_quantize",
    "index_range",
    "match_bits",
    "mu_law",
    "mu_law_inverse",
    "nearest_point",
    "pca_rtn",
    "quantize_model",
    "replace_settings",
    "rtn_matrix",
    "rtn_quantize",
    "run",
    "run_synthetic",
    "scalar_side_bits",
    "sqnr_at_rate",
    "sqnr_db",
    "synthetic_groups",
    "synthetic_points",
    "trained_model",
]
