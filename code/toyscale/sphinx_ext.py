"""Sphinx extension that makes the built book self-contained.

Listed in ``_config.yml`` under ``sphinx: extra_extensions``. It does three things:

1. **plotly.js**: the figures are emitted as ``text/html`` without plotly.js (see
   ``toyscale.core.plot``). This copies plotly's own ``plotly.min.js`` into ``_static/`` and
   loads it, synchronously in ``<head>``, on every page that holds a plotly figure, so it
   has run before the figures' inline scripts in ``<body>``.
2. **MathJax, offline**: Sphinx loads MathJax 3 from a CDN by default. This copies the
   MathJax 3 that the ``django-static-mathjax`` package ships (plain files, no Django needed)
   into ``_static/mathjax/`` and points ``mathjax_path`` at it. MyST's MathJax 3 settings
   (render only the elements whose class is in ``myst_mathjax_classes``) apply unchanged.
3. **thebe**: sphinx-thebe 0.3.1 writes the ``const THEBE_JS_URL = ...`` script twice on
   every page, and the second one throws "Identifier 'THEBE_JS_URL' has already been
   declared". The duplicate is dropped from each page.
4. **The book's own words from its data**: ``toyscale-findings`` renders what the book found
   (effects reproduced, by part) from the scorecard ledger; ``toyscale-exec-table`` and
   ``toyscale-build-time`` render the notebooks' run times and outcomes from the execution data of
   the build that made the pages (myst-nb's own table prints an emoji for the outcome, which
   renders as an empty box where no emoji font is installed).
5. **Layout**: a small style sheet, ``toyscale.css``, that keeps tables and figures inside the
   text column (on a phone too) and keeps them legible in print.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.ext.mathjax import MATHJAX_URL
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective

#: Where the files go, relative to the build's ``_static`` folder.
PLOTLY_JS = "plotly.min.js"
MATHJAX_DIR = "mathjax"
#: The MathJax 3 component that Sphinx loads (TeX and MathML in, CommonHTML out).
MATHJAX_ENTRY = "tex-mml-chtml.js"
MATHJAX_PATH = f"{MATHJAX_DIR}/{MATHJAX_ENTRY}"
#: What the entry point loads later: TeX extensions, fonts, menu, accessibility, speech.
MATHJAX_PARTS = ("input", "output", "ui", "a11y", "sre")


def plotly_js_source() -> Path:
    """Path of the ``plotly.min.js`` bundled with the installed plotly package."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / PLOTLY_JS
    if not path.is_file():
        raise FileNotFoundError(f"plotly.min.js not found at {path}; reinstall plotly")
    return path


def mathjax_source() -> Path:
    """Folder of the MathJax 3 browser build (``es5``) shipped by ``django-static-mathjax``."""
    try:
        import mathjax
    except ImportError as err:
        raise ImportError("the book serves MathJax locally: pip install django-static-mathjax") from err
    path = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    if not (path / MATHJAX_ENTRY).is_file():
        raise FileNotFoundError(f"{MATHJAX_ENTRY} not found under {path}; reinstall django-static-mathjax")
    return path


def _use_local_mathjax(app: Sphinx, config: Any) -> None:
    """config-inited: serve MathJax from ``_static`` unless the book chose another one."""
    if config.mathjax_path == MATHJAX_URL:
        config.mathjax_path = MATHJAX_PATH


