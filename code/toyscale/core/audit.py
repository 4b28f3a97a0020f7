"""`toyscale audit`: every way a chapter breaks the claims protocol (CLAIMS.md, v1 and v2), each with its fix.

`audit(chapter)` reads what a chapter commits (its claims and falsifiers, its calibration records,
its notebook's py:percent twin, its committed results when it has them) and returns `Finding`s:

| rule | what it catches |
|---|---|
| kinds | a claim whose kind is not one of the four |
| record | no calibration record; claims, expected or margins that disagree with the code or the records |
| seeds | a record on fewer than twelve calibration seeds |
| environments | a default record with no twin made under a perturbed numerical environment (`PERTURBED_NUMERICS`) |
| alternatives | an effect with no declared alternatives (no strongest baseline picked on validation) |
| falsifiers | a missing falsifier; an alternative never in the method's place; a falsifier with Δ ≡ 0 |
| budgets | a claim reading an arm that peaks in its budget's last tenth; no budgets (a warning; NO_BUDGETS: why none) |
| controls | no validated effect or band; a band over half the effect's margin; values that cannot move |
| near-deterministic | an effect whose calibration sd is under a tenth of its margin, with no reason |
| regime | an effect that does not record the regime it is checked in |
| prose | a measured number typed into a notebook's markdown cell |
| fingerprint | a record whose fingerprint does not match (`record_fingerprint_problems`); stale committed results |

Chapters in `RE_AUDIT_PENDING` get their findings as warnings; so does a record without budgets.
`core` does not know the chapter registry: the CLI gathers each chapter's `ChapterFiles`.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import store
from .calibration import TARGET_RATE
from .claims import (
    BASELINE_IN_PLACE,
    CONTROL,
    EFFECT,
    KINDS,
    MECHANISM_OFF,
    TYPED_NUMBER,
    Claim,
    Falsifier,
    check_results,
    claim_arms,
)
from .environment import PERTURBED_NUMERICS
from .pending import pending
from .protocol import MAX_BAND_FRACTION, MIN_CALIBRATION_SEEDS, NEAR_DETERMINISTIC, undertrained_arms

#: The rules, in the order findings are printed.
RULES = (
    "kinds",
    "record",
    "seeds",
    "environments",
    "alternatives",
    "falsifiers",
    "budgets",
    "controls",
    "near-deterministic",
    "regime",
    "prose",
    "fingerprint",
)


@dataclass(frozen=True)
class Finding:
    """One violation: the chapter, the rule, what is wrong, how to fix it, and whether it only warns."""

    chapter: str
    rule: str
    message: str
    fix: str
    warning: bool = False

    def line(self) -> str:
        """'warning jrc [controls]: ... Fix: ...' for the terminal."""
        level = "warning" if self.warning else "VIOLATION"
        return f"{level} {self.chapter} [{self.rule}]: {self.message}. Fix: {self.fix}"


@dataclass(frozen=True)
class ChapterFiles:
    """What `audit` reads of one chapter.

    records: the calibration records by name, empty when none is committed: a config ('default', 'fast'),
    or a config and the perturbed numerical environment it was made under ('default.aten-default');
    notebook: the notebook's py:percent twin (None when it has none); results: the committed results
    of the book seeds (None when the chapter commits none or they cannot be read, and results_problem
    then says why); fingerprints: the chapter's compute-path
    fingerprint now, by the same configs (`Chapter.fingerprint`).
    """

    name: str
    claims: Sequence[Claim]
    falsifiers: Sequence[Falsifier] = ()
    records: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    notebook: Path | None = None
    results: Sequence[Any] | None = None
    fingerprints: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # config -> current fingerprint
    results_problem: str = ""  # why the committed results could not be read (stale, corrupt, missing)
    no_budgets: str = ""  # why no arm has a training budget to report (the claims module's NO_BUDGETS), if none does


def record_fingerprint_problems(record: Mapping[str, Any], current: Mapping[str, str] | None) -> list[str]:
    """What is wrong with a calibration record's compute-path fingerprint (`core.store`).

    `current` is the chapter's fingerprint at the record's configuration now (None: not known). A
    record made before fingerprints carries none; one whose code has changed since names the modules.
    """
    if current is None:
        return []
    recorded = record.get("fingerprint")
    if not recorded:
        return ["it records no compute-path fingerprint (made before fingerprints), so its margins may be stale"]
    changes = store.differences(recorded, current)
    return [f"its code changed since it was made ({'; '.join(changes)})"] if changes else []


def audit(files: ChapterFiles) -> list[Finding]:
    """Every finding for one chapter, in the order of `RULES`; warnings only while the chapter is pending."""
    raw: list[tuple[str, str, str, bool]] = []
    for check in (
        _kinds,
        _record,
        _seeds,
        _environments,
        _alternatives,
        _falsifiers,
        _budgets,
        _controls,
        _near_deterministic,
        _regime,
        _prose,
        _fingerprint,
    ):
        raw += check(files)
    late = pending(files.name)
    return [Finding(files.name, rule, message, fix, warning or late) for rule, message, fix, warning in raw]


def violations(findings: Sequence[Finding]) -> list[Finding]:
    """The findings that fail the audit (not warnings)."""
    return [f for f in findings if not f.warning]


# Each rule returns (rule, message, fix, warning-only) tuples.
_Raw = list[tuple[str, str, str, bool]]


def _measured(files: ChapterFiles, *kinds: str) -> list[Claim]:
    return [c for c in files.claims if c.measurable and c.kind in kinds]


def _default(files: ChapterFiles) -> Mapping[str, Any] | None:
    return files.records.get("default")


def _record_claims(record: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {c["id"]: c for c in record.get("claims", ())}


def _first_part(record: Mapping[str, Any], claim_id: str) -> Mapping[str, Any] | None:
    claim = _record_claims(record).get(claim_id)
    return claim["parts"][0] if claim and claim.get("parts") else None


def _config(record_name: str) -> str:
    """The config a record was made at: 'default.aten-default' → 'default'."""
    return record_name.split(".")[0]


def _calibrate(files: ChapterFiles, config: str = "default") -> str:
    flag = " --fast" if _config(config) == "fast" else ""
    seeds = f"--seeds {MIN_CALIBRATION_SEEDS}{flag}"
    numerics = PERTURBED_NUMERICS.get(config.partition(".")[2], {})
    shell = "".join(f"{name}={value} " for name, value in numerics.items())
    return f"{shell}python -m toyscale calibrate {files.name} {seeds} --json <its calibration/{config}.json>"


def _kinds(files: ChapterFiles) -> _Raw:
    return [
        ("kinds", f"claim {c.id!r} has kind {c.kind!r}", f"declare one of {KINDS}", False)
        for c in files.claims
        if c.kind not in KINDS
    ]


def _record(files: ChapterFiles) -> _Raw:
    found: _Raw = []
    if not _measured(files, EFFECT, CONTROL):
        return found
    if _default(files) is None:
        message = "no calibration record (calibration/default.json): its margins come from nowhere"
        return [("record", message, f"write it: {_calibrate(files)}", False)]
    for config, record in files.records.items():
        listed = _record_claims(record)
        fix = f"recalibrate: {_calibrate(files, config)}"
        missing = [c.id for c in files.claims if c.measurable and c.id not in listed]
        extra = [i for i in listed if i not in {c.id for c in files.claims}]
        if missing or extra:
            found.append(("record", f"the {config} record lacks claims {missing} and lists {extra}", fix, False))
        for claim in files.claims:
            row = listed.get(claim.id)
            if row is not None and row["expected"] != claim.expected:
                message = (
                    f"claim {claim.id!r} is expected={claim.expected} in code, {row['expected']} in the {config} record"
                )
                found.append(
                    ("record", message, f"read expected from the record (core.builders.RecordClaims); {fix}", False)
                )
    found += _support(files)
    found += _margins_against_record(files)
    return found


def _supported(record: Mapping[str, Any], claim_id: str, falsifiers: Sequence[str]) -> tuple[bool, str]:
    """Whether a record supports an effect: its windows pass, and the windows of each of the effect's
    `falsifiers` (by name) fail, at the target rate; a falsifier the record did not rerun supports nothing."""
    rate = _record_claims(record)[claim_id]["pass_rate"]
    rerun = {f["name"]: f["fail_rates"][claim_id] for f in record.get("falsifiers", ()) if claim_id in f["fail_rates"]}
    missing = rate is None or (isinstance(rate, float) and math.isnan(rate))
    absent = [name for name in falsifiers if name not in rerun]
    fails = list(rerun.values())
    supported = not missing and not absent and rate >= TARGET_RATE and all(r >= TARGET_RATE for r in fails)
    said = (
        f"passes {'no' if missing else f'{rate:.0%} of'} windows and its falsifiers fail "
        f"{', '.join(f'{r:.0%}' for r in fails) or 'no'} windows (both must reach {TARGET_RATE:.0%})"
    )
    if absent:
        said += f"; it did not rerun the falsifiers {absent}"
    return supported, said


def _support(files: ChapterFiles) -> _Raw:
    """`expected` follows from the records of the default config: every one of them supports an expected
    effect (native and perturbed numerics alike), and the native record does not support one that is not."""
    found: _Raw = []
    for claim in _measured(files, EFFECT):
        named = [f.name for f in files.falsifiers if claim.id in f.claims]
        for config, record in files.records.items():
            if _config(config) != "default" or claim.id not in _record_claims(record):
                continue
            supported, said = _supported(record, claim.id, named)
            if claim.expected and not supported:
                message = f"effect {claim.id!r} is expected, but its {config} record {said}"
                fix = (
                    "set the margin from the record and recalibrate with the falsifiers, "
                    "or declare expected=False with a reason"
                )
                found.append(("record", message, fix, False))
            elif not claim.expected and supported and config == "default":
                message = f"effect {claim.id!r} is not expected, but its default record supports it: it {said}"
                found.append(("record", message, "declare it expected: `expected` follows from the record", False))
    return found


def _margins_against_record(files: ChapterFiles) -> _Raw:
    """Each check's margin on the committed results against the margin the default record was made with."""
    record = _default(files)
    if files.results is None or record is None:
        return []
    seeds = tuple(range(len(files.results)))
    try:
        outcomes = check_results(list(files.claims), list(files.results), seeds, files.name, guard=False)
    except (ValueError, KeyError, AttributeError, TypeError) as error:
        message = f"the claims cannot be checked on the committed results ({type(error).__name__}: {error})"
        return [("record", message, "rebuild the committed results with the current claims' fields", False)]
    found: _Raw = []
    for outcome in outcomes:
        row = _record_claims(record).get(outcome.claim.id)
        if row is None or not outcome.claim.measurable:
            continue
        live = [leaf.margin for leaf in outcome.verdict.leaves() if leaf.values]
        recorded = [part["margin"] for part in row.get("parts", ())]
        if live != recorded:
            message = f"claim {outcome.claim.id!r} checks margins {live} in code, the record was made with {recorded}"
            found.append(("record", message, f"recalibrate with the new margins: {_calibrate(files)}", False))
    return found


