"""The BADiff experiment: the configuration, the paired arms, the run, and the two sweeps of the boundary.

The protocol (the book's CLAIMS.md, §2–3). The training digits are split into a part the
denoisers train on and a validation part that picks each arm's checkpoint; the test digits are
the Fréchet distance's reference, read once per arm and target at the end. Every denoiser
starts from one shared, unconditioned trunk and fine-tunes on the same batches (`training`), so
the arms are paired in their weights; every arm samples from the same x_T (common random numbers),
with enough samples that the Fréchet distance's noise is small next to the gaps it judges. The
arms that stop early get exactly BADiff's evaluations per target, and every arm is sent through
the same rate control. A second evaluation sends the finished samples at the sender's fixed
design level L(R), with no rate control: there the model itself must fit the budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import torch

from toyscale.core import device, split_units
from toyscale.core.boundary import Boundary
from toyscale.genmm import digits

from .codec import PIXELS, codec_bits, dequantize, design_level, quantize, transmit
from .judge import (
    DigitClassifier,
    class_diversity,
    classifier_confidence,
    classifier_features,
    frechet_distance,
    train_classifier,
)
from .policy import (
    at_stops,
    constant_stops,
    gamma_for_compute,
    sample_strided,
    sample_trajectory,
    stop_costs,
    stop_labels_from,
    stop_steps,
    train_stop_policy,
)
from .training import Branch, Schedule, train_denoisers

#: The arms the claims compare (`Result.metrics`): which model, and where its sampling stops.
ARMS = (
    "cascade",  # the unconditioned model, all T steps, then the codec
    "naive",  # the unconditioned model stopped at BADiff's mean evaluations per target, sending x̂₀
    "strided",  # the unconditioned model sampled on a shorter DDIM grid with as many evaluations, finished
    "naive_shuffled",  # the unconditioned model stopped at BADiff's per-image stops, shuffled across images
    "conditioned",  # the conditioned model without the hinge, all T steps
    "received",  # the conditioned model trained towards x₀ as received at L(R), stopped as the naive arm
    "badiff_full",  # BADiff's model (conditioned, hinge), all T steps
    "badiff_constant",  # BADiff's model stopped at its policy's mean evaluations per target, for every image
    "badiff",  # BADiff: its model and its per-image stop policy
    "postprocess",  # the cascade's samples with every pixel below a threshold zeroed (threshold on its own samples)
)
#: Beside the arms: the cascade from a second, independent draw of x_T (the noise of one Fréchet distance
#: estimate), and real training digits through the same link (the judge has seen them: an optimistic floor).
DIAGNOSTICS = ("cascade_redraw", "real")
#: The negative control's arms, at `Config.control_target`: the plain model and a BADiff model trained for it.
CONTROL_ARMS = ("loose_plain", "loose_badiff")
#: The denoisers a run can train: plain (always), conditioned without hinge, BADiff, BADiff for the loose budget,
#: and the conditioned model trained towards x₀ as received at L(R).
MODELS = ("plain", "conditioned", "badiff", "loose", "received")
#: Which model each arm samples (for the budgets each arm reports).
ARM_MODELS = {
    "cascade": "plain",
    "naive": "plain",
    "strided": "plain",
    "naive_shuffled": "plain",
    "postprocess": "plain",
    "conditioned": "conditioned",
    "received": "received",
    "badiff_full": "badiff",
    "badiff_constant": "badiff",
    "badiff": "badiff",
}
#: What the early-estimate arm ("received") runs: itself, or (a falsifier) an alternative in its place.
METHODS = ("received", "naive", "strided")
METRICS = (
    "fd",
    "val_fd",
    "fixed_fd",
    "bpp",
    "rate_gap",
    "evals",
    "diversity",
    "confidence",
    "over_budget",
    "fixed_bpp",
)
#: The thresholds the post-process tries, from none to most of the grey range.
THRESHOLDS = tuple(round(0.01 * i, 2) for i in range(91))


@dataclass(frozen=True)
class Config:
    """Toy defaults for the BADiff experiment."""

    steps: int = 50  # T, diffusion steps (and the cascade's denoiser evaluations per image)
    width: int = 128  # hidden width of the MLP denoiser
    blocks: int = 2  # residual blocks of the denoiser (each receives the embedding)
    trunk_steps: int = 2400  # Adam steps of the shared unconditioned trunk every arm starts from
    branch_steps: int = 1200  # Adam steps of each arm's own fine-tuning from the trunk (same batches for all)
    batch_size: int = 128  # images per training step
    lr: float = 2e-3  # Adam learning rate, cosine-decayed to 0 over trunk + branch
    eval_every: int = 100  # branch steps between validation checkpoints (each arm keeps its best)
    #: a checkpoint is a new best only when it lowers the validation loss by more than this share of it (the
    #: min_delta of core.train.EarlyStopping): fixed before calibration, so that the cosine schedule's last,
    #: nearly frozen steps do not count as progress
    min_delta: float = 0.002
    validation_fraction: float = 0.2  # share of the training digits held out to pick checkpoints
    targets: tuple[float, ...] = (0.8, 1.1, 1.4)  # target rates R in bits per pixel, low to high
    control_target: float = 1.0  # a rate whose design level (2 grey levels) fits every training digit
    hinge_weight: float = 0.1  # λ in L = ‖x̂₀ − x₀‖² + λ · max(0, Ĥ(x̂₀) − R)
    trajectories: int = 128  # full BADiff trajectories per target that label the stop policy
    beta: float = 10.0  # β: weight of distortion (MSE to the finished sample, received) in the labels
    #: the compute BADiff aims at: full sampling's T evaluations over this factor (the regime, `claims.REGIME`)
    speedup: float = 1.7
    #: γ, the weight of the steps taken (as a fraction of T) in the labels: None sets it per target, on the
    #: label trajectories alone, so that the labels stop after T / speedup evaluations on average; a number
    #: fixes it (0.3 was the chapter's operating point before the re-audit)
    gamma: float | None = None
    policy_epochs: int = 300  # full-batch Adam epochs of the stop policy
    threshold: float = 0.5  # stop when the policy's p(stop) reaches this
    eta: float = 0.0  # sampler noise: 0 = deterministic DDIM steps, 1 = DDPM's ancestral steps
    n_samples: int = 2000  # images generated per arm and target (the test split holds 539)
    n_select: int = 1000  # samples of their own noise on which the post-process picks its threshold
    models: tuple[str, ...] = MODELS  # the denoisers to train (a falsifier or a sweep trains only what it reads)
    policy: bool = True  # train the stop policy and score BADiff's arms that stop early
    received_target: bool = True  # the received model's target is x₀ as received at L(R) (False: x₀ itself)
    method: str = "received"  # what the early-estimate arm runs (a falsifier puts an alternative in its place)
    diagnostics: bool = True  # also score the `DIAGNOSTICS` rows (a falsifier's claim reads neither)

    def __post_init__(self) -> None:
        for name in ("steps", "width", "blocks", "trunk_steps", "batch_size", "trajectories", "policy_epochs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if isinstance(self.branch_steps, bool) or not isinstance(self.branch_steps, int) or self.branch_steps < 0:
            raise ValueError(f"branch_steps must be an int >= 0, got {self.branch_steps!r}")
        if isinstance(self.eval_every, bool) or not isinstance(self.eval_every, int) or self.eval_every < 1:
            raise ValueError(f"eval_every must be a positive int, got {self.eval_every!r}")
        if self.steps < 2:
            raise ValueError(f"steps must be >= 2, got {self.steps}")
        if not self.targets or any(not r > 0 for r in self.targets) or list(self.targets) != sorted(self.targets):
            raise ValueError(f"targets must be positive bits per pixel in increasing order, got {self.targets}")
        if not self.control_target > 0:
            raise ValueError(f"control_target must be > 0 bits per pixel, got {self.control_target}")
        if not 0 < self.validation_fraction < 1:
            raise ValueError(f"validation_fraction must lie in (0, 1), got {self.validation_fraction}")
        if self.n_samples < 20 or self.n_select < 20:
            raise ValueError(f"n_samples and n_select must be >= 20, got {self.n_samples}, {self.n_select}")
        if not 0 < self.threshold < 1:
            raise ValueError(f"threshold must lie in (0, 1), got {self.threshold}")
        if not 1 <= self.speedup <= self.steps:
            raise ValueError(f"speedup must lie in [1, {self.steps}], got {self.speedup}")
        if not 0 <= self.min_delta < 1:
            raise ValueError(f"min_delta must lie in [0, 1), got {self.min_delta}")
        for name in ("hinge_weight", "beta", "lr"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.gamma is not None and self.gamma < 0:
            raise ValueError(f"gamma must be >= 0 or None, got {self.gamma}")
        unknown = [m for m in self.models if m not in MODELS]
        if unknown or "plain" not in self.models:
            raise ValueError(f"models must include 'plain' and be drawn from {MODELS}, got {self.models}")
        if self.policy and "badiff" not in self.models:
            raise ValueError("the stop policy needs the 'badiff' model: add it to models or set policy=False")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")

    @classmethod
    def fast(cls) -> Config:
        """A sixth of the training and 800 samples, for the notebook's live run and the tests' machinery."""
        return cls(trunk_steps=400, branch_steps=200, eval_every=50, trajectories=64, policy_epochs=100, n_samples=800)

    @property
    def schedule(self) -> Schedule:
        return Schedule(
            self.steps,
            self.width,
            self.blocks,
            self.trunk_steps,
            self.branch_steps,
            self.batch_size,
            self.lr,
            self.eval_every,
            self.min_delta,
        )

    @property
    def regime_evals(self) -> float:
        """The mean evaluations per image at the regime's compute: T / speedup."""
        return self.steps / self.speedup

    def branches(self) -> dict[str, Branch]:
        """The fine-tuning branch of every model this config trains."""
        specs = {
            "plain": Branch(conditioned=False),
            "conditioned": Branch(conditioned=True, targets=self.targets),
            "badiff": Branch(True, self.hinge_weight, self.targets),
            "loose": Branch(True, self.hinge_weight, (self.control_target,)),
            "received": Branch(True, 0.0, self.targets, received=self.received_target),
        }
        return {name: specs[name] for name in MODELS if name in self.models}


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm][metric]: the mean over targets, for the `ARMS`, the `DIAGNOSTICS`, and the
    control's `CONTROL_ARMS` (these only 'fixed_bpp' and 'over_budget', at the control target).
    by_target[arm][metric]: one value per target. Metrics: 'fd' (Fréchet distance to the test
    digits, after rate control), 'val_fd' (the same to the validation digits: what picks the
    strongest alternative), 'bpp' (achieved rate), 'rate_gap' (mean |achieved − target|), 'evals'
    (denoiser evaluations per image), 'diversity', 'confidence'; and without rate control, each
    image sent at the design level L(R): 'over_budget' (share of images whose rate exceeds R),
    'fixed_bpp' (their mean rate) and 'fixed_fd' (their Fréchet distance as received there).
    samples[arm][i]: 8 received images at target i; stop_steps[i] / label_steps[i]: BADiff's stops
    and the trajectory labels' k* at target i; gammas[i]: the step weight γ of the labels at target
    i; thresholds[i]: the post-process's threshold; steps_used[model]: the Adam steps behind the
    checkpoint each model kept (validation); budgets[arm]: (steps used, steps allowed) of its model.
    """

    config: Config
    seed: int
    targets: list[float]
    metrics: dict[str, dict[str, float]]
    by_target: dict[str, dict[str, list[float]]]
    samples: dict[str, list[np.ndarray]] = field(default_factory=dict)
    stop_steps: list[list[int]] = field(default_factory=list)
    label_steps: list[list[int]] = field(default_factory=list)
    design_levels: list[int] = field(default_factory=list)
    steps_used: dict[str, int] = field(default_factory=dict)
    validation: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    budgets: dict[str, tuple[int, int]] = field(default_factory=dict)
    gammas: list[float] = field(default_factory=list)
    thresholds: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Data:
    """The digits every run uses: denoiser training and validation parts, the test reference, the judge."""

    train: np.ndarray  # (n, 8, 8) in [0, 1]: what the denoisers train on
    validation: np.ndarray  # held out from training: picks each denoiser's checkpoint and the strongest alternative
    all_train: np.ndarray  # train + validation: the codec's context model, design levels, the 'real' row
    classifier: DigitClassifier
    reference: np.ndarray  # the judge's features of the test digits
    validation_reference: np.ndarray  # the judge's features of the validation digits


def load_data(validation_fraction: float) -> Data:
    """The fixed split: a share of the training digits held out for validation (by image, seed 0)."""
    split = digits.split()
    all_train = digits.to_unit(split.train_images).astype(np.float64)
    parts = split_units(np.arange(len(all_train)), validation=validation_fraction, test=0.0, seed=0)
    classifier = train_classifier()
    reference = classifier_features(classifier, digits.to_unit(split.test_images))
    validation = all_train[parts.validation]
    features = classifier_features(classifier, validation)
    return Data(all_train[parts.train], validation, all_train, classifier, reference, features)


def score(
    data: Data,
    images: np.ndarray,
    target: float,
    level: int,
    evals: float,
) -> tuple[dict[str, float], np.ndarray]:
    """An arm's metrics at one target, and its received images: once through rate control, once at level L(R)."""
    sent = transmit(images, target)
    fixed = codec_bits(images, level)
    features = classifier_features(data.classifier, sent.received)
    at_level = dequantize(quantize(images, level), level)
    metrics = {
        "fd": frechet_distance(features, data.reference),
        "val_fd": frechet_distance(features, data.validation_reference),
        "fixed_fd": frechet_distance(classifier_features(data.classifier, at_level), data.reference),
        "bpp": float(sent.bpp.mean()),
        "rate_gap": float(np.abs(sent.bpp - target).mean()),
        "evals": float(evals),
        "diversity": class_diversity(data.classifier, sent.received),
        "confidence": classifier_confidence(data.classifier, sent.received),
        "over_budget": float((fixed > target).mean()),
        "fixed_bpp": float(fixed.mean()),
    }
    return metrics, sent.received


