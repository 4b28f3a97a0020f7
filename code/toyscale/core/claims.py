"""Claims: the unit of truth in the book.

A `Claim` holds the paper's statement (with its number) and a check that a toy experiment either
meets or does not. Toy effects are small next to seed noise, so checks compare arms trained on the
same data and seed and look at the *paired* differences over several seeds: their mean, spread and
how many seeds the method wins. A claim the toy honestly cannot show is declared with
`expected=False` and a reason; it stays in every table, marked "not reproduced at toy scale", and
never fails a strict run. Every other failing claim does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .progress import progress
from .table import Table, mean_std


@dataclass(frozen=True)
class Verdict:
    """The outcome of one check: pass or not, and the numbers behind it."""

    passed: bool
    detail: str


@dataclass(frozen=True)
class Claim:
    """A paper's headline claim and the toy check that tests it.

    id: short stable name (`gauc_over_pointwise`); statement: the paper's words with its number;
    metric: what the toy measures; check: gets one `Result` per seed and returns a `Verdict`;
    expected: False when the toy cannot show the claim, with `reason` saying why.
    """

    id: str
    statement: str
    metric: str
    check: Callable[[Sequence[Any]], Verdict]
    expected: bool = True
    reason: str = ""

    def __post_init__(self) -> None:
        if not self.id or not self.id.replace("_", "").isalnum():
            raise ValueError(f"claim id must be a non-empty identifier, got {self.id!r}")
        if not self.expected and not self.reason:
            raise ValueError(f"claim {self.id!r} is marked expected=False, so it needs a reason")


@dataclass(frozen=True)
class ClaimOutcome:
    """A claim checked on the results of several seeds."""

    chapter: str
    claim: Claim
    verdict: Verdict
    seeds: tuple[int, ...]

    @property
    def status(self) -> str:
        """'pass', 'FAIL', 'not reproduced at toy scale', or 'pass (not expected)'."""
        if self.claim.expected:
            return "pass" if self.verdict.passed else "FAIL"
        return "pass (not expected)" if self.verdict.passed else "not reproduced at toy scale"

    @property
    def fails_strict(self) -> bool:
        """True when an expected claim failed: what `reproduce --strict` exits 1 on."""
        return self.claim.expected and not self.verdict.passed

    def as_dict(self) -> dict[str, Any]:
        """The JSON form the CLI writes."""
        detail = self.verdict.detail + ("" if self.claim.expected else f" (not expected: {self.claim.reason})")
        return {
            "chapter": self.chapter,
            "id": self.claim.id,
            "statement": self.claim.statement,
            "expected": self.claim.expected,
            "passed": self.verdict.passed,
            "detail": detail,
        }


def per_seed(results: Sequence[Any], arm: str, metric: str) -> list[float]:
    """One value per seed: `result.metrics[arm][metric]` of each result, in seed order."""
    try:
        return [float(r.metrics[arm][metric]) for r in results]
    except KeyError as error:
        raise ValueError(f"no metric {metric!r} for arm {arm!r} in the results ({error})") from error


def paired(
    a: Sequence[float],
    b: Sequence[float],
    *,
    margin: float,
    higher_is_better: bool = True,
    min_win_fraction: float = 0.8,
    name: str = "Δ",
) -> Verdict:
    """Check that arm `a` beats arm `b` by more than `margin`, paired by seed.

    With d_s = a_s − b_s (or b_s − a_s when lower is better) for each seed s, the check passes when
    mean(d) > margin and d_s > 0 on at least ceil(min_win_fraction · n) seeds.
    """
    if len(a) != len(b) or len(a) == 0:
        raise ValueError(f"a and b need one value per seed and the same seeds, got {len(a)} and {len(b)}")
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    if not 0 < min_win_fraction <= 1:
        raise ValueError(f"min_win_fraction must be in (0, 1], got {min_win_fraction}")
    sign = 1.0 if higher_is_better else -1.0
    deltas = [sign * (x - y) for x, y in zip(a, b, strict=True)]
    mean, std = mean_std(deltas)
    wins = sum(d > 0 for d in deltas)
    needed = math.ceil(min_win_fraction * len(deltas) - 1e-9)
    passed = mean > margin and wins >= needed
    better = "higher" if higher_is_better else "lower"
    detail = (
        f"{name} = {mean:+.4f} ± {std:.4f} ({better} is better), "
        f"wins {wins}/{len(deltas)} seeds (needs {needed}), margin {margin:g}"
    )
    return Verdict(passed, detail)


def within(values: Sequence[float], lo: float, hi: float, name: str) -> Verdict:
    """Check that every seed's value lies in [lo, hi]."""
    if not values:
        raise ValueError("within needs at least one value")
    if lo > hi:
        raise ValueError(f"lo must be <= hi, got [{lo}, {hi}]")
    inside = sum(lo <= v <= hi for v in values)
    mean, std = mean_std(values)
    detail = f"{name} = {mean:.4f} ± {std:.4f}, {inside}/{len(values)} seeds in [{lo:g}, {hi:g}]"
    return Verdict(inside == len(values), detail)


