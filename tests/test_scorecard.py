"""The scorecard ledger agrees with the code, and the checks that keep it so can fail."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from toyscale import scorecard
from toyscale.chapters import CHAPTERS
from toyscale.cli import main
from toyscale.core.claims import BY_CONSTRUCTION, HOLDS, NOT_MEASURABLE, REPRODUCED, STATUS_MEANINGS


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
    first["status"] = "reproduced" if first["status"] != "reproduced" else "FAIL"
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
    assert "gauc_over_strongest" in out and "your status" in out
    (tmp_path / "bad.json").write_text("{}")
    assert main(["scorecard", "--compare", str(tmp_path / "bad.json")]) == 2
    assert main(["reproduce", "jrc", "--fast", "--seeds", "1", "--ledger", str(tmp_path / "x.json")]) == 2


def test_compare_reads_older_files_and_v2_ones_side_by_side(tmp_path: Path, ledger: dict, capsys) -> None:
    # an older file: the ledger's claims without their v2 keys; a v2 file adds regime, alternatives and undertrained
    v2_keys = {"regime", "alternatives", "undertrained", "validates", "band", "control_loss", "budgets"}
    older = [{k: v for k, v in claim.items() if k not in v2_keys} for claim in ledger["chapters"]["rec4ad"]["claims"]]
    v2 = copy.deepcopy(older)
    v2[0]["regime"] = {"property": "selection bias τ", "value": 2.0, "source": "the paper's setting"}
    v2[0]["alternatives"] = {"arms": ["ads_only", "naive_mix"], "pick_by": "validation_auc", "winners": ["ads_only"]}
    v2[1].update(status="undertrained", undertrained="arm 'ads_only' peaks in the last tenth of its budget")
    for name, claims in (("older.json", older), ("v2.json", v2)):
        (tmp_path / name).write_text(json.dumps({"seeds": [600], "claims": claims}))
        assert main(["scorecard", "--compare", str(tmp_path / name)]) == 0
    out = capsys.readouterr().out
    assert "[selection bias τ = 2.0]" in out and "undertrained" in out


def test_counts_and_verdict_cells_agree_everywhere(ledger: dict) -> None:
    """The headline counts, each chapter's tally, the rendered verdict cells and the definitions agree."""
    counts = {row[0]: row for row in scorecard.counts_table(ledger).rows}
    found = scorecard.findings(ledger)
    for part, label in scorecard.PART_NAMES.items():
        table = scorecard.claims_table(ledger, part)
        verdicts = [str(v) for v in table.column("verdict")]
        kinds = table.column("kind")
        reproduced = sum(v == REPRODUCED for v in verdicts)
        effects = sum(k == "effect" and v != NOT_MEASURABLE for k, v in zip(kinds, verdicts, strict=True))
        holding = sum(v == HOLDS for v in verdicts)
        assert counts[label][1] == f"{reproduced} of {effects}", label
        assert counts[label][2] == f"{holding} of {kinds.count('control')}", label
        assert found["parts"][part]["reproduced"] == reproduced and found["parts"][part]["effects"] == effects
        # only an effect is ever "reproduced", only a control "holds"; no cell says "pass"
        assert all(k == "effect" for k, v in zip(kinds, verdicts, strict=True) if v == REPRODUCED)
        assert all(k == "control" for k, v in zip(kinds, verdicts, strict=True) if v == HOLDS)
        assert not [v for v in verdicts if "pass" in v.lower()], verdicts
        assert set(verdicts) <= set(STATUS_MEANINGS), set(verdicts) - set(STATUS_MEANINGS)
    total = counts["All chapters"][1]
    assert total == f"{found['all']['reproduced']} of {found['all']['effects']}"
    # each chapter's recorded tally (what its own page prints) agrees with its verdict cells
    for name, entry in ledger["chapters"].items():
        statuses = [c["status"] for c in entry["claims"]]
        assert entry["tally"]["reproduced"] == statuses.count(REPRODUCED), name
        assert entry["tally"]["controls_passed"] == statuses.count(HOLDS), name
        assert entry["tally"]["by_construction"] == statuses.count(BY_CONSTRUCTION), name
    # every status is defined on the Scorecard page, in the words of the tables' captions
    assert scorecard.status_table().column("verdict") == list(STATUS_MEANINGS)


def test_restatus_changes_only_the_words_of_a_verdict(ledger: dict) -> None:
    old = copy.deepcopy(ledger)
    for entry in old["chapters"].values():
        for claim in entry["claims"]:
            claim["status"] = {"reproduced": "pass", "holds": "pass"}.get(claim["status"], claim["status"])
    assert scorecard.problems(old)  # an old word is caught ...
    assert scorecard.restatus(old) == ledger  # ... and rewritten from `passed` alone, to the ledger as committed