def _sample(model: torch.nn.Module, n: int, seed: int, target: float, config: Config, features: bool = False):
    return sample_trajectory(model, n, seed, target if model.conditioned else None, config.eta, keep_features=features)


def _strided(model: torch.nn.Module, k: np.ndarray, seed: int, target: float) -> np.ndarray:
    """Each image finished by a shorter sampler of k_i evaluations (k holds at most two adjacent counts)."""
    images = np.empty((len(k), 8, 8))
    for evals in np.unique(k):
        rows = k == evals
        images[rows] = sample_strided(model, len(k), seed, int(evals), target if model.conditioned else None)[rows]
    return images


def threshold_images(images: np.ndarray, theta: float) -> np.ndarray:
    """The post-process: every pixel below θ set to black (the rest kept)."""
    return np.where(images < theta, 0.0, images)


def pick_threshold(images: np.ndarray, level: int, target: float, share: float) -> float:
    """The smallest θ of `THRESHOLDS` whose post-processed images overshoot R at L(R) no more often than `share`
    (the largest when none does): chosen on samples of the model's own, never on test data."""
    for theta in THRESHOLDS:
        if float((codec_bits(threshold_images(images, theta), level) > target).mean()) <= share:
            return theta
    return THRESHOLDS[-1]


def _train(config: Config, data: Data, seed: int, levels: dict[float, int]):
    on = device()
    as_x = lambda images: torch.as_tensor(images.reshape(-1, PIXELS), dtype=torch.float32, device=on)  # noqa: E731
    return train_denoisers(
        as_x(data.train), as_x(data.validation), config.schedule, config.branches(), seed=seed, levels=levels
    )


