"""The experiment: five workloads, every plan run for real and replayed, every arm tuned on validation jobs.

The protocol (CLAIMS.md §2–3, v2). The regime is an ad-hoc job: it has not run before, so a plan
fixed in advance can read the catalog's estimates only. A platform still tunes its static policy on
past jobs, so each arm is tuned on *validation* jobs (the same five workloads drawn from an
independent stream) over eight configurations: the static grid over its fixed reduce parallelisms
(join from the estimate, bubbles wherever the post-shuffle stage fits the warm pool), the static
optimizer (`graph.optimize`, the plug-ins' rules fed the estimates) over its rows per task, adaptive
and each ablation over their coalescing target; each keeps the configuration with the lowest
geometric-mean job time. The claims then read *test* jobs. For a recurring job (`history =
'recurring'`, a boundary) a history-based optimizer fixes each job's plan from its previous run
(the validation job: its join branch and its reduce tasks as adaptive ran them). The oracle is the
per-workload best of every static plan in hindsight (the grid, each join branch forced, the
optimizer), which no real system can pick.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np

from toyscale.core.seeding import seed_everything

from .cluster import Cluster, CostModel, Replay, committed_costs, simulate, simulate_jobs
from .graph import WORKLOADS, Execution, Knobs, Plan, Stage, execute, make_workload, optimize

ADAPTIVE = "adaptive"
ORACLE = "oracle"
BEST_STATIC = "best static"
GRID = "static grid"
OPTIMIZER = "static optimizer"
HISTORY = "history optimizer"
PER_JOB = "static grid, per job"  # the grid's plan that won each job's own validation run (the control's baseline)
ABLATIONS = ("adaptive, no skew split", "adaptive, join from estimate", "adaptive, batch only")
#: What runs under the adaptive arm's name (falsifiers): adaptive itself; its plug-ins reading permuted bucket
#: sizes and the estimated side ('stale', the mechanism off); an alternative in its place.
METHODS = ("adaptive", "stale", GRID, OPTIMIZER)
#: Whether the job has run before: 'ad-hoc' (no history: a static plan has the catalog's estimates only) or
#: 'recurring' (a history-based optimizer fixes the plan from the previous run's statistics).
HISTORIES = ("ad-hoc", "recurring")
#: The coalescing target (the optimizer's rows per reduce task) each target-based arm tunes on validation,
#: as a multiple of `Config.target_rows`: as many configurations as the static grid's parallelisms.
TARGET_FACTORS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)


@dataclass(frozen=True)
class Config:
    """Toy defaults for the Fangorn experiment; sizes in production rows are scaled to toy rows.

    method: what runs under the adaptive arm's name (METHODS): 'adaptive'; 'stale' (its plug-ins
    read the map stage's bucket sizes permuted over the buckets and the side size from the
    estimate: the mechanism off); or an alternative ('static grid', 'static optimizer') in its
    place. history: 'ad-hoc' (the regime: no previous run) or
    'recurring' (the boundary: a history-based optimizer plans from the previous run).
    """

    n_rows: int = 50_000  # fact rows of the real (toy) tables
    n_keys: int = 5_000  # distinct keys (also the dimension table's rows)
    production_rows: float = 2e9  # the fact rows the simulated cluster sees (rows_scale = this / n_rows)
    parallelisms: tuple[int, ...] = (8, 16, 32, 48, 64, 96, 128, 256)  # the static grid (64 = the slots)
    targets: tuple[float, ...] = TARGET_FACTORS  # the target-based arms' grid (× target_rows)
    buckets: int = 512  # fine shuffle buckets every map task writes
    split_rows: float = 62.5e6  # production fact rows per map split (1,562 toy rows: 33 maps at the defaults)
    target_rows: float = 31.25e6  # production rows a coalesced reduce task aims at
    skew_factor: float = 4.0  # a bucket is hot above this × the median bucket (and above the target)
    broadcast_rows: float = 20e6  # the join plug-in broadcasts a side of at most this many production rows
    zipf_a: float = 1.3  # the hot-key workload's Zipf exponent
    estimate: float = 0.5  # the share the optimizer assumes for the filter and the join sides
    cluster: Cluster = field(default_factory=Cluster)  # the simulated cluster (start latency, slots)
    costs: CostModel | None = None  # per-row costs; None: the committed cost model (`committed_costs`)
    method: str = "adaptive"
    history: str = "ad-hoc"
    threads: int = 2  # the executor's thread pool (1: tasks run in turn; the replay is the same either way)

    def __post_init__(self) -> None:
        if self.n_rows < 1_000 or self.n_keys < 100 or self.n_keys > self.n_rows:
            raise ValueError(f"need n_rows >= 1000 and 100 <= n_keys <= n_rows, got {self.n_rows}, {self.n_keys}")
        if not self.parallelisms or min(self.parallelisms) < 1 or max(self.parallelisms) > self.buckets:
            raise ValueError(f"parallelisms must lie in [1, buckets={self.buckets}], got {self.parallelisms}")
        if len(self.targets) != len(self.parallelisms) or min(self.targets) <= 0:
            raise ValueError(
                f"targets must be positive and as many as the parallelisms (equal tuning budgets), got {self.targets}"
            )
        if not isinstance(self.cluster, Cluster):
            raise TypeError(f"cluster must be a Cluster, got {type(self.cluster).__name__}")
        if self.costs is not None and not isinstance(self.costs, CostModel):
            raise TypeError(f"costs must be a CostModel or None, got {type(self.costs).__name__}")
        for name in ("production_rows", "split_rows", "target_rows", "broadcast_rows", "skew_factor"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.history not in HISTORIES:
            raise ValueError(f"history must be one of {HISTORIES}, got {self.history!r}")
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


class InTurn:
    """A stand-in for a one-thread pool: `map` runs the tasks in turn, without handing each to a thread."""

    def __enter__(self) -> InTurn:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def map(self, fn, items):
        return map(fn, items)


def executor(threads: int):
    """The pool a job's tasks run on: `threads` threads, or tasks in turn for one (the replay is the same)."""
    return InTurn() if threads == 1 else ThreadPoolExecutor(threads)


