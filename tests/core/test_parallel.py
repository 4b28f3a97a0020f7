"""Tasks in parallel: results in task order whoever finishes first, failures named, dead workers reported.

The task functions are builtins (`sum`, `math.sqrt`, `os._exit`) so they pickle by reference into worker
processes that never import this test module.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
from pathlib import Path

import pytest

from toyscale.cli import main
from toyscale.core.parallel import TaskError, Workers


def test_results_come_back_in_task_order_whatever_finishes_first() -> None:
    # the first task is slow, so the other worker finishes the three quick ones before it
    tasks = [range(30_000_000), range(1), range(2), range(3)]
    finished: list[int] = []
    results = Workers(jobs=2).map(sum, tasks, ["slow", "a", "b", "c"], on_result=lambda i, _: finished.append(i))
    assert results == [sum(task) for task in tasks]
    assert sorted(finished) == [0, 1, 2, 3] and finished[-1] == 0, finished  # completion order is not task order
    # the pool is shut down with the map: no worker process outlives it (a later test counts its own children)
    assert not multiprocessing.active_children()


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_task_that_raises_is_named_and_the_others_still_finish(jobs: int) -> None:
    kept: dict[int, float] = {}
    with pytest.raises(
        TaskError, match=r"1 of 3 tasks failed \(jrc seed 1001: ValueError: math domain error\)"
    ) as caught:
        Workers(jobs=jobs).map(
            math.sqrt, [4.0, -1.0, 9.0], ["jrc seed 1000", "jrc seed 1001", "jrc seed 1002"], on_result=kept.__setitem__
        )
    assert kept == {0: 2.0, 2: 3.0}
    assert len(caught.value.tracebacks) == 1 and "Traceback" in caught.value.tracebacks[0]


def test_a_worker_that_dies_is_reported_not_waited_on() -> None:
    with pytest.raises(TaskError, match=r"a worker process died .* unfinished: .*doomed"):
        Workers(jobs=2).map(os._exit, [3, 3], ["doomed", "also doomed"])


@pytest.mark.parametrize(
    ("jobs", "scheduler", "message"),
    [
        (0, None, "jobs=0: must be a positive number"),
        (-2, None, "jobs=-2"),
        (True, None, "jobs=True"),
        (1, "localhost:8786", "must be a Dask scheduler's address, like tcp://HOST:PORT"),
        (2, "tcp://127.0.0.1:8786", "give one"),
    ],
)
def test_bad_workers_name_the_argument(jobs: int, scheduler: str | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Workers(jobs, scheduler)


def test_map_needs_one_label_per_task() -> None:
    with pytest.raises(ValueError, match="one label per task"):
        Workers().map(abs, [1, 2], ["one"])
    assert Workers(jobs=-1).processes >= 1 and Workers().map(abs, [], []) == []


def test_a_dask_local_cluster_runs_the_tasks_names_failures_and_reports_a_killed_worker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip(
        "distributed", reason="the Dask backend needs the cluster extra: pip install -e './code[cluster]'"
    )
    import dask
    from distributed import LocalCluster

    serial, clustered = tmp_path / "serial.json", tmp_path / "cluster.json"
    command = ["reproduce", "fangorn", "--fast", "--seeds", "2", "--json"]
    assert main([*command, str(serial)]) == 0
    # no retries: a task that kills its worker fails at once instead of on three more workers
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            scheduler_kwargs={"dashboard": False},
        ) as cluster,
    ):
        workers = Workers(scheduler=cluster.scheduler_address)
        assert workers.map(math.sqrt, [4.0, 9.0, 16.0], ["a", "b", "c"]) == [2.0, 3.0, 4.0]
        with pytest.raises(TaskError, match=r"1 of 2 tasks failed \(b: ValueError: math domain error\)"):
            workers.map(math.sqrt, [4.0, -1.0], ["a", "b"])
        with pytest.raises(TaskError, match=r"the Dask cluster lost task doomed .*KilledWorker"):
            workers.map(os._exit, [3], ["doomed"])
        assert main([*command, str(clustered), "--scheduler", cluster.scheduler_address]) == 0
    capsys.readouterr()
    mine, theirs = (json.loads(path.read_text()) for path in (serial, clustered))
    for payload in (mine, theirs):
        del payload["environment"], payload["seconds"]
    assert mine == theirs
