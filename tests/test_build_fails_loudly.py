"""The book's own configuration on a tiny throwaway book: a notebook that raises fails the build.

The throwaway book copies `_config.yml` and the bibliography and holds one notebook. With a cell
that raises, `jupyter-book build` must exit non-zero and name the error (myst-nb's
`nb_execution_raise_on_error`), never succeed with a traceback on the page. Without it, the same
book builds, a number placed into the prose by myst-nb's `glue` appears in the page, and no launch
or repository button points anywhere.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
PROSE = "The gain is {glue:text}`gain:+.3f` on average."

pytestmark = pytest.mark.enable_socket  # the kernel talks to the build over loopback


def _book(tmp_path: Path, code: str) -> Path:
    """A one-page book with the repository's configuration and a notebook running `code`."""
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "book").mkdir()
    shutil.copy(ROOT / "book" / "references.bib", tmp_path / "book" / "references.bib")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/page\n")
    (tmp_path / "book" / "intro.md").write_text("# A throwaway book\n\nOne page.\n")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell(f"# The page\n\n{PROSE}"), nbformat.v4.new_code_cell(code)]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "book" / "page.ipynb")
    return tmp_path


def _build(book: Path) -> subprocess.CompletedProcess[str]:
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    command = [str(jupyter_book) if jupyter_book.exists() else "jupyter-book", "build", str(book)]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)


def test_a_notebook_that_raises_fails_the_build(tmp_path: Path) -> None:
    book = _book(
        tmp_path, "from myst_nb import glue\nglue('gain', 0.01234, display=False)\nraise ZeroDivisionError('boom')"
    )
    done = _build(book)
    log = done.stdout + done.stderr
    assert done.returncode != 0, f"the build succeeded although the notebook raised:\n{log[-3000:]}"
    assert "page.ipynb" in log and "ZeroDivisionError" in log


def test_the_same_book_without_the_error_builds_with_glued_numbers_and_no_dead_buttons(tmp_path: Path) -> None:
    book = _book(tmp_path, "from myst_nb import glue\nglue('gain', 0.01234, display=False)")
    done = _build(book)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    page = (book / "_build" / "html" / "book" / "page.html").read_text()
    assert "+0.012" in page and "{glue" not in page
    assert "launch-buttons" not in page and "repository-button" not in page
    assert "download-source-button" in page
