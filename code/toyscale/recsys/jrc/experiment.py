"""The JRC experiment: three splits by context, every arm tuned and early-stopped on validation alone.

The protocol (the book's CLAIMS.md, §2–3, v2): the contexts are split into train, validation and
test. Every arm (pointwise, combined, JRC, JRC with the other-label denominator) is tuned over a grid
of the same size: the learning rate crossed with its own second knob, the calibration weight α for
the arms that have one and the weight decay for pointwise (`grid`). At each configuration it trains
until its validation GAUC has not improved for `patience` epochs, within the same epoch budget. Two
checkpoints per arm are then chosen on validation alone: its best validation GAUC (the *ranking
checkpoint*, what ranking claims compare) and its best validation log loss (the *calibration
checkpoint*, what calibration claims compare), each over every configuration and epoch. The test
split is read once per arm and checkpoint.

Two mechanisms, kept apart (`WORLDS`): the page shift σ_z alone (the same world with exposure
unconfounded, γ = 0), and the exposure confounding on top of it. Their controls: no shift at all
(σ_z = 0, nothing for the ranking term to cancel), and exposure that varies by page as much as in
the regime but follows a page signal unrelated to the click shift (nothing confounded).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from torch import Tensor

from toyscale.core import EarlyStopping, device, metrics, seed_everything, split_units, train
from toyscale.core.boundary import Boundary, sweep
from toyscale.recsys.world import ClickLog, WorldConfig, context_batches, make_log, user_activity_bucket

from .losses import CTRModel, combined_loss, jrc_loss, p_click, pointwise_loss

ARMS = ("pointwise", "combined", "jrc", "jrc_other")
#: What JRC's arms may train: the method, or a falsifier's change (see claims.FALSIFIERS).
METHODS = ("jrc", "jrc_no_ranking", "pointwise", "combined")
#: The arms whose loss has a calibration weight α (their second knob); the others tune the weight decay.
WEIGHTED = ("combined", "jrc", "jrc_other")
#: The mechanism and control worlds beside the regime's: name -> the world's changes to `Config.world`.
WORLDS: dict[str, dict[str, float]] = {
    "γ = 0": {"exposure_confounding": 0.0},  # the page shift alone: exposure ignores the context
    "no shift": {"context_shift_std": 0.0},  # control: no shift, so no confounding either
    "unrelated exposure": {"exposure_follows_shift": 0.0},  # control: exposure follows an unrelated page signal
}
#: The arms trained in each world of `WORLDS`, named "arm, world".
WORLD_ARMS = ("pointwise", "jrc")
ACTIVITY_NAMES = ("sparse users (≤ 2 sessions)", "medium (3–10)", "heavy users (> 10)")
METRIC_NAMES = ("auc", "gauc", "log_loss", "ece", "pcoc")


@dataclass(frozen=True)
class Config:
    """Toy defaults for the JRC experiment."""

    world: WorldConfig = field(default_factory=WorldConfig)  # the synthetic ad world
    validation_fraction: float = 0.2  # share of contexts for choosing epochs and learning rates
    test_fraction: float = 0.25  # share of contexts for the final evaluation, read once per arm
    embedding_dim: int = 8  # width of each field's embedding
    hidden: int = 32  # width of the MLP's hidden layer
    max_epochs: int = 30  # every arm's budget; each stops at its own best validation point within it
    patience: int = 3  # epochs without a better validation GAUC before an arm stops
    contexts_per_batch: int = 64  # whole contexts per batch (~640 impressions)
    learning_rates: tuple[float, ...] = (0.01, 0.03)  # Adam rates: the same for every arm
    alphas: tuple[float, ...] = (0.1, 0.5)  # α tried by the weighted arms: the paper's 0.5, and a ranking-heavy 0.1
    weight_decays: tuple[float, ...] = (0.0, 1e-5)  # Adam weight decay tried by pointwise (as many as alphas)
    arms: tuple[str, ...] = ARMS  # the arms to train (a falsifier trains only those its claims need)
    method: str = "jrc"  # what JRC's two arms train; a falsifier's change puts another loss in their place
    worlds: tuple[str, ...] = tuple(WORLDS)  # the mechanism and control worlds to run (see WORLDS)
    ece_bins: int = 20  # equal-mass bins for ECE
    reliability_bins: int = 10  # equal-mass bins for the reliability diagram

    def __post_init__(self) -> None:
        if not self.alphas or not all(0.0 <= a <= 1.0 for a in self.alphas):
            raise ValueError(f"alphas must be calibration weights in [0, 1], got {self.alphas}")
        if len(self.weight_decays) != len(self.alphas) or not all(w >= 0 for w in self.weight_decays):
            raise ValueError(
                f"weight_decays must be {len(self.alphas)} decays >= 0, as many as alphas (the same tuning budget "
                f"for pointwise as for the weighted arms), got {self.weight_decays}"
            )
        unknown_worlds = [w for w in self.worlds if w not in WORLDS]
        if unknown_worlds:
            raise ValueError(f"worlds must be among {tuple(WORLDS)}, got {self.worlds}")
        unknown = [arm for arm in self.arms if arm not in ARMS]
        if unknown or not self.arms:
            raise ValueError(f"arms must be a non-empty subset of {ARMS}, got {self.arms}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if not self.learning_rates or not all(lr > 0 for lr in self.learning_rates):
            raise ValueError(f"learning_rates must be a non-empty tuple of positive rates, got {self.learning_rates}")
        for name in ("embedding_dim", "hidden", "max_epochs", "patience", "contexts_per_batch"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    def world_of(self, name: str) -> WorldConfig:
        """The world `name` of `WORLDS`: the regime's world with that world's changes."""
        return replace(self.world, **WORLDS[name])

    @classmethod
    def fast(cls) -> Config:
        """A world of a quarter of the contexts and users, for tests of the machinery (about a quarter of the time).

        The claims are not calibrated here: they are checked on the default configuration (the
        committed results of the book seeds, `reproduce`, the calibration record).
        """
        return cls(world=replace(WorldConfig(), n_contexts=2000, n_users=1000))


@dataclass(frozen=True)
class Setting:
    """One configuration of an arm's tuning grid: the learning rate and its second knob."""

    lr: float
    alpha: float  # the calibration weight α (1.0 for arms without a ranking term)
    weight_decay: float


