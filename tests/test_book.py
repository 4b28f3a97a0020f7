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
    """The pages to check in the browser: every page in _toc.yml, notebooks and Markdown alike."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]
    for name in _toc_files(toc):
        if name not in pages and any((ROOT / f"{name}{ext}").is_file() for ext in (".ipynb", ".md")):
            pages.append(name)
    return pages


@pytest.fixture(scope="module")
def built_book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the whole book once, from scratch, with every notebook executed; return html/.

    With `TOYSCALE_BOOK_HTML=path/_build/html` the browser checks run on a book already built
    by the same command (to check a layout change without executing every notebook again).
    """
    prebuilt = os.environ.get("TOYSCALE_BOOK_HTML")
    if prebuilt:
        html = Path(prebuilt)
        assert (html / "index.html").is_file(), f"TOYSCALE_BOOK_HTML={prebuilt} holds no index.html"
        return html
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
# Layout problems of every drawn plotly figure: an axis title, tick label, legend entry or the title
# cut by the figure's box; an axis title, tick label, legend entry or panel title on the figure's
# title; an axis title on tick labels, the legend or a panel title; a legend entry on tick labels.
_FIGURE_LAYOUT = """() => {
  // Layout problems of every plotly figure on the page: text clipped by the figure's box, or
  // overlapping the figure title, or an axis title overlapping tick labels or the legend.
  const problems = [];
  const inter = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1.5 &&
                          Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1.5;
  const boxes = (root, sel) => [...root.querySelectorAll(sel)]
      .filter(e => (e.textContent || '').trim() && getComputedStyle(e).display !== 'none')
      .map(e => ({el: e, text: e.textContent.trim().slice(0, 40), r: e.getBoundingClientRect()}))
      .filter(b => b.r.width > 0 && b.r.height > 0);
  document.querySelectorAll('div.plotly-graph-div').forEach((div, k) => {
    const svg = div.querySelector('.main-svg');
    if (!svg) return;
    const fig = svg.getBoundingClientRect();
    const name = `figure ${k + 1}`;
    const title = boxes(div, '.g-gtitle .gtitle');
    const axisTitles = boxes(div, '.infolayer [class*="xtitle"], .infolayer [class*="ytitle"]');
    const ticks = boxes(div, '[class*="xaxislayer"] text, [class*="yaxislayer"] text');
    const legend = boxes(div, '.legend .legendtext, .legend .legendtitletext');
    const notes = boxes(div, '.annotation .annotation-text');
    for (const b of [...title, ...axisTitles, ...ticks, ...legend]) {
      const r = b.r;
      if (r.left < fig.left - 1 || r.right > fig.right + 1 || r.top < fig.top - 1 || r.bottom > fig.bottom + 1)
        problems.push(`${name}: "${b.text}" is clipped by the figure's box`);
    }
    for (const t of title) for (const b of [...axisTitles, ...ticks, ...legend, ...notes])
      if (inter(t.r, b.r)) problems.push(`${name}: "${b.text}" overlaps the title "${t.text}"`);
    for (const a of axisTitles) for (const b of [...ticks, ...legend, ...notes])
      if (inter(a.r, b.r)) problems.push(`${name}: axis title "${a.text}" overlaps "${b.text}"`);
    for (const l of legend) for (const b of ticks)
      if (inter(l.r, b.r)) problems.push(`${name}: legend "${l.text}" overlaps tick "${b.text}"`);
  });
  return [...new Set(problems)];
}"""
# Tables wider than the text column (a table that scrolls sideways inside a wrapper counts too).
_WIDE_TABLES = """() => {
  const column = document.querySelector('article.bd-article') || document.querySelector('main');
  const width = column.getBoundingClientRect().width;
  return [...column.querySelectorAll('table')]
    .map(t => [t, t.getBoundingClientRect().width])
    .filter(([t, w]) => w > width + 1)
    .map(([t, w]) => {
      const name = (t.caption ? t.caption.textContent : (t.querySelector('th') || t).textContent).trim();
      return `table "${name.slice(0, 60)}" is ${Math.round(w)} px wide in a ${Math.round(width)} px column`;
    });
}"""
#: A table cell longer than this many words cannot be read across its row; it belongs in the table's notes.
MAX_CELL_WORDS = 50
# Table cells too long to read across a row (a claim's full check and its reason are the table's notes).
_LONG_CELLS = f"""() => [...document.querySelectorAll('article.bd-article td, main td')]
  .map(td => td.textContent.trim().split(/\\s+/))
  .filter(words => words.length > {MAX_CELL_WORDS})
  .map(words => `a table cell of ${{words.length}} words: "${{words.slice(0, 12).join(' ')}} …"`)"""
