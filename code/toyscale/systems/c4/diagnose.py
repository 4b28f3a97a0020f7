"""C4D: a real multi-process training job, its collective-communication syndrome, and the detector.

`run_job` starts `n_ranks` processes (fork) that form a gloo process group on 127.0.0.1. Every
iteration each rank does some "compute", a ring all-reduce and timed point-to-point probes to
every other rank, all through `InstrumentedComm`, the thin layer that stands for C4's enhanced
collective library: it records when each rank *enters* and *exits* a collective and how long
each point-to-point transfer took, and reports those timings to a key-value store that the parent
process (the C4D master) watches. One rank may carry an injected `Fault`:

- ``slow_compute``: its compute takes `fault_ms` longer (a throttled GPU, a slow data loader);
- ``slow_link``: every message on one directed connection i → j is delayed by `link_ms`;
- ``slow_nic``: every message the rank sends is delayed by `link_ms` (a degraded NIC's egress);
- ``hang``: the rank stops before the collective of one iteration (a crashed kernel, a stuck GPU).

The fault lives below the instrumentation, in the "transport" and the "compute", exactly where a
hardware fault would; `diagnose` reads only the timings in the store (`Reports`) and never the
fault. Its rules are C4D's (Section III of the paper):

- a collective that some rank never *entered* while the others wait inside it is a
  **non-communication hang** of the ranks that did not enter; one that every rank entered and none
  left is a **communication hang**;
- a rank that enters the synchronizing collective consistently later than the others is
  **non-communication slow** (the others wait for it);
- otherwise, the communication latency matrix M[i, j] = median over iterations of the transfer time
  i → j localizes **communication slowness**: a slow row is the egress NIC of rank i, a slow column
  the ingress of rank j, a single slow cell the link i → j.

`slowest_collective` is the naive baseline: blame the rank whose collectives lasted longest. The
ranks that *wait* for a straggler sit longest in the collective, so it blames a victim.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import multiprocessing as mp
import os
import signal
import socket
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist

FAULT_KINDS = ("slow_compute", "slow_link", "slow_nic", "hang")
DIAGNOSIS_KINDS = (
    "healthy",
    "non_communication_slow",
    "communication_slow",
    "non_communication_hang",
    "communication_hang",
)
# What C4D should answer for each injected fault kind
EXPECTED_KIND = {
    None: "healthy",
    "slow_compute": "non_communication_slow",
    "slow_link": "communication_slow",
    "slow_nic": "communication_slow",
    "hang": "non_communication_hang",
}


# ---------------------------------------------------------------------------------------------
# Faults and the job's settings
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """One injected fault: its kind, the faulty rank and, for a slow link, the receiving rank.

    `start` is the first iteration the fault is active in (for a hang: the iteration before whose
    collective the rank stops).
    """

    kind: str
    rank: int
    peer: int | None = None  # the other end of a slow link (rank → peer); None otherwise
    start: int = 0

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"fault kind must be one of {FAULT_KINDS}, got {self.kind!r}")
        if self.rank < 0:
            raise ValueError(f"fault rank must be >= 0, got {self.rank}")
        if (self.kind == "slow_link") != (self.peer is not None):
            raise ValueError(
                f"peer must be given for a slow_link and only then, got kind={self.kind!r} peer={self.peer}"
            )
        if self.peer is not None and self.peer == self.rank:
            raise ValueError(f"a slow link joins two different ranks, got {self.rank} → {self.peer}")
        if self.start < 0:
            raise ValueError(f"fault start must be >= 0, got {self.start}")

    def truth(self) -> tuple[str, tuple[int, ...], tuple[tuple[int, int], ...]]:
        """What a perfect detector answers: (diagnosis kind, culprit ranks, culprit links)."""
        if self.kind == "slow_link":
            return EXPECTED_KIND[self.kind], (), ((self.rank, int(self.peer)),)
        return EXPECTED_KIND[self.kind], (self.rank,), ()


@dataclass(frozen=True)
class JobConfig:
    """The toy training job and its timeouts (milliseconds for work, seconds for timeouts)."""

    n_ranks: int = 4  # processes in the job, one per "GPU"
    iterations: int = 6  # training iterations (synchronization points)
    compute_ms: float = 5.0  # per-iteration "compute": a small matmul, then a sleep standing for GPU time
    grad_numel: int = 4096  # floats in the gradient that the ring all-reduce sums
    probe_numel: int = 256  # floats in each point-to-point probe message
    fault_ms: float = 40.0  # extra compute time of a slow_compute rank
    link_ms: float = 20.0  # extra delay per message on a slow link or out of a slow NIC
    stall_timeout_s: float = 1.5  # C4D master: no new report for this long means a hang
    store_timeout_s: float = 10.0  # key-value store and process-group timeout (bounds every wait)
    job_timeout_s: float = 60.0  # hard limit on one job's wall time; ranks are killed after it

    def __post_init__(self) -> None:
        if self.n_ranks < 3:
            raise ValueError(f"n_ranks must be >= 3 (a row, a column and a cell must differ), got {self.n_ranks}")
        if self.iterations < 3:
            raise ValueError(f"iterations must be >= 3 (medians need several), got {self.iterations}")
        for name in ("compute_ms", "fault_ms", "link_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("grad_numel", "probe_numel"):
            if getattr(self, name) < self.n_ranks:
                raise ValueError(f"{name} must be >= n_ranks = {self.n_ranks}, got {getattr(self, name)}")
        for name in ("stall_timeout_s", "store_timeout_s", "job_timeout_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")


# ---------------------------------------------------------------------------------------------
# The instrumented communication layer (what runs inside each rank)
# ---------------------------------------------------------------------------------------------


class FaultyTransport:
    """Point-to-point sends with the injected link or NIC delay *below* the instrumentation.

    A slow link i → j delays every message on that connection; a slow NIC delays every message
    its rank sends. The delay is a sleep before the send: the receiver sees the data late, as it
    would behind a congested or degraded port.
    """

    def __init__(self, rank: int, fault: Fault | None, link_ms: float) -> None:
        self.rank, self.fault, self.link_s = rank, fault, link_ms / 1000.0
        self.iteration = 0

    def delay_to(self, dst: int) -> float:
        """Seconds of injected delay on the connection rank → dst in the current iteration."""
        f = self.fault
        if f is None or f.rank != self.rank or self.iteration < f.start:
            return 0.0
        if f.kind == "slow_nic" or (f.kind == "slow_link" and f.peer == dst):
            return self.link_s
        return 0.0

    def isend(self, tensor: torch.Tensor, dst: int) -> dist.Work:
        delay = self.delay_to(dst)
        if delay:
            time.sleep(delay)
        return dist.isend(tensor, dst)


class InstrumentedComm:
    """C4's collective layer in miniature: collectives and probes that time themselves.

    Each iteration it records, for its rank: `enter` and `exit` of the all-reduce (monotonic clock,
    shared by all processes on one host), and for every probe the sender's ready time and the
    receiver's post and completion times. `enter` is published the moment the rank enters the
    collective, the rest after the iteration, so a hang leaves its trace in the store.
    """

    def __init__(self, rank: int, n_ranks: int, store: dist.Store, transport: FaultyTransport) -> None:
        self.rank, self.n, self.store, self.transport = rank, n_ranks, store, transport
        self.record: dict[str, object] = {}

    def begin(self, iteration: int) -> None:
        self.transport.iteration = iteration
        self.record = {"begin": time.monotonic(), "sent": {}, "received": {}}

    def all_reduce(self, tensor: torch.Tensor, iteration: int) -> torch.Tensor:
        """Sum `tensor` over ranks with a ring all-reduce (reduce-scatter, then all-gather).

        Ring all-reduce: n − 1 steps in which rank r sends chunk (r − s) mod n to r + 1 and adds
        the chunk it receives from r − 1, then n − 1 steps that pass the reduced chunks around.
        """
        enter = time.monotonic()
        self.record["enter"] = enter
        self.store.set(f"c4d/enter/{self.rank}/{iteration}", repr(enter))
        n, r = self.n, self.rank
        chunks = list(tensor.clone().chunk(n))  # the input stays untouched
        incoming = [torch.empty_like(c) for c in chunks]
        right, left = (r + 1) % n, (r - 1) % n
        for step in range(2 * (n - 1)):
            # reduce-scatter for s < n − 1: send chunk (r − s), receive chunk (r − s − 1) and add;
            # all-gather afterwards: send chunk (r + 1 − s'), receive chunk (r − s') and copy
            s = step if step < n - 1 else step - (n - 1)
            send_index = (r - s) % n if step < n - 1 else (r + 1 - s) % n
            recv_index = (r - s - 1) % n if step < n - 1 else (r - s) % n
            pending = dist.irecv(incoming[recv_index], left)
            sent = self.transport.isend(chunks[send_index].contiguous(), right)
            pending.wait()
            sent.wait()
            if step < n - 1:
                chunks[recv_index] += incoming[recv_index]
            else:
                chunks[recv_index].copy_(incoming[recv_index])
        self.record["exit"] = time.monotonic()
        return torch.cat(chunks)

    def probe_all(self, payload: torch.Tensor) -> None:
        """Time one message on every directed connection i → j, one connection at a time.

        The sender records when it is ready, the receiver when it posted its receive and when the
        data arrived; the transfer time is arrival − max(ready, posted).
        """
        buffer = torch.empty_like(payload)
        for i in range(self.n):
            for j in range(self.n):
                if i == j:
                    continue
                if self.rank == i:
                    self.record["sent"][j] = time.monotonic()
                    self.transport.isend(payload, j).wait()
                elif self.rank == j:
                    posted = time.monotonic()
                    dist.recv(buffer, i)
                    self.record["received"][i] = (posted, time.monotonic())

    def publish(self, iteration: int) -> None:
        self.record["end"] = time.monotonic()
        self.store.set(f"c4d/iter/{self.rank}/{iteration}", json.dumps(self.record))


def _die_with_parent() -> None:
    """Ask Linux to kill this process when its parent dies (best effort; a safety net only)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _rank_main(rank: int, port: int, config: JobConfig, fault: Fault | None, onset: object, seed: int) -> None:
    """One rank of the job: join the group, iterate, report timings to the store, leave."""
    _die_with_parent()
    signal.alarm(int(config.job_timeout_s) + 5)  # never outlive the job's hard limit
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    torch.set_num_threads(1)
    timeout = timedelta(seconds=config.store_timeout_s)
    store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timeout)
    dist.init_process_group(
        "gloo", store=dist.PrefixStore("pg", store), rank=rank, world_size=config.n_ranks, timeout=timeout
    )
    comm = InstrumentedComm(rank, config.n_ranks, store, FaultyTransport(rank, fault, config.link_ms))
    store.set(f"c4d/ready/{rank}", "1")  # joined: from now on the master expects progress
    generator = torch.Generator().manual_seed(seed * 1000 + rank)
    weights = torch.randn(32, 32, generator=generator)
    gradient = torch.zeros(config.grad_numel)
    payload = torch.ones(config.probe_numel)
    compute_s = config.compute_ms / 1000.0
    for iteration in range(config.iterations):
        comm.begin(iteration)
        # "compute": a little real work, then the accelerator time it stands for
        gradient.normal_(generator=generator).mul_(float((weights @ weights).abs().mean()))
        faulty = fault is not None and fault.rank == rank and iteration >= fault.start
        time.sleep(compute_s + (config.fault_ms / 1000.0 if faulty and fault.kind == "slow_compute" else 0.0))
        if faulty and fault.kind == "hang":
            onset[rank] = time.monotonic()  # ground truth for the evaluation; C4D never reads it
            time.sleep(config.job_timeout_s + 10)  # stuck until the master kills the job
        reduced = comm.all_reduce(gradient, iteration)
        # a checksum so that tests can verify the sum: Σ_r own_r must equal every rank's reduced total
        comm.record["own"], comm.record["reduced"] = float(gradient.double().sum()), float(reduced.double().sum())
        comm.probe_all(payload)
        dist.barrier()  # the framework's own step boundary (not instrumented, not faulty)
        comm.publish(iteration)
    store.set(f"c4d/done/{rank}", "1")
    dist.destroy_process_group()


