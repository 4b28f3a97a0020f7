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
    def min_ratio(self) -> float:
        """min(a) / min(b): B's speed-up over A from each side's fastest call.

        Load on a shared machine only ever adds time, so each side's fastest call is the closest to
        its cost on an idle machine (the estimator `timeit` recommends); robust when the load comes
        in bursts that a median of pairs does not cancel.
        """
        return min(self.a) / min(self.b)

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


PHASES = ("forward", "backward", "optimizer")


def training_steps(
    model: nn.Module,
    rows: Tensor,
    y: Tensor,
    *,
    steps: int,
    lr: float,
    foreach: bool = True,
    phases: dict[str, list[float]] | None = None,
) -> Callable[[], None]:
    """A function that runs `steps` Adam steps of `model` on one batch (forward, backward, update).

    `foreach=True` is the multi-tensor Adam (one fused update over all parameters; on a CPU torch
    defaults to one update per tensor). When `phases` is given, each step appends the seconds of its
    forward, backward and optimizer phases to `phases[name]`.
    """
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, foreach=foreach)

    def run_steps() -> None:
        for _ in range(steps):
            t0 = time.perf_counter()
            optimizer.zero_grad()
            loss = click_loss(model, rows, y, rows.shape[0])
            t1 = time.perf_counter()
            loss.backward()
            t2 = time.perf_counter()
            optimizer.step()
            t3 = time.perf_counter()
            if phases is not None:
                for name, seconds in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2), strict=True):
                    phases.setdefault(name, []).append(seconds)

    return run_steps
