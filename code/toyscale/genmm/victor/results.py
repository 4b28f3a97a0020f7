"""The committed results (`data/genmm/victor_results.npz`): what the notebook shows but cannot recompute in budget.

Five book seeds of the default configuration (every arm, the claims table) and the boundary sweep over
the number of segments per video (CLAIMS.md §7). Rebuild with `python -m toyscale data --rebuild
victor_results`. The tests and `reproduce` recompute everything and never read this file; the notebook
retrains the baseline and the method arm of seed 0 and compares, and a test reruns one boundary point.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from toyscale.core import BOOK_SEEDS
from toyscale.core.boundary import Boundary, sweep

from .data import caption
from .experiment import ORACLES, Result, evaluation_sets, order_gain, run
from .training import Config

#: Segments per video of the boundary sweep: from one (no order at all) to four.
SEGMENT_POINTS = (1, 2, 3, 4)


@dataclass
class Reference:
    """The committed results, unpacked: per-seed Results and the boundary over segments."""

    results: list[Result]
    boundary: Boundary


def reference_arrays(seeds: Sequence[int] = BOOK_SEEDS) -> dict[str, np.ndarray]:
    """Run the default configuration on `seeds`, sweep the segments on the same seeds, and pack both."""
    config = Config()
    results = [run(config, seed=s) for s in seeds]
    return pack(results, segment_sweep(results))


def segment_sweep(results: Sequence[Result], points: Sequence[int] = SEGMENT_POINTS) -> Boundary:
    """The boundary over segments on the seeds of `results`; their own gain is the default point."""
    config = results[0].config
    known = {r.seed: r.metrics["frame_order"]["group6"] - r.metrics["cooccur"]["group6"] for r in results}
    return sweep(
        lambda k, seed: known[seed] if k == config.segments else order_gain(replace(config, segments=int(k)), seed),
        points,
        [r.seed for r in results],
        parameter="segments per video k",
        delta_name="Δ group-6 (frame order − co-occurrence)",
    )


def pack(results: Sequence[Result], boundary: Boundary) -> dict[str, np.ndarray]:
    """The arrays of the committed file.

    metrics (seeds, rows, metric names), NaN where a row has no such metric; curves (seeds, arms,
    3, points): compute, validation group-6 and validation R@1, NaN-padded; seed 0's example videos;
    the boundary's arrays under 'boundary_'.
    """
    config = results[0].config
    rows = [*config.arms, *ORACLES]
    names = sorted({name for r in results for row in rows for name in r.metrics[row]})
    metrics = np.full((len(results), len(rows), len(names)), np.nan)
    for i, result in enumerate(results):
        for j, row in enumerate(rows):
            for k, name in enumerate(names):
                metrics[i, j, k] = result.metrics[row].get(name, np.nan)
    points = max(len(r.curves[arm][0]) for r in results for arm in config.arms)
    curves = np.full((len(results), len(config.arms), 3, points), np.nan)
    for i, result in enumerate(results):
        for a, arm in enumerate(config.arms):
            series = np.array(result.curves[arm], dtype=np.float64)
            curves[i, a, :, : series.shape[1]] = series
    examples = results[0].examples
    arrays = {
        "seeds": np.array([r.seed for r in results], dtype=np.int64),
        "arms": np.array(config.arms),
        "rows": np.array(rows),
        "metric_names": np.array(names),
        "metrics": metrics,
        "curves": curves,
        "example_images": np.stack([e["images"] for e in examples]).astype(np.uint8),
        "example_events": np.array([e["events"] for e in examples], dtype=np.int64),
        "unseen_fraction": np.array([results[0].unseen_fraction]),
    }
    arrays.update({f"boundary_{key}": value for key, value in boundary.as_arrays().items()})
    return arrays


def reference_from_arrays(arrays: dict[str, np.ndarray]) -> Reference:
    """Unpack what `reference_arrays` stored (metrics and curves; seed 0 holds the examples)."""
    config = Config()
    arms = [str(a) for a in arrays["arms"]]
    rows = [str(r) for r in arrays["rows"]]
    names = [str(n) for n in arrays["metric_names"]]
    examples = [
        {"images": images, "events": events.tolist(), "caption": caption(events)}
        for images, events in zip(arrays["example_images"], arrays["example_events"], strict=True)
    ]
    results = []
    for i, seed in enumerate(arrays["seeds"].tolist()):
        grid = arrays["metrics"][i]
        metrics = {
            row: {name: float(grid[j, k]) for k, name in enumerate(names) if not np.isnan(grid[j, k])}
            for j, row in enumerate(rows)
        }
        curves = {}
        for a, arm in enumerate(arms):
            series = arrays["curves"][i, a]
            keep = ~np.isnan(series[0])
            curves[arm] = (series[0, keep].astype(int).tolist(), series[1, keep].tolist(), series[2, keep].tolist())
        unseen = float(arrays["unseen_fraction"][0])
        results.append(Result(config, int(seed), metrics, curves, examples if i == 0 else [], unseen))
    boundary = Boundary.from_arrays(
        {key.removeprefix("boundary_"): value for key, value in arrays.items() if key.startswith("boundary_")}
    )
    return Reference(results, boundary)


def reference() -> Reference:
    """The committed results of the default configuration on the book's seeds (checksum-verified)."""
    from toyscale.datasets import ARTIFACTS

    return reference_from_arrays(ARTIFACTS["victor_results"].load())


def video_reference_arrays() -> dict[str, np.ndarray]:
    """The data card's fingerprint: the test videos behind seed 0's group-6 sets at the default config.

    Integer arrays only: digits in order, segment lengths, image indices into the test pool, tokens.
    """
    videos = evaluation_sets(Config(), seed=0).test_videos
    return {
        "events": videos.events.astype(np.int64),
        "lengths": videos.lengths.astype(np.int64),
        "image_index": videos.image_index.astype(np.int64),
        "tokens": videos.tokens.astype(np.int64),
    }
