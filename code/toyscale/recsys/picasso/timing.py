"""Timing: alternate A and B runs and report medians of paired ratios, robust on a shared machine."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .packing import (
    click_loss,
)

# ---------------------------------------------------------------------------------------------
# Timing: alternate A and B, report medians
# ---------------------------------------------------------------------------------------------


def _sync(on: torch.device | None) -> None:
    if on is not None and on.type == "cuda":
        torch.cuda.synchronize(on)


@dataclass
class Timing:
    """Seconds per call of two alternated functions A and B, in the order they ran."""

    a: list[float]
    b: list[float]

    @property
    def median_a(self) -> float:
        return statistics.median(self.a)

    @property
    def median_b(self) -> float:
        return statistics.median(self.b)

    @property
    def ratio(self) -> float:
        """The median of the paired ratios a_i / b_i (each pair ran back to back): B's speed-up over A."""
        return statistics.median(x / y for x, y in zip(self.a, self.b, strict=True))


def benchmark(
    a: Callable[[], object], b: Callable[[], object], *, repeats: int, warmup: int = 1, on: torch.device | None = None
) -> Timing:
    """Time `a` and `b` alternately, ABBA ABBA ..., `repeats` calls each after `warmup` untimed calls each.

    Alternating spreads the machine's slow moments (other processes, clock changes) over both
    sides; the paired ratio of back-to-back calls cancels most of the drift.
    """
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    for _ in range(warmup):
        a()
        b()
    times: dict[str, list[float]] = {"a": [], "b": []}
    for i in range(repeats):
        order = (("a", a), ("b", b)) if i % 2 == 0 else (("b", b), ("a", a))
        for name, fn in order:
            _sync(on)
            start = time.perf_counter()
            fn()
            _sync(on)
            times[name].append(time.perf_counter() - start)
    return Timing(times["a"], times["b"])


def training_steps(model: nn.Module, rows: Tensor, y: Tensor, *, steps: int, lr: float) -> Callable[[], None]:
    """A function that runs `steps` Adam steps of `model` on one batch (forward, backward, update)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    def run_steps() -> None:
        for _ in range(steps):
            optimizer.zero_grad()
            click_loss(model, rows, y, rows.shape[0]).backward()
            optimizer.step()

    return run_steps
