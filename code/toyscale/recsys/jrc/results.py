"""The committed results (`data/recsys/jrc_results.npz`): what the notebook shows but cannot recompute in budget.

Five book seeds of the default configuration (the claims table), the ranking-weight sweep over those
seeds, and the two mechanisms' boundaries (CLAIMS.md §7). Rebuild with `python -m toyscale data
--rebuild jrc_results` (about six minutes on one core). The tests and `reproduce` recompute
everything and never read this file; whether it is current is decided by its fingerprint
(`toyscale.datasets`), never by a rerun.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toyscale.core import BOOK_SEEDS
from toyscale.core.boundary import Boundary

from .experiment import ACTIVITY_NAMES, BOUNDARIES, Config, Result, gain_boundary, ranking_weight_sweep, run

#: Ranking weights 1 − α of the sweep (0.5 is the paper's default α).
SWEEP_WEIGHTS = (0.25, 0.5, 0.75, 0.9)
#: Each mechanism's boundary, as multiples of the regime's value of the knob it sweeps: the page shift σ_z
#: at γ = 0 and the confounding γ at the regime's σ_z, each from none to twice the regime's (the regime,
#: the chapter's world before the re-audit too, is a point of both).
BOUNDARY_MULTIPLES = (0.0, 0.5, 1.0, 2.0)


def boundary_points(mechanism: str, config: Config | None = None) -> tuple[float, ...]:
    """The points of one mechanism's boundary sweep (`BOUNDARY_MULTIPLES` of the regime's value)."""
    knob = BOUNDARIES[mechanism][0]
    regime = getattr((config or Config()).world, knob)
    return tuple(m * regime for m in BOUNDARY_MULTIPLES)


SWEEP_METHODS = ("jrc", "combined")


@dataclass
class Reference:
    """The committed results, unpacked: per-seed Results (metrics only), the weight sweep and the boundary."""

    results: list[Result]
    weights: tuple[float, ...]
    sweep: dict[str, dict[str, np.ndarray]]  # metric -> method -> (seeds, weights)
    boundaries: dict[str, Boundary]  # mechanism -> its boundary (see experiment.BOUNDARIES)


def reference_arrays(seeds: Sequence[int] = BOOK_SEEDS) -> dict[str, np.ndarray]:
    """Run the default configuration on `seeds` and pack the claims' numbers, the sweep and the boundary."""
    config = Config()
    results = [run(config, seed=s) for s in seeds]
    arms = list(results[0].metrics)
    names = sorted({name for r in results for table in (r.metrics, r.calibrated) for m in table.values() for name in m})
    grids = {}
    for table in ("metrics", "calibrated"):
        grid = np.full((len(results), len(arms), len(names)), np.nan)
        for i, result in enumerate(results):
            for j, arm in enumerate(arms):
                for k, name in enumerate(names):
                    grid[i, j, k] = getattr(result, table)[arm].get(name, np.nan)
        grids[table] = grid
    activity_arms = list(results[0].by_activity)
    sweeps = [ranking_weight_sweep(config, s, SWEEP_WEIGHTS) for s in seeds]
    boundaries = {name: gain_boundary(config, name, boundary_points(name, config), seeds) for name in BOUNDARIES}
    arrays = {
        "seeds": np.asarray(seeds, dtype=np.int64),
        "arms": np.array(arms),
        "metric_names": np.array(names),
        "metrics": grids["metrics"],
        "calibrated": grids["calibrated"],
        "activity_arms": np.array(activity_arms),
        "by_activity": np.array([[r.by_activity[a] for a in activity_arms] for r in results]),
        "activity_counts": np.array([r.activity_counts for r in results], dtype=np.int64),
        "sweep_weights": np.asarray(SWEEP_WEIGHTS, dtype=np.float64),
        "sweep_methods": np.array(SWEEP_METHODS),
        "sweep_gauc": np.array([[s[m]["gauc"] for m in SWEEP_METHODS] for s in sweeps]),
        "sweep_log_loss": np.array([[s[m]["log_loss"] for m in SWEEP_METHODS] for s in sweeps]),
    }
    for name, boundary in boundaries.items():
        arrays.update({f"boundary_{name}_{key}": value for key, value in boundary.as_arrays().items()})
    return arrays


def reference_from_arrays(arrays: dict[str, np.ndarray]) -> Reference:
    """Unpack what `reference_arrays` stored."""
    config = Config()
    arms = [str(a) for a in arrays["arms"]]
    names = [str(n) for n in arrays["metric_names"]]
    activity_arms = [str(a) for a in arrays["activity_arms"]]

    def table(grid: np.ndarray, i: int) -> dict[str, dict[str, float]]:
        return {
            arm: {name: float(grid[i, j, k]) for k, name in enumerate(names) if not np.isnan(grid[i, j, k])}
            for j, arm in enumerate(arms)
        }

    results = [
        Result(
            config=config,
            seed=int(seed),
            metrics=table(arrays["metrics"], i),
            calibrated=table(arrays["calibrated"], i),
            by_activity={a: arrays["by_activity"][i, j].tolist() for j, a in enumerate(activity_arms)},
            activity_names=list(ACTIVITY_NAMES),
            activity_counts=arrays["activity_counts"][i].tolist(),
        )
        for i, seed in enumerate(arrays["seeds"])
    ]
    methods = [str(m) for m in arrays["sweep_methods"]]
    sweep = {
        metric: {m: arrays[f"sweep_{metric}"][:, j, :] for j, m in enumerate(methods)}
        for metric in ("gauc", "log_loss")
    }
    boundaries = {
        name: Boundary.from_arrays(
            {
                key.removeprefix(f"boundary_{name}_"): v
                for key, v in arrays.items()
                if key.startswith(f"boundary_{name}_")
            }
        )
        for name in BOUNDARIES
    }
    return Reference(results, tuple(float(w) for w in arrays["sweep_weights"]), sweep, boundaries)


def reference() -> Reference:
    """The committed results of the default configuration on the book's seeds (checksum-verified)."""
    from toyscale.datasets import ARTIFACTS

    return reference_from_arrays(ARTIFACTS["jrc_results"].load())