def _labelled_policy(models, config: Config, seed: int, gammas: dict[float, float | None]):
    """The label trajectories, their labels (γ per target: given, or set to hit the regime's compute) and the policy."""
    label_runs = {
        r: _sample(models["badiff"], config.trajectories, 10_000 + seed * 100 + i, r, config, features=True)
        for i, r in enumerate(config.targets)
    }
    costs = {r: stop_costs(label_runs[r], r, config.beta) for r in config.targets}
    chosen = {
        r: gammas[r] if gammas[r] is not None else gamma_for_compute(costs[r], config.regime_evals) for r in costs
    }
    labelled = {r: stop_labels_from(costs[r], chosen[r]) for r in config.targets}
    policy = train_stop_policy(
        label_runs, {r: labelled[r][1] for r in config.targets}, config.width, config.policy_epochs, seed
    )
    return policy, labelled, chosen


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """Train the paired denoisers and the stop policy, and score every arm on every target."""
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a badiff.Config, got {type(config).__name__}")
    data = load_data(config.validation_fraction)
    rates = (*config.targets, config.control_target)
    levels = {r: design_level(r, data.all_train) for r in rates}
    trained = _train(config, data, seed, levels)
    models = {name: model for name, (model, _) in trained.items()}

    n, T = config.n_samples, config.steps
    noise_seed = 30_000 + seed  # every arm starts from the same x_T
    select_seed = 40_000 + seed  # the post-process picks its threshold on samples of their own
    labelled: dict[float, tuple[np.ndarray, np.ndarray]] = {}
    gammas: dict[float, float] = {}
    policy = None
    if config.policy:
        # the stop policy's labels come from full BADiff trajectories on their own noise seeds
        policy, labelled, gammas = _labelled_policy(models, config, seed, {r: config.gamma for r in config.targets})

    rng = np.random.default_rng(seed)
    real_rows = rng.choice(len(data.all_train), size=min(n, len(data.all_train)), replace=False)
    plain_run = _sample(models["plain"], n, noise_seed, 0.0, config)
    plain_select = _sample(models["plain"], config.n_select, select_seed, 0.0, config).x0_hat[-1]
    diagnostics = {}
    if config.diagnostics:
        redraw = _sample(models["plain"], n, noise_seed + 50_000, 0.0, config).x0_hat[-1]
        diagnostics = {"cascade_redraw": (redraw, T), "real": (data.all_train[real_rows], 0.0)}
    by_target: dict[str, dict[str, list[float]]] = {}
    samples: dict[str, list[np.ndarray]] = {}
    stops, label_steps, thresholds = [], [], []
    for r in config.targets:
        outputs: dict[str, tuple[np.ndarray, float]] = {"cascade": (plain_run.x0_hat[-1], T), **diagnostics}
        if "conditioned" in models:
            outputs["conditioned"] = (_sample(models["conditioned"], n, noise_seed, r, config).x0_hat[-1], T)
        # the compute of the early-stopping arms: BADiff's mean evaluations at this target, or without its policy
        # the regime's T / speedup
        mean_evals = config.regime_evals
        if "badiff" in models:
            run_b = _sample(models["badiff"], n, noise_seed, r, config, features=config.policy)
            outputs["badiff_full"] = (run_b.x0_hat[-1], T)
            # the post-process: the smallest threshold whose share over R at L(R) is at most BADiff's model's,
            # both measured on samples of their own (never the test digits)
            badiff_select = _sample(models["badiff"], config.n_select, select_seed, r, config).x0_hat[-1]
            share = float((codec_bits(badiff_select, levels[r]) > r).mean())
            theta = pick_threshold(plain_select, levels[r], r, share)
            thresholds.append(theta)
            outputs["postprocess"] = (threshold_images(plain_run.x0_hat[-1], theta), T)
            if policy is not None:
                k = stop_steps(policy, run_b, r, config.threshold)
                mean_evals = float(k.mean())
                constant = constant_stops(mean_evals, n, T)
                outputs |= {
                    "badiff": (at_stops(run_b, k), mean_evals),
                    "badiff_constant": (at_stops(run_b, constant), mean_evals),
                    "naive_shuffled": (at_stops(plain_run, rng.permutation(k)), mean_evals),
                }
                stops.append(k.tolist())
                label_steps.append(labelled[r][0].tolist())
        constant = constant_stops(mean_evals, n, T)
        # naive early stop: the unconditioned model, stopped after BADiff's evaluations, sending x̂₀
        outputs["naive"] = (at_stops(plain_run, constant), float(constant.mean()))
        # a shorter sampler: the unconditioned model finished on an evenly spaced grid of as many evaluations
        outputs["strided"] = (_strided(models["plain"], constant, noise_seed, r), float(constant.mean()))
        if "received" in models:
            early = at_stops(_sample(models["received"], n, noise_seed, r, config), constant)
            outputs["received"] = (early, float(constant.mean()))
        if config.method != "received":
            outputs["received"] = outputs[config.method]  # an alternative in the early-estimate arm's place
        for arm, (images, evals) in outputs.items():
            values, received = score(data, images, r, levels[r], evals)
            for metric, value in values.items():
                by_target.setdefault(arm, {m: [] for m in METRICS})[metric].append(value)
            samples.setdefault(arm, []).append(received[:8])
    metrics = {arm: {m: float(np.mean(v)) for m, v in values.items()} for arm, values in by_target.items()}
    if "loose" in models:
        # where every digit fits: a BADiff model trained for a rate whose design level fits every training digit
        r, level = config.control_target, levels[config.control_target]
        loose = _sample(models["loose"], n, noise_seed, r, config).x0_hat[-1]
        for arm, images in (("loose_plain", plain_run.x0_hat[-1]), ("loose_badiff", loose)):
            fixed = codec_bits(images, level)
            metrics[arm] = {"over_budget": float((fixed > r).mean()), "fixed_bpp": float(fixed.mean())}
    logs = {name: log for name, (_, log) in trained.items()}
    budgets = {arm: logs[model].budget for arm, model in ARM_MODELS.items() if arm in metrics and model in logs}
    return Result(
        config=config,
        seed=seed,
        targets=list(config.targets),
        metrics=metrics,
        by_target=by_target,
        samples=samples,
        stop_steps=stops,
        label_steps=label_steps,
        design_levels=[levels[r] for r in config.targets],
        steps_used={name: log.best_step for name, log in logs.items()},
        validation={name: log.validation for name, log in logs.items()},
        budgets=budgets,
        gammas=[float(gammas[r]) for r in config.targets] if gammas else [],
        thresholds=thresholds,
    )


