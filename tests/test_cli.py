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
from toyscale.core.report import readable
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
    assert "verdict" in out and all(readable(claim.id) in out for claim in get(name).load().CLAIMS)


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
    assert "windows passing" in out and "gauc_over_strongest" in out
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
    lines = capsys.readouterr().out.splitlines()
    assert all(any(line.startswith(f"{name}: 0 violations") for line in lines) for name in CHAPTERS)
    assert "audit: 0 violations in 13 chapters (pending chapters only warn)" in lines
    assert "glvq: 0 violations, 0 warnings" in lines  # re-audited (issue 44): its Δ ≡ 0 falsifiers are gone
    assert "rec4ad: 0 violations, 0 warnings" in lines  # re-audited (issue 42): no longer pending, nothing to warn
    assert "star: 0 violations, 0 warnings" in lines  # re-audited (issue 41): its Δ ≡ 0 falsifiers are gone
    assert main(["audit", "nosuch"]) == 2


def test_reproduce_with_two_jobs_writes_the_same_json_as_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # fangorn and fapes are the cheapest chapters on --fast (about a second a seed)
    payloads = []
    for jobs in ("1", "2"):
        path = tmp_path / f"jobs{jobs}.json"
        assert (
            main(["reproduce", "fangorn", "fapes", "--fast", "--seeds", "2", "--jobs", jobs, "--json", str(path)]) == 0
        )
        payload = json.loads(path.read_text())
        del payload["environment"], payload["seconds"]  # timings and the machine aside
        payloads.append(payload)
    assert payloads[0] == payloads[1] and payloads[0]["seeds"] == [0, 1]
    capsys.readouterr()


def test_jobs_and_scheduler_are_checked_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["reproduce", "fangorn", "--jobs", "0"]) == 2
    assert "--jobs 0: must be a positive number of processes or -1" in capsys.readouterr().err
    assert main(["calibrate", "fangorn", "--scheduler", "localhost:8786"]) == 2
    assert "--scheduler 'localhost:8786': must be a Dask scheduler's address" in capsys.readouterr().err
    monkeypatch.setenv("TOYSCALE_DASK_SCHEDULER", "tcp://127.0.0.1:8786")
    assert main(["reproduce", "fangorn", "--jobs", "2"]) == 2
    assert "give one (unset TOYSCALE_DASK_SCHEDULER to run on this machine)" in capsys.readouterr().err
    monkeypatch.delenv("TOYSCALE_DASK_SCHEDULER")
    assert main(["bench", "--speedup", "fangorn"]) == 2  # nothing to compare without --jobs
    assert "pass --jobs" in capsys.readouterr().err
    assert main(["bench", "--notebooks", "--all", "--jobs", "2"]) == 2


def test_a_failed_calibration_seed_is_named_and_the_others_stay_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = get("fangorn").load()
    real_run = module.run

    def run(config: object, *, seed: int) -> object:
        if seed == 1002:
            raise ArithmeticError("a bad seed")
        return real_run(config, seed=seed)

    monkeypatch.setattr(module, "run", run)  # in this process: --jobs 1 runs the seeds here
    cache = tmp_path / "cache"
    assert main(["calibrate", "fangorn", "--fast", "--seeds", "5", "--no-falsifiers", "--cache", str(cache)]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (
        "python -m toyscale calibrate: error: 1 of 5 tasks failed (fangorn seed 1002: ArithmeticError: a bad seed)"
    )
    assert "Traceback" in err
    assert sorted(int(p.stem.rsplit("-", 1)[1]) for p in cache.iterdir()) == [1000, 1001, 1003, 1004]


def test_data_rebuilds_several_artifacts_as_parallel_tasks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("tiny_a", "tiny_b"):  # stand-ins with a quick maker, each written to a temporary path
        artifact = Artifact(name, (), "toyscale.llm.corpus:reference_arrays", str(tmp_path / f"{name}.npz"))
        monkeypatch.setitem(ARTIFACTS, name, artifact)
    monkeypatch.setattr(datasets, "MANIFEST", tmp_path / "fingerprints.json")
    assert main(["data", "--rebuild", "tiny_a", "tiny_b", "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("rebuilt ") == 2 and "each sha256" in out
    assert set(datasets.manifest()) == {"tiny_a", "tiny_b"}  # both recorded, by this process alone
    assert ARTIFACTS["tiny_a"].fingerprint() == ARTIFACTS["tiny_b"].fingerprint() in out
    assert main(["data", "--rebuild", "tiny_a", "nope"]) == 2
