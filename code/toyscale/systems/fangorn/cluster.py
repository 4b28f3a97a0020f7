"""Scale: the executor's measured costs replayed in a discrete-event cluster (SimPy).

The threads of one laptop cannot show what a plan does on a cluster, so every task the real
executor ran is replayed as a simulated task whose duration comes from a cost model fitted to
*medians* of repeated measurements (`calibrate`): per-row seconds for scanning and partitioning
(map), aggregating (reduce) and building a join side (build), times `rows_scale` production
rows per toy row. Batch tasks run on on-demand resources: each asks the pool of `slots` for a
slot and pays a start latency; a bubble runs on warm long-running workers with no start latency
but holds its gang of workers for its whole span (the latency-versus-efficiency trade the paper
describes). Several jobs may share the cluster (`simulate_jobs`): they queue for the same slots
and the same warm workers.

The claims and tests replay with the *committed* cost model (`committed_costs`, the artifact
`fangorn_costs`), so a seed gives the same numbers on every machine and under any load; a live
calibration on the reader's machine is shown beside it in the notebook.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import simpy

from .graph import Stage, build, map_task, partition, reduce_task

KINDS = ("map", "reduce", "build")


@dataclass(frozen=True)
class CostModel:
    """Seconds per toy row for each kind of work, and the noise of the measurement.

    per_row_s[kind]: median-based slope; task_s: the measured cost of one Python call (a fixed
    cost per task, negligible next to the rows' work); noise: relative spread (interquartile range
    / median) of the repeated timings, per kind.
    """

    per_row_s: dict[str, float]
    task_s: float
    noise: dict[str, float]


def calibrate(sizes: tuple[int, ...] = (4_000, 16_000, 64_000), reps: int = 5, *, seed: int = 0) -> CostModel:
    """Time each task kind `reps` times at each size; b = median over sizes of median(t) / n.

    Medians, not means, because the machine is shared: a stray slow repetition (another process
    taking the core) moves a mean, not a median. The fixed cost of a call (microseconds) is
    measured apart and is negligible next to milliseconds of work at these sizes.
    """
    if reps < 3 or len(sizes) < 2 or min(sizes) < 1:
        raise ValueError(f"need reps >= 3 and >= 2 positive sizes, got reps={reps}, sizes={sizes}")
    rng = np.random.default_rng(seed)
    per_row, noise = {}, {}
    for kind in KINDS:
        medians, spread = [], []
        for n in sizes:
            key = rng.integers(0, max(n // 10, 1), n, dtype=np.int64)
            value = rng.integers(0, 1000, n, dtype=np.int64)
            out = partition(key, value, 512)
            fn = {
                "map": lambda k=key, v=value: map_task(k, v, None, None, 512),
                "reduce": lambda o=out: reduce_task([o], 0, 512, None),
                "build": lambda k=key, v=value: build(k, v),
            }[kind]
            fn()  # warm caches
            t = []
            for _ in range(reps):
                t0 = time.perf_counter()
                fn()
                t.append(time.perf_counter() - t0)
            q1, med, q3 = np.percentile(t, [25, 50, 75])
            medians.append(med)
            spread.append((q3 - q1) / med)
        # b = median_n ( median_reps t(n) / n )
        per_row[kind] = float(np.median(np.array(medians) / np.array(sizes, float)))
        noise[kind] = float(np.median(spread))
    t = []
    for _ in range(50):
        t0 = time.perf_counter()
        (lambda: None)()
        t.append(time.perf_counter() - t0)
    return CostModel(per_row, float(np.median(t)), noise)


def cost_arrays(costs: CostModel) -> dict[str, np.ndarray]:
    """A cost model as arrays (per kind in KINDS order) for `core.save_arrays`."""
    return {
        "per_row_s": np.array([costs.per_row_s[k] for k in KINDS]),
        "task_s": np.array([costs.task_s]),
        "noise": np.array([costs.noise[k] for k in KINDS]),
    }


def cost_model(arrays: dict[str, np.ndarray]) -> CostModel:
    """The inverse of `cost_arrays`."""
    if any(np.shape(arrays.get(k)) != (n,) for k, n in (("per_row_s", 3), ("task_s", 1), ("noise", 3))):
        raise ValueError("a cost model needs arrays per_row_s (3,), task_s (1,) and noise (3,)")
    return CostModel(
        {k: float(v) for k, v in zip(KINDS, arrays["per_row_s"], strict=True)},
        float(arrays["task_s"][0]),
        {k: float(v) for k, v in zip(KINDS, arrays["noise"], strict=True)},
    )


def reference_arrays() -> dict[str, np.ndarray]:
    """The committed cost model: `calibrate` with 15 repetitions per size on the machine that builds it."""
    return cost_arrays(calibrate(reps=15, seed=0))


def committed_costs() -> CostModel:
    """The cost model the claims and tests replay with (the artifact `fangorn_costs`, checksum-verified)."""
    from toyscale.datasets import ARTIFACTS

    return cost_model(ARTIFACTS["fangorn_costs"].load())


@dataclass(frozen=True)
class Cluster:
    """The simulated cluster and the scale of its data.

    slots: on-demand task slots; warm_slots: long-running workers a bubble may use;
    start_s: on-demand start latency per task (request, launch, fetch); schedule_s: per-task
    scheduling overhead on either; rows_scale: production rows per toy row.
    """

    slots: int = 64  # on-demand task slots of the simulated cluster
    warm_slots: int = 16  # long-running warm workers available to bubbles
    start_s: float = 2.0  # on-demand start latency of a task, s (assumed)
    schedule_s: float = 0.05  # scheduling overhead per task, s (assumed)
    rows_scale: float = 10_000.0  # production rows per toy row

    def __post_init__(self) -> None:
        if not 32 <= self.slots <= 64:
            raise ValueError(f"slots must be in [32, 64] (the chapter's cluster), got {self.slots}")
        if self.warm_slots < 1 or self.warm_slots > self.slots:
            raise ValueError(f"warm_slots must be in [1, slots], got {self.warm_slots}")
        for name in ("start_s", "schedule_s", "rows_scale"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")


def task_seconds(work: dict[str, int], cost: CostModel, cluster: Cluster) -> float:
    """A task's simulated run time: t = schedule_s + task_s + Σ_kind b_kind · rows_kind · rows_scale."""
    # t = schedule + overhead + Σ_k b_k · n_k · scale
    return cluster.schedule_s + cost.task_s + sum(cost.per_row_s[k] * n * cluster.rows_scale for k, n in work.items())