def grid_plans(config: Config, workload, forced: bool) -> list[Plan]:
    """The static grid: each fixed parallelism, the join from the estimate [and each branch forced]."""
    plans = [Plan(f"static P={p}", parallelism=p, bubbles=True) for p in config.parallelisms]
    if forced and workload.is_join:
        for branch in ("broadcast", "shuffle"):
            plans += [
                Plan(f"static P={p}, {branch}", parallelism=p, join=branch, bubbles=True) for p in config.parallelisms
            ]
    return plans


def optimizer_plans(config: Config, workload) -> list[Plan]:
    """The static optimizer at each target of its grid (`graph.optimize` on the catalog's estimates)."""
    return [optimize(workload, config.knobs(), f"{OPTIMIZER} τ×{t:g}", t) for t in config.targets]


def static_plans(config: Config, workload, forced: bool) -> list[Plan]:
    """Every static plan a platform could fix before an ad-hoc job runs: the grid and the optimizer's grid."""
    return grid_plans(config, workload, forced) + optimizer_plans(config, workload)


def adaptive_plans(config: Config | None = None, target_factor: float = 1.0) -> list[Plan]:
    """Adaptive execution with every plug-in, and the three ablations that each switch one off.

    With `config.method == 'stale'` the first plan's plug-ins read permuted statistics (the mechanism
    off); the ablations always read the real ones.
    """
    full = Plan(ADAPTIVE, coalesce=True, split_skew=True, adaptive_join=True, bubbles=True, target_factor=target_factor)
    ablations = [
        replace(full, name=ABLATIONS[0], split_skew=False),
        replace(full, name=ABLATIONS[1], adaptive_join=False),
        replace(full, name=ABLATIONS[2], bubbles=False),
    ]
    if config is not None and config.method == "stale":
        full = replace(full, statistics="shuffled")
    return [full, *ablations]


def policies(config: Config, workload) -> list[Plan]:
    """Every kind of plan: the static policies with forced branches, and adaptive's variants."""
    return static_plans(config, workload, forced=True) + adaptive_plans(config)


