"""Data files: written atomically, carrying a checksum that is verified on load.

A generated data set is saved as an `.npz` holding its arrays and a `__sha256__` entry: the
SHA-256 of the arrays' names, dtypes, shapes and bytes. Loading recomputes it, so a truncated,
edited or stale file is caught with an error that names the file and the command that rebuilds it.
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

_CHECKSUM_KEY = "__sha256__"


class DataError(ValueError):
    """A data file is missing, corrupt or stale."""


def atomic_write_bytes(path: str | Path, payload: bytes) -> None:
    """Write `payload` to `path` through a temporary file in the same folder and a rename.

    A reader sees either the old file or the whole new one, never half of it; on error the old
    file is left untouched and the temporary file removed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def array_checksum(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 over each array's name, dtype, shape and bytes, in name order."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def save_arrays(path: str | Path, arrays: dict[str, np.ndarray]) -> str:
    """Save `arrays` to an `.npz` at `path` atomically, with their checksum inside; return the checksum."""
    if not arrays:
        raise ValueError("save_arrays needs at least one array")
    if _CHECKSUM_KEY in arrays:
        raise ValueError(f"{_CHECKSUM_KEY!r} is reserved for the checksum")
    checksum = array_checksum(arrays)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays, **{_CHECKSUM_KEY: np.array(checksum)})
    atomic_write_bytes(path, buffer.getvalue())
    return checksum


def load_arrays(path: str | Path, expected_sha256: str | None = None, rebuild_hint: str = "") -> dict[str, np.ndarray]:
    """Load arrays saved by `save_arrays`, verifying the stored checksum (and `expected_sha256` if given)."""
    path = Path(path)
    fix = f" Rebuild it with: {rebuild_hint}" if rebuild_hint else ""
    if not path.is_file():
        raise DataError(f"data file {path} does not exist.{fix}")
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
        raise DataError(f"data file {path} is corrupt ({error}).{fix}") from error
    stored = arrays.pop(_CHECKSUM_KEY, None)
    if stored is None:
        raise DataError(f"data file {path} carries no checksum, so it was not written by save_arrays.{fix}")
    actual = array_checksum(arrays)
    if actual != str(stored):
        raise DataError(f"data file {path} is corrupt: its checksum does not match its contents.{fix}")
    if expected_sha256 is not None and actual != expected_sha256:
        raise DataError(
            f"data file {path} is stale: checksum {actual[:12]}… but the book expects {expected_sha256[:12]}….{fix}"
        )
    return arrays