@dataclass
class Checkpoint:
    """The weights an arm's validation score chose, and where: its setting, epochs and Adam steps."""

    setting: Setting
    epochs: int
    steps: int
    score: float  # the validation score that chose it
    state: dict[str, Tensor]
    limit: int = 0  # the Adam steps the whole epoch budget allows at this setting


@dataclass
class ArmFit:
    """One arm trained over the learning-rate grid: its two checkpoints and its validation paths.

    ranking: best validation GAUC over every setting and epoch; calibration: best validation log loss;
    paths[setting]: (validation GAUC, validation log loss) after each epoch at that setting.
    """

    n_logits: int
    ranking: Checkpoint
    calibration: Checkpoint
    paths: dict[Setting, tuple[list[float], list[float]]]


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm][metric]: test metrics at each arm's ranking checkpoint ('pointwise', 'combined',
    'jrc', 'jrc_other', each world's 'pointwise, <world>' and 'jrc, <world>', and 'oracle'), with the
    'lr', 'alpha', 'weight_decay', 'epochs' and 'steps' it used and 'val_gauc', the validation GAUC
    that chose it; calibrated[arm][metric]: the same at its calibration checkpoint, with
    'val_log_loss'; by_activity[arm]: GAUC per user-activity bucket at the ranking checkpoint;
    reliability[arm]: (mean p, click rate) per equal-mass bin at the calibration checkpoint;
    paths[arm]: (validation GAUC, validation log loss) per epoch at the arm's ranking setting;
    budgets[arm]: (Adam steps at the ranking checkpoint, steps the epoch budget allowed there).
    """

    config: Config
    seed: int
    metrics: dict[str, dict[str, float]]
    calibrated: dict[str, dict[str, float]]
    by_activity: dict[str, list[float]] = field(default_factory=dict)
    activity_names: list[str] = field(default_factory=lambda: list(ACTIVITY_NAMES))
    activity_counts: list[int] = field(default_factory=list)
    reliability: dict[str, tuple[list[float], list[float]]] = field(default_factory=dict)
    paths: dict[str, tuple[list[float], list[float]]] = field(default_factory=dict)
    budgets: dict[str, tuple[int, int]] = field(default_factory=dict)


@dataclass
class Splits:
    """A world's click log split by whole contexts, with each split's model inputs as tensors."""

    train: ClickLog
    validation: ClickLog
    test: ClickLog
    data: dict[str, dict[str, Tensor]]  # 'train', 'validation', 'test' -> X, y, context


def as_tensors(log: ClickLog, on: torch.device | None = None) -> dict[str, Tensor]:
    """The model's inputs X (field codes), labels y and context ids as tensors on device `on` (CPU by default)."""
    X = np.stack(list(log.fields.values()), axis=1)
    return {
        "X": torch.as_tensor(X, dtype=torch.long, device=on),
        "y": torch.as_tensor(log.y, dtype=torch.long, device=on),
        "context": torch.as_tensor(log.context, dtype=torch.long, device=on),
    }


