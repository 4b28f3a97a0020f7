"""The DDK experiment: the configuration, the data each arm shares, the warm-up, one distillation arm,
and `run`, which trains the five arms at equal tokens."""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from toyscale.core.devices import device
from toyscale.core.seeding import seed_everything
from toyscale.core.train import train
from toyscale.llm.corpus import DOMAINS, DomainText, build_corpus
from toyscale.llm.tinylm import TinyLM, TinyLMConfig

from .factors import (
    distillation_loss,
    domain_factors,
    sample_domains,
    smooth_factors,
)
from .teacher import NGramTeacher

ARMS = ("cpt", "kd", "static", "ddk_no_smoothing", "ddk")  # every arm, trained at equal tokens
DDK_ARMS = ("ddk", "ddk_no_smoothing")  # the arms whose mixture follows r


@dataclass(frozen=True)
class Config:
    """Toy defaults for the DDK experiment."""

    domains: tuple[str, ...] = tuple(DOMAINS)  # the text domains (toyscale.llm.corpus)
    chars_per_domain: int = 100_000  # characters of each domain's text, before the 80/10/10 split
    teacher_order: int = 5  # n of the teacher's n-gram model (contexts of up to n − 1 characters)
    calculator: bool = True  # the teacher also knows arithmetic (the answer after `a+b=`)
    student: TinyLMConfig = field(
        default_factory=lambda: TinyLMConfig(context=32, d_model=32, n_layer=1, n_head=2)
    )  # the student: one transformer block, width 32, context 32
    batch_size: int = 16  # windows of context + 1 characters per step, for every arm
    warmup_steps: int = 300  # the shared cross-entropy warm-up on the uniform mix (the "pretrained" student)
    steps: int = 450  # distillation steps per arm (equal tokens: steps · batch_size · context)
    update_every: int = 30  # K: steps between updates of r
    alpha: float = 0.5  # factor smoothing's α (Eq. 2), the paper's value
    gamma: float = 0.5  # weight γ of the KL term (0 in the CPT arm); the paper uses 0.2
    lr: float = 3e-3  # Adam learning rate (constant)
    val_windows: int = 64  # windows per domain of the validation split that drive r
    test_windows: int = 300  # windows per domain of the test split that are reported

    def __post_init__(self) -> None:
        if not isinstance(self.student, TinyLMConfig):
            raise TypeError(f"student must be a TinyLMConfig, got {type(self.student).__name__}")
        if isinstance(self.domains, str) or len(self.domains) < 2 or len(set(self.domains)) != len(self.domains):
            raise ValueError(f"domains must be at least two distinct names, got {self.domains!r}")
        unknown = [d for d in self.domains if d not in DOMAINS]
        if unknown:
            raise ValueError(f"domains must come from {sorted(DOMAINS)}, got unknown {unknown}")
        for name in ("chars_per_domain", "teacher_order", "batch_size", "steps", "update_every", "val_windows"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not isinstance(self.warmup_steps, int) or self.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be a non-negative int, got {self.warmup_steps!r}")
        if not isinstance(self.test_windows, int) or self.test_windows < 1:
            raise ValueError(f"test_windows must be a positive int, got {self.test_windows!r}")
        if self.steps % self.update_every:
            raise ValueError(f"steps ({self.steps}) must be a multiple of update_every ({self.update_every})")
        if not 0 <= self.alpha <= 1:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")
        if not self.gamma >= 0:
            raise ValueError(f"gamma must be >= 0, got {self.gamma}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.chars_per_domain < 30 * 2048:
            raise ValueError(f"chars_per_domain must be at least {30 * 2048} (30 blocks), got {self.chars_per_domain}")

    @classmethod
    def fast(cls) -> Config:
        """The tests' configuration: the default itself (a seed is about 13 s of one CPU core).

        The claims' margins were measured on it, and the tests check exactly what the chapter shows.
        """
        return cls()

    @property
    def tokens_per_arm(self) -> int:
        """Characters every arm trains on after the warm-up (targets: steps · batch · context)."""
        return self.steps * self.batch_size * self.student.context


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm]: per domain d 'ratio_d' (test perplexity ratio student/teacher) and 'bpc_d',
    'mean_ratio' and 'max_ratio' over domains, and for the DDK arms 'r_change' (mean L1 change
    of r between updates); metrics['teacher']: 'bpc_d'; metrics['warm']: the warm-up student's
    ratios (where every arm starts). r_history[arm]: r at each update (one row per update, at
    the steps in `update_steps`); val_ratio_history[arm]: the validation ratios at each update
    after the first (every arm is scored; the DDK arms set r from them).
    """

    config: Config
    seed: int
    domains: list[str]
    metrics: dict[str, dict[str, float]]
    update_steps: list[int]
    r_history: dict[str, list[list[float]]]
    val_ratio_history: dict[str, list[list[float]]]
    loss_history: dict[str, list[float]]
    tokens_per_arm: int


@dataclass
class DistillData:
    """One domain set ready for training: windows of ids and the teacher's log-probabilities.

    train/val/test: (D, n, L) long tensors of windows (L = context + 1) per domain;
    teacher_train: (D, n, L − 1, V) teacher log-probs of the training windows' targets;
    teacher_val_nats / teacher_test_nats: (D,) teacher cross-entropy per domain (nats per char).
    """

    domains: list[str]
    train: Tensor
    val: Tensor
    test: Tensor
    teacher_train: Tensor
    teacher_val_nats: Tensor
    teacher_test_nats: Tensor


def cut_windows(ids: np.ndarray, length: int, limit: int | None = None) -> np.ndarray:
    """Non-overlapping windows of `length` ids (the remainder dropped), at most `limit` of them."""
    n = len(ids) // length
    if limit is not None:
        n = min(n, limit)
    return ids[: n * length].reshape(n, length)


def teacher_nats(teacher: NGramTeacher, windows: np.ndarray) -> float:
    """The teacher's mean cross-entropy (nats per character) on the targets of `windows`."""
    log_p = teacher.log_probs(windows)
    return float(-np.take_along_axis(log_p, windows[:, 1:, None].astype(np.int64), axis=2).mean())


def prepare_data(corpus: dict[str, DomainText], config: Config) -> tuple[DistillData, NGramTeacher]:
    """Fit the teacher on the training splits and precompute everything the arms share.

    Every domain contributes the same number of training windows; the teacher's distributions
    for them are computed once and reused by every arm.
    """
    domains = list(config.domains)
    length = config.student.context + 1
    teacher = NGramTeacher([corpus[d].train for d in domains], order=config.teacher_order, calculator=config.calculator)
    train_w = [cut_windows(corpus[d].train, length) for d in domains]
    n_train = min(len(w) for w in train_w)
    val_w = [cut_windows(corpus[d].val, length, config.val_windows) for d in domains]
    test_w = [cut_windows(corpus[d].test, length, config.test_windows) for d in domains]
    n_val, n_test = min(len(w) for w in val_w), min(len(w) for w in test_w)
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
        teacher_val_nats=torch.tensor([teacher_nats(teacher, w) for w in val_np], dtype=torch.float64),
        teacher_test_nats=torch.tensor([teacher_nats(teacher, w) for w in test_np], dtype=torch.float64),
    )
    return data, teacher


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


