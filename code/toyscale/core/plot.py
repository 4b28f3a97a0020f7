"""The book's plotting theme and its offline plotly renderer.

One theme for every chapter: the paper's method is always drawn in `METHOD_COLOR`, baselines in
greys and blues, an oracle (the truth, where a toy world knows it) in near-black dashes.

Figures in the built book must work offline. plotly's default renderer emits only its own JSON
mimetype, which the book builder skips, and its `notebook` renderer inlines all of plotly.js in
every page. The `toyscale` renderer emits `text/html` that *refers* to a `Plotly` already loaded
by the page (the book's Sphinx extension, `toyscale.sphinx_ext`, serves plotly.js from the book's
own static files). Inside a Jupyter kernel the default renderer becomes
`plotly_mimetype+toyscale`, so a figure is interactive in JupyterLab as well as in the book.
"""

from __future__ import annotations

import math
import re
import sys

import plotly.graph_objects as go
import plotly.io as pio
from plotly.io._base_renderers import MimetypeRenderer

METHOD_COLOR = "#D1495B"  # the paper's method, in every chapter
BASELINE_COLORS = ["#2E5F8A", "#8C8C8C", "#5FA8D3", "#3D3D3D", "#A7C4DA", "#B5B5B5"]  # blues and greys
ORACLE_COLOR = "#1B1B1B"  # the ground truth of a toy world
FONT = "Inter, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"


def colors(arms: list[str], method: str | list[str]) -> dict[str, str]:
    """A color per arm: the method arm(s) in METHOD_COLOR, every other arm the next baseline color.

    Several method arms (e.g. two variants of the paper's loss) get the method color at full and
    at lighter strength; an arm named 'oracle' gets ORACLE_COLOR.
    """
    methods = [method] if isinstance(method, str) else list(method)
    unknown = [m for m in methods if m not in arms]
    if unknown:
        raise ValueError(f"method arm(s) {unknown} are not among the arms {arms}")
    method_shades = [METHOD_COLOR, "#E8919C", "#F2C1C8"]
    result, baseline_index = {}, 0
    for arm in arms:
        if arm in methods:
            result[arm] = method_shades[methods.index(arm) % len(method_shades)]
        elif arm == "oracle":
            result[arm] = ORACLE_COLOR
        else:
            result[arm] = BASELINE_COLORS[baseline_index % len(BASELINE_COLORS)]
            baseline_index += 1
    return result


def figure(title: str, x_title: str, y_title: str, **layout: object) -> go.Figure:
    """An empty figure in the book's theme; the title should state the finding, the axes their units."""
    fig = go.Figure(layout=go.Layout(template="toyscale"))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, **layout)
    return fig


def _template() -> go.layout.Template:
    """The toyscale theme: white background, light grid, legend below the plot, the method's color first.

    Margins grow to fit what they hold (`automargin` on the title and every axis) instead of a
    fixed width that long tick labels or an axis title overflow.
    """
    axis = dict(
        showgrid=True,
        gridcolor="#EEEEEE",
        zeroline=False,
        linecolor="#BBBBBB",
        ticks="outside",
        automargin=True,
        title=dict(standoff=8),
    )
    return go.layout.Template(
        layout=go.Layout(
            font=dict(family=FONT, size=13, color="#222222"),
            # just above the plot area; the top margin grows to fit it (and its second line)
            title=dict(
                font=dict(size=15),
                x=0.0,
                xanchor="left",
                xref="container",
                y=1.0,
                yanchor="bottom",
                yref="paper",
                automargin=True,
                pad=dict(b=12, l=10),
            ),
            colorway=[METHOD_COLOR, *BASELINE_COLORS],
            paper_bgcolor="white",
            plot_bgcolor="white",
            xaxis=axis,
            yaxis=axis,
            # below the plot, under the x-axis title (`layout_for_the_page` places it), in rows
            legend=dict(orientation="h", yanchor="top", xanchor="left", x=0.0),
            margin=dict(l=10, r=20, t=40, b=10, autoexpand=True),
            autosize=True,
            height=460,
            hoverlabel=dict(font=dict(family=FONT)),
        )
    )


