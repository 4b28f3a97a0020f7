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

from .codec import PIXELS, codec_bits, design_level, transmit
from .judge import (
    DigitClassifier,
    class_diversity,
    classifier_confidence,
    classifier_features,
    frechet_distance,
    train_classifier,
)
from .policy import at_stops, constant_stops, sample_trajectory, stop_labels, stop_steps, train_stop_policy
from .training import Branch, Schedule, train_denoisers

#: The arms the claims compare (`Result.metrics`): which model, and where its sampling stops.
ARMS = (
    "cascade",  # the unconditioned model, all T steps, then the codec
    "naive",  # the unconditioned model stopped at BADiff's mean evaluations per target, sending x̂₀
    "naive_shuffled",  # the unconditioned model stopped at BADiff's per-image stops, shuffled across images
    "conditioned",  # the conditioned model without the hinge, all T steps
    "badiff_full",  # BADiff's model (conditioned, hinge), all T steps
    "badiff_constant",  # BADiff's model stopped at its policy's mean evaluations per target, for every image
    "badiff",  # BADiff: its model and its per-image stop policy
)
#: Beside the arms: the cascade from a second, independent draw of x_T (the noise of one Fréchet distance
#: estimate), and real training digits through the same link (the judge has seen them: an optimistic floor).
DIAGNOSTICS = ("cascade_redraw", "real")
#: The negative control's arms, at `Config.control_target`: the plain model and a BADiff model trained for it.
CONTROL_ARMS = ("loose_plain", "loose_badiff")
#: The denoisers a run can train: plain (always), conditioned without hinge, BADiff, BADiff for the control.
MODELS = ("plain", "conditioned", "badiff", "loose")
METHODS = ("badiff", "plain")  # what the BADiff branches train (a falsifier puts the plain model in their place)
METRICS = ("fd", "bpp", "rate_gap", "evals", "diversity", "confidence", "over_budget", "fixed_bpp")


@dataclass(frozen=True)
class Config:
    """Toy defaults for the BADiff experiment."""

    steps: int = 50  # T, diffusion steps (and the cascade's denoiser evaluations per image)
    width: int = 128  # hidden width of the MLP denoiser
    blocks: int = 2  # residual blocks of the denoiser (each receives the embedding)
    trunk_steps: int = 800  # Adam steps of the shared unconditioned trunk every arm starts from
    branch_steps: int = 400  # Adam steps of each arm's own fine-tuning from the trunk (same batches for all)
    batch_size: int = 128  # images per training step
    lr: float = 2e-3  # Adam learning rate, cosine-decayed to 0 over trunk + branch
    eval_every: int = 50  # branch steps between validation checkpoints (each arm keeps its best)
    validation_fraction: float = 0.2  # share of the training digits held out to pick checkpoints
    targets: tuple[float, ...] = (0.8, 1.1, 1.4)  # target rates R in bits per pixel, low to high
    control_target: float = 1.0  # a rate whose design level (2 grey levels) fits every training digit
    hinge_weight: float = 0.1  # λ in L = ‖x̂₀ − x₀‖² + λ · max(0, Ĥ(x̂₀) − R)
    trajectories: int = 128  # full BADiff trajectories per target that label the stop policy
    beta: float = 10.0  # β: weight of distortion (MSE to the finished sample, received) in the labels
    gamma: float = 0.3  # γ: weight of the steps taken (as a fraction of T) in the labels
    policy_epochs: int = 300  # full-batch Adam epochs of the stop policy
    threshold: float = 0.5  # stop when the policy's p(stop) reaches this
    eta: float = 0.0  # sampler noise: 0 = deterministic DDIM steps, 1 = DDPM's ancestral steps
    n_samples: int = 2000  # images generated per arm and target (the test split holds 539)
    models: tuple[str, ...] = MODELS  # the denoisers to train (a falsifier or a sweep trains only what it reads)
    policy: bool = True  # train the stop policy and score the arms that stop early
    method: str = "badiff"  # what the BADiff branches train: BADiff, or (a falsifier) the plain model
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
        if self.n_samples < 20:
            raise ValueError(f"n_samples must be >= 20 for a Fréchet distance, got {self.n_samples}")
        if not 0 < self.threshold < 1:
            raise ValueError(f"threshold must lie in (0, 1), got {self.threshold}")
        for name in ("hinge_weight", "beta", "gamma", "lr"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        unknown = [m for m in self.models if m not in MODELS]
        if unknown or "plain" not in self.models:
            raise ValueError(f"models must include 'plain' and be drawn from {MODELS}, got {self.models}")
        if self.policy and "badiff" not in self.models:
            raise ValueError("the stop policy needs the 'badiff' model: add it to models or set policy=False")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")

    @classmethod
    def fast(cls) -> Config:
        """A quarter of the training and 800 samples, for tests: about a third of the default's time."""
        return cls(trunk_steps=300, branch_steps=150, trajectories=64, policy_epochs=100, n_samples=800)

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
        )

    def branches(self) -> dict[str, Branch]:
        """The fine-tuning branch of every model this config trains."""
        method = self.method == "badiff"
        specs = {
            "plain": Branch(conditioned=False),
            "conditioned": Branch(conditioned=True, targets=self.targets),
            "badiff": Branch(True, self.hinge_weight, self.targets) if method else Branch(conditioned=False),
            "loose": Branch(True, self.hinge_weight, (self.control_target,)) if method else Branch(conditioned=False),
        }
        return {name: specs[name] for name in MODELS if name in self.models}


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm][metric]: the mean over targets, for the `ARMS`, the `DIAGNOSTICS`, and the
    control's `CONTROL_ARMS` (these only 'fixed_bpp' and 'over_budget', at the control target).
    by_target[arm][metric]: one value per target. Metrics: 'fd' (Fréchet distance to the test
    digits, after rate control), 'bpp' (achieved rate), 'rate_gap' (mean |achieved − target|),
    'evals' (denoiser evaluations per image), 'diversity', 'confidence'; and without rate
    control, each image sent at the design level L(R): 'over_budget' (share of images whose rate
    exceeds R) and 'fixed_bpp' (their mean rate). samples[arm][i]: 8 received images at target i;
    stop_steps[i] / label_steps[i]: BADiff's stops and the trajectory labels' k* at target i;
    steps_used[model]: the Adam steps behind the checkpoint each model kept (validation).
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


