"""The claims protocol's v2 declarations (CLAIMS.md, rules marked (v2)): alternatives, regimes, control bands, budgets.

An `effect` declares its `Alternatives`: every option a practitioner would reach for instead of the
method, each with the knobs it is tuned on (a grid of the same size as the method's) and where each
knob comes from, and the validation metric that picks the strongest of them *per seed*. It records
the `Regime` it is checked in (the world property the mechanism exploits, and its value). A
`control` names the effect it validates and declares its `Band` as a fraction of that effect's
margin (at most one half), one- or two-sided.

A result reports the optimizer steps each arm used against its limit in `result.budgets`
(arm → (steps at the best validation point, steps the budget allowed); `TrainLog.budget` gives the
pair). A claim that reads an arm whose best point lies in the last tenth of its budget on more than
half of its calibration seeds is `undertrained`: neither pass nor fail (`undertrained_arms`).

Chapters still waiting for their v2 re-audit are in `RE_AUDIT_PENDING` (`core.pending`, off the compute
path): `core`'s v2 refusals apply to a chapter only once it leaves that list, and `toyscale audit` reports its
findings as warnings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Where the knob an alternative is tuned on comes from.
KNOB_SOURCES = ("paper", "library docs", "standard practice")
#: The widest control band, as a share of the margin of the effect the control validates.
MAX_BAND_FRACTION = 0.5
TWO_SIDED, ONE_SIDED = "two-sided", "one-sided"
#: A best point after this share of an arm's budget lies in its last tenth.
LAST_TENTH = 0.9
#: A calibration sd below this share of the margin makes an effect near-deterministic (CLAIMS.md §1, v2).
NEAR_DETERMINISTIC = 0.1
#: The fewest calibration seeds a record may have (CLAIMS.md §4, v2).
MIN_CALIBRATION_SEEDS = 12


class ProtocolError(ValueError):
    """A v2 declaration that breaks the protocol; the message names the rule and the fix."""


@dataclass(frozen=True)
class Knob:
    """A knob an alternative is tuned on: its name, the values tried, and where the knob comes from."""

    name: str
    values: tuple[Any, ...]
    source: str

    def __post_init__(self) -> None:
        if not self.name:
            raise ProtocolError("a knob needs a name")
        if not self.values:
            raise ProtocolError(f"knob {self.name!r} tries no value; give the values the grid tries")
        if self.source not in KNOB_SOURCES:
            raise ProtocolError(f"knob {self.name!r}: source must be one of {KNOB_SOURCES}, got {self.source!r}")


@dataclass(frozen=True)
class Alternative:
    """One alternative to the method: the arm that runs it and the knobs its tuning grid spans."""

    arm: str
    knobs: tuple[Knob, ...] = ()

    @property
    def grid_size(self) -> int:
        """The configurations tried on validation: the product of the knobs' value counts (1 with no knob)."""
        return math.prod(len(knob.values) for knob in self.knobs)


@dataclass(frozen=True)
class Alternatives:
    """An effect's alternatives and how the strongest is picked per seed, on validation.

    arms: the alternatives; pick_by: the validation metric (`getattr(result, table)[arm][pick_by]`) that
    picks the strongest on each seed; higher_is_better: its direction; method_grid: the configurations
    the method is tuned over (each alternative's grid must be as large); only_one: why there is no
    other alternative, required when there is one.
    """

    arms: tuple[Alternative, ...]
    pick_by: str
    method_grid: int
    higher_is_better: bool = True
    table: str = "metrics"
    only_one: str = ""

    def __post_init__(self) -> None:
        if not self.arms:
            raise ProtocolError("alternatives need at least one arm")
        names = [a.arm for a in self.arms]
        if len(set(names)) != len(names):
            raise ProtocolError(f"alternatives name an arm twice: {names}")
        if not self.pick_by:
            raise ProtocolError("alternatives need `pick_by`, the validation metric that picks the strongest")
        unequal = [f"{a.arm} ({a.grid_size})" for a in self.arms if a.grid_size != self.method_grid]
        if unequal:
            raise ProtocolError(
                f"every alternative gets the method's tuning budget ({self.method_grid} configurations), but "
                f"{', '.join(unequal)} differ: give each the same number of configurations on validation"
            )
        if len(self.arms) == 1 and not self.only_one:
            raise ProtocolError(
                f"a single alternative ({names[0]}) needs `only_one`: say why a practitioner has no other"
            )

    @property
    def names(self) -> tuple[str, ...]:
        """The alternatives' arm names, as declared."""
        return tuple(a.arm for a in self.arms)

    def strongest(self, results: Sequence[Any], excluding: Sequence[str] = ()) -> list[str]:
        """Per result (seed), the alternative with the best validation `pick_by`, ties to the first declared."""
        candidates = [name for name in self.names if name not in excluding]
        if not candidates:
            raise ProtocolError(
                f"no alternative remains after excluding {list(excluding)}: a claim with one alternative has "
                "no other to compare it with in the method's place"
            )
        sign = 1.0 if self.higher_is_better else -1.0
        winners = []
        for result in results:
            table = getattr(result, self.table)
            try:
                winners.append(max(candidates, key=lambda arm: sign * float(table[arm][self.pick_by])))
            except KeyError as error:
                raise ValueError(
                    f"no validation metric {self.pick_by!r} for an alternative in result.{self.table} ({error}); "
                    "report it for every alternative so core can pick the strongest"
                ) from error
        return winners

    def knob_rows(self) -> list[list[str]]:
        """The knob table: one row per alternative and knob (arm, knob, values, source)."""
        rows = [[a.arm, k.name, ", ".join(str(v) for v in k.values), k.source] for a in self.arms for k in a.knobs]
        return rows or [[a.arm, "(none)", "", ""] for a in self.arms]


