"""The cluster, the configuration and the trace: training jobs and inference requests from independent streams."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .performance import goodput_rate

DAY = 1440.0  # minutes
TIMELINE_COLUMNS = ("t", "held", "loaned", "replicas", "lent", "to_train", "to_infer", "reclaiming")
#: The policies, baselines first. Optimus-like and Pollux-like elastic use the training pool only.
ARMS = ("static", "optimus", "pollux", "loan_naive", "fapes")
POLICY_LABELS = {
    "static": "static (FIFO, requested GPUs)",
    "optimus": "Optimus-like elastic (GPUs only)",
    "pollux": "Pollux-like elastic (GPUs and batch)",
    "loan_naive": "Pollux-like + naive lending",
    "fapes": "FaPES",
}
#: What the 'fapes' arm may run: FaPES, or a falsifier's change (see claims.FALSIFIERS).
METHODS = (
    "fapes",
    "fapes_gpus_only",  # FaPES choosing GPUs only, at the user's batch
    "fapes_kills",  # FaPES reclaiming by killing the newest jobs
    "fapes_reactive",  # FaPES sizing its replicas from the last minutes, without the board
    "fapes_no_fit",  # FaPES whose models never fit their observations (the prior)
    "optimus",
    "pollux",
    "loan_naive",
)
#: The streams of one seed, independent of each other (numpy SeedSequence children).
STREAMS = ("jobs", "history", "requests", "burst", "observations")


@dataclass(frozen=True)
class Cluster:
    """The two virtual clusters and the time costs of moving GPUs (minutes)."""

    train_gpus: int = 16  # GPUs of the training pool
    infer_gpus: int = 16  # GPUs of the inference pool, one replica each
    max_gpus_per_job: int = 16  # the most GPUs one job may use
    checkpoint_min: float = 1.0  # checkpoint before a rescale or a cost-aware reclaim
    kill_min: float = 0.5  # stopping a job without a checkpoint (naive reclaim): still not instant
    restart_min: float = 1.0  # (re)start a job on a new GPU set: load the checkpoint, rebuild groups
    handover_min: float = 1.0  # move a GPU between the pools: drain, reload the serving model or free it
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
    control_load: float = 0.25  # the low load where lending has nothing to add (a negative control)
    peak_rate: float = 270.0  # inference requests per minute at the daily peak (4.5 per second)
    trough_fraction: float = 0.15  # the night's rate as a fraction of the peak
    rate_noise: float = 0.15  # std of the log-rate's slow noise (AR(1), correlation time 30 min)
    service_s: float = 2.0  # mean service time of a request on one replica (seconds): a generative model
    service_cv: float = 0.25  # coefficient of variation of the service time (lognormal, capped at twice the mean)
    slo_s: float = 6.0  # latency SLO of a request: queueing plus service (seconds), against minutes to reclaim
    target_utilization: float = 0.75  # replicas are sized to keep utilization at most this
    headroom: float = 0.15  # both lending policies keep this relative margin on their demand estimate
    forecast_horizon_min: float = 30.0  # FaPES keeps the replicas its forecast needs this far ahead
    window_min: float = 2160.0  # inference is measured on the requests of the first 36 hours
    burst_factor: float = 3.0  # the burst day's surge multiplies the rate by this ...
    burst_min: float = 60.0  # ... for this long, starting at a random minute of the first evening
    contention: float = 0.0015  # scale of the true step time's contention term κ(g − 1)², which the fit lacks
    step_noise: float = 0.05  # relative noise of an observed step time
    schedule_every_min: float = 5.0  # elastic policies re-plan at least this often
    min_gain: float = 0.1  # a GPU is added only if it adds this much speed-up (in units of 1 GPU)
    max_days: float = 6.0  # the simulation stops here even if jobs remain (completions reported)
    arms: tuple[str, ...] = ARMS  # the policies to simulate (a falsifier runs only those its claims read)
    method: str = "fapes"  # what the 'fapes' arm runs; a falsifier puts a baseline or a crippled FaPES there
    control: bool = True  # also run the controls: the low load, and the burst day
    validation: bool = True  # also run the elastic baselines on a validation day (to pick the strongest)
    matched: bool = True  # also run both lending policies at the headroom each picks on a validation day
    headrooms: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3)  # the headroom grid each lending policy is tuned over
    slo_target_per_1000: float = 0.1  # the SLO target a lending policy's headroom must meet on validation

    def __post_init__(self) -> None:
        if not isinstance(self.cluster, Cluster):
            raise TypeError(f"cluster must be a Cluster, got {type(self.cluster).__name__}")
        if not isinstance(self.n_jobs, int) or self.n_jobs < 1:
            raise ValueError(f"n_jobs must be a positive int, got {self.n_jobs!r}")
        if not self.load > 0 or not self.control_load > 0:
            raise ValueError(f"load and control_load must be positive, got {self.load}, {self.control_load}")
        for name in ("peak_rate", "service_s", "slo_s", "forecast_horizon_min", "schedule_every_min", "window_min"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if not 0 < self.trough_fraction <= 1:
            raise ValueError(f"trough_fraction must be in (0, 1], got {self.trough_fraction}")
        if not 0 < self.target_utilization <= 1:
            raise ValueError(f"target_utilization must be in (0, 1], got {self.target_utilization}")
        for name in ("service_cv", "rate_noise", "step_noise", "headroom", "contention"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.burst_factor < 1 or self.burst_min <= 0:
            raise ValueError(f"burst_factor must be >= 1 and burst_min > 0, got {self.burst_factor}, {self.burst_min}")
        if self.slo_s <= self.service_s:
            raise ValueError(f"slo_s must exceed the mean service time, got {self.slo_s} <= {self.service_s}")
        if self.max_days < 1 or self.window_min > self.max_days * DAY:
            raise ValueError(f"max_days must be >= 1 and cover window_min, got {self.max_days}, {self.window_min}")
        unknown = [arm for arm in self.arms if arm not in ARMS]
        if unknown or not self.arms:
            raise ValueError(f"arms must be a non-empty subset of {ARMS}, got {self.arms}")
        if not self.headrooms or any(h < 0 for h in self.headrooms) or self.slo_target_per_1000 < 0:
            raise ValueError(f"headrooms must be >= 0 and non-empty, slo_target >= 0: {self.headrooms}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")

    @property
    def service_cap_s(self) -> float:
        """The longest a request is served: lending waits this long, so no GPU is used twice."""
        return 2.0 * self.service_s

    @property
    def per_replica_rate(self) -> float:
        """Requests per minute one replica serves at the target utilization."""
        return self.target_utilization * 60.0 / self.service_s

    @classmethod
    def fast(cls) -> Config:
        """Two thirds of the jobs and of the inference pool's traffic: about half the time of the default."""
        return cls(n_jobs=32, peak_rate=200.0, cluster=Cluster(train_gpus=12, infer_gpus=12, max_gpus_per_job=12))