def _seeds(files: ChapterFiles) -> _Raw:
    found: _Raw = []
    for config, record in files.records.items():
        n = len(record.get("seeds", ()))
        if n < MIN_CALIBRATION_SEEDS:
            message = f"the {config} record has {n} calibration seeds, fewer than {MIN_CALIBRATION_SEEDS}"
            found.append(("seeds", message, f"recalibrate: {_calibrate(files, config)}", False))
    return found


def _environments(files: ChapterFiles) -> _Raw:
    if _default(files) is None or any(_config(c) == "default" and "." in c for c in files.records):
        return []
    message = (
        "the default record has no twin made under a perturbed numerical environment: the margins are "
        "checked on one CPU's kernels only"
    )
    env = next(iter(PERTURBED_NUMERICS))
    return [("environments", message, f"add it: {_calibrate(files, f'default.{env}')}", False)]


def _alternatives(files: ChapterFiles) -> _Raw:
    fix = (
        "declare alternatives=Alternatives(arms=(Alternative(arm, knobs), ...), pick_by=<validation metric>, "
        "method_grid=<configurations the method tries>) and build the check with core.builders"
    )
    return [
        (
            "alternatives",
            f"effect {c.id!r} compares with a fixed baseline, not the strongest of declared alternatives",
            fix,
            False,
        )
        for c in _measured(files, EFFECT)
        if c.alternatives is None
    ]


