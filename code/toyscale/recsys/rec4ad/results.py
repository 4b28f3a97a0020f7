"""The committed results (`data/recsys/rec4ad_results.npz`): what the notebook shows but cannot recompute in budget.

Five book seeds of the default configuration with every arm (the claims table and the attribution
table), the selection-bias boundary and the bid boundary (CLAIMS.md §7), and the exercises' runs.
Rebuild with `python -m toyscale data --rebuild rec4ad_results` (several minutes on one core). The
tests and `reproduce` recompute what they check and never compare it with this file; whether it is
current is decided by its fingerprint (`toyscale.datasets`), never by a rerun.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from toyscale.core import BOOK_SEEDS
from toyscale.core.boundary import Boundary
from toyscale.recsys.world import AD_WORLD

from .experiment import ARMS, BID_REGIME, Config, Result, auc_gain, bias_boundary, bid_boundary, run

#: The exposure bias τ of the boundary sweep, from uniform exposure to twice the default world's.
BIAS_POINTS = (0.0, 1.0, 2.0, 4.0, 6.0, 8.0)
#: The bid correlation ζ of the bid boundary: flat bids, the online claim's regime, the chapter's world, beyond.
BID_POINTS = (0.0, 0.6, BID_REGIME, AD_WORLD.bid_correlation, 2.0)
#: Exercise 1: recommendation requests per ad request.
TRAFFIC_POINTS = (1 / 3, 1.0, 3.0)
#: Exercise 2: the one loss weight λ_a = λ_d Rec4Ad is forced to use.
FORCED_WEIGHT = 1.0


@dataclass
class Reference:
    """The committed results, unpacked: per-seed Results (metrics only), the two boundaries, the exercises' numbers.

    exercises: 'traffic' (traffic points, seeds) Δ AUC of mix + domain over ads only; 'forced_auc'
    (seeds, 2): test AUC of mix + domain and Rec4Ad at the forced weight, at their ranking checkpoints;
    'forced_pcoc' (seeds, 2): their PCOC at the calibration checkpoints; 'flat_bids_ctr' (seeds, 2):
    online CTR / oracle of ads only and mix + domain (calibration checkpoints) when bids follow no
    item feature. boundary: Δ AUC across the exposure bias τ; bid_boundary: Δ online RPM across ζ.
    """

    results: list[Result]
    boundary: Boundary
    exercises: dict[str, np.ndarray]
    bid_boundary: Boundary


def traffic_config(rec_traffic: float) -> Config:
    """Exercise 1's configuration: the default world with `rec_traffic` recommendation requests per ad request."""
    return Config(world=replace(AD_WORLD, rec_traffic=rec_traffic))


def forced_config() -> Config:
    """Exercise 2's configuration: Rec4Ad with a grid of one weight (and IPS of one clip), beside mix + domain."""
    return Config(
        loss_weights=(FORCED_WEIGHT,),
        clips=(1.0,),
        lrs=(Config().lr,),
        arms=("mix_domain", "rec4ad"),
        control=False,
        regime=False,
    )


def flat_bids_config() -> Config:
    """Exercise 3's configuration: bids that follow no item feature (ζ = 0), ads only and mix + domain."""
    world = replace(AD_WORLD, bid_correlation=0.0)
    return Config(world=world, arms=("ads_only", "mix_domain"), control=False, regime=False)


def exercise_arrays(seeds: Sequence[int]) -> dict[str, np.ndarray]:
    """The exercises' numbers on `seeds` (see `Reference.exercises`)."""
    forced = [run(forced_config(), seed=s) for s in seeds]
    flat = [run(flat_bids_config(), seed=s) for s in seeds]
    return {
        "traffic": np.array([[auc_gain(traffic_config(t), s) for s in seeds] for t in TRAFFIC_POINTS]),
        "forced_auc": np.array([[r.metrics[a]["auc"] for a in ("mix_domain", "rec4ad")] for r in forced]),
        "forced_pcoc": np.array([[r.calibrated[a]["pcoc"] for a in ("mix_domain", "rec4ad")] for r in forced]),
        "flat_bids_ctr": np.array([[r.calibrated[a]["ctr"] for a in ("ads_only", "mix_domain")] for r in flat]),
    }


def reference_arrays(seeds: Sequence[int] = BOOK_SEEDS) -> dict[str, np.ndarray]:
    """Run the default configuration with every arm on `seeds`, the boundary and the exercises, and pack them."""
    config = replace(Config(), arms=ARMS)
    results = [run(config, seed=s) for s in seeds]
    arms = list(results[0].metrics)
    names = sorted({name for r in results for table in (r.metrics, r.calibrated) for m in table.values() for name in m})
    arrays = {
        "seeds": np.asarray(seeds, dtype=np.int64),
        "arms": np.array(arms),
        "metric_names": np.array(names),
    }
    for table in ("metrics", "calibrated"):
        grid = np.full((len(results), len(arms), len(names)), np.nan)
        for i, result in enumerate(results):
            for j, arm in enumerate(arms):
                for k, name in enumerate(names):
                    grid[i, j, k] = getattr(result, table).get(arm, {}).get(name, np.nan)
        arrays[table] = grid
    arrays.update({f"boundary_{k}": v for k, v in bias_boundary(Config(), BIAS_POINTS, seeds).as_arrays().items()})
    arrays.update({f"bids_{k}": v for k, v in bid_boundary(Config(), BID_POINTS, seeds).as_arrays().items()})
    arrays.update({f"exercise_{k}": v for k, v in exercise_arrays(seeds).items()})
    return arrays


def reference_from_arrays(arrays: dict[str, np.ndarray]) -> Reference:
    """Unpack what `reference_arrays` stored (an arm without a knob keeps its knob as nan)."""
    config = replace(Config(), arms=ARMS)
    arms = [str(a) for a in arrays["arms"]]
    names = [str(n) for n in arrays["metric_names"]]

    def table(grid: np.ndarray, i: int) -> dict[str, dict[str, float]]:
        rows = {}
        for j, arm in enumerate(arms):
            row = {name: float(grid[i, j, k]) for k, name in enumerate(names) if not np.isnan(grid[i, j, k])}
            if arm in config.arms:
                row["knob"] = float(grid[i, j, names.index("knob")])
            if row:
                rows[arm] = row
        return rows

    results = [
        Result(
            config=config,
            seed=int(seed),
            metrics=table(arrays["metrics"], i),
            calibrated=table(arrays["calibrated"], i),
        )
        for i, seed in enumerate(arrays["seeds"])
    ]
    boundary = Boundary.from_arrays(
        {key.removeprefix("boundary_"): value for key, value in arrays.items() if key.startswith("boundary_")}
    )
    exercises = {key.removeprefix("exercise_"): value for key, value in arrays.items() if key.startswith("exercise_")}
    bids = Boundary.from_arrays(
        {key.removeprefix("bids_"): value for key, value in arrays.items() if key.startswith("bids_")}
    )
    return Reference(results, boundary, exercises, bids)


def reference() -> Reference:
    """The committed results of the default configuration on the book's seeds (checksum-verified)."""
    from toyscale.datasets import ARTIFACTS

    return reference_from_arrays(ARTIFACTS["rec4ad_results"].load())
