"""Independent tasks in parallel: seeds and falsifier reruns on a process pool or a Dask cluster.

Every check in the book is a loop over independent seeds. `Workers` says where the tasks run: in
this process one after another (`jobs=1`, the default), on `jobs` worker processes of this machine
(joblib's loky backend; `jobs=-1` uses every core), or on the workers of a Dask cluster
(`scheduler="tcp://HOST:PORT"`, with the optional `cluster` extra: `pip install -e './code[cluster]'`).

`Workers.map(fn, tasks, labels)` returns `fn(task)` for every task, in task order: a result depends
only on its task, never on which worker ran it or in what order the tasks finished. Each worker uses
one torch thread and draws no progress bars of its own; the caller's bar counts finished tasks.

A task that raises does not stop the others: they run to the end (`on_result` sees each one as it
finishes, so a cache can keep it), then `TaskError` names every failed task by its label. A worker
that dies (killed, out of memory) ends the map at once with a `TaskError` that says so.
"""

from __future__ import annotations

import importlib.util
import os
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tqdm import tqdm

from .devices import set_threads
from .progress import show_progress
from .timing import peak_memory_mb

#: The environment variable that names a Dask scheduler when `--scheduler` is not given.
SCHEDULER_ENV = "TOYSCALE_DASK_SCHEDULER"
#: How the optional extra is installed, for the messages that need it.
CLUSTER_EXTRA = "pip install -e './code[cluster]'"
#: Seconds to wait for a Dask scheduler to answer before giving up.
CONNECT_TIMEOUT_S = 10


