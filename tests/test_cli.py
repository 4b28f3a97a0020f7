"""The command line: user errors exit 2 with a message; the registry matches the package."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from toyscale import datasets
from toyscale.chapters import CHAPTERS, UnknownChapter, get
from toyscale.cli import main
from toyscale.core.data import load_arrays
from toyscale.datasets import ARTIFACTS, Artifact


def test_unknown_chapter_exits_2_and_lists_the_chapters(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown chapter 'nope'" in err and "jrc" in err and "Traceback" not in err


def test_reproduce_needs_names_or_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce"]) == 2
    assert main(["reproduce", "jrc", "--all"]) == 2
    assert main(["reproduce", "jrc", "--seeds", "0"]) == 2


def test_unknown_command_exits_2() -> None:
    done = subprocess.run([sys.executable, "-m", "toyscale", "fly"], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "invalid choice" in done.stderr


@pytest.mark.parametrize("name", list(CHAPTERS))
def test_every_registered_chapter_meets_the_contract(name: str) -> None:
    module = get(name).load()
    config = module.Config.fast()
    assert type(config) is module.Config
    assert module.CLAIMS and len({c.id for c in module.CLAIMS}) == len(module.CLAIMS)
    with pytest.raises(UnknownChapter):
        get(name + "_nope")


@pytest.mark.parametrize("name", list(CHAPTERS))
def test_run_works_for_every_chapter_on_one_seed(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    # the README's one-chapter command on one seed: a claim that needs several seeds says so in its row
    # instead of raising (seed 1 has committed D-CPT grids and GLVQ models, so nothing slow is rebuilt)
    assert main(["run", name, "--fast", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "verdict" in out and all(claim.id in out for claim in get(name).load().CLAIMS)


def test_reproduce_writes_the_scorecard_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "scorecard.json"
    assert main(["reproduce", "jrc", "--fast", "--seeds", "2", "--seed-start", "200", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "jrc: effects " in out and " reproduced · controls " in out and "all: effects " in out
    scorecard = json.loads(path.read_text())
    assert set(scorecard) == {"environment", "config", "seeds", "claims", "tally", "seconds"}
    assert scorecard["seeds"] == [200, 201] and scorecard["config"] == "fast" and scorecard["seconds"]["jrc"] > 0
    assert {"python", "torch", "numpy", "cpu", "cores", "torch_threads", "device"} <= set(scorecard["environment"])
    ids = [c["id"] for c in scorecard["claims"]]
    assert ids == [c.id for c in get("jrc").load().CLAIMS]
    first = scorecard["claims"][0]
    assert {"kind", "status", "seeds", "values", "parts"} <= set(first)
    assert first["seeds"] == [200, 201] and len(first["values"]) == 2
    assert scorecard["tally"]["jrc"]["effects"] >= 1
    assert [p.name for p in tmp_path.iterdir()] == ["scorecard.json"]  # no temporary file left


def test_reproduce_rejects_a_negative_seed_start(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "jrc", "--seed-start", "-1"]) == 2
    assert "--seed-start" in capsys.readouterr().err


def test_calibrate_reports_window_pass_rates_and_keeps_off_the_book_seeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate", "jrc", "--seed-start", "3"]) == 2
    assert "1000" in capsys.readouterr().err
    assert main(["calibrate", "jrc", "--seeds", "4"]) == 2
    capsys.readouterr()
    path = tmp_path / "jrc.json"
    assert main(["calibrate", "jrc", "--fast", "--seeds", "5", "--no-falsifiers", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "windows passing" in out and "gauc_over_pointwise" in out
    record = json.loads(path.read_text())
    assert record["seeds"] == list(range(1000, 1005)) and record["fast"] is True and "environment" in record
    assert record["fingerprint"] == get("jrc").fingerprint(get("jrc").load().Config.fast())
    assert {c["id"] for c in record["claims"]} == {c.id for c in get("jrc").load().CLAIMS}


def test_data_rebuild_rewrites_a_committed_file_and_rejects_unknown_names(
    tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "--rebuild", "nope"]) == 2
    assert "unknown artifact 'nope'" in capsys.readouterr().err
    # a stand-in artifact with a quick maker, written to a temporary path
    target = tmp_path / "sub" / "tiny.npz"
    monkeypatch.setitem(ARTIFACTS, "tiny", Artifact("tiny", (), "toyscale.llm.corpus:reference_arrays", str(target)))
    monkeypatch.setattr(datasets, "MANIFEST", tmp_path / "fingerprints.json")
    assert main(["data", "--rebuild", "tiny"]) == 0
    out = capsys.readouterr().out
    arrays = load_arrays(target)
    assert ARTIFACTS["tiny"].fingerprint() in out and set(arrays) >= {"prose_train", "prose_test"}
    # the rebuild recorded what made the file, so it loads as current
    assert datasets.manifest()["tiny"]["fingerprint"] == ARTIFACTS["tiny"].code_fingerprint()
    assert not ARTIFACTS["tiny"].staleness() and set(ARTIFACTS["tiny"].load()) == set(arrays)


@pytest.mark.enable_socket  # the kernel talks to the client over loopback
def test_time_notebook_executes_a_notebook_from_its_folder(tmp_path: Path) -> None:
    import nbformat

    from toyscale.cli import _time_notebook

    (tmp_path / "here.txt").write_text("found")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("assert open('here.txt').read() == 'found'")]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "tiny.ipynb")
    assert 0 < _time_notebook(tmp_path / "tiny.ipynb") < 60
    assert main(["bench", "--notebooks", "nope"]) == 2


def test_audit_finds_no_violation_in_any_chapter(capsys: pytest.CaptureFixture[str]) -> None:
    # chapters still in RE_AUDIT_PENDING only warn; a chapter that left it must meet every rule
    assert main(["audit", "--all"]) == 0
    out = capsys.readouterr().out
    assert all(f"\n{name}: 0 violations" in out for name in CHAPTERS) and "audit: 0 violations in 13 chapters" in out
    assert "warning rec4ad [falsifiers]: falsifier 'ads_only_as_mix'" in out  # a Δ ≡ 0 falsifier the review found
    assert main(["audit", "nosuch"]) == 2
