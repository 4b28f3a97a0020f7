"""The cluster, the configuration and the trace of training jobs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from toyscale.core.seeding import rng

from .performance import goodput_rate

DAY = 1440.0  # minutes
TIMELINE_COLUMNS = ("t", "held", "loaned", "replicas", "lent", "to_train", "to_infer", "reclaiming", "busy")
ARMS = ("static", "elastic", "loan_naive", "joint_only", "fapes")  # the policies, baselines first
POLICY_LABELS = {
    "static": "static (FIFO, requested GPUs)",
    "elastic": "elastic (training pool)",
    "loan_naive": "loaning, naive reclaim",
    "joint_only": "FaPES without loaning (ablation)",
    "fapes": "FaPES",
}


# ---------------------------------------------------------------------------------------------
# The cluster, the configuration and the trace
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cluster:
    """The two virtual clusters and the time costs of moving GPUs (minutes)."""

    train_gpus: int = 16  # GPUs of the training pool
    infer_gpus: int = 16  # GPUs of the inference pool, one replica each
    max_gpus_per_job: int = 16  # the most GPUs one job may use
    checkpoint_min: float = 1.0  # checkpoint before a rescale or a cost-aware reclaim
    kill_min: float = 0.5  # stopping a job without a checkpoint (naive reclaim): still not instant
    restart_min: float = 1.0  # (re)start a job on a new GPU set: load the checkpoint, rebuild groups
    handover_min: float = 1.0  # lend an idle replica's GPU (its last request ends first) or return one
    periodic_checkpoint_min: float = 30.0  # jobs checkpoint this often; a kill loses the work since

    def __post_init__(self) -> None:
        for name in ("train_gpus", "infer_gpus", "max_gpus_per_job"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        for name in ("checkpoint_min", "kill_min", "restart_min", "handover_min", "periodic_checkpoint_min"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0 (moving GPUs is never instant), got {getattr(self, name)}")


@dataclass(frozen=True)
class Config:
    """Toy defaults for the FaPES experiment."""

    cluster: Cluster = field(default_factory=Cluster)  # the GPUs and the time costs of moving them
    n_jobs: int = 48  # training jobs arriving over the first day at load 1
    load: float = 1.0  # multiplies n_jobs: the training load of the main experiment
    sweep_loads: tuple[float, ...] = (0.25, 0.5, 1.0)  # training loads of the sweep (main load included)
    peak_rate: float = 22.0  # inference requests per minute at the daily peak
    trough_fraction: float = 0.15  # the night's rate as a fraction of the peak
    rate_noise: float = 0.15  # std of the log-rate's slow noise (AR(1), correlation time 30 min)
    service_min: float = 0.5  # mean service time of a request on one replica (minutes)
    service_cv: float = 0.25  # coefficient of variation of the service time (lognormal, capped)
    slo_min: float = 1.25  # latency SLO of a request: queueing plus service (minutes)
    target_utilization: float = 0.75  # replicas are sized to keep utilization at most this
    forecast_horizon_min: float = 30.0  # FaPES keeps the replicas its forecast needs this far ahead
    forecast_margin: float = 0.15  # FaPES's safety margin on the forecast rate (relative)
    step_noise: float = 0.05  # relative noise of an observed step time
    schedule_every_min: float = 5.0  # elastic policies re-plan at least this often
    min_gain: float = 0.1  # a GPU is added only if it adds this much speed-up (in units of 1 GPU)
    max_days: float = 6.0  # the simulation stops here even if jobs remain (completions reported)

    def __post_init__(self) -> None:
        if not isinstance(self.cluster, Cluster):
            raise TypeError(f"cluster must be a Cluster, got {type(self.cluster).__name__}")
        if not isinstance(self.n_jobs, int) or self.n_jobs < 1:
            raise ValueError(f"n_jobs must be a positive int, got {self.n_jobs!r}")
        if not self.load > 0 or not self.sweep_loads or min(self.sweep_loads) <= 0:
            raise ValueError(f"load and sweep_loads must be positive, got {self.load}, {self.sweep_loads}")
        for name in ("peak_rate", "service_min", "slo_min", "forecast_horizon_min", "schedule_every_min"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if not 0 < self.trough_fraction <= 1:
            raise ValueError(f"trough_fraction must be in (0, 1], got {self.trough_fraction}")
        if not 0 < self.target_utilization <= 1:
            raise ValueError(f"target_utilization must be in (0, 1], got {self.target_utilization}")
        if self.service_cv < 0 or self.rate_noise < 0 or self.step_noise < 0 or self.forecast_margin < 0:
            raise ValueError("service_cv, rate_noise, step_noise and forecast_margin must be >= 0")
        if 2 * self.service_min > self.cluster.handover_min + self.slo_min:
            raise ValueError("service_min is too long for the SLO and the handover time")
        if self.max_days < 1:
            raise ValueError(f"max_days must be >= 1, got {self.max_days}")

    @property
    def service_cap_min(self) -> float:
        """The longest a request is served: lending waits this long, so no GPU is used twice."""
        return min(2.0 * self.service_min, self.cluster.handover_min)

    @classmethod
    def fast(cls) -> Config:
        """The default experiment without the low-load end of the sweep (for the tests)."""
        return cls(sweep_loads=(0.25, 1.0))


@dataclass(frozen=True)
class Job:
    """One training job: when it arrives, what it asks for, how it really runs (hidden from FaPES).

    The true Pollux parameters (alpha, beta, gamma, delta in seconds, phi in samples) decide its
    speed; `work` is in samples at the reference batch m0 (statistical efficiency 1).
    """

    id: int
    arrival: float  # minutes
    gpus_requested: int
    m0: int  # the user's batch size
    alpha: float
    beta: float
    gamma: float
    delta: float
    phi: float
    work: float

    def batch_choices(self, gpus: int, max_local: int | None = None) -> list[int]:
        """Batch sizes m0·{1, 2, 4, 8} whose local batch m/g fits a GPU's memory (at most m0)."""
        limit = self.m0 if max_local is None else max_local
        return [self.m0 * k for k in (1, 2, 4, 8) if self.m0 * k <= limit * gpus] or [self.m0]


