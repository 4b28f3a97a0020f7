"""The command line: `python -m toyscale list | run | reproduce | calibrate | scorecard | audit | bench | data`.

User errors (an unknown chapter, a bad option) exit with status 2 and a one-line message, never a
traceback. `reproduce --strict` exits 1 when an expected claim fails. `calibrate NAME` runs a
chapter on calibration seeds (1000 and up) and reports how its claims' margins behave there.
`data --rebuild NAME` recomputes a committed data file (a trained model) and rewrites it.
`audit NAME|--all` lists every way a chapter breaks the claims protocol, with the fix, and exits 1
on any violation of a chapter that has left the re-audit pending list.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib
import json
import pickle
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import scorecard
from .chapters import CHAPTERS, Chapter, UnknownChapter, get
from .core import Table, check_results, claims_table, evaluate, set_threads, tally
from .core.audit import ChapterFiles, audit, violations
from .core.calibration import calibrate
from .core.claims import mark_undertrained, run_seeds
from .core.data import atomic_write_bytes
from .core.environment import environment
from .core.seeding import BOOK_SEEDS, CALIBRATION_SEED_START
from .core.timing import Stopwatch, peak_memory_mb
from .datasets import ARTIFACTS, DATASETS


class UsageError(Exception):
    """A mistake in how the command was called: reported in one line, exit status 2."""


def _chapters(names: Sequence[str], all_: bool) -> list[Chapter]:
    """The chapters named on the command line, or all of them with --all."""
    if all_ and names:
        raise UsageError("give chapter names or --all, not both")
    if not all_ and not names:
        raise UsageError(f"name at least one chapter or pass --all; the chapters are: {', '.join(CHAPTERS)}")
    try:
        return list(CHAPTERS.values()) if all_ else [get(name) for name in names]
    except UnknownChapter as error:
        raise UsageError(str(error)) from None


def _config(module: Any, fast: bool) -> Any:
    return module.Config.fast() if fast else module.Config()


def _metrics_table(result: Any) -> Table:
    """The result's metrics (arm -> metric -> value), or its scalar fields when it has no `metrics`."""
    metrics = getattr(result, "metrics", None)
    if isinstance(metrics, dict) and metrics:
        return Table.from_nested(metrics, row_title="arm", caption="Results")
    scalars = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    rows = [[k, v] for k, v in scalars.items() if isinstance(v, int | float | str)]
    return Table(["field", "value"], rows, "Results")


def cmd_list(args: argparse.Namespace) -> int:
    rows = [[c.name, c.part, c.title, ", ".join(claim.id for claim in c.load().CLAIMS)] for c in CHAPTERS.values()]
    print(Table(["chapter", "part", "title", "claims"], rows))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    chapter = _chapters([args.name], False)[0]
    module = chapter.load()
    result = module.run(_config(module, args.fast), seed=args.seed)
    print(_metrics_table(result))
    print()
    print(claims_table(check_results(module.CLAIMS, [result], [args.seed], chapter.name)))
    print("\nOne seed only: the book checks claims over several (python -m toyscale reproduce NAME).")
    return 0


def _write_json(path: Path, payload: Any) -> None:
    atomic_write_bytes(path, (json.dumps(payload, indent=2, ensure_ascii=False) + "\n").encode())


def cmd_reproduce(args: argparse.Namespace) -> int:
    if args.seeds < 1:
        raise UsageError(f"--seeds must be at least 1, got {args.seeds}")
    if args.seed_start < 0:
        raise UsageError(f"--seed-start must be >= 0, got {args.seed_start}")
    if args.ledger and args.fast:
        raise UsageError("the scorecard ledger holds the default configuration: drop --fast")
    chapters = _chapters(args.names, args.all)
    seeds = range(args.seed_start, args.seed_start + args.seeds)
    outcomes, seconds, lines = [], {}, []
    for chapter in chapters:
        module = chapter.load()
        with Stopwatch() as watch:
            found = evaluate(module.CLAIMS, module.run, seeds, _config(module, args.fast), chapter.name)
        seconds[chapter.name] = round(watch.seconds, 2)
        found = mark_undertrained(
            found, _records(module).get("fast" if args.fast else "default", {}).get("budgets", {})
        )
        outcomes += found
        lines.append(f"{chapter.name}: {tally(found).line()}")
    table = claims_table(outcomes)
    table.columns.insert(0, "chapter")
    for row, outcome in zip(table.rows, outcomes, strict=True):
        row.insert(0, outcome.chapter)
    print(table)
    print()
    print("\n".join(lines))
    total = tally(outcomes)
    print(f"all: {total.line()}")
    failed = [o for o in outcomes if o.fails_strict]
    print(f"{len(outcomes) - len(failed)} of {len(outcomes)} claims as expected; {len(failed)} failed.")
    if args.ledger:
        env = environment()
        entries = {
            c.name: scorecard.entry(c, [o for o in outcomes if o.chapter == c.name], env, seconds[c.name])
            for c in chapters
        }
        try:
            scorecard.update(args.ledger, list(seeds), entries)
        except ValueError as error:
            raise UsageError(str(error)) from None
        print(f"updated {args.ledger} for {', '.join(entries)}")
    if args.json:
        payload = {
            "environment": environment(),
            "config": "fast" if args.fast else "default",
            "seeds": list(seeds),
            "claims": [o.as_dict() for o in outcomes],
            "tally": {c.name: vars(tally([o for o in outcomes if o.chapter == c.name])) for c in chapters},
            "seconds": seconds,
        }
        _write_json(args.json, payload)
    return 1 if args.strict and failed else 0


