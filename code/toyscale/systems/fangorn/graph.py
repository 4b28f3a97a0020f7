"""The real executor: a job graph over numpy data that plug-ins reshape between stages.

A job is one query over a fact table (int64 `key`, int64 `value`), optionally filtered and
optionally joined with a dimension table (int64 `key`, int64 `weight`, int64 `flag`):

    SELECT key, SUM(value [* weight]), COUNT(*) FROM fact [JOIN dim USING (key) WHERE dim.flag]
    [WHERE value < cut] GROUP BY key

SUM and COUNT are decomposable, so where the aggregate directly follows the map (no join, or a
join with a broadcast side done inside the map) every plan runs a map-side *combiner*, switched
off in a map task where it would not at least halve the rows (Hive's default rule,
`hive.map.aggr.hash.min.reduction` = 0.5). After a shuffle join the aggregate runs in the reduce
task that joins a key's rows, and no combiner applies (pushing an aggregate below a join, eager
aggregation, is not a default rewrite of Spark or Hive): this is where the hot key lives.

It runs as stages of tasks on a thread pool (threads share the arrays; no pickling). Every map
task hashes its rows into `buckets` fine shuffle buckets and reports rows per bucket; the
plug-ins read those statistics and decide the next stage's physical shape (how many reduce tasks,
which buckets each reads, whether a hot bucket is split over subsets of map outputs) and, for the
join, the logical branch (broadcast or shuffle) from the real size of the filtered dimension
side. Every plan computes the same exact integer result; `reference_result` computes it on one
node, and `execute` asserts the match.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from itertools import pairwise

import numpy as np

# ---------------------------------------------------------------------------------------------
# Data: workloads
# ---------------------------------------------------------------------------------------------

WORKLOADS = ("uniform", "zipf hot key", "misestimated filter", "join, small side", "join, large side")


@dataclass(frozen=True)
class Workload:
    """One query's input: the fact table, its filter, and the join side if any.

    cut: rows with value < cut pass the fact filter (None: no filter); estimated_selectivity: what
    a static optimizer believes the filter (on fact or dim) keeps; dim_*: the dimension table
    (None: no join), whose rows with flag == 1 take part in the join.
    """

    name: str
    key: np.ndarray
    value: np.ndarray
    cut: int | None = None
    estimated_selectivity: float = 1.0
    dim_key: np.ndarray | None = None
    dim_weight: np.ndarray | None = None
    dim_flag: np.ndarray | None = None

    @property
    def is_join(self) -> bool:
        return self.dim_key is not None

    def estimated_dim_rows(self) -> int:
        """The static optimizer's size of the filtered dimension side: raw rows × estimated selectivity."""
        return 0 if self.dim_key is None else int(len(self.dim_key) * self.estimated_selectivity)


SPLITS = ("test", "validation")  # test jobs are what claims read; validation jobs are what a static plan is tuned on


