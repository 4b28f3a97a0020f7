"""Every data set has a card in data/README.md, and its recorded fingerprint matches a fresh generation;
every committed data file has a card whose checksum matches the file (checked on load, not recomputed) and is
current by the fingerprint of the code that made it."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from toyscale import datasets
from toyscale.core import DataError
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


@pytest.mark.parametrize("name", list(ARTIFACTS))
def test_committed_file_is_current_by_its_fingerprint(name: str) -> None:
    # staleness is a question about code, the same on every machine: never a rerun against the file
    artifact = ARTIFACTS[name]
    assert not artifact.staleness(), (
        f"{artifact.path} is stale ({'; '.join(artifact.staleness())}): rebuild it with {artifact.rebuild_command}"
    )


def test_a_stale_or_foreign_file_names_itself_what_changed_and_the_rebuild(monkeypatch, tmp_path) -> None:
    name = "fangorn_costs"
    artifact = ARTIFACTS[name]
    entries = datasets.manifest()
    stale = copy.deepcopy(entries)
    module = next(iter(stale[name]["fingerprint"]))
    stale[name]["fingerprint"][module] = "0" * 64
    path = tmp_path / "fingerprints.json"
    path.write_text(json.dumps(stale))
    monkeypatch.setattr(datasets, "MANIFEST", path)
    with pytest.raises(datasets.StaleArtifact, match=rf"{artifact.file}.*{module} changed.*{artifact.rebuild_command}"):
        artifact.load()
    foreign = copy.deepcopy(entries)
    foreign[name]["sha256"] = "1" * 64
    path.write_text(json.dumps(foreign))
    with pytest.raises(datasets.StaleArtifact, match="recorded for another file"):
        artifact.load()
    del foreign[name]
    path.write_text(json.dumps(foreign))
    with pytest.raises(datasets.StaleArtifact, match="records no fingerprint"):
        artifact.load()
    path.write_text("{not json")
    with pytest.raises(DataError, match="not valid JSON"):
        artifact.load()
