"""Where the effect lives (CLAIMS.md §7): the paired Δ over seeds across one property of the toy world.

Each chapter sweeps the one property its paper's mechanism depends on (the context shift for JRC,
domain heterogeneity for STAR, ...) from the point where the mechanism has nothing to act on, so
the effect must vanish, to where it is largest, and plots the paired difference between the method
and its baseline (mean ± sd over seeds) at every point. "Does the claim hold?" becomes "where?".
A sweep costs many runs, so chapters commit it as an artifact (`as_arrays`) with a rebuild command
and a test that reruns a slice of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from . import plot
from .progress import progress
from .table import Table


@dataclass(frozen=True)
class Boundary:
    """A sweep of paired differences: one Δ per point of the swept property and seed.

    parameter: the swept property in words, with its symbol ('context shift σ_z'); points: its
    values; seeds: the seeds at every point; deltas: (points, seeds), positive favours the method;
    delta_name: what Δ is ('Δ GAUC (JRC − pointwise)').
    """

    parameter: str
    points: tuple[float, ...]
    seeds: tuple[int, ...]
    deltas: np.ndarray
    delta_name: str

    def __post_init__(self) -> None:
        shape = (len(self.points), len(self.seeds))
        if np.shape(self.deltas) != shape:
            raise ValueError(f"deltas must have shape (points, seeds) = {shape}, got {np.shape(self.deltas)}")

    @property
    def mean(self) -> np.ndarray:
        """Mean Δ at each point."""
        return np.asarray(self.deltas).mean(axis=1)

    @property
    def sd(self) -> np.ndarray:
        """Sample standard deviation of Δ at each point (0 with one seed)."""
        deltas = np.asarray(self.deltas)
        return deltas.std(axis=1, ddof=1) if deltas.shape[1] > 1 else np.zeros(len(self.points))

    @property
    def wins(self) -> np.ndarray:
        """Seeds with Δ > 0 at each point."""
        return (np.asarray(self.deltas) > 0).sum(axis=1)

    def table(self) -> Table:
        """One row per point: the property's value, Δ mean ± sd, and the seeds the method wins."""
        rows = [
            [point, mean, sd, f"{wins}/{len(self.seeds)}"]
            for point, mean, sd, wins in zip(self.points, self.mean, self.sd, self.wins, strict=True)
        ]
        caption = f"{self.delta_name} across {self.parameter}, seeds {list(self.seeds)}"
        return Table([self.parameter, "Δ mean", "Δ sd", "seeds won"], rows, caption)

    def as_arrays(self) -> dict[str, np.ndarray]:
        """The sweep as arrays for `core.save_arrays` (a committed artifact)."""
        return {
            "parameter": np.array(self.parameter),
            "points": np.asarray(self.points, dtype=np.float64),
            "seeds": np.asarray(self.seeds, dtype=np.int64),
            "deltas": np.asarray(self.deltas, dtype=np.float64),
            "delta_name": np.array(self.delta_name),
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> Boundary:
        """The sweep stored by `as_arrays`."""
        missing = {"parameter", "points", "seeds", "deltas", "delta_name"} - set(arrays)
        if missing:
            raise ValueError(f"the arrays miss {sorted(missing)} of a boundary sweep")
        return cls(
            parameter=str(arrays["parameter"]),
            points=tuple(float(p) for p in arrays["points"]),
            seeds=tuple(int(s) for s in arrays["seeds"]),
            deltas=np.asarray(arrays["deltas"], dtype=np.float64),
            delta_name=str(arrays["delta_name"]),
        )


def sweep(
    delta: Callable[[float, int], float],
    points: Sequence[float],
    seeds: Sequence[int],
    *,
    parameter: str,
    delta_name: str,
) -> Boundary:
    """`delta(point, seed)` at every point and seed: the paired Δ of one run of the chapter's experiment."""
    if not points or not seeds:
        raise ValueError("a boundary sweep needs at least one point and one seed")
    deltas = np.array(
        [[float(delta(point, seed)) for seed in seeds] for point in progress(points, desc=f"sweep {parameter}")]
    )
    return Boundary(parameter, tuple(float(p) for p in points), tuple(int(s) for s in seeds), deltas, delta_name)


def fig_boundary(boundary: Boundary, title: str, *, margin: float | None = None, x_title: str = "") -> go.Figure:
    """Δ mean ± sd across the swept property, with the zero line (and the claim's margin, if given)."""
    fig = plot.figure(title, x_title or boundary.parameter, boundary.delta_name)
    span = [min(boundary.points), max(boundary.points)]
    fig.add_trace(go.Scatter(x=span, y=[0, 0], mode="lines", name="no effect", line=dict(color="#BBBBBB", dash="dot")))
    if margin is not None:
        fig.add_trace(
            go.Scatter(
                x=span,
                y=[margin, margin],
                mode="lines",
                name="the claim's margin",
                line=dict(color="#8C8C8C", dash="dash"),
            )
        )
    fig.add_trace(
        go.Scatter(
            x=list(boundary.points),
            y=boundary.mean.tolist(),
            error_y=dict(type="data", array=boundary.sd.tolist(), visible=True),
            mode="lines+markers",
            name=f"{boundary.delta_name}, mean ± sd over {len(boundary.seeds)} seeds",
            line=dict(color=plot.METHOD_COLOR),
            customdata=[f"{w}/{len(boundary.seeds)}" for w in boundary.wins],
            hovertemplate="%{x}: %{y:+.4f} (wins %{customdata})<extra></extra>",
        )
    )
    return fig
