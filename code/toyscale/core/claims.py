"""Claims: the unit of truth in the book (the standard is the project's CLAIMS.md).

A `Claim` holds the paper's statement (with its number), its `kind`, and a check that a toy
experiment either meets or does not. Four kinds:

- `effect`: the paper's method beats an alternative. The only kind counted as reproduced.
- `control`: a setting where the mechanism has nothing to act on, so the effect must vanish.
- `mechanism`: a property that holds by design (a token count, a bit-identical output).
- `modelled`: a number from an analytic or cost model with assumed constants.

Toy effects are small next to seed noise, so checks compare arms trained on the same data and
seed and look at the *paired* differences over several seeds: their mean, spread and how many
seeds the method wins. Every check returns a `Verdict` that carries the per-seed values it judged
and the margin it judged them against. An `effect` or `control` whose values do not vary over
seeds is a model output in disguise: `check_results` refuses it unless the claim says why
(`saturated`). A claim the toy honestly cannot show is declared with `expected=False` and a reason;
it stays in every table, marked "not reproduced", and never fails a strict run; a claim that needs
what no toy has (an online A/B test) names it in `needs` and is "not measurable here".

A `Falsifier` is a named change to a chapter's config (the mechanism switched off, or the strongest
baseline run under the method's name) under which given claims must fail (CLAIMS.md §5).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from .parallel import Workers
from .pending import pending
from .protocol import TWO_SIDED, Alternatives, Band, Regime, budgets_of, undertrained_arms
from .table import mean_std

EFFECT, CONTROL, MECHANISM, MODELLED = "effect", "control", "mechanism", "modelled"
KINDS = (EFFECT, CONTROL, MECHANISM, MODELLED)


#: A spread below this share of the margin is "negligible next to the margin" (CLAIMS.md §1).
NEGLIGIBLE_SPREAD = 0.01

# The statuses a claim can have in a table, and what `reproduce --strict` fails on ("FAIL").
# Only REPRODUCED counts as a reproduction; no status says "pass" for anything else.
REPRODUCED, HOLDS, FAIL = "reproduced", "holds", "FAIL"
NOT_REPRODUCED, CLEARED_NOT_COUNTED = "not reproduced", "not reproduced (margin cleared)"
BY_CONSTRUCTION, MODELLED_STATUS, NOT_MEASURABLE = "by construction", "modelled", "not measurable here"
#: A claim that reads an arm stopped at the end of a budget too short to let it peak (CLAIMS.md §3, v2).
UNDERTRAINED = "undertrained"
#: Kept for older callers: the status of an expected effect whose check passed.
PASS = REPRODUCED

#: What each status means, in the words every claims table's caption and the Scorecard page print.
STATUS_MEANINGS = {
    REPRODUCED: "an effect the toy was expected to show beat its alternative by more than its margin",
    HOLDS: "a control: where the mechanism has nothing to act on, the effect vanished as it must",
    BY_CONSTRUCTION: "a mechanism that holds by design (a count, an identical output), checked",
    MODELLED_STATUS: "a number from an analytic or cost model with assumed constants",
    FAIL: "a claim expected to hold that did not; the book's strict run fails on it",
    NOT_REPRODUCED: "the toy does not show the paper's claim, for the reason its chapter gives",
    CLEARED_NOT_COUNTED: (
        "the check cleared its margin on these seeds, but the claim is not counted as reproduced: "
        "it was declared not expected, for the reason its chapter gives (it misses the margin on calibration "
        "seeds, or survives a falsifier)"
    ),
    NOT_MEASURABLE: "the claim needs what no toy has (an online test with real users): listed, not checked",
    UNDERTRAINED: (
        "the claim reads an arm whose best validation point lies in the last tenth of its budget on most "
        "calibration seeds: neither a pass nor a failure until the budget lets it peak"
    ),
}

# A measured number typed into prose: a decimal (0.03, +4.4) or a percentage (31 %).
TYPED_NUMBER = re.compile(r"\d+\.\d+|\d+\s*%")


class ClaimError(ValueError):
    """A claim that breaks the protocol: a bad declaration, or an effect whose values cannot vary."""


@dataclass(frozen=True)
class Verdict:
    """The outcome of one check: pass or not, the numbers behind it, and the per-seed values judged.

    values: one number per seed (a paired difference, signed so that positive favours the method;
    or the metric itself for a bound); margin: the scale the values were judged against (the
    margin of a paired check, the half-width of a band, a limit), 0 when there is none (a one-sided bound);
    parts: the verdicts an `all_of` combines (empty for a single check); name: what was compared;
    seeds_needed: more than 0 when the check could not be made on so few seeds (it then fails);
    winners: per seed, the alternative picked as the strongest on validation (empty without alternatives).
    """

    passed: bool
    detail: str
    values: tuple[float, ...] = ()
    margin: float = 0.0
    parts: tuple[Verdict, ...] = ()
    name: str = ""
    seeds_needed: int = 0
    winners: tuple[str, ...] = ()

    def leaves(self) -> tuple[Verdict, ...]:
        """The single checks this verdict is made of: itself, or the leaves of its parts."""
        if not self.parts:
            return (self,)
        return tuple(leaf for part in self.parts for leaf in part.leaves())


class TooFewSeeds(ValueError):
    """A check that needs more seeds than it was given (a spread over one seed): its row says so."""

    def __init__(self, needed: int, given: int) -> None:
        super().__init__(f"needs at least {needed} seeds, got {given}")
        self.needed = needed


@dataclass(frozen=True)
class Claim:
    """A paper's headline claim and the toy check that tests it.

    id: short stable name (`gauc_over_pointwise`); statement: the paper's words with its number;
    metric: what the toy measures; check: gets one `Result` per seed and returns a `Verdict`;
    kind: `effect`, `control`, `mechanism` or `modelled` (see the module docstring);
    expected: False when the toy cannot show the claim, with `reason` saying why (no typed
    measured numbers: the numbers come from the live check); needs: what the toy lacks to
    measure the claim at all (an online A/B test), for a claim with no check;
    saturated: why the per-seed values of an `effect` or `control` may all be equal (a metric at
    its ceiling on every seed), which the zero-spread guard otherwise refuses.

    The v2 fields (CLAIMS.md, `core.protocol`), all optional: alternatives: an effect's alternatives,
    the strongest picked per seed on validation; regime: the regime an effect is checked in;
    validates and band: the effect a control validates and its band as a fraction of that effect's
    margin; low_spread: why an effect's calibration sd may lie below a tenth of its margin; arms: the
    arms the check reads (for budgets; a builder's check knows its own). A check built by
    `core.builders` carries its alternatives, band, validated effect and arms, and the claim takes them from it.
    """

    id: str
    statement: str
    metric: str
    check: Callable[[Sequence[Any]], Verdict] | None
    kind: str
    expected: bool = True
    reason: str = ""
    needs: str = ""
    saturated: str = ""
    alternatives: Alternatives | None = None
    regime: Regime | None = None
    validates: str = ""
    band: Band | None = None
    low_spread: str = ""
    arms: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("alternatives", "band", "validates", "arms"):
            declared = getattr(self.check, name, None)
            if declared:
                own = getattr(self, name)
                if own and own != declared:
                    raise ClaimError(f"claim {self.id!r}: its {name} differ from its check's; declare them once")
                object.__setattr__(self, name, declared)
        if not self.id or not self.id.replace("_", "").isalnum():
            raise ClaimError(f"claim id must be a non-empty identifier, got {self.id!r}")
        if self.kind not in KINDS:
            raise ClaimError(f"claim {self.id!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.needs:
            if self.check is not None or self.expected:
                raise ClaimError(
                    f"claim {self.id!r} names what it needs ({self.needs!r}), so it is not measured: "
                    "give it check=None and expected=False"
                )
        elif self.check is None:
            raise ClaimError(f"claim {self.id!r} has no check; say what the toy lacks to measure it in `needs`")
        if not self.expected and not (self.reason or self.needs):
            raise ClaimError(f"claim {self.id!r} is marked expected=False, so it needs a reason")
        if TYPED_NUMBER.search(self.reason):
            raise ClaimError(
                f"claim {self.id!r}: its reason types a number ({TYPED_NUMBER.search(self.reason).group()!r}); "
                "name the mechanism and let the table show the measured numbers (CLAIMS.md §6)"
            )
        if self.saturated and self.kind not in (EFFECT, CONTROL):
            raise ClaimError(f"claim {self.id!r}: `saturated` explains an effect's or control's equal values only")
        if (self.alternatives or self.regime or self.low_spread) and self.kind != EFFECT:
            raise ClaimError(f"claim {self.id!r}: alternatives, regime and low_spread belong to an effect")
        if (self.validates or self.band) and self.kind != CONTROL:
            raise ClaimError(f"claim {self.id!r}: validates and band belong to a control")
        if bool(self.validates) != bool(self.band):
            raise ClaimError(
                f"claim {self.id!r}: a control names the effect it validates and its band together "
                "(validates='effect_id', band=Band(fraction, sided))"
            )

    @property
    def measurable(self) -> bool:
        """False for a claim that needs what no toy has (it is listed, never checked)."""
        return not self.needs


@dataclass(frozen=True)
class ClaimOutcome:
    """A claim checked on the results of several seeds."""

    chapter: str
    claim: Claim
    verdict: Verdict
    seeds: tuple[int, ...]
    undertrained: str = ""  # why the claim reads an undertrained arm (see `mark_undertrained`), else empty
    budgets: Mapping[str, Sequence[tuple[int, int]]] = field(default_factory=dict, hash=False)

    @property
    def status(self) -> str:
        """What the table shows: how many seeds a check that could not be made needs, `undertrained` when the
        claim reads such an arm, else see `status_of`."""
        if self.verdict.seeds_needed:
            return f"needs at least {self.verdict.seeds_needed} seeds"
        if self.undertrained and self.claim.measurable:
            return UNDERTRAINED
        return status_of(self.claim, self.verdict.passed)

    @property
    def fails_strict(self) -> bool:
        """True when an expected claim failed, whatever its kind: what `reproduce --strict` exits 1 on.

        An undertrained claim neither passes nor fails.
        """
        undecided = self.status == UNDERTRAINED
        return self.claim.measurable and self.claim.expected and not self.verdict.passed and not undecided

    @property
    def control_loss(self) -> str:
        """For a control with a declared band: the method's loss beyond the band at the control point, else ''."""
        if self.claim.kind != CONTROL or self.claim.band is None or not self.verdict.leaves()[0].values:
            return ""
        first = self.verdict.leaves()[0]
        mean, std = mean_std(first.values)
        if mean >= -first.margin:
            return ""
        return f"{first.name or 'Δ'} = {mean:+.4f} ± {std:.4f}: the method loses beyond the band −{first.margin:g}"

    @property
    def reproduced(self) -> bool:
        """True for an expected effect whose check passed: what the scorecard counts."""
        return self.status == REPRODUCED

    def as_dict(self) -> dict[str, Any]:
        """The JSON form the CLI writes: the claim, its kind and status, and the values behind the verdict.

        `values` are the per-seed values of the (first) check; `parts` lists every single check of a
        combined verdict with its own values and margin. The v2 keys appear only where declared (so a
        file without them, an older one, reads the same): `alternatives` (the arms, the validation
        metric and the winner per seed), `regime`, `validates`, `band`, `control_loss`, `budgets` and
        `undertrained`.
        """
        leaves = self.verdict.leaves()
        record = {
            "chapter": self.chapter,
            "id": self.claim.id,
            "kind": self.claim.kind,
            "statement": self.claim.statement,
            "metric": self.claim.metric,
            "expected": self.claim.expected,
            "passed": self.verdict.passed,
            "status": self.status,
            "detail": self.verdict.detail,
            "reason": self.claim.reason or self.claim.needs,
            "seeds": list(self.seeds),
            "values": list(leaves[0].values),
            "parts": [
                {"name": leaf.name, "passed": leaf.passed, "values": list(leaf.values), "margin": leaf.margin}
                for leaf in leaves
            ],
        }
        claim = self.claim
        if claim.alternatives is not None:
            winners = next((list(leaf.winners) for leaf in leaves if leaf.winners), [])
            record["alternatives"] = {
                "arms": list(claim.alternatives.names),
                "pick_by": claim.alternatives.pick_by,
                "winners": winners,
            }
        if claim.regime is not None:
            record["regime"] = claim.regime.as_dict()
        if claim.band is not None:
            record["validates"] = claim.validates
            record["band"] = {"fraction": claim.band.fraction, "sided": claim.band.sided}
            if self.control_loss:
                record["control_loss"] = self.control_loss
        if self.budgets:
            record["budgets"] = {arm: [list(pair) for pair in pairs] for arm, pairs in self.budgets.items()}
        if self.undertrained:
            record["undertrained"] = self.undertrained
        return record


def status_of(claim: Claim, passed: bool) -> str:
    """The status of a claim whose check passed or not (`STATUS_MEANINGS` says what each one means).

    | kind      | expected, passed | expected, failed | not expected, passed            | not expected, failed |
    |-----------|------------------|------------------|---------------------------------|----------------------|
    | effect    | reproduced       | FAIL             | not reproduced (margin cleared) | not reproduced       |
    | control   | holds            | FAIL             | not reproduced (margin cleared) | not reproduced       |
    | mechanism | by construction  | FAIL             | not reproduced (margin cleared) | not reproduced       |
    | modelled  | modelled         | FAIL             | not reproduced (margin cleared) | not reproduced       |

    A claim that is not measurable (it names its `needs`) is "not measurable here".
    """
    if not claim.measurable:
        return NOT_MEASURABLE
    if not claim.expected:
        return CLEARED_NOT_COUNTED if passed else NOT_REPRODUCED
    if not passed:
        return FAIL
    return {MECHANISM: BY_CONSTRUCTION, MODELLED: MODELLED_STATUS, CONTROL: HOLDS}.get(claim.kind, REPRODUCED)


def status_legend(statuses: Sequence[str] = ()) -> str:
    """'Verdicts: reproduced: …; holds: …' for the given statuses (every status when none), in table order."""
    shown = [s for s in STATUS_MEANINGS if not statuses or s in statuses]
    return "Verdicts: " + "; ".join(f"{s}: {STATUS_MEANINGS[s]}" for s in shown) + "."


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
    mean(d) > margin and d_s > 0 on at least ceil(min_win_fraction · n) seeds. The verdict's values
    are the d_s.
    """
    if len(a) != len(b) or len(a) == 0:
        raise ValueError(f"a and b need one value per seed and the same seeds, got {len(a)} and {len(b)}")
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    if not 0 < min_win_fraction <= 1:
        raise ValueError(f"min_win_fraction must be in (0, 1], got {min_win_fraction}")
    sign = 1.0 if higher_is_better else -1.0
    deltas = tuple(sign * (x - y) for x, y in zip(a, b, strict=True))
    mean, std = mean_std(deltas)
    wins = sum(d > 0 for d in deltas)
    needed = math.ceil(min_win_fraction * len(deltas) - 1e-9)
    passed = mean > margin and wins >= needed
    better = "higher" if higher_is_better else "lower"
    detail = (
        f"{name} = {mean:+.4f} ± {std:.4f} ({better} is better), "
        f"wins {wins}/{len(deltas)} seeds (needs {needed}), margin {margin:g}"
    )
    return Verdict(passed, detail, deltas, margin, name=name)


def vanishes(
    a: Sequence[float],
    b: Sequence[float],
    *,
    band: float,
    higher_is_better: bool = True,
    name: str = "Δ",
    sided: str = TWO_SIDED,
) -> Verdict:
    """A negative control: the paired difference a − b (sign as in `paired`) has a mean within ±band.

    It passes when |mean(d)| ≤ band, so an effect that persists where the mechanism has nothing to
    act on, or a large loss, fails it. One-sided (`sided='one-sided'`) it passes when mean(d) ≤ band:
    the gain vanishes, and a loss shows as its own row (`ClaimOutcome.control_loss`). The band is a
    fraction of the validated effect's margin (`core.protocol.Band`).
    """
    if len(a) != len(b) or len(a) == 0:
        raise ValueError(f"a and b need one value per seed and the same seeds, got {len(a)} and {len(b)}")
    if not band > 0:
        raise ValueError(f"band must be > 0, got {band}")
    sign = 1.0 if higher_is_better else -1.0
    deltas = tuple(sign * (x - y) for x, y in zip(a, b, strict=True))
    mean, std = mean_std(deltas)
    if sided == TWO_SIDED:
        detail = f"{name} = {mean:+.4f} ± {std:.4f} over {len(deltas)} seeds, must lie within ±{band:g}"
        return Verdict(abs(mean) <= band, detail, deltas, band, name=name)
    detail = f"{name} = {mean:+.4f} ± {std:.4f} over {len(deltas)} seeds, must lie at most +{band:g}"
    return Verdict(mean <= band, detail, deltas, band, name=name)


def within(values: Sequence[float], lo: float, hi: float, name: str) -> Verdict:
    """Check that every seed's value lies in [lo, hi]."""
    if not values:
        raise ValueError("within needs at least one value")
    if lo > hi:
        raise ValueError(f"lo must be <= hi, got [{lo}, {hi}]")
    inside = sum(lo <= v <= hi for v in values)
    mean, std = mean_std(values)
    detail = f"{name} = {mean:.4f} ± {std:.4f}, {inside}/{len(values)} seeds in [{lo:g}, {hi:g}]"
    half_width = (hi - lo) / 2 if math.isfinite(hi - lo) else 0.0  # a one-sided bound sets no scale
    return Verdict(inside == len(values), detail, tuple(float(v) for v in values), half_width, name=name)


def at_most(values: Sequence[float], limit: float, name: str) -> Verdict:
    """A 'no worse than' check: the mean over seeds is at most `limit` (e.g. a tolerated excess loss)."""
    if not values:
        raise ValueError("at_most needs at least one value")
    mean, std = mean_std(values)
    detail = f"{name} = {mean:+.4f} ± {std:.4f} over {len(values)} seeds (limit {limit:+g})"
    return Verdict(mean <= limit, detail, tuple(float(v) for v in values), abs(limit), name=name)


def all_of(*verdicts: Verdict) -> Verdict:
    """A verdict that passes when every part passes, with every part's numbers."""
    if not verdicts:
        raise ValueError("all_of needs at least one verdict")
    return Verdict(all(v.passed for v in verdicts), "; ".join(v.detail for v in verdicts), parts=tuple(verdicts))


def not_measured(reason: str) -> Verdict:
    """The verdict of a claim that is not measured: it fails, and says why."""
    return Verdict(False, f"not measured: {reason}")


def guard_spread(claim: Claim, verdict: Verdict) -> None:
    """Refuse an `effect` or `control` whose per-seed values are all equal or barely vary (CLAIMS.md §1).

    Such a check reads a model output, not a measurement: declare it `modelled` or `mechanism`,
    or, when a measured metric is saturated on every seed, say so in the claim's `saturated`. A
    combined check is refused when none of its parts varies: a side condition (an equal budget, a
    matched rate) may be constant, the comparison itself may not.
    """
    if claim.kind not in (EFFECT, CONTROL) or claim.saturated:
        return
    judged = [leaf for leaf in verdict.leaves() if len(leaf.values) >= 2]
    if not judged or not all(_degenerate(leaf) for leaf in judged):
        return
    leaf = judged[0]
    _, std = mean_std(leaf.values)
    raise ClaimError(
        f"claim {claim.id!r} is an {claim.kind} whose values barely vary over {len(leaf.values)} seeds "
        f"(sd {std:.3g} against a margin of {leaf.margin:g}: {verdict.detail}). A check that seed noise cannot "
        "move reads a model output: declare it kind='modelled' or 'mechanism', or, if a measured metric "
        "is saturated on every seed, say why in `saturated=`"
    )


def _degenerate(leaf: Verdict) -> bool:
    """True when a check's per-seed values are all equal, or their spread is negligible next to its margin."""
    _, std = mean_std(leaf.values)
    tiny = 1e-12 * max(1.0, max(abs(v) for v in leaf.values))
    return std <= tiny or (leaf.margin > 0 and std < NEGLIGIBLE_SPREAD * leaf.margin)


def check_results(
    claims: Sequence[Claim], results: Sequence[Any], seeds: Sequence[int], chapter: str = "", *, guard: bool = True
) -> list[ClaimOutcome]:
    """Check every claim on results already computed, one per seed in `seeds`.

    With `guard` (the default) an effect or control whose values cannot vary raises `ClaimError`
    (see `guard_spread`); falsified runs switch it off, since a baseline run under the method's
    name ties it exactly. Once `chapter` has left `RE_AUDIT_PENDING`, a control whose band is wider
    than it declares against its effect's margin is refused too (`refuse_wide_bands`). Each outcome
    keeps the budgets (`result.budgets`) of the arms its claim reads.
    """
    if len(results) != len(seeds):
        raise ValueError(f"need one result per seed, got {len(results)} results for {len(seeds)} seeds")
    budgets = budgets_of(results)
    outcomes = []
    for claim in claims:
        if claim.check is None:
            verdict = not_measured(claim.needs)
        else:
            try:
                verdict = claim.check(list(results))
            except TooFewSeeds as error:
                verdict = Verdict(False, f"not checked: {error}", seeds_needed=error.needed)
                outcomes.append(ClaimOutcome(chapter, claim, verdict, tuple(seeds)))
                continue
            if not isinstance(verdict, Verdict):
                raise TypeError(f"the check of claim {claim.id!r} returned {type(verdict).__name__}, not a Verdict")
            if guard:
                guard_spread(claim, verdict)
        read = {arm: budgets[arm] for arm in claim_arms(claim, budgets)}
        outcomes.append(ClaimOutcome(chapter, claim, verdict, tuple(seeds), budgets=read))
    if guard and not pending(chapter):
        refuse_wide_bands(outcomes)
    return outcomes


def claim_arms(claim: Claim, budgets: Mapping[str, Any]) -> tuple[str, ...]:
    """The reported arms a claim reads: its declared `arms`, or every reported arm when it names none."""
    return tuple(arm for arm in (claim.arms or tuple(budgets)) if arm in budgets)


def refuse_wide_bands(outcomes: Sequence[ClaimOutcome]) -> None:
    """Refuse a control whose band is wider than half the margin of the effect it validates (CLAIMS.md §4, v2)."""
    by_id = {o.claim.id: o for o in outcomes}
    for outcome in outcomes:
        claim = outcome.claim
        if not claim.validates:
            continue
        effect = by_id.get(claim.validates)
        if effect is None or effect.claim.kind != EFFECT:
            raise ClaimError(f"control {claim.id!r} validates {claim.validates!r}, which is not an effect among these")
        band, margin = outcome.verdict.leaves()[0].margin, effect.verdict.leaves()[0].margin
        if band > claim.band.fraction * margin * (1 + 1e-9):
            raise ClaimError(
                f"control {claim.id!r} checks a band of {band:g}, wider than {claim.band.fraction:g} of the margin "
                f"{margin:g} of {claim.validates!r} it declares: build its band as Band.width(that margin)"
            )


def mark_undertrained(
    outcomes: Sequence[ClaimOutcome], budgets: Mapping[str, Sequence[Sequence[int]]]
) -> list[ClaimOutcome]:
    """The outcomes, each claim that reads an undertrained arm (on the calibration seeds' `budgets`) marked so.

    `budgets` are a calibration record's (arm → one (used, limit) per calibration seed); a claim that
    names no arms is taken to read every arm of the record.
    """
    late = undertrained_arms(budgets)
    marked = []
    for outcome in outcomes:
        why = [late[arm] for arm in claim_arms(outcome.claim, late)]
        marked.append(replace(outcome, undertrained="; ".join(why)) if why else outcome)
    return marked


def run_seeds(
    run: Callable[..., Any],
    seeds: Sequence[int],
    config: Any = None,
    desc: str = "seeds",
    *,
    workers: Workers | None = None,
    label: str = "",
) -> list[Any]:
    """`run(config, seed=s)` for every seed, in seed order (distinct seeds, at least one).

    workers: where the seeds run (`core.parallel.Workers`; default: here, one after another); each
    seed is one task, so the results do not depend on it. label: names the runs in errors
    ("jrc" gives "jrc seed 3").
    """
    seeds = tuple(seeds)
    if not seeds:
        raise ValueError("need at least one seed")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds}")
    labels = [f"{label} seed {s}".lstrip() for s in seeds]
    return (workers or Workers()).map(partial(_run_seed, run, config), seeds, labels, desc=desc)


