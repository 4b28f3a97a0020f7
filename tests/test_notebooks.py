"""Every chapter notebook: its .ipynb and py:percent twins match, and the .ipynb holds no outputs."""

from __future__ import annotations

import re
from pathlib import Path

import jupytext
import pytest
from jupytext.compare import compare_notebooks

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p for p in (ROOT / "book").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS, "no notebook found under book/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_pair_matches(path: Path) -> None:
    twin = path.with_suffix(".py")
    assert twin.exists(), (
        f"{path.name} has no py:percent twin {twin.name}; run `jupytext --set-formats ipynb,py:percent {path}`"
    )
    notebook = jupytext.read(path)
    assert notebook.metadata.get("jupytext", {}).get("formats") == "ipynb,py:percent", (
        f"{path.name} is not paired as ipynb,py:percent"
    )
    compare_notebooks(jupytext.read(twin), notebook, fmt="py:percent", allow_expected_differences=False)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_outputs(path: Path) -> None:
    notebook = jupytext.read(path)
    dirty = [
        i
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count)
    ]
    assert not dirty, (
        f"{path.name} holds outputs or execution counts in cells {dirty}; strip them (nbstripout or Clear All)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_notebook_is_in_toc(path: Path) -> None:
    entry = path.relative_to(ROOT).with_suffix("").as_posix()
    assert entry in (ROOT / "_toc.yml").read_text(), f"{entry} is not listed in _toc.yml"


def test_references_parse_and_every_cited_key_exists() -> None:
    # a fast check of what the book build would only catch minutes later: a broken entry or a missing key
    from pybtex.database import parse_file

    keys = set(parse_file(ROOT / "book" / "references.bib").entries)
    cited = set()
    for path in NOTEBOOKS:
        for group in re.findall(r"\{cite[pt]?\}`([^`]+)`", path.with_suffix(".py").read_text()):
            cited.update(key.strip() for key in group.split(","))
    assert cited, "no {cite} found in the chapters"
    assert not cited - keys, f"cited but not in book/references.bib: {sorted(cited - keys)}"
