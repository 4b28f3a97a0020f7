"""The DDK experiment: the data every arm shares, the warm-up, one distillation arm, and `run`.

The protocol (the book's CLAIMS.md, §2–3). Each domain's text is dealt to train / validation / test
by whole blocks (the cipher by the prose's own deal, so no text crosses splits). The teacher is
fitted on the training splits. Every arm starts from one shared warm student, gets the same maximum
budget of steps, batches and characters, is scored on the validation splits every K steps (which is
also what drives DDK's mixture), and ends at its own best validation mean ratio within the budget
(the steps it used are reported). The test split is read once per arm, at the end. A negative
control reruns KD and DDK in a world of equal gaps, where the domains have been mixed until they
are one distribution dealt five ways, so there is no gap for the mixture to follow.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, replace

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from toyscale.core.devices import device
from toyscale.core.seeding import seed_everything
from toyscale.core.train import EarlyStopping, train
from toyscale.llm.corpus import DOMAINS, DomainText, build_corpus
from toyscale.llm.tinylm import TinyLM, TinyLMConfig

from .factors import distillation_loss, domain_factors, sample_domains, smooth_factors
from .teacher import NGramTeacher

ARMS = ("cpt", "kd", "static", "ddk_no_smoothing", "ddk")  # every arm, at equal budgets
DDK_ARMS = ("ddk", "ddk_no_smoothing")  # the arms whose mixture follows the measured gaps
#: What DDK's arms may train: the method, or a falsifier's change (see claims.FALSIFIERS).
METHODS = ("ddk", "ddk_shuffled", "kd", "static", "ddk_no_smoothing")
#: The arms of the negative control, in the world of equal gaps, and what each trains.
CONTROL_ARMS = {"kd, equal gaps": "kd", "ddk, equal gaps": "ddk"}
#: How each arm (or method) chooses its mixture r at each update.
SCHEDULES = {
    "cpt": "uniform",
    "kd": "uniform",
    "static": "static",  # DDK's first (smoothed) mixture, kept for the whole run
    "ddk_no_smoothing": "eq1",  # Eq. 1 at every update
    "ddk": "eq2",  # Eq. 2 at every update, from the uniform mix
    "ddk_shuffled": "eq2_shuffled",  # Eq. 2 fed the gaps of randomly permuted domains
}


@dataclass(frozen=True)
class Config:
    """Toy defaults for the DDK experiment."""

    domains: tuple[str, ...] = tuple(DOMAINS)  # the text domains (toyscale.llm.corpus)
    chars_per_domain: int = 100_000  # characters of each domain's text, before the 80/10/10 split
    heterogeneity: float = 1.0  # h: share of each domain's windows that are its own (the rest from a pool)
    teacher_order: int = 5  # n of the teacher's n-gram model (contexts of up to n − 1 characters)
    calculator: bool = True  # the teacher also knows arithmetic (the answer after `a+b=`)
    student: TinyLMConfig = field(
        default_factory=lambda: TinyLMConfig(context=32, d_model=32, n_layer=1, n_head=2)
    )  # the student: one transformer block, width 32, context 32
    batch_size: int = 16  # windows of context + 1 characters per step, for every arm
    warmup_steps: int = 300  # the shared cross-entropy warm-up on the uniform mix (the "pretrained" student)
    steps: int = 450  # every arm's maximum distillation budget; each ends at its best validation point
    update_every: int = 30  # K: steps between updates of r, and between validation scores
    patience: int = 5  # updates without a better validation mean ratio before an arm stops
    alpha: float = 0.5  # factor smoothing's α (Eq. 2), the paper's value
    gamma: float = 2.0  # weight γ of the KL term (0 in CPT): the best validation mean ratio of a sweep (see results)
    lr: float = 3e-3  # Adam learning rate (constant), the same for every arm
    val_windows: int = 310  # windows per domain of the validation split (scores every arm, drives r)
    test_windows: int = 310  # windows per domain of the test split that are reported
    arms: tuple[str, ...] = ARMS  # the arms to train (a falsifier trains only those its claims read)
    method: str = "ddk"  # what DDK's arms train; the falsifiers put a baseline or a broken DDK there
    control: bool = True  # also run the negative control (KD and the method in the world of equal gaps)
    control_heterogeneity: float = 0.0  # h of the control's world: every domain the same mixture

    def __post_init__(self) -> None:
        if not isinstance(self.student, TinyLMConfig):
            raise TypeError(f"student must be a TinyLMConfig, got {type(self.student).__name__}")
        if isinstance(self.domains, str) or len(self.domains) < 2 or len(set(self.domains)) != len(self.domains):
            raise ValueError(f"domains must be at least two distinct names, got {self.domains!r}")
        unknown = [d for d in self.domains if d not in DOMAINS]
        if unknown:
            raise ValueError(f"domains must come from {sorted(DOMAINS)}, got unknown {unknown}")
        for name in (
            "chars_per_domain",
            "teacher_order",
            "batch_size",
            "steps",
            "update_every",
            "patience",
            "val_windows",
            "test_windows",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not isinstance(self.warmup_steps, int) or self.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be a non-negative int, got {self.warmup_steps!r}")
        if self.steps % self.update_every:
            raise ValueError(f"steps ({self.steps}) must be a multiple of update_every ({self.update_every})")
        for name in ("alpha", "heterogeneity", "control_heterogeneity"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if not self.gamma >= 0:
            raise ValueError(f"gamma must be >= 0, got {self.gamma}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.chars_per_domain < 30 * 2048:
            raise ValueError(f"chars_per_domain must be at least {30 * 2048} (30 blocks), got {self.chars_per_domain}")
        bad = [arm for arm in self.arms if arm not in ARMS]
        if bad or not self.arms:
            raise ValueError(f"arms must be a non-empty subset of {ARMS}, got {self.arms}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")

    @classmethod
    def fast(cls) -> Config:
        """The falsifier tests' configuration: the default world and warm student, two fifths of the distillation
        budget, three fifths of the validation windows, and no CPT arm (no claim reads it). The claims themselves
        are checked on the default configuration only (its margins come from calibrating it).
        """
        return cls(steps=180, val_windows=186, arms=("kd", "static", "ddk_no_smoothing", "ddk"))

    @property
    def tokens_per_arm(self) -> int:
        """The most characters an arm trains on after the warm-up (targets: steps · batch · context)."""
        return self.steps * self.batch_size * self.student.context


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm]: per domain d 'ratio_d' (test perplexity ratio student/teacher) and 'bpc_d',
    'mean_ratio' and 'max_ratio' over domains, 'val_mean_ratio' and 'val_max_ratio' (validation, at
    the checkpoint the arm ended at), 'steps' (the steps behind that checkpoint), 'share_d' (the mean
    r of domain d over the blocks behind that checkpoint: its share of the tokens), and for the arms
    whose mixture moves 'r_change' (mean L1 change of r between updates); the control's arms
    'kd, equal gaps' and 'ddk, equal gaps' likewise; metrics['teacher']: 'bpc_d'; metrics['warm']:
    the warm-up student (where every arm starts). r_history[arm]: the r each block of K steps drew
    from; val_ratio_history[arm]: the validation ratios after each block; loss_history[arm]: the
    mean training loss of each block. gap_spread: the standard deviation over domains of the warm
    student's validation log ratio, in the default world and in the control's.
    """

    config: Config
    seed: int
    domains: list[str]
    metrics: dict[str, dict[str, float]]
    r_history: dict[str, list[list[float]]]
    val_ratio_history: dict[str, list[list[float]]]
    loss_history: dict[str, list[float]]
    tokens_per_arm: int
    gap_spread: dict[str, float] = field(default_factory=dict)

    @property
    def update_steps(self) -> list[int]:
        """The step at which each block of K steps started (one per update of r)."""
        return list(range(0, self.config.steps, self.config.update_every))


