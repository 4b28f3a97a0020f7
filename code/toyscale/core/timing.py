"""Time and memory, as the benchmarks measure them."""

from __future__ import annotations

import resource
import sys
import time
from types import TracebackType


class Stopwatch:
    """Wall-clock seconds of a `with` block: `with Stopwatch() as sw: ...; sw.seconds`."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._start = 0.0

    def __enter__(self) -> Stopwatch:
        self._start = time.perf_counter()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.seconds = time.perf_counter() - self._start


def peak_memory_mb() -> float:
    """Peak resident memory of this process so far, in MiB (ru_maxrss: KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10
