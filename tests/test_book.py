"""The book builds from scratch without a warning, and its pages work offline in a real browser.

The build runs once per session (every notebook executed) into a temporary folder. The html
is then served on 127.0.0.1 and every chapter page is opened in headless Chromium, driven by
playwright, with every request that leaves 127.0.0.1 aborted and counted as a failure. A page
passes when it logs no console error, throws no page error, loses no request, draws every
plotly figure, shows a hover label when the mouse moves over each figure, and renders its
math with the book's own MathJax.

Chromium is Debian's (`apt-get install -y chromium`). Without it the browser checks skip,
unless `TOYSCALE_REQUIRE_BROWSER=1`, when they fail.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from toyscale.sphinx_ext import MATHJAX_PATH, PLOTLY_JS

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: pydata-sphinx-theme logs this once in a fresh profile; it is harmless.
HARMLESS_CONSOLE = ("Got invalid theme mode",)
BUILD_TIMEOUT_S = 1800
#: Sphinx's warnings, and Jupyter Book's own complaint about _config.yml.
WARNING_RE = re.compile(r"WARNING:|Validation errors in config")

pytestmark = [pytest.mark.book, pytest.mark.enable_socket]


def _toc_files(entry: Any) -> Iterator[str]:
    """Every `file:` in a _toc.yml subtree, in order."""
    if isinstance(entry, dict):
        if "file" in entry:
            yield entry["file"]
        for key in ("parts", "chapters", "sections"):
            for child in entry.get(key, []):
                yield from _toc_files(child)
    elif isinstance(entry, list):
        for child in entry:
            yield from _toc_files(child)


def chapter_pages() -> list[str]:
    """The pages to check in the browser: the root page and every notebook in _toc.yml."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]
    for name in _toc_files(toc):
        if name not in pages and (ROOT / f"{name}.ipynb").is_file():
            pages.append(name)
    return pages