def make_splits(world: WorldConfig, config: Config, seed: int) -> Splits:
    """Draw the world's log and split it by context into train / validation / test."""
    log = make_log(world, seed=seed)
    split = split_units(log.context, validation=config.validation_fraction, test=config.test_fraction, seed=seed)
    logs = {name: log.subset(getattr(split, name)) for name in ("train", "validation", "test")}
    on = device()
    return Splits(**logs, data={name: as_tensors(part, on) for name, part in logs.items()})


def loss_for(name: str, alpha: float) -> Callable[[Tensor, dict[str, Tensor]], Tensor]:
    """The training loss of an arm or method, as a function of the logits and a batch of whole contexts.

    'jrc_no_ranking' is JRC with α = 1: its two logits trained on the calibration term alone.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1] (the weight of the calibration term), got {alpha}")

    def loss(logits: Tensor, batch: dict[str, Tensor]) -> Tensor:
        y, context = batch["y"], batch["context"]
        if name == "pointwise":
            return pointwise_loss(logits.squeeze(1), y)
        if name == "combined":
            return combined_loss(logits.squeeze(1), y, context, alpha)
        if name == "jrc_no_ranking":
            return jrc_loss(logits, y, context, 1.0)
        return jrc_loss(logits, y, context, alpha, "other" if name == "jrc_other" else "all")

    return loss


def grid(name: str, config: Config) -> list[Setting]:
    """The settings arm `name` is tuned over: every learning rate crossed with its second knob.

    Arms with a ranking term tune α (`config.alphas`); pointwise and JRC with the ranking term off
    (α = 1, nothing to weigh) tune the weight decay (`config.weight_decays`), a grid of the same size.
    """
    if name in WEIGHTED:
        return [Setting(lr, alpha, 0.0) for lr in config.learning_rates for alpha in config.alphas]
    return [Setting(lr, 1.0, decay) for lr in config.learning_rates for decay in config.weight_decays]


def n_logits_of(name: str) -> int:
    """JRC's two logits, or one for the baselines (and JRC with f₀ tied to zero)."""
    return 2 if name in ("jrc", "jrc_other", "jrc_no_ranking") else 1


def predict(model: CTRModel, data: dict[str, Tensor]) -> np.ndarray:
    """p(click) for every sample, as float64 NumPy (one logit s gives σ(s), two give σ(f₁ − f₀))."""
    with torch.no_grad():
        return p_click(model(data["X"])).double().cpu().numpy()