@dataclass
class DistillData:
    """One domain set ready for training: windows of ids and the teacher's numbers for them.

    train/val/test: (D, n, L) long tensors of windows (L = context + 1) per domain;
    teacher_train: (D, n, L − 1, V) teacher log-probs of the training windows' targets;
    teacher_val / teacher_test: (D, n) the teacher's cross-entropy of each window (nats per char).
    """

    domains: list[str]
    train: Tensor
    val: Tensor
    test: Tensor
    teacher_train: Tensor
    teacher_val: Tensor
    teacher_test: Tensor

    @property
    def teacher_val_nats(self) -> Tensor:
        """(D,) the teacher's cross-entropy per domain on validation (nats per character)."""
        return self.teacher_val.mean(dim=1)

    @property
    def teacher_test_nats(self) -> Tensor:
        """(D,) the teacher's cross-entropy per domain on test (nats per character)."""
        return self.teacher_test.mean(dim=1)


def cut_windows(ids: np.ndarray, length: int, limit: int | None = None, *, block_chars: int = 2048) -> np.ndarray:
    """Non-overlapping windows of `length` ids inside each block of `block_chars` (none straddles two
    blocks, which the split dealt apart), at most `limit` of them."""
    per_block = block_chars // length
    n_blocks = len(ids) // block_chars
    blocks = ids[: n_blocks * block_chars].reshape(n_blocks, block_chars)[:, : per_block * length]
    windows = blocks.reshape(n_blocks * per_block, length)
    return windows if limit is None else windows[:limit]