@pytest.fixture(scope="module")
def built_book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the whole book once, from scratch, with every notebook executed; return html/."""
    out = tmp_path_factory.mktemp("book")
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    command = [
        str(jupyter_book) if jupyter_book.exists() else "jupyter-book",
        "build",
        "-W",
        "-n",
        "--keep-going",
        "--path-output",
        str(out),
        ".",
    ]
    env = {**os.environ, "TOYSCALE_PROGRESS": "0", "PYTHONUNBUFFERED": "1"}
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    elapsed = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    (out / "build.log").write_text(log)
    print(f"\njupyter-book build took {elapsed:.1f} s (log: {out / 'build.log'})")
    warnings = [line for line in log.splitlines() if WARNING_RE.search(line)]
    assert proc.returncode == 0, f"jupyter-book build failed ({proc.returncode}):\n{log[-6000:]}"
    assert not warnings, "the build warned:\n" + "\n".join(warnings)
    html = out / "_build" / "html"
    assert (html / "index.html").is_file(), f"no index.html under {html}"
    return html


def test_book_builds_without_warnings(built_book: Path) -> None:
    for page in chapter_pages():
        assert (built_book / f"{page}.html").is_file(), f"{page}.html was not built"
    static = built_book / "_static"
    assert (static / PLOTLY_JS).is_file()
    assert (static / MATHJAX_PATH).is_file()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server(built_book: Path) -> Iterator[str]:
    """Serve the built html on 127.0.0.1; yield its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(built_book))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _no_browser(reason: str) -> None:
    if os.environ.get("TOYSCALE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (TOYSCALE_REQUIRE_BROWSER=1)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless Debian Chromium with a fresh profile, driven by playwright."""
    if not CHROMIUM.exists():
        _no_browser(f"{CHROMIUM} is missing: apt-get install -y chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _no_browser("the playwright Python package is not installed")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()
    shutil.rmtree(profile, ignore_errors=True)


# Each math element that Sphinx wrote must hold MathJax's output (v2: .MathJax, v3: mjx-container).
_MATH_RENDERED = """() => {
  const maths = [...document.querySelectorAll('.math')];
  return maths.every(m => m.querySelector('.MathJax, .MathJax_Display, .MathJax_SVG, mjx-container'));
}"""
# The page's prose with code, scripts and styles removed.
_PROSE_TEXT = """() => {
  const body = document.body.cloneNode(true);
  body.querySelectorAll('pre, code, script, style, .highlight').forEach(e => e.remove());
  return body.innerText;
}"""
_RAW_MATH = ("$$", "\\(", "\\[", "\\begin{")
_ALL_PLOTS_DRAWN = """() => [...document.querySelectorAll('div.plotly-graph-div')]
  .every(d => d.querySelector('.main-svg'))"""
_HOVER = ".hoverlayer .hovertext, .hoverlayer .legend"


def _hover_shows_label(page: Any, plot: Any) -> bool:
    """Hover the plot's drawn data points, then sweep its drawing area, until plotly draws a label.

    A reader hovers a marker or a bar; a sweep along fixed heights alone can pass between the few
    markers of a line chart whose values happen to sit away from those heights.
    """
    plot.scroll_into_view_if_needed()
    points = plot.locator(".scatterlayer .point, .barlayer .point, .boxlayer .point")
    for i in range(min(points.count(), 12)):
        box = points.nth(i).bounding_box()
        if box is None or box["width"] <= 0 or box["height"] <= 0:
            continue
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_timeout(25)
        if plot.locator(_HOVER).count():
            return True
    area = plot.locator(".nsewdrag").first
    box = (area if area.count() else plot).bounding_box()
    if box is None:
        return False
    for fy in (0.5, 0.3, 0.7, 0.15, 0.85):
        for i in range(1, 24):
            page.mouse.move(box["x"] + box["width"] * i / 24, box["y"] + box["height"] * fy)
            if plot.locator(_HOVER).count():
                return True
            page.wait_for_timeout(25)
    return False


@pytest.mark.parametrize("page_name", chapter_pages())
def test_page_in_browser(
    page_name: str, server: str, browser_context: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    problems: list[str] = []
    page = browser_context.new_page()

    def route(route: Any) -> None:
        url = route.request.url
        if urlsplit(url).hostname == "127.0.0.1" or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            problems.append(f"request outside the book (aborted): {url}")
            route.abort()

    def on_console(msg: Any) -> None:
        if msg.type == "error" and not any(h in msg.text for h in HARMLESS_CONSOLE):
            problems.append(f"console error: {msg.text}")

    def on_response(response: Any) -> None:
        if response.status >= 400:
            problems.append(f"HTTP {response.status}: {response.url}")

    page.route("**/*", route)
    page.on("console", on_console)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on(
        "requestfailed",
        lambda req: problems.append(f"request failed: {req.url} ({req.failure})"),
    )
    page.on("response", on_response)
    try:
        page.goto(f"{server}/{page_name}.html", wait_until="load")
        page.wait_for_load_state("networkidle")

        plots = page.locator("div.plotly-graph-div")
        if plots.count():
            try:
                page.wait_for_function(_ALL_PLOTS_DRAWN, timeout=15_000)
            except Exception:
                problems.append("a plotly figure did not render (.main-svg missing)")
            for i in range(plots.count()):
                if not _hover_shows_label(page, plots.nth(i)):
                    problems.append(f"plotly figure {i + 1}: no hover label under the mouse")

        if page.locator(".math").count():
            try:
                page.wait_for_function(_MATH_RENDERED, timeout=20_000)
            except Exception:
                problems.append("math was not rendered by MathJax")
        prose = page.evaluate(_PROSE_TEXT)
        raw = [token for token in _RAW_MATH if token in prose]
        if raw:
            problems.append(f"raw TeX left in the page text: {raw}")

        page.evaluate("window.scrollTo(0, 0)")
        shots = tmp_path_factory.getbasetemp() / "screenshots"
        shots.mkdir(exist_ok=True)
        page.screenshot(path=str(shots / f"{page_name.replace('/', '__')}.png"))
    finally:
        page.close()
    assert not problems, f"{page_name}:\n" + "\n".join(problems)
