"""The committed results (`data/recsys/picasso_results.npz`): what the notebook shows, not recomputed.

Five book seeds of the default configuration (the claims table, the phase table) and the boundaries
(CLAIMS.md §7): the packing speed-up at each number of fields F (from the same five runs), the fast
tier's traffic cut across the skew of the ids, and LRU's edge over a static hot set (each tuned on
validation) across the drift of the hot set, the caching effect's boundary. The timings are a dated
measurement of the machine that built the file (the card says which); the traffic numbers are exact on
any machine. Rebuild with `python -m toyscale data --rebuild picasso_results` (a few minutes on one
core). The tests and `reproduce` recompute everything and never read this file; whether it is current is
decided by its fingerprint (`toyscale.datasets`), never by a rerun.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toyscale.core import BOOK_SEEDS
from toyscale.core.boundary import Boundary, sweep

from .experiment import DRIFT_POINTS, SKEW_POINTS, Config, Result, drift_delta, run, skew_delta
from .timing import PHASES


@dataclass
class Reference:
    """The committed results, unpacked: per-seed Results (metrics and phases) and the three boundaries."""

    results: list[Result]
    fields: Boundary
    skew: Boundary
    drift: Boundary


def fields_boundary(results: Sequence[Result]) -> Boundary:
    """The packing speed-up − 1 at every F of the runs (no extra run: each run times every F)."""
    counts = results[0].field_counts
    deltas = np.array([[r.metrics["packed_speedup"][f"ratio_F{f}"] - 1 for r in results] for f in counts])
    return Boundary(
        "number of feature fields F",
        tuple(float(f) for f in counts),
        tuple(r.seed for r in results),
        deltas,
        "packed speed-up − 1 (per-field / packed step time)",
    )


def reference_arrays(seeds: Sequence[int] = BOOK_SEEDS) -> dict[str, np.ndarray]:
    """Run the default configuration on `seeds`; pack every metric, the phases, and the boundaries."""
    config = Config()
    results = [run(config, seed=s) for s in seeds]
    arms = sorted(results[0].metrics)
    names = sorted({n for r in results for m in r.metrics.values() for n in m})
    grid = np.array([[[r.metrics[a].get(n, np.nan) for n in names] for a in arms] for r in results])
    phases = np.array(
        [
            [[[r.phases[arm][f][p] for p in PHASES] for f in config.field_counts] for arm in ("per_field", "packed")]
            for r in results
        ]
    )
    arrays: dict[str, np.ndarray] = {
        "seeds": np.asarray(seeds, dtype=np.int64),
        "arms": np.array(arms),
        "names": np.array(names),
        "metrics": grid.astype(np.float64),
        "phases": phases.astype(np.float64),
        "policy": np.array([r.policy for r in results]),
        "identical": np.array([r.identical_models for r in results]),
    }
    for name, boundary in (
        (
            "skew",
            sweep(
                lambda s, seed: skew_delta(config, seed, s),
                SKEW_POINTS,
                seeds,
                parameter="Zipf exponent s of the ids",
                delta_name="slow-link rows cut by the fast tier",
            ),
        ),
        (
            "drift",
            sweep(
                lambda d, seed: drift_delta(config, seed, d),
                DRIFT_POINTS,
                seeds,
                parameter="share of ranks that trade ids per segment",
                delta_name="Δ traffic cut (LRU − static), each tuned on validation",
            ),
        ),
    ):
        arrays.update({f"{name}_{key}": value for key, value in boundary.as_arrays().items()})
    return arrays


def reference_from_arrays(arrays: dict[str, np.ndarray]) -> Reference:
    """Unpack what `reference_arrays` stored (metrics an arm lacks, NaN in the file, are left out)."""
    config = Config()
    arms = [str(a) for a in arrays["arms"]]
    names = [str(n) for n in arrays["names"]]
    results = []
    for i, seed in enumerate(arrays["seeds"]):
        grid = arrays["metrics"][i]
        metrics = {
            a: {n: float(grid[j, k]) for k, n in enumerate(names) if np.isfinite(grid[j, k])}
            for j, a in enumerate(arms)
        }
        metrics = {a: m for a, m in metrics.items() if m}
        phases = {
            arm: {
                f: dict(zip(PHASES, map(float, arrays["phases"][i, a, k]), strict=True))
                for k, f in enumerate(config.field_counts)
            }
            for a, arm in enumerate(("per_field", "packed"))
        }
        result = Result(config, int(seed), metrics, field_counts=list(config.field_counts), phases=phases)
        result.speedup = [metrics["packed_speedup"][f"ratio_F{f}"] for f in config.field_counts]
        result.policy, result.identical_models = str(arrays["policy"][i]), bool(arrays["identical"][i])
        results.append(result)

    def boundary(name: str) -> Boundary:
        prefix = f"{name}_"
        return Boundary.from_arrays({k.removeprefix(prefix): v for k, v in arrays.items() if k.startswith(prefix)})

    return Reference(results, fields_boundary(results), boundary("skew"), boundary("drift"))


def reference() -> Reference:
    """The committed results of the default configuration on the book's seeds (checksum-verified)."""
    from toyscale.datasets import ARTIFACTS

    return reference_from_arrays(ARTIFACTS["picasso_results"].load())
