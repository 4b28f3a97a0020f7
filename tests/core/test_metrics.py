"""Metrics against hand-computed cases and scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from toyscale.core import metrics


def test_auc_hand_case() -> None:
    # pairs (click, no-click): (0.9 > 0.1), (0.9 > 0.4), (0.3 > 0.1), (0.3 < 0.4): 3 of 4 ordered right
    assert metrics.auc([1, 0, 1, 0], [0.9, 0.1, 0.3, 0.4]) == pytest.approx(0.75)


def test_group_auc_weights_groups_by_impressions_and_skips_single_label_groups() -> None:
    y = [1, 0, 1, 0, 0, 1, 1]
    p = [0.9, 0.1, 0.5, 0.8, 0.3, 0.5, 0.6]
    groups = [0, 0, 1, 1, 1, 2, 2]  # group 2 holds clicks only
    # group 0: AUC 1 over 2 impressions; group 1: the click (0.5) beats 1 of 2 non-clicks -> 0.5 over 3
    assert metrics.group_auc(y, p, groups) == pytest.approx((2 * 1.0 + 3 * 0.5) / 5)


@pytest.mark.parametrize("decimals", [1, 6])
def test_group_auc_equals_the_mean_of_per_group_sklearn_aucs(decimals: int) -> None:
    rng = np.random.default_rng(decimals)
    groups = rng.integers(0, 50, 600)
    y = (rng.random(600) < 0.3).astype(int)
    p = np.round(rng.random(600), decimals)  # one decimal: many ties
    total, weight = 0.0, 0
    for g in np.unique(groups):
        in_g = groups == g
        if 0 < y[in_g].sum() < in_g.sum():
            total += in_g.sum() * roc_auc_score(y[in_g], p[in_g])
            weight += in_g.sum()
    assert metrics.group_auc(y, p, groups) == pytest.approx(total / weight, abs=1e-12)


def test_group_auc_of_one_group_is_auc() -> None:
    rng = np.random.default_rng(0)
    y, p = rng.integers(0, 2, 200), rng.random(200)
    assert metrics.group_auc(y, p, np.zeros(200)) == pytest.approx(metrics.auc(y, p))


def test_log_loss_hand_case() -> None:
    assert metrics.log_loss([1, 0], [0.8, 0.4]) == pytest.approx(-(np.log(0.8) + np.log(0.6)) / 2)


def test_perfectly_calibrated_predictions_have_zero_ece_and_unit_pcoc() -> None:
    y = np.array([1, 0, 0, 0, 1, 1, 1, 0])
    p = np.array([0.25] * 4 + [0.75] * 4)
    assert metrics.ece(y, p, bins=2) == pytest.approx(0.0)
    assert metrics.pcoc(y, p) == pytest.approx(1.0)


def test_ece_hand_case() -> None:
    # two equal-mass bins: mean p 0.1 vs rate 0.5, and mean p 0.9 vs rate 0.5
    assert metrics.ece([0, 1, 1, 0], [0.1, 0.1, 0.9, 0.9], bins=2) == pytest.approx(0.4)


def test_reliability_bins_hold_equal_mass() -> None:
    rng = np.random.default_rng(1)
    p = rng.random(1000)
    mean_p, mean_y, counts = metrics.reliability(rng.random(1000) < p, p, bins=10)
    assert counts.tolist() == [100] * 10
    assert np.all(np.diff(mean_p) > 0)
    assert np.abs(mean_p - mean_y).max() < 0.2


@pytest.mark.parametrize(
    ("y", "p", "message"),
    [
        ([1, 0], [0.5], "same length"),
        ([1, 2], [0.5, 0.5], "0/1"),
        ([1, 0], [1.5, 0.5], "probabilities"),
        ([], [], "empty"),
    ],
)
def test_bad_input_is_named(y: list, p: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        metrics.log_loss(y, p)


def test_auc_of_one_class_is_an_error() -> None:
    with pytest.raises(ValueError, match="both labels"):
        metrics.auc([1, 1], [0.2, 0.3])
    with pytest.raises(ValueError, match="no group"):
        metrics.group_auc([1, 1, 0], [0.2, 0.3, 0.1], [0, 0, 1])