@dataclass(frozen=True)
class Job:
    """One training job: when it arrives, what it asks for, how it really runs (hidden from FaPES).

    The true Pollux parameters (alpha, beta, gamma, delta in seconds, phi in samples) and the
    contention kappa (seconds) decide its speed; `work` is in samples at the reference batch m0
    (statistical efficiency 1).
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
    kappa: float = 0.0  # contention: κ(g − 1)² seconds per step, a term the fitted model lacks

    def batch_choices(self, gpus: int, max_local: int | None = None) -> list[int]:
        """Batch sizes m0·{1, 2, 4, 8} whose local batch m/g fits a GPU's memory (at most m0)."""
        limit = self.m0 if max_local is None else max_local
        return [self.m0 * k for k in (1, 2, 4, 8) if self.m0 * k <= limit * gpus] or [self.m0]


@dataclass(frozen=True)
class Trace:
    """Everything random in one run, shared by all policies: jobs, requests and yesterday's load.

    The requests are known to the policies only through `counts` (arrivals per minute, as a
    serving system's metrics report them); their times and service times decide the latencies.
    """

    jobs: tuple[Job, ...]
    counts: np.ndarray  # requests arriving in each minute, over max_days
    request_times: np.ndarray  # arrival (minutes) of every request in the inference window, sorted
    service_times: np.ndarray  # its service time on one replica (seconds)
    history_rate: np.ndarray  # yesterday's observed requests per minute, one per minute of the day
    rate_truth: np.ndarray  # the true rate per minute (for figures and the forecast error)
    burst: tuple[float, float] | None = None  # (start, end) minute of the unforecastable surge, if any


def diurnal_rate(t: np.ndarray, peak: float, trough_fraction: float) -> np.ndarray:
    """The daily cycle λ(t) = peak·(f + (1 − f)·(1 − cos(2π(t − 2h)/day))/2): lowest at 2 am."""
    phase = 2 * np.pi * (np.asarray(t, dtype=float) - 120.0) / DAY
    return peak * (trough_fraction + (1 - trough_fraction) * (1 - np.cos(phase)) / 2)


def noisy_rate(config: Config, minutes: int, gen: np.random.Generator) -> np.ndarray:
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


#: The second entropy word of a seed's validation day (`streams(seed, validation=True)`).
VALIDATION_KEY = 1


def streams(seed: int, *, validation: bool = False) -> dict[str, np.random.Generator]:
    """One generator per stream of a seed: jobs, yesterday's history, requests, the burst, observations.

    The streams are independent children of one SeedSequence, so drawing more jobs (a higher
    training load) leaves the requests and the history unchanged.
    """
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    entropy = (seed, VALIDATION_KEY) if validation else seed
    children = np.random.SeedSequence(entropy).spawn(len(STREAMS))
    return {name: np.random.default_rng(child) for name, child in zip(STREAMS, children, strict=True)}


