"""The scorecard: every claim of every chapter, its kind and its status, from a committed ledger.

The ledger (`book/scorecard.json`) is written by `python -m toyscale reproduce NAME ... --ledger
book/scorecard.json`: each chapter's entry holds the outcomes of its claims on the book's seeds at
the default configuration, the environment they were computed in, and the fingerprint of the
code that computed them (`Chapter.fingerprint`: every module on the compute path of the chapter's
run and claims, and its configuration). The book's Scorecard page renders it; `problems(ledger)` lists every way it
disagrees with the code (a claim added, removed, re-worded or re-kinded, a status that does not
follow from the claim, a chapter whose compute path changed since its entry was computed), and a
test fails on any of them. Nothing on the page is typed by hand.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .chapters import CHAPTERS, Chapter
from .core import store
from .core.claims import CONTROL, EFFECT, UNDERTRAINED, ClaimOutcome, status_of, tally
from .core.data import atomic_write_bytes
from .core.table import Table

LEDGER = Path(__file__).resolve().parents[2] / "book" / "scorecard.json"
PART_NAMES = {
    "recsys": "Recommendation and advertising",
    "llm": "Compressing and training language models",
    "genmm": "Generative and multimodal models",
    "systems": "Systems for ML at scale",
}
#: What the ledger records of each claim (and must agree with the code).
DECLARED = ("id", "kind", "statement", "metric", "expected")


def entry(chapter: Chapter, outcomes: Sequence[ClaimOutcome], environment: dict[str, Any], seconds: float) -> dict:
    """One chapter's ledger entry: its outcomes, tally, environment and source fingerprint."""
    return {
        "part": chapter.part,
        "title": chapter.title,
        "fingerprint": chapter.fingerprint(chapter.load().Config()),
        "environment": environment,
        "seconds": round(seconds, 1),
        "tally": vars(tally(outcomes)),
        "claims": [o.as_dict() for o in outcomes],
    }


def load(path: Path = LEDGER) -> dict[str, Any]:
    """The ledger: {'config', 'seeds', 'chapters': {name: entry}}."""
    if not path.is_file():
        raise FileNotFoundError(
            f"no scorecard ledger at {path}; write it with: python -m toyscale reproduce --all --ledger {path}"
        )
    return json.loads(path.read_text())


def update(path: Path, seeds: Sequence[int], entries: dict[str, dict]) -> dict[str, Any]:
    """Replace the given chapters' entries of the ledger at `path` (created if absent) and write it atomically."""
    ledger = load(path) if path.is_file() else {"config": "default", "seeds": list(seeds), "chapters": {}}
    if ledger["seeds"] != list(seeds):
        raise ValueError(
            f"the ledger holds seeds {ledger['seeds']}, not {list(seeds)}: every chapter of the scorecard is "
            "checked on the same seeds; rerun every chapter to change them"
        )
    ledger["chapters"].update(entries)
    ledger["chapters"] = {name: ledger["chapters"][name] for name in CHAPTERS if name in ledger["chapters"]}
    atomic_write_bytes(path, (json.dumps(ledger, indent=1, ensure_ascii=False) + "\n").encode())
    return ledger


def problems(ledger: dict[str, Any]) -> list[str]:
    """Every way the ledger disagrees with the registry and the code (empty when it agrees)."""
    found = []
    names = list(ledger["chapters"])
    if names != list(CHAPTERS):
        found.append(f"the ledger's chapters {names} are not the registry's {list(CHAPTERS)}")
    for name, recorded in ledger["chapters"].items():
        if name not in CHAPTERS:
            continue
        chapter = CHAPTERS[name]
        fix = f"rerun: python -m toyscale reproduce {name} --ledger book/scorecard.json"
        claims = chapter.load().CLAIMS
        listed, declared = [c["id"] for c in recorded["claims"]], [c.id for c in claims]
        if listed != declared:
            found.append(f"{name}: the ledger lists claims {listed}, the code {declared}; {fix}")
            continue
        for claim, row in zip(claims, recorded["claims"], strict=True):
            for key in DECLARED:
                if row[key] != getattr(claim, key):
                    ours = getattr(claim, key)
                    found.append(f"{name}/{claim.id}: {key} is {row[key]!r} in the ledger, {ours!r} in the code; {fix}")
            follows = UNDERTRAINED if row.get("undertrained") else status_of(claim, row["passed"])
            if claim.measurable and row["status"] != follows:
                found.append(f"{name}/{claim.id}: status {row['status']!r} does not follow from the claim; {fix}")
        if "fingerprint" not in recorded:
            found.append(f"{name}: its entry predates compute-path fingerprints; {fix}")
            continue
        changes = store.differences(recorded["fingerprint"], chapter.fingerprint(chapter.load().Config()))
        if changes:
            found.append(f"{name}: its code changed since its entry was computed ({'; '.join(changes)}); {fix}")
    return found


