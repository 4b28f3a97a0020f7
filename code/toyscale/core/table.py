"""A small table that prints as text in a terminal and renders as HTML in a notebook."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# A claims table's verdicts, coloured wherever the table is shown as HTML.
VERDICT_STYLES = {
    "reproduced": "color: #1a7f37; font-weight: 600",
    "holds": "color: #1a7f37",
    "FAIL": "color: #cf222e; font-weight: 600",
    "not reproduced": "color: #6e7781; font-weight: 600",
    "not reproduced (margin cleared)": "color: #6e7781",
    "by construction": "color: #57606a; font-style: italic",
    "modelled": "color: #57606a; font-style: italic",
    "not measurable here": "color: #6e7781; font-style: italic",
}


@dataclass(frozen=True)
class Link:
    """A cell that links somewhere when the table is shown as HTML (its text elsewhere)."""

    text: str
    href: str

    def __str__(self) -> str:
        return self.text


def format_cell(value: Any) -> str:
    """Floats to 4 significant digits (no scientific notation for everyday sizes), the rest as str."""
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    if math.isnan(value):
        return "nan"
    if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
        return f"{value:.3e}"
    return f"{value:.4g}" if abs(value) >= 1 else f"{value:.4f}"


def _header(name: str) -> str:
    """A column name as a reader sees it: 'detection_latency_s' → 'detection latency s'."""
    return name.replace("_", " ")


def _is_float(value: Any) -> bool:
    return isinstance(value, float) and math.isfinite(value)


def column_format(values: Sequence[Any]) -> str:
    """One format for the floats of a column: the decimals `format_cell` would give the finest of them.

    '' (format each cell alone) when the column holds no float, or when one of them needs scientific
    notation. So 6.352, 30.52 and 0.25 print as 6.352, 30.520 and 0.250, not with a different
    number of decimals in each row.
    """
    floats = [v for v in values if _is_float(v)]
    if not floats or any(v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3) for v in floats):
        return ""
    decimals = 0
    for v in floats:
        text = format_cell(v)
        decimals = max(decimals, len(text.split(".")[1]) if "." in text and "e" not in text else 0)
    return f"{{:.{min(decimals, 4)}f}}"


@dataclass
class Table:
    """Rows of cells under named columns, with an optional caption and notes.

    notes: (term, text) pairs printed under the table, for what is too long for a cell (a claim's
    full check and why it is not expected): a cell stays short enough to read across a row.
    """

    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    caption: str = ""
    notes: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(f"row {i} has {len(row)} cells but the table has {len(self.columns)} columns")

    @classmethod
    def from_nested(cls, nested: dict[str, dict[str, Any]], row_title: str = "", caption: str = "") -> Table:
        """A table from {row name: {column name: value}}, columns in first-seen order."""
        columns: list[str] = []
        for values in nested.values():
            columns += [c for c in values if c not in columns]
        rows = [[name] + [values.get(c, "") for c in columns] for name, values in nested.items()]
        return cls([row_title, *columns], rows, caption)

    def cells(self) -> list[list[str]]:
        """Every row as formatted strings, the floats of a column in one format (`column_format`)."""
        formats = [column_format([row[i] for row in self.rows]) for i in range(len(self.columns))]
        return [
            [fmt.format(v) if fmt and _is_float(v) else format_cell(v) for v, fmt in zip(row, formats, strict=True)]
            for row in self.rows
        ]

    def __str__(self) -> str:
        cells = self.cells()
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(self.columns)]
        lines = [self.caption] if self.caption else []
        lines.append("  ".join(c.ljust(w) for c, w in zip(self.columns, widths, strict=True)))
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
        if self.notes:
            lines += ["", *(f"{term}: {text}" for term, text in self.notes)]
        return "\n".join(lines)

    #: A table with more columns than this, and fewer rows than columns, is shown transposed in HTML.
    MAX_HTML_COLUMNS = 7

    def _repr_html_(self) -> str:
        caption = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        columns, raw, cells = self.columns, self.rows, self.cells()
        if len(columns) > self.MAX_HTML_COLUMNS and len(raw) < len(columns) - 1:
            # many metrics of a few arms: one row per metric reads down a column that fits the page
            columns = ["", *[format_cell(r[0]) for r in raw]]
            raw = [[name, *[r[i] for r in self.rows]] for i, name in enumerate(self.columns) if i]
            cells = [[_header(name), *[row[i] for row in self.cells()]] for i, name in enumerate(self.columns) if i]
        head = "".join(f"<th>{html.escape(_header(c))}</th>" for c in columns)
        rows = []
        for values, row in zip(raw, cells, strict=True):
            tds = []
            for column, value, v in zip(columns, values, row, strict=True):
                text = html.escape(v)
                if isinstance(value, Link):
                    text = f'<a href="{html.escape(value.href)}">{text}</a>'
                style = VERDICT_STYLES.get(v, "") if column == "verdict" else ""
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    style = (style + "; " if style else "") + "text-align: right; font-variant-numeric: tabular-nums"
                tds.append(f'<td style="{style}">{text}</td>' if style else f"<td>{text}</td>")
            rows.append("<tr>" + "".join(tds) + "</tr>")
        # The wrapper scrolls a table sideways inside the text column instead of pushing the page wider.
        return (
            '<div class="toyscale-table-wrap" style="max-width: 100%; overflow-x: auto">'
            f'<table class="toyscale-table" style="font-size: 0.85em">{caption}'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>{self._notes_html()}"
        )

    def _notes_html(self) -> str:
        """The notes as a definition list under the table (empty without notes)."""
        if not self.notes:
            return ""
        items = "".join(f"<dt>{html.escape(t)}</dt><dd>{html.escape(x)}</dd>" for t, x in self.notes)
        return f'<dl class="toyscale-table-notes" style="font-size: 0.85em">{items}</dl>'

    def column(self, name: str) -> list[Any]:
        """The raw values of one column."""
        if name not in self.columns:
            raise ValueError(f"no column {name!r}; the columns are {self.columns}")
        i = self.columns.index(name)
        return [row[i] for row in self.rows]

    def __len__(self) -> int:
        return len(self.rows)


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value)."""
    n = len(values)
    if n == 0:
        raise ValueError("mean_std needs at least one value")
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return mean, math.sqrt(var)


def beside(rows: Sequence[tuple[str, float, float]], caption: str = "") -> Table:
    """A rerun beside committed numbers: each quantity's live value, the committed one, and live − committed.

    Shown, never asserted (CLAIMS.md §9): on the machine that made the file the difference is zero;
    on another CPU the floating-point kernels round differently, a chosen epoch can move, and the
    difference is real and expected. Whether the file is stale is decided by its fingerprint.
    """
    return Table(
        ["quantity", "live (this machine)", "committed", "difference"],
        [[name, live, stored, live - stored] for name, live, stored in rows],
        caption,
    )
