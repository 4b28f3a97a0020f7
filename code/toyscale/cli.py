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
import os
import pickle
import subprocess
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from . import scorecard
from .chapters import CHAPTERS, Chapter, UnknownChapter, get
from .core import Table, check_results, claims_table, evaluate, set_threads, tally
from .core.audit import ChapterFiles, audit, violations
from .core.calibration import calibrate
from .core.claims import mark_undertrained
from .core.data import DataError, atomic_write_bytes
from .core.environment import environment
from .core.parallel import CLUSTER_EXTRA, SCHEDULER_ENV, TaskError, Workers
from .core.seeding import BOOK_SEEDS, CALIBRATION_SEED_START
from .core.timing import Stopwatch, peak_memory_mb
from .datasets import ARTIFACTS, DATASETS, Artifact, record_fingerprint


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


def _workers(args: argparse.Namespace) -> Workers:
    """Where the command's tasks run: `--jobs` processes here, or the Dask cluster of `--scheduler`
    (else of TOYSCALE_DASK_SCHEDULER)."""
    scheduler = args.scheduler or os.environ.get(SCHEDULER_ENV) or None
    try:
        return Workers(args.jobs, scheduler)
    except ValueError as error:
        raise UsageError(str(error).replace("jobs=", "--jobs ").replace("scheduler=", "--scheduler ")) from None


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


def _of(outcomes: Sequence[Any], chapter: str) -> list[Any]:
    """The outcomes of one chapter."""
    return [o for o in outcomes if o.chapter == chapter]


def cmd_reproduce(args: argparse.Namespace) -> int:
    if args.seeds < 1:
        raise UsageError(f"--seeds must be at least 1, got {args.seeds}")
    if args.seed_start < 0:
        raise UsageError(f"--seed-start must be >= 0, got {args.seed_start}")
    if args.ledger and args.fast:
        raise UsageError("the scorecard ledger holds the default configuration: drop --fast")
    chapters = _chapters(args.names, args.all)
    workers = _workers(args)
    seeds = range(args.seed_start, args.seed_start + args.seeds)
    outcomes, seconds, lines = [], {}, []
    for chapter in chapters:
        module = chapter.load()
        with Stopwatch() as watch:
            found = evaluate(
                module.CLAIMS, module.run, seeds, _config(module, args.fast), chapter.name, workers=workers
            )
        seconds[chapter.name] = round(watch.seconds, 2)
        found = mark_undertrained(
            found, _records(module).get("fast" if args.fast else "default", {}).get("budgets", {})
        )
        outcomes += found
        lines.append(f"{chapter.name}: {tally(found).line()}")
    table = claims_table(outcomes)
    table.columns.insert(0, "chapter")
    table.rows = [  # a chapter's rows, one per claim plus a control's loss beyond its band, in its order
        [chapter.name, *row] for chapter in chapters for row in claims_table(_of(outcomes, chapter.name)).rows
    ]
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


def _run_config_seed(run: Any, task: tuple[Any, int]) -> Any:
    """`run(config, seed=seed)` for one (config, seed) task."""
    config, seed = task
    return run(config, seed=seed)


def _cached_runs(
    run: Any,
    configs: Sequence[tuple[str, Any]],
    seeds: Sequence[int],
    chapter: str,
    cache: Path | None,
    workers: Workers,
) -> tuple[list[list[Any]], list[float]]:
    """`run(config, seed=s)` for every (name, config) and seed: one task each, all on `workers` together.

    Returns the results per config (in seed order) and the peak memory (MiB) of the process that ran
    each task computed now. With `cache` (a folder) each result is kept under its config and seed as it
    finishes, so a failed or interrupted run keeps the others; a result already there is reused. The key
    is the config's repr and the seed, not the code: empty the folder after changing the code.
    """
    grid = [(c, s) for c in range(len(configs)) for s in seeds]
    paths: dict[tuple[int, int], Path] = {}
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        keys = [hashlib.sha256(repr(config).encode()).hexdigest()[:12] for _, config in configs]
        paths = {(c, s): cache / f"{chapter}-{keys[c]}-{s}.pkl" for c, s in grid}
    results = {key: pickle.loads(path.read_bytes()) for key, path in paths.items() if path.is_file()}
    todo = [key for key in grid if key not in results]

    def keep(index: int, result: Any) -> None:
        if paths:
            atomic_write_bytes(paths[todo[index]], pickle.dumps(result))

    labels = [f"{chapter} seed {s}" + (f" under falsifier {configs[c][0]}" if configs[c][0] else "") for c, s in todo]
    tasks = [(configs[c][1], s) for c, s in todo]
    computed, peaks = workers.map_measured(
        partial(_run_config_seed, run), tasks, labels, desc=f"{chapter}: runs", on_result=keep
    )
    results.update(zip(todo, computed, strict=True))
    return [[results[c, s] for s in seeds] for c in range(len(configs))], peaks


