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

**What the toy keeps.** Babai rounding with b-bit clamping, per-group μ-law companding, the
learnable per-group generator with Cholesky initialization and the λ-anchored alternating fit on
output error, salience bit allocation with an exact mean, decoding as G z, and an honest bit
count: index bits plus side information (G, μ and the compander's scale in fp16, the group's bit
width) in bits per weight. Baselines: RTN with a per-row scale and a clip search, GPTQ-style
error feedback on the same grid, and the ablations (one lattice shared by a layer's groups, no
companding, uniform bits). Two experiments: a synthetic warm-up on heavy-tailed, anisotropic
groups (SQNR vs bits, with a negative control on i.i.d. Gaussian vectors), and a small character
transformer (`toyscale.llm.tinylm`) trained on Python's documentation prose, every Linear layer
quantized at 2, 3 and 4 bits (the ablations at 2), held-out bits per character against true bits
per weight. The trained model's weights are committed (`model`), so the experiment runs in seconds.

**What it drops.** Scale (a 100k-weight model, not 7B), the paper's lattice dimensions (d = 4
here instead of 8 to 32, so that fp16 side information stays near 0.15 bits per weight on our
2,048-weight groups), and fine-tuning after quantization. Our own choices, where the paper is
not specific: groups are blocks of whole rows (output channels) of 2,048 weights, sub-vectors
are d consecutive weights of a row, μ⁽⁰⁾ is picked from {10, 40, 255} by output error, salience is
the Fisher-weighted squared error Σ F_ii Δw_i² of a group at N bits, and the code is a lattice coset G(z + ½) so that
the 2^b levels per coordinate sit symmetrically about zero, as RTN's do.

The package: `lattice` (Babai rounding, companding, the learned lattice of one matrix, bit
accounting), `quantize` (baselines, salience bits, the synthetic warm-up, quantizing every layer
of a model), `model` (the trained LM, committed), `experiment` (`Config`, `run`, `CLAIMS`, figures).
"""

from toyscale.llm.glvq.experiment import (
    ARM_LABELS,
    CLAIMS,
    Config,
    Result,
    arm_bits,
    fig_lattice,
    fig_synthetic,
    fig_tradeoff,
    run,
)
from toyscale.llm.glvq.lattice import (
    FP16_BITS,
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
from toyscale.llm.glvq.model import LMTraining, trained_model
from toyscale.llm.glvq.quantize import (
    ABLATION_ARMS,
    LM_ARMS,
    SYNTHETIC_ARMS,
    allocate_bits,
    gptq_quantize,
    pca_rtn,
    quantize_model,
    rtn_quantize,
    salience_bits,
    sqnr_db,
    synthetic_groups,
    synthetic_sqnr,
)

__all__ = [
    "ABLATION_ARMS",
    "ARM_LABELS",
    "CLAIMS",
    "FP16_BITS",
    "LM_ARMS",
    "SYNTHETIC_ARMS",
    "Config",
    "GLVQCode",
    "GLVQSettings",
    "LMTraining",
    "Result",
    "allocate_bits",
    "arm_bits",
    "babai_round",
    "bits_per_weight",
    "decode",
    "fig_lattice",
    "fig_synthetic",
    "fig_tradeoff",
    "glvq_quantize",
    "gptq_quantize",
    "index_range",
    "mu_law",
    "mu_law_inverse",
    "nearest_point",
    "pca_rtn",
    "quantize_model",
    "replace_settings",
    "rtn_quantize",
    "run",
    "salience_bits",
    "sqnr_db",
    "synthetic_groups",
    "synthetic_sqnr",
    "trained_model",
]
