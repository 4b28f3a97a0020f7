# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # GLVQ: a learned lattice for every group of weights
#
# A language model's weights are most of its memory, and memory is what decides how many
# GPUs serve it. Storing each weight in 2 bits instead of 16 shrinks the model eight times,
# but plain round-to-nearest (RTN) on a uniform grid spends its four levels badly: weights
# are heavy-tailed, correlated, and not equally important to what the layer computes.
#
# *Learning Grouped Lattice Vector Quantizers for Low-Bit LLM Compression*
# {cite}`zhang2025glvq` (GLVQ, NeurIPS 2025) gives every group of weights its own lattice,
# with a generator matrix learned on the layer's output error. It reports a 2-bit
# Llama-2-7B at WikiText-2 perplexity **5.41, against 5.12 for the 16-bit model**, ahead
# of the lattice codebook of QuIP# (6.19) and of QTIP (5.91).
#
# This chapter builds GLVQ from its pieces, tries it on synthetic groups, then quantizes
# every Linear layer of a small character-level transformer to 2, 3 and 4 bits, and checks
# which of the paper's claims hold.

# %%
import torch

from toyscale.core import Table, check_results, claims_table, set_threads
from toyscale.llm import glvq
from toyscale.llm.corpus import build_corpus, decode

set_threads(1)  # small tensors: one thread is the fastest and keeps results stable

# %% [markdown]
# ## The idea
#
# **A lattice per group.** The weights of a layer are cut into groups, and each group's
# weights into sub-vectors $w \in \mathbb R^d$. A group $g$ owns a generator matrix
# $G_g \in \mathbb R^{d \times d}$; its lattice is every integer combination of $G_g$'s
# columns. A sub-vector is stored as an integer vector $z$, and decoded with one
# matrix-vector product:
#
# $$
# \hat w = G_g\, z, \qquad z \in \{-2^{b-1}, \dots, 2^{b-1}-1\}^d .
# $$
#
# With $G_g = s I$ this is RTN with step $s$. A general $G_g$ can stretch, shear and rotate
# the grid to follow how the group's weights are spread.
#
# **Babai rounding.** Finding the nearest lattice point is hard in general. GLVQ uses
# Babai's rounding {cite}`babai1986nearest`, exact when $G$'s columns are orthogonal and a
# cheap approximation otherwise:
#
# $$
# z = \operatorname{round}(G_g^{-1} w), \text{ clamped to } b \text{ bits}.
# $$
#
# **Companding.** Before coding, each group passes through a μ-law compander
# $F_\mu(w) = s \operatorname{sign}(w) \ln(1 + \mu |w|/s) / \ln(1 + \mu)$, so a uniform code of
# $F_\mu(w)$ puts more levels near zero, where most weights are.
#
# **Learning $G$.** $G_g^{(0)}$ is the Cholesky factor of the group's covariance (scaled).
# Then two steps alternate: Babai rounding with $G$ fixed, and a gradient step on $G$ and
# $\mu$ with $z$ fixed, on the error of the layer's *output* over calibration inputs $X$:
#
# $$
# L_g(G, \mu) = \lVert W_g X - \hat W_g X \rVert^2 + \lambda \lVert G - G^{(0)} \rVert^2 .
# $$
#
# **Bits by salience.** Some groups matter more. Groups get $N-1$, $N$ or $N+1$ bits, as many
# up as down, so the mean is exactly $N$.

# %% [markdown]
# ## Building it
#
# ### Babai rounding, clamped to b bits
#
# A 2-D lattice with a skewed basis. Babai gives the integer coordinates; with `bits=2` each
# coordinate must fit in $[-2, 1]$, and the function checks that it does:

# %%
G = torch.tensor([[1.0, 0.6], [0.0, 0.8]], dtype=torch.float64)
X = torch.tensor([[0.9, -2.7, 3.5], [1.1, 0.2, -2.4]], dtype=torch.float64)
Z = glvq.babai_round(G, X)
Z2 = glvq.babai_round(G, X, bits=2)
print("Z, unclamped:\n", Z.numpy())
print("Z, 2 bits:\n", Z2.numpy())
assert Z2.min() >= -2 and Z2.max() <= 1

# %% [markdown]
# How far is Babai from the true nearest point? For a random skewed 3-D lattice we compare
# it with a brute-force search over every point within two steps of Babai's answer. Look at
# how often the two agree and how much farther Babai's point is when they do not:

