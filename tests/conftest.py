"""Test-wide settings: one torch thread, no progress bars, repository paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toyscale.core import set_threads

ROOT = Path(__file__).resolve().parents[1]

os.environ.setdefault("TOYSCALE_PROGRESS", "0")
set_threads(1)


@pytest.fixture
def root() -> Path:
    """The repository root."""
    return ROOT


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the book build first: under `-n 2 --dist loadfile` one worker builds and browses the book
    (the longest file) while the other runs every other test and notebook."""
    items.sort(key=lambda item: item.nodeid.split("::")[0] != "tests/test_book.py")