def teacher_window_nats(teacher: NGramTeacher, windows: np.ndarray) -> np.ndarray:
    """The teacher's cross-entropy (nats per character) of each window's targets: shape (n,)."""
    log_p = teacher.log_probs(windows)
    return -np.take_along_axis(log_p, windows[:, 1:, None].astype(np.int64), axis=2)[..., 0].mean(axis=1)


def teacher_nats(teacher: NGramTeacher, windows: np.ndarray) -> float:
    """The teacher's mean cross-entropy (nats per character) on the targets of `windows`."""
    return float(teacher_window_nats(teacher, windows).mean())


def prepare_data(corpus: dict[str, DomainText], config: Config) -> tuple[DistillData, NGramTeacher]:
    """Fit the teacher on the training splits and precompute everything the arms share.

    Every domain contributes the same number of windows to each split; the teacher's distributions
    for the training windows are computed once and reused by every arm (5 domains × ~2,400 windows ×
    32 positions × 96 characters of float32: about 150 MB).
    """
    domains = list(config.domains)
    length = config.student.context + 1
    teacher = NGramTeacher([corpus[d].train for d in domains], order=config.teacher_order, calculator=config.calculator)
    train_w = [cut_windows(corpus[d].train, length) for d in domains]
    val_w = [cut_windows(corpus[d].val, length, limit=config.val_windows) for d in domains]
    test_w = [cut_windows(corpus[d].test, length, limit=config.test_windows) for d in domains]
    n_train, n_val, n_test = (min(len(w) for w in split) for split in (train_w, val_w, test_w))
    train_np = np.stack([w[:n_train] for w in train_w])
    val_np = np.stack([w[:n_val] for w in val_w])
    test_np = np.stack([w[:n_test] for w in test_w])
    on = device()
    teacher_train = np.stack([teacher.log_probs(w) for w in train_np]).astype(np.float32)
    data = DistillData(
        domains=domains,
        train=torch.as_tensor(train_np, dtype=torch.long, device=on),
        val=torch.as_tensor(val_np, dtype=torch.long, device=on),
        test=torch.as_tensor(test_np, dtype=torch.long, device=on),
        teacher_train=torch.as_tensor(teacher_train, device=on),
        teacher_val=torch.as_tensor(np.stack([teacher_window_nats(teacher, w) for w in val_np]), dtype=torch.float64),
        teacher_test=torch.as_tensor(np.stack([teacher_window_nats(teacher, w) for w in test_np]), dtype=torch.float64),
    )
    return data, teacher


