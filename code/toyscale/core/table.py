"""A small table that prints as text in a terminal and renders as HTML in a notebook."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# A claims table's verdicts, coloured wherever the table is shown as HTML.
VERDICT_STYLES = {
    "pass": "color: #1a7f37; font-weight: 600",
    "FAIL": "color: #cf222e; font-weight: 600",
    "not reproduced": "color: #6e7781; font-weight: 600",
    "pass (not expected)": "color: #9a6700",
    "by construction": "color: #57606a; font-style: italic",
    "modelled": "color: #57606a; font-style: italic",
    "not measurable here": "color: #6e7781; font-style: italic",
}


def format_cell(value: Any) -> str:
    """Floats to 4 significant digits (no scientific notation for everyday sizes), the rest as str."""
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    if math.isnan(value):
        return "nan"
    if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
        return f"{value:.3e}"
    return f"{value:.4g}" if abs(value) >= 1 else f"{value:.4f}"


@dataclass
class Table:
    """Rows of cells under named columns, with an optional caption."""

    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    caption: str = ""

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
        """Every row as formatted strings."""
        return [[format_cell(v) for v in row] for row in self.rows]

    def __str__(self) -> str:
        cells = self.cells()
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(self.columns)]
        lines = [self.caption] if self.caption else []
        lines.append("  ".join(c.ljust(w) for c, w in zip(self.columns, widths, strict=True)))
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        caption = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        rows = []
        for row in self.cells():
            cells = [
                f'<td style="{VERDICT_STYLES.get(v, "")}">{html.escape(v)}</td>'
                if column == "verdict"
                else f"<td>{html.escape(v)}</td>"
                for column, v in zip(self.columns, row, strict=True)
            ]
            rows.append("<tr>" + "".join(cells) + "</tr>")
        return (
            f'<table class="toyscale-table" style="font-size: 0.85em">{caption}'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )

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
