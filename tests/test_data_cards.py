"""Every data set has a card in data/README.md, and its recorded fingerprint matches a fresh generation;
every committed data file has a card whose fingerprint matches the file (checked on load, not recomputed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from toyscale.datasets import ARTIFACTS, DATASETS

CARDS = (Path(__file__).resolve().parents[1] / "data" / "README.md").read_text()


def _recorded(name: str) -> str:
    card = re.search(rf"^## `{name}`$(.*?)(?=^## |\Z)", CARDS, re.M | re.S)
    assert card, f"data/README.md has no card headed ## `{name}`"
    recorded = re.search(r"sha256: `([0-9a-f]{64})`", card.group(1))
    assert recorded, f"the card of {name} records no sha256"
    return recorded.group(1)


@pytest.mark.parametrize("name", list(DATASETS))
def test_card_fingerprint_matches_the_generator(name: str) -> None:
    recorded = _recorded(name)
    assert DATASETS[name].fingerprint() == recorded, (
        f"{name} no longer matches its card: if the generator change is intended, "
        "update data/README.md with the fingerprint `python -m toyscale data` prints"
    )


@pytest.mark.parametrize("name", list(ARTIFACTS))
def test_committed_file_is_small_verified_and_matches_its_card(name: str) -> None:
    artifact = ARTIFACTS[name]
    assert artifact.file.is_file(), f"{artifact.path} is missing: {artifact.rebuild_command}"
    assert artifact.file.stat().st_size < 2 * 2**20, f"{artifact.path} is over 2 MiB"
    assert artifact.rebuild_command in CARDS, f"the card of {name} does not give the command that rebuilds it"
    assert artifact.fingerprint() == _recorded(name), (
        f"{artifact.path} does not match its card: after `{artifact.rebuild_command}`, "
        "update data/README.md with the fingerprint it prints"
    )