# ---------------------------------------------------------------------------------------------
# Where the effect lives (CLAIMS.md §7): the compute sweep, and the hinge's cut across the target rate
# ---------------------------------------------------------------------------------------------


def compute_boundary(
    config: Config, speedups: tuple[float, ...], seeds: tuple[int, ...], previous_gamma: float = 0.3
) -> tuple[dict[str, Boundary], np.ndarray]:
    """BADiff against naive early stopping and a shorter sampler across the compute: mean evaluations per image.

    Per seed, the default models (trained once) and one set of trajectories; per speedup s, the labels'
    γ is set on the label trajectories to stop after T / s evaluations, the policy is trained on them,
    and BADiff is scored against the naive arm and the shorter sampler at its own mean evaluations per
    target. Δ = FD(alternative) − FD(BADiff), mean over targets (positive: BADiff better). Also returns,
    per seed, (mean evaluations, Δ vs naive, Δ vs the shorter sampler) at the label weight γ =
    `previous_gamma` (the chapter's operating point before the re-audit), a point on the same axis.
    """
    data = load_data(config.validation_fraction)
    levels = {r: design_level(r, data.all_train) for r in (*config.targets, config.control_target)}
    sweep_config = replace(config, models=("plain", "badiff"))
    n, T = config.n_samples, config.steps
    deltas = {name: np.zeros((len(speedups), len(seeds))) for name in ("naive", "strided")}
    previous = np.zeros((len(seeds), 3))
    for j, seed in enumerate(seeds):
        models = {name: model for name, (model, _) in _train(sweep_config, data, seed, levels).items()}
        noise_seed = 30_000 + seed
        plain_run = _sample(models["plain"], n, noise_seed, 0.0, config)
        runs = {r: _sample(models["badiff"], n, noise_seed, r, config, features=True) for r in config.targets}
        points = [(i, replace(config, speedup=s), {r: None for r in config.targets}) for i, s in enumerate(speedups)]
        points.append((-1, config, {r: previous_gamma for r in config.targets}))
        for i, point, gammas in points:
            policy, _, _ = _labelled_policy(models, point, seed, gammas)
            fds: dict[str, list[float]] = {"badiff": [], "naive": [], "strided": []}
            evals = []
            for r in config.targets:
                k = stop_steps(policy, runs[r], r, config.threshold)
                constant = constant_stops(float(k.mean()), n, T)
                evals.append(float(k.mean()))
                images = {
                    "badiff": at_stops(runs[r], k),
                    "naive": at_stops(plain_run, constant),
                    "strided": _strided(models["plain"], constant, noise_seed, r),
                }
                for arm, x in images.items():
                    fds[arm].append(score(data, x, r, levels[r], float(k.mean()))[0]["fd"])
            gaps = {arm: float(np.mean(fds[arm]) - np.mean(fds["badiff"])) for arm in ("naive", "strided")}
            if i >= 0:
                for arm, gap in gaps.items():
                    deltas[arm][i, j] = gap
            else:
                previous[j] = (float(np.mean(evals)), gaps["naive"], gaps["strided"])
    boundaries = {
        arm: Boundary(
            "speed-up over full sampling (T / mean evaluations per image)",
            tuple(float(s) for s in speedups),
            tuple(seeds),
            deltas[arm],
            f"Δ FD ({arm} − BADiff) at BADiff's evaluations",
        )
        for arm in deltas
    }
    return boundaries, previous


