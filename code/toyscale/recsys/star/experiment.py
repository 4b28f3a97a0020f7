"""The STAR experiment: three splits by page view, every arm tuned and early-stopped on its own validation score.

The protocol (the book's CLAIMS.md, §2–3): the contexts (page views) are split into train, validation
and test. Every arm gets the same learning-rate grid and the same maximum number of epochs over its
training rows; at each rate it trains until its validation score has not improved for `patience`
epochs, and the rate and epoch with the best validation score are kept. The score of a one-model arm
is its validation AUC per domain, weighted by impressions; each of the separate per-domain models is
tuned and stopped on its own domain's validation AUC. Each arm trains with the batches it would
naturally use: STAR on batches of one domain (partitioned normalization needs them), every other arm
on mixed batches, each separate model on its own domain's rows. Every arm sees the inputs standardized
per domain where the experiment says so (`_pd` arms, STAR's partitioned normalization, the separate
models, STAR with batch norm behind per-domain standardization `star_bn_pd`); the plain `shared`,
`shared_bottom` and `mmoe` arms and STAR with batch norm `star_bn` see one global normalization. The
claims are checked at the paper's domain heterogeneity (`PAPER_RHO`). The test split is read once per
arm, at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from toyscale.core import EarlyStopping, device, metrics, seed_everything, split_units, train
from toyscale.core.boundary import Boundary, sweep
from toyscale.core.seeding import rng
from toyscale.recsys.world import MULTI_DOMAIN, DomainLog, WorldConfig, make_domain_log

from .blocks import STAR, MMoE, SeparateModels, SharedBottom, SharedModel, Standardize, fold_star, mlp_flops, plain_mlp

#: The domain heterogeneity ρ the claims are checked at (CLAIMS.md §7, v2), fixed from the paper's premise before
#: the calibration that uses it. The paper's abstract describes its domains as sharing "some common user groups
#: and items" while each has "its own unique user groups and items", and "even the same user may have different
#: behaviors in different domains": neither the shared behaviour nor a domain's own dominates. In the toy world's
#: logit f(x) + ρ·g_d(x) + b_d (f and each g_d of unit variance), that is ρ = 1: a domain's own click function
#: weighs as much as the shared one, half of the varying logit's variance domain-specific. The chapter's
#: previous world (MULTI_DOMAIN's ρ = 0.6, a quarter domain-specific) stays a point of the boundary sweep.
PAPER_RHO = 1.0
#: The chapter's world: `MULTI_DOMAIN` with a third of its page views (about 20k training impressions), so
#: that one run of every arm at every rate takes under a minute on one core, at the paper's heterogeneity.
TOY_WORLD = replace(MULTI_DOMAIN, n_contexts=4000, domain_strength=PAPER_RHO)


@dataclass(frozen=True)
class ArmSpec:
    """What an arm trains: the model, its input normalization, and the batches it trains on.

    model: 'shared', 'shared_bottom', 'mmoe', 'separate' or 'star'; norm: 'global' or 'domain'
    (fixed standardization with the training split's statistics, over all rows or per domain) for
    the baselines, 'pn' or 'bn' for STAR's normalization layer; batches: 'mixed' (rows of every
    domain), 'single' (one domain per batch) or 'own' (each separate model its own domain's rows);
    aux: STAR's auxiliary network; topology: STAR's domain weights W_p, b_p trained (else fixed at
    ones and zeros: a shared network behind PN); centre: STAR's shared W, b trained (else fixed at
    their initial values: no domain learns from another's data); standardize: STAR behind the fixed per-domain
    input standardization the `_pd` baselines get.
    """

    model: str
    norm: str
    batches: str
    aux: bool = True
    topology: bool = True
    centre: bool = True
    standardize: bool = False  # STAR only: a fixed per-domain input standardization before its normalization


SPECS = {
    "shared": ArmSpec("shared", "global", "mixed"),
    "shared_pd": ArmSpec("shared", "domain", "mixed"),
    "shared_bottom": ArmSpec("shared_bottom", "global", "mixed"),
    "shared_bottom_pd": ArmSpec("shared_bottom", "domain", "mixed"),
    "mmoe": ArmSpec("mmoe", "global", "mixed"),
    "mmoe_pd": ArmSpec("mmoe", "domain", "mixed"),
    "separate": ArmSpec("separate", "domain", "own"),
    "star": ArmSpec("star", "pn", "single"),
    "star_bn": ArmSpec("star", "bn", "mixed"),
    # STAR with batch norm on mixed batches behind the per-domain input standardization every `_pd` baseline gets
    "star_bn_pd": ArmSpec("star", "bn", "mixed", standardize=True),
    "star_no_aux": ArmSpec("star", "pn", "single", aux=False),
    # an illustration, never a claim's baseline: BN trained on single-domain batches, tested with one
    # blended moving average (the train/test mismatch partitioned normalization removes)
    "star_bn_single": ArmSpec("star", "bn", "single"),
    # falsifiers' changes: STAR with its domain weights fixed at W_p = 1, b_p = 0; with its shared centre fixed
    "star_no_topology": ArmSpec("star", "pn", "single", topology=False),
    "star_no_centre": ArmSpec("star", "pn", "single", centre=False),
    # PN without its per-domain statistics: one batch statistic over mixed batches, one moving average, γ_p, β_p kept
    "star_pn_shared": ArmSpec("star", "pn_shared", "mixed"),
}
#: The arms `run` trains by default: the attribution grid ({global, per-domain} × {shared, MMoE, star FCN}),
#: shared-bottom both ways, the separate models, and STAR's ablation without the auxiliary network.
ARMS = (
    "shared",
    "shared_pd",
    "shared_bottom_pd",
    "mmoe",
    "mmoe_pd",
    "separate",
    "star",
    "star_bn",
    "star_bn_pd",
    "star_no_aux",
)
#: What the 'star' arm may train: the method, or a falsifier's change (see claims.FALSIFIERS).
METHODS = (
    "star",
    "star_no_topology",
    "star_no_centre",
    "star_bn_single",
    "star_bn",
    "star_bn_pd",
    "star_pn_shared",
    "shared_pd",
    "mmoe_pd",
    "shared_bottom_pd",
    "separate",
)
#: The attribution grid: (architecture, global-normalization arm, per-domain-normalization arm).
GRID = (("shared MLP", "shared", "shared_pd"), ("MMoE", "mmoe", "mmoe_pd"), ("star FCN", "star_bn", "star"))
#: The arms of the negative control, in the world without domain heterogeneity (ρ = 0): name -> what it trains.
CONTROL_ARMS = {"shared_pd, ρ = 0": "shared_pd", "star, ρ = 0": "star"}
METRIC_NAMES = ("auc_weighted", "auc_smallest", "log_loss", "val_auc", "lr", "epochs", "steps", "limit")


@dataclass(frozen=True)
class Config:
    """Toy defaults for the STAR experiment."""

    world: WorldConfig = field(default_factory=lambda: TOY_WORLD)  # the multi-domain world (6 domains)
    validation_fraction: float = 0.15  # share of contexts for choosing rates and epochs
    test_fraction: float = 0.35  # share of contexts for the final evaluation, read once per arm: large, so the
    # small domains' AUC is measured precisely (the world is free to sample); half the contexts train
    hidden: tuple[int, ...] = (64, 32)  # hidden widths of every network (STAR's FCN, the shared MLP, ...)
    n_experts: int = 4  # MMoE's experts, each one layer of width hidden[0]
    aux_embedding_dim: int = 4  # width of the domain embedding of STAR's auxiliary network
    aux_hidden: int = 8  # hidden width of the auxiliary network
    max_epochs: int = 40  # every arm's budget in passes over its training rows; each stops at its own best
    # validation point within it (a separate model of a small domain needs many passes, the others stop early)
    patience: int = 3  # epochs without a better validation score before an arm stops
    batch_size: int = 1024  # rows per batch (batches of a domain, or of all, are cut to near-equal sizes)
    learning_rates: tuple[float, ...] = (0.003, 0.01, 0.03)  # Adam rates: the same grid for every arm and model
    weight_decay: float = 0.0  # Adam weight decay
    arms: tuple[str, ...] = ARMS  # the arms to train (a falsifier or a sweep trains only those its claims need)
    method: str = "star"  # what the 'star' arm trains; the falsifiers put a change or a baseline in its place
    control: bool = True  # also run the negative control (shared_pd and the method in a world with ρ = 0)
    control_strength: float = 0.0  # ρ of the control's world: every domain clicks by the same function

    def __post_init__(self) -> None:
        if not isinstance(self.world, WorldConfig):
            raise TypeError(f"world must be a WorldConfig, got {type(self.world).__name__}")
        if self.world.n_domains < 2:
            raise ValueError(f"world.n_domains must be >= 2 (STAR needs domains), got {self.world.n_domains}")
        for name in ("validation_fraction", "test_fraction"):
            if not 0.0 < getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in (0, 1), got {getattr(self, name)}")
        if self.validation_fraction + self.test_fraction >= 1.0:
            raise ValueError("validation_fraction + test_fraction must leave contexts to train on")
        if not self.hidden or any(not isinstance(w, int) or w < 1 for w in self.hidden):
            raise ValueError(f"hidden must be a non-empty tuple of positive ints, got {self.hidden!r}")
        for name in ("n_experts", "aux_embedding_dim", "aux_hidden", "max_epochs", "patience", "batch_size"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive int, got {getattr(self, name)!r}")
        if not self.learning_rates or not all(lr > 0 for lr in self.learning_rates):
            raise ValueError(f"learning_rates must be a non-empty tuple of positive rates, got {self.learning_rates}")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}")
        unknown = [arm for arm in self.arms if arm not in SPECS]
        if unknown or not self.arms:
            raise ValueError(f"arms must be a non-empty subset of {tuple(SPECS)}, got {self.arms}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.control_strength < 0:
            raise ValueError(f"control_strength must be >= 0 (a weight ρ), got {self.control_strength}")

    @classmethod
    def fast(cls) -> Config:
        """Half the page views, every arm still tuned on the default's learning-rate grid, for the falsifier
        tests: training cost falls less than the data."""
        return cls(world=replace(TOY_WORLD, n_contexts=2000))


@dataclass
class Splits:
    """A world's log split by whole page views, with each split's model inputs as tensors."""

    train: DomainLog
    validation: DomainLog
    test: DomainLog
    data: dict[str, dict[str, Tensor]]  # 'train', 'validation', 'test' -> X, domain, y
    smallest: int  # the domain with the fewest training impressions


@dataclass
class Fit:
    """One model trained at one rate until its validation score stopped improving."""

    model: nn.Module
    lr: float
    epochs: int  # epochs behind the kept weights
    steps: int  # Adam steps behind the kept weights
    score: float  # the validation score that chose them
    path: list[float]  # the validation score after every epoch run
    limit: int = 0  # the Adam steps the whole epoch budget allows at this rate


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm][metric]: 'auc_weighted' (per-domain test AUC weighted by test impressions),
    'auc_smallest' (the smallest domain's test AUC), 'log_loss', 'val_auc' (the validation score
    that chose the arm's rate and epoch), and the 'lr', 'epochs' and 'steps' used (for 'separate':
    the smallest domain's model's rate and epochs, the steps of all its models), for every arm run,
    the control's two arms and 'oracle'; domain_auc[arm]: each domain's test AUC;
    train_rows / test_rows: impressions per domain; paths[arm]: validation score per epoch at the
    arm's chosen rate (for 'separate', the smallest domain's model); domain_weights: STAR's learned
    W_p per layer, (M, out, in) arrays; fold_max_diff: the largest |logit| difference between STAR and
    its folded serving form on the test split; serving_flops: FLOPs per request of a folded STAR
    network and of the shared model.
    """

    config: Config
    seed: int
    metrics: dict[str, dict[str, float]]
    domain_auc: dict[str, list[float]]
    train_rows: list[int]
    test_rows: list[int]
    paths: dict[str, list[float]] = field(default_factory=dict)
    domain_weights: list[np.ndarray] = field(default_factory=list)
    fold_max_diff: float = float("nan")
    serving_flops: dict[str, int] = field(default_factory=dict)
    budgets: dict[str, tuple[int, int]] = field(default_factory=dict)  # arm -> (Adam steps used, steps allowed)


def as_tensors(log: DomainLog, on: torch.device | None = None) -> dict[str, Tensor]:
    """Features X (float32), domain ids and labels y as tensors on device `on` (CPU by default)."""
    return {
        "X": torch.as_tensor(log.X, dtype=torch.float32, device=on),
        "domain": torch.as_tensor(log.domain, dtype=torch.long, device=on),
        "y": torch.as_tensor(log.y, dtype=torch.float32, device=on),
    }


def make_splits(world: WorldConfig, config: Config, seed: int) -> Splits:
    """Draw the world's log and split it by page view into train / validation / test."""
    log, _ = make_domain_log(world, seed=seed)
    split = split_units(log.context, validation=config.validation_fraction, test=config.test_fraction, seed=seed)
    logs = {name: log.subset(getattr(split, name)) for name in ("train", "validation", "test")}
    counts = np.bincount(logs["train"].domain, minlength=log.n_domains)
    if counts.min() < 2:
        raise ValueError(f"every domain needs at least 2 training impressions, got {counts.tolist()}")
    on = device()
    data = {name: as_tensors(part, on) for name, part in logs.items()}
    return Splits(**logs, data=data, smallest=int(np.argmin(counts)))


def _cut(rows: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """`rows` cut into ⌈n / batch_size⌉ batches of near-equal size (never a one-row remainder)."""
    return np.array_split(rows, max(1, -(-rows.size // batch_size)))


def domain_batches(domain: np.ndarray, batch_size: int, *, seed: int) -> Iterator[np.ndarray]:
    """Row indices in batches that each hold a single domain, in a shuffled order (STAR's training).

    Each domain's rows are shuffled and cut into batches of at most `batch_size` and near-equal
    size, so a domain of n ≥ 2 rows never yields a one-row batch; then the batches of all domains
    are shuffled together, so a domain's share of the steps is its share of the data.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    generator = rng(seed)
    batches = []
    for d in np.unique(domain):
        batches += _cut(generator.permutation(np.flatnonzero(domain == d)), batch_size)
    for b in generator.permutation(len(batches)):
        yield batches[b]


def mixed_batches(n_rows: int, batch_size: int, *, seed: int) -> Iterator[np.ndarray]:
    """Row indices 0..n_rows−1 shuffled and cut into batches of near-equal size, domains mixed."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    yield from _cut(rng(seed).permutation(n_rows), batch_size)


def _standardize(spec: ArmSpec, log: DomainLog) -> Standardize:
    """Fixed input standardization with the training split's statistics: global, or one row per domain."""
    X = torch.as_tensor(log.X, dtype=torch.float32)
    if spec.norm == "global":
        return Standardize(X.mean(0, keepdim=True), X.std(0, keepdim=True))
    rows = [torch.as_tensor(log.domain == d) for d in range(log.n_domains)]
    return Standardize(torch.stack([X[r].mean(0) for r in rows]), torch.stack([X[r].std(0) for r in rows]))


def build_model(arm: str, train_log: DomainLog, config: Config) -> nn.Module:
    """A fresh model for `arm` (a key of SPECS); the baselines standardize with the training split's statistics."""
    if arm not in SPECS:
        raise ValueError(f"arm must be one of {tuple(SPECS)}, got {arm!r}")
    spec = SPECS[arm]
    n_features, m, hidden = train_log.X.shape[1], train_log.n_domains, config.hidden
    if spec.model == "star":
        star = STAR(
            n_features,
            m,
            hidden=hidden,
            norm=spec.norm,
            aux=spec.aux,
            aux_embedding_dim=config.aux_embedding_dim,
            aux_hidden=config.aux_hidden,
            standardize=_standardize(ArmSpec("shared", "domain", "mixed"), train_log) if spec.standardize else None,
        )
        if not spec.topology:
            star.fcn.freeze_domain_weights()
        if not spec.centre:
            star.fcn.freeze_centre()
        return star
    standardize = _standardize(spec, train_log)
    if spec.model == "separate":
        return SeparateModels(standardize, n_features, m, hidden)
    if spec.model == "shared":
        return SharedModel(standardize, n_features, m, hidden)
    if spec.model == "shared_bottom":
        return SharedBottom(standardize, n_features, m, hidden)
    return MMoE(standardize, n_features, m, hidden, config.n_experts)


def predict_logits(model: nn.Module, data: dict[str, Tensor]) -> Tensor:
    """The model's logits on every row, in eval mode (computed with the rows sorted by domain)."""
    model.eval()
    order = torch.argsort(data["domain"], stable=True)
    with torch.no_grad():
        logits = model(data["X"][order], data["domain"][order])
    return torch.empty_like(logits).index_copy_(0, order, logits)


def evaluate_arm(y: np.ndarray, p: np.ndarray, domain: np.ndarray, smallest: int, n_domains: int):
    """Per-domain AUC, their mean weighted by impressions, the smallest domain's AUC, and log loss."""
    per = [metrics.auc(y[domain == d], p[domain == d]) for d in range(n_domains)]
    weights = np.bincount(domain, minlength=n_domains)
    scores = {
        "auc_weighted": float(np.dot(per, weights) / weights.sum()),
        "auc_smallest": per[smallest],
        "log_loss": metrics.log_loss(y, p),
    }
    return scores, per


def weighted_auc(model: nn.Module, log: DomainLog, data: dict[str, Tensor]) -> float:
    """Per-domain AUC of the model on `log`, weighted by impressions (the one-model arms' validation score)."""
    # the impression-weighted mean of per-domain AUCs is the group AUC with domains as the groups
    return metrics.group_auc(log.y, torch.sigmoid(predict_logits(model, data)).double().cpu().numpy(), log.domain)


def _loss(model: nn.Module, batch: dict[str, Tensor]) -> Tensor:
    return F.binary_cross_entropy_with_logits(model(batch["X"], batch["domain"]), batch["y"])


def train_at_rate(
    model: nn.Module,
    lr: float,
    rows: np.ndarray,
    data: dict[str, Tensor],
    score: Callable[[nn.Module], float],
    config: Config,
    seed: int,
    *,
    single: bool,
    desc: str,
) -> Fit:
    """Train `model` on the training rows `rows` at rate `lr` until `score(model)` stops improving.

    single: batches of one domain each (STAR's), else mixed batches, their rows sorted by domain
    (which changes no loss: it lets the per-domain layers work on contiguous slices).
    """
    path: list[float] = []
    domain = data["domain"].cpu().numpy()[rows]

    def scored(m: nn.Module) -> float:
        path.append(score(m))
        return path[-1]

    def batches(epoch: int):
        order = seed * 1000 + epoch
        if single:
            cut = domain_batches(domain, config.batch_size, seed=order)
        else:
            cut = (
                b[np.argsort(domain[b], kind="stable")] for b in mixed_batches(rows.size, config.batch_size, seed=order)
            )
        for index in cut:
            index_t = torch.as_tensor(rows[index], device=data["X"].device)
            yield {key: value[index_t] for key, value in data.items()}

    log = train(
        model,
        _loss,
        batches,
        epochs=config.max_epochs,
        lr=lr,
        weight_decay=config.weight_decay,
        desc=desc,
        early_stopping=EarlyStopping(scored, patience=config.patience),
    )
    return Fit(model, lr, log.best_epoch, log.steps, log.best_score, path, log.budget[1])


def _best(fits: Sequence[Fit]) -> Fit:
    """The fit with the best validation score (the first on a tie)."""
    return max(fits, key=lambda f: f.score)


def fit_arm(arm: str, splits: Splits, config: Config, seed: int) -> tuple[nn.Module, dict[str, float], list[float]]:
    """Train `arm` at every rate of the grid and keep the best validation point.

    Returns the model, its choices ('val_auc', 'lr', 'epochs', 'steps') and its validation path.
    Every rate starts from the same initial weights and sees the same batches in the same order. The
    separate arm tunes and stops each domain's model on that domain's validation AUC.
    """
    spec = SPECS[arm]
    train_log, validation = splits.train, splits.validation
    data, val_data = splits.data["train"], splits.data["validation"]
    if spec.model == "separate":
        return _fit_separate(arm, splits, config, seed)
    rows = np.arange(len(train_log))
    fits = []
    for lr in config.learning_rates:
        seed_everything(seed)
        model = build_model(arm, train_log, config).to(data["X"].device)
        score = lambda m: weighted_auc(m, validation, val_data)  # noqa: E731
        fits.append(
            train_at_rate(
                model, lr, rows, data, score, config, seed, single=spec.batches == "single", desc=f"{arm} lr={lr:g}"
            )
        )
    best = _best(fits)
    choice = {
        "val_auc": best.score,
        "lr": best.lr,
        "epochs": float(best.epochs),
        "steps": float(best.steps),
        "limit": float(best.limit),
    }
    return best.model, choice, best.path


def _fit_separate(arm: str, splits: Splits, config: Config, seed: int):
    """One model per domain, each on its own domain's rows, tuned and stopped on its own validation AUC."""
    train_log, validation = splits.train, splits.validation
    data, val_data = splits.data["train"], splits.data["validation"]
    model = build_model(arm, train_log, config).to(data["X"].device)
    assert isinstance(model, SeparateModels)
    chosen: list[Fit] = []
    for d in range(train_log.n_domains):
        rows = np.flatnonzero(train_log.domain == d)
        in_val = validation.domain == d
        val_d = {key: value[torch.as_tensor(in_val, device=value.device)] for key, value in val_data.items()}
        y_val = validation.y[in_val]
        fits = []
        for lr in config.learning_rates:
            seed_everything(seed * 100 + d)
            net = _DomainModel(model.standardize, plain_mlp([train_log.X.shape[1], *config.hidden, 1]), d)
            net = net.to(data["X"].device)

            def score(m: nn.Module, val_d=val_d, y_val=y_val) -> float:
                return metrics.auc(y_val, torch.sigmoid(predict_logits(m, val_d)).double().cpu().numpy())

            fits.append(
                train_at_rate(net, lr, rows, data, score, config, seed, single=False, desc=f"{arm} {d} lr={lr:g}")
            )
        best = _best(fits)
        model.mlps[d].load_state_dict(best.model.mlp.state_dict())
        chosen.append(best)
    tail = chosen[splits.smallest]
    choice = {
        "val_auc": weighted_auc(model, validation, val_data),
        "lr": tail.lr,
        "epochs": float(tail.epochs),
        "steps": float(sum(f.steps for f in chosen)),
        "limit": float(sum(f.limit for f in chosen)),
    }
    return model.eval(), choice, tail.path


class _DomainModel(nn.Module):
    """One separate model in training: domain d's standardization (fixed) and its own MLP."""

    def __init__(self, standardize: Standardize, mlp: nn.Sequential, d: int) -> None:
        super().__init__()
        self.standardize, self.mlp, self.d = standardize, mlp, d

    def forward(self, X: Tensor, domain: Tensor) -> Tensor:
        return self.mlp(self.standardize(X, domain)).squeeze(1)


#: Fits made in this process, keyed by everything that determines one (the arm, the world, the training
#: settings, the seed): a falsifier's rerun or a sweep retrains only what it changes, and gets the very
#: numbers a fresh fit would (training is deterministic on one CPU thread).
_FITS: dict[tuple, tuple[nn.Module, dict[str, float], list[float]]] = {}


def _fit(arm: str, splits: Splits, world: WorldConfig, config: Config, seed: int):
    """`fit_arm`, memoised in `_FITS`."""
    key = (arm, replace(config, world=world, arms=ARMS, method="star", control=False, control_strength=0.0), seed)
    if key not in _FITS:
        _FITS[key] = fit_arm(arm, splits, config, seed)
    return _FITS[key]


def _trains(arm: str, config: Config) -> str:
    """What arm `arm` trains: itself, except that a falsifier's `config.method` replaces STAR's."""
    return config.method if arm == "star" else arm


def _evaluated(model: nn.Module, choice: dict[str, float], splits: Splits) -> tuple[dict[str, float], list[float]]:
    test = splits.test
    p = torch.sigmoid(predict_logits(model, splits.data["test"])).double().cpu().numpy()
    scores, per = evaluate_arm(test.y, p, test.domain, splits.smallest, test.n_domains)
    return {**scores, **choice}, per


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """Draw the world, tune and early-stop every arm on validation, and read the test split once per arm."""
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a star.Config, got {type(config).__name__}")
    splits = make_splits(config.world, config, seed)
    m = splits.train.n_domains
    scores: dict[str, dict[str, float]] = {}
    domain_auc: dict[str, list[float]] = {}
    paths: dict[str, list[float]] = {}
    star_model: nn.Module | None = None
    for arm in config.arms:
        model, choice, paths[arm] = _fit(_trains(arm, config), splits, config.world, config, seed)
        scores[arm], domain_auc[arm] = _evaluated(model, choice, splits)
        if arm == "star":
            star_model = model
    test = splits.test
    scores["oracle"], domain_auc["oracle"] = evaluate_arm(test.y, test.p_true, test.domain, splits.smallest, m)
    result = Result(
        config=config,
        seed=seed,
        metrics=scores,
        domain_auc=domain_auc,
        train_rows=np.bincount(splits.train.domain, minlength=m).tolist(),
        test_rows=np.bincount(test.domain, minlength=m).tolist(),
        paths=paths,
        serving_flops={
            "star_folded": mlp_flops([test.X.shape[1], *config.hidden, 1]),
            "shared": mlp_flops([test.X.shape[1] + m, *config.hidden, 1]),
        },
    )
    if isinstance(star_model, STAR):
        folded = fold_star(star_model.eval())
        gap = predict_logits(folded, splits.data["test"]) - predict_logits(star_model, splits.data["test"])
        result.fold_max_diff = float(gap.abs().max())
        result.domain_weights = [w.detach().cpu().numpy() for w in star_model.fcn.domain_weight]
    if config.control:
        world = replace(config.world, domain_strength=config.control_strength)
        control = make_splits(world, config, seed)
        for name, arm in CONTROL_ARMS.items():
            model, choice, _ = _fit(_trains(arm, config), control, world, config, seed)
            scores[name], domain_auc[name] = _evaluated(model, choice, control)
    result.budgets = {arm: (int(row["steps"]), int(row["limit"])) for arm, row in scores.items() if arm != "oracle"}
    return result


def strongest(result: Result, arms: Sequence[str]) -> str:
    """Of `arms` (those the run trained), the one with the best validation score: the alternative a
    practitioner would pick without looking at the test split."""
    present = [arm for arm in arms if arm in result.metrics]
    if not present:
        raise ValueError(f"the run trained none of {list(arms)}; it has {list(result.metrics)}")
    return max(present, key=lambda arm: result.metrics[arm]["val_auc"])


def _gain(config: Config, seed: int, baseline: str, metric: str) -> float:
    """Test `metric` of STAR minus `baseline`'s, each at its own best validation point, in `config.world`."""
    result = run(replace(config, arms=(baseline, "star"), control=False), seed=seed)
    return result.metrics["star"][metric] - result.metrics[baseline][metric]


def topology_gain(config: Config, seed: int) -> float:
    """Weighted test AUC of STAR minus the shared model's, both with per-domain normalization."""
    return _gain(config, seed, "shared_pd", "auc_weighted")


def sharing_gain(config: Config, seed: int) -> float:
    """The smallest domain's test AUC under STAR minus under its own separate model."""
    return _gain(config, seed, "separate", "auc_smallest")


def _across_rho(
    gain: Callable[[Config, int], float], config: Config, points: Sequence[float], seeds: Sequence[int], name: str
) -> Boundary:
    return sweep(
        lambda rho, seed: gain(replace(config, world=replace(config.world, domain_strength=rho)), seed),
        points,
        seeds,
        parameter="domain heterogeneity ρ",
        delta_name=name,
    )


def heterogeneity_boundary(config: Config, points: Sequence[float], seeds: Sequence[int]) -> Boundary:
    """Where the star topology pays: Δ weighted AUC (STAR − shared, both per-domain normalized) across ρ.

    ρ (the world's domain strength) weighs each domain's own click function g_d against the shared
    one f. At ρ = 0 every domain clicks by the same function up to a bias, which the shared model's
    domain input already gives it: the star topology has nothing to add there (CLAIMS.md §7).
    """
    return _across_rho(topology_gain, config, points, seeds, "Δ AUC (STAR − shared, per-domain normalized)")


def sharing_boundary(config: Config, points: Sequence[float], seeds: Sequence[int]) -> Boundary:
    """Where sharing pays the smallest domain: Δ its test AUC (STAR − its separate model) across ρ.

    The more the domains' click functions differ, the less the small domain can borrow from the others.
    """
    return _across_rho(sharing_gain, config, points, seeds, "Δ smallest-domain AUC (STAR − separate)")


def zipf_for_share(n_domains: int, share: float) -> float:
    """The long-tail exponent a_D at which the smallest of `n_domains` domains holds `share` of the contexts."""
    if not 0.0 < share <= 1.0 / n_domains:
        raise ValueError(f"share must be in (0, 1/{n_domains}], got {share}")

    def smallest(a: float) -> float:
        weights = np.arange(1, n_domains + 1, dtype=np.float64) ** (-a)
        return float(weights[-1] / weights.sum())

    low, high = 0.0, 1.0
    while smallest(high) > share:  # the smallest share falls as a_D grows
        high *= 2.0
    for _ in range(60):
        mid = (low + high) / 2.0
        low, high = (mid, high) if smallest(mid) > share else (low, mid)
    return (low + high) / 2.0


def tail_config(config: Config, share: float, *, test_boost: int = 3) -> Config:
    """`config` with its smallest domain at `share` of the contexts, the same training and validation page views,
    and `test_boost` times the page views in all, the extra ones all in the test split (free to sample), so the
    smallest domain's test AUC rests on several times the test rows."""
    if not isinstance(test_boost, int) or test_boost < 1:
        raise ValueError(f"test_boost must be a positive int, got {test_boost!r}")
    world = config.world
    train = 1.0 - config.validation_fraction - config.test_fraction
    return replace(
        config,
        world=replace(
            world,
            n_contexts=world.n_contexts * test_boost,
            domain_zipf=zipf_for_share(world.n_domains, share),
        ),
        validation_fraction=config.validation_fraction / test_boost,
        test_fraction=1.0 - (train + config.validation_fraction) / test_boost,
    )


def tail_boundary(config: Config, shares: Sequence[float], seeds: Sequence[int], *, test_boost: int = 3) -> Boundary:
    """Where sharing pays a tail domain: Δ the smallest domain's test AUC (STAR − its separate model) across the
    smallest domain's share of the page views, at the world's ρ, with `test_boost` times the test rows.

    What decides whether a domain can gain from the others' data is how little of its own it has.
    """
    return sweep(
        lambda share, seed: sharing_gain(tail_config(config, share, test_boost=test_boost), seed),
        shares,
        seeds,
        parameter="smallest domain's share of page views",
        delta_name="Δ smallest-domain AUC (STAR − separate)",
    )
