"""D-CPT Law: a scaling law for domain-specific continual pre-training that picks the mixture ratio.

Haoran Que, Jiaheng Liu, Ge Zhang, Chenchen Zhang, Xingwei Qu, Yinghao Ma, Feiyu Duan, Zhiqi Bai,
Jiakai Wang, Yuanxing Zhang, Xu Tan, Jie Fu, Wenbo Su, Jiamang Wang, Lin Qu and Bo Zheng.
*D-CPT Law: Domain-specific Continual Pre-Training Scaling Law for Large Language Models.*
NeurIPS 2024 (arXiv:2406.01375). This toy is written from the paper's description; it does not
use the authors' code.

**The problem.** A general language model is adapted to a domain (code, math, law) by continual
pre-training (CPT) on a mixture of domain and general text. Too little domain text and the
domain barely improves; too much and the model forgets its general ability. The usual answer is
a grid search over mixture ratios at the target model size: many full-size runs.

**The method.** Fit a scaling law to cheap runs and read the ratio off it. The D-CPT Law
predicts a loss from the model size N, the CPT tokens D and the mixture ratio r:

    L(N, D, r) = E + A / N^α + B · r^η / D^β + C / (r + ε)^γ ,

fitted separately for the domain loss (r = the domain ratio) and the general loss (r = the
general ratio), with a Huber loss and L-BFGS from several starts. The term B·r^η/D^β couples the
ratio and the data: the more of the tokens are the loss's own domain, the more they move it.
Then, e.g., the domain ratio is the one that minimises the predicted domain loss among those
whose predicted general loss stays within (1 + T) of the general model's. The paper reports
in-sample R² ≈ 0.98 for the domain loss, and held-out R² of 0.97 on unseen ratios, 0.95 on an
unseen (larger) model size and 0.91 on unseen (later) data sizes, over six domains and models of
0.5B to 4B parameters. A **Cross-Domain D-CPT Law** adds a domain-specific learnable coefficient,
computed from a cheap probe of a new domain (its initial loss and how fast it falls), so that a
new domain needs about 1 % of the normal fitting cost; this toy explains it but does not build it.

**What the toy keeps.** The law, the separate general and domain fits, Huber loss on log loss,
L-BFGS with the law's gradient written out by hand, positive parameters through a log
parametrisation, several random starts; a grid of real language-model runs (four sizes of a
character transformer, `toyscale.llm.tinylm`, from 4.6k to 104k parameters; pretrained on English
prose, `toyscale.llm.corpus`, many times longer than CPT lasts; continually pre-trained on prose
mixed with Python source at nine ratios, at a constant learning rate so that every checkpoint is a
shorter run), one independent grid per seed; held-out RMSE (bits per character, beside the grid's
checkpoint noise) on unseen ratios, an unseen larger model and unseen later D, against two simpler
laws (no r–D interaction; per-ratio Chinchilla fits interpolated between ratios) and law-free
predictors that read measured neighbours (interpolation in r, the second-largest model's curve
shifted, carry-forward); and the first use of the law, choosing the ratio for the largest model
from runs of the smaller ones, scored by the domain loss it forgoes plus the general loss by which
it breaks the limit, against a grid search on a smaller model, the cheap runs' largest feasible
ratio and trivial policies.

**What the toy finds.** The law wins where a mixture law is for: fitted on the lower half of
the ratios, it predicts the upper half better than the nearest fitted ratio, a line in r and
per-ratio laws, whose forms cannot carry the loss's curvature in r past the measurements. It is
not the best predictor on the paper's held-out splits: neighbour interpolation wins at interior
ratios and per-ratio laws on the larger model and later D; the interaction term's gain beyond
the fitted N and D is smaller than what per-ratio laws gain there; and its choice of ratio, made for base models
pretrained until general-only CPT barely moves their general loss (the paper's premise), beats
the trivial policies but not the law-free policies that read the smaller models' measured
losses. Boundary sweeps move the held-out runs away from the fitted range in r, D and N, each
against the law-free predictor, the per-ratio laws and the law without its interaction term.
The chapter's claims table and boundary figures have the numbers.

**What it drops.** Scale (characters, not tokens; 10⁵ parameters, not 10⁹; 10⁵ CPT tokens, not
10¹⁰), downstream benchmarks, the six domains (one here), and the Cross-Domain law. The grid takes
minutes, so its results are committed (`grid`, data card `dcpt_grid`) and every fit in this
chapter runs on them in seconds.

The package: `grid` (the language-model runs and the committed grids), `law` (the law, its
gradient, the fit, the simpler laws, R², the choice of ratio), `experiment` (`Config`, `run`,
the law-free predictors, the decision, the boundary), `claims` (`CLAIMS`, `FALSIFIERS`, the
calibrated margins), `results` (the committed results), `figures`.
"""