def bandwidth_boundary(
    config: Config, points: tuple[float, ...], seeds: tuple[int, ...]
) -> tuple[Boundary, np.ndarray]:
    """The hinge's cut of the over-budget share at the sender's fixed level, across the target rate R.

    Per seed, one trunk and its plain branch, and per R a BADiff branch trained for that one rate;
    both sample n finished images from the same x_T and are sent at L(R) without rate control.
    Δ = share over R (plain) − share over R (BADiff). Also returns the plain model's share,
    (points, seeds): how much the budget binds at each point.
    """
    data = load_data(config.validation_fraction)
    levels = {r: design_level(r, data.all_train) for r in points}
    on = device()
    as_x = lambda images: torch.as_tensor(images.reshape(-1, PIXELS), dtype=torch.float32, device=on)  # noqa: E731
    deltas, binding = np.zeros((len(points), len(seeds))), np.zeros((len(points), len(seeds)))
    for j, seed in enumerate(seeds):
        branches = {"plain": Branch(conditioned=False)} | {
            f"badiff@{r:g}": Branch(True, config.hinge_weight, (r,)) for r in points
        }
        trained = train_denoisers(
            as_x(data.train), as_x(data.validation), config.schedule, branches, seed=seed, levels=levels
        )
        plain = _sample(trained["plain"][0], config.n_samples, 30_000 + seed, 0.0, config).x0_hat[-1]
        for i, r in enumerate(points):
            images = _sample(trained[f"badiff@{r:g}"][0], config.n_samples, 30_000 + seed, r, config).x0_hat[-1]
            share_plain = float((codec_bits(plain, levels[r]) > r).mean())
            share_badiff = float((codec_bits(images, levels[r]) > r).mean())
            deltas[i, j], binding[i, j] = share_plain - share_badiff, share_plain
    boundary = Boundary(
        "target rate R (bits per pixel)",
        tuple(float(p) for p in points),
        tuple(seeds),
        deltas,
        "Δ over-budget share at L(R) (plain − BADiff)",
    )
    return boundary, binding
