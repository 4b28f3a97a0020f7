"""The committed results (`data/systems/fapes_results.npz`): what the notebook shows but cannot recompute in budget.

Five book seeds of the default configuration (the claims table, and the attribution table, which
also shows FaPES reclaiming by kills instead of scaling in) and the two boundary sweeps (CLAIMS.md
§7): lending's JCT gain over Pollux-like across the training load, and FaPES's SLO edge over naive
lending across the inference traffic's burstiness. Rebuild with `python -m toyscale data --rebuild
fapes_results` (a few minutes on one core). The tests and `reproduce` recompute everything and never
read this file; whether it is current is decided by its fingerprint (`toyscale.datasets`), never by
a rerun.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toyscale.core import BOOK_SEEDS
from toyscale.core.boundary import Boundary

from .cluster import Config, make_trace
from .experiment import Result, load_boundary, metrics_of, noise_boundary, run
from .simulation import simulate

#: The training loads of the load boundary: from a pool with GPUs to spare to twice the default jobs.
LOAD_POINTS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
#: The std of the log-rate noise of the burstiness boundary (the default is 0.15).
NOISE_POINTS = (0.0, 0.075, 0.15, 0.3, 0.45)
#: The tables of a Result that the file keeps, and the arms each holds.
TABLES = ("metrics", "low", "burst", "matched")
#: The attribution's extra policies: FaPES with its board, reclaiming by kills (what the reclaim rule adds),
#: and FaPES without its board, sizing replicas from the last minutes (what the board adds).
KILLS = "fapes_kills"
REACTIVE = "fapes_reactive"


@dataclass
class Reference:
    """The committed results, unpacked: per-seed Results (numbers only), the two boundaries, and per seed
    the metrics of FaPES reclaiming by kills (`KILLS`) and of FaPES with its board off (`REACTIVE`) at the
    main load."""

    results: list[Result]
    load: Boundary
    noise: Boundary
    kills: list[dict[str, float]]
    reactive: list[dict[str, float]]


def reference_arrays(seeds: Sequence[int] = BOOK_SEEDS) -> dict[str, np.ndarray]:
    """Run the default configuration on `seeds` and pack the claims' numbers and both boundaries."""
    config = Config()
    results = [run(config, seed=s) for s in seeds]
    extra: dict[str, list[dict[str, float]]] = {"kills": [], "reactive": []}
    for seed in seeds:
        trace = make_trace(config, seed)
        for key, policy in (("kills", KILLS), ("reactive", REACTIVE)):
            extra[key].append(metrics_of(simulate(policy, trace, config, seed), trace, config))
    arrays: dict[str, np.ndarray] = {"seeds": np.asarray(seeds, dtype=np.int64)}
    for key, rows in extra.items():
        names = sorted(rows[0])
        arrays[f"{key}_names"] = np.array(names)
        arrays[key] = np.array([[k[n] for n in names] for k in rows], dtype=np.float64)
    for table in TABLES:
        first = getattr(results[0], table)
        arms = list(first)
        names = sorted({name for m in first.values() for name in m})
        grid = np.array(
            [[[getattr(r, table)[a].get(n, np.nan) for n in names] for a in arms] for r in results], dtype=np.float64
        )
        arrays.update({f"{table}_arms": np.array(arms), f"{table}_names": np.array(names), f"{table}": grid})
    for name, boundary in (
        ("load", load_boundary(config, LOAD_POINTS, seeds)),
        ("noise", noise_boundary(config, NOISE_POINTS, seeds)),
    ):
        arrays.update({f"{name}_{key}": value for key, value in boundary.as_arrays().items()})
    return arrays


def reference_from_arrays(arrays: dict[str, np.ndarray]) -> Reference:
    """Unpack what `reference_arrays` stored."""
    config = Config()
    tables = {}
    for table in TABLES:
        arms = [str(a) for a in arrays[f"{table}_arms"]]
        names = [str(n) for n in arrays[f"{table}_names"]]
        grid = arrays[table]
        tables[table] = [
            {arm: {name: float(grid[i, j, k]) for k, name in enumerate(names)} for j, arm in enumerate(arms)}
            for i in range(grid.shape[0])
        ]
    extra = {}
    for key in ("kills", "reactive"):
        names = [str(n) for n in arrays[f"{key}_names"]]
        extra[key] = [{n: float(v) for n, v in zip(names, row, strict=True)} for row in arrays[key]]
    results = [
        Result(
            config,
            int(seed),
            {
                arm: {n: v for n, v in m.items() if not np.isnan(v) or n != "val_mean_jct_min"}
                for arm, m in metrics.items()
            },
            low=tables["low"][i],
            burst=tables["burst"][i],
            matched=tables["matched"][i],
        )
        for i, (seed, metrics) in enumerate(zip(arrays["seeds"], tables["metrics"], strict=True))
    ]

    def boundary(name: str) -> Boundary:
        prefix = f"{name}_"
        return Boundary.from_arrays({k.removeprefix(prefix): v for k, v in arrays.items() if k.startswith(prefix)})

    return Reference(results, boundary("load"), boundary("noise"), extra["kills"], extra["reactive"])


def reference() -> Reference:
    """The committed results of the default configuration on the book's seeds (checksum-verified)."""
    from toyscale.datasets import ARTIFACTS

    return reference_from_arrays(ARTIFACTS["fapes_results"].load())
