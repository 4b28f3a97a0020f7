"""Calibration: how a claim's check behaves on seeds kept apart from the book's (CLAIMS.md §4).

A margin is fixed *before* the book's seeds are looked at. `calibrate` takes a chapter's results on
calibration seeds (1000 and up) and reports, for every claim, the paired differences' mean and
spread and the share of five-seed windows (subsets of five calibration seeds) on which the claim
passes with its current margin and win rule; and, for every falsifier, the share of windows on
which the claims it names fail, as they must. A margin is well set when at least 95 % of windows
pass with the method and at least 95 % fail with each falsifier. The record also keeps the budgets
the results report (`result.budgets`: per arm, the steps at its best point and the limit, one pair per
calibration seed), from which `core.protocol.undertrained_arms` finds the arms that need a larger budget.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .claims import Claim, Falsifier, under
from .protocol import budgets_of
from .table import Table, mean_std

#: Five seeds: the size of the book's claim checks, so the size of a calibration window.
WINDOW = 5
#: The most windows drawn; with more subsets than this a fixed random sample of them is used.
MAX_WINDOWS = 2000
#: The share of windows a well-set margin passes with the method and fails with a falsifier.
TARGET_RATE = 0.95


def windows(n_seeds: int, size: int = WINDOW, limit: int = MAX_WINDOWS) -> list[tuple[int, ...]]:
    """Index subsets of `size` out of `n_seeds` seeds: all of them, or `limit` of them drawn at random (fixed)."""
    if not 1 <= size <= n_seeds:
        raise ValueError(f"a window of {size} seeds needs at least {size} seeds, got {n_seeds}")
    if math.comb(n_seeds, size) <= limit:
        return list(itertools.combinations(range(n_seeds), size))
    generator = np.random.default_rng(0)
    drawn = {tuple(sorted(generator.choice(n_seeds, size, replace=False).tolist())) for _ in range(limit * 2)}
    return sorted(drawn)[:limit]


def window_pass_rate(claim: Claim, results: Sequence[Any], subsets: Sequence[tuple[int, ...]]) -> float:
    """The share of windows on which `claim`'s check passes."""
    if claim.check is None:
        return float("nan")
    passed = [claim.check([results[i] for i in subset]).passed for subset in subsets]
    return float(np.mean(passed))


@dataclass(frozen=True)
class PartRecord:
    """One single check of a claim on all calibration seeds: the spread a margin is set against."""

    name: str
    mean: float  # mean of the per-seed values over all calibration seeds
    sd: float  # their sample standard deviation
    window_mean_q05: float  # the 5th percentile of the five-seed window means (a margin below it passes 95 %)
    window_mean_q95: float  # the 95th percentile (under a falsifier, a margin above it fails 95 %)
    margin: float  # the margin (band, limit) the check uses now


@dataclass(frozen=True)
class ClaimRecord:
    """A claim on the calibration seeds: its parts, and its window pass rate with the current margins."""

    id: str
    kind: str
    expected: bool
    parts: tuple[PartRecord, ...]
    pass_rate: float  # share of five-seed windows that pass


@dataclass(frozen=True)
class FalsifierRecord:
    """A falsifier on the calibration seeds: per named claim, the share of windows that fail (should be ≥ 95 %).

    parts[claim]: the claim's single checks under the falsifier; a margin between their
    `window_mean_q95` and the method's `window_mean_q05` separates the two.
    """

    name: str
    kind: str
    fail_rates: dict[str, float]
    parts: dict[str, tuple[PartRecord, ...]]


@dataclass(frozen=True)
class Calibration:
    """What `calibrate` measured for one chapter."""

    chapter: str
    seeds: tuple[int, ...]
    fast: bool
    claims: tuple[ClaimRecord, ...]
    falsifiers: tuple[FalsifierRecord, ...]
    budgets: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # arm -> (used, limit) per seed

    def table(self) -> Table:
        """One row per single check, with its claim's window pass rate (and 'ok' when it meets the target)."""
        rows = []
        for record in self.claims:
            for i, part in enumerate(record.parts or (None,)):
                rate = record.pass_rate if i == 0 else ""
                rows.append(
                    [
                        record.id if i == 0 else "",
                        record.kind if i == 0 else "",
                        part.name if part else "(not measured)",
                        f"{part.mean:+.4f} ± {part.sd:.4f}" if part else "",
                        part.window_mean_q05 if part else "",
                        part.window_mean_q95 if part else "",
                        part.margin if part else "",
                        rate,
                        _verdict(record.pass_rate, record.expected) if i == 0 else "",
                    ]
                )
        caption = f"{self.chapter}: calibration seeds {self.seeds[0]}–{self.seeds[-1]}" + (
            " (fast)" if self.fast else ""
        )
        columns = [
            "claim",
            "kind",
            "check",
            "Δ mean ± sd",
            "window mean q05",
            "q95",
            "margin",
            "windows passing",
            "target",
        ]
        return Table(columns, rows, caption)

    def falsifier_table(self) -> Table:
        """One row per falsifier and claim: the share of windows on which the claim fails, as it must."""
        rows = []
        for record in self.falsifiers:
            for claim, rate in record.fail_rates.items():
                first = record.parts[claim][0] if record.parts[claim] else None
                rows.append(
                    [
                        record.name,
                        record.kind,
                        claim,
                        f"{first.mean:+.4f} ± {first.sd:.4f}" if first else "",
                        first.window_mean_q95 if first else "",
                        rate,
                        "ok" if rate >= TARGET_RATE else "too weak",
                    ]
                )
        columns = ["falsifier", "kind", "claim", "Δ mean ± sd", "q95 of window means", "windows failing", "target"]
        return Table(columns, rows, "Falsifiers (the first check of each claim)")

    def as_dict(self) -> dict[str, Any]:
        """The JSON record, to commit beside the chapter."""
        return {
            "chapter": self.chapter,
            "seeds": list(self.seeds),
            "fast": self.fast,
            "window": WINDOW,
            "target_rate": TARGET_RATE,
            "claims": [
                {
                    "id": r.id,
                    "kind": r.kind,
                    "expected": r.expected,
                    "pass_rate": r.pass_rate,
                    "parts": [vars(p) for p in r.parts],
                }
                for r in self.claims
            ],
            "falsifiers": [
                {
                    "name": f.name,
                    "kind": f.kind,
                    "fail_rates": f.fail_rates,
                    "parts": {claim: [vars(p) for p in parts] for claim, parts in f.parts.items()},
                }
                for f in self.falsifiers
            ],
            "budgets": {arm: [list(pair) for pair in pairs] for arm, pairs in self.budgets.items()},
        }