def _effects(chapters: dict[str, dict]) -> tuple[int, int]:
    effects = [
        c
        for e in chapters.values()
        for c in e["claims"]
        if c["kind"] == EFFECT and c["status"] != "not measurable here"
    ]
    return sum(c["status"] == "pass" for c in effects), len(effects)


def counts_table(ledger: dict[str, Any]) -> Table:
    """Effects reproduced per part and in all, with controls, mechanisms and modelled numbers."""
    rows = []
    by_part: dict[str, dict[str, dict]] = {}
    for name, chapter in ledger["chapters"].items():
        by_part.setdefault(chapter["part"], {})[name] = chapter
    groups = [(PART_NAMES[p], chapters) for p, chapters in by_part.items()] + [("All chapters", ledger["chapters"])]
    for label, chapters in groups:
        claims = [c for e in chapters.values() for c in e["claims"]]
        reproduced, effects = _effects(chapters)
        controls = [c for c in claims if c["kind"] == CONTROL]
        rows.append(
            [
                label,
                f"{reproduced} of {effects}",
                f"{sum(c['status'] == 'pass' for c in controls)} of {len(controls)}",
                sum(c["status"] == "by construction" for c in claims),
                sum(c["kind"] == "modelled" for c in claims),
                sum(c["status"] == "not measurable here" for c in claims),
            ]
        )
    columns = ["", "effects reproduced", "controls holding", "by construction", "modelled", "not measurable here"]
    return Table(columns, rows, f"The scorecard over seeds {ledger['seeds'][0]}–{ledger['seeds'][-1]}")


def claims_table(ledger: dict[str, Any], part: str) -> Table:
    """One row per claim of a part's chapters: the claim, its kind, the toy's numbers and its status."""
    rows = []
    for name, chapter in ledger["chapters"].items():
        if chapter["part"] != part:
            continue
        for claim in chapter["claims"]:
            rows.append([name, claim["id"], claim["kind"], claim["statement"], _numbers(claim), claim["status"]])
    return Table(["chapter", "claim", "kind", "the paper says", "the toy's numbers", "verdict"], rows, PART_NAMES[part])


def _numbers(claim: dict[str, Any]) -> str:
    """Δ mean ± sd and wins of the claim's first check, or what it needs when it is not measured."""
    if claim["status"] == "not measurable here":
        return f"needs {claim['reason']}"
    values = claim["values"]
    if not values:
        return claim["detail"]
    mean = sum(values) / len(values)
    sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5 if len(values) > 1 else 0.0
    first = claim["parts"][0]
    text = f"{first['name'] or 'value'}: {mean:+.4f} ± {sd:.4f}"
    if claim.get("regime"):  # v2 files; older ones have none
        text = f"[{claim['regime']['property']} = {claim['regime']['value']}] {text}"
    if claim["kind"] in (EFFECT, CONTROL):
        text += f" (margin {first['margin']:g})"
        if "Δ" in first["name"]:  # a paired difference: how many seeds favour the method
            text += f", {sum(v > 0 for v in values)}/{len(values)} seeds positive"
    return text


def environment_table(ledger: dict[str, Any]) -> Table:
    """Where each chapter's numbers come from: the versions, CPU, threads and device of its run."""
    keys = ("toyscale", "git_commit", "python", "torch", "numpy", "cpu", "cores", "torch_threads", "device")
    rows = [
        [name] + [chapter["environment"].get(k) for k in keys] + [chapter["seconds"]]
        for name, chapter in ledger["chapters"].items()
    ]
    return Table(["chapter", *keys, "seconds"], rows, "The environment of each chapter's run")


def compare(ledger: dict[str, Any], mine: dict[str, Any]) -> Table:
    """The ledger's outcomes beside a reader's own `reproduce --json` run, claim by claim."""
    rows = []
    for claim in mine["claims"]:
        recorded = next(
            (c for c in ledger["chapters"].get(claim["chapter"], {}).get("claims", []) if c["id"] == claim["id"]), None
        )
        rows.append(
            [
                claim["chapter"],
                claim["id"],
                recorded["status"] if recorded else "(not in the ledger)",
                claim["status"],
                _numbers(recorded) if recorded else "",
                _numbers(claim),
            ]
        )
    columns = ["chapter", "claim", "the book's status", "your status", "the book's numbers", "your numbers"]
    return Table(columns, rows, f"The book (seeds {ledger['seeds']}) against your run (seeds {mine['seeds']})")