def _calibration(
    module: Any,
    chapter: str,
    config: Any,
    seeds: Sequence[int],
    falsifiers: Sequence[Any],
    fast: bool,
    cache: Path | None,
    workers: Workers,
) -> tuple[Any, list[float]]:
    """The chapter's calibration record on `seeds`, every seed and falsifier rerun one task on `workers`,
    and the peak memory (MiB) of the process that ran each task computed now."""
    configs = [("", config)] + [(f.name, f.change(config)) for f in falsifiers]
    (results, *reruns), peaks = _cached_runs(module.run, configs, seeds, chapter, cache, workers)
    falsified = list(zip(falsifiers, reruns, strict=True))
    return calibrate(chapter, module.CLAIMS, results, seeds, falsified=falsified, fast=fast), peaks


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
    falsifiers = [] if args.no_falsifiers else list(getattr(module, "FALSIFIERS", ()))
    record = _calibration(module, chapter.name, config, seeds, falsifiers, args.fast, args.cache, _workers(args))[0]
    print(record.table())
    if falsifiers:
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
    """A chapter's committed calibration records by name: 'default', 'fast', and those made under a perturbed
    numerical environment ('default.aten-default': the config, then the environment of `PERTURBED_NUMERICS`)."""
    folder = Path(module.__file__).parent / "calibration"
    return {
        path.stem: json.loads(path.read_text())
        for path in sorted(folder.glob("*.json"))
        if path.stem.split(".")[0] in ("default", "fast")
    }


def _committed_results(chapter: Chapter) -> tuple[list[Any] | None, str]:
    """The book seeds' committed results (`results.reference().results` or `results.reference_results()`),
    and why they could not be read (empty when they were, or when the chapter commits none)."""
    try:
        results = importlib.import_module(f"{chapter.module_name}.results")
    except ModuleNotFoundError:
        return None, ""
    try:
        if hasattr(results, "reference"):
            return getattr(results.reference(), "results", None), ""
        if hasattr(results, "reference_results"):
            return list(results.reference_results()), ""
    except (DataError, FileNotFoundError) as error:  # a stale, corrupt or missing file
        return None, str(error)
    return None, ""