# ---------------------------------------------------------------------------------------------
# The C4D master (the parent process): start the job, watch the store, collect the reports
# ---------------------------------------------------------------------------------------------


@dataclass
class Reports:
    """Everything the ranks reported, as arrays (NaN where a rank never reported).

    begin[r, t], end[r, t]: the start and end of iteration t on rank r (seconds, monotonic clock);
    enter[r, t], exit[r, t]: its all-reduce; own[r, t], reduced[r, t]: the sum of the rank's gradient
    before and after the all-reduce (a checksum: Σ_r own[r, t] = reduced[q, t] for every q);
    sent[i, j, t]: when sender i was ready to send probe i → j; posted[i, j, t] and
    arrived[i, j, t]: when receiver j posted the receive and when the data arrived.
    stalled: the master saw no new report for `stall_timeout_s` before every rank finished;
    watched_until: the master's clock when it stopped watching.
    """

    begin: np.ndarray
    end: np.ndarray
    enter: np.ndarray
    exit: np.ndarray
    own: np.ndarray
    reduced: np.ndarray
    sent: np.ndarray
    posted: np.ndarray
    arrived: np.ndarray
    stalled: bool
    watched_until: float

    @property
    def n_ranks(self) -> int:
        return self.enter.shape[0]

    def transfer_ms(self) -> np.ndarray:
        """Transfer time of every probe, T[i, j, t] = arrived − max(sent, posted), in ms (NaN on i = j)."""
        start = np.fmax(self.sent, self.posted)
        return (self.arrived - start) * 1000.0

    def complete_iterations(self) -> np.ndarray:
        """Indices of iterations that every rank reported in full."""
        full = np.isfinite(self.exit).all(axis=0)
        return np.flatnonzero(full)