def _cached_runs(run: Any, seeds: Sequence[int], config: Any, chapter: str, cache: Path | None) -> list[Any]:
    """`run(config, seed=s)` for every seed, each result kept in `cache` (a folder) under its config and seed.

    The key is the config's repr and the seed, not the code: empty the folder after changing the code.
    """
    if cache is None:
        return run_seeds(run, seeds, config, desc=f"{chapter}: seeds")
    cache.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(repr(config).encode()).hexdigest()[:12]
    results = []
    for seed in seeds:
        path = cache / f"{chapter}-{key}-{seed}.pkl"
        if path.is_file():
            results.append(pickle.loads(path.read_bytes()))
            continue
        result = run(config, seed=seed)
        atomic_write_bytes(path, pickle.dumps(result))
        results.append(result)
    return results


def cmd_calibrate(args: argparse.Namespace) -> int:
    if args.seeds < 5:
        raise UsageError(f"--seeds must be at least 5 (one five-seed window), got {args.seeds}")
    if args.seed_start < CALIBRATION_SEED_START:
        raise UsageError(
            f"calibration seeds start at {CALIBRATION_SEED_START}, got --seed-start {args.seed_start}: "
            f"margins are never set on the book's seeds {BOOK_SEEDS[0]}–{BOOK_SEEDS[-1]} or near them"
        )
    chapter = _chapters([args.name], False)[0]
    module = chapter.load()
    config = _config(module, args.fast)
    seeds = tuple(range(args.seed_start, args.seed_start + args.seeds))
    results = _cached_runs(module.run, seeds, config, chapter.name, args.cache)
    falsifiers = [] if args.no_falsifiers else list(getattr(module, "FALSIFIERS", ()))
    falsified = [(f, _cached_runs(module.run, seeds, f.change(config), chapter.name, args.cache)) for f in falsifiers]
    record = calibrate(chapter.name, module.CLAIMS, results, seeds, falsified=falsified, fast=args.fast)
    print(record.table())
    if falsified:
        print()
        print(record.falsifier_table())
    if args.json:
        fingerprint = chapter.fingerprint(config)
        _write_json(args.json, {"environment": environment(), "fingerprint": fingerprint, **record.as_dict()})
    return 0


def cmd_scorecard(args: argparse.Namespace) -> int:
    try:
        ledger = scorecard.load(args.ledger)
    except FileNotFoundError as error:
        raise UsageError(str(error)) from None
    if args.compare:
        try:
            mine = json.loads(args.compare.read_text())
        except (OSError, ValueError) as error:
            raise UsageError(f"cannot read {args.compare} as a reproduce --json file: {error}") from None
        if "claims" not in mine or "seeds" not in mine:
            raise UsageError(f"{args.compare} is not a `reproduce --json` file (it has no claims or seeds)")
        print(scorecard.compare(ledger, mine))
        return 0
    print(scorecard.counts_table(ledger))
    for problem in scorecard.problems(ledger):
        print(f"stale: {problem}")
    return 0


ROOT = Path(__file__).resolve().parents[2]  # the repository: code/toyscale/cli.py → ../..


def _records(module: Any) -> dict[str, dict[str, Any]]:
    """A chapter's committed calibration records by config ('default', 'fast'): those that exist."""
    folder = Path(module.__file__).parent / "calibration"
    return {
        config: json.loads((folder / f"{config}.json").read_text())
        for config in ("default", "fast")
        if (folder / f"{config}.json").is_file()
    }


def _committed_results(chapter: Chapter) -> list[Any] | None:
    """The book seeds' committed results: `results.reference().results` or `results.reference_results()`."""
    try:
        results = importlib.import_module(f"{chapter.module_name}.results")
    except ModuleNotFoundError:
        return None
    if hasattr(results, "reference"):
        return getattr(results.reference(), "results", None)
    if hasattr(results, "reference_results"):
        return list(results.reference_results())
    return None