def train_at(
    name: str, setting: Setting, splits: Splits, config: Config, seed: int
) -> tuple[Checkpoint, Checkpoint, tuple[list[float], list[float]]]:
    """Train arm `name` at one setting of its grid until its validation GAUC stops improving.

    Returns the best-validation-GAUC checkpoint, the best-validation-log-loss checkpoint, and the
    validation (GAUC, log loss) after each epoch.
    """
    train_log, validation = splits.train, splits.validation
    data, val_data = splits.data["train"], splits.data["validation"]
    loss = loss_for(name, setting.alpha)
    seed_everything(seed)
    model = CTRModel(
        train_log.cardinality, embedding_dim=config.embedding_dim, hidden=config.hidden, n_logits=n_logits_of(name)
    ).to(data["X"].device)
    gaucs: list[float] = []
    log_losses: list[float] = []
    calibration: list[Checkpoint] = []  # the best-so-far log-loss checkpoint

    def score(m: CTRModel) -> float:
        p = predict(m, val_data)
        gaucs.append(metrics.group_auc(validation.y, p, validation.context))
        log_losses.append(metrics.log_loss(validation.y, p))
        if not calibration or log_losses[-1] < calibration[0].score:
            state = {k: v.detach().clone() for k, v in m.state_dict().items()}
            calibration[:] = [Checkpoint(setting, len(log_losses), 0, log_losses[-1], state)]
        return gaucs[-1]

    def batches(epoch: int):
        for index in context_batches(train_log, config.contexts_per_batch, seed=seed * 1000 + epoch):
            yield {key: value[index] for key, value in data.items()}

    log = train(
        model,
        lambda m, batch: loss(m(batch["X"]), batch),
        batches,
        epochs=config.max_epochs,
        lr=setting.lr,
        weight_decay=setting.weight_decay,
        desc=f"{name} lr={setting.lr:g} α={setting.alpha:g} wd={setting.weight_decay:g}",
        early_stopping=EarlyStopping(score, patience=config.patience),
    )
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    steps, limit = log.budget
    ranking = Checkpoint(setting, log.best_epoch, steps, log.best_score, state, limit)
    calibration[0].steps = sum(log.steps_per_epoch[: calibration[0].epochs])
    calibration[0].limit = limit
    return ranking, calibration[0], (gaucs, log_losses)


def fit_arm(name: str, splits: Splits, config: Config, seed: int) -> ArmFit:
    """Train arm `name` at every setting of its grid and choose its two checkpoints on validation.

    Every setting starts from the same initial weights and sees the same batches in the same order.
    The ranking checkpoint is the best validation GAUC over every setting and epoch, the calibration
    checkpoint the best validation log loss.
    """
    ranking: Checkpoint | None = None
    calibration: Checkpoint | None = None
    paths: dict[Setting, tuple[list[float], list[float]]] = {}
    for setting in grid(name, config):
        best_gauc, best_log_loss, paths[setting] = train_at(name, setting, splits, config, seed)
        if ranking is None or best_gauc.score > ranking.score:
            ranking = best_gauc
        if calibration is None or best_log_loss.score < calibration.score:
            calibration = best_log_loss
    assert ranking is not None and calibration is not None
    return ArmFit(n_logits_of(name), ranking, calibration, paths)


def probabilities_on_test(fit: ArmFit, checkpoint: Checkpoint, splits: Splits, config: Config) -> np.ndarray:
    """The test split's p(click) under one checkpoint of an arm."""
    model = CTRModel(
        splits.train.cardinality, embedding_dim=config.embedding_dim, hidden=config.hidden, n_logits=fit.n_logits
    )
    model.load_state_dict(checkpoint.state)
    return predict(model.to(splits.data["test"]["X"].device).eval(), splits.data["test"])