# %%
G3 = torch.eye(3, dtype=torch.float64) + 0.4 * torch.randn(
    3, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64
)
points = 3 * torch.randn(
    300, 3, generator=torch.Generator().manual_seed(3), dtype=torch.float64
)
babai = glvq.babai_round(G3, points.T).T
exact = torch.stack([glvq.nearest_point(G3, x, radius=2) for x in points])
d_babai = ((babai @ G3.T - points) ** 2).sum(dim=1)
d_exact = ((exact @ G3.T - points) ** 2).sum(dim=1)
assert bool((d_exact <= d_babai + 1e-12).all())
same = (d_exact == d_babai).double().mean().item()
excess = (d_babai.sum() / d_exact.sum()).item() - 1
print(f"Babai finds the nearest point for {same:.0%} of the vectors;")
print(f"its total squared distance is {excess:.1%} above the nearest points'")

# %% [markdown]
# ### The compander
#
# μ-law companding is odd, keeps $[-s, s]$, and stretches small values. Its inverse undoes
# it exactly:

# %%
w = torch.tensor([-1.0, -0.1, -0.01, 0.0, 0.01, 0.1, 1.0], dtype=torch.float64)
mu, s = torch.tensor(40.0, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64)
y = glvq.mu_law(w, mu, s)
print("w    :", w.numpy())
print("F(w) :", y.numpy().round(3))
torch.testing.assert_close(glvq.mu_law_inverse(y, mu, s), w)

# %% [markdown]
# ### Learning the lattice of one group
#
# One synthetic group of 8-D vectors, heavy-tailed and stretched along random directions.
# We code it at 2 bits per coordinate with RTN (one step for the group), with the scaled
# Cholesky start $G^{(0)}$, and with the learned $G$. Here the "output error" is the plain
# squared error ($X = I$). Watch the signal-to-quantization-noise ratio (SQNR):

# %%
group = glvq.synthetic_groups(1, 512, 8, seed=0)
identity = torch.eye(8, dtype=torch.float64)
one_group = glvq.GLVQSettings(dim=8, group_size=group.numel(), row_scale=False)
start = glvq.glvq_quantize(
    group, identity, 2, glvq.replace_settings(one_group, learn=False)
)
learned = glvq.glvq_quantize(group, identity, 2, one_group)
rtn_hat, _ = glvq.rtn_quantize(group, 2, block=group.numel())
sqnr = {
    "RTN": glvq.sqnr_db(group, rtn_hat),
    "GLVQ, G at its Cholesky start": glvq.sqnr_db(group, glvq.decode(start)),
    "GLVQ, G learned": glvq.sqnr_db(group, glvq.decode(learned)),
}
assert sqnr["GLVQ, G learned"] >= sqnr["GLVQ, G at its Cholesky start"]
Table(["coder", "SQNR (dB)"], [[k, v] for k, v in sqnr.items()], "One group, 2 bits")

# %% [markdown]
# ### Bits by salience, with an exact mean
#
# `allocate_bits` gives the most salient quarter of the groups one bit more and the least
# salient quarter one bit less. In the language model a group's salience is the loss
# increase its $N$-bit error is expected to cause, $\sum_i F_{ii}\,\Delta w_i^2$, with
# $F$ the diagonal Fisher information on calibration text.

# %%
salience = torch.tensor([5.0, 0.1, 3.0, 0.2, 9.0, 1.0, 0.5, 2.0])
allocation = glvq.allocate_bits(salience, 2)
print("salience:", salience.tolist())
print("bits    :", allocation.tolist(), "mean", allocation.double().mean().item())

# %% [markdown]
# ### The honest bill: side information
#
# Every number GLVQ stores besides the indices is charged in fp16: per group the $d \times d$
# generator, μ and the compander's scale (plus a 2-bit code for the group's bit width), and
# per row one scale, which RTN stores too. For a 192 × 64 layer in groups of 2,048 weights:

# %%
W = torch.randn(192, 64, dtype=torch.float64) * 0.05
code = glvq.glvq_quantize(
    W, torch.eye(64, dtype=torch.float64), 2, glvq.GLVQSettings(iterations=5)
)
bpw = glvq.bits_per_weight(code.index_bits(), code.side_bits(), W.numel())
print(f"index bits {code.index_bits():,}, side bits {code.side_bits():,}")
print(f"true size: {bpw:.3f} bits per weight at 2 bits nominal")

# %% [markdown]
# ### The language model and its text
#
# The model is `toyscale.llm.tinylm.TinyLM`: a two-block character transformer of width 64
# (its weight count is printed in the experiment below). It trains on English prose that ships with
# Python (its documentation topics, `pydoc_data`), split into blocks dealt to train,
# validation and test. The quantizers see activations of the **validation** split only;
# bits per character are measured on the **test** split.

