"""The scorecard ledger agrees with the code, and the checks that keep it so can fail."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from toyscale import scorecard
from toyscale.chapters import CHAPTERS
from toyscale.cli import main


@pytest.fixture(scope="module")
def ledger() -> dict:
    return scorecard.load()


def test_the_ledger_lists_every_registered_claim_and_nothing_else(ledger: dict) -> None:
    assert not scorecard.problems(ledger), scorecard.problems(ledger)
    for name, chapter in CHAPTERS.items():
        ids = [c["id"] for c in ledger["chapters"][name]["claims"]]
        assert ids == [c.id for c in chapter.load().CLAIMS]
    assert ledger["config"] == "default" and ledger["seeds"] == [0, 1, 2, 3, 4]


def test_a_claim_added_removed_rekinded_or_a_changed_source_is_caught(ledger: dict) -> None:
    removed = copy.deepcopy(ledger)
    removed["chapters"]["jrc"]["claims"].pop()
    assert any("jrc: the ledger lists claims" in p for p in scorecard.problems(removed))
    rekinded = copy.deepcopy(ledger)
    rekinded["chapters"]["jrc"]["claims"][0]["kind"] = "mechanism"
    assert any("kind is 'mechanism'" in p for p in scorecard.problems(rekinded))
    flipped = copy.deepcopy(ledger)
    first = flipped["chapters"]["jrc"]["claims"][0]
    first["status"] = "pass" if first["status"] != "pass" else "FAIL"
    assert any("does not follow" in p for p in scorecard.problems(flipped))
    edited = copy.deepcopy(ledger)
    edited["chapters"]["jrc"]["fingerprint"]["toyscale.recsys.jrc.experiment"] = "0" * 64
    assert any("jrc: its code changed" in p and "jrc.experiment changed" in p for p in scorecard.problems(edited))
    legacy = copy.deepcopy(ledger)
    legacy["chapters"]["jrc"]["source"] = "0" * 64
    del legacy["chapters"]["jrc"]["fingerprint"]
    assert any("predates compute-path fingerprints" in p for p in scorecard.problems(legacy))
    missing = copy.deepcopy(ledger)
    del missing["chapters"]["star"]
    assert any("not the registry's" in p for p in scorecard.problems(missing))


def test_the_page_tables_count_every_claim(ledger: dict) -> None:
    counts = scorecard.counts_table(ledger)
    assert counts.rows[-1][0] == "All chapters" and len(counts) == len(scorecard.PART_NAMES) + 1
    total = sum(len(scorecard.claims_table(ledger, part)) for part in scorecard.PART_NAMES)
    assert total == sum(len(c.load().CLAIMS) for c in CHAPTERS.values())
    assert len(scorecard.environment_table(ledger)) == len(CHAPTERS)


def test_update_replaces_one_chapter_and_refuses_other_seeds(tmp_path: Path, ledger: dict) -> None:
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps(ledger))
    entry = copy.deepcopy(ledger["chapters"]["jrc"])
    entry["seconds"] = 1.0
    updated = scorecard.update(path, ledger["seeds"], {"jrc": entry})
    assert updated["chapters"]["jrc"]["seconds"] == 1.0 and list(updated["chapters"]) == list(CHAPTERS)
    with pytest.raises(ValueError, match="seeds"):
        scorecard.update(path, [7, 8], {"jrc": entry})


def test_compare_sets_a_readers_run_beside_the_book(tmp_path: Path, ledger: dict, capsys) -> None:
    mine = {"seeds": [500], "claims": ledger["chapters"]["jrc"]["claims"]}
    (tmp_path / "mine.json").write_text(json.dumps(mine))
    assert main(["scorecard", "--compare", str(tmp_path / "mine.json")]) == 0
    out = capsys.readouterr().out
    assert "gauc_over_pointwise" in out and "your status" in out
    (tmp_path / "bad.json").write_text("{}")
    assert main(["scorecard", "--compare", str(tmp_path / "bad.json")]) == 2
    assert main(["reproduce", "jrc", "--fast", "--seeds", "1", "--ledger", str(tmp_path / "x.json")]) == 2


def test_compare_reads_older_files_and_v2_ones_side_by_side(tmp_path: Path, ledger: dict, capsys) -> None:
    # the ledger is an older-format file (no v2 keys); a v2 file adds regime, alternatives and undertrained
    older = copy.deepcopy(ledger["chapters"]["rec4ad"]["claims"])
    assert not {"regime", "alternatives", "undertrained"} & {key for claim in older for key in claim}
    v2 = copy.deepcopy(older)
    v2[0]["regime"] = {"property": "selection bias τ", "value": 2.0, "source": "the paper's setting"}
    v2[0]["alternatives"] = {"arms": ["ads_only", "naive_mix"], "pick_by": "validation_auc", "winners": ["ads_only"]}
    v2[1].update(status="undertrained", undertrained="arm 'ads_only' peaks in the last tenth of its budget")
    for name, claims in (("older.json", older), ("v2.json", v2)):
        (tmp_path / name).write_text(json.dumps({"seeds": [600], "claims": claims}))
        assert main(["scorecard", "--compare", str(tmp_path / name)]) == 0
    out = capsys.readouterr().out
    assert "[selection bias τ = 2.0]" in out and "undertrained" in out
