"""The committed results (`data/llm/dcpt_results.npz`): what the notebook shows but cannot recompute in budget.

The metrics of the default configuration on the book's five grid seeds (the claims table) and the
boundaries over the book's seeds (CLAIMS.md §7): how far the held-out runs lie from the fitted range
in the mixture ratio, the tokens and the model size, each against the law-free predictor and against
the law without its interaction term. Rebuild with `python -m toyscale data --rebuild dcpt_results`
(a few minutes of CPU: fits only, on the committed grids). The tests and `reproduce` recompute
everything and never read this file; whether it is current is decided by its fingerprint
(`toyscale.datasets`), never by a rerun.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toyscale.core import BOOK_SEEDS
from toyscale.core.boundary import Boundary

from .experiment import (
    AXIS_COMPARISONS,
    Config,
    Result,
    extrapolation_boundary,
    held_out_ratio_draw,
    ratio_boundary,
    run,
    size_boundary,
)

#: The swept axes: how far the held-out runs lie from the fitted range.
AXES = ("ratio", "tokens", "size")
#: Checkpoints the tokens boundary fits on: from 7 of 8 (nothing to extrapolate) down to the first 2.
BOUNDARY_CHECKPOINTS = (7, 6, 5, 4, 3, 2)
#: Grid steps of r between the held-out ratio and the fitted ones: 0 (inside) up to 6 (only r ≤ 1/4 fitted).
BOUNDARY_RATIO_STEPS = (0, 1, 2, 3, 4, 5, 6)


@dataclass
class Reference:
    """The committed results, unpacked: per-seed Results (metrics only) and the boundaries.

    results: the book's seeds; boundaries[axis][comparison]: axis in `AXES`, comparison in
    `AXIS_COMPARISONS[axis]` ('law_free', 'per_ratio', 'no_interaction'; in r also 'linear').
    """

    results: list[Result]
    boundaries: dict[str, dict[str, Boundary]]


def _pack(results: Sequence[Result], prefix: str) -> dict[str, np.ndarray]:
    """Every metric of `results` as one (seeds, keys) array, with the seeds, tables and keys, names `prefix`ed."""
    tables = sorted({t for r in results for t in r.metrics})
    keys = sorted({f"{t}/{m}" for r in results for t in r.metrics for m in r.metrics[t]})
    values = np.full((len(results), len(keys)), np.nan)
    for i, result in enumerate(results):
        for j, key in enumerate(keys):
            table, metric = key.split("/")
            values[i, j] = result.metrics.get(table, {}).get(metric, np.nan)
    return {
        f"{prefix}seeds": np.asarray([r.seed for r in results], dtype=np.int64),
        f"{prefix}tables": np.array(tables),
        f"{prefix}keys": np.array(keys),
        f"{prefix}values": values,
    }


def _unpack(arrays: dict[str, np.ndarray], prefix: str) -> list[Result]:
    """The Results (metrics only) that `_pack` stored under `prefix`."""
    config = Config()
    keys = [str(k) for k in arrays[f"{prefix}keys"]]
    results = []
    for i, seed in enumerate(arrays[f"{prefix}seeds"]):
        metrics: dict[str, dict[str, float]] = {str(t): {} for t in arrays[f"{prefix}tables"]}
        for j, key in enumerate(keys):
            if not np.isnan(arrays[f"{prefix}values"][i, j]):
                table, metric = key.split("/")
                metrics[table][metric] = float(arrays[f"{prefix}values"][i, j])
        ratios = held_out_ratio_draw(config.grid.ratios, config.held_out_ratios, int(seed))
        results.append(Result(config=config, seed=int(seed), held_out_ratios=ratios, metrics=metrics))
    return results


def reference_arrays(seeds: Sequence[int] = BOOK_SEEDS) -> dict[str, np.ndarray]:
    """Run the default configuration on `seeds`; pack every metric and the boundaries."""
    config = Config()
    arrays = _pack([run(config, seed=s) for s in seeds], "")
    for axis, by_comparison in boundaries_of(config, seeds).items():
        for comparison, boundary in by_comparison.items():
            prefix = f"boundary_{axis}_{comparison}/"
            arrays.update({prefix + key: value for key, value in boundary.as_arrays().items()})
    return arrays


def boundaries_of(config: Config, seeds: Sequence[int]) -> dict[str, dict[str, Boundary]]:
    """The three axes' boundaries on `seeds` (`AXES`), each with both comparisons."""
    return {
        "ratio": ratio_boundary(config, BOUNDARY_RATIO_STEPS, seeds),
        "tokens": extrapolation_boundary(config, BOUNDARY_CHECKPOINTS, seeds),
        "size": size_boundary(config, seeds),
    }


def reference_from_arrays(arrays: dict[str, np.ndarray]) -> Reference:
    """Unpack what `reference_arrays` stored."""
    boundaries: dict[str, dict[str, Boundary]] = {}
    for axis in AXES:
        for comparison in AXIS_COMPARISONS[axis]:
            prefix = f"boundary_{axis}_{comparison}/"
            stored = {key.removeprefix(prefix): value for key, value in arrays.items() if key.startswith(prefix)}
            boundaries.setdefault(axis, {})[comparison] = Boundary.from_arrays(stored)
    return Reference(_unpack(arrays, ""), boundaries)


def reference() -> Reference:
    """The committed results of the default configuration on the book's seeds (checksum-verified)."""
    from toyscale.datasets import ARTIFACTS

    return reference_from_arrays(ARTIFACTS["dcpt_results"].load())