@dataclass
class JobRun:
    """One job's outcome: the reports, the master's timing, and the ground truth for evaluation."""

    reports: Reports
    fault: Fault | None
    wall_s: float  # the whole job, start of the first rank to the last rank reaped
    hang_onset: float  # monotonic time the hung rank stopped (NaN when no hang): for evaluation only
    stall_detected: float  # monotonic time the master declared a stall (NaN when none)
    exitcodes: list[int | None] = field(default_factory=list)


def _collect(store: dist.Store, n: int, iterations: int) -> dict[str, np.ndarray]:
    shape2, shape3 = (n, iterations), (n, n, iterations)
    out = {name: np.full(shape2, np.nan) for name in ("begin", "end", "enter", "exit", "own", "reduced")}
    out |= {name: np.full(shape3, np.nan) for name in ("sent", "posted", "arrived")}
    for rank in range(n):
        for t in range(iterations):
            enter_key, iter_key = f"c4d/enter/{rank}/{t}", f"c4d/iter/{rank}/{t}"
            if store.check([enter_key]):
                out["enter"][rank, t] = float(store.get(enter_key).decode())
            if not store.check([iter_key]):
                continue
            record = json.loads(store.get(iter_key).decode())
            for name in ("begin", "end", "exit", "own", "reduced"):
                out[name][rank, t] = record[name]
            for j, ready in record["sent"].items():
                out["sent"][rank, int(j), t] = ready
            for i, (posted, arrived) in record["received"].items():
                out["posted"][int(i), rank, t] = posted
                out["arrived"][int(i), rank, t] = arrived
    return out


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_job(config: JobConfig | None = None, fault: Fault | None = None, *, seed: int = 0) -> JobRun:
    """Run the job as real processes and return what the ranks reported.

    The parent hosts the key-value store and watches it like C4D's master: the job ends when every
    rank reports done, or when no new report arrives for `stall_timeout_s` (a hang), or at
    `job_timeout_s`. Every child is then killed if still alive and reaped; no rank outlives the
    call, whatever happened.
    """
    config = config or JobConfig()
    if not isinstance(config, JobConfig):
        raise TypeError(f"config must be a JobConfig, got {type(config).__name__}")
    if fault is not None:
        if not isinstance(fault, Fault):
            raise TypeError(f"fault must be a Fault or None, got {type(fault).__name__}")
        if fault.rank >= config.n_ranks or (fault.peer is not None and fault.peer >= config.n_ranks):
            raise ValueError(f"fault ranks must be < n_ranks = {config.n_ranks}, got {fault}")
        if fault.start >= config.iterations:
            raise ValueError(f"fault start must be < iterations = {config.iterations}, got {fault.start}")
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    context = mp.get_context("fork")
    onset = context.Array("d", [math.nan] * config.n_ranks, lock=False)
    # Fork first, then start the store's server: its thread must not exist at fork time (a child
    # can inherit one of its locks held, and deadlock). The ranks' clients retry until it listens.
    port = _free_port()
    started = time.monotonic()
    processes = [
        context.Process(target=_rank_main, args=(r, port, config, fault, onset, seed), daemon=True)
        for r in range(config.n_ranks)
    ]
    stalled, stall_detected = False, math.nan
    store = None
    try:
        for p in processes:
            p.start()
        store = dist.TCPStore(
            "127.0.0.1", port, is_master=True, timeout=timedelta(seconds=config.store_timeout_s), wait_for_workers=False
        )
        done_keys = [f"c4d/done/{r}" for r in range(config.n_ranks)]
        ready_keys = [f"c4d/ready/{r}" for r in range(config.n_ranks)]
        # starting is not progress: on a loaded machine forking and joining the group can take
        # seconds, so the stall clock starts only once every rank has joined
        while not store.check(ready_keys):
            if (
                any(p.exitcode not in (None, 0) for p in processes)
                or time.monotonic() - started > config.store_timeout_s
            ):
                raise RuntimeError(
                    f"the job's ranks did not all join within store_timeout_s = {config.store_timeout_s} s "
                    f"(exit codes {[p.exitcode for p in processes]})"
                )
            time.sleep(0.01)
        seen, last_change = store.num_keys(), time.monotonic()
        while True:
            now = time.monotonic()
            if store.check(done_keys):
                break
            if any(p.exitcode not in (None, 0) for p in processes):
                stalled, stall_detected = True, now  # a rank died: the job cannot progress
                break
            keys = store.num_keys()
            if keys != seen:
                seen, last_change = keys, now
            elif now - last_change > config.stall_timeout_s:
                stalled, stall_detected = True, now
                break
            if now - started > config.job_timeout_s:
                stalled, stall_detected = True, now
                break
            time.sleep(0.01)
        watched_until = time.monotonic()
        arrays = _collect(store, config.n_ranks, config.iterations)
    finally:
        finished = store is not None and store.check([f"c4d/done/{r}" for r in range(config.n_ranks)])
        stalled_or_failed = stalled or not finished
        for p in processes:
            if p.pid is not None and not stalled_or_failed:
                p.join(timeout=2.0)
            if p.is_alive():
                p.kill()
        for p in processes:
            if p.pid is not None:
                p.join(timeout=5.0)
    hang_onsets = [x for x in onset if not math.isnan(x)]
    return JobRun(
        reports=Reports(**arrays, stalled=stalled, watched_until=watched_until),
        fault=fault,
        wall_s=time.monotonic() - started,
        hang_onset=min(hang_onsets) if hang_onsets else math.nan,
        stall_detected=stall_detected,
        exitcodes=[p.exitcode for p in processes],
    )


