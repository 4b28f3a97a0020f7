"""The experiment: five workloads, every plan run for real and replayed, the static plan tuned on validation jobs.

The protocol (CLAIMS.md §2–3). A platform that plans before a job runs still gets to tune its
static policy on past jobs, so the strongest fair static baseline is chosen on *validation* jobs
(the same five workloads drawn from an independent stream): among the fixed reduce parallelisms of
the grid (the join branch from the optimizer's estimate, bubbles wherever the post-shuffle stage fits
the warm pool) and the static optimizer (`graph.optimize`, the plug-ins' own rules fed the
estimates), the policy with the lowest geometric-mean job time. The claims then read *test* jobs:
adaptive against that policy, and against the oracle, the per-workload best of every static plan in
hindsight (the grid, each join branch forced, the optimizer), which no real system can pick.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np

from toyscale.core.seeding import seed_everything

from .cluster import Cluster, CostModel, Replay, committed_costs, simulate, simulate_jobs
from .graph import WORKLOADS, Knobs, Plan, Stage, execute, make_workload, optimize

ADAPTIVE = "adaptive"
ORACLE = "oracle"
BEST_STATIC = "best static"
OPTIMIZER = "static optimizer"
ABLATIONS = ("adaptive, no skew split", "adaptive, join from estimate", "adaptive, batch only")
METHODS = ("adaptive", "estimates", "best static")  # what runs under the adaptive arm's name (falsifiers)


@dataclass(frozen=True)
class Config:
    """Toy defaults for the Fangorn experiment; sizes in production rows are scaled to toy rows.

    method: 'adaptive' (the plug-ins read the statistics the map stage reports), 'estimates' (the
    adaptive arm plans from the optimizer's estimates instead: the mechanism off) or 'best static'
    (the static policy chosen on validation jobs runs under the adaptive arm's name).
    """

    n_rows: int = 50_000  # fact rows of the real (toy) tables
    n_keys: int = 5_000  # distinct keys (also the dimension table's rows)
    production_rows: float = 2e9  # the fact rows the simulated cluster sees (rows_scale = this / n_rows)
    parallelisms: tuple[int, ...] = (8, 16, 32, 48, 64, 96, 128, 256)  # the static grid (64 = the slots)
    buckets: int = 512  # fine shuffle buckets every map task writes
    split_rows: float = 62.5e6  # production fact rows per map split (32 maps at the defaults)
    target_rows: float = 31.25e6  # production rows a coalesced reduce task aims at
    skew_factor: float = 4.0  # a bucket is hot above this × the median bucket (and above the target)
    broadcast_rows: float = 20e6  # the join plug-in broadcasts a side of at most this many production rows
    zipf_a: float = 1.3  # the hot-key workload's Zipf exponent
    estimate: float = 0.5  # the share the optimizer assumes for the filter and the join sides
    cluster: Cluster = field(default_factory=Cluster)  # the simulated cluster (start latency, slots)
    costs: CostModel | None = None  # per-row costs; None: the committed cost model (`committed_costs`)
    method: str = "adaptive"
    threads: int = 2  # the executor's thread pool

    def __post_init__(self) -> None:
        if self.n_rows < 1_000 or self.n_keys < 100 or self.n_keys > self.n_rows:
            raise ValueError(f"need n_rows >= 1000 and 100 <= n_keys <= n_rows, got {self.n_rows}, {self.n_keys}")
        if not self.parallelisms or min(self.parallelisms) < 1 or max(self.parallelisms) > self.buckets:
            raise ValueError(f"parallelisms must lie in [1, buckets={self.buckets}], got {self.parallelisms}")
        if not isinstance(self.cluster, Cluster):
            raise TypeError(f"cluster must be a Cluster, got {type(self.cluster).__name__}")
        if self.costs is not None and not isinstance(self.costs, CostModel):
            raise TypeError(f"costs must be a CostModel or None, got {type(self.costs).__name__}")
        for name in ("production_rows", "split_rows", "target_rows", "broadcast_rows", "skew_factor"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {self.threads}")

    @classmethod
    def fast(cls) -> Config:
        """Two fifths of the toy rows for the same production job (each toy row stands for more)."""
        return cls(n_rows=20_000, n_keys=2_000)

    @property
    def rows_scale(self) -> float:
        return self.production_rows / self.n_rows

    def knobs(self) -> Knobs:
        """The plug-ins' thresholds in toy rows."""
        s = self.rows_scale
        return Knobs(
            buckets=self.buckets,
            split_rows=max(1, round(self.split_rows / s)),
            target_rows=max(1, round(self.target_rows / s)),
            skew_factor=self.skew_factor,
            broadcast_rows=round(self.broadcast_rows / s),
            warm_slots=self.cluster.warm_slots,
        )

    def workload(self, name: str, seed: int, split: str = "test"):
        return make_workload(
            name, self.n_rows, self.n_keys, seed=seed, split=split, zipf_a=self.zipf_a, estimate=self.estimate
        )


def static_plans(config: Config, workload, forced: bool) -> list[Plan]:
    """The static policies: the grid (join from the estimate; [each branch forced]) and the optimizer."""
    plans = [Plan(f"static P={p}", parallelism=p, bubbles=True) for p in config.parallelisms]
    if forced and workload.is_join:
        for branch in ("broadcast", "shuffle"):
            plans += [
                Plan(f"static P={p}, {branch}", parallelism=p, join=branch, bubbles=True) for p in config.parallelisms
            ]
    return [*plans, optimize(workload, config.knobs(), OPTIMIZER)]


def adaptive_plans() -> list[Plan]:
    """Adaptive execution with every plug-in, and the three ablations that each switch one off."""
    full = Plan(ADAPTIVE, coalesce=True, split_skew=True, adaptive_join=True, bubbles=True)
    return [
        full,
        replace(full, name=ABLATIONS[0], split_skew=False),
        replace(full, name=ABLATIONS[1], adaptive_join=False),
        replace(full, name=ABLATIONS[2], bubbles=False),
    ]


def policies(config: Config, workload) -> list[Plan]:
    """Every plan run on a test workload: the static policies with forced branches, and adaptive's variants."""
    return static_plans(config, workload, forced=True) + adaptive_plans()


@dataclass
class Record:
    """One plan on one workload: the simulated job and what ran for real."""

    job_s: float
    slot_s: float
    wall_s: float  # measured wall time of the real threaded execution (noisy; not used by claims)
    decisions: list[str]
    stages: list[Stage]
    replay: Replay


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm][metric] for the arms 'static P=…', 'static optimizer', 'best static', 'oracle',
    'adaptive' and its ablations: job time ('job_s <workload>'), slot-seconds ('slot_s <workload>'),
    job time over the oracle's ('ratio <workload>'), the geometric means over the five workloads
    ('geomean job_s', 'geomean slot_s'), the worst ratio, and the mean job time when the five jobs
    share the cluster ('mix job_s'; adaptive, best static and oracle only). records[workload][plan]:
    every plan run on the test jobs; oracle_plan[workload]: the static plan the oracle picked;
    best_static: the policy chosen on the validation jobs, with validation[policy] its geometric-mean
    job time there; costs: the cost model the replay used.
    """

    config: Config
    seed: int
    metrics: dict[str, dict[str, float]]
    records: dict[str, dict[str, Record]]
    oracle_plan: dict[str, str]
    best_static: str
    validation: dict[str, float]
    costs: CostModel


def geomean(values) -> float:
    return float(np.exp(np.mean(np.log(np.asarray(values, dtype=float)))))


def _record(w, plan: Plan, knobs: Knobs, pool, costs: CostModel, sim: Cluster, shared: dict) -> Record:
    ex = execute(w, plan, knobs, pool, shared)
    rep = simulate(ex.stages, costs, sim)
    return Record(rep.job_s, rep.slot_s, ex.wall_s, ex.decisions, ex.stages, rep)


def choose_static(config: Config, seed: int, pool, costs: CostModel, sim: Cluster) -> tuple[str, dict[str, float]]:
    """The static policy with the lowest geometric-mean job time over the five validation jobs."""
    knobs = config.knobs()
    times: dict[str, list[float]] = {}
    for name in WORKLOADS:
        w, shared = config.workload(name, seed, "validation"), {}
        for plan in static_plans(config, w, forced=False):
            times.setdefault(plan.name, []).append(_record(w, plan, knobs, pool, costs, sim, shared).job_s)
    scores = {name: geomean(t) for name, t in times.items()}
    return min(scores, key=scores.__getitem__), scores


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """Tune the static policy on validation jobs, then run every plan on the five test jobs and compare."""
    config = Config() if config is None else config
    if not isinstance(config, Config):
        raise TypeError(f"config must be a fangorn.Config or None, got {type(config).__name__}")
    seed_everything(seed)
    costs = config.costs or committed_costs()
    sim = replace(config.cluster, rows_scale=config.rows_scale)
    knobs = config.knobs()
    records: dict[str, dict[str, Record]] = {}
    with ThreadPoolExecutor(config.threads) as pool:
        best_static, validation = choose_static(config, seed, pool, costs, sim)
        for name in WORKLOADS:
            w, shared = config.workload(name, seed), {}
            records[name] = {p.name: _record(w, p, knobs, pool, costs, sim, shared) for p in policies(config, w)}
    substitute = {"adaptive": ADAPTIVE, "estimates": OPTIMIZER, "best static": best_static}[config.method]
    grid = [f"static P={p}" for p in config.parallelisms]
    arms = [*grid, OPTIMIZER, BEST_STATIC, ORACLE, ADAPTIVE, *ABLATIONS]
    chosen: dict[str, dict[str, Record]] = {arm: {} for arm in arms}
    oracle_plan = {}
    for name, recs in records.items():
        static = [k for k in recs if k.startswith("static")]
        oracle_plan[name] = min(static, key=lambda k: recs[k].job_s)
        for arm in arms:
            key = {ORACLE: oracle_plan[name], BEST_STATIC: best_static, ADAPTIVE: substitute}.get(arm, arm)
            chosen[arm][name] = recs[key]
    metrics: dict[str, dict[str, float]] = {}
    for arm in arms:
        m = {}
        for name in WORKLOADS:
            r = chosen[arm][name]
            m[f"job_s {name}"] = r.job_s
            m[f"slot_s {name}"] = r.slot_s
            m[f"ratio {name}"] = r.job_s / records[name][oracle_plan[name]].job_s
        m["geomean job_s"] = geomean([m[f"job_s {w}"] for w in WORKLOADS])
        m["geomean slot_s"] = geomean([m[f"slot_s {w}"] for w in WORKLOADS])
        m["worst ratio"] = max(m[f"ratio {w}"] for w in WORKLOADS)
        metrics[arm] = m
    for arm in (ADAPTIVE, BEST_STATIC, ORACLE):
        mix = simulate_jobs([chosen[arm][w].stages for w in WORKLOADS], costs, sim)
        metrics[arm]["mix job_s"] = float(np.mean([r.job_s for r in mix]))
    return Result(config, seed, metrics, records, oracle_plan, best_static, validation, costs)


def cut(result: Result, metric: str, baseline: str, method: str = ADAPTIVE) -> float:
    """The relative cut 1 − method / baseline of a metric (job time, slot-seconds): > 0 favours the method."""
    return 1.0 - result.metrics[method][metric] / result.metrics[baseline][metric]


def tasks(result: Result, workload: str, arm: str) -> int:
    """Scheduled task instances of one arm's job on one workload (every stage's tasks)."""
    plan = {ORACLE: result.oracle_plan[workload], BEST_STATIC: result.best_static}.get(arm, arm)
    return sum(len(s.tasks) for s in result.records[workload][plan].stages)


# ---------------------------------------------------------------------------------------------
# Where the effects live (CLAIMS.md §7)
# ---------------------------------------------------------------------------------------------

#: The Zipf exponents of the skew boundary: from uniform keys (a = 0) to a hotter key than the default 1.3.
SKEW_POINTS = (0.0, 0.5, 0.8, 1.0, 1.15, 1.3, 1.5)
#: The flagged share of the small side the optimizer assumes (the real share is 1 %).
ESTIMATE_POINTS = (0.01, 0.05, 0.1, 0.2, 0.5, 0.9)


def skew_delta(config: Config, seed: int, zipf_a: float) -> float:
    """The hot-key workload at Zipf exponent `zipf_a`: job-time cut, adaptive vs the best static plan in hindsight."""
    c = replace(config, zipf_a=zipf_a)
    costs = c.costs or committed_costs()
    sim = replace(c.cluster, rows_scale=c.rows_scale)
    w = c.workload("zipf hot key", seed)
    shared: dict = {}
    with ThreadPoolExecutor(c.threads) as pool:
        plans = static_plans(c, w, forced=False)
        static = min(_record(w, p, c.knobs(), pool, costs, sim, shared).job_s for p in plans)
        adaptive = _record(w, adaptive_plans()[0], c.knobs(), pool, costs, sim, shared).job_s
    return 1.0 - adaptive / static


def estimate_delta(config: Config, seed: int, estimate: float) -> float:
    """The small-side join when the optimizer assumes `estimate`: job-time cut, join from the real size vs estimate."""
    c = replace(config, estimate=estimate)
    costs = c.costs or committed_costs()
    sim = replace(c.cluster, rows_scale=c.rows_scale)
    w = c.workload("join, small side", seed)
    full, _, from_estimate, _ = adaptive_plans()
    shared: dict = {}
    with ThreadPoolExecutor(c.threads) as pool:
        real = _record(w, full, c.knobs(), pool, costs, sim, shared).job_s
        estimated = _record(w, from_estimate, c.knobs(), pool, costs, sim, shared).job_s
    return 1.0 - real / estimated
