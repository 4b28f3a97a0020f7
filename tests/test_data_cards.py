"""Every data set has a card in data/README.md, and its recorded fingerprint matches a fresh generation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from toyscale.datasets import DATASETS

CARDS = (Path(__file__).resolve().parents[1] / "data" / "README.md").read_text()


@pytest.mark.parametrize("name", list(DATASETS))
def test_card_fingerprint_matches_the_generator(name: str) -> None:
    card = re.search(rf"^## `{name}`$(.*?)(?=^## |\Z)", CARDS, re.M | re.S)
    assert card, f"data/README.md has no card headed ## `{name}`"
    recorded = re.search(r"sha256: `([0-9a-f]{64})`", card.group(1))
    assert recorded, f"the card of {name} records no sha256"
    assert DATASETS[name].fingerprint() == recorded.group(1), (
        f"{name} no longer matches its card: if the generator change is intended, "
        "update data/README.md with the fingerprint `python -m toyscale data` prints"
    )
