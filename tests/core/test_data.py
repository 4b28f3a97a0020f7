"""Data files: atomic writes and checksums verified on load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from toyscale.core import DataError, array_checksum, atomic_write_bytes, load_arrays, save_arrays


def test_round_trip_keeps_arrays_and_checksum(tmp_path: Path) -> None:
    arrays = {"x": np.arange(6).reshape(2, 3), "y": np.array([0.5, 1.5])}
    checksum = save_arrays(tmp_path / "d.npz", arrays)
    loaded = load_arrays(tmp_path / "d.npz", expected_sha256=checksum)
    assert checksum == array_checksum(loaded)
    np.testing.assert_array_equal(loaded["x"], arrays["x"])


def test_checksum_sees_dtype_and_shape() -> None:
    a = np.arange(4, dtype=np.int64)
    assert array_checksum({"a": a}) != array_checksum({"a": a.astype(np.int32)})
    assert array_checksum({"a": a}) != array_checksum({"a": a.reshape(2, 2)})


def test_corrupt_file_names_the_rebuild_command(tmp_path: Path) -> None:
    path = tmp_path / "d.npz"
    save_arrays(path, {"x": np.arange(10)})
    path.write_bytes(path.read_bytes()[:50])
    with pytest.raises(DataError, match=r"corrupt.*python make_it\.py"):
        load_arrays(path, rebuild_hint="python make_it.py")


def test_stale_file_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "d.npz"
    save_arrays(path, {"x": np.arange(10)})
    with pytest.raises(DataError, match="stale"):
        load_arrays(path, expected_sha256="0" * 64)


def test_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        load_arrays(tmp_path / "nope.npz")


def test_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    atomic_write_bytes(path, b"good")

    with pytest.raises(TypeError):
        atomic_write_bytes(path, object())  # type: ignore[arg-type]
    assert path.read_bytes() == b"good"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]  # no temporary file left behind
