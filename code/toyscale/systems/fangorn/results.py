"""The committed results (`data/systems/fangorn_results.npz`): what the notebook shows without recomputing it.

Five book seeds of the default configuration (the claims table and the attribution table) and the
four boundary sweeps (CLAIMS.md §7): the hot-key split's Δ over the Zipf exponent of the keys, the
join plug-in's Δ over the side size the optimizer assumes, and adaptive's Δ against the strongest
static policy without and with the job's history (ad-hoc against recurring) and over the assumed
start latency. The replay uses the committed cost model, so the same code gives the same numbers on
any machine. Rebuild with `python -m toyscale data --rebuild fangorn_results` (a few minutes on one
core). The tests and `reproduce` recompute everything and never read this file; whether it is
current is decided by its fingerprint (`toyscale.datasets`), never by a rerun.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toyscale.core import BOOK_SEEDS
from toyscale.core.boundary import Boundary, sweep

from .experiment import (
    ESTIMATE_POINTS,
    HISTORY_POINTS,
    SKEW_POINTS,
    START_POINTS,
    Config,
    Result,
    estimate_delta,
    history_delta,
    run,
    skew_delta,
    start_delta,
)

SKEW_PARAMETER = "Zipf exponent a of the joined keys"
ESTIMATE_PARAMETER = "flagged share of the small side the optimizer assumes (real: 0.01)"
HISTORY_PARAMETER = "the job's history (0: ad-hoc, 1: recurring, the previous run's statistics known)"
START_PARAMETER = "on-demand start latency of a batch task, s"
#: The boundaries: name -> (delta(config, seed, point), points, parameter, what Δ is).
BOUNDARIES = {
    "skew": (skew_delta, SKEW_POINTS, SKEW_PARAMETER, "Δ skewed-join job time, s (split off − adaptive)"),
    "estimate": (
        estimate_delta,
        ESTIMATE_POINTS,
        ESTIMATE_PARAMETER,
        "Δ small-join job time, s (join from estimate − real size)",
    ),
    "history": (
        history_delta,
        HISTORY_POINTS,
        HISTORY_PARAMETER,
        "Δ geomean job time, s (strongest static on validation − adaptive)",
    ),
    "start": (
        start_delta,
        START_POINTS,
        START_PARAMETER,
        "Δ geomean job time, s (strongest static on validation − adaptive)",
    ),
}


@dataclass
class Reference:
    """The committed results, unpacked: per-seed Results (numbers only) and the four boundaries."""

    results: list[Result]
    skew: Boundary
    estimate: Boundary
    history: Boundary
    start: Boundary


def boundary(name: str, config: Config, seeds: Sequence[int], points: Sequence[float] | None = None) -> Boundary:
    """One of BOUNDARIES swept on `seeds` (at its committed points unless `points` are given)."""
    delta, default_points, parameter, delta_name = BOUNDARIES[name]
    return sweep(
        lambda p, seed: delta(config, seed, p),
        default_points if points is None else points,
        seeds,
        parameter=parameter,
        delta_name=delta_name,
    )


def reference_arrays(seeds: Sequence[int] = BOOK_SEEDS) -> dict[str, np.ndarray]:
    """Run the default configuration on `seeds`; pack every arm's metrics, the choices, and both boundaries."""
    config = Config()
    results = [run(config, seed=s) for s in seeds]
    arms = list(results[0].metrics)
    names = sorted({n for r in results for m in r.metrics.values() for n in m})
    grid = np.array([[[r.metrics[a].get(n, np.nan) for n in names] for a in arms] for r in results], dtype=np.float64)
    workloads = list(results[0].oracle_plan)
    arrays: dict[str, np.ndarray] = {
        "seeds": np.asarray(seeds, dtype=np.int64),
        "arms": np.array(arms),
        "names": np.array(names),
        "metrics": grid,
        "workloads": np.array(workloads),
        "oracle_plan": np.array([[r.oracle_plan[w] for w in workloads] for r in results]),
        "best_static": np.array([r.best_static for r in results]),
    }
    for name in BOUNDARIES:
        arrays.update({f"{name}_{key}": value for key, value in boundary(name, config, seeds).as_arrays().items()})
    return arrays


def reference_from_arrays(arrays: dict[str, np.ndarray]) -> Reference:
    """Unpack what `reference_arrays` stored (metrics an arm lacks, NaN in the file, are left out)."""
    config = Config()
    arms = [str(a) for a in arrays["arms"]]
    names = [str(n) for n in arrays["names"]]
    workloads = [str(w) for w in arrays["workloads"]]
    grid = arrays["metrics"]
    results = []
    for i, seed in enumerate(arrays["seeds"]):
        metrics = {
            arm: {n: float(grid[i, j, k]) for k, n in enumerate(names) if np.isfinite(grid[i, j, k])}
            for j, arm in enumerate(arms)
        }
        oracle = {w: str(p) for w, p in zip(workloads, arrays["oracle_plan"][i], strict=True)}
        results.append(Result(config, int(seed), metrics, {}, oracle, str(arrays["best_static"][i]), {}, None))

    def unpack(name: str) -> Boundary:
        prefix = f"{name}_"
        return Boundary.from_arrays({k.removeprefix(prefix): v for k, v in arrays.items() if k.startswith(prefix)})

    return Reference(results, *(unpack(name) for name in BOUNDARIES))


def reference() -> Reference:
    """The committed results of the default configuration on the book's seeds (checksum-verified)."""
    from toyscale.datasets import ARTIFACTS

    return reference_from_arrays(ARTIFACTS["fangorn_results"].load())