# ---------------------------------------------------------------------------------------------
# The detector and the baseline (they read Reports only)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Thresholds:
    """C4D's decision thresholds (milliseconds), set well below the faults and above the noise."""

    late_ms: float = 15.0  # a rank entering the collective this much later than the others is a straggler
    slow_cell_ms: float = 10.0  # a connection this much slower than the matrix's median is slow
    slow_cell_factor: float = 2.0  # ... and at least this many times the median


@dataclass(frozen=True)
class Diagnosis:
    """C4D's verdict: the kind of anomaly, the culprit ranks or links, and the evidence."""

    kind: str
    ranks: tuple[int, ...] = ()
    links: tuple[tuple[int, int], ...] = ()
    evidence: str = ""

    @property
    def alarm(self) -> bool:
        return self.kind != "healthy"

    def matches(self, fault: Fault | None) -> bool:
        """True when kind, culprit ranks and culprit links are exactly the fault's."""
        if fault is None:
            return self.kind == "healthy"
        kind, ranks, links = fault.truth()
        return (self.kind, tuple(sorted(self.ranks)), tuple(sorted(self.links))) == (kind, ranks, links)


def enter_lateness_ms(reports: Reports) -> np.ndarray:
    """Per rank, the median over complete iterations of (its enter − the earliest enter) in ms.

    At a synchronization point every rank should arrive together; a rank that arrives late in
    every iteration spent the time *outside* communication.
    """
    full = reports.complete_iterations()
    if full.size == 0:
        return np.zeros(reports.n_ranks)
    enter = reports.enter[:, full]
    # lateness_r(t) = enter_r(t) − min_q enter_q(t)
    return np.median((enter - enter.min(axis=0)) * 1000.0, axis=1)


