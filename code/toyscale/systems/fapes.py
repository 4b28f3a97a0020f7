"""FaPES: lend idle inference GPUs to training, and take them back before the SLO breaks.

*FaPES: Enabling Efficient Elastic Scaling for Serverless Machine Learning Platforms.*
ACM SoCC 2024. Only the abstract is public; this module is built from it and from the peers it
names, and says which is which.

**The problem.** A serverless GPU platform runs two virtual clusters: an inference pool sized for
the daily peak of requests, and a training pool where jobs queue for the GPUs they asked for.
At night most inference GPUs idle while training jobs wait. Users also pick GPU counts and batch
sizes by hand, and distributed training is very sensitive to both.

**From the abstract (FaPES's mechanisms).** GPUs are *loaned* between the two virtual clusters;
loaned inference GPUs are *reclaimed on demand with minimal preemption overhead* so that inference
keeps its SLO; for training, the *GPU allocation and the hyper-parameters (here the batch size)
are chosen jointly* from an *ML-based performance model* and a *resource usage prediction board*
(a forecast of inference demand). The paper reports, on 128 GPUs, up to 24.8 % lower job completion
time (JCT) and 1.8× goodput against representative elastic scaling schemes.

**Reconstructed here (the abstract gives no details).**
- The performance model is Pollux's (Qiao et al., OSDI 2021): step time
  t(g, m) = α + β·m/g + [g > 1]·(γ + δ·(g − 1)) (compute of the local batch, then a synchronization
  that grows with the GPU count), statistical efficiency E(m) = (φ + m₀)/(φ + m) with φ the gradient
  noise scale, and *goodput* = throughput × efficiency. FaPES's model is fitted per job, only from
  the step times it has observed (ridge regression towards a population prior), and explores at
  most twice the GPUs it has seen, as Pollux does.
- The prediction board is a seasonal forecast: yesterday's hourly profile, rescaled by the ratio
  of the rate seen in the last minutes to yesterday's at the same hour, plus a safety margin.
- Cost-aware reclaim takes GPUs back by *scaling in* the jobs whose predicted goodput loss per GPU
  is smallest, after a checkpoint (no work lost); the naive reclaim kills the most recently started
  jobs holding loaned GPUs, which lose the work since their last periodic checkpoint.
- Allocation is greedy by marginal predicted speed-up (as in Optimus/AFS-style elastic schedulers).

**What the toy keeps.** A SimPy discrete-event simulation: requests (Poisson arrivals at a diurnal
rate with correlated noise) served first-come first-served by replicas, one per inference GPU, with
a latency SLO counted per request; a trace of training jobs (arrivals, requested GPUs, work, a
Pollux model each); reclaiming and rescaling take time (a checkpoint, a restart) and lending hands a
GPU over only after its last request finished. Four policies on the same trace, GPUs and seed:
static (FIFO, requested GPUs), elastic within the training pool, loaning with naive reclaim, FaPES.

**What it drops.** Real GPUs and frameworks, multi-GPU inference replicas, placement and network
topology, heterogeneous GPUs, other hyper-parameters than the batch size, a learning-rate scaling
rule, and the serverless function layer. Times are minutes of a simulated day.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import plotly.graph_objects as go
import simpy

from toyscale.core import plot
from toyscale.core.claims import Claim, Verdict, all_of, at_most, paired
from toyscale.core.seeding import rng

__all__ = [
    "ARMS",
    "CLAIMS",
    "POLICY_LABELS",
    "TIMELINE_COLUMNS",
    "Cluster",
    "Config",
    "Job",
    "PerformanceModel",
    "PredictionBoard",
    "ReplicaPool",
    "Result",
    "SimResult",
    "Trace",
    "allocate",
    "diurnal_rate",
    "fig_gpus_over_day",
    "fig_jct",
    "fig_load_sweep",
    "goodput_rate",
    "held_out_error",
    "loan_gain",
    "make_trace",
    "reference_arrays",
    "run",
    "simulate",
    "statistical_efficiency",
    "step_time",
]

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


# ---------------------------------------------------------------------------------------------
# The performance model (Pollux's, reconstructed)
# ---------------------------------------------------------------------------------------------


def step_time(params: dict | Job, gpus: int, batch: int) -> float:
    """Seconds per step: t(g, m) = α + β·m/g + [g > 1]·(γ + δ·(g − 1)) (Pollux's form, γ-free)."""
    p = params if isinstance(params, dict) else params.__dict__
    if gpus < 1 or batch < 1:
        raise ValueError(f"gpus and batch must be >= 1, got {gpus}, {batch}")
    sync = p["gamma"] + p["delta"] * (gpus - 1) if gpus > 1 else 0.0
    # compute of the local batch m/g, then the gradient synchronization
    return p["alpha"] + p["beta"] * batch / gpus + sync


def statistical_efficiency(phi: float, batch: int, m0: int) -> float:
    """Progress per sample at batch m relative to m0: E(m) = (φ + m0)/(φ + m) (Pollux, Eq. 6)."""
    return (phi + m0) / (phi + batch)


def goodput_rate(params: dict | Job, gpus: int, batch: int) -> float:
    """Goodput in m0-samples per minute: throughput × efficiency = 60·m/t(g, m) · E(m)."""
    p = params if isinstance(params, dict) else params.__dict__
    # goodput = throughput (samples/s) × statistical efficiency, per minute
    return 60.0 * batch / step_time(p, gpus, batch) * statistical_efficiency(p["phi"], batch, p["m0"])


def _features(gpus: int, batch: int) -> np.ndarray:
    multi = 1.0 if gpus > 1 else 0.0
    return np.array([1.0, batch / gpus, multi, multi * (gpus - 1)])


class PerformanceModel:
    """A job's step-time and efficiency model, fitted only from the steps it has observed.

    θ = (α, β, γ, δ) minimizes Σ_i ((x_i·θ − t_i)/t_i)² + λ·Σ_k ((θ_k − θ0_k)/θ0_k)²: relative
    least squares on the observed step times t_i at configurations x_i = (1, m/g, [g>1],
    [g>1](g − 1)), pulled towards a population prior θ0 where the observations say nothing
    (ridge). φ is the geometric mean of the noisy noise-scale estimates the job reported.
    """

    # population medians of the trace, what an operator knows before a job runs
    PRIOR: ClassVar[dict[str, float]] = {"alpha": 0.02, "beta_m0": 0.4, "gamma": 0.04, "delta": 0.006}
    PRIOR_PHI_RATIO = 5.0  # φ/m0 before any observation

    def __init__(self, m0: int, ridge: float = 0.05):
        self.m0 = m0
        self.ridge = ridge
        self.theta0 = np.array(
            [self.PRIOR["alpha"], self.PRIOR["beta_m0"] / m0, self.PRIOR["gamma"], self.PRIOR["delta"]]
        )
        self.X: list[np.ndarray] = []
        self.t: list[float] = []
        self.log_phi: list[float] = []
        self.configs: set[tuple[int, int]] = set()
        self._theta = self.theta0.copy()
        self._params = self._make_params()

    def observe(self, gpus: int, batch: int, seconds: float, phi_estimate: float) -> None:
        """Add one observed mean step time and one noise-scale estimate, and refit."""
        self.X.append(_features(gpus, batch))
        self.t.append(seconds)
        self.log_phi.append(math.log(phi_estimate))
        self.configs.add((gpus, batch))
        X = np.array(self.X) / np.array(self.t)[:, None]
        y = np.ones(len(self.t))
        # ridge towards θ0 in relative units: rows √λ·diag(1/θ0), targets √λ
        R = math.sqrt(self.ridge) * np.diag(1.0 / self.theta0)
        A = np.vstack([X, R])
        b = np.concatenate([y, math.sqrt(self.ridge) * np.ones(4)])
        theta = np.linalg.lstsq(A, b, rcond=None)[0]
        self._theta = np.maximum(theta, 1e-6)
        self._params = self._make_params()

    @property
    def max_observed_gpus(self) -> int:
        return max((g for g, _ in self.configs), default=0)

    def params(self) -> dict:
        """The fitted parameters in the same form as a Job's true ones."""
        return self._params

    def _make_params(self) -> dict:
        a, b, c, d = self._theta
        phi = self.m0 * (math.exp(np.mean(self.log_phi)) / self.m0 if self.log_phi else self.PRIOR_PHI_RATIO)
        return dict(alpha=a, beta=b, gamma=c, delta=d, phi=phi, m0=self.m0)

    def predict_step(self, gpus: int, batch: int) -> float:
        return step_time(self.params(), gpus, batch)

    def predict_goodput(self, gpus: int, batch: int) -> float:
        return goodput_rate(self.params(), gpus, batch)


def held_out_error(model: PerformanceModel, job: Job, max_gpus: int) -> float:
    """Mean |predicted − true| / true step time over the configurations the job never ran on."""
    errors = []
    for g in range(1, max_gpus + 1):
        for m in job.batch_choices(g):
            if (g, m) not in model.configs:
                true = step_time(job, g, m)
                errors.append(abs(model.predict_step(g, m) - true) / true)
    return float(np.mean(errors)) if errors else float("nan")


# ---------------------------------------------------------------------------------------------
# Inference: replicas and the prediction board
# ---------------------------------------------------------------------------------------------


class ReplicaPool:
    """First-come first-served requests over a changing number of replicas (one GPU each).

    Lowering the capacity never interrupts a request: a replica above the new capacity finishes
    its request, then stops. Each request's latency = waiting + service; it violates the SLO when
    latency > slo.
    """

    def __init__(self, env: simpy.Environment, capacity: int, slo: float):
        self.env, self.capacity, self.slo = env, capacity, slo
        self.busy = 0
        self.waiting: deque[tuple[float, float]] = deque()
        self.latencies: list[float] = []
        self.arrivals: list[float] = []

    def arrive(self, service: float) -> None:
        self.waiting.append((self.env.now, service))
        self._start()

    def set_capacity(self, capacity: int) -> None:
        self.capacity = capacity
        self._start()

    def _start(self) -> None:
        while self.waiting and self.busy < self.capacity:
            arrived, service = self.waiting.popleft()
            self.busy += 1
            # latency = time waited in the queue + service time
            self.latencies.append(self.env.now - arrived + service)
            self.arrivals.append(arrived)
            self.env.timeout(service).callbacks.append(self._done)

    def _done(self, _event: simpy.Event) -> None:
        self.busy -= 1
        self._start()


class PredictionBoard:
    """FaPES's forecast of inference demand (reconstructed): a seasonal profile, rescaled.

    λ̂(t + τ) = p(t + τ) · r(t), with p yesterday's rate smoothed per hour and r(t) the ratio of
    the requests seen in the last 15 minutes to yesterday's over the same minutes.
    """

    def __init__(self, history_rate: np.ndarray):
        kernel = np.ones(61) / 61  # an hour's moving average, wrapped around midnight
        padded = np.concatenate([history_rate[-30:], history_rate, history_rate[:30]])
        self.profile = np.convolve(padded, kernel, mode="valid")

    def profile_at(self, t: float) -> float:
        return float(self.profile[int(t) % int(DAY)])

    def forecast(self, now: float, observed_rate: float, horizon: float) -> float:
        """The highest rate expected in [now, now + horizon]."""
        ratio = observed_rate / max(self.profile_at(now), 1e-9)
        ahead = max(self.profile_at(now + tau) for tau in np.arange(0.0, horizon + 1e-9, 5.0))
        return ahead * ratio


# ---------------------------------------------------------------------------------------------
# Allocation: greedy by marginal predicted speed-up
# ---------------------------------------------------------------------------------------------


def allocate(rates: list[list[float]], capacity: int, min_gain: float) -> list[int]:
    """GPUs per job (FIFO order) from predicted rates[j][g − 1] (best over batch sizes).

    First one GPU per job in arrival order while GPUs last (a job with none waits); then each
    further GPU goes to the job with the largest marginal speed-up (R_j(g + 1) − R_j(g))/R_j(1),
    while that gain is at least min_gain.
    """
    if capacity < 0:
        raise ValueError(f"capacity must be >= 0, got {capacity}")
    alloc = [1 if j < capacity else 0 for j in range(len(rates))]
    free = capacity - sum(alloc)
    while free > 0:
        best, best_gain = -1, min_gain
        for j, r in enumerate(rates):
            g = alloc[j]
            if g == 0 or g >= len(r):
                continue
            # marginal speed-up of one more GPU, in units of the job's 1-GPU rate
            gain = (r[g] - r[g - 1]) / r[0]
            if gain >= best_gain:
                best, best_gain = j, gain
        if best < 0:
            break
        alloc[best] += 1
        free -= 1
    return alloc


# ---------------------------------------------------------------------------------------------
# The simulation
# ---------------------------------------------------------------------------------------------


@dataclass
class _JobState:
    job: Job
    model: PerformanceModel
    gpus: int = 0  # GPUs held now
    batch: int = 0
    phase: str = "queued"  # queued, restart, run, checkpoint, kill, done
    phase_end: float = 0.0
    version: int = 0
    progress: float = 0.0
    last_update: float = 0.0
    run_since: float = 0.0  # start of the current run phase
    observed_since: float = 0.0  # the steps since this time are not yet reported
    next_gpus: int = 0  # after a checkpoint: restart on this many GPUs (0: re-queue)
    next_batch: int = 0
    started: float | None = None
    finished: float | None = None
    preemptions: int = 0
    lost_gpu_min: float = 0.0


@dataclass
class SimResult:
    """One policy on one trace: per-job times and the cluster's timelines."""

    policy: str
    jct: np.ndarray  # minutes from arrival to completion, per finished job
    completed: int
    n_jobs: int
    makespan: float
    goodput: float  # useful training progress per minute while jobs are in the system (m0-samples)
    requests: int
    slo_violations: int
    preemptions: int
    gpu_seconds_lost: float
    model_error: float  # mean held-out relative error of the fitted step-time model (nan: none)
    prior_error: float  # the same for the prior alone, before any observation
    timeline: np.ndarray  # rows: t, held by jobs, of which loaned, replicas, lent, to training,
    # idle returning to inference, reclaimed from jobs, replicas busy (see TIMELINE_COLUMNS)
    goodput_series: np.ndarray  # rows (t, cluster goodput after t)
    violation_minutes: np.ndarray  # arrival minute of every violating request


class _Sim:
    def __init__(self, policy: str, trace: Trace, config: Config, seed: int):
        self.policy, self.trace, self.config, self.c = policy, trace, config, config.cluster
        self.env = simpy.Environment()
        self.gen = rng(seed + 7919)  # observation noise, the same stream for every policy
        self.loaning = policy in ("loan_naive", "fapes")
        self.elastic = policy != "static"
        self.joint = policy in ("fapes", "joint_only")
        self.replicas = ReplicaPool(self.env, self.c.infer_gpus, config.slo_min)
        self.board = PredictionBoard(trace.history_rate)
        self.lent = 0  # inference GPUs usable by training
        self.to_train = 0  # in hand-over to training (their last request is finishing)
        self.to_infer = 0  # idle lent GPUs on their way back to inference
        self.reclaiming = 0  # lent GPUs a job is giving back (its checkpoint or kill is running)
        self.states: list[_JobState] = []
        self.active: list[_JobState] = []  # arrived, not finished, in arrival order
        self.timeline: list[tuple] = []
        self.goodput_series: list[tuple[float, float]] = []
        self.arrival_count = 0
        self.wake = self.env.event()
        self.done_jobs = 0

    # -- bookkeeping -------------------------------------------------------------------------
    def held(self) -> int:
        return sum(s.gpus for s in self.active)

    def record(self) -> None:
        held = self.held()
        loaned = max(0, held - self.c.train_gpus)
        r = self.replicas
        self.timeline.append(
            (self.env.now, held, loaned, r.capacity, self.lent, self.to_train, self.to_infer, self.reclaiming, r.busy)
        )
        rate = sum(goodput_rate(s.job, s.gpus, s.batch) for s in self.active if s.phase == "run")
        self.goodput_series.append((self.env.now, rate))

    def advance(self, s: _JobState) -> None:
        now = self.env.now
        if s.phase == "run":
            s.progress += goodput_rate(s.job, s.gpus, s.batch) * (now - s.last_update)
        s.last_update = now

    def set_phase(self, s: _JobState, phase: str, duration: float) -> None:
        self.advance(s)
        s.phase, s.version = phase, s.version + 1
        s.phase_end = self.env.now + duration
        if phase in ("restart", "checkpoint", "kill"):
            s.lost_gpu_min += s.gpus * duration  # GPUs held, no progress
        if phase == "run":
            s.run_since = s.observed_since = self.env.now
            remaining = max(s.job.work - s.progress, 0.0)
            duration = remaining / goodput_rate(s.job, s.gpus, s.batch)
            s.phase_end = self.env.now + duration
        version = s.version
        self.env.timeout(duration).callbacks.append(lambda _e: self.phase_over(s, version))

    def observe_steps(self, s: _JobState) -> None:
        """The job reports its mean step time and a noise-scale estimate for the segment it ran."""
        ran = self.env.now - s.observed_since
        if ran <= 0 or s.phase != "run":
            return
        true = step_time(s.job, s.gpus, s.batch)
        noise = self.config.step_noise / math.sqrt(min(ran, 10.0))
        seconds = true * math.exp(self.gen.normal(0.0, noise))
        phi = s.job.phi * math.exp(self.gen.normal(0.0, 0.3))
        s.model.observe(s.gpus, s.batch, seconds, phi)

    # -- job phases ----------------------------------------------------------------------------
    def phase_over(self, s: _JobState, version: int) -> None:
        if version != s.version:
            return
        self.advance(s)
        if s.phase == "restart":
            self.set_phase(s, "run", 0.0)
        elif s.phase == "run":
            self.observe_steps(s)
            s.progress = s.job.work
            s.phase, s.finished, s.gpus = "done", self.env.now, 0
            s.version += 1
            self.active.remove(s)
            self.done_jobs += 1
            self.after_release()
        elif s.phase in ("checkpoint", "kill"):
            released = s.gpus - s.next_gpus
            s.gpus = s.next_gpus
            if s.next_gpus == 0:
                s.phase, s.version = "queued", s.version + 1
            else:
                s.batch = s.next_batch
                self.set_phase(s, "restart", self.c.restart_min)
            del released
            self.after_release()
        self.record()

    def start_or_resize(self, s: _JobState, gpus: int, batch: int) -> None:
        """Start a queued job, or checkpoint a running one and restart it on a new configuration."""
        if s.phase == "queued":
            if s.started is None:
                s.started = self.env.now
            s.gpus, s.batch = gpus, batch
            self.set_phase(s, "restart", self.c.restart_min)
            return
        self.observe_steps(s)
        s.next_gpus, s.next_batch = gpus, batch
        if gpus > s.gpus:  # growing: the new GPUs are reserved now
            s.gpus = gpus
        self.set_phase(s, "checkpoint", self.c.checkpoint_min)

    # -- the GPUs moving between pools ---------------------------------------------------------
    def after_release(self) -> None:
        if not self.wake.triggered:
            self.wake.succeed()

    def future_held(self) -> int:
        """GPUs jobs will hold once their checkpoints and kills are over."""
        return sum(s.next_gpus if s.phase in ("checkpoint", "kill") else s.gpus for s in self.active)

    def reclaim(self, k: int) -> None:
        """Take k lent GPUs back for inference: idle ones first, then from jobs (never instant)."""
        idle = max(0, self.lent - max(0, self.held() - self.c.train_gpus))
        take_idle = min(idle, k)
        if take_idle:
            self.lent -= take_idle
            self.move_back(take_idle, self.c.handover_min, from_jobs=False)
            k -= take_idle
        if k <= 0:
            return
        # the lent GPUs jobs will hold beyond the training pool must fall by k
        self.lent -= k
        excess = self.future_held() - self.c.train_gpus - self.lent
        if self.policy == "loan_naive":
            # naive: kill the most recently started jobs until the excess is gone
            for s in sorted(self.running(), key=lambda s: -(s.started or 0)):
                if excess <= 0:
                    break
                excess -= s.next_gpus if s.phase == "checkpoint" else s.gpus
                self.kill(s)
        else:
            self.scale_in(excess)
        # the GPUs reach inference when the last job giving them up has released them
        releasing = [s.phase_end for s in self.active if s.phase in ("checkpoint", "kill")]
        self.move_back(k, max(releasing, default=self.env.now) - self.env.now, from_jobs=True)

    def scale_in(self, excess: int) -> None:
        """Cost-aware reclaim: take GPUs one at a time where the predicted goodput lost is least."""
        while excess > 0:
            best, best_cost = None, math.inf
            for s in self.running():
                g = s.next_gpus if s.phase == "checkpoint" else s.gpus
                if g <= 1:
                    continue
                # cost of one GPU less: the predicted speed-up it gave, in 1-GPU units
                cost = (self.best_rate(s, g)[0] - self.best_rate(s, g - 1)[0]) / self.best_rate(s, 1)[0]
                if cost < best_cost:
                    best, best_cost = s, cost
            if best is None:  # every job is down to one GPU: checkpoint and suspend the newest
                s = max(self.running(), key=lambda s: s.started or 0)
                excess -= s.next_gpus if s.phase == "checkpoint" else s.gpus
                s.preemptions += 1
                if s.phase == "checkpoint":
                    s.next_gpus = 0
                else:
                    self.start_or_resize(s, 0, s.batch)
                continue
            g = (best.next_gpus if best.phase == "checkpoint" else best.gpus) - 1
            m = self.best_rate(best, g)[1]
            if best.phase == "checkpoint":
                best.next_gpus, best.next_batch = g, m
            else:
                best.preemptions += 1
                self.start_or_resize(best, g, m)
            excess -= 1

    def kill(self, s: _JobState) -> None:
        self.advance(s)
        if s.phase == "run":
            self.observe_steps(s)
            # the work since the last periodic checkpoint is lost
            lost_min = (self.env.now - s.run_since) % self.c.periodic_checkpoint_min
            s.progress = max(0.0, s.progress - goodput_rate(s.job, s.gpus, s.batch) * lost_min)
            s.lost_gpu_min += lost_min * s.gpus
        s.preemptions += 1
        s.next_gpus = 0
        self.set_phase(s, "kill", self.c.kill_min)

    def move_back(self, k: int, delay: float, from_jobs: bool) -> None:
        """k GPUs on their way back to inference; they serve requests again after `delay`."""
        if from_jobs:
            self.reclaiming += k
        else:
            self.to_infer += k

        def arrive(_e: simpy.Event) -> None:
            if from_jobs:
                self.reclaiming -= k
            else:
                self.to_infer -= k
            self.replicas.set_capacity(self.replicas.capacity + k)
            self.record()

        self.env.timeout(delay).callbacks.append(arrive)

    def lend(self, k: int) -> None:
        """Hand k replicas' GPUs to training once their last request is over."""
        self.replicas.set_capacity(self.replicas.capacity - k)
        self.to_train += k

        def arrive(_e: simpy.Event) -> None:
            self.to_train -= k
            self.lent += k
            self.after_release()
            self.record()

        self.env.timeout(self.config.service_cap_min).callbacks.append(arrive)

    def running(self) -> list[_JobState]:
        return [
            s
            for s in self.active
            if s.phase in ("run", "restart", "checkpoint")
            and s.gpus > 0
            and not (s.phase == "checkpoint" and s.next_gpus == 0)
        ]

    # -- processes -----------------------------------------------------------------------------
    def requests(self):
        times, service = self.trace.request_times, self.trace.service_times
        for t, s in zip(times, service, strict=True):
            if t > self.env.now:
                yield self.env.timeout(t - self.env.now)
            if self.done_jobs == len(self.trace.jobs):
                return
            self.arrival_count += 1
            self.replicas.arrive(float(s))

    def autoscaler(self):
        """Every minute: size the replicas to the demand, lend the surplus, reclaim on demand."""
        window: deque[int] = deque(maxlen=15)
        last = 0
        while True:
            yield self.env.timeout(1.0)
            window.append(self.arrival_count - last)
            last = self.arrival_count
            if not self.loaning:
                continue
            observed = sum(window) / len(window)
            per_replica = self.config.target_utilization / self.config.service_min
            if self.policy == "fapes":
                # the prediction board: the peak rate expected over the horizon, plus a margin
                expect = self.board.forecast(self.env.now, observed, self.config.forecast_horizon_min)
                expect = max(expect, observed) * (1 + self.config.forecast_margin)
            else:
                expect = sum(list(window)[-5:]) / min(5, len(window))
            keep = min(self.c.infer_gpus, max(1, math.ceil(expect / per_replica)))
            have = self.replicas.capacity + self.to_infer + self.reclaiming
            if have < keep:
                self.reclaim(min(keep - have, self.lent))
                self.record()
            elif self.replicas.capacity > keep + 1 and have > keep + 1:
                # lend the surplus beyond one spare replica
                self.lend(min(self.replicas.capacity - keep, have - keep) - 1)
                self.record()

    def best_rate(self, s: _JobState, g: int) -> tuple[float, int]:
        """Predicted goodput at g GPUs and the batch that gives it (m0 only unless joint)."""
        choices = s.job.batch_choices(g) if self.joint else [s.job.m0]
        rates = [(s.model.predict_goodput(g, m), m) for m in choices]
        return max(rates)

    def scheduler(self):
        while True:
            self.schedule()
            self.record()
            timeout = self.env.timeout(self.config.schedule_every_min)
            yield self.wake | timeout
            if self.wake.triggered:
                self.wake = self.env.event()
            if self.done_jobs == len(self.trace.jobs):
                return

    def schedule(self) -> None:
        for s in self.active:  # running jobs report their recent steps (Pollux fits online)
            if s.phase == "run" and self.env.now - s.observed_since >= self.config.schedule_every_min:
                self.observe_steps(s)
                s.observed_since = self.env.now
        capacity = self.c.train_gpus + (self.lent if self.loaning else 0)
        if not self.elastic:
            free = capacity - self.held()
            for s in self.active:  # strict FIFO on requested GPUs
                if s.phase != "queued":
                    continue
                if s.job.gpus_requested > free:
                    break
                free -= s.job.gpus_requested
                self.start_or_resize(s, s.job.gpus_requested, s.job.m0)
            return
        jobs = [s for s in self.active if s.phase in ("queued", "run", "restart")]
        busy = sum(s.gpus for s in self.active if s.phase in ("checkpoint", "kill"))
        budget = capacity - busy
        rates = []
        for s in jobs:
            cap = max(s.job.gpus_requested, 2 * s.model.max_observed_gpus)  # explore at most 2x
            cap = min(cap, self.c.max_gpus_per_job)
            rates.append([self.best_rate(s, g)[0] for g in range(1, cap + 1)])
        target = allocate(rates, max(budget, 0), self.config.min_gain)
        free = capacity - self.held()
        # shrink (only to admit queued jobs), then start and grow within what is free now
        admit = any(s.phase == "queued" and g > 0 for s, g in zip(jobs, target, strict=True))
        for s, g in zip(jobs, target, strict=True):
            if admit and s.phase != "queued" and 0 < g < s.gpus:
                self.start_or_resize(s, g, self.best_rate(s, g)[1])
        for s, g in zip(jobs, target, strict=True):
            if g == 0:
                continue
            m = self.best_rate(s, g)[1]
            if s.phase == "queued":
                if g <= free:
                    free -= g
                    self.start_or_resize(s, g, m)
            elif g > s.gpus and g - s.gpus <= free and s.phase == "run":
                gain = self.best_rate(s, g)[0] / self.best_rate(s, s.gpus)[0]
                remaining = (s.job.work - s.progress) / max(goodput_rate(s.job, s.gpus, s.batch), 1e-9)
                # grow only when the predicted gain repays the checkpoint and the restart
                if gain > 1.05 and remaining * (1 - 1 / gain) > 2 * (self.c.checkpoint_min + self.c.restart_min):
                    free -= g - s.gpus
                    self.start_or_resize(s, g, m)

    def arrivals(self):
        for job in self.trace.jobs:
            if job.arrival > self.env.now:
                yield self.env.timeout(job.arrival - self.env.now)
            s = _JobState(job, PerformanceModel(job.m0), last_update=self.env.now)
            self.states.append(s)
            self.active.append(s)
            self.after_release()

    def run(self) -> None:
        self.env.process(self.arrivals())
        self.env.process(self.requests())
        self.env.process(self.autoscaler())
        done = self.env.process(self.scheduler())
        self.env.run(until=simpy.AnyOf(self.env, [done, self.env.timeout(self.config.max_days * DAY)]))
        for s in self.active:
            self.advance(s)
        self.record()


def simulate(policy: str, trace: Trace, config: Config | None = None, seed: int = 0) -> SimResult:
    """Run one policy on one trace until every job finishes (or max_days), and measure it."""
    if policy not in ARMS:
        raise ValueError(f"policy must be one of {ARMS}, got {policy!r}")
    if not isinstance(trace, Trace):
        raise TypeError(f"trace must be a Trace, got {type(trace).__name__}")
    config = config or Config()
    sim = _Sim(policy, trace, config, seed)
    sim.run()
    finished = [s for s in sim.states if s.finished is not None]
    jct = np.array([s.finished - s.job.arrival for s in finished])
    end = max((s.finished for s in finished), default=sim.env.now)
    work = sum(s.job.work for s in finished)
    in_system = _busy_minutes([(s.job.arrival, s.finished or end) for s in sim.states])
    latencies = np.array(sim.replicas.latencies)
    arrivals = np.array(sim.replicas.arrivals)
    violating = arrivals[latencies > config.slo_min]
    errors = [held_out_error(s.model, s.job, config.cluster.max_gpus_per_job) for s in sim.states]
    prior = [held_out_error(PerformanceModel(s.job.m0), s.job, config.cluster.max_gpus_per_job) for s in sim.states]
    return SimResult(
        policy=policy,
        jct=jct,
        completed=len(finished),
        n_jobs=len(trace.jobs),
        makespan=float(end),
        goodput=work / max(in_system, 1e-9),
        requests=int(latencies.size),
        slo_violations=int(violating.size),
        preemptions=sum(s.preemptions for s in sim.states),
        gpu_seconds_lost=60.0 * sum(s.lost_gpu_min for s in sim.states),
        model_error=float(np.nanmean(errors)) if policy != "static" else float("nan"),
        prior_error=float(np.nanmean(prior)),
        timeline=np.array(sim.timeline, dtype=float),
        goodput_series=np.array(sim.goodput_series, dtype=float),
        violation_minutes=violating,
    )


def _busy_minutes(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of [arrival, finish] intervals: the time jobs are in the system."""
    total, end = 0.0, -math.inf
    for a, b in sorted(intervals):
        if a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


# ---------------------------------------------------------------------------------------------
# The experiment
# ---------------------------------------------------------------------------------------------


def _metrics(sim: SimResult) -> dict[str, float]:
    jct = sim.jct if sim.jct.size else np.array([np.nan])
    return {
        "mean_jct_min": float(np.mean(jct)),
        "p90_jct_min": float(np.percentile(jct, 90)),
        "goodput": sim.goodput,
        "slo_violations": float(sim.slo_violations),
        "slo_per_1000": 1000.0 * sim.slo_violations / max(sim.requests, 1),
        "preemptions": float(sim.preemptions),
        "gpu_hours_lost": sim.gpu_seconds_lost / 3600.0,
        "completed": sim.completed / sim.n_jobs,
        "makespan_h": sim.makespan / 60.0,
        "model_error": sim.model_error,
        "prior_error": sim.prior_error,
    }


@dataclass
class Result:
    """One seed: every policy on the main load, and the load sweep.

    metrics[arm][metric] at the main load (JCT in minutes, goodput in m0-samples per minute while
    jobs are in the system, SLO violations per 1000 requests, GPU-hours lost); sims: the full
    SimResult per arm at the main load (timelines for the figures); sweep[load][arm][metric].
    """

    config: Config
    seed: int
    metrics: dict[str, dict[str, float]]
    sims: dict[str, SimResult]
    sweep: dict[float, dict[str, dict[str, float]]]


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """Simulate every policy on the same trace at the main load and at each load of the sweep."""
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a Config, got {type(config).__name__}")
    loads = sorted(set(config.sweep_loads) | {config.load})
    sweep: dict[float, dict[str, dict[str, float]]] = {}
    sims: dict[str, SimResult] = {}
    for load in loads:
        trace = make_trace(config, seed, load)
        runs = {arm: simulate(arm, trace, config, seed) for arm in ARMS}
        sweep[load] = {arm: _metrics(r) for arm, r in runs.items()}
        if load == config.load:
            sims = runs
    return Result(config, seed, sweep[config.load], sims, sweep)


# ---------------------------------------------------------------------------------------------
# The claims
# ---------------------------------------------------------------------------------------------

JCT_MARGIN = 0.05  # relative JCT reduction vs the best elastic baseline (measured: see chapter)
GOODPUT_MARGIN = 0.02  # relative goodput gain vs the best elastic baseline
SLO_LIMIT = 0.5  # extra SLO violations per 1000 requests FaPES may add to static's
MODEL_MARGIN = 0.03  # held-out error: fitted model below the prior by at least this
LOW_LOAD_SHARE = 0.5  # at the lowest load, elastic gets more than this share of FaPES's JCT gain
LOAN_MARGIN = 0.015  # loaning's JCT gain at the main load exceeds its gain at the lowest load by this


def _best_baseline(r: Result, metric: str, load: float | None = None) -> float:
    """The better of the two elastic baselines on this seed (lower JCT, higher goodput)."""
    m = r.metrics if load is None else r.sweep[load]
    values = [m["elastic"][metric], m["loan_naive"][metric]]
    return min(values) if "jct" in metric else max(values)


def _check_jct_goodput(results: list[Result]) -> Verdict:
    jct_gain = [1 - r.metrics["fapes"]["mean_jct_min"] / _best_baseline(r, "mean_jct_min") for r in results]
    gp_gain = [r.metrics["fapes"]["goodput"] / _best_baseline(r, "goodput") - 1 for r in results]
    done = [min(m["completed"] for m in r.metrics.values()) for r in results]
    zeros = [0.0] * len(results)
    return all_of(
        paired(jct_gain, zeros, margin=JCT_MARGIN, name="mean JCT reduction vs best elastic baseline"),
        paired(gp_gain, zeros, margin=GOODPUT_MARGIN, name="goodput gain vs best elastic baseline"),
        at_most([1 - d for d in done], 0.0, name="share of jobs unfinished (any policy)"),
    )


def _check_goodput_1_8(results: list[Result]) -> Verdict:
    ratio = [r.metrics["fapes"]["goodput"] / _best_baseline(r, "goodput") for r in results]
    return paired(ratio, [1.8] * len(results), margin=0.0, name="goodput ratio − 1.8")


def _check_slo(results: list[Result]) -> Verdict:
    extra = [r.metrics["fapes"]["slo_per_1000"] - r.metrics["static"]["slo_per_1000"] for r in results]
    return at_most(extra, SLO_LIMIT, name="SLO violations per 1000 requests, FaPES − static")


def _elastic_share(r: Result, load: float) -> float:
    """(JCT_static − JCT_elastic) / (JCT_static − JCT_FaPES): how much of the gain elasticity gets."""
    m = r.sweep[load]
    gain = m["static"]["mean_jct_min"] - m["fapes"]["mean_jct_min"]
    return (m["static"]["mean_jct_min"] - m["elastic"]["mean_jct_min"]) / gain if gain > 0 else 1.0


def loan_gain(r: Result, load: float) -> float:
    """What loaning adds: 1 − JCT_FaPES / JCT_(FaPES without loaning) at this load."""
    m = r.sweep[load]
    return 1 - m["fapes"]["mean_jct_min"] / m["joint_only"]["mean_jct_min"]


def _check_low_load(results: list[Result]) -> Verdict:
    low = [_elastic_share(r, min(r.sweep)) for r in results]
    at_main = [loan_gain(r, r.config.load) for r in results]
    at_low = [loan_gain(r, min(r.sweep)) for r in results]
    return all_of(
        paired(
            low,
            [LOW_LOAD_SHARE] * len(results),
            margin=0.0,
            name="elastic's share of the gain at the lowest load − 0.5",
        ),
        paired(at_main, at_low, margin=LOAN_MARGIN, name="loaning's JCT gain, main load − lowest load"),
    )


def _check_model(results: list[Result]) -> Verdict:
    fitted = [r.metrics["fapes"]["model_error"] for r in results]
    prior = [r.metrics["fapes"]["prior_error"] for r in results]
    return paired(
        fitted, prior, margin=MODEL_MARGIN, higher_is_better=False, name="held-out step-time error, prior − fitted"
    )


CLAIMS = [
    Claim(
        id="fapes_lowers_jct_raises_goodput",
        statement=(
            "FaPES reduces job completion time by up to 24.8 % and raises goodput (up to 1.8×) "
            "against representative elastic scaling schemes."
        ),
        metric=(
            "mean JCT and goodput at the main load vs the better of 'elastic' and 'loaning, naive "
            "reclaim' on each seed; every policy finishes every job"
        ),
        check=_check_jct_goodput,
    ),
    Claim(
        id="goodput_1_8x",
        statement="Up to 1.8× goodput against representative elastic scaling schemes.",
        metric="goodput ratio FaPES / best elastic baseline, required above 1.8 on each seed",
        check=_check_goodput_1_8,
        expected=False,
        reason=(
            "the toy's baselines are already elastic with the same learned speed model, and the "
            "loaned GPUs exist only at night; the paper's 1.8× is a best case on its own testbed"
        ),
    ),
    Claim(
        id="slo_held",
        statement="Loaned GPUs are reclaimed on demand with minimal preemption overhead to guarantee the SLO.",
        metric="request-level SLO violations per 1000 requests: FaPES − static (no loaning)",
        check=_check_slo,
    ),
    Claim(
        id="low_load_elastic_gets_most",
        statement=(
            "(the chapter's sweep) At low load plain elasticity already gets most of the gain, "
            "and what loaning adds vanishes; it pays when the training pool is oversubscribed."
        ),
        metric=(
            "share of FaPES's mean-JCT gain over static that 'elastic' gets at the lowest load; "
            "loaning's gain (FaPES vs FaPES without loaning) at the main vs the lowest load"
        ),
        check=_check_low_load,
    ),
    Claim(
        id="model_from_observed_steps",
        statement="Training configurations are chosen from an ML-based performance model.",
        metric="mean relative step-time error on configurations a job never ran on: fitted vs prior",
        check=_check_model,
    ),
]


# ---------------------------------------------------------------------------------------------
# The figures
# ---------------------------------------------------------------------------------------------


def _colors() -> dict[str, str]:
    return plot.colors(list(ARMS), "fapes")


def _theme(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(template="toyscale", title=title, height=height)
    return fig


def _sample(timeline: np.ndarray, column: str, minutes: np.ndarray) -> np.ndarray:
    """A timeline column as a step function sampled at the given minutes (last value at or before)."""
    idx = np.searchsorted(timeline[:, 0], minutes, side="right") - 1
    return timeline[np.clip(idx, 0, None), TIMELINE_COLUMNS.index(column)]


def fig_gpus_over_day(result: Result, arms: tuple[str, ...] = ("static", "loan_naive", "fapes")) -> go.Figure:
    """GPUs per pool over the first day: replicas, GPUs training holds, and the loaned part of it."""
    from plotly.subplots import make_subplots

    minutes = np.arange(0.0, DAY + 1, 2.0)
    hours = minutes / 60
    fig = make_subplots(
        rows=len(arms),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.06,
        subplot_titles=[POLICY_LABELS[a] for a in arms],
    )
    c = result.config.cluster
    styles = {
        "replicas": ("inference replicas", plot.BASELINE_COLORS[0]),
        "held": ("GPUs held by training", plot.BASELINE_COLORS[3]),
        "loaned": ("of which loaned inference GPUs", plot.METHOD_COLOR),
    }
    for row, arm in enumerate(arms, start=1):
        tl = result.sims[arm].timeline
        for column, (label, color) in styles.items():
            fig.add_trace(
                go.Scatter(
                    x=hours,
                    y=_sample(tl, column, minutes),
                    name=label,
                    line=dict(color=color, width=1.6),
                    line_shape="hv",
                    showlegend=row == 1,
                    legendgroup=column,
                ),
                row=row,
                col=1,
            )
        fig.add_hline(y=c.train_gpus, line=dict(color="#BBBBBB", dash="dot", width=1), row=row, col=1)
        fig.update_yaxes(title_text="GPUs", range=[0, c.train_gpus + c.infer_gpus + 1], row=row, col=1)
    fig.update_xaxes(title_text="hour of the first day", row=len(arms), col=1)
    return _theme(
        fig,
        "Idle inference GPUs go to training in the evening, as requests fall and jobs pile up",
        200 + 220 * len(arms),
    )


def fig_jct(result: Result) -> go.Figure:
    """The distribution of job completion times per policy (main load)."""
    colors = _colors()
    fig = plot.figure("FaPES shortens the typical job and the tail", "policy", "job completion time (minutes)")
    for arm in ARMS:
        fig.add_trace(go.Box(y=result.sims[arm].jct, name=POLICY_LABELS[arm], marker_color=colors[arm], boxmean=True))
    fig.update_layout(showlegend=False, yaxis_type="log")
    return fig


def fig_load_sweep(results: list[Result]) -> go.Figure:
    """Mean JCT, goodput and SLO violations against the training load, mean over seeds."""
    from plotly.subplots import make_subplots

    loads = sorted(results[0].sweep)
    colors = _colors()
    panels = [
        ("mean_jct_min", "mean JCT (min)"),
        ("goodput", "goodput (m0-samples/min)"),
        ("slo_per_1000", "SLO violations per 1000 requests"),
    ]
    fig = make_subplots(rows=1, cols=3, subplot_titles=[t for _, t in panels], horizontal_spacing=0.08)
    for col, (metric, title) in enumerate(panels, start=1):
        for arm in ARMS:
            y = [float(np.mean([r.sweep[load][arm][metric] for r in results])) for load in loads]
            fig.add_trace(
                go.Scatter(
                    x=loads,
                    y=y,
                    name=POLICY_LABELS[arm],
                    mode="lines+markers",
                    line=dict(
                        color=colors[arm],
                        width=2.4 if arm == "fapes" else 1.5,
                        dash="dash" if arm == "joint_only" else "solid",
                    ),
                    showlegend=col == 1,
                    legendgroup=arm,
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text="training load (× default jobs)", row=1, col=col)
        fig.update_yaxes(title_text=title, row=1, col=col)
    n = len(results)
    return _theme(fig, f"Loaning pays only when training is oversubscribed; SLO holds (mean of {n} seeds)", 480)


def reference_arrays() -> dict[str, np.ndarray]:
    """The default trace at seed 0 as integer arrays, as its data card fingerprints."""
    trace = make_trace(Config(), seed=0)
    jobs = trace.jobs
    minutes = np.floor(trace.request_times).astype(np.int64)
    return {
        "arrival_s": np.array([round(j.arrival * 60) for j in jobs], dtype=np.int64),
        "gpus_requested": np.array([j.gpus_requested for j in jobs], dtype=np.int64),
        "m0": np.array([j.m0 for j in jobs], dtype=np.int64),
        "work": np.array([round(j.work) for j in jobs], dtype=np.int64),
        "requests_per_minute": np.bincount(minutes, minlength=int(Config().max_days * DAY)).astype(np.int64),
    }
