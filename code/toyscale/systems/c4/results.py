"""The committed results (`data/systems/c4_results.npz`): what the notebook shows but cannot recompute in budget.

The real job's timings are measurements that take seconds per session, so the chapter commits: the
default configuration's metrics on the book's five seeds (the claims table) with every episode's
outcome (iterations to detection per fault kind) and C4P's queue-pair sweep, and the boundary sweep
(CLAIMS.md §7) over the
injected fault's size: at each size and seed one session of the real job with a healthy episode and
one fault of each slow kind (the same culprits at every size), judged by C4D and by the last-arrival
baseline. Rebuild with `python -m toyscale data --rebuild c4_results` (a few minutes on one core).
The tests and `reproduce` recompute everything and never read this file; whether it is current is
decided by its fingerprint (`toyscale.datasets`), never by a rerun.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toyscale.core import BOOK_SEEDS
from toyscale.core.boundary import Boundary

from .diagnose import FAULT_KINDS, SLOW_KINDS, Fault, draw_faults, iterations_to_detection, last_arrival, run_session
from .diagnose import diagnose as c4d_diagnose
from .experiment import HASHING, Config, Result, ping_mesh, run

#: The injected fault's size (ms) at the boundary's points: from below the noise to the default NIC fault and beyond.
SIZE_POINTS = (2.0, 5.0, 10.0, 20.0, 40.0)
#: The detectors the sweep judges every episode with.
DETECTORS = ("c4d", "last_arrival", "ping_mesh")
#: The per-episode outcomes the file keeps (one row per episode of a book-seed run).
EPISODE_FIELDS = (
    "kind",
    "size_ms",
    "control",
    "c4d_correct",
    "baseline_correct",
    "mesh_correct",
    "iterations",
    "latency_s",
    "slow_fraction",
)
#: The downtime model's curves kept per seed (over the fault rate and over the fault mix).
DOWNTIME_CURVES = (
    "faults_per_node_day",
    "stop_shares",
    *(f"{d}{by}" for d in ("watchdog", "c4d", "perfect") for by in ("", "_by_mix")),
)


@dataclass
class Sweep:
    """The fault-size sweep: per point, seed and slow kind, whether each detector named the fault exactly
    (`named[detector]`, shape (points, seeds, kinds)), C4D's iterations to detection (NaN: missed), and
    per point and seed whether each detector raised an alarm on the healthy episode (`false_alarm[detector]`)."""

    points: tuple[float, ...]
    seeds: tuple[int, ...]
    named: dict[str, np.ndarray]
    iterations: np.ndarray
    false_alarm: dict[str, np.ndarray]

    def boundary(self, against: str = "last_arrival") -> Boundary:
        """Δ = C4D's share of faults named − an alternative's (`against`), per point and seed."""
        deltas = self.named["c4d"].mean(axis=2) - self.named[against].mean(axis=2)
        name = "last arrival" if against == "last_arrival" else "ping mesh"
        return Boundary(
            "injected fault size (ms)",
            self.points,
            self.seeds,
            deltas,
            f"Δ share of slow faults named (C4D − {name})",
        )


@dataclass
class Reference:
    """The committed results, unpacked: per-seed Results (metrics only), every episode's outcome, the sweep."""

    results: list[Result]
    episodes: list[dict[str, np.ndarray]]
    sweep: Sweep
    downtime: list[dict[str, list[float]]]


def sweep_session(config: Config, size_ms: float, seed: int) -> dict[str, object]:
    """One session of the real job at one fault size: a healthy episode, then one fault of each slow kind."""
    drawn = draw_faults(config.job, 50_000 + seed, kinds=SLOW_KINDS)  # the same culprits at every size
    faults: list[Fault | None] = [None, *(Fault(f.kind, f.rank, f.peer, f.start, size_ms) for f in drawn)]
    runs = run_session(config.job, faults, seed=seed)
    judges = {"c4d": c4d_diagnose, "last_arrival": last_arrival, "ping_mesh": ping_mesh}
    healthy, slow = runs[0], runs[1:]
    return {
        "false_alarm": {name: float(judge(healthy.reports, config.thresholds).alarm) for name, judge in judges.items()},
        "named": {
            name: [float(judge(r.reports, config.thresholds).matches(r.fault)) for r in slow]
            for name, judge in judges.items()
        },
        "iterations": [iterations_to_detection(r.reports, r.fault, "c4d", config.thresholds) for r in slow],
    }


def run_sweep(config: Config, points: Sequence[float] = SIZE_POINTS, seeds: Sequence[int] = BOOK_SEEDS) -> Sweep:
    cells = [[sweep_session(config, point, seed) for seed in seeds] for point in points]
    return Sweep(
        points=tuple(float(p) for p in points),
        seeds=tuple(int(s) for s in seeds),
        named={d: np.array([[c["named"][d] for c in row] for row in cells]) for d in DETECTORS},
        iterations=np.array([[c["iterations"] for c in row] for row in cells]),
        false_alarm={d: np.array([[c["false_alarm"][d] for c in row] for row in cells]) for d in DETECTORS},
    )