def _run_seed(run: Callable[..., Any], config: Any, seed: int) -> Any:
    """`run(config, seed=seed)`: one seed as a task (a module-level function, so it pickles)."""
    return run(config, seed=seed)


def evaluate(
    claims: Sequence[Claim],
    run: Callable[..., Any],
    seeds: Sequence[int],
    config: Any = None,
    chapter: str = "",
    *,
    workers: Workers | None = None,
) -> list[ClaimOutcome]:
    """Run `run(config, seed=s)` once per seed (on `workers`, see `run_seeds`) and check every claim on the results."""
    seeds = tuple(seeds)
    results = run_seeds(run, seeds, config, desc=f"{chapter or 'claims'}: seeds", workers=workers, label=chapter)
    return check_results(claims, results, seeds, chapter)


def unmet(outcomes: Sequence[ClaimOutcome]) -> list[str]:
    """The expected claims that failed, each as 'id: numbers' (empty when every expected claim holds).

    Tests write `assert not unmet(outcomes), unmet(outcomes)` so a failure names the claim and its numbers.
    """
    return [f"{o.claim.id}: {o.verdict.detail}" for o in outcomes if o.fails_strict]


# ---------------------------------------------------------------------------------------------
# Falsifiers (CLAIMS.md §5)
# ---------------------------------------------------------------------------------------------