def chapter_files(chapter: Chapter) -> ChapterFiles:
    """What `audit` reads of a registered chapter: claims, falsifiers, records, notebook, committed results."""
    module = chapter.load()
    results, unreadable = _committed_results(chapter)
    return ChapterFiles(
        name=chapter.name,
        claims=list(module.CLAIMS),
        falsifiers=list(getattr(module, "FALSIFIERS", ())),
        records=_records(module),
        notebook=ROOT / "book" / chapter.part / f"{chapter.name}.py",
        results=results,
        results_problem=unreadable,
        no_budgets=getattr(getattr(module, "claims", module), "NO_BUDGETS", ""),
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


def _bench_child(name: str) -> dict[str, float]:
    """One chapter's run() at its default config in a fresh process (`_bench_one`): its seconds and peak memory."""
    child = subprocess.run(
        [sys.executable, "-m", "toyscale", "_bench_one", name], capture_output=True, text=True, check=False
    )
    if child.returncode != 0:
        raise RuntimeError(f"benchmark of {name} failed with exit status {child.returncode}:\n{child.stderr}")
    return json.loads(child.stdout.strip().splitlines()[-1])


def cmd_bench(args: argparse.Namespace) -> int:
    if args.notebooks:
        if args.jobs != 1:
            raise UsageError("--notebooks times one notebook at a time: drop --jobs")
        return cmd_bench_notebooks(args)
    if args.speedup:
        return cmd_bench_speedup(args)
    chapters = _chapters(args.names, args.all)
    workers = _workers(args)
    names = [chapter.name for chapter in chapters]
    measured = workers.map(_bench_child, names, names, desc="bench")
    report = dict(zip(names, measured, strict=True))
    rows = [[name, m["seconds"], m["peak_memory_mb"]] for name, m in report.items()]
    rows.append(["total", round(sum(r[1] for r in rows), 2), max(r[2] for r in rows)])
    caption = "run() at the default config, one thread"
    if workers.scheduler is not None or workers.processes > 1:
        caption += " (runs at the same time: seconds slowed by shared cores, peak memory per process valid)"
    print(Table(["chapter", "wall seconds", "peak memory (MiB)"], rows, caption))
    if args.json:
        atomic_write_bytes(args.json, (json.dumps(report, indent=2) + "\n").encode())
    return 0


def cmd_bench_speedup(args: argparse.Namespace) -> int:
    """Time `calibrate NAME --seeds N` with its falsifiers serially, then on `--jobs` processes: the speed-up."""
    if args.names or args.all:
        raise UsageError("--speedup NAME times one chapter's calibration: give no other chapter names or --all")
    if args.seeds < 5:
        raise UsageError(f"--seeds must be at least 5 (one five-seed window), got {args.seeds}")
    workers = _workers(args)
    if workers.scheduler is not None or workers.processes < 2:
        raise UsageError("--speedup compares one process with --jobs N (N >= 2, or -1) on this machine: pass --jobs")
    chapter = _chapters([args.speedup], False)[0]
    env = {k: v for k, v in os.environ.items() if k != SCHEDULER_ENV}
    runs = {}
    for jobs in (1, workers.processes):
        command = [sys.executable, "-m", "toyscale", "_calibrate_one", chapter.name, "--seeds", str(args.seeds)]
        command += ["--jobs", str(jobs)] + (["--fast"] if args.fast else [])
        child = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
        if child.returncode != 0:
            print(child.stderr, file=sys.stderr)
            raise RuntimeError(f"calibration of {chapter.name} with --jobs {jobs} failed (exit {child.returncode})")
        runs[jobs] = json.loads(child.stdout.strip().splitlines()[-1])
    serial, parallel = runs[1], runs[workers.processes]
    ratio = serial["seconds"] / parallel["seconds"]
    rows = [[jobs, r["seconds"], r["worker_peak_mb"], r["peak_memory_mb"]] for jobs, r in runs.items()]
    config = "Config.fast()" if args.fast else "the default config"
    caption = f"calibrate {chapter.name} --seeds {args.seeds} with its falsifiers ({config}), each in a fresh process"
    print(Table(["jobs", "wall seconds", "peak memory per worker (MiB)", "main process (MiB)"], rows, caption))
    print(f"speed-up of --jobs {workers.processes}: {ratio:.2f}× on {os.cpu_count()} cores (load: {_load()})")
    if args.json:
        _write_json(args.json, {"environment": environment(), "runs": runs, "ratio": round(ratio, 3)})
    if serial["record"] != parallel["record"]:
        print("the parallel calibration record differs from the serial one: results depend on the worker")
        return 1
    print("The two calibration records are identical.")
    return 0


def _load() -> str:
    """The 1, 5 and 15 minute load averages, the other work this machine's cores were doing."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"


def cmd_calibrate_one(args: argparse.Namespace) -> int:
    """Calibrate a chapter with its falsifiers on `--jobs` processes; print seconds, peak memories, the record hash."""
    module = get(args.name).load()
    config = _config(module, args.fast)
    seeds = tuple(range(CALIBRATION_SEED_START, CALIBRATION_SEED_START + args.seeds))
    falsifiers = list(getattr(module, "FALSIFIERS", ()))
    with Stopwatch() as watch:
        record, peaks = _calibration(module, args.name, config, seeds, falsifiers, args.fast, None, Workers(args.jobs))
    digest = hashlib.sha256(json.dumps(record.as_dict(), sort_keys=True).encode()).hexdigest()
    measured = {"seconds": round(watch.seconds, 2), "peak_memory_mb": round(peak_memory_mb(), 1)}
    print(json.dumps({**measured, "worker_peak_mb": round(max(peaks), 1), "tasks": len(peaks), "record": digest}))
    return 0


def _rebuild(artifact: Artifact) -> tuple[str, float, dict[str, Any]]:
    """Recompute a committed file and rewrite it: its checksum, the seconds its maker took and where it ran.

    The caller records the file's fingerprint: tasks on several workers never write the manifest at once.
    """
    with Stopwatch() as watch:
        checksum = artifact.rebuild(record=False)
    return checksum, watch.seconds, environment()


def cmd_data(args: argparse.Namespace) -> int:
    if args.rebuild:
        unknown = [name for name in args.rebuild if name not in ARTIFACTS]
        if unknown:
            raise UsageError(f"unknown artifact {unknown[0]!r}; the artifacts are: {', '.join(ARTIFACTS)}")
        artifacts = [ARTIFACTS[name] for name in dict.fromkeys(args.rebuild)]
        fingerprints = [a.code_fingerprint() for a in artifacts]  # of the code as the rebuild starts
        labels = [f"artifact {a.name}" for a in artifacts]
        rebuilt = _workers(args).map(_rebuild, artifacts, labels, desc="rebuild")
        for artifact, fingerprint, (checksum, seconds, made_in) in zip(artifacts, fingerprints, rebuilt, strict=True):
            record_fingerprint(artifact.name, checksum, fingerprint, made_in)  # here, one writer of the manifest
            print(f"rebuilt {artifact.path} in {seconds:.0f} s; sha256: {checksum}")
        print(
            "Their code fingerprints are recorded in data/fingerprints.json; "
            f"put {'the sha256' if len(artifacts) == 1 else 'each sha256'} in its card in data/README.md."
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


def _add_workers(command: argparse.ArgumentParser, tasks: str, caveat: str = "") -> None:
    """The options that say where a command's independent tasks run: --jobs and --scheduler."""
    command.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help=f"run {tasks} on N processes of this machine, one torch thread each (default 1; -1: every core){caveat}",
    )
    command.add_argument(
        "--scheduler",
        metavar="tcp://HOST:PORT",
        help=f"run {tasks} on the workers of this Dask cluster instead (default: ${SCHEDULER_ENV}; {CLUSTER_EXTRA})",
    )


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
    _add_workers(reproduce, "the seeds")
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
    _add_workers(cal, "the seeds and each falsifier's reruns")
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
    bench.add_argument(
        "--speedup",
        metavar="NAME",
        help="time `calibrate NAME --seeds N` with its falsifiers in one process, then on --jobs processes: the ratio",
    )
    bench.add_argument("--seeds", type=int, default=12, help="calibration seeds for --speedup (default 12)")
    bench.add_argument("--fast", action="store_true", help="--speedup on Config.fast()")
    _add_workers(
        bench,
        "the chapters (with --speedup: the parallel calibration)",
        "; runs at the same time on shared cores slow each other, so their seconds grow, while each process's "
        "peak memory stays valid",
    )
    bench.set_defaults(func=cmd_bench)

    data = commands.add_parser(
        "data", help="regenerate every data set and print its fingerprint (and those of the committed files)"
    )
    data.add_argument(
        "--rebuild",
        nargs="+",
        metavar="NAME",
        help=f"recompute committed files and rewrite them, each one task (slow; of: {', '.join(ARTIFACTS)})",
    )
    _add_workers(
        data, "the rebuilds", "; on a Dask cluster the workers write the files, so they must share this checkout"
    )
    data.set_defaults(func=cmd_data)

    one = commands.add_parser("_bench_one")  # the child process of `bench`
    one.add_argument("name")
    one.set_defaults(func=cmd_bench_one)

    calibrate_one = commands.add_parser("_calibrate_one")  # a child process of `bench --speedup`
    calibrate_one.add_argument("name")
    calibrate_one.add_argument("--seeds", type=int, required=True)
    calibrate_one.add_argument("--jobs", type=int, required=True)
    calibrate_one.add_argument("--fast", action="store_true")
    calibrate_one.set_defaults(func=cmd_calibrate_one)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    set_threads(1)
    try:
        return args.func(args)
    except UsageError as error:
        print(f"python -m toyscale {args.command}: error: {error}", file=sys.stderr)
        return 2
    except TaskError as error:  # tasks that raised (each named) or a worker that died: the details, then one line
        for trace in error.tracebacks:
            print(trace, file=sys.stderr)
        print(f"python -m toyscale {args.command}: error: {error}", file=sys.stderr)
        return 1