@dataclass
class Record:
    """One plan on one workload: the simulated job and what ran for real."""

    job_s: float
    slot_s: float
    wall_s: float  # measured wall time of the real threaded execution (noisy; not used by claims)
    decisions: list[str]
    stages: list[Stage]
    replay: Replay
    execution: Execution | None = None


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm][metric] for the arms 'static P=…' (each fixed parallelism), the alternatives 'static
    grid' and 'static optimizer' (each at the configuration of its grid that won on validation;
    'history optimizer' too for a recurring job), 'static grid, per job' (the grid's plan that won
    each job's own validation run), 'best static' (the strongest alternative on validation),
    'oracle', 'adaptive' and its ablations: job time ('job_s <workload>'), slot-seconds ('slot_s
    <workload>'), job time over the oracle's ('ratio <workload>'), the geometric means over the five
    workloads ('geomean job_s', 'geomean slot_s'), the worst ratio, the mean job time when the five
    jobs share the cluster ('mix job_s'), and, for each tuned arm, its validation scores ('val
    geomean job_s'; 'val mix job_s', the validation jobs sharing the cluster).
    records[workload][plan]: every plan run on the test jobs; oracle_plan[workload]: the static plan
    the oracle picked; best_static: the plan of the strongest alternative on validation;
    validation[plan]: every validation plan's geometric-mean job time; choices[arm]: the plan each
    arm ran on the test jobs; costs: the cost model the replay used.
    """

    config: Config
    seed: int
    metrics: dict[str, dict[str, float]]
    records: dict[str, dict[str, Record]]
    oracle_plan: dict[str, str]
    best_static: str
    validation: dict[str, float]
    costs: CostModel
    choices: dict[str, str] = field(default_factory=dict)


def geomean(values) -> float:
    return float(np.exp(np.mean(np.log(np.asarray(values, dtype=float)))))


def _record(w, plan: Plan, knobs: Knobs, pool, costs: CostModel, sim: Cluster, shared: dict) -> Record:
    ex = execute(w, plan, knobs, pool, shared)
    rep = simulate(ex.stages, costs, sim)
    return Record(rep.job_s, rep.slot_s, ex.wall_s, ex.decisions, ex.stages, rep, ex)


@dataclass
class Tuning:
    """What the validation jobs (the previous run of each job) decided.

    scores[plan]: geometric-mean validation job time of every plan tried; grid: the parallelism plan
    that won; targets[arm]: the target factor each target-based arm won with; history[workload]: the
    previous run's (join branch, reduce tasks) at the history optimizer's target (recurring only);
    per_job[workload]: the grid's plan with the lowest job time on that workload's validation job;
    stages[plan]: each validation job's stages under the plan, in WORKLOADS order (for the validation mix).
    """

    scores: dict[str, float]
    grid: str
    targets: dict[str, float]
    history: dict[str, tuple]
    per_job: dict[str, str]
    stages: dict[str, list[list[Stage]]]


def _tuned(name: str, target: float) -> str:
    return f"{name} τ×{target:g}"


def tune(config: Config, seed: int, pool, costs: CostModel, sim: Cluster) -> Tuning:
    """Every arm's grid on the five validation jobs; each arm keeps its configuration with the lowest geomean."""
    knobs = config.knobs()
    times: dict[str, list[float]] = {}
    stages: dict[str, list[list[Stage]]] = {}
    runs: dict[tuple[str, float], Execution] = {}
    recurring = config.history == "recurring"
    for name in WORKLOADS:
        w, shared = config.workload(name, seed, "validation"), {}
        plans = grid_plans(config, w, forced=False) + optimizer_plans(config, w)
        for t in config.targets:
            variants = adaptive_plans(config, t)
            plans += [replace(p, name=_tuned(p.name, t)) for p in variants]
            if recurring:  # the previous run as the history store saw it: adaptive on real statistics
                plans.append(replace(adaptive_plans(None, t)[0], name=_tuned(HISTORY, t)))
        for plan in plans:
            rec = _record(w, plan, knobs, pool, costs, sim, shared)
            times.setdefault(plan.name, []).append(rec.job_s)
            stages.setdefault(plan.name, []).append(rec.stages)
            if plan.name.startswith(HISTORY):
                runs[(name, plan.target_factor)] = rec.execution
    scores = {name: geomean(t) for name, t in times.items()}
    grid = min((f"static P={p}" for p in config.parallelisms), key=scores.__getitem__)
    arms = [OPTIMIZER, ADAPTIVE, *ABLATIONS] + ([HISTORY] if recurring else [])
    targets = {arm: min(config.targets, key=lambda t, arm=arm: scores[_tuned(arm, t)]) for arm in arms}
    grid_names = [f"static P={p}" for p in config.parallelisms]
    per_job = {n: min(grid_names, key=lambda k, i=i: times[k][i]) for i, n in enumerate(WORKLOADS)}
    history = {}
    if recurring:
        history = {n: (runs[(n, targets[HISTORY])].branch, runs[(n, targets[HISTORY])].specs) for n in WORKLOADS}
    return Tuning(scores, grid, targets, history, per_job, stages)


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """Tune every arm on validation jobs, then run every plan on the five test jobs and compare."""
    config = Config() if config is None else config
    if not isinstance(config, Config):
        raise TypeError(f"config must be a fangorn.Config or None, got {type(config).__name__}")
    seed_everything(seed)
    costs = config.costs or committed_costs()
    sim = replace(config.cluster, rows_scale=config.rows_scale)
    knobs = config.knobs()
    records: dict[str, dict[str, Record]] = {}
    recurring = config.history == "recurring"
    with executor(config.threads) as pool:
        tuning = tune(config, seed, pool, costs, sim)
        for name in WORKLOADS:
            w, shared = config.workload(name, seed), {}
            plans = grid_plans(config, w, forced=True)
            plans.append(optimize(w, knobs, OPTIMIZER, tuning.targets[OPTIMIZER]))
            plans += [replace(p, target_factor=tuning.targets[p.name]) for p in adaptive_plans(config)]
            if recurring:
                plans.append(Plan(HISTORY, bubbles=True, history=tuning.history[name]))
            records[name] = {p.name: _record(w, p, knobs, pool, costs, sim, shared) for p in plans}
    tried = {GRID: tuning.grid, **{arm: _tuned(arm, t) for arm, t in tuning.targets.items()}}
    val = {arm: tuning.scores[plan] for arm, plan in tried.items()}
    val_mix = {  # each tuned arm's five validation jobs submitted together
        arm: float(np.mean([r.job_s for r in simulate_jobs(tuning.stages[plan], costs, sim)]))
        for arm, plan in tried.items()
    }
    alternatives = [GRID, OPTIMIZER] + ([HISTORY] if recurring else [])
    best = min(alternatives, key=val.__getitem__)
    choices = {GRID: tuning.grid, OPTIMIZER: OPTIMIZER, **({HISTORY: HISTORY} if recurring else {})}
    best_static = choices[best]
    val[BEST_STATIC], val_mix[BEST_STATIC] = val[best], val_mix[best]
    substitute = {"adaptive": ADAPTIVE, "stale": ADAPTIVE, GRID: tuning.grid, OPTIMIZER: OPTIMIZER}
    in_place = {"adaptive": ADAPTIVE, "stale": ADAPTIVE}.get(config.method, config.method)
    val[ADAPTIVE], val_mix[ADAPTIVE] = val[in_place], val_mix[in_place]
    grid = [f"static P={p}" for p in config.parallelisms]
    arms = [*grid, *alternatives, PER_JOB, BEST_STATIC, ORACLE, ADAPTIVE, *ABLATIONS]
    chosen: dict[str, dict[str, Record]] = {arm: {} for arm in arms}
    oracle_plan = {}
    for name, recs in records.items():
        static = [k for k in recs if k.startswith("static")]
        oracle_plan[name] = min(static, key=lambda k: recs[k].job_s)
        for arm in arms:
            key = {ORACLE: oracle_plan[name], BEST_STATIC: best_static, ADAPTIVE: substitute[config.method]}
            key[PER_JOB] = tuning.per_job[name]
            chosen[arm][name] = recs[key.get(arm, choices.get(arm, arm))]
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
        if arm in val:
            m["val geomean job_s"], m["val mix job_s"] = val[arm], val_mix[arm]
        metrics[arm] = m
    for arm in (ADAPTIVE, *alternatives, BEST_STATIC, ORACLE):
        mix = simulate_jobs([chosen[arm][w].stages for w in WORKLOADS], costs, sim)
        metrics[arm]["mix job_s"] = float(np.mean([r.job_s for r in mix]))
    choices.update({arm: f"{arm} τ×{t:g}" for arm, t in tuning.targets.items()})
    choices[GRID] = tuning.grid
    return Result(config, seed, metrics, records, oracle_plan, best_static, tuning.scores, costs, choices)


def cut(result: Result, metric: str, baseline: str, method: str = ADAPTIVE) -> float:
    """The relative cut 1 − method / baseline of a metric (job time, slot-seconds): > 0 favours the method."""
    return 1.0 - result.metrics[method][metric] / result.metrics[baseline][metric]


def tasks(result: Result, workload: str, arm: str) -> int:
    """Scheduled task instances of one arm's job on one workload (every stage's tasks)."""
    plan = {ORACLE: result.oracle_plan[workload], BEST_STATIC: result.best_static, GRID: result.choices[GRID]}.get(
        arm, arm
    )
    return sum(len(s.tasks) for s in result.records[workload][plan].stages)


# ---------------------------------------------------------------------------------------------
# Where the effects live (CLAIMS.md §7)
# ---------------------------------------------------------------------------------------------

#: The Zipf exponents of the skew boundary: from uniform keys (a = 0) to a hotter key than the default 1.3.
SKEW_POINTS = (0.0, 0.5, 0.8, 1.0, 1.15, 1.3, 1.5)
#: The flagged share of the small side the optimizer assumes (the real share is 1 %).
ESTIMATE_POINTS = (0.01, 0.05, 0.1, 0.2, 0.5, 0.9)


def skew_delta(config: Config, seed: int, zipf_a: float) -> float:
    """The skewed join at Zipf exponent `zipf_a`: job time (s), adaptive with the split off − adaptive (τ×1)."""
    c = replace(config, zipf_a=zipf_a)
    costs = c.costs or committed_costs()
    sim = replace(c.cluster, rows_scale=c.rows_scale)
    w = c.workload("zipf hot key", seed)
    full, no_split, _, _ = adaptive_plans()
    shared: dict = {}
    with executor(c.threads) as pool:
        split = _record(w, full, c.knobs(), pool, costs, sim, shared).job_s
        unsplit = _record(w, no_split, c.knobs(), pool, costs, sim, shared).job_s
    return unsplit - split


def estimate_delta(config: Config, seed: int, estimate: float) -> float:
    """The small-side join when the optimizer assumes `estimate`: job time (s), join from the estimate − real."""
    c = replace(config, estimate=estimate)
    costs = c.costs or committed_costs()
    sim = replace(c.cluster, rows_scale=c.rows_scale)
    w = c.workload("join, small side", seed)
    full, _, from_estimate, _ = adaptive_plans()
    shared: dict = {}
    with executor(c.threads) as pool:
        real = _record(w, full, c.knobs(), pool, costs, sim, shared).job_s
        estimated = _record(w, from_estimate, c.knobs(), pool, costs, sim, shared).job_s
    return estimated - real


#: The history boundary: 0 = an ad-hoc job (no previous run: the regime), 1 = a recurring job whose previous
#: run's statistics a history-based optimizer plans from.
HISTORY_POINTS = (0.0, 1.0)
#: The on-demand start latency of a batch task, s (the chapter assumes 2 s; bubbles pay none).
START_POINTS = (0.0, 0.5, 1.0, 2.0, 5.0)


def _delta(result: Result) -> float:
    """Geomean job time (s) of the strongest static policy on validation − adaptive's."""
    return result.metrics[BEST_STATIC]["geomean job_s"] - result.metrics[ADAPTIVE]["geomean job_s"]


def history_delta(config: Config, seed: int, history: float) -> float:
    """Δ geomean job time (s), strongest static policy on validation − adaptive, ad-hoc (0) or recurring (1)."""
    return _delta(run(replace(config, history=HISTORIES[round(history)]), seed=seed))


def start_delta(config: Config, seed: int, start_s: float) -> float:
    """Δ geomean job time (s), strongest static policy on validation − adaptive, at start latency `start_s`."""
    return _delta(run(replace(config, cluster=replace(config.cluster, start_s=start_s)), seed=seed))
