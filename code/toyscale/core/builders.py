"""Declarative claims: checks built from arm and metric names, expected and reason from the calibration record.

The shapes every chapter's `claims.py` wrote by hand, declared once (issue 39, item 7):

- `paired_check(method, baseline, metric, margin=...)`: the method beats a baseline arm, or the
  strongest of its `Alternatives` picked per seed on validation, by more than the margin, paired by seed;
- `non_inferior_check(method, baseline, metric, margin=...)`: the method loses at most the margin;
- `vanishing_check(method, baseline, metric, band=..., effect_margin=..., validates=...)`: a negative
  control whose band is a declared fraction of the validated effect's margin;
- `RecordClaims(record, reasons)`: claims whose `expected` is read from the chapter's calibration
  record by claim id, and whose `reason` (when not expected) from the chapter's `reasons`.

Each check reads `getattr(result, table)[arm][metric]` per result (`table` is 'metrics' unless a
chapter keeps a second table, such as JRC's calibration checkpoints), and knows the arms it reads, so
budgets and alternatives reach the claim without being declared twice. A chapter's `claims.py` then
reads as a list of the paper's claims.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .claims import CONTROL, EFFECT, MECHANISM, MODELLED, Claim, ClaimError, Verdict, paired, vanishes
from .protocol import Alternatives, Band
from .table import mean_std


def values(results: Sequence[Any], arm: str, metric: str, table: str = "metrics") -> list[float]:
    """One value per seed: `getattr(result, table)[arm][metric]` of each result, in seed order."""
    try:
        return [float(getattr(r, table)[arm][metric]) for r in results]
    except KeyError as error:
        raise ValueError(f"no {metric!r} for arm {arm!r} in result.{table} ({error})") from error


def non_inferior(a: Sequence[float], b: Sequence[float], *, margin: float, name: str) -> Verdict:
    """Non-inferiority, paired by seed: mean(a − b) ≥ −margin (arm a loses at most `margin` to arm b).

    The verdict's values are the d_s = a_s − b_s; the margin is the loss tolerated.
    """
    if len(a) != len(b) or len(a) == 0:
        raise ValueError(f"a and b need one value per seed and the same seeds, got {len(a)} and {len(b)}")
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    deltas = tuple(x - y for x, y in zip(a, b, strict=True))
    mean, std = mean_std(deltas)
    losses = sum(d < 0 for d in deltas)
    passed = mean >= -margin
    detail = f"{name} = {mean:+.4f} ± {std:.4f}, below 0 on {losses}/{len(deltas)} seeds (must stay ≥ −{margin:g})"
    return Verdict(passed, detail, deltas, margin, name=name)


@dataclass(frozen=True)
class _Comparison:
    """What the three checks share: the method, its baseline (an arm, or alternatives), the metric and its table."""

    method: str
    baseline: str | Alternatives
    metric: str
    higher_is_better: bool = True
    table: str = "metrics"
    name: str = ""
    excluded: tuple[str, ...] = ()

    @property
    def alternatives(self) -> Alternatives | None:
        """The alternatives the baseline is picked from, or None for a fixed baseline arm."""
        return self.baseline if isinstance(self.baseline, Alternatives) else None

    @property
    def arms(self) -> tuple[str, ...]:
        """The arms the check reads: the method, then the baseline or every alternative."""
        rest = self.alternatives.names if self.alternatives else (self.baseline,)
        return (self.method, *rest)

    @property
    def label(self) -> str:
        """The verdict's name: the given one, or 'Δ metric (method − baseline)', baseline first if lower is better."""
        if self.name:
            return self.name
        other = "strongest alternative" if self.alternatives else self.baseline
        first, second = (self.method, other) if self.higher_is_better else (other, self.method)
        return f"Δ {self.metric} ({first} − {second})"

    def excluding(self, arm: str) -> _Comparison:
        """The same check with `arm` (an alternative now in the method's place) left out of the pick."""
        if self.alternatives is None or arm not in self.alternatives.names:
            raise ClaimError(f"{arm!r} is not an alternative of the check {self.label!r}")
        return replace(self, excluded=(*self.excluded, arm))

    def _pair(self, results: Sequence[Any]) -> tuple[list[float], list[float], list[str]]:
        """The method's and the baseline's values per seed, and the alternative picked on each seed (if any)."""
        a = values(results, self.method, self.metric, self.table)
        if self.alternatives is None:
            return a, values(results, self.baseline, self.metric, self.table), []
        winners = self.alternatives.strongest(results, self.excluded)
        b = [values([r], w, self.metric, self.table)[0] for r, w in zip(results, winners, strict=True)]
        return a, b, winners

    def _named(self, verdict: Verdict, winners: Sequence[str]) -> Verdict:
        """The verdict, its detail naming the alternative picked on each seed."""
        if not winners:
            return verdict
        picked = f"; strongest alternative on validation ({self.alternatives.pick_by}) per seed: {', '.join(winners)}"
        return replace(verdict, detail=verdict.detail + picked, winners=tuple(winners))


@dataclass(frozen=True)
class PairedCheck(_Comparison):
    """The method beats its baseline by more than `margin`, paired by seed (see `core.claims.paired`)."""

    margin: float = 0.0
    min_win_fraction: float = 0.8

    def __call__(self, results: Sequence[Any]) -> Verdict:
        a, b, winners = self._pair(results)
        verdict = paired(
            a,
            b,
            margin=self.margin,
            higher_is_better=self.higher_is_better,
            min_win_fraction=self.min_win_fraction,
            name=self.label,
        )
        return self._named(verdict, winners)


