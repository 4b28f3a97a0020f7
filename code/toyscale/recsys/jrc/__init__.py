"""JRC: joint optimization of ranking and calibration with a contextualized hybrid model.

Xiang-Rong Sheng, Jingyue Gao, Yueyao Cheng, Siran Yang, Shuguang Han, Hongbo Deng, Yuning Jiang,
Jian Xu and Bo Zheng. *Joint Optimization of Ranking and Calibration with Contextualized Hybrid
Model.* KDD 2023 (arXiv:2208.06164).

**The problem.** A CTR model serves two masters. The auction multiplies its output by a bid, so it
must be a *calibrated* click probability; the page shows the best ads first, so it must *rank*
well within each request. The pointwise log loss calibrates but does not target ranking within a
request; adding a ranking loss on the same logit (the "combined" loss) ranks better but the
logit no longer means log-odds, and calibration breaks.

**The method.** The model emits two logits per sample, f(x) = [f₀(x), f₁(x)], read as a joint
model of (x, y): p(y | x) = softmax(f(x))_y, so p(click | x) = σ(f₁ − f₀). The loss has two
terms over a batch of contexts z (a request, a page, a session) with samples X_z:

    L_calib = −Σ_x log softmax(f(x))_{y(x)}                                  (cross-entropy)
    L_rank  = −Σ_x log [ exp f_{y(x)}(x) / Σ_{x'∈X_z} exp f_{y(x)}(x') ]      (within context)
    L       = α · L_calib + (1 − α) · L_rank.

L_rank is a generative, listwise term: among the samples of its context, a clicked sample must
win the softmax of the *click* logit and a non-clicked one the softmax of the *non-click*
logit. Anything shared by a whole context (an unobserved shift of click propensity) adds the
same constant to every f_y(x') in the denominator and cancels, so the term learns what ranks
items *within* a context, while L_calib keeps σ(f₁ − f₀) a probability. The paper reports
online CTR +4.4 % and RPM +2.3 % in Alibaba's display advertising (deployed since May 2022),
GAUC +0.3 % offline, with gains concentrated on sparse, long-tail users.

**What the toy keeps.** The two-logit parameterisation, both loss terms, batches of whole
contexts, the baselines (pointwise log loss; the combined loss with the same within-context
softmax on one logit; an oracle with the true probabilities), the metrics (AUC, GAUC, log loss,
ECE, PCOC), a sweep of the ranking weight 1 − α, and a breakdown by user activity. Alibaba's
public implementations differ in which samples compete in the denominator: all samples of the
context (the equation above, our `jrc` arm) or the sample itself and those of the other label
only (the `jrc_other` arm; TorchEasyRec, Alibaba's production library, uses this one).

**How it is compared** (`experiment`): train / validation / test splits by context; every arm
is tuned on a grid of the same size (the learning rate crossed with α for the arms with a ranking
term, with the weight decay for pointwise) and the same epoch budget, and stops at its own best
validation point; ranking claims compare each arm's best-validation-GAUC checkpoint, calibration
claims its best-validation-log-loss checkpoint, and a ranking claim's baseline is the strongest of
pointwise and combined on validation, per seed (`claims`, CLAIMS.md v2). Two mechanisms are kept
apart, each with its control and its boundary (`gain_boundary`): the page shift alone (exposure
unconfounded), and the confounding of exposure with the shift on top of it.

**What the toy finds** is in the chapter's claims table: which effects survive the strongest
alternative, which belong to the within-context softmax that the combined loss shares, and where
each mechanism's gain lives; the margins and `expected` come from the calibration record.

**What it drops.** Real features and scale (a synthetic world from `toyscale.recsys.world`
with four categorical fields, tens of thousands of impressions, one small MLP), the online A/B
test, and the paper's public data sets.
"""

from .claims import CLAIMS, FALSIFIERS
from .experiment import (
    ACTIVITY_NAMES,
    ARMS,
    BOUNDARIES,
    METHODS,
    METRIC_NAMES,
    WEIGHTED,
    WORLD_ARMS,
    WORLDS,
    ArmFit,
    Checkpoint,
    Config,
    Result,
    Setting,
    Splits,
    as_tensors,
    evaluate_arm,
    fit_arm,
    gain_boundary,
    gauc_by_bucket,
    gauc_gain,
    grid,
    loss_for,
    make_splits,
    predict,
    ranking_weight_sweep,
    run,
)
from .figures import ARM_LABELS, arm_colors, fig_activity, fig_paths, fig_reliability, fig_sweep
from .losses import (
    DENOMINATORS,
    CTRModel,
    calibration_loss,
    combined_loss,
    context_logsumexp,
    jrc_loss,
    listwise_loss,
    p_click,
    pointwise_loss,
    ranking_loss,
)

__all__ = [
    "ACTIVITY_NAMES",
    "ARMS",
    "ARM_LABELS",
    "BOUNDARIES",
    "CLAIMS",
    "DENOMINATORS",
    "FALSIFIERS",
    "METHODS",
    "METRIC_NAMES",
    "WEIGHTED",
    "WORLDS",
    "WORLD_ARMS",
    "ArmFit",
    "CTRModel",
    "Checkpoint",
    "Config",
    "Result",
    "Setting",
    "Splits",
    "arm_colors",
    "as_tensors",
    "calibration_loss",
    "combined_loss",
    "context_logsumexp",
    "evaluate_arm",
    "fig_activity",
    "fig_paths",
    "fig_reliability",
    "fig_sweep",
    "fit_arm",
    "gain_boundary",
    "gauc_by_bucket",
    "gauc_gain",
    "grid",
    "jrc_loss",
    "listwise_loss",
    "loss_for",
    "make_splits",
    "p_click",
    "pointwise_loss",
    "predict",
    "ranking_loss",
    "ranking_weight_sweep",
    "run",
]
