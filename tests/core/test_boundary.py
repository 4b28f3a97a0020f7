"""Boundary sweeps: Δ per point and seed, their summary, figure and round trip through a data file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toyscale.core import load_arrays, save_arrays
from toyscale.core.boundary import Boundary, fig_boundary, sweep


def test_sweep_runs_every_point_and_seed_and_summarises_them(tmp_path: Path) -> None:
    boundary = sweep(lambda x, s: x * 0.1 + 0.01 * s, [0.0, 1.0, 2.0], [0, 1, 2], parameter="σ", delta_name="Δ")
    assert boundary.deltas.shape == (3, 3)
    assert boundary.mean == pytest.approx([0.01, 0.11, 0.21]) and boundary.sd == pytest.approx([0.01] * 3)
    assert boundary.wins.tolist() == [2, 3, 3]  # Δ = 0 on seed 0 at σ = 0 is no win
    assert len(boundary.table()) == 3
    fig = fig_boundary(boundary, "the effect grows with σ", margin=0.05)
    assert fig.layout.title.text and len(fig.data) == 3
    save_arrays(tmp_path / "b.npz", boundary.as_arrays())
    back = Boundary.from_arrays(load_arrays(tmp_path / "b.npz"))
    assert back.points == boundary.points and back.parameter == "σ" and np.array_equal(back.deltas, boundary.deltas)


def test_bad_shapes_and_empty_sweeps_raise() -> None:
    with pytest.raises(ValueError, match="shape"):
        Boundary("σ", (0.0, 1.0), (0,), np.zeros((1, 1)), "Δ")
    with pytest.raises(ValueError, match="at least one"):
        sweep(lambda x, s: 0.0, [], [0], parameter="σ", delta_name="Δ")
    with pytest.raises(ValueError, match="miss"):
        Boundary.from_arrays({"points": np.zeros(1)})
