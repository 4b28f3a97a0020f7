"""The committed results (`data/genmm/combatvla_results.npz`): every arm of five seeds of the default configuration.

Five seeds take longer than the chapter's page may, so the notebook runs seed 0 live, sets every
arm beside the file, and reads the claims' seeds, the per-seed sweeps over the cost per token (the
latency boundary) and the break-even costs from it. The trained full and truncated models differ
from one CPU to another (floating-point kernels), so the file records the machine that made it; the
claims are calibrated to hold on any machine's seeds. Whether the file is current is decided by its
fingerprint (`toyscale.datasets`), never by a rerun. The tests and `python -m toyscale reproduce
combatvla` recompute everything and never read the file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from toyscale.core import BOOK_SEEDS
from toyscale.core.environment import environment

from .experiment import Config, Result, budgets_of_metrics, run

#: The rows of the file: the played arms, the chosen ones, the references and the tracker.
ROWS = ("none", "full", "ahead", "truncated", "multi_call", "expert", "random", "tracker")
SWEPT = ("none", "full", "ahead", "truncated", "multi_call", "expert", "random")


#: The costs per decoded token (game ticks) the committed results sweep: from paused, where the real-time
#: effect must vanish, past full AoT's one-tick lag (0.125) to a three-tick lag (0.375). The latency-aware arm
#: is trained for each cost's lead (1, 2 and 3 ticks), so the sweep stops where the recorded leads end.
SWEEP_COSTS = (0.0, 0.0625, 0.125, 0.25, 0.375)


def sweep_config() -> Config:
    """The default configuration, played at every cost of `SWEEP_COSTS` (training and the claim cost unchanged)."""
    return replace(Config(), costs=SWEEP_COSTS)


def _metric_names(results: Sequence[Result]) -> list[str]:
    return sorted({name for r in results for row in ROWS for name in r.metrics.get(row, {})})


def reference_arrays(seeds: Sequence[int] = BOOK_SEEDS) -> dict[str, np.ndarray]:
    """Run the default configuration for `seeds` and pack every arm's metrics and sweep into arrays.

    values (seeds, ROWS, metrics) as float64 and present (same shape, bool: the row has that metric;
    a present value may be NaN, the no-thought arm's benchmark average), the metric names, the
    seeds, the costs, sweep (seeds, SWEPT, costs), and the environment that made them (JSON).
    """
    results = [run(sweep_config(), seed=s) for s in seeds]
    names = _metric_names(results)
    values = np.full((len(results), len(ROWS), len(names)), np.nan)
    present = np.zeros(values.shape, dtype=bool)
    for i, result in enumerate(results):
        for j, row in enumerate(ROWS):
            for k, name in enumerate(names):
                if name in result.metrics.get(row, {}):
                    values[i, j, k] = result.metrics[row][name]
                    present[i, j, k] = True
    sweep = np.array([[r.sweep[arm] for arm in SWEPT] for r in results], dtype=np.float64)
    env = {key: value for key, value in environment().items() if key != "git_commit"}
    return {
        "seeds": np.array(seeds, dtype=np.int64),
        "metrics": np.array(names),
        "values": values,
        "present": present,
        "costs": np.array(results[0].costs, dtype=np.float64),
        "sweep": sweep,
        "environment": np.array(json.dumps(env, sort_keys=True)),
    }


def results_from_arrays(arrays: dict[str, np.ndarray]) -> list[Result]:
    """The per-seed Results stored by `reference_arrays`: their metrics and sweeps (no story, history or benchmark)."""
    for key in ("seeds", "metrics", "values", "present", "costs", "sweep"):
        if key not in arrays:
            raise ValueError(f"the CombatVLA results need the array {key!r}; rebuild the file")
    names = arrays["metrics"].tolist()
    config = sweep_config()
    costs = arrays["costs"].tolist()
    results = []
    for i, seed in enumerate(arrays["seeds"].tolist()):
        metrics = {
            row: {name: float(arrays["values"][i, j, k]) for k, name in enumerate(names) if arrays["present"][i, j, k]}
            for j, row in enumerate(ROWS)
        }
        sweep = {arm: arrays["sweep"][i, j].tolist() for j, arm in enumerate(SWEPT)}
        budgets = budgets_of_metrics(metrics, config.steps)
        results.append(Result(config, seed, costs, metrics, sweep, {}, {}, {}, {}, budgets))
    return results


def reference_environment() -> dict[str, str]:
    """The environment (versions, CPU) the committed results were computed in."""
    from toyscale.datasets import ARTIFACTS

    return json.loads(str(ARTIFACTS["combatvla_results"].load()["environment"]))


def reference_results() -> list[Result]:
    """The committed results of the default configuration (data/genmm/combatvla_results.npz)."""
    from toyscale.datasets import ARTIFACTS

    return results_from_arrays(ARTIFACTS["combatvla_results"].load())