def _episodes(result: Result) -> dict[str, np.ndarray]:
    kinds = ["healthy", *FAULT_KINDS]
    rows = [
        (
            kinds.index(r.fault.kind if r.fault else "healthy"),
            r.size_ms,
            float(r.control),
            float(r.c4d_correct),
            float(r.baseline_correct),
            float(r.mesh_correct),
            r.iterations_to_detection,
            r.detection_latency_s,
            r.slow_fraction,
        )
        for r in result.records
    ]
    return {name: np.array([row[k] for row in rows], dtype=np.float64) for k, name in enumerate(EPISODE_FIELDS)}


def reference_arrays(seeds: Sequence[int] = BOOK_SEEDS) -> dict[str, np.ndarray]:
    """Run the default configuration on `seeds` and the fault-size sweep, and pack them."""
    config = Config()
    results = [run(config, seed=s) for s in seeds]
    arms = list(results[0].metrics)
    names = sorted({n for m in results[0].metrics.values() for n in m})
    grid = np.array([[[r.metrics[a].get(n, np.nan) for n in names] for a in arms] for r in results], dtype=np.float64)
    arrays: dict[str, np.ndarray] = {
        "seeds": np.asarray(seeds, dtype=np.int64),
        "arms": np.array(arms),
        "names": np.array(names),
        "metrics": grid,
    }
    for i, result in enumerate(results):
        arrays |= {f"episodes_{i}_{k}": v for k, v in _episodes(result).items()}
    for curve in DOWNTIME_CURVES:
        arrays[f"downtime_{curve}"] = np.array([r.downtime[curve] for r in results], dtype=np.float64)
    for arm in HASHING:  # the queue-pair sweep (C4P's boundary): per seed, split and queue-pair count
        for split in ("val", "test"):
            arrays[f"qps_{arm}_{split}"] = np.array([r.qps_sweep[arm][split] for r in results], dtype=np.float64)
    sweep = run_sweep(config, SIZE_POINTS, seeds)
    arrays |= {"sweep_points": np.asarray(sweep.points), "sweep_seeds": np.asarray(sweep.seeds, dtype=np.int64)}
    arrays |= {"sweep_iterations": sweep.iterations}
    for d in DETECTORS:
        arrays |= {f"sweep_named_{d}": sweep.named[d], f"sweep_false_alarm_{d}": sweep.false_alarm[d]}
    return arrays


def reference_from_arrays(arrays: dict[str, np.ndarray]) -> Reference:
    """Unpack what `reference_arrays` stored."""
    config = Config()
    arms, names = [str(a) for a in arrays["arms"]], [str(n) for n in arrays["names"]]
    grid = arrays["metrics"]
    results = []
    for i, seed in enumerate(arrays["seeds"]):
        metrics = {
            arm: {n: float(grid[i, j, k]) for k, n in enumerate(names) if np.isfinite(grid[i, j, k])}
            for j, arm in enumerate(arms)
        }
        sweep = {arm: {split: arrays[f"qps_{arm}_{split}"][i].tolist() for split in ("val", "test")} for arm in HASHING}
        results.append(Result(config, int(seed), metrics, qps_sweep=sweep))
    episodes = [{k: arrays[f"episodes_{i}_{k}"] for k in EPISODE_FIELDS} for i in range(len(arrays["seeds"]))]
    sweep = Sweep(
        points=tuple(float(p) for p in arrays["sweep_points"]),
        seeds=tuple(int(s) for s in arrays["sweep_seeds"]),
        named={d: arrays[f"sweep_named_{d}"] for d in DETECTORS},
        iterations=arrays["sweep_iterations"],
        false_alarm={d: arrays[f"sweep_false_alarm_{d}"] for d in DETECTORS},
    )
    downtime = [
        {curve: arrays[f"downtime_{curve}"][i].tolist() for curve in DOWNTIME_CURVES} for i in range(len(results))
    ]
    return Reference(results, episodes, sweep, downtime)


def reference() -> Reference:
    """The committed results of the default configuration on the book's seeds (checksum-verified)."""
    from toyscale.datasets import ARTIFACTS

    return reference_from_arrays(ARTIFACTS["c4_results"].load())


def qps_boundary(results: Sequence[Result], points: Sequence[int], against: str = "ecmp") -> Boundary:
    """C4P's boundary over the queue pairs per connection, every arm held at each count (no tuning): Δ = the
    alternative's mean step time / ideal on the test placements − C4P's, per count and seed."""
    deltas = np.array(
        [[r.qps_sweep[against]["test"][k] - r.qps_sweep["c4p"]["test"][k] for r in results] for k in range(len(points))]
    )
    name = "ECMP with its hash search" if against == "ecmp" else "plain ECMP"
    return Boundary(
        "queue pairs per connection",
        tuple(float(p) for p in points),
        tuple(r.seed for r in results),
        deltas,
        f"Δ step time / ideal ({name} − C4P)",
    )