def _falsifiers(files: ChapterFiles) -> _Raw:
    found: _Raw = []
    for claim in _measured(files, EFFECT):
        if not claim.expected:
            continue
        named = [f for f in files.falsifiers if claim.id in f.claims]
        kinds = {f.kind for f in named}
        for kind in (MECHANISM_OFF, BASELINE_IN_PLACE):
            if kind not in kinds and not (
                kind == BASELINE_IN_PLACE and claim.alternatives and len(claim.alternatives.arms) == 1
            ):
                message = f"expected effect {claim.id!r} has no {kind!r} falsifier"
                found.append(("falsifiers", message, f"add a Falsifier of kind {kind!r} naming it", False))
        if claim.alternatives and len(claim.alternatives.arms) > 1:
            placed = {f.in_place for f in named if f.in_place}
            for arm in claim.alternatives.names:
                if arm not in placed:
                    message = f"alternative {arm!r} of {claim.id!r} is never put in the method's place"
                    fix = f"add Falsifier(..., BASELINE_IN_PLACE, ({claim.id!r},), ..., in_place={arm!r})"
                    found.append(("falsifiers", message, fix, False))
    for config, record in files.records.items():
        for falsifier in record.get("falsifiers", ()):
            for claim_id, parts in falsifier.get("parts", {}).items():
                if parts and parts[0]["mean"] == 0 and parts[0]["sd"] == 0:
                    message = (
                        f"falsifier {falsifier['name']!r}: the paired values of {claim_id!r} are exactly zero on every "
                        f"calibration seed ({config} record): the compared arm under another name, it tests nothing"
                    )
                    fix = "put each other alternative in the method's place against the strongest remaining one"
                    found.append(("falsifiers", message, fix, False))
    return found