MECHANISM_OFF, BASELINE_IN_PLACE = "mechanism off", "baseline in its place"


@dataclass(frozen=True)
class Falsifier:
    """A named change to a chapter's experiment under which the claims it names must fail.

    name: short stable name (`ranking_off`); kind: `MECHANISM_OFF` (the method's key term switched
    off) or `BASELINE_IN_PLACE` (the strongest baseline run under the method's name); claims: the ids
    of the effects that must then fail; change: config → the changed config (the experiment is rerun,
    never copied); description: the change in words; in_place: for a claim with alternatives, the
    alternative run under the method's name, which is then compared with the strongest *remaining*
    alternative (CLAIMS.md §5, v2).
    """

    name: str
    kind: str
    claims: tuple[str, ...]
    change: Callable[[Any], Any]
    description: str
    in_place: str = ""

    def __post_init__(self) -> None:
        if self.kind not in (MECHANISM_OFF, BASELINE_IN_PLACE):
            raise ClaimError(
                f"falsifier {self.name!r}: kind must be {MECHANISM_OFF!r} or {BASELINE_IN_PLACE!r}, got {self.kind!r}"
            )
        if not self.claims:
            raise ClaimError(f"falsifier {self.name!r} names no claim that must fail under it")
        if self.in_place and self.kind != BASELINE_IN_PLACE:
            raise ClaimError(f"falsifier {self.name!r}: in_place names an alternative in the method's place only")