class TaskError(RuntimeError):
    """Tasks that failed, or a worker that died: the message is one line, `tracebacks` hold the details."""

    def __init__(self, message: str, tracebacks: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.tracebacks = tuple(tracebacks)


@dataclass(frozen=True)
class _Done:
    """A task that returned: its value and the peak memory of the process that ran it (MiB)."""

    value: Any
    peak_mb: float


@dataclass(frozen=True)
class _Failed:
    """A task that raised: the error in one line and its traceback (the error itself only in-process)."""

    line: str
    traceback: str
    error: Exception | None = None


def _attempt(fn: Callable[[Any], Any], task: Any) -> _Done | _Failed:
    """`fn(task)`, with an exception caught and kept rather than raised."""
    try:
        value = fn(task)
    except Exception as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return _Failed(f"{type(error).__name__}: {first}".rstrip(": "), traceback.format_exc(), error)
    return _Done(value, peak_memory_mb())


def _in_worker(fn: Callable[[Any], Any], task: Any, index: int) -> tuple[int, _Done | _Failed]:
    """Run one task in a worker process: one torch thread, no progress bars, the error sent back as text."""
    os.environ["TOYSCALE_PROGRESS"] = "0"
    set_threads(1)
    outcome = _attempt(fn, task)
    if isinstance(outcome, _Failed):
        outcome = replace(outcome, error=None)  # an exception object may not pickle; its text does
    return index, outcome


def cores() -> int:
    """The CPU cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class Workers:
    """Where tasks run: `jobs` processes on this machine (1: in this process; -1: every core), or a Dask cluster.

    jobs: how many worker processes (1 runs the tasks here, one after another); scheduler: the address of
    a Dask scheduler (`tcp://HOST:PORT`); with one, the cluster's workers run the tasks and `jobs` stays 1.
    """

    jobs: int = 1
    scheduler: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or not (self.jobs >= 1 or self.jobs == -1):
            raise ValueError(f"jobs={self.jobs!r}: must be a positive number of processes or -1 (every core)")
        if self.scheduler is None:
            return
        if "://" not in self.scheduler:
            raise ValueError(f"scheduler={self.scheduler!r}: must be a Dask scheduler's address, like tcp://HOST:PORT")
        if self.jobs != 1:
            raise ValueError(
                f"jobs={self.jobs} runs tasks on this machine and scheduler={self.scheduler!r} on a Dask cluster: "
                f"give one (unset {SCHEDULER_ENV} to run on this machine)"
            )
        if importlib.util.find_spec("distributed") is None:
            raise ValueError(f"scheduler={self.scheduler!r} needs the optional `distributed` package: {CLUSTER_EXTRA}")

    @property
    def processes(self) -> int:
        """The number of local processes that run tasks (1 with a scheduler: the cluster has its own)."""
        return cores() if self.jobs == -1 else self.jobs

    def map(
        self,
        fn: Callable[[Any], Any],
        tasks: Sequence[Any],
        labels: Sequence[str],
        *,
        desc: str = "tasks",
        on_result: Callable[[int, Any], None] | None = None,
    ) -> list[Any]:
        """`[fn(task) for task in tasks]`, the tasks run where these workers say, the results in task order.

        fn and the tasks must pickle unless the tasks run here (a module-level function, a dataclass);
        labels name each task in errors ("jrc seed 1003"); on_result(index, value) is called here as each
        task succeeds, in the order they finish. Raises `TaskError` naming every task that raised, once
        all have run, or at once when a worker dies.
        """
        return self.map_measured(fn, tasks, labels, desc=desc, on_result=on_result)[0]

    def map_measured(
        self,
        fn: Callable[[Any], Any],
        tasks: Sequence[Any],
        labels: Sequence[str],
        *,
        desc: str = "tasks",
        on_result: Callable[[int, Any], None] | None = None,
    ) -> tuple[list[Any], list[float]]:
        """As `map`, with the peak memory (MiB) of the process that ran each task, measured as it finished.

        A process's peak only grows, so the largest of a worker's tasks' values is that worker's peak.
        """
        tasks = list(tasks)
        if len(labels) != len(tasks):
            raise ValueError(f"need one label per task, got {len(labels)} labels for {len(tasks)} tasks")
        outcomes: list[_Done | _Failed | None] = [None] * len(tasks)
        with tqdm(total=len(tasks), desc=desc, leave=False, disable=not show_progress()) as bar:
            for index, outcome in self._run(fn, tasks, labels):
                outcomes[index] = outcome
                bar.update()
                if isinstance(outcome, _Done) and on_result is not None:
                    on_result(index, outcome.value)
        failed = [(label, o) for label, o in zip(labels, outcomes, strict=True) if isinstance(o, _Failed)]
        if failed:
            listed = "; ".join(f"{label}: {o.line}" for label, o in failed)
            error = TaskError(
                f"{len(failed)} of {len(tasks)} tasks failed ({listed})", [o.traceback for _, o in failed]
            )
            raise error from failed[0][1].error
        done = [o for o in outcomes if isinstance(o, _Done)]
        return [o.value for o in done], [o.peak_mb for o in done]

    def _run(
        self, fn: Callable[[Any], Any], tasks: list[Any], labels: Sequence[str]
    ) -> Iterator[tuple[int, _Done | _Failed]]:
        """Each task's index and outcome, in the order the tasks finish."""
        if self.scheduler is not None:
            yield from _on_dask(self.scheduler, fn, tasks, labels)
        elif self.processes == 1 or len(tasks) <= 1:
            for index, task in enumerate(tasks):
                yield index, _attempt(fn, task)
        else:
            yield from _on_loky(min(self.processes, len(tasks)), fn, tasks, labels)


def _unfinished(labels: Sequence[str], finished: set[int]) -> str:
    """The labels of the tasks not finished yet, the first few of them."""
    left = [label for index, label in enumerate(labels) if index not in finished]
    return ", ".join(left[:4]) + (f" and {len(left) - 4} more" if len(left) > 4 else "")


def _on_loky(
    processes: int, fn: Callable[[Any], Any], tasks: list[Any], labels: Sequence[str]
) -> Iterator[tuple[int, _Done | _Failed]]:
    """The tasks on a pool of `processes` local worker processes (joblib's loky backend), as they finish.

    The pool is shut down when the map ends: loky would keep its workers alive for reuse, and a
    command (or a test) that starts processes of its own would then find them still running.
    """
    from joblib import Parallel, delayed
    from joblib.externals.loky import get_reusable_executor
    from joblib.externals.loky.process_executor import TerminatedWorkerError

    pool = Parallel(n_jobs=processes, backend="loky", batch_size=1, return_as="generator_unordered")
    finished: set[int] = set()
    try:
        for index, outcome in pool(delayed(_in_worker)(fn, task, i) for i, task in enumerate(tasks)):
            finished.add(index)
            yield index, outcome
    except TerminatedWorkerError as error:
        raise TaskError(
            f"a worker process died (killed, or out of memory) with {len(tasks) - len(finished)} of {len(tasks)} "
            f"tasks unfinished: {_unfinished(labels, finished)}",
            [str(error)],
        ) from None
    finally:
        get_reusable_executor().shutdown(wait=True)


def _on_dask(
    address: str, fn: Callable[[Any], Any], tasks: list[Any], labels: Sequence[str]
) -> Iterator[tuple[int, _Done | _Failed]]:
    """The tasks on the workers of the Dask cluster at `address`, as they finish."""
    from distributed import Client, as_completed

    try:
        client = Client(address, timeout=f"{CONNECT_TIMEOUT_S}s", set_as_default=False)
    except (OSError, TimeoutError) as error:
        raise TaskError(
            f"cannot reach the Dask scheduler at {address} within {CONNECT_TIMEOUT_S} s ({error}); "
            f"check the address, or unset {SCHEDULER_ENV}"
        ) from None
    finished: set[int] = set()
    with client:
        futures = {client.submit(_in_worker, fn, task, i, pure=False): i for i, task in enumerate(tasks)}
        for future in as_completed(futures, loop=client.loop):
            try:
                index, outcome = future.result()
            except Exception as error:  # a killed worker (KilledWorker), a lost connection: the task never returned
                client.cancel(list(futures))
                why = str(error).split(". ")[0]  # KilledWorker's first sentence says which task and how often
                raise TaskError(
                    f"the Dask cluster lost task {labels[futures[future]]} ({type(error).__name__}: {why}) with "
                    f"{len(tasks) - len(finished)} of {len(tasks)} tasks unfinished: {_unfinished(labels, finished)}",
                    [traceback.format_exc()],
                ) from None
            finished.add(index)
            yield index, outcome