def _budgets(files: ChapterFiles) -> _Raw:
    found: _Raw = []
    for config, record in files.records.items():
        budgets = record.get("budgets")
        if not budgets and files.no_budgets:
            continue
        if not budgets:
            message = f"the {config} record reports no budgets, so no claim can be found undertrained"
            fix = (
                "report result.budgets (arm -> TrainLog.budget) for every trained arm and recalibrate, or, when no "
                "arm stops early, say why in the claims module's NO_BUDGETS"
            )
            found.append(("budgets", message, fix, True))
            continue
        late = undertrained_arms(budgets)
        for claim in files.claims:
            for arm in claim_arms(claim, late):
                found.append(
                    (
                        "budgets",
                        f"claim {claim.id!r} reads an undertrained arm: {late[arm]}",
                        "raise the arm's budget (or sweep it) and recalibrate",
                        False,
                    )
                )
    return found


def _controls(files: ChapterFiles) -> _Raw:
    found: _Raw = []
    by_id = {c.id: c for c in files.claims}
    record = _default(files)
    for control in _measured(files, CONTROL):
        if not control.validates:
            message = f"control {control.id!r} names no effect it validates and no band"
            fix = (
                f"build it with core.builders.vanishing_check(..., validates=<effect id>, band=Band(fraction ≤ "
                f"{MAX_BAND_FRACTION}, sided), effect_margin=<that effect's margin>)"
            )
            found.append(("controls", message, fix, False))
        elif by_id.get(control.validates) is None or by_id[control.validates].kind != EFFECT:
            message = f"control {control.id!r} validates {control.validates!r}, which is not an effect of the chapter"
            found.append(("controls", message, "name the effect it validates", False))
        if record is None:
            continue
        part = _first_part(record, control.id)
        if part is None:
            continue
        if part["sd"] == 0:
            message = f"control {control.id!r} does not move over the calibration seeds (sd 0): it cannot fail"
            found.append(
                ("controls", message, "a check bound by a threshold is a mechanism: declare kind='mechanism'", False)
            )
        effect = control.validates or _nearest_effect(files, control)
        effect_part = _first_part(record, effect) if effect else None
        if (
            effect_part
            and effect_part["margin"] > 0
            and part["margin"] > MAX_BAND_FRACTION * effect_part["margin"] * (1 + 1e-9)
        ):
            message = (
                f"control {control.id!r} has a band of {part['margin']:g}, over {MAX_BAND_FRACTION:g} of the margin "
                f"{effect_part['margin']:g} of {effect!r}"
                + ("" if control.validates else " (the effect it most likely validates)")
            )
            found.append(
                ("controls", message, "fix the band before calibration as Band(fraction ≤ 1/2) of that margin", False)
            )
    return found