def evaluate_arm(y: np.ndarray, p: np.ndarray, context: np.ndarray, ece_bins: int) -> dict[str, float]:
    """AUC, GAUC (per context), log loss, ECE and PCOC of probabilities p."""
    return {
        "auc": metrics.auc(y, p),
        "gauc": metrics.group_auc(y, p, context),
        "log_loss": metrics.log_loss(y, p),
        "ece": metrics.ece(y, p, bins=ece_bins),
        "pcoc": metrics.pcoc(y, p),
    }


def gauc_by_bucket(
    y: np.ndarray, p: np.ndarray, context: np.ndarray, bucket: np.ndarray, n_buckets: int
) -> list[float]:
    """GAUC within each user-activity bucket (nan where no context of the bucket holds both labels)."""
    values = []
    for b in range(n_buckets):
        rows = bucket == b
        has_both = rows.any() and len(np.unique(y[rows])) == 2
        values.append(metrics.group_auc(y[rows], p[rows], context[rows]) if has_both else float("nan"))
    return values


def _trains(arm: str, config: Config) -> str:
    """The loss arm `arm` trains: its own, except that a falsifier's `config.method` replaces JRC's."""
    return config.method if arm in ("jrc", "jrc_other") and config.method != "jrc" else arm


def _scored(checkpoint: Checkpoint, p: np.ndarray, test: ClickLog, config: Config, validation: str) -> dict[str, float]:
    """Test metrics of one checkpoint, with where it was chosen and `validation`, the score that chose it."""
    scores = evaluate_arm(test.y, p, test.context, config.ece_bins)
    setting = checkpoint.setting
    return {
        **scores,
        validation: checkpoint.score,
        "lr": setting.lr,
        "alpha": setting.alpha,
        "weight_decay": setting.weight_decay,
        "epochs": float(checkpoint.epochs),
        "steps": float(checkpoint.steps),
    }


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """Draw the worlds, tune and early-stop every arm on validation, and read the test split once per checkpoint."""
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a jrc.Config, got {type(config).__name__}")
    splits = make_splits(config.world, config, seed)
    test = splits.test
    bucket = user_activity_bucket(splits.train, test)
    n_buckets = len(ACTIVITY_NAMES)
    scores: dict[str, dict[str, float]] = {}
    calibrated: dict[str, dict[str, float]] = {}
    by_activity: dict[str, list[float]] = {}
    reliability: dict[str, tuple[list[float], list[float]]] = {}
    paths: dict[str, tuple[list[float], list[float]]] = {}
    budgets: dict[str, tuple[int, int]] = {}

    def fitted(arm: str, trains: str, world: Splits) -> tuple[ArmFit, np.ndarray, np.ndarray]:
        fit = fit_arm(trains, world, config, seed)
        p_rank = probabilities_on_test(fit, fit.ranking, world, config)
        p_cal = probabilities_on_test(fit, fit.calibration, world, config)
        scores[arm] = _scored(fit.ranking, p_rank, world.test, config, "val_gauc")
        calibrated[arm] = _scored(fit.calibration, p_cal, world.test, config, "val_log_loss")
        budgets[arm] = (fit.ranking.steps, fit.ranking.limit)
        return fit, p_rank, p_cal

    for arm in config.arms:
        fit, p_rank, p_cal = fitted(arm, _trains(arm, config), splits)
        by_activity[arm] = gauc_by_bucket(test.y, p_rank, test.context, bucket, n_buckets)
        mean_p, mean_y, _ = metrics.reliability(test.y, p_cal, bins=config.reliability_bins)
        reliability[arm] = (mean_p.tolist(), mean_y.tolist())
        paths[arm] = fit.paths[fit.ranking.setting]
    oracle = evaluate_arm(test.y, test.p_true, test.context, config.ece_bins)
    scores["oracle"], calibrated["oracle"] = oracle, dict(oracle)
    by_activity["oracle"] = gauc_by_bucket(test.y, test.p_true, test.context, bucket, n_buckets)
    mean_p, mean_y, _ = metrics.reliability(test.y, test.p_true, bins=config.reliability_bins)
    reliability["oracle"] = (mean_p.tolist(), mean_y.tolist())
    for name in config.worlds:
        world = make_splits(config.world_of(name), config, seed)
        for arm in WORLD_ARMS:
            fitted(f"{arm}, {name}", _trains(arm, config), world)
    return Result(
        config=config,
        seed=seed,
        metrics=scores,
        calibrated=calibrated,
        by_activity=by_activity,
        activity_counts=[int(np.sum(bucket == b)) for b in range(n_buckets)],
        reliability=reliability,
        paths=paths,
        budgets=budgets,
    )