def under(falsifier: Falsifier, claim: Claim) -> Claim:
    """The claim as `falsifier` checks it: with an alternative in the method's place, the strongest remaining one."""
    if not falsifier.in_place:
        return claim
    if claim.alternatives is None or falsifier.in_place not in claim.alternatives.names:
        raise ClaimError(
            f"falsifier {falsifier.name!r} puts {falsifier.in_place!r} in the method's place, which is not an "
            f"alternative of claim {claim.id!r}"
        )
    excluding = getattr(claim.check, "excluding", None)
    if excluding is None:
        raise ClaimError(
            f"claim {claim.id!r} has alternatives but a hand-written check: build it with core.builders so "
            "core can compare the alternative in the method's place with the strongest remaining one"
        )
    return replace(claim, check=excluding(falsifier.in_place))


def refuse_empty_falsifier(falsifier: Falsifier, outcomes: Sequence[ClaimOutcome]) -> None:
    """Refuse a falsifier whose paired values are exactly zero on every seed: it tests nothing (CLAIMS.md §5, v2)."""
    for outcome in outcomes:
        values = outcome.verdict.leaves()[0].values
        if values and all(v == 0 for v in values):
            raise ClaimError(
                f"falsifier {falsifier.name!r}: the paired values of claim {outcome.claim.id!r} are exactly zero "
                f"on every seed ({len(values)} seeds), so the rerun compares an arm with itself under another name "
                "and can never catch a weak baseline; put each other alternative in the method's place "
                "(Falsifier(in_place=...)) against the strongest remaining one, or switch the mechanism off"
            )