def latency_matrix(reports: Reports) -> np.ndarray:
    """M[i, j]: the median over complete iterations of the probe transfer time i → j, in ms (NaN on i = j)."""
    full = reports.complete_iterations()
    n = reports.n_ranks
    if full.size == 0:
        return np.full((n, n), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a connection never probed stays NaN
        M = np.nanmedian(reports.transfer_ms()[:, :, full], axis=2)
    M[np.arange(n), np.arange(n)] = np.nan
    return M


def slow_cells(M: np.ndarray, thresholds: Thresholds) -> np.ndarray:
    """Boolean mask of connections slower than the matrix median by both the margin and the factor."""
    base = float(np.nanmedian(M))
    with np.errstate(invalid="ignore"):
        # slow when M_ij > median + margin and M_ij > factor · median
        return (M - base > thresholds.slow_cell_ms) & (M - thresholds.slow_cell_factor * base > 0)


def localize(mask: np.ndarray) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...], str]:
    """Slow cells → culprits: a full row is an egress NIC, a full column an ingress NIC, else links."""
    n = mask.shape[0]
    rows = [i for i in range(n) if mask[i].sum() >= n - 1]
    cols = [j for j in range(n) if mask[:, j].sum() >= n - 1]
    if len(rows) == 1 and mask.sum() == n - 1:
        return (rows[0],), (), f"row {rows[0]} slow: the egress of rank {rows[0]}'s NIC"
    if len(cols) == 1 and mask.sum() == n - 1:
        return (cols[0],), (), f"column {cols[0]} slow: the ingress of rank {cols[0]}'s NIC"
    links = tuple((int(i), int(j)) for i, j in zip(*np.nonzero(mask), strict=True))
    return (), links, "slow connection " + ", ".join(f"{i} → {j}" for i, j in links)