# %%
prose = build_corpus(["prose"], seed=0)["prose"]
print({split: len(prose.split(split)) for split in ("train", "val", "test")})
print(repr(decode(prose.test[:160])))

# %% [markdown]
# ## The experiment
#
# `glvq.run` does everything: the synthetic warm-up (16 groups of 8-D vectors, heavy-tailed
# and anisotropic, and a control of i.i.d. Gaussian vectors), then the language model:
# collect $H = XX^\top/n$ for every Linear layer on calibration text, and quantize all of them
# at 2, 3 and 4 bits with RTN, GPTQ and GLVQ, and at 2 bits with the three ablations of GLVQ.
# Training the model takes a minute or more per seed, so its weights, trained by
# `glvq.LMTraining()` for each seed, are committed to the repository
# (`data/llm/glvq_tinylm.npz`, in fp16, the paper's reference precision; its data card gives
# the command that retrains them). `run` loads them, checks their checksum and that they were
# trained on this seed's training text; everything else is computed now, for three seeds.

# %%
results = [glvq.run(glvq.Config(), seed=s) for s in (0, 1, 2)]
result = results[0]
assert all(r.lm_loaded for r in results)
print(f"{result.n_weights:,} weights in Linear layers")
print(f"fp16 model: {result.metrics['fp']['bpc']:.3f} bits per character (seed 0)")
steps = result.config.training.steps
print(f"trained for {steps:,} Adam steps; loss per 100 steps (nats): ", end="")
print(f"{result.train_history[0]:.2f} → {result.train_history[-1]:.2f}")

# %% [markdown]
# First the warm-up. On structured groups the learned lattice gains several dB over RTN and
# over PCA + RTN (which decorrelates each group but keeps a square grid). On i.i.d. Gaussian
# vectors, where there is no shape to learn, it does not beat RTN (dotted lines):

# %%
glvq.fig_synthetic(result).show()

# %% [markdown]
# What does a learned lattice look like? One 2-D group of heavy-tailed, stretched vectors,
# coded at 2 bits per coordinate: RTN's sixteen codewords form a square grid; GLVQ's follow
# the group's axes and crowd where the points are:

# %%
glvq.fig_lattice(result).show()

# %% [markdown]
# Now the language model. Each line is one method at 2, 3 and 4 bits nominal, placed at its
# *true* size including side information; the ablations are single points at 2 bits, where
# the paper makes them. Lower is better. Hover for the values:

# %%
glvq.fig_tradeoff(result).show()

# %% [markdown]
# The same numbers as a table (bits per character, bpc, and true bits per weight, bpw):

# %%
Table.from_nested(
    {arm: {k: v for k, v in m.items()} for arm, m in result.metrics.items()},
    row_title="method",
    caption="Seed 0: held-out bits per character and true bits per weight "
    "(the ablations at 2 bits only)",
)

# %% [markdown]
# ## Does the claim hold?
#
# Each claim compares GLVQ with a real baseline on the same model, calibration text and test
# text, paired by seed; a check passes when the mean difference clears an explicit margin
# and GLVQ wins on every seed (with three seeds). The margins were set from the seed noise
# of the paired differences. Claims the toy cannot show stay in the table, with the reason.

# %%
outcomes = check_results(glvq.CLAIMS, results, seeds=[0, 1, 2], chapter="glvq")
assert not any(o.fails_strict for o in outcomes), "an expected claim failed"
claims_table(outcomes)

# %% [markdown]
# GLVQ stores more side information than RTN, so "2 bits" is not quite the same size for
# both. To compare at equal *true* size, we read RTN's bits per character off the straight
# line between its 2-bit and 3-bit points, at GLVQ's true size. A convex curve lies below its
# chord, so this flatters GLVQ a little; look at how large the gap stays even so:

# %%
rows = []
for r in results:
    m = r.metrics
    extra = m["glvq"]["bpw@2"] - m["rtn"]["bpw@2"]
    t = extra / (m["rtn"]["bpw@3"] - m["rtn"]["bpw@2"])
    rtn_same_size = (1 - t) * m["rtn"]["bpc@2"] + t * m["rtn"]["bpc@3"]
    rows.append([r.seed, extra, m["glvq"]["bpc@2"], rtn_same_size, m["rtn"]["bpc@2"]])
Table(
    [
        "seed",
        "GLVQ's extra bits/weight",
        "GLVQ bpc",
        "RTN bpc at GLVQ's size",
        "RTN 2-bit",
    ],
    rows,
    "2 bits nominal, compared at equal true size",
)

