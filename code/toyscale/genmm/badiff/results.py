"""The committed results (`data/genmm/badiff_results.npz`): what the notebook shows but cannot recompute in budget.

Five book seeds of the default configuration (the claims table), and the two sweeps of the boundary
(CLAIMS.md §7): BADiff against naive early stopping and a shorter sampler across the compute (the
speed-up over full sampling, the headline's boundary, with the chapter's operating point before the
re-audit beside it), and the hinge's cut across the target rate. Rebuild with `python -m toyscale data
--rebuild badiff_results`. The tests and `reproduce` recompute everything and never read this file;
whether it is current is decided by its fingerprint (`toyscale.datasets`), never by a rerun.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toyscale.core import BOOK_SEEDS
from toyscale.core.boundary import Boundary

from .experiment import (
    ARMS,
    CONTROL_ARMS,
    DIAGNOSTICS,
    METRICS,
    MODELS,
    Config,
    Result,
    bandwidth_boundary,
    compute_boundary,
    run,
)

#: Target rates of the bandwidth sweep: from budgets every digit fits at its design level to the tightest.
BANDWIDTH_POINTS = (0.8, 1.0, 1.1, 1.3, 1.4)
#: Speed-ups of the compute sweep: none (full sampling), mild, the paper's (the regime) and beyond.
SPEEDUPS = (1.0, 1.25, 1.7, 2.5)
#: The label weight γ of the chapter's operating point before the re-audit: a point of the compute sweep.
PREVIOUS_GAMMA = 0.3


@dataclass
class Reference:
    """The committed results, unpacked: per-seed Results (numbers only) and the boundaries."""

    results: list[Result]
    bandwidth: Boundary
    binding: np.ndarray  # (points, seeds): the plain model's over-budget share at each bandwidth point
    compute: dict[str, Boundary]  # 'naive', 'strided': Δ FD (alternative − BADiff) across the speed-up
    previous: np.ndarray  # (seeds, 3): mean evaluations, Δ vs naive, Δ vs strided at γ = PREVIOUS_GAMMA


def reference_arrays(seeds: Sequence[int] = BOOK_SEEDS, config: Config | None = None) -> dict[str, np.ndarray]:
    """Run the default configuration (or `config`) on `seeds` and pack the claims' numbers and the boundaries."""
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
    budget_arms = list(results[0].budgets)
    compute, previous = compute_boundary(config, SPEEDUPS, tuple(seeds), PREVIOUS_GAMMA)
    bandwidth, binding = bandwidth_boundary(config, BANDWIDTH_POINTS, tuple(seeds))
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
        "gammas": np.array([r.gammas for r in results], dtype=np.float64),  # (seeds, targets)
        "thresholds": np.array([r.thresholds for r in results], dtype=np.float64),  # (seeds, targets)
        "steps_used": np.array([[r.steps_used[m] for m in MODELS] for r in results], dtype=np.int64),
        "budget_arms": np.array(budget_arms),
        "budgets": np.array([[r.budgets[a] for a in budget_arms] for r in results], dtype=np.int64),
        "binding": binding,
        "previous": previous,
    }
    arrays.update({f"bandwidth_{key}": value for key, value in bandwidth.as_arrays().items()})
    for name, boundary in compute.items():
        arrays.update({f"compute_{name}_{key}": value for key, value in boundary.as_arrays().items()})
    return arrays


def reference_from_arrays(arrays: dict[str, np.ndarray], config: Config | None = None) -> Reference:
    """Unpack what `reference_arrays` stored (made with the default configuration, or `config`)."""
    config = config or Config()
    arms = [str(a) for a in arrays["arms"]]
    names = [str(n) for n in arrays["metric_names"]]
    budget_arms = [str(a) for a in arrays["budget_arms"]]
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
                budgets={a: (int(u), int(lim)) for a, (u, lim) in zip(budget_arms, arrays["budgets"][i], strict=True)},
                gammas=arrays["gammas"][i].tolist(),
                thresholds=arrays["thresholds"][i].tolist(),
            )
        )

    def boundary(prefix: str) -> Boundary:
        return Boundary.from_arrays({k.removeprefix(prefix): v for k, v in arrays.items() if k.startswith(prefix)})

    compute = {name: boundary(f"compute_{name}_") for name in ("naive", "strided")}
    return Reference(
        results, boundary("bandwidth_"), np.asarray(arrays["binding"]), compute, np.asarray(arrays["previous"])
    )


def reference() -> Reference:
    """The committed results of the default configuration on the book's seeds (checksum-verified)."""
    from toyscale.datasets import ARTIFACTS

    return reference_from_arrays(ARTIFACTS["badiff_results"].load())
