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