def mix_domains(data: DistillData, heterogeneity: float, seed: int) -> DistillData:
    """The same windows, re-dealt so that each domain keeps only a share h of its own (the boundary's knob).

    Within each split separately (so no window changes split), each domain keeps round(h · n) of its
    windows, drawn at random; the others go to a pool that is shuffled and dealt back, n − round(h · n)
    to each domain. h = 1 is the data unchanged; h = 0 makes every domain a random fifth of one pool:
    the same distribution, so the student's gaps are equal up to sampling noise. The teacher (fitted on
    the union of the training windows) and its numbers move with the windows.
    """
    if not 0 <= heterogeneity <= 1:
        raise ValueError(f"heterogeneity must be in [0, 1], got {heterogeneity}")
    if heterogeneity == 1:
        return data
    generator = np.random.default_rng(40_000 + seed)
    out = {}
    for split, extra in (("train", "teacher_train"), ("val", "teacher_val"), ("test", "teacher_test")):
        windows, numbers = getattr(data, split), getattr(data, extra)
        D, n = windows.shape[:2]
        keep = round(heterogeneity * n)
        orders = [generator.permutation(n) for _ in range(D)]
        pool = np.concatenate([d * n + order[keep:] for d, order in enumerate(orders)])
        pool = generator.permutation(pool).reshape(D, n - keep)
        index = np.stack([np.concatenate([d * n + orders[d][:keep], pool[d]]) for d in range(D)])
        flat = torch.as_tensor(index.reshape(-1))
        for name, tensor in ((split, windows), (extra, numbers)):
            out[name] = tensor.reshape(D * n, *tensor.shape[2:])[flat.to(tensor.device)].reshape(tensor.shape)
    return replace(data, **out)


@torch.no_grad()
def student_nats(model: TinyLM, windows: Tensor) -> Tensor:
    """The student's mean cross-entropy (nats per character) per domain on windows (D, n, L)."""
    was_training = model.training
    model.eval()
    D, n, L = windows.shape
    flat = windows.reshape(D * n, L)
    logits = model(flat[:, :-1])
    ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), flat[:, 1:].reshape(-1), reduction="none")
    model.train(was_training)
    return ce.reshape(D, n * (L - 1)).mean(dim=1).double().cpu()


def perplexity_ratio(student_nats_: Tensor, teacher_nats_: Tensor) -> np.ndarray:
    """ℓ_S / ℓ_T per domain, with ℓ = exp(cross-entropy in nats per character)."""
    return np.exp((student_nats_ - teacher_nats_).numpy())


def gap_spread(ratio: np.ndarray) -> float:
    """How unequal the gaps are: the standard deviation over domains of log(ℓ_S / ℓ_T)."""
    return float(np.std(np.log(ratio)))


def _batch(data: DistillData, domains: Tensor, generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor]:
    """One batch: a random training window of each sampled domain, and its teacher log-probs."""
    index = torch.randint(0, data.train.shape[1], (len(domains),), generator=generator)
    d, i = domains.to(data.train.device), index.to(data.train.device)
    windows = data.train[d, i]
    return windows[:, :-1], windows[:, 1:], data.teacher_train[d, i]


def warm_up(data: DistillData, config: Config, seed: int) -> tuple[TinyLM, list[float]]:
    """The shared starting point: a fresh student trained with cross-entropy on the uniform mix."""
    seed_everything(seed)
    model = TinyLM(config.student).to(device())
    if config.warmup_steps == 0:
        return model, []
    generator = torch.Generator().manual_seed(10_000 + seed)
    uniform = np.full(len(data.domains), 1 / len(data.domains))

    def batches(epoch: int):
        for _ in range(config.warmup_steps):
            yield _batch(data, sample_domains(uniform, config.batch_size, generator), generator)

    def loss_fn(m, batch):
        X, y, t = batch
        return distillation_loss(m(X), y, t, 0.0)

    history = train(model, loss_fn, batches, epochs=1, lr=config.lr, desc="warm-up").losses
    return model, history


def first_mixture(start: TinyLM, data: DistillData, alpha: float) -> np.ndarray:
    """DDK's first mixture: Eq. 2 applied once to the uniform mix, at the warm student's validation gaps."""
    teacher_ppl = np.exp(data.teacher_val_nats.numpy())
    ratio = perplexity_ratio(student_nats(start, data.val), data.teacher_val_nats)
    n = len(ratio)
    return smooth_factors(np.full(n, 1 / n), ratio * teacher_ppl, teacher_ppl, alpha)


@dataclass
class ArmFit:
    """One arm trained: the weights it ended at and what it did on the way.

    steps: the steps behind the kept weights (its best validation mean ratio within the budget);
    r: the mixture each block of K steps drew from; val_ratio: validation ratios after each block;
    loss: mean training loss of each block.
    """

    model: TinyLM
    steps: int
    r: list[list[float]]
    val_ratio: list[list[float]]
    loss: list[float]


