"""Rec4Ad: recommendation samples as a free lunch against sample selection bias in ads CTR.

Jingyue Gao, Shuguang Han, Han Zhu, Siran Yang, Yuning Jiang, Jian Xu and Bo Zheng. *Rec4Ad: A
Free Lunch to Mitigate Sample Selection Bias for Ads CTR Prediction in Taobao.* CIKM 2023
(arXiv:2306.03527).

**What is public, and what is reconstructed.** Only the abstract is available to this book.
From it come: the problem (an ads CTR model trains on impressions that its own eCPM ranker
selected, so training and inference distributions differ: sample selection bias, SSB), the two
remedies it rejects (re-weighting, with high variance and poor calibration; uniform traffic,
which is costly), the idea (in a feed that mixes organic recommendations with ads, the two are
exposed by *different* systems but clicked by the *same* user decision: add recommendation
samples to the ads model's training data), the module names (disentangled representations with
*alignment* and *decorrelation* modules) and the headline (online CTR +6.6 %, RPM +2.9 % in
Taobao display advertising). Everything else is this book's reconstruction:

- *Alignment* is moment matching of the shared representation across the two domains (the mean
  and covariance penalty of Deep CORAL, Sun and Saenko 2016; domain-adaptation peers).
- *Decorrelation* is a penalty on the cross-covariance between the shared and the
  domain-specific representations (as in the shared-private split of domain separation
  networks, Bousmalis et al. 2016).
- *Domain information* is a domain indicator input and a per-domain output bias (as in STAR's
  domain prior, and the auxiliary-network peers of multi-domain CTR).
- The baselines: ads only; the naive mix; IPS re-weighting of the ads with the simulator's true
  propensities (the re-weighting line the abstract cites), alone and with the recommendation samples.

**What the toy keeps.** A mixed feed from `toyscale.recsys.world` (`make_ad_log`): one true click
function for ads and organic items, with an ad penalty; ads exposed by a legacy eCPM ranker
(pCTR × bid) that ignores half of the item features, bids that follow an item feature;
recommendations exposed by a different ranker, with three times the traffic; an exposure bias τ
that sweeps from uniform to nearly greedy; uniformly exposed ads for validation and test; and a
simulated online test that ranks candidate ads by p̂ × bid and scores the choice with the true
click probability, against the oracle that ranks by p × bid. Selection here is on observed
features only (the bid follows an item feature): pure covariate shift, so the ads-only model is
biased through extrapolation, not through selection on what it cannot see.

**How it is compared** (`experiment`): every arm is early-stopped on a uniform validation slice
within the same epoch budget and tries a grid of the same size on it (Rec4Ad's loss weights, IPS's
clip, or the learning rate); the naive mix and ads only also come recalibrated by one logit offset
fitted on that slice; each claim's baseline is the strongest of its declared alternatives on
validation; margins come from calibration seeds (`claims`); a negative control at τ = 0, a sweep of
τ (`bias_boundary`) and a sweep of the bid correlation ζ (`bid_boundary`) show where each effect lives.

**What the toy finds.** The claims table says which claim holds, by the margins set on calibration
seeds, and why the others do not: recommendation samples with domain information against the
strongest of ads only and IPS on AUC; calibration against the recalibrated naive mix and ads only;
the online revenue where bids spread as much as click probabilities and in the chapter's previous
world; the reconstructed disentangling modules; and re-weighting once its clip is tuned.

**What it drops.** Real features and scale (8 dense features, small MLPs, thousands of
impressions), the paper's data augmentation details (unknown), position and page effects, the
auction's reserve prices and second prices, and the online A/B test itself.
"""

from .claims import CLAIMS, FALSIFIERS, spread_exceeds
from .experiment import (
    ARM_SPECS,
    ARMS,
    ATTRIBUTION_ARMS,
    BID_REGIME,
    CONTROL_ARMS,
    DEFAULT_ARMS,
    METHODS,
    METRIC_NAMES,
    REGIME_ARMS,
    WEIGHTINGS,
    ArmSpec,
    Checkpoint,
    Config,
    Fit,
    OnlineTest,
    Result,
    Splits,
    as_tensors,
    auc_gain,
    bias_boundary,
    bid_boundary,
    fit_arm,
    make_model,
    make_splits,
    model_at,
    online_test,
    predict,
    predict_logit,
    premise_bid_correlation,
    recalibration_offset,
    rpm_gain,
    run,
    serve,
    train_at,
    uniform_ads,
    validation_auc,
)
from .figures import ARM_LABELS, arm_colors, attribution_table, fig_exposure, fig_grid, fig_online
from .modules import Rec4AdNet, alignment_loss, decorrelation_loss, ips_weights
from .scale import Exposure, exposure_at, rank_propensities, ranked_scores

__all__ = [
    "ARMS",
    "ARM_LABELS",
    "ARM_SPECS",
    "ATTRIBUTION_ARMS",
    "BID_REGIME",
    "CLAIMS",
    "CONTROL_ARMS",
    "DEFAULT_ARMS",
    "FALSIFIERS",
    "METHODS",
    "METRIC_NAMES",
    "REGIME_ARMS",
    "WEIGHTINGS",
    "ArmSpec",
    "Checkpoint",
    "Config",
    "Exposure",
    "Fit",
    "OnlineTest",
    "Rec4AdNet",
    "Result",
    "Splits",
    "alignment_loss",
    "arm_colors",
    "as_tensors",
    "attribution_table",
    "auc_gain",
    "bias_boundary",
    "bid_boundary",
    "decorrelation_loss",
    "exposure_at",
    "fig_exposure",
    "fig_grid",
    "fig_online",
    "fit_arm",
    "ips_weights",
    "make_model",
    "make_splits",
    "model_at",
    "online_test",
    "predict",
    "predict_logit",
    "premise_bid_correlation",
    "rank_propensities",
    "ranked_scores",
    "recalibration_offset",
    "rpm_gain",
    "run",
    "serve",
    "spread_exceeds",
    "train_at",
    "uniform_ads",
    "validation_auc",
]