@dataclass
class Replay:
    """A simulated job: its time, the slot-seconds it held, and every task's (start, end)."""

    job_s: float
    slot_s: float
    spans: dict[str, list[tuple[float, float]]]


def simulate(stages: list[Stage], cost: CostModel, cluster: Cluster) -> Replay:
    """Replay one job alone on the cluster (`simulate_jobs` with a single job)."""
    return simulate_jobs([stages], cost, cluster)[0]


def simulate_jobs(jobs: list[list[Stage]], cost: CostModel, cluster: Cluster) -> list[Replay]:
    """Replay jobs submitted together at time 0; a stage starts when its upstream stages have finished.

    Batch: each task requests an on-demand slot, waits start_s, runs, releases; it holds the slot
    for start_s + run. Bubble: the stage takes a gang of warm workers, one per task, from the pool
    of `warm_slots` (waiting until that many are free), runs every task at once with no start
    latency, and holds the gang from its start to its end. Returns each job's time (its last
    stage's end) and slot-seconds.
    """
    env = simpy.Environment()
    pool = simpy.Resource(env, capacity=cluster.slots)
    warm = simpy.Container(env, capacity=cluster.warm_slots, init=cluster.warm_slots)
    replays = []

    for stages in jobs:
        done = {s.name: env.event() for s in stages}
        spans: dict[str, list[tuple[float, float]]] = {s.name: [] for s in stages}
        held = [0.0]
        end = [0.0]

        def batch_task(name: str, seconds: float, spans=spans, held=held):
            with pool.request() as slot:
                yield slot
                t0 = env.now
                yield env.timeout(cluster.start_s + seconds)
                spans[name].append((t0 + cluster.start_s, env.now))
                held[0] += env.now - t0

        def stage_proc(stage: Stage, done=done, spans=spans, held=held, end=end, batch_task=batch_task):
            deps = [done[d] for d in stage.deps if d in done]
            if deps:
                yield simpy.AllOf(env, deps)
            durations = [task_seconds(t.work, cost, cluster) for t in stage.tasks]
            if stage.mode == "bubble":
                if len(durations) > cluster.warm_slots:
                    raise ValueError(f"a bubble of {len(durations)} tasks exceeds {cluster.warm_slots} warm workers")
                yield warm.get(len(durations))
                t0 = env.now
                yield env.timeout(max(durations))
                yield warm.put(len(durations))
                spans[stage.name] += [(t0, t0 + d) for d in durations]
                held[0] += len(durations) * (env.now - t0)
            else:
                yield simpy.AllOf(env, [env.process(batch_task(stage.name, d)) for d in durations])
            end[0] = max(end[0], env.now)
            done[stage.name].succeed()

        for s in stages:
            env.process(stage_proc(s))
        replays.append((end, held, spans))
    env.run()
    return [Replay(float(end[0]), float(held[0]), spans) for end, held, spans in replays]