@dataclass(frozen=True)
class NonInferiorCheck(_Comparison):
    """The method loses at most `margin` to its baseline, paired by seed (see `non_inferior`)."""

    margin: float = 0.0

    def __call__(self, results: Sequence[Any]) -> Verdict:
        a, b, winners = self._pair(results)
        if not self.higher_is_better:
            a, b = [-x for x in a], [-y for y in b]
        return self._named(non_inferior(a, b, margin=self.margin, name=self.label), winners)


@dataclass(frozen=True)
class VanishingCheck(_Comparison):
    """A negative control: the paired Δ lies within a band that is a fraction of the validated effect's margin."""

    band: Band = field(default_factory=lambda: Band(0.5))
    effect_margin: float = 0.0
    validates: str = ""

    def __call__(self, results: Sequence[Any]) -> Verdict:
        a, b, winners = self._pair(results)
        verdict = vanishes(
            a,
            b,
            band=self.band.width(self.effect_margin),
            higher_is_better=self.higher_is_better,
            name=self.label,
            sided=self.band.sided,
        )
        return self._named(verdict, winners)


def paired_check(
    method: str,
    baseline: str | Alternatives,
    metric: str,
    *,
    margin: float,
    higher_is_better: bool = True,
    min_win_fraction: float = 0.8,
    table: str = "metrics",
    name: str = "",
) -> PairedCheck:
    """A paired check of `method` against `baseline` (an arm, or `Alternatives` picked per seed) on `metric`."""
    return PairedCheck(method, baseline, metric, higher_is_better, table, name, (), margin, min_win_fraction)


def non_inferior_check(
    method: str,
    baseline: str | Alternatives,
    metric: str,
    *,
    margin: float,
    higher_is_better: bool = True,
    table: str = "metrics",
    name: str = "",
) -> NonInferiorCheck:
    """A non-inferiority check: `method` loses at most `margin` to `baseline` on `metric`, paired by seed."""
    return NonInferiorCheck(method, baseline, metric, higher_is_better, table, name, (), margin)


def vanishing_check(
    method: str,
    baseline: str | Alternatives,
    metric: str,
    *,
    band: Band,
    effect_margin: float,
    validates: str,
    higher_is_better: bool = True,
    table: str = "metrics",
    name: str = "",
) -> VanishingCheck:
    """A negative control validating effect `validates`: Δ within `band` of that effect's `effect_margin`."""
    if not validates:
        raise ClaimError("a vanishing check names the effect it validates (validates='effect_id')")
    band.width(effect_margin)  # refuses a margin that is not > 0
    return VanishingCheck(method, baseline, metric, higher_is_better, table, name, (), band, effect_margin, validates)


@dataclass(frozen=True)
class RecordClaims:
    """Claims whose `expected` comes from the chapter's calibration record, by claim id.

    record: the committed record (`core.calibration.load_record`); reasons: claim id → why the toy does
    not show it, for the claims the record does not expect (no typed numbers: CLAIMS.md §6).
    """

    record: Mapping[str, Any]
    reasons: Mapping[str, str] = field(default_factory=dict)

    def expected(self, claim_id: str) -> bool:
        """What the record says of the claim: True when it expects the claim to hold."""
        for claim in self.record.get("claims", ()):
            if claim["id"] == claim_id:
                return bool(claim["expected"])
        chapter = self.record.get("chapter", "the chapter")
        raise ClaimError(
            f"claim {claim_id!r} is not in the calibration record of {chapter}; rerun "
            f"`python -m toyscale calibrate {chapter} --json ...` so its margin and expected come from a record"
        )

    def reason(self, claim_id: str) -> str:
        """The reason of a claim the record does not expect (empty for an expected one)."""
        if self.expected(claim_id):
            return ""
        if claim_id not in self.reasons:
            raise ClaimError(f"the calibration record does not expect claim {claim_id!r}: give its reason in `reasons`")
        return self.reasons[claim_id]

    def claim(self, kind: str, claim_id: str, statement: str, metric: str, check: Any, **fields: Any) -> Claim:
        """A claim of `kind`, its expected and reason from the record and the reasons."""
        return Claim(
            id=claim_id,
            statement=statement,
            metric=metric,
            check=check,
            kind=kind,
            expected=self.expected(claim_id),
            reason=self.reason(claim_id),
            **fields,
        )

    def effect(self, claim_id: str, statement: str, metric: str, check: Any, **fields: Any) -> Claim:
        """An `effect` (see `claim`)."""
        return self.claim(EFFECT, claim_id, statement, metric, check, **fields)

    def control(self, claim_id: str, statement: str, metric: str, check: VanishingCheck, **fields: Any) -> Claim:
        """A `control`; its `validates` and `band` come from its vanishing check."""
        return self.claim(CONTROL, claim_id, statement, metric, check, **fields)

    def mechanism(self, claim_id: str, statement: str, metric: str, check: Any, **fields: Any) -> Claim:
        """A `mechanism` (see `claim`)."""
        return self.claim(MECHANISM, claim_id, statement, metric, check, **fields)

    def modelled(self, claim_id: str, statement: str, metric: str, check: Any, **fields: Any) -> Claim:
        """A `modelled` claim (see `claim`)."""
        return self.claim(MODELLED, claim_id, statement, metric, check, **fields)