def distill_arm(
    arm: str, start: TinyLM, data: DistillData, config: Config, seed: int, r0: np.ndarray
) -> tuple[TinyLM, dict[str, list]]:
    """Train one arm from the warm student for `config.steps` steps; return it and its r trace.

    cpt: γ = 0, uniform r. kd: uniform r. static: r₀ throughout. ddk_no_smoothing: r from Eq. 1
    at every update. ddk: r from Eq. 2 at every update, starting at r₀. Every arm draws its
    batches from the same random stream, so CPT and KD see the very same windows.
    """
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    model = copy.deepcopy(start)
    n = len(data.domains)
    gamma = 0.0 if arm == "cpt" else config.gamma
    r = np.full(n, 1 / n) if arm in ("cpt", "kd") else r0.copy()
    generator = torch.Generator().manual_seed(20_000 + seed)
    trace: dict[str, list] = {"r": [], "val_ratio": []}
    teacher_ppl = np.exp(data.teacher_val_nats.numpy())

    def batches(epoch: int):
        nonlocal r
        if epoch > 0:
            # every arm is scored on validation (for the figures); only the DDK arms act on it
            ratio = perplexity_ratio(student_nats(model, data.val), data.teacher_val_nats)
            student_ppl = ratio * teacher_ppl
            trace["val_ratio"].append(ratio.tolist())
            if arm == "ddk":
                r = smooth_factors(r, student_ppl, teacher_ppl, config.alpha)
            elif arm == "ddk_no_smoothing":
                r = domain_factors(student_ppl, teacher_ppl)
        trace["r"].append(r.tolist())
        for _ in range(config.update_every):
            yield _batch(data, sample_domains(r, config.batch_size, generator), generator)

    def loss_fn(m, batch):
        X, y, t = batch
        return distillation_loss(m(X), y, t, gamma)

    history = train(model, loss_fn, batches, epochs=config.steps // config.update_every, lr=config.lr, desc=arm).losses
    trace["loss"] = history
    return model, trace


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """Build the corpus and the teacher, warm the student up, train every arm, measure on test."""
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a ddk.Config, got {type(config).__name__}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    corpus = build_corpus(config.domains, seed=seed, max_chars=config.chars_per_domain)
    data, _ = prepare_data(corpus, config)
    warm, _ = warm_up(data, config, seed)
    teacher_ppl = np.exp(data.teacher_val_nats.numpy())
    warm_ratio = perplexity_ratio(student_nats(warm, data.val), data.teacher_val_nats)
    # r₀: Eq. 1 at the warm student, the start of DDK and the static mix
    r0 = domain_factors(warm_ratio * teacher_ppl, teacher_ppl)

    metrics: dict[str, dict[str, float]] = {}
    r_history, val_history, losses = {}, {}, {}
    log2 = math.log(2)
    metrics["teacher"] = {
        f"bpc_{d}": float(v / log2) for d, v in zip(data.domains, data.teacher_test_nats, strict=True)
    }

    def measure(model: TinyLM) -> dict[str, float]:
        nats = student_nats(model, data.test)
        ratio = perplexity_ratio(nats, data.teacher_test_nats)
        out = {f"ratio_{d}": float(v) for d, v in zip(data.domains, ratio, strict=True)}
        out |= {f"bpc_{d}": float(v / log2) for d, v in zip(data.domains, nats, strict=True)}
        out["mean_ratio"], out["max_ratio"] = float(ratio.mean()), float(ratio.max())
        return out

    metrics["warm"] = measure(warm)
    for arm in ARMS:
        model, trace = distill_arm(arm, warm, data, config, seed, r0)
        metrics[arm] = measure(model)
        r_history[arm], val_history[arm], losses[arm] = trace["r"], trace["val_ratio"], trace["loss"]
        if arm in DDK_ARMS:
            steps = np.asarray(trace["r"])
            metrics[arm]["r_change"] = float(np.abs(np.diff(steps, axis=0)).sum(axis=1).mean())
    return Result(
        config=config,
        seed=seed,
        domains=data.domains,
        metrics=metrics,
        update_steps=list(range(0, config.steps, config.update_every)),
        r_history=r_history,
        val_ratio_history=val_history,
        loss_history=losses,
        tokens_per_arm=config.tokens_per_arm,
    )