def _page_context(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """html-page-context: add plotly.js where needed, drop sphinx-thebe's duplicate script."""
    if "plotly-graph-div" in context.get("body", ""):
        # No async/defer: it must have run before the figures' inline scripts.
        app.add_js_file(PLOTLY_JS, priority=200)
    scripts = context.get("script_files")
    if scripts:
        kept: list[Any] = []
        seen_thebe = False
        for script in scripts:
            body = getattr(script, "attributes", {}).get("body", "")
            if "THEBE_JS_URL" in body:
                if seen_thebe:
                    continue
                seen_thebe = True
            kept.append(script)
        scripts[:] = kept  # in place: it is the builder's list, reset before the next page


def _copy_assets(app: Sphinx, exception: Exception | None) -> None:
    """build-finished: copy plotly.min.js and MathJax into the html build's ``_static``."""
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    static.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(plotly_js_source(), static / PLOTLY_JS)
    (static / CSS_FILE).write_text(CSS)
    if app.config.mathjax_path == MATHJAX_PATH:
        source, target = mathjax_source(), static / MATHJAX_DIR
        target.mkdir(exist_ok=True)
        shutil.copyfile(source / MATHJAX_ENTRY, target / MATHJAX_ENTRY)
        shutil.copyfile(source.parent / "LICENSE", target / "LICENSE")
        for part in MATHJAX_PARTS:
            shutil.copytree(source / part, target / part, dirs_exist_ok=True)


#: The book's style sheet, written into ``_static``.
CSS_FILE = "toyscale.css"
CSS = """
/* Tables: never wider than the text column; a wide one scrolls inside its own box. */
.toyscale-table-wrap, .bd-article .table-wrapper { max-width: 100%; overflow-x: auto; }
table.toyscale-table { border-collapse: collapse; }
table.toyscale-table td, table.toyscale-table th {
  padding: 0.25em 0.6em; vertical-align: top; overflow-wrap: anywhere;
}
.bd-article table { max-width: 100%; }
.bd-article td, .bd-article th { overflow-wrap: anywhere; }
/* A heading (with its "#" link) breaks anywhere rather than push a phone's page sideways. */
.bd-article h1, .bd-article h2, .bd-article h3 { overflow-wrap: anywhere; }
table.toyscale-table caption { caption-side: bottom; text-align: left; font-size: 0.9em; }
/* Figures follow the column's width; below 480 px (a phone) a figure keeps that width and
   scrolls inside its own box, so neither its labels nor the text column are cut. */
.cell_output .output:has(.plotly-graph-div) { max-width: 100%; overflow-x: auto; }
.cell_output .plotly-graph-div { min-width: 480px; }
.bd-article pre { white-space: pre-wrap; overflow-wrap: anywhere; }
/* Display math wider than a phone scrolls inside its own line. */
.bd-article div.math, .bd-article mjx-container[display="true"] {
  max-width: 100%; overflow-x: auto; overflow-y: hidden;
}
/* On a phone, a paragraph or list item whose inline math is wider than the column scrolls inside its
   own box (MathJax does not break a formula; `position: relative` holds its absolutely placed
   assistive MathML too), so the page itself never scrolls sideways. */
@media (max-width: 600px) {
  .bd-article p, .bd-article li, .bd-article dd { position: relative; max-width: 100%; overflow-x: auto; }
  .bd-article mjx-container { max-width: 100%; }
}
@media print {
  .toyscale-table-wrap { overflow: visible; }
  table.toyscale-table { font-size: 0.75em !important; }
  .plotly-graph-div { break-inside: avoid; }
}
"""


class _Placeholder(nodes.General, nodes.Element):
    """Replaced after every document is read, when the execution data of the whole build is known."""


def _exec_data(env: Any) -> dict[str, dict]:
    """{docname: myst-nb's execution data} of every notebook this build executed or took from cache."""
    from myst_nb.sphinx_ import NbMetadataCollector

    data = NbMetadataCollector.get_doc_data(env)
    return {
        name: {**d["exec_data"], "raised": _raised(env, name)} for name, d in sorted(data.items()) if d.get("exec_data")
    }


def build_time_sentence(exec_data: dict[str, dict]) -> str:
    """'The 13 notebooks ran in 212 s in all (the slowest, 28 s) when this book was built; 0 failed.'"""
    times = [d["runtime"] for d in exec_data.values() if d.get("runtime") is not None]
    failed = sum(d.get("succeeded") is False or bool(d.get("raised")) for d in exec_data.values())
    if not times:
        return "No notebook was executed in the build that made these pages."
    return (
        f"The {len(exec_data)} notebooks ran in {sum(times):.0f} s in all (the slowest in "
        f"{max(times):.0f} s) in the build that made these pages; {failed} failed."
    )


class _ExecDirective(SphinxDirective):
    """A placeholder for the execution table (``toyscale-exec-table``) or sentence (``toyscale-build-time``)."""

    def run(self) -> list[nodes.Node]:
        from myst_nb.sphinx_ import NbMetadataCollector

        # myst-nb re-renders the documents that hold an execution table when new data arrive.
        NbMetadataCollector.set_doc_data(self.env, self.env.docname, "has_exec_table", True)
        return [_Placeholder(kind=self.name)]


class _ExecPostTransform(SphinxPostTransform):
    default_priority = 8  # before the references are resolved

    def run(self, **kwargs: Any) -> None:
        for node in list(self.document.findall(_Placeholder)):
            data = _exec_data(self.env)
            if node["kind"] == "toyscale-build-time":
                node.replace_self(nodes.paragraph(text=build_time_sentence(data)))
            else:
                node.replace_self(_exec_table(self.env, self.env.docname, data))


def _exec_table(env: Any, here: str, data: dict[str, dict]) -> nodes.Node:
    """Chapter (a link, by title), run time, how it ran, and the outcome in words."""
    from sphinx.addnodes import pending_xref

    header = ["Chapter", "Run time (s)", "How it ran", "Outcome"]
    table = nodes.table(classes=["colwidths-auto"])
    group = nodes.tgroup(cols=len(header))
    table += group
    for _ in header:
        group += nodes.colspec(colwidth=1)
    head = nodes.thead()
    group += head
    head += nodes.row("", *[nodes.entry("", nodes.paragraph(text=h)) for h in header])
    body = nodes.tbody()
    group += body
    for docname, d in data.items():
        link = pending_xref(
            refdoc=here,
            reftarget="/" + docname,
            reftype="doc",
            refdomain="std",
            refexplicit=False,
            refwarn=True,
        )
        link += nodes.inline(text=docname)
        runtime = "" if d.get("runtime") is None else f"{d['runtime']:.1f}"
        how = {"cache": "from the cache", "force": "run from scratch", "auto": "run"}.get(d.get("method"), "")
        raised = d.get("raised", 0)
        if d.get("succeeded") and not raised:
            outcome = nodes.paragraph(text="succeeded")
        elif d.get("succeeded"):
            # a build that allows errors records the notebook as run, but its page shows a traceback
            outcome = nodes.paragraph()
            outcome += nodes.strong(text="FAILED")
            outcome += nodes.Text(f": {raised} cell(s) raised; the page shows the traceback")
        else:
            outcome = nodes.paragraph()
            outcome += nodes.strong(text="FAILED")
            error = (d.get("error") or "").strip().splitlines()
            if error:
                outcome += nodes.Text(f": {error[-1][:200]}")
        cells = [nodes.paragraph("", "", link), nodes.paragraph(text=runtime), nodes.paragraph(text=how), outcome]
        body += nodes.row("", *[nodes.entry("", c) for c in cells])
    return table


def _raised(env: Any, docname: str) -> int:
    """How many of a notebook's cells show a traceback in its page."""
    try:
        doctree = env.get_doctree(docname)
    except Exception:  # a document not pickled yet
        return 0
    return sum("traceback" in node.get("classes", []) for node in doctree.findall(nodes.Element))


class _Findings(SphinxDirective):
    """What the book found, from the scorecard ledger: effects reproduced and controls holding, by part."""

    def run(self) -> list[nodes.Node]:
        from . import scorecard

        self.env.note_dependency(str(scorecard.LEDGER))
        found = scorecard.findings(scorecard.load())
        total = found["all"]
        lines = [
            f"Of the **{total['effects']} effects** the {total['chapters']} chapters put to the test, "
            f"**{total['reproduced']} are reproduced** at toy scale; "
            f"{total['controls_holding']} of {total['controls']} controls hold. By part:",
            "",
        ]
        for part, counts in found["parts"].items():
            lines.append(
                f"- {scorecard.PART_NAMES[part]}: {counts['reproduced']} of {counts['effects']} effects "
                f"reproduced ({counts['chapters']} chapters)"
            )
        return self.parse_text_to_nodes("\n".join(lines))


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the hooks; needs ``sphinx.ext.mathjax`` (Jupyter Book loads it)."""
    app.setup_extension("sphinx.ext.mathjax")
    app.add_node(_Placeholder)
    app.add_directive("toyscale-exec-table", _ExecDirective)
    app.add_directive("toyscale-build-time", _ExecDirective)
    app.add_directive("toyscale-findings", _Findings)
    app.add_post_transform(_ExecPostTransform)
    app.add_css_file(CSS_FILE)
    app.connect("config-inited", _use_local_mathjax)
    app.connect("html-page-context", _page_context, priority=900)  # after the others add scripts
    app.connect("build-finished", _copy_assets)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
