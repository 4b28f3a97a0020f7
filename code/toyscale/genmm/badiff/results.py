"""The committed results (`data/genmm/badiff_results.npz`): what the notebook shows but cannot recompute in budget.

Five book seeds of the default configuration (the claims table), and the two sweeps of the boundary
(CLAIMS.md §7): the hinge's cut across the target rate, and the cost of naive early stopping across
the training budget. Rebuild with `python -m toyscale data --rebuild badiff_results`. The tests and
`reproduce` recompute everything and never read this file; whether it is current is decided by its
fingerprint (`toyscale.datasets`), never by a rerun.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toyscale.core import BOOK_SEEDS
from toyscale.core.boundary import Boundary, sweep

from .experiment import (
    ARMS,
    CONTROL_ARMS,
    DIAGNOSTICS,
    METRICS,
    MODELS,
    Config,
    Result,
    bandwidth_boundary,
    naive_gap,
    run,
)

#: Target rates of the bandwidth sweep: from budgets every digit fits at its design level to the tightest.
BANDWIDTH_POINTS = (0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.6)
#: Adam steps per denoiser of the training-budget sweep (the default trains 1,200).
BUDGETS = (300, 600, 1200, 2400)
#: Where the budget sweep's naive arm stops: 40 of the T = 50 steps, about where BADiff's policy stops.
NAIVE_STOP = 40


@dataclass
class Reference:
    """The committed results, unpacked: per-seed Results (numbers only) and the two boundaries."""

    results: list[Result]
    bandwidth: Boundary
    binding: np.ndarray  # (points, seeds): the plain model's over-budget share at each bandwidth point
    budget: Boundary


def budget_boundary(config: Config, seeds: Sequence[int]) -> Boundary:
    """FD(naive at `NAIVE_STOP`) − FD(cascade) of the plain model across its training budget."""
    return sweep(
        lambda budget, seed: naive_gap(config, int(budget), seed, NAIVE_STOP),
        BUDGETS,
        seeds,
        parameter="training budget (Adam steps per denoiser)",
        delta_name=f"Δ FD (naive at {NAIVE_STOP} of {config.steps} steps − cascade)",
    )


def reference_arrays(seeds: Sequence[int] = BOOK_SEEDS, config: Config | None = None) -> dict[str, np.ndarray]:
    """Run the default configuration (or `config`) on `seeds` and pack the claims' numbers and both boundaries."""
    config = config or Config()
    results = [run(config, seed=seed) for seed in seeds]
    arms = [*ARMS, *DIAGNOSTICS, *CONTROL_ARMS]
    metrics = np.full((len(results), len(arms), len(METRICS)), np.nan)
    by_target = np.full((len(results), len(ARMS) + len(DIAGNOSTICS), len(METRICS), len(config.targets)), np.nan)
    for i, result in enumerate(results):
        for j, arm in enumerate(arms):
            for k, name in enumerate(METRICS):
                metrics[i, j, k] = result.metrics[arm].get(name, np.nan)
                if arm in result.by_target:
                    by_target[i, j, k] = result.by_target[arm][name]
    stops = np.array([[[np.mean(s), np.std(s), np.mean(np.asarray(s) <= 10)] for s in r.stop_steps] for r in results])
    labels = np.array([[[np.mean(s), np.std(s)] for s in r.label_steps] for r in results])
    bandwidth, binding = bandwidth_boundary(config, BANDWIDTH_POINTS, tuple(seeds))
    budget = budget_boundary(config, seeds)
    arrays = {
        "seeds": np.asarray(seeds, dtype=np.int64),
        "targets": np.asarray(config.targets, dtype=np.float64),
        "design_levels": np.asarray(results[0].design_levels, dtype=np.int64),
        "arms": np.array(arms),
        "metric_names": np.array(METRICS),
        "metrics": metrics,
        "by_target": by_target,
        "stops": stops,  # (seeds, targets, [mean, sd, share ≤ 10 evaluations]) of BADiff's policy
        "labels": labels,  # (seeds, targets, [mean, sd]) of the label steps k*
        "steps_used": np.array([[r.steps_used[m] for m in MODELS] for r in results], dtype=np.int64),
        "binding": binding,
    }
    arrays.update({f"bandwidth_{key}": value for key, value in bandwidth.as_arrays().items()})
    arrays.update({f"budget_{key}": value for key, value in budget.as_arrays().items()})
    return arrays


def reference_from_arrays(arrays: dict[str, np.ndarray], config: Config | None = None) -> Reference:
    """Unpack what `reference_arrays` stored (made with the default configuration, or `config`)."""
    config = config or Config()
    arms = [str(a) for a in arrays["arms"]]
    names = [str(n) for n in arrays["metric_names"]]
    results = []
    for i, seed in enumerate(arrays["seeds"]):
        grid = arrays["metrics"][i]
        metrics = {
            arm: {n: float(grid[j, k]) for k, n in enumerate(names) if not np.isnan(grid[j, k])}
            for j, arm in enumerate(arms)
        }
        by_target = {
            arm: {n: arrays["by_target"][i, j, k].tolist() for k, n in enumerate(names)}
            for j, arm in enumerate(arms[: arrays["by_target"].shape[1]])
        }
        results.append(
            Result(
                config=config,
                seed=int(seed),
                targets=arrays["targets"].tolist(),
                metrics=metrics,
                by_target=by_target,
                design_levels=arrays["design_levels"].tolist(),
                steps_used={m: int(s) for m, s in zip(MODELS, arrays["steps_used"][i], strict=True)},
            )
        )

    def boundary(prefix: str) -> Boundary:
        return Boundary.from_arrays({k.removeprefix(prefix): v for k, v in arrays.items() if k.startswith(prefix)})

    return Reference(results, boundary("bandwidth_"), np.asarray(arrays["binding"]), boundary("budget_"))


def reference() -> Reference:
    """The committed results of the default configuration on the book's seeds (checksum-verified)."""
    from toyscale.datasets import ARTIFACTS

    return reference_from_arrays(ARTIFACTS["badiff_results"].load())