@dataclass(frozen=True)
class Trace:
    """Everything random in one run, shared by all policies: jobs, requests and yesterday's load."""

    jobs: tuple[Job, ...]
    request_times: np.ndarray  # arrival minute of every inference request, sorted
    service_times: np.ndarray  # its service time on one replica (minutes)
    history_rate: np.ndarray  # yesterday's observed requests per minute, one per minute of the day
    rate_truth: np.ndarray  # today's (and later days') true rate per minute (for figures)


def diurnal_rate(t: np.ndarray, peak: float, trough_fraction: float) -> np.ndarray:
    """The daily cycle λ(t) = peak·(f + (1 − f)·(1 − cos(2π(t − 2h)/day))/2): lowest at 2 am."""
    phase = 2 * np.pi * (np.asarray(t, dtype=float) - 120.0) / DAY
    return peak * (trough_fraction + (1 - trough_fraction) * (1 - np.cos(phase)) / 2)


def _noisy_rate(config: Config, minutes: int, gen: np.random.Generator) -> np.ndarray:
    """The diurnal rate times exp(AR(1) noise) with a 30-minute correlation time, per minute."""
    rho = math.exp(-1 / 30.0)
    eps = gen.normal(0.0, config.rate_noise * math.sqrt(1 - rho**2), size=minutes)
    log_noise = np.empty(minutes)
    level = gen.normal(0.0, config.rate_noise)
    for i in range(minutes):
        level = rho * level + eps[i]
        log_noise[i] = level
    base = diurnal_rate(np.arange(minutes) + 0.5, config.peak_rate, config.trough_fraction)
    return base * np.exp(log_noise)


def make_trace(config: Config, seed: int, load: float | None = None) -> Trace:
    """Draw the jobs, the requests and yesterday's history for one seed (same for every policy)."""
    load = config.load if load is None else load
    if not load > 0:
        raise ValueError(f"load must be > 0, got {load}")
    gen = rng(seed)
    n = max(1, round(config.n_jobs * load))
    # jobs arrive over the day, more of them in working hours (07:00 to 21:00)
    busy = gen.random(n) < 0.75
    arrivals = np.where(busy, gen.uniform(420, 1260, n), gen.uniform(0, DAY, n))
    jobs = []
    for i, t in enumerate(np.sort(arrivals)):
        g_req = int(gen.choice([1, 2, 4, 8], p=[0.3, 0.3, 0.25, 0.15]))
        m0 = int(gen.choice([64, 128, 256]))
        # Pollux's step time: t(g, m) = α + β·m/g + [g>1]·(γ + δ·(g − 1)), in seconds
        alpha = gen.uniform(0.01, 0.03)
        beta = gen.uniform(0.5, 1.5) * 0.4 / m0  # a full local batch m0 takes about 0.4 s
        gamma = gen.uniform(0.02, 0.06)
        delta = gen.uniform(0.002, 0.01)
        phi = float(m0 * np.exp(gen.uniform(np.log(2), np.log(16))))  # gradient noise scale
        minutes = float(np.exp(gen.uniform(np.log(30), np.log(360))))  # on its requested GPUs
        params = dict(alpha=alpha, beta=beta, gamma=gamma, delta=delta, phi=phi, m0=m0)
        work = goodput_rate(params, g_req, m0) * minutes
        jobs.append(Job(i, float(t), g_req, m0, alpha, beta, gamma, delta, phi, work))
    horizon = int(config.max_days * DAY)
    history = gen.poisson(_noisy_rate(config, int(DAY), gen)).astype(float)
    truth = _noisy_rate(config, horizon, gen)
    counts = gen.poisson(truth)
    times = np.repeat(np.arange(horizon, dtype=float), counts) + gen.random(int(counts.sum()))
    times.sort()
    sigma = math.sqrt(math.log(1 + config.service_cv**2))
    service = config.service_min * np.exp(gen.normal(-(sigma**2) / 2, sigma, size=times.size))
    service = np.minimum(service, config.service_cap_min)
    return Trace(tuple(jobs), times, service, history, truth)
