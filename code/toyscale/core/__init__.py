"""What every chapter shares: seeds, devices, splits, the training loop, metrics, plots, claims, data, timing."""

from . import metrics, plot
from .claims import (
    BASELINE_IN_PLACE,
    CONTROL,
    EFFECT,
    MECHANISM,
    MECHANISM_OFF,
    MODELLED,
    Claim,
    ClaimError,
    ClaimOutcome,
    Falsifier,
    TooFewSeeds,
    Verdict,
    all_of,
    at_most,
    check_results,
    evaluate,
    falsify,
    paired,
    per_seed,
    survivors,
    tally,
    unmet,
    vanishes,
    within,
)
from .data import DataError, array_checksum, atomic_write_bytes, load_arrays, save_arrays
from .devices import device, set_threads
from .progress import progress
from .report import claims_table
from .seeding import BOOK_SEEDS, CALIBRATION_SEED_START, rng, seed_everything
from .splits import Split, split_units
from .table import Table, mean_std
from .timing import Stopwatch, peak_memory_mb
from .train import EarlyStopping, TrainLog, train

__all__ = [
    "BASELINE_IN_PLACE",
    "BOOK_SEEDS",
    "CALIBRATION_SEED_START",
    "CONTROL",
    "EFFECT",
    "MECHANISM",
    "MECHANISM_OFF",
    "MODELLED",
    "Claim",
    "ClaimError",
    "ClaimOutcome",
    "DataError",
    "EarlyStopping",
    "Falsifier",
    "Split",
    "Stopwatch",
    "Table",
    "TooFewSeeds",
    "TrainLog",
    "Verdict",
    "all_of",
    "array_checksum",
    "at_most",
    "atomic_write_bytes",
    "check_results",
    "claims_table",
    "device",
    "evaluate",
    "falsify",
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
    "split_units",
    "survivors",
    "tally",
    "train",
    "unmet",
    "vanishes",
    "within",
]
