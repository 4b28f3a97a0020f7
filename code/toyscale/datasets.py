"""The data sets the book uses, each with a generator and a fingerprint recorded in data/README.md.

Every data set is made by the package's own generators from a fixed seed; its fingerprint is the
SHA-256 (`toyscale.core.array_checksum`) of the arrays the generator returns. `data/README.md`
holds a data card per data set with that fingerprint, and a test regenerates each data set and
compares, so a change to a generator that changes the data cannot land unnoticed.
`python -m toyscale data` prints the fingerprints.

A few results of long computations (a trained model's weights) are committed instead, as
*artifacts*: small `.npz` files under data/ written by `core.save_arrays` from a named maker.
Their cards record the fingerprint of the committed arrays; a test loads each file (which
verifies its checksum) and compares, without recomputing it.
`python -m toyscale data --rebuild NAME` runs the maker and rewrites the file.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .core.data import array_checksum, load_arrays, save_arrays

ROOT = Path(__file__).resolve().parents[2]  # the repository: code/toyscale/datasets.py → ../..


@dataclass(frozen=True)
class DataSet:
    """A data set: its name, the chapters that use it, and `module:function` making its arrays."""

    name: str
    chapters: tuple[str, ...]
    maker: str

    def make(self) -> dict[str, np.ndarray]:
        """Generate the data set's arrays (deterministic)."""
        return _call(self.maker)

    def fingerprint(self) -> str:
        return array_checksum(self.make())


def _call(maker: str) -> dict[str, np.ndarray]:
    module, function = maker.split(":")
    make: Callable[[], dict[str, np.ndarray]] = getattr(importlib.import_module(module), function)
    return make()


DATASETS: dict[str, DataSet] = {
    d.name: d
    for d in [
        DataSet("recsys_world", ("jrc",), "toyscale.recsys.world:reference_arrays"),
        DataSet("recsys_domains", ("star",), "toyscale.recsys.world:domain_reference_arrays"),
        DataSet("c4_fabric_workload", ("c4",), "toyscale.systems.c4.plan:reference_arrays"),
        DataSet("fapes_cluster_trace", ("fapes",), "toyscale.systems.fapes:reference_arrays"),
        DataSet("fangorn_workloads", ("fangorn",), "toyscale.systems.fangorn.graph:reference_arrays"),
        DataSet("digits", ("badiff", "victor"), "toyscale.genmm.digits:reference_arrays"),
        DataSet("recsys_ads", ("rec4ad",), "toyscale.recsys.world:ad_reference_arrays"),
        DataSet("recsys_fields", ("picasso",), "toyscale.recsys.world:field_reference_arrays"),
        DataSet("llm_corpus", ("glvq", "ddk"), "toyscale.llm.corpus:reference_arrays"),
        DataSet("victor_videos", ("victor",), "toyscale.genmm.victor:video_reference_arrays"),
        DataSet("combatvla_play", ("combatvla",), "toyscale.genmm.combatvla.aot:reference_arrays"),
    ]
}


@dataclass(frozen=True)
class Artifact:
    """A committed data file: its name, the chapters that use it, its maker and its path under the repository."""

    name: str
    chapters: tuple[str, ...]
    maker: str  # module:function returning the arrays (slow: this is why the file is committed)
    path: str  # relative to the repository root

    @property
    def file(self) -> Path:
        return ROOT / self.path

    @property
    def rebuild_command(self) -> str:
        return f"python -m toyscale data --rebuild {self.name}"

    def load(self) -> dict[str, np.ndarray]:
        """The committed arrays, checksum-verified (`core.load_arrays`)."""
        return load_arrays(self.file, rebuild_hint=self.rebuild_command)

    def fingerprint(self) -> str:
        """The checksum of the committed arrays (verified on load; nothing is recomputed)."""
        return array_checksum(self.load())

    def rebuild(self, path: Path | None = None) -> str:
        """Run the maker and write its arrays to `path` (default: the committed file); return the checksum."""
        return save_arrays(path or self.file, _call(self.maker))


ARTIFACTS: dict[str, Artifact] = {
    a.name: a
    for a in [
        Artifact("glvq_tinylm", ("glvq",), "toyscale.llm.glvq.model:reference_arrays", "data/llm/glvq_tinylm.npz"),
        Artifact("glvq_results", ("glvq",), "toyscale.llm.glvq.results:reference_arrays", "data/llm/glvq_results.npz"),
        Artifact(
            "victor_results", ("victor",), "toyscale.genmm.victor:reference_arrays", "data/genmm/victor_results.npz"
        ),
        Artifact(
            "combatvla_results",
            ("combatvla",),
            "toyscale.genmm.combatvla.results:reference_arrays",
            "data/genmm/combatvla_results.npz",
        ),
        Artifact("dcpt_grid", ("dcpt",), "toyscale.llm.dcpt.grid:reference_arrays", "data/llm/dcpt_grid.npz"),
        Artifact("dcpt_results", ("dcpt",), "toyscale.llm.dcpt.results:reference_arrays", "data/llm/dcpt_results.npz"),
        Artifact(
            "jrc_results", ("jrc",), "toyscale.recsys.jrc.results:reference_arrays", "data/recsys/jrc_results.npz"
        ),
        Artifact("ddk_results", ("ddk",), "toyscale.llm.ddk.results:reference_arrays", "data/llm/ddk_results.npz"),
        Artifact(
            "rec4ad_results",
            ("rec4ad",),
            "toyscale.recsys.rec4ad.results:reference_arrays",
            "data/recsys/rec4ad_results.npz",
        ),
        Artifact(
            "fangorn_costs",
            ("fangorn",),
            "toyscale.systems.fangorn.cluster:reference_arrays",
            "data/systems/fangorn_costs.npz",
        ),
        Artifact(
            "fangorn_results",
            ("fangorn",),
            "toyscale.systems.fangorn.results:reference_arrays",
            "data/systems/fangorn_results.npz",
        ),
        Artifact(
            "picasso_results",
            ("picasso",),
            "toyscale.recsys.picasso.results:reference_arrays",
            "data/recsys/picasso_results.npz",
        ),
        Artifact(
            "star_results", ("star",), "toyscale.recsys.star.results:reference_arrays", "data/recsys/star_results.npz"
        ),
        Artifact(
            "c4_results",
            ("c4",),
            "toyscale.systems.c4.results:reference_arrays",
            "data/systems/c4_results.npz",
        ),
        Artifact(
            "fapes_results",
            ("fapes",),
            "toyscale.systems.fapes.results:reference_arrays",
            "data/systems/fapes_results.npz",
        ),
        Artifact(
            "badiff_results",
            ("badiff",),
            "toyscale.genmm.badiff.results:reference_arrays",
            "data/genmm/badiff_results.npz",
        ),
    ]
}
