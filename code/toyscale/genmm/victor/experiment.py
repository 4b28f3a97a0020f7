"""Evaluation (group-6 accuracy, text-to-video retrieval, the oracles) and `run`, which trains every arm
of one seed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from torch import Tensor

from toyscale.genmm import digits

from .data import (
    TRIPLETS,
    Group6,
    VideoBatch,
    bag_oracle_scores,
    caption,
    fit_frame_encoder,
    group6_accuracy,
    make_group6,
    make_videos,
    order_oracle_scores,
)
from .training import (
    Config,
    group6_scores,
    pooled_features,
    step_cost,
    train_arm,
)


def retrieval_ranks(text: Tensor, video: Tensor) -> np.ndarray:
    """Rank (1 = best) of each caption's own video among the gallery, by cosine similarity.

    text and video are (n, d) normalised features, row i of each from the same test video.
    """
    scores = (text @ video.T).cpu().numpy()
    own = scores[np.arange(len(scores)), np.arange(len(scores))]
    return 1 + (scores > own[:, None]).sum(axis=1)


def retrieval_metrics(ranks: np.ndarray) -> dict[str, float]:
    """R@1, R@5 (share of captions whose video ranks first / in the top 5) and the median rank."""
    ranks = np.asarray(ranks)
    return {"r1": float(np.mean(ranks <= 1)), "r5": float(np.mean(ranks <= 5)), "median_rank": float(np.median(ranks))}


SOLVED = 0.9  # a seed "solves" group-6 when its accuracy reaches this


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm]: 'group6' (final group-6 accuracy on test videos), 'solved' (1 when group6 ≥
    SOLVED), 'r1', 'r5', 'median_rank' (text→video retrieval over the gallery), 'steps'
    (training steps taken), 'step_cost' (token-layer passes per sample per step). Two oracle rows:
    'bag_oracle' and 'order_oracle' (group6 only). curves[arm]: (compute, group6) during
    training. examples: a few test videos (images, triplet, caption) for the figure.
    """

    config: Config
    seed: int
    metrics: dict[str, dict[str, float]]
    curves: dict[str, tuple[list[int], list[float]]]
    losses: dict[str, dict[str, list[float]]]
    examples: list[dict]
    unseen_fraction: float


def _test_videos(
    test_features: np.ndarray, test_labels: np.ndarray, config: Config, seed: int
) -> tuple[VideoBatch, VideoBatch]:
    """The seed's test videos for group-6 (random triplets) and its retrieval gallery (distinct triplets)."""
    generator = np.random.default_rng(1_000_003 + seed)
    test_triplets = np.array(TRIPLETS)[generator.integers(0, len(TRIPLETS), config.test_groups)]
    videos = make_videos(test_features, test_labels, test_triplets, generator)
    gallery_triplets = np.array(TRIPLETS)[generator.choice(len(TRIPLETS), config.gallery, replace=False)]
    return videos, make_videos(test_features, test_labels, gallery_triplets, generator)


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """Build the videos, fit the frozen frame encoder, train every arm, and score them on test videos."""
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a victor.Config, got {type(config).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    split = digits.split()
    encoder = fit_frame_encoder(split.train_images, config.feature_dim)
    train_features = encoder(split.train_images)
    test_features = encoder(split.test_images)
    test_videos, gallery = _test_videos(test_features, split.test_labels, config, seed)
    test_group = make_group6(test_videos)
    eval_group = Group6(
        *(x[: config.eval_groups] for x in (test_group.frames, test_group.labels, test_group.tokens, test_group.answer))
    )

    metrics: dict[str, dict[str, float]] = {}
    curves, losses = {}, {}
    for arm in config.arms:
        trained = train_arm(arm, train_features, split.train_labels, eval_group, config, seed)
        accuracy = group6_accuracy(group6_scores(trained.model, test_group), test_group.answer)
        ranks = retrieval_ranks(
            pooled_features(trained.model, tokens=gallery.tokens), pooled_features(trained.model, frames=gallery.frames)
        )
        metrics[arm] = {
            "group6": accuracy,
            "solved": float(accuracy >= SOLVED),
            **retrieval_metrics(ranks),
            "steps": float(trained.steps),
            "step_cost": float(step_cost(arm)),
        }
        curves[arm] = (trained.curve_compute, trained.curve_group6)
        losses[arm] = trained.losses
    metrics["bag_oracle"] = {"group6": group6_accuracy(bag_oracle_scores(test_group), test_group.answer)}
    metrics["order_oracle"] = {"group6": group6_accuracy(order_oracle_scores(test_group), test_group.answer)}
    examples = [
        {
            "images": split.test_images[test_videos.image_index[i]],
            "triplet": test_videos.triplet[i].tolist(),
            "caption": caption(test_videos.triplet[i]),
        }
        for i in range(3)
    ]
    return Result(config, seed, metrics, curves, losses, examples, split.unseen_fraction())
