"""DDK: distilling domain knowledge, with a domain mixture that follows where the student lags.

Jiaheng Liu, Chenchen Zhang, Jinyang Guo, Yuanxing Zhang, Haoran Que, Ken Deng, Zhiqi Bai, Jie Liu,
Ge Zhang, Jiakai Wang, Yanan Wu, Congnan Liu, Wenbo Su, Jiamang Wang, Lin Qu and Bo Zheng.
*DDK: Distilling Domain Knowledge for Efficient Large Language Models.* NeurIPS 2024
(arXiv:2407.16154).

**The problem.** Knowledge distillation trains a small student LM on the output distributions of
a large teacher. The training data mix many domains (web text, code, math, ...), and the student
falls short of the teacher by different amounts in each. Sampling the domains in fixed
proportions spends as many tokens on domains where the student is already close to the teacher
as on those where it lags.

**The method.** Every K steps the student and the teacher are scored on a validation set of each
domain i, perplexities ℓ_S[i] and ℓ_T[i]. The *domain discrepancy factor*

    r[i] = softmax_i(ℓ_S[i] / ℓ_T[i])                                        (Eq. 1)

says where the student lags most. It is not used raw: *factor smoothing* keeps a history,

    ψ[i] = r[i] · exp(ℓ_S[i] / ℓ_T[i]),   r ← α · ψ / Σ_j ψ[j] + (1 − α) / N   (Eq. 2)

with α = 0.5 and N domains, and the next K steps draw their training data from the domains in
proportion to r. The loss is the usual distillation loss, cross-entropy plus γ times the KL
divergence between the teacher's and the student's next-token distributions. The paper
distills Qwen-1.5 14B into Qwen-1.5 1.8B and reports an average over 11 benchmarks of 55.41,
against 52.87 for plain KD with the same data and 50.48 for continued pretraining (CPT) of the
student without a teacher; without factor smoothing 56.56 against 57.46 with it (another
ablation setting).

**What the toy keeps.** Five text domains of different difficulty (`toyscale.llm.corpus`:
English prose, Python source, arithmetic, JSON-like records, a cipher of English, dealt by the
prose's own permutation so no text crosses splits) with disjoint train, validation (scores every
arm, drives r) and test (reported) splits; Eq. 1 and Eq. 2 exactly, DDK starting from the uniform
mix so that its first steps already draw from a smoothed mixture; sampling the next K steps'
batches by r; the loss CE + γ · KL; and the paper's arms at equal budgets: CPT (cross-entropy on a
uniform mix), KD (uniform mix), DDK, DDK without smoothing (Eq. 1 at every update), and the static
first mixture (DDK's first r, kept). Like the paper's student, ours starts already pretrained: a
short cross-entropy warm-up on the uniform mix, shared by every arm.

**How it is compared** (`experiment`, `claims`, `sweeps`): every arm gets the same learning rate and
maximum budget, is scored on validation every K steps and keeps its best validation mean ratio; the
test split is read once per arm. γ was chosen on validation, by a sweep on tuning seeds kept apart
from the book's (`results.GAMMAS`); the margins come from calibration seeds. KD and the static
first mixture are the baselines of every DDK claim; CPT is shown beside them. A negative control
mixes the domains' windows until the gaps are equal, and a sweep of that mixing (`gap_boundary`)
shows where the effect lives.

**What the toy finds.** DDK narrows the worst domain's gap more than KD and more than the static
first mixture, by margins set on calibration seeds; the boundary sweep shows how that lead moves
with the spread of the domains' gaps, and with equal gaps it must vanish (a control). It does not
lower the mean gap over domains below KD's or the static mixture's: what the lagging domains gain,
the easy ones give back. Distillation itself beats CPT, KD as much as DDK. Smoothing steadies r by
construction; that it improves the result is not established at this scale. The claims table says
which, and why.

**What it drops.** The scale (the student is a one-block character transformer of about
20,000 weights), the benchmarks (the metric is the per-domain test perplexity ratio
student/teacher, its mean and its worst domain, fixed before any run), and the teacher network:
the teacher is an interpolated character 5-gram model (Witten–Bell smoothing, counts in NumPy)
fitted on the training splits, plus a calculator that knows the answer once a whole fact
`a+b=` is in view. Without the calculator a small transformer beats an n-gram on arithmetic,
and distillation needs a teacher that is better everywhere (a premise, asserted in the tests and
the notebook). It gives a full next-character distribution at every position, is deterministic
and cheap, and its distributions for the training windows are computed once and shared by every
arm. They come from an n-gram fitted on those same windows, so they are more confident there than
on held-out text; every distilled arm shares that.
"""

from .claims import (
    CLAIMS,
    CONTROL_BAND,
    FALSIFIERS,
    KD_MARGIN,
    R_CHANGE_MARGIN,
    SMOOTHING_MARGIN,
    STATIC_MARGIN,
    WORST_KD_MARGIN,
    WORST_STATIC_MARGIN,
)
from .experiment import (
    ARMS,
    CONTROL_ARMS,
    DDK_ARMS,
    METHODS,
    SCHEDULES,
    ArmFit,
    Config,
    DistillData,
    Result,
    cut_windows,
    distill_arm,
    first_mixture,
    gap_spread,
    measure,
    mix_domains,
    perplexity_ratio,
    prepare,
    prepare_data,
    run,
    student_nats,
    teacher_nats,
    teacher_window_nats,
    warm_up,
)
from .factors import (
    distillation_loss,
    domain_factors,
    sample_domains,
    smooth_factors,
)
from .figures import (
    ARM_LABELS,
    DOMAIN_COLORS,
    fig_gamma,
    fig_mixture,
    fig_ratios,
    fig_worst_gap,
)
from .sweeps import SWEEP_METRICS, gamma_sweep, gap_boundary
from .teacher import (
    CALCULATOR_CONFIDENCE,
    NGramTeacher,
    calculator_override,
)

__all__ = [
    "ARMS",
    "ARM_LABELS",
    "CALCULATOR_CONFIDENCE",
    "CLAIMS",
    "CONTROL_ARMS",
    "CONTROL_BAND",
    "DDK_ARMS",
    "DOMAIN_COLORS",
    "FALSIFIERS",
    "KD_MARGIN",
    "METHODS",
    "R_CHANGE_MARGIN",
    "SCHEDULES",
    "SMOOTHING_MARGIN",
    "STATIC_MARGIN",
    "SWEEP_METRICS",
    "WORST_KD_MARGIN",
    "WORST_STATIC_MARGIN",
    "ArmFit",
    "Config",
    "DistillData",
    "NGramTeacher",
    "Result",
    "calculator_override",
    "cut_windows",
    "distill_arm",
    "distillation_loss",
    "domain_factors",
    "fig_gamma",
    "fig_mixture",
    "fig_ratios",
    "fig_worst_gap",
    "first_mixture",
    "gamma_sweep",
    "gap_boundary",
    "gap_spread",
    "measure",
    "mix_domains",
    "perplexity_ratio",
    "prepare",
    "prepare_data",
    "run",
    "sample_domains",
    "smooth_factors",
    "student_nats",
    "teacher_nats",
    "teacher_window_nats",
    "warm_up",
]
