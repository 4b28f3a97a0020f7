"""The experiment: validation and test sets, `run` (every arm of one seed, each scored on the test split
once per checkpoint), and the sweep over the number of segments per video (where the effect lives).

The protocol (the book's CLAIMS.md, §2–3): the digit images are split into train, validation and test
pools; training videos show training images only. Every arm gets the same compute, and its learning
rate was chosen over the same grid on validation (`LEARNING_RATES`). During training each arm is
scored on validation videos, and two checkpoints are kept: its best validation group-6 accuracy (the
*order checkpoint*, what the order claims compare) and its best validation R@1 (the *retrieval
checkpoint*, what the retrieval claims compare). The test sets are read once per arm and checkpoint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from toyscale.core.boundary import Boundary, sweep

from .data import (
    Group6,
    Pool,
    VideoBatch,
    bag_oracle_scores,
    caption,
    distinct_events,
    group6_accuracy,
    image_pools,
    layout,
    make_group6,
    make_twin_gallery,
    make_videos,
    order_oracle_scores,
    random_events,
)
from .model import Victor
from .training import (
    CHECKPOINTS,
    Config,
    TrainedArm,
    gallery_ranks,
    group6_scores,
    learning_rate,
    new_model,
    pooled_features,
    recipe,
    step_cost,
    train_arm,
)

SOLVED = 0.9  # a seed "solves" group-6 when its accuracy reaches this
ORACLES = ("bag", "bag_oracle", "order_oracle")  # rows with a group-6 accuracy only (no training)


def retrieval_metrics(ranks: np.ndarray) -> dict[str, float]:
    """R@1, R@5 (share of captions whose video ranks first / in the top 5) and the median rank."""
    ranks = np.asarray(ranks)
    return {"r1": float(np.mean(ranks <= 1)), "r5": float(np.mean(ranks <= 5)), "median_rank": float(np.median(ranks))}


@dataclass
class EvaluationSets:
    """The videos an experiment is scored on: validation (checkpoints) and test (read once per checkpoint)."""

    validation_group: Group6
    validation_gallery: VideoBatch
    test_videos: VideoBatch  # the videos behind the test group-6 sets
    test_group: Group6
    gallery: VideoBatch  # test videos with distinct captions: retrieval
    twin_gallery: VideoBatch  # test videos of the same digits in every order: the out-of-format order test


def _sets(
    pool: Pool, groups: int, gallery: int, segments: int, generator: np.random.Generator
) -> tuple[VideoBatch, Group6, VideoBatch]:
    """Videos of random digits and their group-6 sets, and a gallery of videos with distinct captions."""
    videos = make_videos(pool, random_events(groups, segments, generator), generator)
    group = make_group6(videos, generator)
    return videos, group, make_videos(pool, distinct_events(gallery, segments, generator), generator)


def evaluation_sets(config: Config, seed: int) -> EvaluationSets:
    """The seed's validation and test videos (validation and test images only; neither pool trains)."""
    pools = image_pools(config.feature_dim)
    k = config.segments
    _, validation_group, validation_gallery = _sets(
        pools.validation, config.validation_groups, config.validation_gallery, k, np.random.default_rng([seed, 2])
    )
    generator = np.random.default_rng([seed, 3])
    test_videos, test_group, gallery = _sets(pools.test, config.test_groups, config.gallery, k, generator)
    twins = make_twin_gallery(pools.test, config.twin_families, k, generator)
    return EvaluationSets(validation_group, validation_gallery, test_videos, test_group, gallery, twins)