def gauc_gain(config: Config, seed: int) -> float:
    """Test GAUC of the method minus pointwise's, each at its ranking checkpoint, in `config.world`."""
    result = run(replace(config, arms=("pointwise", "jrc"), worlds=()), seed=seed)
    return result.metrics["jrc"]["gauc"] - result.metrics["pointwise"]["gauc"]


#: The two mechanisms' boundaries: name -> (the world knob swept, the knobs held apart from the regime's).
BOUNDARIES: dict[str, tuple[str, dict[str, float]]] = {
    "shift": ("context_shift_std", {"exposure_confounding": 0.0}),  # the page shift alone, exposure unconfounded
    "confounding": ("exposure_confounding", {}),  # the confounding γ at the regime's page shift
}


def gain_boundary(config: Config, mechanism: str, points: Sequence[float], seeds: Sequence[int]) -> Boundary:
    """Where JRC's ranking gain lives: Δ GAUC (JRC − pointwise) across one mechanism's world knob (CLAIMS.md §7).

    'shift' sweeps the page shift σ_z with exposure unconfounded (γ = 0): at σ_z = 0 the ranking term
    has nothing to cancel and the gain must vanish. 'confounding' sweeps the exposure confounding γ at
    the regime's page shift: at γ = 0 what is left is the shift's own gain.
    """
    if mechanism not in BOUNDARIES:
        raise ValueError(f"mechanism must be one of {tuple(BOUNDARIES)}, got {mechanism!r}")
    knob, held = BOUNDARIES[mechanism]
    base = replace(config.world, **held)
    title = (
        "page shift σ_z, exposure unconfounded (γ = 0)"
        if mechanism == "shift"
        else f"exposure confounding γ at page shift σ_z = {base.context_shift_std:g}"
    )
    return sweep(
        lambda x, seed: gauc_gain(replace(config, world=replace(base, **{knob: x})), seed),
        points,
        seeds,
        parameter=title,
        delta_name="Δ GAUC (JRC − pointwise)",
    )


def ranking_weight_sweep(config: Config, seed: int, weights: Sequence[float]) -> dict[str, dict[str, list[float]]]:
    """JRC and the combined loss at each ranking weight 1 − α, each arm tuned and stopped as in `run`.

    Returns method -> {'gauc': test GAUC at the ranking checkpoint, 'log_loss': test log loss at the
    calibration checkpoint}, one value per weight.
    """
    if not weights or not all(0.0 < w <= 1.0 for w in weights):
        raise ValueError(f"weights must be ranking weights 1 − α in (0, 1], got {weights}")
    splits = make_splits(config.world, config, seed)
    out: dict[str, dict[str, list[float]]] = {m: {"gauc": [], "log_loss": []} for m in ("jrc", "combined")}
    for method in out:
        for weight in weights:
            tuned = replace(config, alphas=(1.0 - weight,), weight_decays=(0.0,))
            fit = fit_arm(method, splits, tuned, seed)
            p_rank = probabilities_on_test(fit, fit.ranking, splits, tuned)
            p_cal = probabilities_on_test(fit, fit.calibration, splits, tuned)
            out[method]["gauc"].append(metrics.group_auc(splits.test.y, p_rank, splits.test.context))
            out[method]["log_loss"].append(metrics.log_loss(splits.test.y, p_cal))
    return out