# The page scrolls sideways (the text column, or anything in it, is wider than the window).
_SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"
PHONE = {"width": 390, "height": 844}
PRINT_PAGE = "book/recsys/star"


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

        problems += page.evaluate(_FIGURE_LAYOUT)
        problems += page.evaluate(_WIDE_TABLES)
        problems += page.evaluate(_LONG_CELLS)

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


def _open(context: Any, server: str, page_name: str, viewport: dict[str, int] | None = None) -> Any:
    """A page of the book, loaded with every figure drawn (requests outside the book aborted)."""
    page = context.new_page()
    if viewport:
        page.set_viewport_size(viewport)
    page.route(
        "**/*",
        lambda route: route.continue_() if urlsplit(route.request.url).hostname == "127.0.0.1" else route.abort(),
    )
    page.goto(f"{server}/{page_name}.html", wait_until="load")
    page.wait_for_load_state("networkidle")
    if page.locator("div.plotly-graph-div").count():
        page.wait_for_function(_ALL_PLOTS_DRAWN, timeout=15_000)
    return page


@pytest.mark.parametrize("page_name", chapter_pages())
def test_page_on_a_phone(page_name: str, server: str, browser_context: Any) -> None:
    """At 390 px the page does not scroll sideways, and no figure's labels are cut or overlap."""
    page = _open(browser_context, server, page_name, PHONE)
    try:
        problems = []
        sideways = page.evaluate(_SIDEWAYS)
        if sideways > 1:
            problems.append(f"the page scrolls sideways by {sideways} px at {PHONE['width']} px")
        problems += page.evaluate(_FIGURE_LAYOUT)
    finally:
        page.close()
    assert not problems, f"{page_name} on a phone:\n" + "\n".join(problems)


def test_a_chapter_prints_legibly(server: str, browser_context: Any) -> None:
    """In the print view every figure is drawn at a legible size inside the page, and no table is cut."""
    page = _open(browser_context, server, PRINT_PAGE)
    try:
        page.emulate_media(media="print")
        page.set_viewport_size({"width": 794, "height": 1123})  # A4 at 96 dpi
        page.wait_for_timeout(500)
        problems = list(page.evaluate(_WIDE_TABLES)) + list(page.evaluate(_FIGURE_LAYOUT))
        sizes = page.evaluate(
            """() => [...document.querySelectorAll('div.plotly-graph-div .main-svg')]
                 .map(s => [s.getBoundingClientRect().width, s.getBoundingClientRect().height])"""
        )
        assert sizes, f"{PRINT_PAGE} printed no figure"
        problems += [
            f"figure {i + 1} prints at {w:.0f}×{h:.0f} px" for i, (w, h) in enumerate(sizes) if w < 400 or h < 200
        ]
        if page.evaluate(_SIDEWAYS) > 1:
            problems.append("the print view is wider than the page")
        hidden = page.evaluate("() => getComputedStyle(document.querySelector('.bd-sidebar-primary')).display")
        if hidden != "none":
            problems.append("the sidebar is printed")
    finally:
        page.close()
    assert not problems, f"{PRINT_PAGE} in print:\n" + "\n".join(problems)
