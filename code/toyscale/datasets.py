"""The data sets the book uses, each with a generator and a fingerprint recorded in data/README.md.

Every data set is made by the package's own generators from a fixed seed; its fingerprint is the
SHA-256 (`toyscale.core.array_checksum`) of the arrays the generator returns. `data/README.md`
holds a data card per data set with that fingerprint, and a test regenerates each data set and
compares, so a change to a generator that changes the data cannot land unnoticed.
`python -m toyscale data` prints the fingerprints.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .core.data import array_checksum


@dataclass(frozen=True)
class DataSet:
    """A data set: its name, the chapters that use it, and `module:function` making its arrays."""

    name: str
    chapters: tuple[str, ...]
    maker: str

    def make(self) -> dict[str, np.ndarray]:
        """Generate the data set's arrays (deterministic)."""
        module, function = self.maker.split(":")
        make: Callable[[], dict[str, np.ndarray]] = getattr(importlib.import_module(module), function)
        return make()

    def fingerprint(self) -> str:
        return array_checksum(self.make())


DATASETS: dict[str, DataSet] = {
    d.name: d
    for d in [
        DataSet("recsys_world", ("jrc",), "toyscale.recsys.world:reference_arrays"),
        DataSet("recsys_domains", ("star",), "toyscale.recsys.world:domain_reference_arrays"),
        DataSet("c4_fabric_workload", ("c4",), "toyscale.systems.c4.plan:reference_arrays"),
        DataSet("fangorn_workloads", ("fangorn",), "toyscale.systems.fangorn.graph:reference_arrays"),
        DataSet("digits", ("badiff", "victor"), "toyscale.genmm.digits:reference_arrays"),
    ]
}