# %% [markdown]
# What holds, and what does not:
#
# - **2 bits.** GLVQ keeps the model usable where RTN with a clip search falls apart, and
#   the gain survives the comparison at equal true size above. Much of it comes from what RTN
#   lacks: the fit on *output* error over calibration activations, and salience bits (the
#   uniform-bits ablation gives back most of the gain).
# - **The gap shrinks with bits.** At 4 bits every method is close to the unquantized
#   fp16 model, and the difference between them is small.
# - **Per-group lattices.** One lattice per group beats one lattice shared by a layer's
#   groups of the same bit width on every seed, though by less than the other gains: the
#   smallest effect in the table, and the closest to its margin.
# - **Error feedback.** GLVQ beats our GPTQ-style baseline at 2 bits on every seed. It stands
#   in for the paper's rivals (QuIP#, QTIP), which also feed rounding errors forward but code
#   with far better codebooks than RTN's grid; the toy does not build them.
# - **Companding** does not clearly help here: with and without it are within seed noise.
#   The paper's μ ≥ 10 bends the grid of groups whose weights are nearly Gaussian, where a
#   bent grid has little to gain.
# - **The negative control.** On i.i.d. Gaussian vectors the learned lattice does not beat
#   RTN: the gain in the warm-up comes from the groups' shape, not from the optimizer.

# %% [markdown]
# ## At full scale
#
# The toy's groups hold 2,048 weights and $d = 4$; the paper uses groups of 128 columns of
# matrices with thousands of rows and $d$ from 8 to 32. Side information then almost
# vanishes. A back-of-envelope for Llama-2-7B's 4096 × 4096 projections:

# %%
rows, cols, group_cols, d = 4096, 4096, 128, 8
group_weights = rows * group_cols
side = d * d * 16 + 2 * 16 + 2  # G, μ, s in fp16 and a bit-width code
print(f"side information: {side / group_weights:.4f} bits per weight")
params = 6.7e9
for bits in (16, 2):
    print(f"{bits:>2}-bit weights: {params * bits / 8 / 2**30:.1f} GiB")
decode_macs = d  # ŵ = G z: d multiply-adds per decoded weight
print(f"decoding costs {decode_macs} multiply-adds per weight, once per weight read")

# %% [markdown]
# At that scale the fit is the cost: every group's $G$ is trained on calibration activations,
# which the paper does in GPU-hours, while RTN needs none. Decoding is cheap but not free: a
# $d \times d$ matrix-vector product per sub-vector, which a kernel must fuse with the matrix
# multiplication it feeds. In this toy, bits per character shows the same story as
# perplexity: the fp16 model sets the floor, and the question is how close to it
# each method stays at 2 bits.

# %% [markdown]
# ## Exercises
#
# 1. **Bigger lattices.** Rerun with `glvq.Config(glvq=glvq.GLVQSettings(dim=8))`. Does the
#    2-bit result improve? What happens to the true bits per weight, and why?
#
# ```{admonition} Solution
# :class: dropdown
# With $d = 8$ each group stores a generator of 64 fp16 numbers instead of 16, so the side
# information roughly quadruples to about half a bit per weight on 2,048-weight groups. The
# index cost is unchanged. Whether the bits per character improve depends on the seed; at
# equal *true* size the larger lattice rarely pays for itself in a model this small.
# ```
#
# 2. **Calibration on the test text.** Change `run` to compute the Hessians on `prose.test`
#    instead of `prose.val`. Which methods gain, and why is this not allowed?
#
# ```{admonition} Solution
# :class: dropdown
# GLVQ and GPTQ gain, RTN does not: only methods fitted on activations see the calibration
# text. Fitting on the evaluation text rewards memorising it and overstates the method.
# ```
#
# 3. **Salience without Fisher.** Replace the salience by each group's output energy
#    $\lVert W_g X \rVert^2$. What happens at 2 bits?
#
# ```{admonition} Solution
# :class: dropdown
# Energy says nothing about how the model's loss reacts to a group's error; groups that get
# 1 bit can be ones the loss depends on, and the 2-bit result gets worse, sometimes worse
# than uniform bits. This is why the chapter uses the Fisher-weighted error.
# ```

# %% [markdown]
# ## References
#
# - The paper: {cite}`zhang2025glvq`.
# - Babai's rounding: {cite}`babai1986nearest`.
# - Error-feedback quantization, our GPTQ-style baseline: {cite}`frantar2023gptq`.
# - Lattice codebooks for LLM weights: {cite}`tseng2024quipsharp`.
#
# ```{bibliography}
# :filter: docname in docnames
# ```