def observation_stream(seed: int, job_id: int) -> np.random.Generator:
    """The noise of one job's observed step times: the same for the job under every policy."""
    child = np.random.SeedSequence(seed).spawn(len(STREAMS))[STREAMS.index("observations")]
    return np.random.default_rng(np.random.SeedSequence([*child.generate_state(2), job_id]))


def make_jobs(config: Config, load: float, gen: np.random.Generator) -> tuple[Job, ...]:
    """The training jobs of one day at this load (the `jobs` stream)."""
    n = max(1, round(config.n_jobs * load))
    # jobs arrive over the day, more of them in working hours (07:00 to 21:00)
    busy = gen.random(n) < 0.75
    arrivals = np.where(busy, gen.uniform(420, 1260, n), gen.uniform(0, DAY, n))
    jobs = []
    for i, t in enumerate(np.sort(arrivals)):
        g_req = int(gen.choice([1, 2, 4, 8], p=[0.3, 0.3, 0.25, 0.15]))
        m0 = int(gen.choice([64, 128, 256]))
        # Pollux's step time: t(g, m) = α + β·m/g + [g>1]·(γ + δ·(g − 1)), in seconds, plus contention
        alpha = gen.uniform(0.01, 0.03)
        beta = gen.uniform(0.5, 1.5) * 0.4 / m0  # a full local batch m0 takes about 0.4 s
        gamma = gen.uniform(0.02, 0.06)
        delta = gen.uniform(0.002, 0.01)
        kappa = config.contention * gen.uniform(0.5, 1.5)
        phi = float(m0 * np.exp(gen.uniform(np.log(2), np.log(16))))  # gradient noise scale
        minutes = float(np.exp(gen.uniform(np.log(30), np.log(360))))  # on its requested GPUs
        params = dict(alpha=alpha, beta=beta, gamma=gamma, delta=delta, phi=phi, m0=m0, kappa=kappa)
        work = goodput_rate(params, g_req, m0) * minutes
        jobs.append(Job(i, float(t), g_req, m0, alpha, beta, gamma, delta, phi, work, kappa))
    return tuple(jobs)


def make_trace(
    config: Config, seed: int, load: float | None = None, *, burst: bool = False, validation: bool = False
) -> Trace:
    """Draw the jobs, the requests and yesterday's history for one seed (the same for every policy).

    With `burst`, the same trace gets a surge the history has never seen: the rate is multiplied by
    `burst_factor` for `burst_min` minutes from a random minute of the first evening (19:00 to
    midnight), when the most inference GPUs are lent. Everything else is unchanged. With `validation`,
    another day of the same world: every stream drawn from the seed's validation SeedSequence, so the
    policies' knobs are picked on it and never on the day they are measured on.
    """
    load = config.load if load is None else load
    if not load > 0:
        raise ValueError(f"load must be > 0, got {load}")
    gen = streams(seed, validation=validation)
    jobs = make_jobs(config, load, gen["jobs"])
    history = gen["history"].poisson(noisy_rate(config, int(DAY), gen["history"])).astype(float)
    horizon, window = int(config.max_days * DAY), math.ceil(config.window_min)
    truth = noisy_rate(config, horizon, gen["requests"])
    counts = gen["requests"].poisson(truth)
    times, service = _requests(config, counts[:window], gen["requests"])
    start = float(gen["burst"].uniform(1140.0, 1440.0))  # 19:00 to midnight of the first day
    span = None
    if burst:
        # the surge's extra requests come from their own stream: the day's other requests are unchanged
        span = (start, start + config.burst_min)
        minute = np.arange(horizon) + 0.5
        surge = np.where((minute >= span[0]) & (minute < span[1]), truth * (config.burst_factor - 1), 0.0)
        extra = gen["burst"].poisson(surge)
        counts, truth = counts + extra, truth + surge
        more_times, more_service = _requests(config, extra[:window], gen["burst"])
        order = np.argsort(np.concatenate([times, more_times]), kind="stable")
        times = np.concatenate([times, more_times])[order]
        service = np.concatenate([service, more_service])[order]
    return Trace(jobs, counts, times, service, history, truth, span)


def _requests(config: Config, counts: np.ndarray, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Arrival minutes (uniform within their minute, sorted) and lognormal service seconds (capped)."""
    times = np.repeat(np.arange(counts.size, dtype=float), counts) + gen.random(int(counts.sum()))
    times.sort()
    sigma = math.sqrt(math.log(1 + config.service_cv**2))
    service = config.service_s * np.exp(gen.normal(-(sigma**2) / 2, sigma, size=times.size))
    return times, np.minimum(service, config.service_cap_s)
