"""The committed results: every arm's metrics for five seeds of the default configuration.

Three seeds take longer than the chapter's page may (about 18 s each on a laptop core), so the
notebook runs seed 0 live, checks it against the file, and reads the claims' seeds from it. The
tests and `python -m toyscale reproduce combatvla` recompute everything and never read the file.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .experiment import Config, Result, run

REFERENCE_SEEDS = (0, 1, 2, 3, 4)
ROWS = ("none", "full", "truncated", "multi_call", "expert", "random", "tracker")  # arms, then the tracker


def _metric_names(results: Sequence[Result]) -> list[str]:
    return sorted({name for r in results for row in ROWS for name in r.metrics[row]})


def reference_arrays(seeds: Sequence[int] = REFERENCE_SEEDS) -> dict[str, np.ndarray]:
    """Run the default configuration for `seeds` and pack every arm's metrics into arrays.

    values (seeds, ROWS, metrics) as float64 and present (same shape, bool: the row has that
    metric; a present value may be NaN, the no-thought arm's benchmark average), the metric
    names as a unicode array, and the seeds.
    """
    results = [run(Config(), seed=s) for s in seeds]
    names = _metric_names(results)
    values = np.full((len(results), len(ROWS), len(names)), np.nan)
    present = np.zeros(values.shape, dtype=bool)
    for i, result in enumerate(results):
        for j, row in enumerate(ROWS):
            for k, name in enumerate(names):
                if name in result.metrics[row]:
                    values[i, j, k] = result.metrics[row][name]
                    present[i, j, k] = True
    return {"seeds": np.array(seeds, dtype=np.int64), "metrics": np.array(names), "values": values, "present": present}


def results_from_arrays(arrays: dict[str, np.ndarray]) -> list[Result]:
    """The per-seed Results stored by `reference_arrays`: their metrics only (no sweep, story or history)."""
    for key in ("seeds", "metrics", "values", "present"):
        if key not in arrays:
            raise ValueError(f"the CombatVLA results need the array {key!r}; rebuild the file")
    names = arrays["metrics"].tolist()
    config = Config()
    results = []
    for i, seed in enumerate(arrays["seeds"].tolist()):
        metrics = {
            row: {name: float(arrays["values"][i, j, k]) for k, name in enumerate(names) if arrays["present"][i, j, k]}
            for j, row in enumerate(ROWS)
        }
        results.append(Result(config, seed, list(config.costs), metrics, {}, {}, {}, {}))
    return results


def reference_results() -> list[Result]:
    """The committed results of the default configuration (data/genmm/combatvla_results.npz)."""
    from toyscale.datasets import ARTIFACTS

    return results_from_arrays(ARTIFACTS["combatvla_results"].load())