@dataclass(frozen=True)
class Regime:
    """The regime an effect is checked in: the world property its mechanism exploits and its value.

    source: where the value comes from (the paper's setting, a cited source), never the book seeds' sweep.
    """

    property: str
    value: float | int | str
    source: str

    def __post_init__(self) -> None:
        if not self.property or not self.source:
            raise ProtocolError("a regime names the world property and the source of its value")

    def label(self) -> str:
        """'context shift σ_z = 1' for the claims table."""
        value = f"{self.value:g}" if isinstance(self.value, float) else str(self.value)
        return f"{self.property} = {value}"

    def as_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"property": self.property, "value": self.value, "source": self.source}


@dataclass(frozen=True)
class Band:
    """A control's band: a fraction (at most one half) of the validated effect's margin, one- or two-sided.

    Two-sided: the control passes when |mean Δ| ≤ band. One-sided: when mean Δ ≤ band (the gain vanishes);
    a loss beyond the band is then reported as its own row, never hidden.
    """

    fraction: float
    sided: str = TWO_SIDED

    def __post_init__(self) -> None:
        if not 0 < self.fraction <= MAX_BAND_FRACTION:
            raise ProtocolError(
                f"a control band is a fraction in (0, {MAX_BAND_FRACTION}] of its effect's margin, got "
                f"{self.fraction}: a wider band covers the effect it should tell apart; tighten it"
            )
        if self.sided not in (TWO_SIDED, ONE_SIDED):
            raise ProtocolError(f"band.sided must be {TWO_SIDED!r} or {ONE_SIDED!r}, got {self.sided!r}")

    def width(self, margin: float) -> float:
        """The band's half-width for an effect with this margin."""
        if not margin > 0:
            raise ProtocolError(f"a band is a fraction of its effect's margin, which must be > 0, got {margin}")
        return self.fraction * margin


# ---------------------------------------------------------------------------------------------
# Budgets (CLAIMS.md §3, v2)
# ---------------------------------------------------------------------------------------------

Budgets = Mapping[str, Sequence[Sequence[int]]]  # arm -> one (used, limit) pair per seed


def budgets_of(results: Sequence[Any]) -> dict[str, list[tuple[int, int]]]:
    """Per arm, the (steps used, limit) of each result's `budgets`; empty when the results report none.

    An arm missing from some results is kept for the results that report it.
    """
    collected: dict[str, list[tuple[int, int]]] = {}
    for result in results:
        for arm, (used, limit) in (getattr(result, "budgets", None) or {}).items():
            if not 0 <= used <= limit or limit <= 0:
                raise ValueError(f"arm {arm!r} reports {used} steps used of a limit of {limit}: need 0 ≤ used ≤ limit")
            collected.setdefault(arm, []).append((int(used), int(limit)))
    return collected


def at_budget_end(used: int, limit: int) -> bool:
    """True when a best point at `used` steps lies in the last tenth of a `limit`-step budget."""
    return used > LAST_TENTH * limit


def undertrained_arms(budgets: Budgets) -> dict[str, str]:
    """The arms whose best point lies in the last tenth of the budget on more than half the seeds, with why."""
    found = {}
    for arm, pairs in budgets.items():
        late = [(used, limit) for used, limit in pairs if at_budget_end(used, limit)]
        if pairs and len(late) > len(pairs) / 2:
            steps = ", ".join(f"{u}/{lim}" for u, lim in pairs)
            found[arm] = (
                f"arm {arm!r} peaks in the last tenth of its budget on {len(late)} of {len(pairs)} calibration "
                f"seeds (steps at its best point / limit: {steps}); raise the budget until its peaks are interior"
            )
    return found
