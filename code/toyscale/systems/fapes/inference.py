"""Inference: replicas under a latency SLO, and the prediction board that forecasts their demand."""

from __future__ import annotations

from collections import deque

import numpy as np
import simpy

from .cluster import (
    DAY,
)

# ---------------------------------------------------------------------------------------------
# Inference: replicas and the prediction board
# ---------------------------------------------------------------------------------------------


class ReplicaPool:
    """First-come first-served requests over a changing number of replicas (one GPU each).

    Lowering the capacity never interrupts a request: a replica above the new capacity finishes
    its request, then stops. Each request's latency = waiting + service; it violates the SLO when
    latency > slo.
    """

    def __init__(self, env: simpy.Environment, capacity: int, slo: float):
        self.env, self.capacity, self.slo = env, capacity, slo
        self.busy = 0
        self.waiting: deque[tuple[float, float]] = deque()
        self.latencies: list[float] = []
        self.arrivals: list[float] = []

    def arrive(self, service: float) -> None:
        self.waiting.append((self.env.now, service))
        self._start()

    def set_capacity(self, capacity: int) -> None:
        self.capacity = capacity
        self._start()

    def _start(self) -> None:
        while self.waiting and self.busy < self.capacity:
            arrived, service = self.waiting.popleft()
            self.busy += 1
            # latency = time waited in the queue + service time
            self.latencies.append(self.env.now - arrived + service)
            self.arrivals.append(arrived)
            self.env.timeout(service).callbacks.append(self._done)

    def _done(self, _event: simpy.Event) -> None:
        self.busy -= 1
        self._start()


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