@dataclass(frozen=True)
class Data:
    """The digits every run uses: denoiser training and validation parts, the test reference, the judge."""

    train: np.ndarray  # (n, 8, 8) in [0, 1]: what the denoisers train on
    validation: np.ndarray  # held out from training: picks each denoiser's checkpoint
    all_train: np.ndarray  # train + validation: the codec's context model, design levels, the 'real' row
    classifier: DigitClassifier
    reference: np.ndarray  # the judge's features of the test digits


def load_data(validation_fraction: float) -> Data:
    """The fixed split: a share of the training digits held out for validation (by image, seed 0)."""
    split = digits.split()
    all_train = digits.to_unit(split.train_images).astype(np.float64)
    parts = split_units(np.arange(len(all_train)), validation=validation_fraction, test=0.0, seed=0)
    classifier = train_classifier()
    reference = classifier_features(classifier, digits.to_unit(split.test_images))
    return Data(all_train[parts.train], all_train[parts.validation], all_train, classifier, reference)


def score(
    classifier: DigitClassifier,
    reference: np.ndarray,
    images: np.ndarray,
    target: float,
    level: int,
    evals: float,
) -> tuple[dict[str, float], np.ndarray]:
    """An arm's metrics at one target, and its received images: once through rate control, once at level L(R)."""
    sent = transmit(images, target)
    fixed = codec_bits(images, level)
    metrics = {
        "fd": frechet_distance(classifier_features(classifier, sent.received), reference),
        "bpp": float(sent.bpp.mean()),
        "rate_gap": float(np.abs(sent.bpp - target).mean()),
        "evals": float(evals),
        "diversity": class_diversity(classifier, sent.received),
        "confidence": classifier_confidence(classifier, sent.received),
        "over_budget": float((fixed > target).mean()),
        "fixed_bpp": float(fixed.mean()),
    }
    return metrics, sent.received


