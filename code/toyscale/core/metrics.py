"""Metrics for click models: ranking (AUC, group AUC) and calibration (log loss, ECE, PCOC).

Every function takes NumPy-compatible 0/1 labels `y` and predicted probabilities `p` of the same
length and returns a float. scikit-learn computes AUC and log loss; the rest are a few lines each.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from sklearn.metrics import log_loss as _sk_log_loss
from sklearn.metrics import roc_auc_score

_EPS = 1e-7


def _labels_and_probs(y: ArrayLike, p: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Check that y holds 0/1 labels and p probabilities of the same length; return them as float arrays."""
    y_arr = np.asarray(y, dtype=np.float64).ravel()
    p_arr = np.asarray(p, dtype=np.float64).ravel()
    if y_arr.shape != p_arr.shape:
        raise ValueError(f"y and p must have the same length, got {y_arr.size} and {p_arr.size}")
    if y_arr.size == 0:
        raise ValueError("y and p are empty: a metric needs at least one sample")
    if not np.isin(y_arr, (0.0, 1.0)).all():
        raise ValueError("y must hold only 0/1 labels")
    if not np.isfinite(p_arr).all() or (p_arr < 0).any() or (p_arr > 1).any():
        raise ValueError("p must hold probabilities in [0, 1] (pass sigmoid(logits), not logits)")
    return y_arr, p_arr


def auc(y: ArrayLike, p: ArrayLike) -> float:
    """Area under the ROC curve: the probability that a random click is scored above a random non-click."""
    y_arr, p_arr = _labels_and_probs(y, p)
    if y_arr.min() == y_arr.max():
        raise ValueError("AUC needs both labels in y; got only one class")
    return float(roc_auc_score(y_arr, p_arr))


def group_auc(y: ArrayLike, p: ArrayLike, groups: ArrayLike) -> float:
    """Group AUC: the impression-weighted mean of per-group AUCs (Zhou et al., DIN, 2018).

    GAUC = Σ_g n_g · AUC_g / Σ_g n_g over the groups g (users, sessions) that hold both labels;
    groups with a single label have no AUC and are left out. It measures ranking *within* a group,
    which is what a feed or an ad slot actually uses.

    Each AUC_g comes from the Mann–Whitney rank sum, AUC_g = (R_g − P_g(P_g + 1)/2) / (P_g N_g),
    with R_g the sum of the clicks' ranks within g (ties get their average rank), P_g clicks and
    N_g non-clicks; one sort serves every group, so thousands of sessions take milliseconds.
    """
    y_arr, p_arr = _labels_and_probs(y, p)
    g_raw = np.asarray(groups).ravel()
    if g_raw.shape != y_arr.shape:
        raise ValueError(f"groups must have one entry per sample, got {g_raw.size} for {y_arr.size} samples")
    _, g_arr = np.unique(g_raw, return_inverse=True)
    # sort by group, then by score within the group
    order = np.lexsort((p_arr, g_arr))
    g_arr, p_arr, y_arr = g_arr[order], p_arr[order], y_arr[order]
    n = y_arr.size
    positions = np.arange(n)
    group_first = np.r_[True, g_arr[1:] != g_arr[:-1]]
    group_start = np.maximum.accumulate(np.where(group_first, positions, 0))
    # runs of tied scores inside a group share their average rank
    tie_first = group_first | np.r_[True, p_arr[1:] != p_arr[:-1]]
    tie_id = np.cumsum(tie_first) - 1
    tie_start = np.flatnonzero(tie_first)
    tie_end = np.r_[tie_start[1:], n] - 1
    rank = (tie_start[tie_id] + tie_end[tie_id]) / 2.0 - group_start + 1.0
    size = np.bincount(g_arr).astype(np.float64)
    clicks = np.bincount(g_arr, weights=y_arr)
    non_clicks = size - clicks
    rank_sum = np.bincount(g_arr, weights=rank * y_arr)
    both = (clicks > 0) & (non_clicks > 0)
    if not both.any():
        raise ValueError("no group holds both labels, so group AUC is undefined")
    # AUC_g = (R_g − P_g(P_g + 1)/2) / (P_g · N_g)
    auc_g = (rank_sum[both] - clicks[both] * (clicks[both] + 1) / 2) / (clicks[both] * non_clicks[both])
    return float(np.sum(size[both] * auc_g) / np.sum(size[both]))


def log_loss(y: ArrayLike, p: ArrayLike) -> float:
    """Mean binary cross-entropy −[y log p + (1−y) log(1−p)], with p clipped to [1e-7, 1 − 1e-7]."""
    y_arr, p_arr = _labels_and_probs(y, p)
    return float(_sk_log_loss(y_arr, np.clip(p_arr, _EPS, 1 - _EPS), labels=[0.0, 1.0]))


def _equal_mass_bins(p: np.ndarray, bins: int) -> list[np.ndarray]:
    """Indices of `bins` groups of (nearly) equal size, in increasing order of p."""
    if not isinstance(bins, int) or bins < 1:
        raise ValueError(f"bins must be a positive int, got {bins!r}")
    order = np.argsort(p, kind="stable")
    return [chunk for chunk in np.array_split(order, min(bins, p.size)) if chunk.size]


def reliability(y: ArrayLike, p: ArrayLike, bins: int = 10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reliability diagram: for equal-mass bins of p, (mean predicted p, observed click rate, count)."""
    y_arr, p_arr = _labels_and_probs(y, p)
    chunks = _equal_mass_bins(p_arr, bins)
    mean_p = np.array([p_arr[c].mean() for c in chunks])
    mean_y = np.array([y_arr[c].mean() for c in chunks])
    counts = np.array([c.size for c in chunks])
    return mean_p, mean_y, counts


def ece(y: ArrayLike, p: ArrayLike, bins: int = 20) -> float:
    """Expected calibration error over equal-mass bins b (Guo et al., 2017).

    ECE = Σ_b (n_b / n) · |mean_b(p) − mean_b(y)|
    """
    mean_p, mean_y, counts = reliability(y, p, bins)
    return float(np.sum(counts * np.abs(mean_p - mean_y)) / counts.sum())


def pcoc(y: ArrayLike, p: ArrayLike) -> float:
    """Predicted clicks over observed clicks, PCOC = mean(p) / mean(y); a calibrated model gives 1."""
    y_arr, p_arr = _labels_and_probs(y, p)
    if y_arr.sum() == 0:
        raise ValueError("PCOC needs at least one click in y")
    return float(p_arr.mean() / y_arr.mean())
