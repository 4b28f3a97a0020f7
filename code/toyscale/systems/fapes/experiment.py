"""The FaPES experiment: every policy on the same trace, the two controls, and the boundary sweeps.

One seed draws one trace (`cluster.make_trace`: jobs, yesterday's requests and today's from
independent streams). Every policy runs on it: static, Optimus-like elastic (GPUs only, the user's
batch), Pollux-like elastic (GPUs and batch chosen together from the same fitted model), Pollux-like
with naive lending, and FaPES (Pollux-like with forecast lending and cost-aware reclaim). Two
controls rerun the arms their claims compare: Pollux-like and FaPES at a low training load, where
lending has nothing to add, and naive lending and FaPES on the same trace with an evening burst the
seasonal forecast has never seen. Nothing here is tuned per seed: the policies' knobs are the
Config's defaults (the chapter's Exercise 1 varies the shared headroom), and the world's settings
were chosen on calibration seeds, never on the book's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from toyscale.core.boundary import Boundary, sweep

from .cluster import Config, Trace, make_trace
from .simulation import SimResult, simulate

#: The arms each control reruns.
LOW_LOAD_ARMS = ("pollux", "fapes")
BURST_ARMS = ("loan_naive", "fapes")
#: Minutes after the burst's end that still count as its window (the queue it left drains).
BURST_TAIL_MIN = 30.0
#: The elastic baselines the JCT claim picks its strongest from, on the validation day.
ELASTIC_ARMS = ("optimus", "pollux")
#: The lending policies compared at a common SLO target, each at the headroom it picks on the validation day.
MATCHED_ARMS = ("loan_naive", "fapes")


def _policy(arm: str, config: Config) -> str:
    """What arm `arm` runs: its own policy, except that a falsifier's `config.method` replaces FaPES."""
    return config.method if arm == "fapes" else arm


def forecast_error(sim: SimResult, trace: Trace, config: Config, span: tuple[float, float] | None = None) -> float:
    """Mean |λ̂ − λ*| / λ* of the board's forecasts in the inference window (or in `span`).

    λ̂(t): the board's forecast at minute t of the peak rate over the next `forecast_horizon_min`;
    λ*(t): the true rate's peak over the same minutes. nan for a policy without a board.
    """
    if sim.forecast.size == 0:
        return float("nan")
    t, predicted = sim.forecast[:, 0], sim.forecast[:, 1]
    lo, hi = span if span is not None else (0.0, config.window_min)
    keep = (t >= lo) & (t < hi)
    horizon = int(config.forecast_horizon_min)
    truth = trace.rate_truth
    minutes = t[keep].astype(int)
    realised = np.array([truth[m : m + horizon + 1].max() for m in minutes])
    return float(np.mean(np.abs(predicted[keep] - realised) / realised))


def lent_gpu_hours(sim: SimResult) -> float:
    """GPU-hours of lent inference GPUs that training jobs held (the timeline's 'loaned' column, stepwise)."""
    timeline = sim.timeline
    if timeline.shape[0] < 2:
        return 0.0
    return float(np.sum(timeline[:-1, 2] * np.diff(timeline[:, 0])) / 60.0)


def metrics_of(sim: SimResult, trace: Trace, config: Config) -> dict[str, float]:
    """The numbers the claims and tables read, for one policy on one trace."""
    jct = sim.jct if sim.jct.size else np.array([np.nan])
    latency = sim.latency_s
    out = {
        "mean_jct_min": float(np.mean(jct)),
        "p90_jct_min": float(np.percentile(jct, 90)),
        "job_goodput": float(np.mean(sim.job_goodput)) if sim.job_goodput.size else float("nan"),
        "throughput": sim.throughput,
        "slo_per_1000": 1000.0 * float(np.mean(latency > config.slo_s)),
        "p99_latency_s": float(np.percentile(latency, 99)),
        "p999_latency_s": float(np.percentile(latency, 99.9)),
        "preemptions": float(sim.preemptions),
        "gpu_hours_lost": sim.gpu_seconds_lost / 3600.0,
        "completed": sim.completed / sim.n_jobs,
        "makespan_h": sim.makespan / 60.0,
        "model_error": sim.model_error,
        "prior_error": sim.prior_error,
        "forecast_error": forecast_error(sim, trace, config),
        "violations": float(np.sum(latency > config.slo_s)),
        "lent_gpu_h": lent_gpu_hours(sim),
    }
    if trace.burst is not None:
        lo, hi = trace.burst[0], trace.burst[1] + BURST_TAIL_MIN
        inside = (sim.request_minutes >= lo) & (sim.request_minutes < hi)
        out["burst_slo_per_1000"] = 1000.0 * float(np.mean(latency[inside] > config.slo_s))
        out["burst_p99_latency_s"] = float(np.percentile(latency[inside], 99))
        out["burst_forecast_error"] = forecast_error(sim, trace, config, (lo, hi))
    return out