def distill_arm(
    arm: str, start: TinyLM, data: DistillData, config: Config, seed: int, *, static: np.ndarray | None = None
) -> ArmFit:
    """Train one arm (or method) from the warm student for at most `config.steps` steps.

    cpt: γ = 0, uniform r. kd: uniform r. static: `static` (DDK's first mixture) throughout.
    ddk_no_smoothing: r from Eq. 1 at every update. ddk: r from Eq. 2 at every update, starting from
    the uniform mix, so its first block already draws from a smoothed mixture. ddk_shuffled (a
    falsifier): Eq. 2 fed each update's gaps under a random permutation of the domains. Every arm is
    scored on validation after each block of K steps, keeps its best validation mean ratio, and stops
    after `config.patience` blocks without improving it. Every arm draws its batches from the same
    random stream, so CPT and KD see the very same windows.
    """
    if arm not in SCHEDULES:
        raise ValueError(f"arm must be one of {tuple(SCHEDULES)}, got {arm!r}")
    schedule = SCHEDULES[arm]
    n = len(data.domains)
    if schedule == "static" and (static is None or len(static) != n):
        raise ValueError(f"the static arm needs its mixture `static` of {n} weights, got {static!r}")
    model = copy.deepcopy(start)
    gamma = 0.0 if arm == "cpt" else config.gamma
    generator = torch.Generator().manual_seed(20_000 + seed)
    shuffler = np.random.default_rng(30_000 + seed)
    teacher_ppl = np.exp(data.teacher_val_nats.numpy())
    uniform = np.full(n, 1 / n)
    ratios = [perplexity_ratio(student_nats(model, data.val), data.teacher_val_nats)]  # the latest first
    mixtures: list[np.ndarray] = []

    def next_mixture(r: np.ndarray, ratio: np.ndarray) -> np.ndarray:
        student_ppl = ratio * teacher_ppl
        if schedule == "uniform":
            return uniform
        if schedule == "static":
            return np.asarray(static, dtype=np.float64)
        if schedule == "eq1":
            return domain_factors(student_ppl, teacher_ppl)
        if schedule == "eq2_shuffled":
            order = shuffler.permutation(n)
            return smooth_factors(r, student_ppl[order], teacher_ppl[order], config.alpha)
        return smooth_factors(r, student_ppl, teacher_ppl, config.alpha)

    def batches(epoch: int):
        r = next_mixture(mixtures[-1] if mixtures else uniform, ratios[-1])
        mixtures.append(r)
        for _ in range(config.update_every):
            yield _batch(data, sample_domains(r, config.batch_size, generator), generator)

    def score(m: TinyLM) -> float:
        ratios.append(perplexity_ratio(student_nats(m, data.val), data.teacher_val_nats))
        return float(ratios[-1].mean())

    def loss_fn(m, batch):
        X, y, t = batch
        return distillation_loss(m(X), y, t, gamma)

    log = train(
        model,
        loss_fn,
        batches,
        epochs=config.steps // config.update_every,
        lr=config.lr,
        desc=arm,
        early_stopping=EarlyStopping(score, higher_is_better=False, patience=config.patience),
    )
    return ArmFit(model, log.steps, [r.tolist() for r in mixtures], [r.tolist() for r in ratios[1:]], log.losses)


def _trains(arm: str, config: Config) -> str:
    """What arm `arm` trains: its own schedule, except that a falsifier's `config.method` replaces DDK's."""
    return config.method if arm == "ddk" and config.method != "ddk" else arm


def measure(model: TinyLM, data: DistillData) -> dict[str, float]:
    """The test ratios per domain (read once), their mean and worst, bits per character, and validation's."""
    log2 = math.log(2)
    nats = student_nats(model, data.test)
    ratio = perplexity_ratio(nats, data.teacher_test_nats)
    val = perplexity_ratio(student_nats(model, data.val), data.teacher_val_nats)
    out = {f"ratio_{d}": float(v) for d, v in zip(data.domains, ratio, strict=True)}
    out |= {f"bpc_{d}": float(v / log2) for d, v in zip(data.domains, nats, strict=True)}
    out["mean_ratio"], out["max_ratio"] = float(ratio.mean()), float(ratio.max())
    out["val_mean_ratio"], out["val_max_ratio"] = float(val.mean()), float(val.max())
    return out


