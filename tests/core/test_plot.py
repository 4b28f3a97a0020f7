"""The plotting theme and the offline renderer."""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio
import pytest

from toyscale.core import plot


def test_method_gets_the_method_color_and_baselines_do_not() -> None:
    colors = plot.colors(["pointwise", "jrc", "oracle", "combined"], method="jrc")
    assert colors["jrc"] == plot.METHOD_COLOR
    assert colors["oracle"] == plot.ORACLE_COLOR
    assert plot.METHOD_COLOR not in (colors["pointwise"], colors["combined"])
    with pytest.raises(ValueError, match="not among"):
        plot.colors(["a"], method="b")


def test_renderer_emits_html_without_plotly_js_or_mathjax() -> None:
    fig = plot.figure("A title that states the finding", "x (units)", "y (units)")
    fig.add_trace(go.Scatter(x=[1, 2], y=[3, 4]))
    bundle = pio.renderers["toyscale"].to_mimebundle(fig.to_dict())
    html = bundle["text/html"]
    assert "Plotly.newPlot" in html
    assert "<script src" not in html and "cdn" not in html.lower()
    assert len(html) < 20_000  # plotly.js itself is megabytes: it must not be inlined


def test_wrap_breaks_long_titles_and_reads_only_plotly_tags_as_markup() -> None:
    from toyscale.core.plot import wrap

    title = "The truncated model acts first, explains after: the key comes before <TRUNC>"
    assert wrap(title, 52) == "The truncated model acts first, explains after: the<br>key comes before <TRUNC>"
    marked = "a <b>bold</b> title long enough to need wrapping"
    assert wrap(marked, 20) == marked  # markup is left as the chapter wrote it
