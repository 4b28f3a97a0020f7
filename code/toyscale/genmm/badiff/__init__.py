"""BADiff: a diffusion model that stops early at the quality its bandwidth can carry.

Xi Zhang, Hanwei Zhu, Yan Zhong, Jiamang Wang and Weisi Lin. *BADiff: Bandwidth Adaptive
Diffusion Model.* NeurIPS 2025 (arXiv:2510.21366).

**The problem.** A cloud service generates an image with a diffusion model and sends it to a
phone over a link of a few hundred kilobits. The usual pipeline, the *cascade*, runs every
denoising step and then compresses the result hard enough to fit the link; the fine texture
the last steps painted is the first thing the codec throws away. The compute was wasted and
the picture is no better for it. Stopping the sampler early ("naive early stopping") saves the
compute but sends a half-finished, blurry estimate.

**The method.** BADiff tells the denoiser the target rate R (bits per pixel, derived from the
bandwidth): an MLP turns R into an embedding that is added to the timestep embedding in every
block. Training adds to the usual denoising loss a hinge on the rate of the model's own clean
estimate, max(0, Ĥ(x̂₀) − R), through a differentiable estimate Ĥ of the codec's code length.
A small stop policy (an MLP on pooled denoiser features, t and R) learns when to stop: its
labels come from full trajectories, at the step that minimises rate + β·distortion + γ·steps.
Sampling ends when the policy says so and sends the current x̂₀. The paper reports, at low
bitrate on CIFAR-10, FID 11.4 for BADiff against 22.9 for naive early stopping and 13.6 for
the full cascade, at about 1.7× less compute than the cascade (numbers as reported by the
paper's summaries).

**What the toy keeps.** A real transmission: a lossless context-model codec over L grey levels
(`codec_bits`, the ideal code length Σ −log₂ p under a fixed causal context model counted on
the training digits) behind a rate control that picks the finest level that fits the target;
every rate in the chapter is measured with it, never with the model's estimate. A DDPM
(T = 50, cosine schedule, x̂₀-prediction) with an MLP denoiser, a sinusoidal timestep embedding
and the quality embedding added per block, sampled with deterministic DDIM steps; the hinge
loss through a linear rate estimate fitted to the codec; the stop policy trained on labels
from full trajectories (the rate charged as a hinge, like the training loss). Quality is the
Fréchet distance in the penultimate features of a small digit classifier trained on the
training digits, with class diversity and classifier confidence beside it, so that blank or
washed-out images cannot "win" by being cheap to send.

**How it is compared** (`experiment`, `training`). Every denoiser fine-tunes from one shared
unconditioned trunk on the same batches (the quality embedding attached with a zero output
layer, BADiff's "minimal change"), keeps its best checkpoint on held-out validation digits
within one budget (a new best must lower the validation loss by a stated share), and samples
from the same noise; the test digits are read once per arm and target. The comparison sits at
the paper's compute: the labels' step weight γ is set per target, on the label trajectories
alone, so that they stop after T / 1.7 evaluations on average. The arms that stop early get
exactly BADiff's evaluations per target, and an early estimate is compared with the stronger
on validation of naive early stopping and a shorter sampler (DDIM on a grid of as many steps).
Rows take BADiff apart: the conditioned model without the hinge, BADiff's model run all steps,
BADiff's model at a per-target constant stop, naive early stopping given BADiff's per-image
stops shuffled, and a conditioned model trained towards x₀ as received at the design level
(a target that depends on R). A second evaluation sends the finished samples at the sender's
fixed design level without rate control, where the model itself must fit the budget, against
a training-free post-process of the plain model's samples at the same over-budget share.
Margins come from calibration seeds (`claims`); two sweeps (`results`) show BADiff against
both alternatives across the compute, and the hinge's cut across the target rate.

**What it drops.** Natural images, U-Nets and learned image codecs, FID's Inception features,
perceptual losses, and the paper's scale (an 8×8 digit, an MLP, seconds of CPU training).

**What it finds.** At the paper's compute BADiff's samples are no better than the stronger
alternative at the same evaluations: a shorter sampler finishes its samples where an early
estimate cannot, the quality embedding learns nothing the plain model lacks (and a target as
received at L(R) does not make the early estimate better), the hinge costs quality, and the
per-image stop policy does no better than a constant stop per bandwidth. Sent at a fixed codec
level, BADiff's own samples overshoot the budget less often than the plain model's (the
hinge's objective met); zeroing the faint pixels of the plain model's samples meets the same
share, as well or better at the two higher targets, far worse at the lowest, where matching the
hinge's share takes a threshold that erodes the strokes. The claims table keeps the paper's
headline as not reproduced, with the mechanism.
"""

