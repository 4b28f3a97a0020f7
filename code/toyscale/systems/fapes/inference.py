"""Inference: requests served first-come first-served by a changing number of replicas, and the prediction board."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from .cluster import DAY

# ---------------------------------------------------------------------------------------------
# Serving: FCFS over a capacity that changes in time
# ---------------------------------------------------------------------------------------------


def serve(arrivals: np.ndarray, service: np.ndarray, capacity: Sequence[tuple[float, int]], initial: int) -> np.ndarray:
    """Latency (queueing + service) of every request, served FCFS by `initial` replicas, then `capacity`.

    arrivals: sorted arrival times; service: service times (same unit); capacity: (time, replicas)
    changes in time order. Lowering the capacity never interrupts a request: the replicas that
    would be free last (busy ones before idle ones) finish their request, then leave; a new
    replica serves at once. Exact: with f the serving replicas' free times, request i starts at
    max(a_i, min f), after every capacity change up to that moment.
    """
    arrivals, service = np.asarray(arrivals, dtype=float), np.asarray(service, dtype=float)
    if arrivals.shape != service.shape:
        raise ValueError(f"arrivals and service must have the same shape, got {arrivals.shape}, {service.shape}")
    if initial < 1 or any(c < 1 for _, c in capacity):
        raise ValueError("the capacity must stay >= 1 replica")
    if arrivals.size and np.any(np.diff(arrivals) < 0):
        raise ValueError("arrivals must be sorted")
    free = [-np.inf] * initial
    latency = np.empty(arrivals.size)
    changes = [(float(t), int(c)) for t, c in capacity]
    k, replicas = 0, initial
    for i, (a, s) in enumerate(zip(arrivals.tolist(), service.tolist(), strict=True)):
        start = max(a, free[0])
        while k < len(changes) and changes[k][0] <= start:
            t, new = changes[k]
            for _ in range(new - replicas):  # a new replica is free from t
                heapq.heappush(free, t)
            if new < replicas:  # the replicas free last leave after their request (a sorted list is a heap)
                free.sort()
                del free[new:]
            replicas, k = new, k + 1
            start = max(a, free[0])
        heapq.heapreplace(free, start + s)
        latency[i] = start + s - a
    return latency


# ---------------------------------------------------------------------------------------------
# The prediction board
# ---------------------------------------------------------------------------------------------


class PredictionBoard:
    """FaPES's forecast of inference demand (reconstructed): a seasonal profile, rescaled.

    λ̂(t + τ) = p(t + τ) · r(t), with p yesterday's rate smoothed per hour and r(t) the ratio of
    the requests seen in the last 15 minutes to yesterday's over the same minutes.
    """

    def __init__(self, history_rate: np.ndarray):
        kernel = np.ones(61) / 61  # an hour's moving average, wrapped around midnight
        padded = np.concatenate([history_rate[-30:], history_rate, history_rate[:30]])
        self.profile = np.convolve(padded, kernel, mode="valid")

    def profile_at(self, t: float) -> float:
        return float(self.profile[int(t) % int(DAY)])

    def forecast(self, now: float, observed_rate: float, horizon: float) -> float:
        """The highest rate expected in [now, now + horizon]."""
        ratio = observed_rate / max(self.profile_at(now), 1e-9)
        ahead = max(self.profile_at(now + tau) for tau in np.arange(0.0, horizon + 1e-9, 5.0))
        return ahead * ratio
