"""The committed results (`data/systems/fangorn_results.npz`): what the notebook shows without recomputing it.

Five book seeds of the default configuration (the claims table and the attribution table) and the
two boundary sweeps (CLAIMS.md §7): the hot-key split's cut over the Zipf exponent of the keys, and
the join plug-in's cut over the side size the optimizer assumes. The replay uses the committed cost
model, so the same code gives the same numbers on any machine. Rebuild with `python -m toyscale data
--rebuild fangorn_results` (about a minute on one core). The tests and `reproduce` recompute
everything and never read this file; whether it is current is decided by its fingerprint
(`toyscale.datasets`), never by a rerun.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toyscale.core import BOOK_SEEDS
from toyscale.core.boundary import Boundary, sweep

from .experiment import ESTIMATE_POINTS, SKEW_POINTS, Config, Result, estimate_delta, run, skew_delta

SKEW_PARAMETER = "Zipf exponent a of the keys"
ESTIMATE_PARAMETER = "flagged share of the small side the optimizer assumes (real: 0.01)"


@dataclass
class Reference:
    """The committed results, unpacked: per-seed Results (numbers only) and the two boundaries."""

    results: list[Result]
    skew: Boundary
    estimate: Boundary


def skew_boundary(config: Config, points: Sequence[float], seeds: Sequence[int]) -> Boundary:
    return sweep(
        lambda a, seed: skew_delta(config, seed, a),
        points,
        seeds,
        parameter=SKEW_PARAMETER,
        delta_name="job-time cut on the hot-key job, adaptive vs the oracle",
    )


def estimate_boundary(config: Config, points: Sequence[float], seeds: Sequence[int]) -> Boundary:
    return sweep(
        lambda e, seed: estimate_delta(config, seed, e),
        points,
        seeds,
        parameter=ESTIMATE_PARAMETER,
        delta_name="job-time cut on the small-side join, real size vs estimate",
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
    for name, boundary in (
        ("skew", skew_boundary(config, SKEW_POINTS, seeds)),
        ("estimate", estimate_boundary(config, ESTIMATE_POINTS, seeds)),
    ):
        arrays.update({f"{name}_{key}": value for key, value in boundary.as_arrays().items()})
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

    def boundary(name: str) -> Boundary:
        prefix = f"{name}_"
        return Boundary.from_arrays({k.removeprefix(prefix): v for k, v in arrays.items() if k.startswith(prefix)})

    return Reference(results, boundary("skew"), boundary("estimate"))


def reference() -> Reference:
    """The committed results of the default configuration on the book's seeds (checksum-verified)."""
    from toyscale.datasets import ARTIFACTS

    return reference_from_arrays(ARTIFACTS["fangorn_results"].load())
