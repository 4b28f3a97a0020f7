"""The committed results: five seeds of the default configuration, which the notebook loads (the tests
and `reproduce` recompute everything and never read them)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from toyscale.genmm import digits

from .data import (
    caption,
    fit_frame_encoder,
)
from .experiment import (
    Result,
    _test_videos,
    run,
)
from .training import (
    Config,
)

RESULT_METRICS = ("group6", "solved", "r1", "r5", "median_rank", "steps", "step_cost")
REFERENCE_SEEDS = (0, 1, 2, 3, 4)
ORACLES = ("bag_oracle", "order_oracle")


def reference_arrays(seeds: Sequence[int] = REFERENCE_SEEDS) -> dict[str, np.ndarray]:
    """Run the default configuration for `seeds` and pack what the notebook shows into arrays.

    metrics (seeds, arms + oracles, RESULT_METRICS), NaN where a row has no such metric;
    compute (arms, points) and group6_curves (seeds, arms, points); the first seed's example videos
    (images uint8 (3, 6, 8, 8), triplets (3, 3)); the seeds and the unseen-image fraction.
    """
    config = Config()
    results = [run(config, seed=s) for s in seeds]
    rows = (*config.arms, *ORACLES)
    metrics = np.full((len(results), len(rows), len(RESULT_METRICS)), np.nan)
    for i, result in enumerate(results):
        for j, row in enumerate(rows):
            for k, name in enumerate(RESULT_METRICS):
                metrics[i, j, k] = result.metrics[row].get(name, np.nan)
    compute = np.array([results[0].curves[arm][0] for arm in config.arms], dtype=np.int64)
    curves = np.array([[result.curves[arm][1] for arm in config.arms] for result in results])
    examples = results[0].examples
    return {
        "seeds": np.array(seeds, dtype=np.int64),
        "metrics": metrics,
        "compute": compute,
        "group6_curves": curves,
        "example_images": np.stack([e["images"] for e in examples]).astype(np.uint8),
        "example_triplets": np.array([e["triplet"] for e in examples], dtype=np.int64),
        "unseen_fraction": np.array([results[0].unseen_fraction]),
    }


def results_from_arrays(arrays: dict[str, np.ndarray]) -> list[Result]:
    """The per-seed Results (metrics, curves, seed 0's examples) stored by `reference_arrays`."""
    config = Config()
    rows = (*config.arms, *ORACLES)
    results = []
    for i, seed in enumerate(arrays["seeds"].tolist()):
        metrics = {
            row: {
                name: float(arrays["metrics"][i, j, k])
                for k, name in enumerate(RESULT_METRICS)
                if not np.isnan(arrays["metrics"][i, j, k])
            }
            for j, row in enumerate(rows)
        }
        curves = {
            arm: (arrays["compute"][a].tolist(), arrays["group6_curves"][i, a].tolist())
            for a, arm in enumerate(config.arms)
        }
        examples = [
            {"images": images, "triplet": triplet.tolist(), "caption": caption(triplet)}
            for images, triplet in zip(arrays["example_images"], arrays["example_triplets"], strict=True)
        ]
        unseen = float(arrays["unseen_fraction"][0])
        results.append(Result(config, seed, metrics, curves, {}, examples if i == 0 else [], unseen))
    return results


def reference_results() -> list[Result]:
    """The committed results of the default configuration for seeds 0–4 (data/genmm/victor_results.npz)."""
    from toyscale.datasets import ARTIFACTS

    return results_from_arrays(ARTIFACTS["victor_results"].load())


def video_reference_arrays() -> dict[str, np.ndarray]:
    """The data card's fingerprint: the test videos and group-6 sets of seed 0 at the default config.

    Integer arrays only: triplets, segment lengths, image indices into the test split, tokens.
    """
    config = Config()
    split = digits.split()
    encoder = fit_frame_encoder(split.train_images, config.feature_dim)
    videos = _test_videos(encoder(split.test_images), split.test_labels, config, seed=0)[0]
    return {
        "triplet": videos.triplet.astype(np.int64),
        "lengths": videos.lengths.astype(np.int64),
        "image_index": videos.image_index.astype(np.int64),
        "tokens": videos.tokens.astype(np.int64),
    }