def make_workload(
    name: str,
    n_rows: int,
    n_keys: int,
    *,
    seed: int,
    split: str = "test",
    zipf_a: float = 1.3,
    estimate: float = 0.5,
) -> Workload:
    """Generate one of WORKLOADS with `n_rows` fact rows over `n_keys` distinct keys.

    uniform: keys uniform. zipf hot key: a *skewed join*: fact keys with P(rank r) ∝ r^-a (a =
    `zipf_a`; at 1.3 the top key holds about a quarter of the rows) joined with a dimension of all
    n_keys keys (the optimizer assumes `estimate` of them), then aggregated: the hot key's rows meet
    its dimension row only in the reduce task that joins them, so no map-side combiner can shrink
    them. misestimated filter: uniform keys, values uniform in [0, 1000), the filter keeps value < 20
    (2 %) where the optimizer assumes `estimate`. join, small side: a dimension of n_keys rows of
    which 1 % are flagged (the optimizer assumes `estimate`). join, large side: flagged 60 % (assumed
    `estimate`: about right). `split` names an independent random stream of fact rows: 'test' jobs
    (what the claims read) and 'validation' jobs (the previous run of the same job, which a static
    plan is tuned on). The job's structure (its dimension table, which keys are hot) is the same in
    both: a recurring job reads new fact rows against the same tables.
    """
    if name not in WORKLOADS:
        raise ValueError(f"name must be one of {WORKLOADS}, got {name!r}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if n_rows < 1 or n_keys < 1:
        raise ValueError(f"n_rows and n_keys must be >= 1, got {n_rows}, {n_keys}")
    if zipf_a < 0 or not 0 < estimate <= 1:
        raise ValueError(f"need zipf_a >= 0 and 0 < estimate <= 1, got {zipf_a}, {estimate}")
    stream = [seed, WORKLOADS.index(name)] + ([1] if split == "validation" else [])
    rng = np.random.default_rng(stream)
    tables = np.random.default_rng([seed, WORKLOADS.index(name), 2])  # the job's structure, shared by both splits
    value = rng.integers(0, 1000, n_rows, dtype=np.int64)
    if name == "zipf hot key":
        p = np.arange(1, n_keys + 1, dtype=float) ** -zipf_a
        ranks = rng.choice(n_keys, size=n_rows, p=p / p.sum())
        key = tables.permutation(n_keys).astype(np.int64)[ranks]
    else:
        key = rng.integers(0, n_keys, n_rows, dtype=np.int64)
    if name == "misestimated filter":
        return Workload(name, key, value, cut=20, estimated_selectivity=estimate)
    if name == "zipf hot key" or name.startswith("join"):
        share = {"zipf hot key": 1.0, "join, small side": 0.01, "join, large side": 0.6}[name]
        dim_key = tables.permutation(n_keys).astype(np.int64)
        flag = (tables.random(n_keys) < share).astype(np.int64)
        weight = tables.integers(1, 10, n_keys, dtype=np.int64)
        return Workload(name, key, value, None, estimate, dim_key, weight, flag)
    return Workload(name, key, value)


def reference_result(w: Workload) -> np.ndarray:
    """The query's answer on one node: rows (key, sum, count) sorted by key, int64."""
    key, value = w.key, w.value
    if w.cut is not None:
        keep = value < w.cut
        key, value = key[keep], value[keep]
    if w.is_join:
        dk = w.dim_key[w.dim_flag == 1]
        dw = w.dim_weight[w.dim_flag == 1]
        order = np.argsort(dk)
        dk, dw = dk[order], dw[order]
        pos = np.clip(np.searchsorted(dk, key), 0, max(len(dk) - 1, 0))
        hit = (dk[pos] == key) if len(dk) else np.zeros(len(key), bool)
        key, value = key[hit], value[hit] * dw[pos[hit]]
    return aggregate(key, value, np.ones(len(key), np.int64))


def aggregate(key: np.ndarray, total: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Group rows by key: (key, Σ total, Σ count) sorted by key, as an (n, 3) int64 array."""
    if len(key) == 0:
        return np.zeros((0, 3), np.int64)
    # sort by key, then sum each run of equal keys (np.add.reduceat over run starts)
    order = np.argsort(key, kind="stable")
    k = key[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    return np.stack([k[starts], np.add.reduceat(total[order], starts), np.add.reduceat(count[order], starts)], 1)


# ---------------------------------------------------------------------------------------------
# Tasks
# ---------------------------------------------------------------------------------------------


def bucket_of(key: np.ndarray, buckets: int) -> np.ndarray:
    """The shuffle bucket of each key: a multiplicative hash, b = (key · 2654435761 mod 2^32) mod B."""
    return ((key * 2654435761) & 0xFFFFFFFF) % buckets


@dataclass
class MapOutput:
    """One map task's shuffle output: its rows sorted by bucket, where each bucket starts, and row counts.

    count[i]: the fact rows row i stands for (1 without a combiner; the group's size after one).
    """

    key: np.ndarray
    value: np.ndarray
    offsets: np.ndarray  # offsets[b]:offsets[b + 1] are bucket b's rows
    count: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.count is None:
            self.count = np.ones(len(self.key), np.int64)

    def rows_per_bucket(self) -> np.ndarray:
        return np.diff(self.offsets)


#: A map-side combiner stays on only where it keeps at most this share of its rows (Hive's default
#: `hive.map.aggr.hash.min.reduction`).
MIN_REDUCTION = 0.5


def partition(key: np.ndarray, value: np.ndarray, buckets: int, count: np.ndarray | None = None) -> MapOutput:
    """Hash-partition rows into buckets (sort by bucket id, record the bucket offsets)."""
    b = bucket_of(key, buckets)
    # a stable sort of small integers (uint16) is a radix sort: linear in the rows
    order = np.argsort(b.astype(np.uint16) if buckets <= 65_536 else b, kind="stable")
    offsets = np.zeros(buckets + 1, np.int64)
    np.cumsum(np.bincount(b, minlength=buckets), out=offsets[1:])
    return MapOutput(key[order], value[order], offsets, None if count is None else count[order])


@dataclass(frozen=True)
class Broadcast:
    """A dimension side sent whole to every map task: keys sorted, weights aligned."""

    key: np.ndarray
    weight: np.ndarray


def probe(key: np.ndarray, value: np.ndarray, side: Broadcast) -> tuple[np.ndarray, np.ndarray]:
    """Join rows with a sorted side: keep rows whose key is in the side, value ← value · weight."""
    if len(side.key) == 0:
        return key[:0], value[:0]
    pos = np.clip(np.searchsorted(side.key, key), 0, len(side.key) - 1)
    hit = side.key[pos] == key
    return key[hit], value[hit] * side.weight[pos[hit]]


def build(key: np.ndarray, weight: np.ndarray) -> Broadcast:
    """Build the join's lookup structure: the side sorted by key (what each task that joins pays)."""
    order = np.argsort(key)
    return Broadcast(key[order], weight[order])


def map_task(
    key: np.ndarray, value: np.ndarray, cut: int | None, side: tuple | None, buckets: int, combine: bool = False
) -> MapOutput:
    """Scan a split: filter value < cut, [build and probe the broadcast side], [combine], hash-partition.

    combine: run the map-side combiner (partial SUM and COUNT per key); it is kept only when it
    leaves at most MIN_REDUCTION of the rows (`combined` says whether it did).
    """
    if cut is not None:
        keep = value < cut
        key, value = key[keep], value[keep]
    if side is not None:
        key, value = probe(key, value, build(*side))
    if combine and len(key):
        table = aggregate(key, value, np.ones(len(key), np.int64))
        if len(table) <= MIN_REDUCTION * len(key):
            return partition(table[:, 0], table[:, 1], buckets, table[:, 2])
    return partition(key, value, buckets)


def gather(outputs: list[MapOutput], lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of buckets [lo, hi) from the given map outputs: keys, values, and the rows each stands for."""
    keys = [o.key[o.offsets[lo] : o.offsets[hi]] for o in outputs]
    values = [o.value[o.offsets[lo] : o.offsets[hi]] for o in outputs]
    counts = [o.count[o.offsets[lo] : o.offsets[hi]] for o in outputs]
    return np.concatenate(keys), np.concatenate(values), np.concatenate(counts)


def reduce_task(outputs: list[MapOutput], lo: int, hi: int, side: MapOutput | None) -> np.ndarray:
    """Aggregate buckets [lo, hi) of the given map outputs; with a shuffled side, join it first."""
    key, value, count = gather(outputs, lo, hi)
    if side is not None:
        side_key, side_weight, _ = gather([side], lo, hi)
        key, value = probe(key, value, build(side_key, side_weight))
        count = np.ones(len(key), np.int64)  # after a shuffle join no combiner ran: one fact row each
    return aggregate(key, value, count)


# ---------------------------------------------------------------------------------------------
# The graph and its plug-ins
# ---------------------------------------------------------------------------------------------


@dataclass
class Task:
    """One task as run: the rows it processed per cost kind, and its measured wall time (s)."""

    work: dict[str, int]
    wall_s: float = 0.0
    label: str = ""


@dataclass
class Stage:
    """A vertex of the job graph: a kind of work, its tasks, upstream stages, execution mode."""

    name: str
    tasks: list[Task]
    deps: tuple[str, ...] = ()
    mode: str = "batch"  # 'batch': on-demand resources, persisted shuffle; 'bubble': warm workers


@dataclass(frozen=True)
class Plan:
    """A policy: the static choices and which plug-ins may change them at run time.

    parallelism: reduce tasks of a static plan (ignored when `coalesce`); join: 'estimate' (the
    optimizer's choice from the estimated side size), 'broadcast' or 'shuffle'; coalesce: the
    parallelism plug-in merges small buckets; split_skew: it also splits hot buckets; adaptive_join:
    the join plug-in picks the branch from the real side size; bubbles: the mode plug-in runs a
    post-shuffle sub-graph that fits the warm pool on warm workers (a static plan knows its task
    count before it runs, so it may use the same rule); target_factor: the coalescing target (or
    the optimizer's rows per task) as a multiple of `Knobs.target_rows`, the knob each arm tunes on
    validation; statistics: 'real', or 'shuffled' (the mechanism off: the plug-ins read the
    bucket sizes permuted over the buckets and the side size from the estimate); history: a plan
    fixed before the run from the previous run's statistics, (join branch, reduce tasks).
    """

    name: str
    parallelism: int = 32
    join: str = "estimate"
    coalesce: bool = False
    split_skew: bool = False
    adaptive_join: bool = False
    bubbles: bool = False
    target_factor: float = 1.0
    statistics: str = "real"
    history: tuple | None = None


@dataclass(frozen=True)
class Knobs:
    """The plug-ins' thresholds, in rows of the real data (the scale model multiplies them).

    buckets: fine shuffle buckets every map task writes; split_rows: fact rows per map split;
    target_rows: rows a coalesced reduce task aims at; skew_factor: a bucket is hot when it holds
    more than this × the median bucket and more than target_rows; broadcast_rows: the join
    plug-in broadcasts a side of at most this many rows; warm_slots: tasks a bubble may hold.
    """

    buckets: int = 512
    split_rows: int = 6_250
    target_rows: int = 6_250
    skew_factor: float = 4.0
    broadcast_rows: int = 2_000
    warm_slots: int = 16


def choose_join(plan: Plan, w: Workload, real_dim_rows: int | None, knobs: Knobs) -> str:
    """The join plug-in: broadcast when the side is small, else shuffle (a conditional branch).

    A static plan decides on the optimizer's estimate before anything runs; the adaptive plan
    decides on the real row count the dimension scan reported.
    """
    if plan.join in ("broadcast", "shuffle"):
        return plan.join
    rows = real_dim_rows if (plan.adaptive_join and real_dim_rows is not None) else w.estimated_dim_rows()
    return "broadcast" if rows <= knobs.broadcast_rows else "shuffle"


def optimize(w: Workload, knobs: Knobs, name: str = "static optimizer", target_factor: float = 1.0) -> Plan:
    """A static optimizer: the plug-ins' own rules applied before the job runs, to the estimates.

    It cannot see the data, so it reads the catalog: the filter keeps the estimated share of the
    fact rows, the join side has the estimated size, keys spread evenly (no histogram, so no hot
    key). Join branch: broadcast if the estimated side ≤ broadcast_rows. Reduce parallelism:
    P = round(estimated reduce rows / target_rows), at least 1 (rounded, not ceiled: at the
    defaults every fact row gives exactly the 64 slots), where the reduce reads every fact row after a
    shuffle join and the estimated matching share after a broadcast join; `target_factor` scales
    the target (the knob it is tuned on). Bubbles when P fits the warm pool.
    """
    rows = float(len(w.key)) * (w.estimated_selectivity if w.cut is not None else 1.0)
    join = "estimate"
    if w.is_join:
        join = "broadcast" if w.estimated_dim_rows() <= knobs.broadcast_rows else "shuffle"
        if join == "broadcast":
            rows *= w.estimated_selectivity
    parallelism = int(np.clip(round(rows / (knobs.target_rows * target_factor)), 1, knobs.buckets))
    return Plan(name, parallelism=parallelism, join=join, bubbles=True, target_factor=target_factor)


@dataclass(frozen=True)
class ReduceSpec:
    """One reduce task's input: buckets [lo, hi) of the map outputs with the given indices."""

    lo: int
    hi: int
    maps: tuple[int, ...]


def static_ranges(buckets: int, parallelism: int) -> list[ReduceSpec]:
    """A static plan's reduce tasks: the buckets cut into `parallelism` equal contiguous ranges."""
    edges = np.linspace(0, buckets, min(parallelism, buckets) + 1).round().astype(int)
    return [ReduceSpec(int(a), int(b), ()) for a, b in pairwise(edges)]


def adapt_parallelism(
    rows: np.ndarray, per_map: np.ndarray, knobs: Knobs, split: bool, target: int | None = None
) -> list[ReduceSpec]:
    """The parallelism plug-in: coalesce small buckets, [split hot ones], from real bucket sizes.

    rows[b]: rows in bucket b over all maps; per_map[m, b]: rows map m wrote to bucket b.
    Coalescing walks the buckets in order and closes a task once it holds ≥ target_rows.
    A hot bucket (rows > skew_factor · median and > target) is cut into k = ceil(rows / target)
    tasks, each reading a contiguous subset of the map outputs (at most one task per map).
    `target` overrides knobs.target_rows.
    """
    target = knobs.target_rows if target is None else target
    specs: list[ReduceSpec] = []
    median = float(np.median(rows)) if len(rows) else 0.0
    start, acc = 0, 0
    for b, r in enumerate(rows):
        hot = split and r > knobs.skew_factor * max(median, 1.0) and r > target
        if hot:
            if acc > 0 or b > start:
                specs.append(ReduceSpec(start, b, ()))
            k = min(int(np.ceil(r / target)), per_map.shape[0])
            # cut the maps so that each piece holds about r / k rows of this bucket
            cum = np.cumsum(per_map[:, b])
            cuts = np.searchsorted(cum, np.arange(1, k) * r / k, side="right")
            groups = np.split(np.arange(per_map.shape[0]), np.unique(cuts))
            specs += [ReduceSpec(b, b + 1, tuple(int(m) for m in g)) for g in groups if len(g)]
            start, acc = b + 1, 0
            continue
        acc += int(r)
        if acc >= target:
            specs.append(ReduceSpec(start, b + 1, ()))
            start, acc = b + 1, 0
    if start < len(rows):
        specs.append(ReduceSpec(start, len(rows), ()))
    return specs


def fit_bubble(specs: list[ReduceSpec], rows: np.ndarray, per_map: np.ndarray, knobs: Knobs) -> list[ReduceSpec]:
    """Bubble-aware coalescing: spread a post-shuffle stage that would run as a bubble over the warm pool.

    The batch target packs rows into tasks that each pay a start latency; a bubble's warm workers pay
    none, so when the coalesced stage (no split bucket) has fewer tasks than the warm pool it is
    coalesced again with target ⌈Σ rows / warm slots⌉, kept if it still fits the pool.
    """
    if any(s.maps for s in specs) or len(specs) >= knobs.warm_slots:
        return specs
    wide = adapt_parallelism(rows, per_map, knobs, False, max(1, int(np.ceil(rows.sum() / knobs.warm_slots))))
    return wide if len(wide) <= knobs.warm_slots else specs


@dataclass
class Execution:
    """A job as run: its stages in order, the plug-ins' decisions, the result and the wall time."""

    plan: Plan
    workload: str
    stages: list[Stage]
    decisions: list[str]
    result: np.ndarray
    wall_s: float
    branch: str | None = None  # the join branch taken (None without a join)
    specs: tuple = ()  # the reduce tasks as run (what a history-based optimizer replays)


def _run_stage(pool: ThreadPoolExecutor, fns: list) -> tuple[list, list[float]]:
    """Run one stage's task functions on the pool; return outputs and per-task wall times."""

    def timed(fn):
        t0 = time.perf_counter()
        out = fn()
        return out, time.perf_counter() - t0

    done = list(pool.map(timed, fns))
    return [d[0] for d in done], [d[1] for d in done]


def execute(w: Workload, plan: Plan, knobs: Knobs, pool: ThreadPoolExecutor, shared: dict | None = None) -> Execution:
    """Run the query under `plan` on real data, stage by stage, letting the plug-ins act between.

    Stages: [dim scan] → fact map (→ shuffle) → reduce [→ merge]. Returns the stages with per-task
    work (rows per cost kind) and wall time, the plug-ins' decisions, and the result, which is
    asserted equal to `reference_result`. `shared`, a dict kept across the plans of one workload,
    keeps the map stage of each join branch (the same for every plan that takes it) and the
    reference answer, so that many plans on one workload run their maps once.
    """
    shared = {} if shared is None else shared
    t_start = time.perf_counter()
    stages: list[Stage] = []
    decisions: list[str] = []
    n = len(w.key)
    splits = np.array_split(np.arange(n), max(1, int(np.ceil(n / knobs.split_rows))))
    bounds = [(int(s[0]), int(s[-1]) + 1) for s in splits if len(s)]
    side_rows = None
    side_arrays = None
    if w.is_join:
        # dimension scan: filter the side and report its real size
        flag = w.dim_flag == 1
        side_arrays = (w.dim_key[flag], w.dim_weight[flag])
        side_rows = int(flag.sum())
        stages.append(Stage("dim scan", [Task({"map": len(w.dim_key)})]))
    branch = None
    if w.is_join and plan.history is not None:
        branch = plan.history[0]
        decisions.append(f"join: {branch} (the previous run's side size)")
    elif w.is_join:
        stale = plan.statistics != "real"  # the mechanism off: the side size from the estimate
        branch = choose_join(replace(plan, adaptive_join=plan.adaptive_join and not stale), w, side_rows, knobs)
        source = "real" if plan.adaptive_join and plan.join == "estimate" and not stale else "estimated"
        rows = side_rows if source == "real" else w.estimated_dim_rows()
        decisions.append(f"join: {branch} ({source} side {rows:,} rows, broadcast ≤ {knobs.broadcast_rows:,})")
    bcast = side_arrays if branch == "broadcast" else None
    combine = branch != "shuffle"  # the aggregate follows the map: the combiner applies
    if f"maps {branch}" not in shared:
        map_fns = [
            (lambda a=a, b=b: map_task(w.key[a:b], w.value[a:b], w.cut, bcast, knobs.buckets, combine))
            for a, b in bounds
        ]
        outputs, walls = _run_stage(pool, map_fns)
        map_tasks = []
        for (a, b), wall, out in zip(bounds, walls, outputs, strict=True):
            work = {"map": b - a}
            if bcast is not None:
                work["build"] = side_rows
            if len(out.key) < int(out.count.sum()):
                work["reduce"] = int(out.count.sum())  # the combiner aggregated the rows it kept
            map_tasks.append(Task(work, wall))
        side = None
        if branch == "shuffle":
            (side_out,), (side_wall,) = _run_stage(pool, [lambda: partition(*side_arrays, knobs.buckets)])
            side = (side_out, Task({"map": side_rows}, side_wall))
        shared[f"maps {branch}"] = (outputs, map_tasks, side)
    outputs, map_tasks, side = shared[f"maps {branch}"]
    stages.append(Stage("fact map", map_tasks, ("dim scan",) if branch == "broadcast" else ()))
    side_out = None
    if side is not None:
        side_out, side_task = side
        stages.append(Stage("dim shuffle", [side_task], ("dim scan",)))
    # statistics the map stage produced: rows per bucket, per map
    per_map = np.stack([o.rows_per_bucket() for o in outputs])
    rows = per_map.sum(axis=0)
    planned = static_ranges(knobs.buckets, plan.parallelism)
    if plan.history is not None:
        specs = list(plan.history[1])
        if any(m >= len(outputs) for s in specs for m in s.maps):
            raise ValueError(f"plan {plan.name!r} replays map indices this job does not have ({len(outputs)} maps)")
        decisions.append(f"parallelism: {len(specs)} reduce tasks, fixed from the previous run's statistics")
    elif plan.coalesce:
        seen = per_map
        if plan.statistics != "real":  # the mechanism off: bucket sizes permuted over the buckets
            seen = per_map[:, np.random.default_rng(0).permutation(per_map.shape[1])]
        target = max(1, round(knobs.target_rows * plan.target_factor))
        specs = adapt_parallelism(seen.sum(axis=0), seen, knobs, plan.split_skew, target)
        if plan.bubbles:
            specs = fit_bubble(specs, seen.sum(axis=0), seen, knobs)
        n_split = sum(1 for s in specs if s.maps)
        decisions.append(
            f"parallelism: {len(planned)} planned → {len(specs)} reduce tasks ({n_split} from split hot buckets)"
        )
    else:
        specs = planned
    all_maps = tuple(range(len(outputs)))

    def reduce_fn(spec: ReduceSpec):
        chosen = [outputs[m] for m in (spec.maps or all_maps)]
        return reduce_task(chosen, spec.lo, spec.hi, side_out)

    parts, walls = _run_stage(pool, [(lambda s=s: reduce_fn(s)) for s in specs])
    red_tasks = []
    for spec, wall in zip(specs, walls, strict=True):
        maps = spec.maps or all_maps
        work = {"reduce": int(per_map[list(maps), spec.lo : spec.hi].sum())}
        if side_out is not None:
            work["build"] = int(side_out.offsets[spec.hi] - side_out.offsets[spec.lo])
        red_tasks.append(Task(work, wall, f"buckets {spec.lo}–{spec.hi - 1}" + (" (split)" if spec.maps else "")))
    deps = ("fact map", "dim shuffle") if branch == "shuffle" else ("fact map",)
    reduce_stage = Stage("reduce", red_tasks, deps)
    stages.append(reduce_stage)
    # merge: a hot bucket's partial aggregates are combined (only when a split happened)
    split_parts = [p for p, s in zip(parts, specs, strict=True) if s.maps]
    if split_parts:
        stages.append(Stage("merge", [Task({"reduce": int(sum(len(p) for p in split_parts))})], ("reduce",)))
    table = np.concatenate(parts) if parts else np.zeros((0, 3), np.int64)
    result = aggregate(table[:, 0], table[:, 1], table[:, 2]) if len(table) else table
    # the mode plug-in: run the post-shuffle sub-graph on warm workers when it fits the pool
    post = [s for s in stages if s.name in ("reduce", "merge")]
    if plan.bubbles and sum(len(s.tasks) for s in post) <= knobs.warm_slots:
        for s in post:
            s.mode = "bubble"
        decisions.append(
            f"mode: post-shuffle sub-graph ({sum(len(s.tasks) for s in post)} tasks) → bubble on warm workers"
        )
    elif plan.bubbles:
        decisions.append("mode: post-shuffle sub-graph too large for the warm pool → batch")
    if "reference" not in shared:
        shared["reference"] = reference_result(w)
    if not np.array_equal(result, shared["reference"]):
        raise AssertionError(f"plan {plan.name!r} returned a different result on {w.name!r}")
    return Execution(plan, w.name, stages, decisions, result, time.perf_counter() - t_start, branch, tuple(specs))


def reference_arrays() -> dict[str, np.ndarray]:
    """The five workloads at the chapter's default size and seed 0, as the data card fingerprints."""
    arrays = {}
    for i, name in enumerate(WORKLOADS):
        w = make_workload(name, 200_000, 20_000, seed=0)
        arrays[f"w{i}_key"], arrays[f"w{i}_value"] = w.key, w.value
        if w.is_join:
            arrays[f"w{i}_dim"] = np.stack([w.dim_key, w.dim_weight, w.dim_flag])
    return arrays