from . import claims
from .claims import (
    CLAIMS,
    CONTROL_BAND,
    EVALS_MARGIN,
    FALSIFIERS,
    FD_GUARD,
    FD_MARGIN,
    MATCH_TOLERANCE,
    POSTPROCESS_MARGIN,
    RATE_TOLERANCE,
    RECEIVED_MARGIN,
    REGIME,
    SHARE_MARGIN,
)
from .codec import (
    LADDER,
    PIXELS,
    Transmission,
    causal_context,
    codec_bits,
    context_model,
    dequantize,
    design_level,
    hinge_rate_loss,
    quantize,
    rate_features,
    rate_surrogate,
    rate_surrogate_weights,
    transmit,
)
from .diffusion import (
    Denoiser,
    QualityEmbedding,
    attach_quality,
    cosine_schedule,
    q_sample,
    reverse_step,
    sinusoidal_embedding,
    to_image_space,
    to_model_space,
)
from .experiment import (
    ARM_MODELS,
    ARMS,
    CONTROL_ARMS,
    DIAGNOSTICS,
    METHODS,
    METRICS,
    MODELS,
    THRESHOLDS,
    Config,
    Data,
    Result,
    bandwidth_boundary,
    compute_boundary,
    load_data,
    pick_threshold,
    run,
    score,
    threshold_images,
)
from .figures import ARM_LABELS, arm_colors, fig_evals, fig_over_budget, fig_quality_vs_rate, fig_samples, montage
from .judge import (
    DigitClassifier,
    class_diversity,
    classifier_confidence,
    classifier_features,
    frechet_distance,
    train_classifier,
)
from .policy import (
    StopPolicy,
    Trajectory,
    at_stops,
    constant_stops,
    gamma_for_compute,
    sample_strided,
    sample_trajectory,
    stop_costs,
    stop_labels,
    stop_labels_from,
    stop_steps,
    train_stop_policy,
)
from .training import Branch, Schedule, TrainLog, branch_loss, clear_memo, train_denoisers

__all__ = [
    "ARMS",
    "ARM_LABELS",
    "ARM_MODELS",
    "CLAIMS",
    "CONTROL_ARMS",
    "CONTROL_BAND",
    "DIAGNOSTICS",
    "EVALS_MARGIN",
    "FALSIFIERS",
    "FD_GUARD",
    "FD_MARGIN",
    "LADDER",
    "MATCH_TOLERANCE",
    "METHODS",
    "METRICS",
    "MODELS",
    "PIXELS",
    "POSTPROCESS_MARGIN",
    "RATE_TOLERANCE",
    "RECEIVED_MARGIN",
    "REGIME",
    "SHARE_MARGIN",
    "THRESHOLDS",
    "Branch",
    "Config",
    "Data",
    "Denoiser",
    "DigitClassifier",
    "QualityEmbedding",
    "Result",
    "Schedule",
    "StopPolicy",
    "TrainLog",
    "Trajectory",
    "Transmission",
    "arm_colors",
    "at_stops",
    "attach_quality",
    "bandwidth_boundary",
    "branch_loss",
    "causal_context",
    "claims",
    "class_diversity",
    "classifier_confidence",
    "classifier_features",
    "clear_memo",
    "codec_bits",
    "compute_boundary",
    "constant_stops",
    "context_model",
    "cosine_schedule",
    "dequantize",
    "design_level",
    "fig_evals",
    "fig_over_budget",
    "fig_quality_vs_rate",
    "fig_samples",
    "frechet_distance",
    "gamma_for_compute",
    "hinge_rate_loss",
    "load_data",
    "montage",
    "pick_threshold",
    "q_sample",
    "quantize",
    "rate_features",
    "rate_surrogate",
    "rate_surrogate_weights",
    "reverse_step",
    "run",
    "sample_strided",
    "sample_trajectory",
    "score",
    "sinusoidal_embedding",
    "stop_costs",
    "stop_labels",
    "stop_labels_from",
    "stop_steps",
    "threshold_images",
    "to_image_space",
    "to_model_space",
    "train_classifier",
    "train_denoisers",
    "train_stop_policy",
    "transmit",
]
