"""The parts every chapter shares: seeds, devices, the training loop, metrics, plots, claims, data and timing."""

from . import metrics, plot
from .claims import (
    Claim,
    ClaimOutcome,
    Verdict,
    all_of,
    at_most,
    check_results,
    claims_table,
    evaluate,
    paired,
    per_seed,
    unmet,
    within,
)
from .data import DataError, array_checksum, atomic_write_bytes, load_arrays, save_arrays
from .devices import device, set_threads
from .progress import progress
from .seeding import rng, seed_everything
from .table import Table, mean_std
from .timing import Stopwatch, peak_memory_mb
from .train import train

__all__ = [
    "Claim",
    "ClaimOutcome",
    "DataError",
    "Stopwatch",
    "Table",
    "Verdict",
    "all_of",
    "array_checksum",
    "at_most",
    "atomic_write_bytes",
    "check_results",
    "claims_table",
    "device",
    "evaluate",
    "load_arrays",
    "mean_std",
    "metrics",
    "paired",
    "peak_memory_mb",
    "per_seed",
    "plot",
    "progress",
    "rng",
    "save_arrays",
    "seed_everything",
    "set_threads",
    "train",
    "unmet",
    "within",
]