def _verdict(rate: float, expected: bool) -> str:
    """'ok' when an expected claim passes ≥ 95 % of windows (a not-expected one fails ≥ 95 %), else what is wrong."""
    if math.isnan(rate):
        return ""
    if expected:
        return "ok" if rate >= TARGET_RATE else "margin too tight"
    return "ok" if rate <= 1 - TARGET_RATE else "unsettled: may print 'not reproduced (margin cleared)'"


def calibrate(
    chapter: str,
    claims: Sequence[Claim],
    results: Sequence[Any],
    seeds: Sequence[int],
    *,
    falsified: Sequence[tuple[Falsifier, Sequence[Any]]] = (),
    fast: bool = False,
) -> Calibration:
    """Calibration records of every claim on `results` (one per seed) and of every falsifier's rerun.

    A falsifier that puts an alternative in the method's place is checked against the strongest
    remaining alternative (`core.claims.under`). The record keeps the results' budgets.
    """
    if len(results) != len(seeds):
        raise ValueError(f"need one result per seed, got {len(results)} results for {len(seeds)} seeds")
    subsets = windows(len(results))
    records = [
        ClaimRecord(
            claim.id,
            claim.kind,
            claim.expected,
            _parts(claim, results, subsets),
            window_pass_rate(claim, results, subsets),
        )
        for claim in claims
    ]
    by_id = {claim.id: claim for claim in claims}
    falsifiers = tuple(
        FalsifierRecord(
            falsifier.name,
            falsifier.kind,
            {name: 1.0 - window_pass_rate(under(falsifier, by_id[name]), rerun, subsets) for name in falsifier.claims},
            {name: _parts(under(falsifier, by_id[name]), rerun, subsets) for name in falsifier.claims},
        )
        for falsifier, rerun in falsified
    )
    return Calibration(chapter, tuple(seeds), fast, tuple(records), falsifiers, budgets_of(results))


def _parts(claim: Claim, results: Sequence[Any], subsets: Sequence[tuple[int, ...]]) -> tuple[PartRecord, ...]:
    """The claim's single checks on all seeds, with the spread of their five-seed window means."""
    if claim.check is None:
        return ()
    verdict = claim.check(list(results))
    return tuple(
        _part(leaf.name or leaf.detail.split(" = ")[0], leaf.values, leaf.margin, subsets)
        for leaf in verdict.leaves()
        if leaf.values
    )


def _part(name: str, values: Sequence[float], margin: float, subsets: Sequence[tuple[int, ...]]) -> PartRecord:
    mean, sd = mean_std(values)
    window_means = [float(np.mean([values[i] for i in subset])) for subset in subsets]
    q05, q95 = np.quantile(window_means, [0.05, 0.95])
    return PartRecord(name, mean, sd, float(q05), float(q95), margin)


def load_record(chapter_module: Any, config: str = "default") -> dict[str, Any]:
    """The committed calibration record of a chapter: `calibration/<config>.json` beside its package.

    `config` is 'default' or 'fast'. Raises FileNotFoundError naming the command that writes it.
    """
    if config not in ("default", "fast"):
        raise ValueError(f"config must be 'default' or 'fast', got {config!r}")
    path = Path(chapter_module.__file__).parent / "calibration" / f"{config}.json"
    if not path.is_file():
        name = chapter_module.__name__.rsplit(".", 1)[-1]
        flag = " --fast" if config == "fast" else ""
        raise FileNotFoundError(
            f"no calibration record at {path}; write it with: "
            f"python -m toyscale calibrate {name} --seeds 20{flag} --json {path}"
        )
    return json.loads(path.read_text())


def record_table(record: dict[str, Any]) -> Table:
    """A committed record as the reader sees it: per claim, its spread on the calibration seeds, the share
    of five-seed windows that pass, and the share that fail under each of its falsifiers."""
    failing: dict[str, list[str]] = {}
    for falsifier in record["falsifiers"]:
        for claim, rate in falsifier["fail_rates"].items():
            failing.setdefault(claim, []).append(f"{falsifier['name']} {rate:.0%}")
    rows = []
    for claim in record["claims"]:
        first = claim["parts"][0] if claim["parts"] else None
        spread = f"{first['mean']:+.4f} ± {first['sd']:.4f}" if first else ""
        rate = claim["pass_rate"]
        rows.append(
            [
                claim["id"],
                claim["kind"],
                spread,
                "" if rate is None or math.isnan(rate) else f"{rate:.0%}",
                ", ".join(failing.get(claim["id"], [])),
                "yes" if claim["expected"] else "no",
            ]
        )
    seeds = record["seeds"]
    caption = f"Calibration seeds {seeds[0]}–{seeds[-1]} ({'fast' if record['fast'] else 'default'} config)"
    columns = ["claim", "kind", "Δ mean ± sd", "windows passing", "windows failing under falsifiers", "expected"]
    return Table(columns, rows, caption)