def simulate_arms(arms: Sequence[str], trace: Trace, config: Config, seed: int) -> dict[str, SimResult]:
    """Simulate each arm on the trace; the arms that never lend share one latency computation."""
    sims: dict[str, SimResult] = {}
    fixed = None
    for arm in arms:
        sims[arm] = simulate(_policy(arm, config), trace, config, seed, fixed_latency=fixed)
        if fixed is None and np.all(sims[arm].timeline[:, 3] == config.cluster.infer_gpus):  # never lent
            fixed = sims[arm].latency_s
    return sims


@dataclass
class Result:
    """One seed: every policy at the main load, the lending policies at a common SLO target, the low-load
    control and the burst day.

    metrics[arm][metric] at the main load (see `metrics_of`: JCT in minutes, per-job goodput as a
    speed-up over the job's requested configuration, cluster throughput in m0-samples per minute
    while jobs are in the system, SLO violations per 1000 requests, latencies in seconds, GPU-hours
    lost; each elastic baseline also carries `val_mean_jct_min`, its JCT on the validation day);
    matched[arm]: naive lending and FaPES on the main trace, each at the headroom it picked on the
    validation day to meet `slo_target_per_1000` (with `headroom` and `val_slo_per_1000`); sims: the
    full SimResult per arm (timelines for the figures); low[arm]: Pollux-like and FaPES at
    `control_load`; burst[arm]: naive lending and FaPES on the burst day, with the burst window's
    own numbers; burst_sims: their SimResults; rate['normal' | 'burst']: the true request
    rate per minute of the inference window; burst_span: the burst's (start, end) minute.
    """

    config: Config
    seed: int
    metrics: dict[str, dict[str, float]]
    sims: dict[str, SimResult] = field(default_factory=dict)
    low: dict[str, dict[str, float]] = field(default_factory=dict)
    burst: dict[str, dict[str, float]] = field(default_factory=dict)
    burst_sims: dict[str, SimResult] = field(default_factory=dict)
    rate: dict[str, np.ndarray] = field(default_factory=dict)
    burst_span: tuple[float, float] | None = None
    matched: dict[str, dict[str, float]] = field(default_factory=dict)


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """Simulate every arm on the seed's trace at the main load, then the low-load and burst controls."""
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a fapes.Config, got {type(config).__name__}")
    trace = make_trace(config, seed)
    sims = simulate_arms(config.arms, trace, config, seed)
    result = Result(config, seed, {arm: metrics_of(sim, trace, config) for arm, sim in sims.items()}, sims)
    if config.validation and any(arm in config.arms for arm in ELASTIC_ARMS):
        val_trace = make_trace(config, seed, validation=True)
        for arm in ELASTIC_ARMS:
            if arm in config.arms:
                sim = simulate(_policy(arm, config) if arm == "fapes" else arm, val_trace, config, seed)
                result.metrics[arm]["val_mean_jct_min"] = metrics_of(sim, val_trace, config)["mean_jct_min"]
    if config.matched:
        result.matched = matched_lending(config, trace, seed)
    window = int(config.window_min)
    result.rate["normal"] = trace.rate_truth[:window]
    if config.control:
        low_trace = make_trace(config, seed, config.control_load)
        low = simulate_arms(LOW_LOAD_ARMS, low_trace, config, seed)
        result.low = {arm: metrics_of(sim, low_trace, config) for arm, sim in low.items()}
        burst_trace = make_trace(config, seed, burst=True)
        result.burst_sims = simulate_arms(BURST_ARMS, burst_trace, config, seed)
        result.burst = {arm: metrics_of(sim, burst_trace, config) for arm, sim in result.burst_sims.items()}
        result.rate["burst"], result.burst_span = burst_trace.rate_truth[:window], burst_trace.burst
    return result


