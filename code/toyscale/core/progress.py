"""Progress bars: shown on an interactive terminal, never in the built book or in tests."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")


def show_progress() -> bool:
    """True when a bar helps: stderr is a terminal, or TOYSCALE_PROGRESS=1 forces it (=0 hides it)."""
    forced = os.environ.get("TOYSCALE_PROGRESS")
    if forced in ("0", "1"):
        return forced == "1"
    return sys.stderr.isatty() and "PYTEST_CURRENT_TEST" not in os.environ


def progress(iterable: Iterable[T], desc: str, total: int | None = None) -> Iterator[T]:
    """Iterate over `iterable`, with a tqdm bar labelled `desc` when `show_progress()`."""
    if show_progress():
        yield from tqdm(iterable, desc=desc, total=total, leave=False)
    else:
        yield from iterable
