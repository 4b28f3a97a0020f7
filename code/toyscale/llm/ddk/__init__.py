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
English prose, Python source, arithmetic, JSON-like records, a cipher of English) with disjoint
train, validation (drives r) and test (reported) splits; Eq. 1 and Eq. 2 exactly; sampling the
next K steps' batches by r; the loss CE + γ · KL; and the paper's arms at equal tokens: CPT
(cross-entropy on a uniform mix), KD (uniform mix), DDK, DDK without smoothing (Eq. 1 at every
update), and a static mix fixed at the first r (r₀). Like the paper's student, ours starts
already pretrained: a short cross-entropy warm-up on the uniform mix, shared by every arm.

**What it drops.** The scale (the student is a one-block character transformer of about
20,000 weights), the benchmarks (the metric is the per-domain test perplexity ratio
student/teacher, its mean and its worst domain, fixed before any run), and the teacher network:
the teacher is an interpolated character 5-gram model (Witten–Bell smoothing, counts in NumPy)
fitted on the training splits, plus a calculator that knows the answer once a whole fact
`a+b=` is in view. Without the calculator a small transformer beats an n-gram on arithmetic,
and distillation needs a teacher that is better everywhere (checked in every run). It gives a
full next-character distribution at every position, is deterministic and cheap, and its
distributions for the training windows are computed once and shared by every arm.
"""

from .claims import (
    CLAIMS,
    CPT_MARGIN,
    KD_MARGIN,
    R_CHANGE_MARGIN,
    SMOOTHING_TOLERANCE,
    STATIC_MARGIN,
    WORST_MARGIN,
)
from .experiment import (
    ARMS,
    DDK_ARMS,
    Config,
    DistillData,
    Result,
    cut_windows,
    distill_arm,
    perplexity_ratio,
    prepare_data,
    run,
    student_nats,
    teacher_nats,
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
    fig_mixture,
    fig_ratios,
    fig_worst_gap,
)
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
    "CPT_MARGIN",
    "DDK_ARMS",
    "DOMAIN_COLORS",
    "KD_MARGIN",
    "R_CHANGE_MARGIN",
    "SMOOTHING_TOLERANCE",
    "STATIC_MARGIN",
    "WORST_MARGIN",
    "Config",
    "DistillData",
    "NGramTeacher",
    "Result",
    "calculator_override",
    "cut_windows",
    "distill_arm",
    "distillation_loss",
    "domain_factors",
    "fig_mixture",
    "fig_ratios",
    "fig_worst_gap",
    "perplexity_ratio",
    "prepare_data",
    "run",
    "sample_domains",
    "smooth_factors",
    "student_nats",
    "teacher_nats",
    "warm_up",
]
