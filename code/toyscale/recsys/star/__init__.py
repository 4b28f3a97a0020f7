"""STAR: one model that serves many domains, with a star topology of shared and domain weights.

Xiang-Rong Sheng, Liqin Zhao, Guorui Zhou, Xinyao Ding, Binding Dai, Qiang Luo, Siran Yang,
Jingshan Lv, Chi Zhang, Hongbo Deng and Xiaoqiang Zhu. *One Model to Serve All: Star Topology
Adaptive Recommender for Multi-Domain CTR Prediction.* CIKM 2021 (arXiv:2101.11427).

**The problem.** A large platform predicts clicks in many domains (scenarios): the home feed,
a search results page, a mini-program. They share users and items but differ in who comes,
what they see and how they click. One shared model trained on all the data blurs the domains;
one model per domain ignores what they share and starves the small ones of data.

**The method.** Three pieces, each a change to an ordinary embedding-and-MLP CTR model.

* *Partitioned normalization* (PN). Batch normalization assumes every sample comes from one
  distribution. With a batch from domain p, PN normalizes with the batch's statistics and
  applies a shared and a domain scale and offset,

      z' = (γ ⊙ γ_p) ⊙ (z − μ) / √(σ² + ε) + (β + β_p),

  and at test time uses *per-domain* moving averages of μ and σ² (batch norm keeps one
  average for all domains). Training batches hold one domain each.
* *The star-topology fully connected network*. Every layer keeps shared weights W, b (the
  centre of the star) and, per domain p, weights W_p, b_p (the points); domain p's layer is

      out_p = φ((W_p ⊙ W)ᵀ in_p + b_p + b),

  with ⊙ the element-wise product. W_p starts at ones and b_p at zeros, so training starts
  from the shared network and each domain moves away from it only as far as its data pull.
  At serving time W_p ⊙ W is computed once, and a domain's network costs what a single
  shared network costs.
* *The auxiliary network*. A small MLP on the domain indicator (and features that describe
  the domain) whose logit is added to the main one: pCTR = σ(s_main + s_aux).

Deployed in Alibaba's display advertising since late 2020 over more than 60 domains, the
paper reports **online CTR +8.0 % and RPM +6.0 %**, better per-domain AUC than shared,
shared-bottom, MMoE, cross-stitch and per-domain models offline, and finds in its ablations
that partitioned normalization matters most.

**What the toy keeps.** The three pieces above, single-domain training batches for STAR, the
folding of W_p ⊙ W (and PN's test-time affine map and the auxiliary logit) into plain
per-domain layers for serving, and the baselines: one shared model with the domain as an
input, one model per domain, shared-bottom and MMoE, and the ablations STAR with batch norm
and STAR without the auxiliary network. The data are a multi-domain world from
`toyscale.recsys.world` (`make_domain_log`): 6 domains with long-tail sizes, features shifted
and rescaled per domain, and a true click logit that mixes a shared random network with one
per domain in a proportion ρ, the domain heterogeneity. The truth is *not* a STAR network.

**How it is compared** (`experiment`): train / validation / test splits by page view; every
arm gets the same learning-rate grid and epoch budget, the batches it would naturally use
(STAR one domain per batch, the others mixed, each separate model its own domain's rows) and
stops at its own best validation score; the baselines run with global and with per-domain
input standardization, and each claim compares STAR with the form the validation split
prefers. The attribution grid {global, per-domain normalization} × {shared MLP, MMoE, star
FCN} shows what carries the effect, a negative control at ρ = 0 and a sweep of ρ
(`heterogeneity_boundary`) where it lives; margins come from calibration seeds (`claims`).

**What the toy finds** (the claims table has the numbers; `claims` has the calibration behind each
margin). At the paper's heterogeneity (a domain's own click function weighing as much as the shared
one), STAR beats the shared model with the domain as an input and per-domain input standardization,
and the gain vanishes in the world where domains do not differ. STAR's lead over MMoE and
shared-bottom is within the seed noise. Normalizing per domain lifts every architecture, but
partitioned normalization ties batch norm behind per-domain input standardization: PN's own parts add
nothing over fixed per-domain statistics in this toy. STAR's lead over separate per-domain models
survives with its shared centre frozen, so it is not credited to sharing; on the smallest domain the
lead is lost in that domain's noise (a sweep of its share of rows shows where sharing pays); the
auxiliary network adds a per-domain constant the domain biases already give.

**What it drops.** The production features (hundreds of ID embeddings; here a dozen dense
features stand in for the embedding layer's output), the 60+ domains and billions of samples,
cross-stitch and MulANN baselines, and the online A/B test.
"""

from .blocks import (
    NORMS,
    STAR,
    AuxiliaryNetwork,
    DomainBatchNorm,
    DomainLinear,
    DomainMLP,
    FoldedStar,
    MMoE,
    PartitionedNorm,
    SeparateModels,
    SharedBottom,
    SharedModel,
    SharedStatisticsPN,
    Standardize,
    StarTopologyFCN,
    domain_linear,
    fold_star,
    mlp_flops,
    per_domain,
    plain_mlp,
)
from .claims import CLAIMS, FALSIFIERS, FOLD_TOLERANCE
from .experiment import (
    ARMS,
    CONTROL_ARMS,
    GRID,
    METHODS,
    METRIC_NAMES,
    PAPER_RHO,
    SPECS,
    ArmSpec,
    Config,
    Fit,
    Result,
    Splits,
    as_tensors,
    build_model,
    domain_batches,
    evaluate_arm,
    fit_arm,
    heterogeneity_boundary,
    make_splits,
    mixed_batches,
    predict_logits,
    run,
    sharing_boundary,
    sharing_gain,
    strongest,
    tail_boundary,
    tail_config,
    topology_gain,
    zipf_for_share,
)
from .figures import ARM_LABELS, arm_colors, fig_domain_auc, fig_domain_weights, fig_grid, fig_paths, grid_deltas

__all__ = [
    "ARMS",
    "ARM_LABELS",
    "CLAIMS",
    "CONTROL_ARMS",
    "FALSIFIERS",
    "FOLD_TOLERANCE",
    "GRID",
    "METHODS",
    "METRIC_NAMES",
    "NORMS",
    "PAPER_RHO",
    "SPECS",
    "STAR",
    "ArmSpec",
    "AuxiliaryNetwork",
    "Config",
    "DomainBatchNorm",
    "DomainLinear",
    "DomainMLP",
    "Fit",
    "FoldedStar",
    "MMoE",
    "PartitionedNorm",
    "Result",
    "SeparateModels",
    "SharedBottom",
    "SharedModel",
    "SharedStatisticsPN",
    "Splits",
    "Standardize",
    "StarTopologyFCN",
    "arm_colors",
    "as_tensors",
    "build_model",
    "domain_batches",
    "domain_linear",
    "evaluate_arm",
    "fig_domain_auc",
    "fig_domain_weights",
    "fig_grid",
    "fig_paths",
    "fit_arm",
    "fold_star",
    "grid_deltas",
    "heterogeneity_boundary",
    "make_splits",
    "mixed_batches",
    "mlp_flops",
    "per_domain",
    "plain_mlp",
    "predict_logits",
    "run",
    "sharing_boundary",
    "sharing_gain",
    "strongest",
    "tail_boundary",
    "tail_config",
    "topology_gain",
    "zipf_for_share",
]