def at_most(values: Sequence[float], limit: float, name: str) -> Verdict:
    """A 'no worse than' check: the mean over seeds is at most `limit` (e.g. a tolerated excess loss)."""
    if not values:
        raise ValueError("at_most needs at least one value")
    mean, std = mean_std(values)
    return Verdict(mean <= limit, f"{name} = {mean:+.4f} ± {std:.4f} over {len(values)} seeds (limit {limit:+g})")


def all_of(*verdicts: Verdict) -> Verdict:
    """A verdict that passes when every part passes, with every part's numbers."""
    if not verdicts:
        raise ValueError("all_of needs at least one verdict")
    return Verdict(all(v.passed for v in verdicts), "; ".join(v.detail for v in verdicts))


def evaluate(
    claims: Sequence[Claim],
    run: Callable[..., Any],
    seeds: Sequence[int],
    config: Any = None,
    chapter: str = "",
) -> list[ClaimOutcome]:
    """Run `run(config, seed=s)` once per seed and check every claim on the list of results."""
    seeds = tuple(seeds)
    if not seeds:
        raise ValueError("evaluate needs at least one seed")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds}")
    results = [run(config, seed=s) for s in progress(seeds, desc=f"{chapter or 'claims'}: seeds")]
    return check_results(claims, results, seeds, chapter)


def check_results(
    claims: Sequence[Claim], results: Sequence[Any], seeds: Sequence[int], chapter: str = ""
) -> list[ClaimOutcome]:
    """Check every claim on results already computed, one per seed in `seeds`."""
    if len(results) != len(seeds):
        raise ValueError(f"need one result per seed, got {len(results)} results for {len(seeds)} seeds")
    return [ClaimOutcome(chapter, claim, claim.check(list(results)), tuple(seeds)) for claim in claims]


def unmet(outcomes: Sequence[ClaimOutcome]) -> list[str]:
    """The expected claims that failed, each as 'id: numbers' (empty when every expected claim holds).

    Tests write `assert not unmet(outcomes), unmet(outcomes)` so a failure names the claim and its numbers.
    """
    return [f"{o.claim.id}: {o.verdict.detail}" for o in outcomes if o.fails_strict]


def claims_table(outcomes: Sequence[ClaimOutcome]) -> Table:
    """The table every chapter shows: the paper's claim, the toy's numbers, and the verdict."""
    rows = []
    for o in outcomes:
        toy = o.verdict.detail if o.claim.expected else f"{o.verdict.detail}. Why: {o.claim.reason}"
        rows.append([o.claim.id, o.claim.statement, f"{o.claim.metric}: {toy}", o.status])
    seeds = sorted({s for o in outcomes for s in o.seeds})
    caption = f"Claims checked over seeds {seeds}" if seeds else "Claims"
    return Table(["claim", "the paper says", "the toy measures", "verdict"], rows, caption)