from toyscale.llm.dcpt.claims import CLAIMS, FALSIFIERS
from toyscale.llm.dcpt.experiment import (
    ARM_LABELS,
    ARMS,
    LAW_FREE_LABELS,
    POLICIES,
    POLICY_LABELS,
    SPLIT_NAMES,
    SPLITS,
    Config,
    Result,
    carry_forward,
    checkpoint_noise,
    decision,
    extrapolation_delta,
    general_drift,
    linear_in_r,
    neighbour_interpolation,
    ratio_extrapolation,
    ratio_extrapolation_delta,
    rmse,
    run,
    shifted_curve,
    size_extrapolation_delta,
    size_interpolation,
    split_masks,
)
from toyscale.llm.dcpt.figures import fig_boundary_axis, fig_choice, fig_curves, fig_held_out
from toyscale.llm.dcpt.grid import (
    COMMITTED_SEEDS,
    CONFIRMATION_GRID_SEEDS,
    RATIOS,
    Grid,
    GridConfig,
    build_grid,
    continual_pretrain,
    domain_windows,
    grid_corpus,
    load_grid,
    mixture_batch,
    pretrain,
)
from toyscale.llm.dcpt.law import (
    FORMS,
    Choice,
    Law,
    PerRatioLaw,
    choose_ratio,
    choose_ratio_limited,
    dcpt_law,
    fit_law,
    fit_per_ratio,
    huber,
    law_and_jacobian,
    objective_and_gradient,
    predict,
    r_squared,
)

__all__ = [
    "ARMS",
    "ARM_LABELS",
    "CLAIMS",
    "COMMITTED_SEEDS",
    "CONFIRMATION_GRID_SEEDS",
    "FALSIFIERS",
    "FORMS",
    "LAW_FREE_LABELS",
    "POLICIES",
    "POLICY_LABELS",
    "RATIOS",
    "SPLITS",
    "SPLIT_NAMES",
    "Choice",
    "Config",
    "Grid",
    "GridConfig",
    "Law",
    "PerRatioLaw",
    "Result",
    "build_grid",
    "carry_forward",
    "checkpoint_noise",
    "choose_ratio",
    "choose_ratio_limited",
    "continual_pretrain",
    "dcpt_law",
    "decision",
    "domain_windows",
    "extrapolation_delta",
    "fig_boundary_axis",
    "fig_choice",
    "fig_curves",
    "fig_held_out",
    "fit_law",
    "fit_per_ratio",
    "general_drift",
    "grid_corpus",
    "huber",
    "law_and_jacobian",
    "linear_in_r",
    "load_grid",
    "mixture_batch",
    "neighbour_interpolation",
    "objective_and_gradient",
    "predict",
    "pretrain",
    "r_squared",
    "ratio_extrapolation",
    "ratio_extrapolation_delta",
    "rmse",
    "run",
    "shifted_curve",
    "size_extrapolation_delta",
    "size_interpolation",
    "split_masks",
]