def chapter_files(chapter: Chapter) -> ChapterFiles:
    """What `audit` reads of a registered chapter: claims, falsifiers, records, notebook, committed results."""
    module = chapter.load()
    return ChapterFiles(
        name=chapter.name,
        claims=list(module.CLAIMS),
        falsifiers=list(getattr(module, "FALSIFIERS", ())),
        records=_records(module),
        notebook=ROOT / "book" / chapter.part / f"{chapter.name}.py",
        results=_committed_results(chapter),
        fingerprints={
            "default": chapter.fingerprint(module.Config()),
            "fast": chapter.fingerprint(module.Config.fast()),
        },
    )


def cmd_audit(args: argparse.Namespace) -> int:
    chapters = _chapters(args.names, args.all)
    failing = 0
    for chapter in chapters:
        findings = audit(chapter_files(chapter))
        for finding in findings:
            print(finding.line())
        failed = len(violations(findings))
        failing += failed
        print(f"{chapter.name}: {failed} violations, {len(findings) - failed} warnings")
    print(f"audit: {failing} violations in {len(chapters)} chapters (pending chapters only warn)")
    return 1 if failing else 0


NOTEBOOK_BUDGET_S = 60  # each notebook, on a two-core CPU (the book's promise)
NOTEBOOK_AIM_S = 45  # what every chapter aims for, to leave headroom on a loaded machine


