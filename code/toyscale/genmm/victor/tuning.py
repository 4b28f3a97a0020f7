"""Each arm's learning rate, chosen on validation over the same grid (CLAIMS.md §2–3).

Every arm trains at every rate of `LEARNING_RATE_GRID` on tuning seeds kept apart from the book's and
the calibration seeds; each run keeps its best validation group-6 accuracy and its best validation
R@1 (the scores its two checkpoints are chosen by). Per arm, the rate with the best mean validation
group-6 becomes its *order* rate and the rate with the best mean validation R@1 its *retrieval* rate;
`run` trains an arm once when the two agree and twice when they do not. The test sets are never read.
The default configuration and `Config.fast()` (half the budget, smaller validation sets) are tuned
apart, each at its own budget:

    python -m toyscale.genmm.victor.tuning --json code/toyscale/genmm/victor/calibration/learning_rates.json
    python -m toyscale.genmm.victor.tuning --fast --json code/toyscale/genmm/victor/calibration/learning_rates_fast.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from toyscale.core import set_threads
from toyscale.core.data import atomic_write_bytes
from toyscale.core.environment import environment

from .data import image_pools
from .experiment import evaluation_sets
from .training import ARMS, LEARNING_RATE_GRID, Config, train_arm

TUNING_SEEDS = (1100, 1101)  # apart from the book's seeds (0–4) and the calibration seeds (1000–1011)


def validation_scores(arm: str, lr: float, config: Config, seed: int) -> tuple[float, float]:
    """(best validation group-6, best validation R@1) of `arm` trained at rate `lr` on `seed`."""
    sets = evaluation_sets(config, seed)
    trained = train_arm(
        arm,
        image_pools(config.feature_dim).train,
        (sets.validation_group, sets.validation_gallery),
        config,
        seed,
        lr,
    )
    return trained.order.score, trained.retrieval.score


def choose(scores: dict[float, list[float]]) -> float:
    """The rate with the best mean score over seeds (the smaller rate on a tie)."""
    rates = sorted(scores)
    means = [float(np.mean(scores[r])) for r in rates]
    return rates[int(np.argmax(means))]


def tune(
    config: Config, arms: Sequence[str] = ARMS, seeds: Sequence[int] = TUNING_SEEDS, cache: Path | None = None
) -> dict:
    """Validation scores of every arm at every rate and seed, and each arm's chosen order and retrieval rate."""
    record: dict = {"fast": config == Config.fast(), "seeds": list(seeds), "grid": list(LEARNING_RATE_GRID), "arms": {}}
    for arm in arms:
        order: dict[float, list[float]] = {}
        retrieval: dict[float, list[float]] = {}
        for lr in LEARNING_RATE_GRID:
            for seed in seeds:
                path = cache / f"{arm}-{lr:g}-{seed}.json" if cache else None
                if path is not None and path.is_file():
                    g6, r1 = json.loads(path.read_text())
                else:
                    g6, r1 = validation_scores(arm, lr, config, seed)
                    if path is not None:
                        path.parent.mkdir(parents=True, exist_ok=True)
                        atomic_write_bytes(path, json.dumps([g6, r1]).encode())
                order.setdefault(lr, []).append(g6)
                retrieval.setdefault(lr, []).append(r1)
        record["arms"][arm] = {
            "validation_group6": {f"{lr:g}": v for lr, v in order.items()},
            "validation_r1": {f"{lr:g}": v for lr, v in retrieval.items()},
            "order_lr": choose(order),
            "retrieval_lr": choose(retrieval),
        }
    return record


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="tune every Victor arm's learning rate on validation")
    parser.add_argument("--arms", nargs="*", default=list(ARMS))
    parser.add_argument("--seeds", type=int, nargs="*", default=list(TUNING_SEEDS))
    parser.add_argument("--fast", action="store_true", help="tune Config.fast() instead of the default config")
    parser.add_argument("--cache", type=Path, help="keep each run's scores here and reuse them (one folder per config)")
    parser.add_argument("--json", type=Path, help="write the record here")
    args = parser.parse_args(argv)
    set_threads(1)
    record = tune(Config.fast() if args.fast else Config(), args.arms, args.seeds, args.cache)
    for arm, row in record["arms"].items():
        print(arm, "order lr", row["order_lr"], "retrieval lr", row["retrieval_lr"])
        for lr in row["validation_group6"]:
            g6, r1 = np.mean(row["validation_group6"][lr]), np.mean(row["validation_r1"][lr])
            print(f"  lr {lr}: validation group-6 {g6:.3f}, R@1 {r1:.3f}")
    if args.json:
        payload = {"environment": environment(), **record}
        atomic_write_bytes(args.json, (json.dumps(payload, indent=2) + "\n").encode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