#: The longest line of a figure title, an axis title, a category label or a legend entry.
TITLE_CHARS, AXIS_TITLE_CHARS, Y_TITLE_CHARS, LABEL_CHARS = 52, 45, 30, 16
#: Height added per two legend entries beyond four, so a long legend below the plot does not squash it.
LEGEND_ROW_PX = 22


#: The tags plotly reads as markup in a text (any other `<...>`, such as a `<TRUNC>` token, is plain text).
_MARKUP = re.compile(r"</?(b|i|em|sup|sub|span|a|br)\b", re.I)


def _wrap_line(text: str, width: int) -> str:
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "<br>".join([*lines, line])


def wrap(text: str, width: int) -> str:
    """Break `text` into lines of at most about `width` characters with <br> (plotly does not wrap).

    Each line a chapter broke itself is wrapped on its own; a `<sup>` line (a subtitle, in smaller
    type) holds more characters, and each of its lines keeps its own `<sup>` tags.
    """
    if not isinstance(text, str):
        return text
    out = []
    for part in text.split("<br>"):
        sup = re.fullmatch(r"<sup>(.*)</sup>", part, re.S)
        if sup:
            out += [f"<sup>{line}</sup>" for line in _wrap_line(sup.group(1), width * 4 // 3).split("<br>")]
        elif len(part) > width and not _MARKUP.search(part):
            out.append(_wrap_line(part, width))
        else:
            out.append(part)
    return "<br>".join(out)


def _text(title: object) -> str | None:
    if isinstance(title, dict):
        return title.get("text")
    return title if isinstance(title, str) else None


def _set_text(container: dict, key: str, width: int) -> None:
    title = container.get(key)
    text = _text(title)
    if text is None:
        return
    if isinstance(title, dict):
        title["text"] = wrap(text, width)
    else:
        container[key] = wrap(text, width)


def layout_for_the_page(fig_dict: dict) -> dict:
    """The figure as the book shows it, whatever a chapter set: it fits the text column at any width.

    - no fixed width: the figure follows the page (the renderer makes it responsive);
    - long titles, axis titles and category labels broken into lines, so the margins that grow
      to fit them (`automargin`) stay reasonable and nothing runs off the figure;
    - log axes label every tick with its full value (plotly's default prints 20, 30, 40 as a
      small "2, 3, 4" after 10), with minor ticks between;
    - a legend below the plot sits under the x-axis title and its tick labels, not on them.
    """
    layout = fig_dict.setdefault("layout", {})
    layout.pop("width", None)
    layout["autosize"] = True
    _set_text(layout, "title", TITLE_CHARS)
    axes = [k for k in layout if k.startswith(("xaxis", "yaxis"))] or []
    for name in ("xaxis", "yaxis"):
        if name not in layout:
            layout[name] = {}
            axes.append(name)
    for name in axes:
        axis = layout[name]
        # a y title runs along the plot's height, which a phone's legend rows shrink: keep it shorter
        _set_text(axis, "title", AXIS_TITLE_CHARS if name.startswith("x") else Y_TITLE_CHARS)
        axis.setdefault("automargin", True)
        if axis.get("type") == "log" and "tickformat" not in axis and "tickvals" not in axis:
            axis["tickformat"] = "~g"  # full values at 1, 2, 5 × 10^n, minor ticks between
            axis.setdefault("dtick", "D2")
            axis.setdefault("minor", {"ticks": "outside", "showgrid": False})
    panel_px = 0.0
    for note in layout.get("annotations", []):
        if isinstance(note.get("text"), str) and str(note.get("yref", "")).endswith("paper"):
            note["text"] = wrap(note["text"], TITLE_CHARS // 2)
            if note.get("y", 0) >= 0.999 and note.get("yanchor") == "bottom":
                size = (note.get("font") or {}).get("size", 16)
                panel_px = max(panel_px, (note["text"].count("<br>") + 1) * (1.3 * size + 2))
    if panel_px and isinstance(layout.get("title"), dict):
        # make_subplots writes the top row's panel titles just above the plot area, where a title
        # anchored to the plot would sit: the title goes to the top of the figure instead, and the
        # top margin holds both (margins do not grow for annotations)
        lines = layout["title"].get("text", "").count("<br>") + 1
        layout["title"].update(yref="container", y=1.0, yanchor="top", pad={"t": 24, "b": 0, "l": 10})
        margin = layout.setdefault("margin", {})
        margin["t"] = max(margin.get("t", 40), math.ceil(10 + 21 * lines + 10 + panel_px + 4))
    for trace in fig_dict.get("data", []):
        for key in ("x", "y"):
            values = trace.get(key)
            if isinstance(values, (list, tuple)) and any(isinstance(v, str) and len(v) > LABEL_CHARS for v in values):
                trace[key] = [wrap(v, LABEL_CHARS) if isinstance(v, str) else v for v in values]
                # long category labels read level, on lines of their own, not rotated and cut
                axis = f"{key}axis{str(trace.get(f'{key}axis', key))[1:]}"
                layout.setdefault(axis, {}).setdefault("tickangle", 0)
        if isinstance(trace.get("name"), str):
            trace["name"] = wrap(trace["name"], AXIS_TITLE_CHARS)
    named = [t for t in fig_dict.get("data", []) if t.get("name") and t.get("showlegend", True) is not False]
    if layout.get("showlegend", True) and len(named) > 4:
        layout["height"] = layout.get("height", 460) + LEGEND_ROW_PX * math.ceil((len(named) - 4) / 2)
    if layout.get("showlegend", True) and len(named) > 1 and layout.get("legend", {}).get("orientation", "h") == "h":
        # legend rows below the plot take their height out of the plot's: keep the plot tall enough
        # for its rotated y-axis title (centred on the plot, it would otherwise reach the title)
        names = [str(t["name"]) for t in named]
        per_row = 1 if max(len(line) for n in names for line in n.split("<br>")) > 28 else 2
        legend_px = sum((n.count("<br>") + 1) * 17 + 4 for n in names) / per_row
        y_text = _text(layout.get("yaxis", {}).get("title")) or ""
        y_px = max((len(line) for line in y_text.split("<br>")), default=0) * 7.5
        title_px = 30 + 21 * ((_text(layout.get("title")) or "").count("<br>") + 1)
        needed = title_px + max(220.0, y_px + 30) + 70 + legend_px
        layout["height"] = max(layout.get("height", 460), math.ceil(needed))
    legend = layout.setdefault("legend", {})
    if legend.get("orientation", "h") == "h" and legend.get("y", -1) < 0:
        # under the plot in the container's coordinates: the margin grows for it below the x axis
        legend.update(yref="container", y=0.0, yanchor="bottom")
    return fig_dict


class BookHtmlRenderer(MimetypeRenderer):
    """Emit a figure as `text/html` that uses the page's own plotly.js: nothing inlined, nothing fetched."""

    def to_mimebundle(self, fig_dict: dict) -> dict[str, str]:
        html = pio.to_html(
            layout_for_the_page(fig_dict),
            include_plotlyjs=False,
            include_mathjax=False,
            full_html=False,
            default_width="100%",
            config={"displaylogo": False, "responsive": True},
            validate=False,
        )
        return {"text/html": html}


pio.templates["toyscale"] = _template()
pio.renderers["toyscale"] = BookHtmlRenderer()
if "ipykernel" in sys.modules:
    pio.renderers.default = "plotly_mimetype+toyscale"
