"""Devices and threads: every chapter runs unchanged on a CPU or a CUDA GPU."""

from __future__ import annotations

import os

import torch

# The thread count notebooks and tests use. On two shared cores, two OpenMP threads made a
# tiny matmul about 85 times slower than one, so small models run single-threaded.
DEFAULT_THREADS = 1


def device() -> torch.device:
    """CUDA when a GPU is present (and TOYSCALE_DEVICE does not say otherwise), else the CPU."""
    wanted = os.environ.get("TOYSCALE_DEVICE", "").strip().lower()
    if wanted:
        if wanted not in ("cpu", "cuda"):
            raise ValueError(f"TOYSCALE_DEVICE must be 'cpu' or 'cuda', got {wanted!r}")
        if wanted == "cuda" and not torch.cuda.is_available():
            raise ValueError("TOYSCALE_DEVICE=cuda but no CUDA device is available; unset it to use the CPU")
        return torch.device(wanted)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def set_threads(n: int = DEFAULT_THREADS) -> None:
    """Use `n` CPU threads for torch's intra-op work, so timings and results are stable."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"threads must be a positive int, got {n!r}")
    torch.set_num_threads(n)