def _names(values: Sequence[object]) -> str:
    """'3' or '1, 2': values for a sentence."""
    return ", ".join(str(v) for v in values)


def diagnose(reports: Reports, thresholds: Thresholds | None = None) -> Diagnosis:
    """Classify and localize an anomaly from the reported timings alone (C4D's master).

    1. Hang: the job stalled. In the first incomplete iteration, ranks that never entered the
       collective while others are inside it → non-communication hang of those ranks; if all
       entered and none left → communication hang.
    2. Non-communication slow: one rank's median enter lateness exceeds `late_ms`.
    3. Communication slow: slow cells of the latency matrix, localized by `localize`.
    4. Otherwise healthy.
    """
    if not isinstance(reports, Reports):
        raise TypeError(f"reports must be Reports, got {type(reports).__name__}")
    thresholds = thresholds or Thresholds()
    n = reports.n_ranks
    if reports.stalled:
        incomplete = np.flatnonzero(~np.isfinite(reports.exit).all(axis=0))
        if incomplete.size:
            t = int(incomplete[0])
            entered = np.isfinite(reports.enter[:, t])
            missing = tuple(int(r) for r in np.flatnonzero(~entered))
            if missing and entered.any():
                return Diagnosis(
                    "non_communication_hang",
                    ranks=missing,
                    evidence=f"iteration {t}: rank {_names(missing)} never entered the all-reduce the others wait in",
                )
            if entered.all() and not np.isfinite(reports.exit[:, t]).any():
                return Diagnosis(
                    "communication_hang", evidence=f"iteration {t}: every rank entered the all-reduce, none left"
                )
            if not entered.any():
                return Diagnosis(
                    "non_communication_hang", ranks=tuple(range(n)), evidence=f"iteration {t}: no rank entered"
                )
    lateness = enter_lateness_ms(reports)
    late = np.flatnonzero(lateness > thresholds.late_ms)
    if late.size:
        ranks = tuple(int(r) for r in late)
        return Diagnosis(
            "non_communication_slow",
            ranks=ranks,
            evidence=(
                f"rank {_names(ranks)} enters the all-reduce {_names(np.round(lateness[late], 1))} ms after the first"
            ),
        )
    M = latency_matrix(reports)
    mask = slow_cells(M, thresholds)
    if mask.any():
        ranks, links, evidence = localize(mask)
        return Diagnosis("communication_slow", ranks=ranks, links=links, evidence=evidence)
    return Diagnosis("healthy", evidence="no late rank, no slow connection")


