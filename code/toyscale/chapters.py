"""The chapter registry: every chapter of the book, its part, and where its module lives.

A chapter module (`toyscale.<part>.<name>`) provides `Config` (with `Config.fast()`),
`run(config=None, *, seed=0) -> Result` and `CLAIMS`; see the chapter contract in the README.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .core import store


class UnknownChapter(ValueError):
    """A chapter name that is not in the registry."""


@dataclass(frozen=True)
class Chapter:
    """One chapter: its short name, its part of the book, and its title."""

    name: str
    part: str
    title: str

    @property
    def module_name(self) -> str:
        return f"toyscale.{self.part}.{self.name}"

    def load(self) -> ModuleType:
        """Import the chapter's module and check that it has the contract's three entry points."""
        module = importlib.import_module(self.module_name)
        missing = [attr for attr in ("Config", "run", "CLAIMS") if not hasattr(module, attr)]
        if missing:
            raise TypeError(f"{self.module_name} misses {missing} of the chapter contract")
        return module

    def fingerprint(self, config: Any) -> dict[str, str]:
        """The fingerprint of what the chapter's claims are computed by at `config` (`core.store`).

        Its compute path starts at the modules that define `run`, `CLAIMS` and `FALSIFIERS`; figures,
        tables and prose are not on it. Calibration records and the scorecard ledger record it.
        """
        roots = [store.defining_module(self.module_name, name) for name in ("run", "CLAIMS", "FALSIFIERS")]
        return store.fingerprint(roots, config)


CHAPTERS: dict[str, Chapter] = {
    chapter.name: chapter
    for chapter in [
        Chapter("star", "recsys", "STAR: one model that serves many domains"),
        Chapter("jrc", "recsys", "JRC: joint optimization of ranking and calibration"),
        Chapter("rec4ad", "recsys", "Rec4Ad: recommendation samples against sample selection bias"),
        Chapter("picasso", "recsys", "PICASSO: packing, interleaving and caching for wide-and-deep training"),
        Chapter("glvq", "llm", "GLVQ: grouped lattice vector quantization"),
        Chapter("ddk", "llm", "DDK: distillation that follows the domains where the student lags"),
        Chapter("dcpt", "llm", "D-CPT Law: a scaling law that picks the domain mixture"),
        Chapter("badiff", "genmm", "BADiff: bandwidth-adaptive diffusion with early stopping"),
        Chapter("victor", "genmm", "Victor: video-language pre-training that learns the order of events"),
        Chapter("combatvla", "genmm", "CombatVLA: act first, explain after (truncated action-of-thought)"),
        Chapter("c4", "systems", "C4: communication-driven fault diagnosis and traffic planning"),
        Chapter("fapes", "systems", "FaPES: loaning inference GPUs to elastic training"),
        Chapter("fangorn", "systems", "Fangorn: adaptive execution on a mutable job graph"),
    ]
}


def get(name: str) -> Chapter:
    """The chapter called `name`; UnknownChapter lists the valid names otherwise."""
    if name not in CHAPTERS:
        raise UnknownChapter(f"unknown chapter {name!r}; the chapters are: {', '.join(CHAPTERS)}")
    return CHAPTERS[name]
