"""The data sets the book uses, each with a generator and a fingerprint recorded in data/README.md.

Every data set is made by the package's own generators from a fixed seed; its fingerprint is the
SHA-256 (`toyscale.core.array_checksum`) of the arrays the generator returns. `data/README.md`
holds a data card per data set with that fingerprint, and a test regenerates each data set and
compares, so a change to a generator that changes the data cannot land unnoticed.
`python -m toyscale data` prints the fingerprints.

A few results of long computations (a trained model's weights, five seeds of a chapter) are
committed instead, as *artifacts*: small `.npz` files under data/ written by `core.save_arrays`
from a named maker. Their cards record the checksum of the committed arrays, and
`data/fingerprints.json` records, for each, the fingerprint of the code that made it
(`core.store`: every module on the maker's compute path). Loading a file verifies both: a corrupt
file, or one whose code has changed since it was made, raises an error naming the file, what
changed and the command that rebuilds it. Nothing is compared with a rerun: on another CPU a rerun
differs a little, and that says nothing about whether the file is stale.
`python -m toyscale data --rebuild NAME` runs the maker and rewrites the file and its fingerprint.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .core import store
from .core.data import DataError, array_checksum, atomic_write_bytes, load_arrays, save_arrays
from .core.environment import environment

ROOT = Path(__file__).resolve().parents[2]  # the repository: code/toyscale/datasets.py → ../..
#: What made each committed file: {name: {"sha256", "fingerprint": {module: digest}, "environment"}}.
MANIFEST = ROOT / "data" / "fingerprints.json"


class StaleArtifact(DataError):
    """A committed file whose code has changed since it was made (its fingerprint differs)."""


def manifest(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The recorded fingerprints of the committed files (`MANIFEST`; empty when there is none yet)."""
    path = path or MANIFEST
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except ValueError as error:
        raise DataError(f"{path} is not valid JSON ({error}); restore it from git") from error


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

    @property
    def roots(self) -> list[str]:
        """The module that defines the maker: where its compute path starts."""
        module, function = self.maker.split(":")
        return [store.defining_module(module, function)]

    def code_fingerprint(self) -> dict[str, str]:
        """The fingerprint of the maker's compute path as the code stands now (`core.store.fingerprint`)."""
        return store.fingerprint(self.roots)

    def staleness(self, arrays: dict[str, np.ndarray] | None = None) -> list[str]:
        """Why the committed file is not what the current code makes (empty when it is current).

        Decided by fingerprint, never by rerunning: the same answer on every machine.
        """
        recorded = manifest().get(self.name)
        if recorded is None:
            return [f"{MANIFEST.name} records no fingerprint for it"]
        checksum = array_checksum(arrays if arrays is not None else self._verified())
        if recorded.get("sha256") != checksum:
            return [f"its fingerprint in {MANIFEST.name} was recorded for another file (checksum differs)"]
        return store.differences(recorded["fingerprint"], self.code_fingerprint())

    def _verified(self) -> dict[str, np.ndarray]:
        return load_arrays(self.file, rebuild_hint=self.rebuild_command)

    def load(self) -> dict[str, np.ndarray]:
        """The committed arrays, checksum-verified (`core.load_arrays`) and checked current by fingerprint."""
        arrays = self._verified()
        changes = self.staleness(arrays)
        if changes:
            raise StaleArtifact(
                f"data file {self.file} is stale: {'; '.join(changes)}. Rebuild it with: {self.rebuild_command}"
            )
        return arrays

    def fingerprint(self) -> str:
        """The checksum of the committed arrays (verified on load; nothing is recomputed)."""
        return array_checksum(self._verified())

    def rebuild(self, path: Path | None = None, *, record: bool = True) -> str:
        """Run the maker and write its arrays to `path` (default: the committed file); return the checksum.

        Rewriting the committed file also records its fingerprint and the environment that made it in
        the manifest (unless `record` is False: the caller records it), written after the file (each
        write atomic): an interrupted rebuild leaves the old file, or a new file that `load` calls
        stale until the rebuild is run again.
        """
        fingerprint = self.code_fingerprint()
        checksum = save_arrays(path or self.file, _call(self.maker))
        if path is None and record:
            record_fingerprint(self.name, checksum, fingerprint, environment())
        return checksum


def provenance(name: str) -> str:
    """One line on where a committed file comes from: its path, the machine that made it, and that it is current."""
    artifact = ARTIFACTS[name]
    arrays = artifact.load()  # raises, naming the rebuild command, when the file is corrupt or stale
    made_in = manifest()[name].get("environment") or {}
    machine = f"made on {made_in['cpu']}" if made_in.get("cpu") else "made before its machine was recorded"
    modules = len(manifest()[name]["fingerprint"])
    return (
        f"{artifact.path}: {len(arrays)} arrays, checksum verified, {machine}; its fingerprint matches the "
        f"{modules} modules that compute it, so it is current for this code"
    )


def record_fingerprint(
    name: str, checksum: str, fingerprint: dict[str, str], made_in: dict[str, Any] | None, path: Path | None = None
) -> None:
    """Write one artifact's entry of the manifest (atomically; the other entries kept)."""
    path = path or MANIFEST
    entries = manifest(path)
    env = {k: v for k, v in (made_in or {}).items() if k != "git_commit"} or None
    entries[name] = {"sha256": checksum, "fingerprint": fingerprint, "environment": env}
    ordered = {n: entries[n] for n in sorted(entries)}
    atomic_write_bytes(path, (json.dumps(ordered, indent=1, sort_keys=True) + "\n").encode())


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