def _nearest_effect(files: ChapterFiles, control: Claim) -> str:
    """For a control that names no effect: the effect the claims list declares just before it."""
    before = ""
    for claim in files.claims:
        if claim.id == control.id:
            return before
        if claim.kind == EFFECT and claim.measurable:
            before = claim.id
    return before


def _near_deterministic(files: ChapterFiles) -> _Raw:
    record = _default(files)
    if record is None:
        return []
    found: _Raw = []
    for claim in _measured(files, EFFECT):
        part = _first_part(record, claim.id)
        if part is None or claim.low_spread or claim.saturated or not part["margin"] > 0:
            continue
        if part["sd"] < NEAR_DETERMINISTIC * part["margin"]:
            message = (
                f"effect {claim.id!r} has a calibration sd of {part['sd']:.3g} against a margin of {part['margin']:g}, "
                f"under a tenth of it: a model output or a mechanism"
            )
            fix = "declare kind='mechanism' or 'modelled', or say why in low_spread="
            found.append(("near-deterministic", message, fix, False))
    return found


def _regime(files: ChapterFiles) -> _Raw:
    fix = "declare regime=Regime(property, value, source): the paper's setting, committed before the calibration record"
    return [
        ("regime", f"effect {c.id!r} does not record the regime it is checked in", fix, False)
        for c in _measured(files, EFFECT)
        if c.regime is None
    ]


def typed_numbers(notebook: Path) -> list[tuple[int, str]]:
    """The numbers typed into a py:percent notebook's markdown cells: (line number, the line).

    Not counted: the first markdown cell (the paper's claim with its numbers), math (`$…$`, `$$…$$`),
    code spans, bold text (the paper's headline numbers are quoted in bold, across lines too), lines
    that cite or name the paper (CLAIMS.md §8: numbers from the paper are quoted as the paper's), and
    the protocol's own target rate.
    """
    target = f"{TARGET_RATE:.0%}".replace("%", " %")
    found = []
    lines = notebook.read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("# %%")] + [len(lines)]
    markdown = [(start, end) for start, end in itertools.pairwise(starts) if "[markdown]" in lines[start]]
    for start, end in markdown[1:]:  # the first cell states the paper's claim with its numbers
        cell = "\n".join(line.removeprefix("#").removeprefix(" ") for line in lines[start + 1 : end])
        # blank out what is not prose, keeping the line breaks so line numbers hold
        cell = _NOT_PROSE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), cell)
        for offset, text in enumerate(cell.splitlines()):
            original = lines[start + 1 + offset]
            if "paper" in original or "{cite" in original:
                continue
            if TYPED_NUMBER.search(text.replace(target, " ")):
                found.append((start + 2 + offset, original.removeprefix("# ").strip()))
    return found


# Fence lines, math, code spans and bold text: blanked out before the typed-number scan.
_NOT_PROSE = re.compile(r"^```[^\n]*$|\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\*\*.*?\*\*", re.S | re.M)


def _prose(files: ChapterFiles) -> _Raw:
    if files.notebook is None or not files.notebook.is_file():
        return []
    fix = "refer to the printed table, or glue the computed value into the text (myst-nb glue)"
    return [
        ("prose", f"{files.notebook.name}:{number} types a number: {text[:100]!r}", fix, False)
        for number, text in typed_numbers(files.notebook)
    ]


def _fingerprint(files: ChapterFiles) -> _Raw:
    found: _Raw = [
        ("fingerprint", f"the {config} record: {problem}", f"recalibrate: {_calibrate(files, config)}", False)
        for config, record in files.records.items()
        for problem in record_fingerprint_problems(record, files.fingerprints.get(_config(config)))
    ]
    if files.results_problem:
        message = f"the committed results cannot be read: {files.results_problem}"
        found.append(("fingerprint", message, "rebuild them with the command the message names", False))
    return found
