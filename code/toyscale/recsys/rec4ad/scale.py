"""At full scale: how exposure under a softmax of scores, and so IPS, behaves as the candidate set grows.

A ranker shows one of m candidates with probability π_k = exp(τ s_k) / Σ_j exp(τ s_j). Take the m
scores to be normal with spread σ (the toy measures σ of its legacy ranker's log eCPM); the k-th
best of m then sits near the normal quantile s_(k) ≈ σ Φ⁻¹(1 − (k − 3/8) / (m + 1/4)) (Blom's
approximation of the expected order statistics). Re-weighting to the uniform policy gives the k-th
candidate the IPS weight w_k = (1/m) / π_k, and the weight range w_(m) / w_(1) = exp(τ (s_(1) − s_(m))).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np


def ranked_scores(m: int, score_sd: float) -> np.ndarray:
    """The expected scores of the best, second, ..., m-th of m normal candidates (Blom), best first."""
    if m < 1:
        raise ValueError(f"m must be >= 1 candidate, got {m}")
    if not score_sd >= 0:
        raise ValueError(f"score_sd must be >= 0, got {score_sd}")
    k = np.arange(1, m + 1)
    quantiles = 1.0 - (k - 0.375) / (m + 0.25)
    inverse = np.vectorize(NormalDist().inv_cdf)
    return score_sd * inverse(quantiles)


def rank_propensities(m: int, tau: float, score_sd: float) -> np.ndarray:
    """π_k = softmax(τ · s)_k for the k-th best of m candidates, best first (they sum to 1)."""
    if not tau >= 0:
        raise ValueError(f"tau must be >= 0, got {tau}")
    logits = tau * ranked_scores(m, score_sd)
    logits -= logits.max()
    weights = np.exp(logits)
    return weights / weights.sum()


@dataclass(frozen=True)
class Exposure:
    """What a softmax ranker over m candidates does to exposure and to IPS weights."""

    m: int
    uniform: float  # 1/m, the propensity of every candidate under uniform exposure
    top: float  # π of the best candidate
    median: float  # π of the median candidate
    last: float  # π of the worst candidate
    top_share: float  # exposure mass on the best 1 % of the candidates (at least one)
    median_weight: float  # IPS weight (1/m) / π of the median candidate
    weight_range: float  # largest IPS weight over the smallest: exp(τ (s_(1) − s_(m)))


def exposure_at(m: int, tau: float, score_sd: float) -> Exposure:
    """The propensities and IPS weights of a softmax ranker over m candidates with score spread σ."""
    pi = rank_propensities(m, tau, score_sd)
    scores = ranked_scores(m, score_sd)
    top = max(1, m // 100)
    return Exposure(
        m=m,
        uniform=1.0 / m,
        top=float(pi[0]),
        median=float(pi[m // 2]),
        last=float(pi[-1]),
        top_share=float(pi[:top].sum()),
        median_weight=float((1.0 / m) / pi[m // 2]),
        weight_range=float(np.exp(tau * (scores[0] - scores[-1]))),
    )