def twin_accuracy(model: Victor, twins: VideoBatch, family: int) -> float:
    """The order question out of format: each caption picks its own video among its `family` twins.

    The twins are separate videos of the same digits in every order (consecutive rows of the twin
    gallery), each with its own images and segment lengths; chance is 1/family, with the tie rule
    of group-6.
    """
    text = pooled_features(model, tokens=twins.tokens)
    video = pooled_features(model, frames=twins.frames)
    n = len(twins.tokens)
    scores = (text @ video.T).cpu().numpy().reshape(n, n // family, family)
    own = scores[np.arange(n), np.arange(n) // family]
    return group6_accuracy(own, np.arange(n) % family)


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm]: at the order checkpoint (best validation group-6), 'group6' (test group-6
    accuracy), 'solved' (1 when group6 ≥ SOLVED), 'twin6' (each caption picks its video among
    its separate twins) and 'twin_r1' (R@1 over the whole twin gallery); at the
    retrieval checkpoint (best validation R@1), 'r1', 'r5', 'median_rank' over the test gallery;
    'order_steps' and 'retrieval_steps' (where each checkpoint stood), 'steps' (the arm's budget
    of steps), 'step_cost' (token-layer passes per sample per step), 'order_lr' and 'retrieval_lr'
    (the rates behind each checkpoint; one training when they agree, two when not); a checkpoint
    `run` was not asked to score leaves its metrics out. Rows 'bag' (an order-blind model),
    'bag_oracle' and 'order_oracle' hold group6 only. curves[arm]: (compute, validation group-6 of
    the order-rate training, validation R@1 of the retrieval-rate one) during training. examples: a
    few test videos for the figure.
    """

    config: Config
    seed: int
    metrics: dict[str, dict[str, float]]
    curves: dict[str, tuple[list[int], list[float], list[float]]]
    examples: list[dict]
    unseen_fraction: float


def run(config: Config | None = None, *, seed: int = 0, checkpoints: Sequence[str] = CHECKPOINTS) -> Result:
    """Build the videos, train every arm, and score each on the test sets at its checkpoints.

    checkpoints: both by default; a check that reads only the order metrics (group-6, the twin tests)
    passes ("order",), and no arm trains at its retrieval rate: the order metrics are the same, the
    retrieval ones are left out. Arms that train the same recipe at the same rate (a falsifier's
    stand-in) share one training: the same inputs give the same weights.
    """
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a victor.Config, got {type(config).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    if not checkpoints or not set(checkpoints) <= set(CHECKPOINTS):
        raise ValueError(f"checkpoints must be a non-empty subset of {CHECKPOINTS}, got {checkpoints!r}")
    pools = image_pools(config.feature_dim)
    sets = evaluation_sets(config, seed)
    metrics: dict[str, dict[str, float]] = {}
    curves = {}
    validation = (sets.validation_group, sets.validation_gallery)
    trained: dict[tuple[str, float], TrainedArm] = {}  # one training per recipe and rate, shared by the arms
    for arm in config.arms:
        rates = {c: learning_rate(arm, config, c) for c in CHECKPOINTS if c in checkpoints}
        for lr in sorted(set(rates.values())):
            if (recipe(arm, config), lr) not in trained:
                trained[recipe(arm, config), lr] = train_arm(arm, pools.train, validation, config, seed, lr)
        by = {c: trained[recipe(arm, config), lr] for c, lr in rates.items()}
        first = next(iter(by.values()))
        row = {"steps": float(first.steps), "step_cost": float(step_cost(recipe(arm, config), config.segments))}
        if "order" in by:
            model = by["order"].model
            model.load_state_dict(by["order"].order.state)
            accuracy = group6_accuracy(group6_scores(model, sets.test_group), sets.test_group.answer)
            row |= {
                "group6": accuracy,
                "solved": float(accuracy >= SOLVED),
                "twin6": twin_accuracy(model, sets.twin_gallery, layout(config.segments).group_size),
                "twin_r1": retrieval_metrics(gallery_ranks(model, sets.twin_gallery))["r1"],
                "order_steps": float(by["order"].order.step),
                "order_lr": rates["order"],
            }
        if "retrieval" in by:
            model = by["retrieval"].model
            model.load_state_dict(by["retrieval"].retrieval.state)
            row |= {
                **retrieval_metrics(gallery_ranks(model, sets.gallery)),
                "retrieval_steps": float(by["retrieval"].retrieval.step),
                "retrieval_lr": rates["retrieval"],
            }
        metrics[arm] = row
        # validation group-6 of the order-rate training, R@1 of the retrieval-rate one (when scored)
        order, retrieval = by.get("order", first), by.get("retrieval", first)
        curves[arm] = (first.curve_compute, order.curve_group6, retrieval.curve_r1)
    bag = new_model(config, positional=False).eval()  # untrained: order-blind for any weights
    group = sets.test_group
    metrics["bag"] = {"group6": group6_accuracy(group6_scores(bag, group), group.answer)}
    metrics["bag_oracle"] = {"group6": group6_accuracy(bag_oracle_scores(group), group.answer)}
    metrics["order_oracle"] = {"group6": group6_accuracy(order_oracle_scores(group), group.answer)}
    examples = [
        {
            "images": pools.test.images[sets.test_videos.image_index[i]],
            "events": sets.test_videos.events[i].tolist(),
            "caption": caption(sets.test_videos.events[i]),
        }
        for i in range(3)
    ]
    return Result(config, seed, metrics, curves, examples, pools.unseen_fraction)


#: The arms of the boundary sweep: the task that carries the order gain, and the baseline.
BOUNDARY_ARMS = ("cooccur", "frame_order")


def order_gain(config: Config, seed: int) -> float:
    """Test group-6 accuracy of the frame-order arm minus co-occurrence's, each at its order checkpoint.

    The number `run` reports for the two arms; only their order-rate trainings run (the gain reads no
    retrieval checkpoint). With one segment a question holds a single candidate, which every model
    picks: both arms score 1 whatever their weights, so the gain is 0 without training either.
    """
    if layout(config.segments).group_size == 1:
        return 0.0
    result = run(replace(config, arms=BOUNDARY_ARMS), seed=seed, checkpoints=("order",))
    return result.metrics["frame_order"]["group6"] - result.metrics["cooccur"]["group6"]


def segments_boundary(config: Config, points: Sequence[int], seeds: Sequence[int]) -> Boundary:
    """Where the order gain lives: Δ group-6 (frame order − co-occurrence) across the segments per video.

    With one segment there is no order: the group holds a single candidate, both arms score 1 and
    the gain is zero. With k segments a question holds min(k!, 6) orders.
    """
    return sweep(
        lambda k, seed: order_gain(replace(config, segments=int(k)), seed),
        points,
        seeds,
        parameter="segments per video k",
        delta_name="Δ group-6 (frame order − co-occurrence)",
    )