def pick_headroom(policy: str, config: Config, seed: int) -> tuple[float, float]:
    """The smallest headroom of `config.headrooms` whose SLO violations on the validation day meet the target.

    Returns (headroom, its validation violations per 1000); the largest headroom when none meets it.
    """
    val_trace = make_trace(config, seed, validation=True)
    tried = []
    for h in sorted(config.headrooms):
        c = replace(config, headroom=h)
        v = metrics_of(simulate(policy, val_trace, c, seed), val_trace, c)["slo_per_1000"]
        tried.append((h, v))
        if v <= config.slo_target_per_1000:
            return h, v
    return tried[-1]


def matched_lending(config: Config, trace: Trace, seed: int) -> dict[str, dict[str, float]]:
    """Naive lending and FaPES on `trace`, each at the headroom it picked on the validation day (same SLO target)."""
    out = {}
    for arm in MATCHED_ARMS:
        policy = _policy(arm, config)
        h, v = pick_headroom(policy, config, seed)
        c = replace(config, headroom=h)
        out[arm] = metrics_of(simulate(policy, trace, c, seed), trace, c) | {"headroom": h, "val_slo_per_1000": v}
    return out


# ---------------------------------------------------------------------------------------------
# Paired differences the claims and the boundary read
# ---------------------------------------------------------------------------------------------


def jct_cut(table: dict[str, dict[str, float]], method: str, baseline: str) -> float:
    """Relative cut of the mean JCT: 1 − JCT_method / JCT_baseline."""
    return 1.0 - table[method]["mean_jct_min"] / table[baseline]["mean_jct_min"]


def violation_cut(table: dict[str, dict[str, float]], metric: str = "slo_per_1000") -> float:
    """FaPES's share of fewer SLO violations than naive lending: (v_naive − v_FaPES) / (v_naive + v_FaPES).

    In [−1, 1]: 0 when they are equal (or both zero), 1/3 when FaPES has half of naive's, 1 when FaPES has none.
    """
    naive, fapes = table["loan_naive"][metric], table["fapes"][metric]
    return 0.0 if naive + fapes == 0 else (naive - fapes) / (naive + fapes)


def lending_gain(config: Config, seed: int, load: float) -> float:
    """What lending with cost-aware reclaim adds over Pollux-like elastic at this training load (JCT cut)."""
    trace = make_trace(config, seed, load)
    sims = simulate_arms(LOW_LOAD_ARMS, trace, config, seed)
    return jct_cut({arm: metrics_of(sim, trace, config) for arm, sim in sims.items()}, "fapes", "pollux")


def slo_gain(config: Config, seed: int) -> float:
    """FaPES's share of fewer SLO violations than naive lending (`violation_cut`) at the main load."""
    trace = make_trace(config, seed)
    sims = simulate_arms(BURST_ARMS, trace, config, seed)
    return violation_cut({arm: metrics_of(sim, trace, config) for arm, sim in sims.items()})


def load_boundary(config: Config, points: Sequence[float], seeds: Sequence[int]) -> Boundary:
    """Where lending pays (CLAIMS.md §7): FaPES's JCT cut over Pollux-like across the training load."""
    return sweep(
        lambda load, seed: lending_gain(config, seed, load),
        points,
        seeds,
        parameter="training load (× the default jobs)",
        delta_name="mean-JCT cut, FaPES vs Pollux-like",
    )


def noise_boundary(config: Config, points: Sequence[float], seeds: Sequence[int]) -> Boundary:
    """Where the forecast pays: FaPES's share of fewer SLO violations than naive lending across rate noise."""
    return sweep(
        lambda noise, seed: slo_gain(replace(config, rate_noise=noise), seed),
        points,
        seeds,
        parameter="inference burstiness (std of the log-rate noise)",
        delta_name="share of fewer SLO violations, FaPES vs naive lending",
    )
