"""The committed results (`data/llm/dcpt_results.npz`): what the notebook shows but cannot recompute in budget.

The metrics of the default configuration on the book's five grid seeds (the claims table) and the
extrapolation boundary over those seeds (CLAIMS.md §7). Rebuild with
`python -m toyscale data --rebuild dcpt_results` (about a minute of CPU: fits only, on the
committed grids). The tests and `reproduce` recompute everything and never read this file; a
test reruns a slice and compares.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toyscale.core import BOOK_SEEDS
from toyscale.core.boundary import Boundary

from .experiment import Config, Result, extrapolation_boundary, held_out_ratio_draw, run

#: Checkpoints the boundary fits on: from 7 of 8 (nothing to extrapolate) down to the first 2.
BOUNDARY_CHECKPOINTS = (7, 6, 5, 4, 3, 2)


@dataclass
class Reference:
    """The committed results, unpacked: per-seed Results (metrics only) and the boundary."""

    results: list[Result]
    boundary: Boundary


def reference_arrays(seeds: Sequence[int] = BOOK_SEEDS) -> dict[str, np.ndarray]:
    """Run the default configuration on `seeds`; pack every metric and the extrapolation boundary."""
    config = Config()
    results = [run(config, seed=s) for s in seeds]
    tables = sorted({t for r in results for t in r.metrics})
    keys = sorted({f"{t}/{m}" for r in results for t in r.metrics for m in r.metrics[t]})
    values = np.full((len(results), len(keys)), np.nan)
    for i, result in enumerate(results):
        for j, key in enumerate(keys):
            table, metric = key.split("/")
            values[i, j] = result.metrics.get(table, {}).get(metric, np.nan)
    boundary = extrapolation_boundary(config, BOUNDARY_CHECKPOINTS, seeds)
    arrays = {
        "seeds": np.asarray(seeds, dtype=np.int64),
        "tables": np.array(tables),
        "keys": np.array(keys),
        "values": values,
    }
    arrays.update({f"boundary_{key}": value for key, value in boundary.as_arrays().items()})
    return arrays


def reference_from_arrays(arrays: dict[str, np.ndarray]) -> Reference:
    """Unpack what `reference_arrays` stored."""
    config = Config()
    keys = [str(k) for k in arrays["keys"]]
    results = []
    for i, seed in enumerate(arrays["seeds"]):
        metrics: dict[str, dict[str, float]] = {str(t): {} for t in arrays["tables"]}
        for j, key in enumerate(keys):
            if not np.isnan(arrays["values"][i, j]):
                table, metric = key.split("/")
                metrics[table][metric] = float(arrays["values"][i, j])
        ratios = held_out_ratio_draw(config.grid.ratios, config.held_out_ratios, int(seed))
        results.append(Result(config=config, seed=int(seed), held_out_ratios=ratios, metrics=metrics))
    boundary = Boundary.from_arrays(
        {key.removeprefix("boundary_"): value for key, value in arrays.items() if key.startswith("boundary_")}
    )
    return Reference(results, boundary)


def reference() -> Reference:
    """The committed results of the default configuration on the book's seeds (checksum-verified)."""
    from toyscale.datasets import ARTIFACTS

    return reference_from_arrays(ARTIFACTS["dcpt_results"].load())