def _sample(model: torch.nn.Module, n: int, seed: int, target: float, config: Config, features: bool = False):
    return sample_trajectory(model, n, seed, target if model.conditioned else None, config.eta, keep_features=features)


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """Train the paired denoisers and the stop policy, and score every arm on every target."""
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a badiff.Config, got {type(config).__name__}")
    on = device()
    data = load_data(config.validation_fraction)
    rates = (*config.targets, config.control_target)
    levels = {r: design_level(r, data.all_train) for r in rates}
    as_x = lambda images: torch.as_tensor(images.reshape(-1, PIXELS), dtype=torch.float32, device=on)  # noqa: E731
    trained = train_denoisers(
        as_x(data.train), as_x(data.validation), config.schedule, config.branches(), seed=seed, levels=levels
    )
    models = {name: model for name, (model, _) in trained.items()}

    n, T = config.n_samples, config.steps
    noise_seed = 30_000 + seed  # every arm starts from the same x_T
    labelled: dict[float, tuple[np.ndarray, np.ndarray]] = {}
    policy = None
    if config.policy:
        # the stop policy's labels come from full BADiff trajectories on their own noise seeds
        label_runs = {
            r: _sample(models["badiff"], config.trajectories, 10_000 + seed * 100 + i, r, config, features=True)
            for i, r in enumerate(config.targets)
        }
        labelled = {r: stop_labels(label_runs[r], r, config.beta, config.gamma) for r in config.targets}
        policy = train_stop_policy(
            label_runs, {r: labelled[r][1] for r in config.targets}, config.width, config.policy_epochs, seed
        )

    rng = np.random.default_rng(seed)
    real_rows = rng.choice(len(data.all_train), size=min(n, len(data.all_train)), replace=False)
    plain_run = _sample(models["plain"], n, noise_seed, 0.0, config)
    diagnostics = {}
    if config.diagnostics:
        redraw = _sample(models["plain"], n, noise_seed + 50_000, 0.0, config).x0_hat[-1]
        diagnostics = {"cascade_redraw": (redraw, T), "real": (data.all_train[real_rows], 0.0)}
    by_target: dict[str, dict[str, list[float]]] = {}
    samples: dict[str, list[np.ndarray]] = {}
    stops, label_steps = [], []
    for r in config.targets:
        outputs: dict[str, tuple[np.ndarray, float]] = {"cascade": (plain_run.x0_hat[-1], T), **diagnostics}
        if "conditioned" in models:
            outputs["conditioned"] = (_sample(models["conditioned"], n, noise_seed, r, config).x0_hat[-1], T)
        if "badiff" in models:
            run_b = _sample(models["badiff"], n, noise_seed, r, config, features=config.policy)
            outputs["badiff_full"] = (run_b.x0_hat[-1], T)
            if policy is not None:
                k = stop_steps(policy, run_b, r, config.threshold)
                constant = constant_stops(float(k.mean()), n, T)
                shuffled = rng.permutation(k)
                outputs |= {
                    "badiff": (at_stops(run_b, k), float(k.mean())),
                    "badiff_constant": (at_stops(run_b, constant), float(constant.mean())),
                    # naive early stop: the unconditioned model, stopped after BADiff's evaluations, sending x̂₀
                    "naive": (at_stops(plain_run, constant), float(constant.mean())),
                    "naive_shuffled": (at_stops(plain_run, shuffled), float(shuffled.mean())),
                }
                stops.append(k.tolist())
                label_steps.append(labelled[r][0].tolist())
        for arm, (images, evals) in outputs.items():
            values, received = score(data.classifier, data.reference, images, r, levels[r], evals)
            for metric, value in values.items():
                by_target.setdefault(arm, {m: [] for m in METRICS})[metric].append(value)
            samples.setdefault(arm, []).append(received[:8])
    metrics = {arm: {m: float(np.mean(v)) for m, v in values.items()} for arm, values in by_target.items()}
    if "loose" in models:
        # the negative control: at a rate whose design level fits every training digit
        r, level = config.control_target, levels[config.control_target]
        loose = _sample(models["loose"], n, noise_seed, r, config).x0_hat[-1]
        for arm, images in (("loose_plain", plain_run.x0_hat[-1]), ("loose_badiff", loose)):
            fixed = codec_bits(images, level)
            metrics[arm] = {"over_budget": float((fixed > r).mean()), "fixed_bpp": float(fixed.mean())}
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
        steps_used={name: log.best_step for name, (_, log) in trained.items()},
        validation={name: log.validation for name, (_, log) in trained.items()},
    )


# ---------------------------------------------------------------------------------------------
# Where the effect lives (CLAIMS.md §7): two sweeps
# ---------------------------------------------------------------------------------------------


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


def naive_gap(config: Config, budget: int, seed: int, stop: int) -> float:
    """FD(naive stopped after `stop` evaluations) − FD(cascade), mean over targets, for a plain model
    trained `budget` Adam steps (two thirds trunk, one third branch, as in the default)."""
    schedule = replace(config, trunk_steps=budget - budget // 3, branch_steps=budget // 3).schedule
    data = load_data(config.validation_fraction)
    on = device()
    as_x = lambda images: torch.as_tensor(images.reshape(-1, PIXELS), dtype=torch.float32, device=on)  # noqa: E731
    trained = train_denoisers(
        as_x(data.train), as_x(data.validation), schedule, {"plain": Branch(conditioned=False)}, seed=seed
    )
    run_p = _sample(trained["plain"][0], config.n_samples, 30_000 + seed, 0.0, config)
    gaps = []
    for r in config.targets:
        fd = {
            name: frechet_distance(classifier_features(data.classifier, transmit(images, r).received), data.reference)
            for name, images in (("naive", run_p.x0_hat[stop - 1]), ("cascade", run_p.x0_hat[-1]))
        }
        gaps.append(fd["naive"] - fd["cascade"])
    return float(np.mean(gaps))