def falsify(
    falsifier: Falsifier,
    claims: Sequence[Claim],
    run: Callable[..., Any],
    seeds: Sequence[int],
    config: Any,
    chapter: str = "",
) -> list[ClaimOutcome]:
    """Rerun the experiment with the falsifier's change and check the claims it names (no spread guard).

    Once `chapter` has left `RE_AUDIT_PENDING`, a falsifier whose paired values are all exactly zero is refused.
    """
    by_id = {claim.id: claim for claim in claims}
    unknown = [name for name in falsifier.claims if name not in by_id]
    if unknown:
        raise ValueError(f"falsifier {falsifier.name!r} names unknown claims {unknown}; the claims are {list(by_id)}")
    changed = falsifier.change(config)
    desc = f"{chapter or 'claims'}: {falsifier.name}"
    results = run_seeds(run, seeds, changed, desc=desc, label=f"{chapter} under falsifier {falsifier.name}")
    named = [under(falsifier, by_id[name]) for name in falsifier.claims]
    outcomes = check_results(named, results, tuple(seeds), chapter, guard=False)
    if not pending(chapter):
        refuse_empty_falsifier(falsifier, outcomes)
    return outcomes


def survivors(outcomes: Sequence[ClaimOutcome]) -> list[str]:
    """The claims that still pass under a falsifier, each as 'id: numbers' (empty when all fail, as they must).

    Tests write `assert not survivors(outcomes), survivors(outcomes)`.
    """
    return [f"{o.claim.id}: {o.verdict.detail}" for o in outcomes if o.verdict.passed]