def _fit_and_measure(arm: str, trains: str, warm: TinyLM, data: DistillData, config: Config, seed: int) -> tuple:
    fit = distill_arm(trains, warm, data, config, seed, static=first_mixture(warm, data, config.alpha))
    scores = measure(fit.model, data) | {"steps": float(fit.steps)}
    # the share of the tokens each domain got, over the blocks behind the kept weights
    used = np.asarray(fit.r[: max(1, fit.steps // config.update_every)])
    scores |= {f"share_{d}": float(v) for d, v in zip(data.domains, used.mean(axis=0), strict=True)}
    if SCHEDULES[trains] not in ("uniform", "static"):
        scores["r_change"] = float(np.abs(np.diff(np.asarray(fit.r), axis=0)).sum(axis=1).mean())
    return scores, fit


#: The Config fields that make the data and the warm student (what `prepare` depends on).
DATA_FIELDS = (
    "domains",
    "chars_per_domain",
    "teacher_order",
    "calculator",
    "student",
    "batch_size",
    "warmup_steps",
    "lr",
    "val_windows",
    "test_windows",
)
_PREPARED: dict[tuple, tuple[DistillData, TinyLM]] = {}
_PREPARED_KEEP = 5  # seeds kept: a falsifier reruns the seeds its method run just used


def prepare(config: Config, seed: int) -> tuple[DistillData, TinyLM]:
    """The corpus, the teacher's numbers and the warm student of one seed (every arm's shared start).

    Deterministic in the fields `DATA_FIELDS` and the seed, so the last few are kept: a falsifier's
    rerun of a seed (which changes only the arms) reuses them. Nothing here is ever modified: every
    arm trains a copy of the warm student, and `mix_domains` builds new tensors.
    """
    key = (tuple(getattr(config, name) for name in DATA_FIELDS), seed)
    if key not in _PREPARED:
        corpus = build_corpus(config.domains, seed=seed, max_chars=config.chars_per_domain)
        data, _ = prepare_data(corpus, config)
        warm, _ = warm_up(data, config, seed)
        while len(_PREPARED) >= _PREPARED_KEEP:
            _PREPARED.pop(next(iter(_PREPARED)))
        _PREPARED[key] = (data, warm)
    return _PREPARED[key]


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """Build the corpus and the teacher, warm the student up, train every arm, read the test split once."""
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a ddk.Config, got {type(config).__name__}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    shared, warm = prepare(config, seed)
    data = mix_domains(shared, config.heterogeneity, seed)
    log2 = math.log(2)
    metrics: dict[str, dict[str, float]] = {
        "teacher": {f"bpc_{d}": float(v / log2) for d, v in zip(data.domains, data.teacher_test_nats, strict=True)},
        "warm": measure(warm, data),
    }
    spread = {"default": gap_spread(perplexity_ratio(student_nats(warm, data.val), data.teacher_val_nats))}
    r_history, val_history, losses = {}, {}, {}
    for arm in config.arms:
        metrics[arm], fit = _fit_and_measure(arm, _trains(arm, config), warm, data, config, seed)
        r_history[arm], val_history[arm], losses[arm] = fit.r, fit.val_ratio, fit.loss
    if config.control:
        equal = mix_domains(shared, config.control_heterogeneity, seed)
        spread["control"] = gap_spread(perplexity_ratio(student_nats(warm, equal.val), equal.teacher_val_nats))
        for arm, trains in CONTROL_ARMS.items():
            metrics[arm], _ = _fit_and_measure(arm, _trains(trains, config), warm, equal, config, seed)
    return Result(
        config=config,
        seed=seed,
        domains=data.domains,
        metrics=metrics,
        r_history=r_history,
        val_ratio_history=val_history,
        loss_history=losses,
        tokens_per_arm=config.tokens_per_arm,
        gap_spread=spread,
    )
