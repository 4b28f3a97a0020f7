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
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.ext.mathjax import MATHJAX_URL

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
    if app.config.mathjax_path == MATHJAX_PATH:
        source, target = mathjax_source(), static / MATHJAX_DIR
        target.mkdir(exist_ok=True)
        shutil.copyfile(source / MATHJAX_ENTRY, target / MATHJAX_ENTRY)
        shutil.copyfile(source.parent / "LICENSE", target / "LICENSE")
        for part in MATHJAX_PARTS:
            shutil.copytree(source / part, target / part, dirs_exist_ok=True)


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the hooks; needs ``sphinx.ext.mathjax`` (Jupyter Book loads it)."""
    app.setup_extension("sphinx.ext.mathjax")
    app.connect("config-inited", _use_local_mathjax)
    app.connect("html-page-context", _page_context, priority=900)  # after the others add scripts
    app.connect("build-finished", _copy_assets)
    return {"version": "0.1", "parallel_read_safe": True, "parallel_write_safe": True}
