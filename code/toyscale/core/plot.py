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
    """The toyscale theme: white background, light grid, legend on top, the method's color first."""
    return go.layout.Template(
        layout=go.Layout(
            font=dict(family=FONT, size=13, color="#222222"),
            title=dict(font=dict(size=15), x=0.0, xanchor="left"),
            colorway=[METHOD_COLOR, *BASELINE_COLORS],
            paper_bgcolor="white",
            plot_bgcolor="white",
            xaxis=dict(showgrid=True, gridcolor="#EEEEEE", zeroline=False, linecolor="#BBBBBB", ticks="outside"),
            yaxis=dict(showgrid=True, gridcolor="#EEEEEE", zeroline=False, linecolor="#BBBBBB", ticks="outside"),
            # below the plot, where a legend of several rows pushes the margin instead of the title
            legend=dict(orientation="h", yanchor="top", y=-0.2, xanchor="left", x=0.0),
            margin=dict(l=60, r=20, t=60, b=40),
            height=460,
            hoverlabel=dict(font=dict(family=FONT)),
        )
    )


class BookHtmlRenderer(MimetypeRenderer):
    """Emit a figure as `text/html` that uses the page's own plotly.js: nothing inlined, nothing fetched."""

    def to_mimebundle(self, fig_dict: dict) -> dict[str, str]:
        html = pio.to_html(
            fig_dict,
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