# ---------------------------------------------------------------------------------------------
# The scorecard's counts (the tables that show claims are in core.report)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tally:
    """The scorecard's counts for a set of outcomes (one chapter, a part, or the whole book)."""

    effects: int  # measurable effects
    reproduced: int  # expected effects that passed
    not_measurable: int  # effects that need what the toy lacks
    controls: int
    controls_passed: int
    by_construction: int  # mechanisms that hold
    modelled: int  # modelled claims (whatever their outcome)
    failed: int  # expected claims that failed, any kind
    undertrained: int = 0  # claims that read an arm stopped at the end of its budget (neither pass nor fail)

    def line(self) -> str:
        """'effects 1 of 3 reproduced · controls 1/1 · by construction 2 · modelled 0' (and what failed)."""
        text = (
            f"effects {self.reproduced} of {self.effects} reproduced · controls {self.controls_passed}/{self.controls}"
            f" · by construction {self.by_construction} · modelled {self.modelled}"
        )
        if self.not_measurable:
            text += f" · not measurable {self.not_measurable}"
        if self.undertrained:
            text += f" · undertrained {self.undertrained}"
        if self.failed:
            text += f" · FAILED {self.failed}"
        return text


def tally(outcomes: Sequence[ClaimOutcome]) -> Tally:
    """Count the outcomes the way the scorecard does (CLAIMS.md §1: only effects count as reproduced)."""

    def count(kind: str, *, measurable: bool = True) -> int:
        return sum(o.claim.kind == kind and o.claim.measurable == measurable for o in outcomes)

    return Tally(
        effects=count(EFFECT),
        reproduced=sum(o.reproduced for o in outcomes),
        not_measurable=sum(not o.claim.measurable for o in outcomes),
        controls=count(CONTROL),
        controls_passed=sum(o.status == HOLDS for o in outcomes),
        by_construction=sum(o.status == BY_CONSTRUCTION for o in outcomes),
        modelled=count(MODELLED),
        failed=sum(o.fails_strict for o in outcomes),
        undertrained=sum(o.status == UNDERTRAINED for o in outcomes),
    )