def _time_notebook(path: Path) -> float:
    """Execute a notebook from its own folder in a fresh kernel, as the book build does; return the seconds."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    with Stopwatch() as watch:
        client.execute()
    return watch.seconds


def cmd_bench_notebooks(args: argparse.Namespace) -> int:
    chapters = _chapters(args.names, args.all)
    book = Path(__file__).resolve().parents[2] / "book"
    rows, report = [], {}
    for chapter in chapters:
        path = book / chapter.part / f"{chapter.name}.ipynb"
        seconds = round(_time_notebook(path), 1)
        report[chapter.name] = seconds
        verdict = (
            "ok" if seconds <= NOTEBOOK_AIM_S else ("over the aim" if seconds <= NOTEBOOK_BUDGET_S else "OVER BUDGET")
        )
        rows.append([chapter.name, seconds, verdict])
    caption = f"Each notebook executed in a fresh kernel (budget {NOTEBOOK_BUDGET_S} s, aim {NOTEBOOK_AIM_S} s)"
    print(Table(["notebook", "seconds", "against the budget"], rows, caption))
    if args.json:
        atomic_write_bytes(args.json, (json.dumps(report, indent=2) + "\n").encode())
    return 1 if any(v > NOTEBOOK_BUDGET_S for v in report.values()) else 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.notebooks:
        return cmd_bench_notebooks(args)
    chapters = _chapters(args.names, args.all)
    rows, report = [], {}
    for chapter in chapters:
        child = subprocess.run(
            [sys.executable, "-m", "toyscale", "_bench_one", chapter.name],
            capture_output=True,
            text=True,
            check=False,
        )
        if child.returncode != 0:
            print(child.stderr, file=sys.stderr)
            raise RuntimeError(f"benchmark of {chapter.name} failed with exit status {child.returncode}")
        measured = json.loads(child.stdout.strip().splitlines()[-1])
        report[chapter.name] = measured
        rows.append([chapter.name, measured["seconds"], measured["peak_memory_mb"]])
    rows.append(["total", round(sum(r[1] for r in rows), 2), max(r[2] for r in rows)])
    print(Table(["chapter", "wall seconds", "peak memory (MiB)"], rows, "run() at the default config, one thread"))
    if args.json:
        atomic_write_bytes(args.json, (json.dumps(report, indent=2) + "\n").encode())
    return 0


def cmd_data(args: argparse.Namespace) -> int:
    if args.rebuild is not None:
        if args.rebuild not in ARTIFACTS:
            raise UsageError(f"unknown artifact {args.rebuild!r}; the artifacts are: {', '.join(ARTIFACTS)}")
        artifact = ARTIFACTS[args.rebuild]
        with Stopwatch() as watch:
            checksum = artifact.rebuild()
        print(f"rebuilt {artifact.path} in {watch.seconds:.0f} s; sha256: {checksum}")
        print(
            "Its code fingerprint is recorded in data/fingerprints.json; put the sha256 in its card in data/README.md."
        )
        return 0
    rows = [[d.name, ", ".join(d.chapters), d.fingerprint()] for d in DATASETS.values()]
    rows += [
        [
            f"{a.name} (committed: {a.path}; {'; '.join(a.staleness()) or 'current'})",
            ", ".join(a.chapters),
            a.fingerprint(),
        ]
        for a in ARTIFACTS.values()
    ]
    print(Table(["data set", "chapters", "sha256 (see data/README.md)"], rows))
    return 0


def cmd_bench_one(args: argparse.Namespace) -> int:
    """Run one chapter at its default config in this (fresh) process and print time and memory as JSON."""
    module = get(args.name).load()
    with Stopwatch() as watch:
        module.run(module.Config(), seed=0)
    print(json.dumps({"seconds": round(watch.seconds, 2), "peak_memory_mb": round(peak_memory_mb(), 1)}))
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m toyscale", description=__doc__.splitlines()[0])
    commands = top.add_subparsers(
        dest="command", required=True, metavar="{list,run,reproduce,calibrate,scorecard,audit,bench,data}"
    )

    commands.add_parser("list", help="the chapters, their part and their claims").set_defaults(func=cmd_list)

    run = commands.add_parser("run", help="run one chapter's experiment and print its results and claims")
    run.add_argument("name", help=f"one of: {', '.join(CHAPTERS)}")
    run.add_argument("--seed", type=int, default=0, help="the seed (default 0)")
    run.add_argument("--fast", action="store_true", help="use Config.fast(), the quick configuration of the tests")
    run.set_defaults(func=cmd_run)

    reproduce = commands.add_parser("reproduce", help="check chapters' claims over several seeds: the scorecard")
    reproduce.add_argument("names", nargs="*", help="chapter names")
    reproduce.add_argument("--all", action="store_true", help="every chapter")
    reproduce.add_argument("--seeds", type=int, default=5, help="how many seeds (default 5)")
    reproduce.add_argument("--seed-start", type=int, default=0, help="the first seed (default 0: seeds 0..N-1)")
    reproduce.add_argument("--fast", action="store_true", help="use Config.fast()")
    reproduce.add_argument("--json", type=Path, help="also write the scorecard as JSON to this path")
    reproduce.add_argument("--strict", action="store_true", help="exit 1 when an expected claim fails")
    reproduce.add_argument(
        "--ledger", type=Path, help="replace these chapters' entries in the scorecard ledger (book/scorecard.json)"
    )
    reproduce.set_defaults(func=cmd_reproduce)

    cal = commands.add_parser(
        "calibrate", help="run a chapter on calibration seeds (1000 and up): each claim's spread and window pass rate"
    )
    cal.add_argument("name", help=f"one of: {', '.join(CHAPTERS)}")
    cal.add_argument("--seeds", type=int, default=12, help="how many calibration seeds (default 12)")
    cal.add_argument("--seed-start", type=int, default=CALIBRATION_SEED_START, help="the first seed (default 1000)")
    cal.add_argument("--fast", action="store_true", help="use Config.fast()")
    cal.add_argument("--no-falsifiers", action="store_true", help="skip rerunning the chapter's falsifiers")
    cal.add_argument("--json", type=Path, help="also write the record as JSON (to commit beside the chapter)")
    cal.add_argument(
        "--cache", type=Path, help="keep each run's result in this folder and reuse it (empty it after a code change)"
    )
    cal.set_defaults(func=cmd_calibrate)

    card = commands.add_parser("scorecard", help="the book's scorecard, or your own run beside it (--compare)")
    card.add_argument("--ledger", type=Path, default=scorecard.LEDGER, help="the ledger (default book/scorecard.json)")
    card.add_argument("--compare", type=Path, help="a `reproduce --json` file of your own to set beside the book's")
    card.set_defaults(func=cmd_scorecard)

    aud = commands.add_parser(
        "audit", help="every way a chapter breaks the claims protocol, with the fix (exit 1 on a violation)"
    )
    aud.add_argument("names", nargs="*", help="chapter names")
    aud.add_argument("--all", action="store_true", help="every chapter")
    aud.set_defaults(func=cmd_audit)

    bench = commands.add_parser(
        "bench", help="time each chapter's run() at its default config in a fresh process (or its notebook)"
    )
    bench.add_argument("names", nargs="*", help="chapter names")
    bench.add_argument("--all", action="store_true", help="every chapter")
    bench.add_argument("--json", type=Path, help="also write the measurements as JSON to this path")
    bench.add_argument(
        "--notebooks", action="store_true", help="time each chapter's notebook instead (exit 1 over the 60 s budget)"
    )
    bench.set_defaults(func=cmd_bench)

    data = commands.add_parser(
        "data", help="regenerate every data set and print its fingerprint (and those of the committed files)"
    )
    data.add_argument(
        "--rebuild",
        metavar="NAME",
        help=f"recompute a committed file and rewrite it (slow; one of: {', '.join(ARTIFACTS)})",
    )
    data.set_defaults(func=cmd_data)

    one = commands.add_parser("_bench_one")  # the child process of `bench`
    one.add_argument("name")
    one.set_defaults(func=cmd_bench_one)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    set_threads(1)
    try:
        return args.func(args)
    except UsageError as error:
        print(f"python -m toyscale {args.command}: error: {error}", file=sys.stderr)
        return 2