def collective_time_ms(reports: Reports) -> np.ndarray:
    """Per rank, the median time spent inside the all-reduce (exit − enter), in ms.

    An iteration a rank entered and never left counts as +inf (it is still waiting).
    """
    entered = np.isfinite(reports.enter)
    duration = np.where(entered & ~np.isfinite(reports.exit), np.inf, reports.exit - reports.enter) * 1000.0
    values = []
    for r in range(reports.n_ranks):
        d = duration[r][entered[r]]
        values.append(float(np.median(d)) if d.size else -np.inf)
    return np.array(values)


def slowest_collective(reports: Reports) -> int:
    """The naive baseline: blame the rank whose collectives took longest (median over iterations)."""
    if not isinstance(reports, Reports):
        raise TypeError(f"reports must be Reports, got {type(reports).__name__}")
    return int(np.argmax(collective_time_ms(reports)))


def detection_latency_s(job: JobRun) -> float:
    """Seconds from a hang's onset (ground truth) to the master declaring the stall; NaN without a hang."""
    return job.stall_detected - job.hang_onset


def draw_faults(config: JobConfig, seed: int, kinds: Sequence[str] = FAULT_KINDS) -> list[Fault]:
    """One fault per kind with a random culprit (and a random peer for a slow link) and start."""
    rng = np.random.default_rng(seed)
    faults = []
    for kind in kinds:
        rank = int(rng.integers(config.n_ranks))
        peer = None
        if kind == "slow_link":
            peer = int((rank + 1 + rng.integers(config.n_ranks - 1)) % config.n_ranks)
        # a hang strikes mid-job, after some healthy iterations; slow faults are present throughout
        start = int(rng.integers(2, config.iterations - 1)) if kind == "hang" else 0
        faults.append(Fault(kind, rank, peer, start))
    return faults


# ---------------------------------------------------------------------------------------------
# The effective-training-time model
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recovery:
    """What one fault costs, in seconds: finding it, diagnosing it, restarting, and the lost work.

    The work done since the last checkpoint is lost: on average half a checkpoint interval.
    """

    detect_s: float  # from the fault to someone (or something) noticing
    diagnose_s: float  # from noticing to knowing which node to isolate
    restart_s: float  # isolate the node, reschedule, reload the checkpoint, re-initialize
    checkpoint_interval_s: float  # time between checkpoints

    def __post_init__(self) -> None:
        for name in ("detect_s", "diagnose_s", "restart_s", "checkpoint_interval_s"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a finite number >= 0, got {value}")

    @property
    def stopped_s(self) -> float:
        """Wall time with the job stopped per fault: detect + diagnose + restart."""
        return self.detect_s + self.diagnose_s + self.restart_s


def effective_training_time(job_faults_per_hour: float, recovery: Recovery) -> float:
    """The fraction of wall time that ends as kept training progress (a renewal model).

    Faults arrive as a Poisson process at rate Λ while the job runs, so a cycle is a run of mean
    1/Λ, then the stop. Of the run, the work since the last checkpoint (mean c/2) is lost:

        ETT = (1/Λ − c/2) / (1/Λ + detect + diagnose + restart),

    and the error-induced downtime is 1 − ETT.
    """
    if not (job_faults_per_hour > 0 and math.isfinite(job_faults_per_hour)):
        raise ValueError(f"job_faults_per_hour must be a finite number > 0, got {job_faults_per_hour}")
    mtbf = 3600.0 / job_faults_per_hour
    # ETT = (1/Λ − c/2) / (1/Λ + stopped)
    kept = max(mtbf - recovery.checkpoint_interval_s / 2.0, 0.0)
    return kept / (mtbf + recovery.stopped_s)


def fault_rate_for_downtime(downtime: float, recovery: Recovery) -> float:
    """The job's fault rate Λ (per hour) at which `recovery` loses a fraction `downtime` of the time.

    Solving 1 − downtime = (x − c/2) / (x + stopped) for the mean time between faults x:
    x = (c/2 + (1 − downtime) · stopped) / downtime.
    """
    if not 0 < downtime < 1:
        raise ValueError(f"downtime must be in (0, 1), got {downtime}")
    mtbf = (recovery.checkpoint_interval_s / 2.0 + (1.0 - downtime) * recovery.stopped_s) / downtime
    return 3600.0 / mtbf
