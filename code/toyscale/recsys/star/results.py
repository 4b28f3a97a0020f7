"""The committed results (`data/recsys/star_results.npz`): what the notebook shows but cannot recompute in budget.

Five book seeds of the default configuration (every arm, plus the single-domain-batch batch norm
that illustrates the failure partitioned normalization fixes) and a sweep of the domain
heterogeneity ρ over the same seeds (CLAIMS.md §7): STAR against the per-domain-normalized shared
model. Rebuild with `python -m toyscale data --rebuild star_results`. The tests and `reproduce`
recompute everything and never read this file; whether it is current is decided by its fingerprint
(`toyscale.datasets`), never by a rerun.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from toyscale.core import BOOK_SEEDS
from toyscale.core.boundary import Boundary

from .experiment import ARMS, Config, Result, heterogeneity_boundary, run, tail_boundary

#: The domain heterogeneity ρ of the boundary sweep: none (the control), the chapter's previous world (0.6), the
#: paper's regime (`experiment.PAPER_RHO`, 1) and twice it.
RHO_POINTS = (0.0, 0.3, 0.6, 1.0, 2.0)
#: The smallest domain's share of the page views in the tail sweep: from a hundredth to equal shares (the default
#: world's long tail gives it about a twentieth), each with three times the test page views.
TAIL_SHARES = (0.01, 0.025, 0.05, 0.1, 1 / 6)
#: Arms the committed runs add to the default ones: an illustration, never a claim's baseline.
ILLUSTRATIONS = ("star_bn_single",)


@dataclass
class Reference:
    """The committed results, unpacked: per-seed Results (no models) and the boundary."""

    results: list[Result]
    boundary: Boundary  # the star topology's gain over the shared model across ρ
    tail: Boundary  # the smallest domain's gain from sharing (STAR − its separate model) across its share of rows


def reference_config() -> Config:
    """The default configuration with the illustration arms added (they change no other arm's numbers)."""
    return replace(Config(), arms=ARMS + ILLUSTRATIONS)


def reference_arrays(seeds: Sequence[int] = BOOK_SEEDS) -> dict[str, np.ndarray]:
    """Run the reference configuration on `seeds` and pack every arm's numbers and the boundary."""
    config = reference_config()
    results = [run(config, seed=s) for s in seeds]
    arms = list(results[0].metrics)
    names = sorted({name for r in results for values in r.metrics.values() for name in values})
    grid = np.full((len(results), len(arms), len(names)), np.nan)
    for i, result in enumerate(results):
        for j, arm in enumerate(arms):
            for k, name in enumerate(names):
                grid[i, j, k] = result.metrics[arm].get(name, np.nan)
    longest = max(len(path) for r in results for path in r.paths.values())
    paths = np.full((len(results), len(ARMS), longest), np.nan)
    for i, result in enumerate(results):
        for j, arm in enumerate(ARMS):
            paths[i, j, : len(result.paths[arm])] = result.paths[arm]
    boundary = heterogeneity_boundary(Config(), RHO_POINTS, seeds)
    tail = tail_boundary(Config(), TAIL_SHARES, seeds)
    arrays = {
        "seeds": np.asarray(seeds, dtype=np.int64),
        "arms": np.array(arms),
        "metric_names": np.array(names),
        "metrics": grid,
        "domain_auc": np.array([[r.domain_auc[a] for a in arms] for r in results]),
        "train_rows": np.array([r.train_rows for r in results], dtype=np.int64),
        "test_rows": np.array([r.test_rows for r in results], dtype=np.int64),
        "paths": paths,
        "fold_max_diff": np.array([r.fold_max_diff for r in results]),
        "serving_flops": np.array([[r.serving_flops["star_folded"], r.serving_flops["shared"]] for r in results]),
    }
    arrays.update({f"weights_{layer}": w for layer, w in enumerate(results[0].domain_weights)})
    arrays.update({f"boundary_{key}": value for key, value in boundary.as_arrays().items()})
    arrays.update({f"tail_{key}": value for key, value in tail.as_arrays().items()})
    return arrays


def reference_from_arrays(arrays: dict[str, np.ndarray]) -> Reference:
    """Unpack what `reference_arrays` stored (seed 0 keeps STAR's domain weights)."""
    config = reference_config()
    arms = [str(a) for a in arrays["arms"]]
    names = [str(n) for n in arrays["metric_names"]]
    grid = arrays["metrics"]
    layers = sorted(int(key.removeprefix("weights_")) for key in arrays if key.startswith("weights_"))
    results = []
    for i, seed in enumerate(arrays["seeds"]):
        metrics = {
            arm: {name: float(grid[i, j, k]) for k, name in enumerate(names) if not np.isnan(grid[i, j, k])}
            for j, arm in enumerate(arms)
        }
        paths = {arm: [float(v) for v in arrays["paths"][i, j] if not np.isnan(v)] for j, arm in enumerate(ARMS)}
        results.append(
            Result(
                config=config,
                seed=int(seed),
                metrics=metrics,
                domain_auc={arm: arrays["domain_auc"][i, j].tolist() for j, arm in enumerate(arms)},
                train_rows=arrays["train_rows"][i].tolist(),
                test_rows=arrays["test_rows"][i].tolist(),
                paths=paths,
                domain_weights=[arrays[f"weights_{layer}"] for layer in layers] if i == 0 else [],
                fold_max_diff=float(arrays["fold_max_diff"][i]),
                serving_flops=dict(zip(("star_folded", "shared"), arrays["serving_flops"][i].tolist(), strict=True)),
                budgets={
                    arm: (int(row["steps"]), int(row["limit"]))
                    for arm, row in metrics.items()
                    if "steps" in row and "limit" in row
                },
            )
        )
    boundary = Boundary.from_arrays(
        {key.removeprefix("boundary_"): value for key, value in arrays.items() if key.startswith("boundary_")}
    )
    tail = Boundary.from_arrays(
        {key.removeprefix("tail_"): value for key, value in arrays.items() if key.startswith("tail_")}
    )
    return Reference(results, boundary, tail)


def reference() -> Reference:
    """The committed results of the default configuration on the book's seeds (checksum-verified)."""
    from toyscale.datasets import ARTIFACTS

    return reference_from_arrays(ARTIFACTS["star_results"].load())
