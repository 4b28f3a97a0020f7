"""C4D: a real multi-process training job, its collective-communication syndrome, and the detector.

`run_session` starts `n_ranks` processes (fork) that form a gloo process group on 127.0.0.1 and run
one or more *episodes* of `iterations` training iterations each, one injected fault (or none) per
episode, so that the process start and the group's join are paid once. Every iteration each rank
does some "compute" and an all-reduce of its gradient through `InstrumentedComm`, the thin layer
that stands for C4's enhanced collective library: it records when each rank *enters* and *exits*
the collective and, for every message of the collective itself, when the sender handed it over
and when the receiver posted its receive and saw the data arrive. The all-reduce is hand-rolled
from point-to-point messages (not gloo's own `all_reduce`) so that a fault can sit under the
instrumentation: a *two-shot* all-reduce, a reduce-scatter and an all-gather in which every rank
exchanges one chunk with every other rank at once, so every directed connection carries the
collective's concurrent traffic twice per iteration. A dedicated all-pairs *ping mesh* of probes,
one connection at a time after the collective, is the practitioner's alternative
(`JobConfig.ping_mesh`): it times as many messages per connection as the collective carries
(`probe_rounds`), so the two sources have the same probe budget, but its probes are extra traffic.
Timings go to a key-value store that the parent process (the C4D master) watches. A fault:

- ``slow_compute``: the rank's compute takes `size_ms` longer (a throttled GPU, a slow data loader);
- ``slow_link``: every message on one directed connection i → j is delayed by `size_ms`;
- ``slow_nic``: every message the rank sends is delayed (a degraded NIC's egress);
- ``slow_ingress``: every message *to* the rank is delayed (a congested or degraded ingress port);
- ``hang``: the rank stops before the collective of one iteration (a crashed kernel, a stuck GPU);
- ``comm_hang``: one connection i → j stops delivering from one iteration on (a dead link or QP).

The fault lives below the instrumentation, in the "transport" and the "compute", where a hardware
fault would; `diagnose` reads only the timings in the store (`Reports`) and never the fault. Its
rules are C4D's (Section III of the paper):

- a collective that some rank never *entered* while the others wait inside it is a
  **non-communication hang** of the ranks that did not enter; one that every rank entered and none
  left is a **communication hang**, localized by the connections the waiting ranks report pending;
- a rank that enters the synchronizing collective consistently later than the others is
  **non-communication slow** (the others wait for it);
- otherwise, the communication latency matrix M[i, j] = median over the collective's messages of
  the transfer time i → j localizes **communication slowness**: a slow row is the egress NIC of
  rank i, a slow column the ingress of rank j, a single slow cell the link i → j.

`last_arrival` is the baseline a practitioner without per-connection timings would use: per-rank
compute time, i.e. blame the rank that arrives last at the synchronization point (by the same
threshold), or the ranks that never arrive. It names a straggler or a crashed rank as well as C4D
does, and cannot see a communication fault. `slowest_collective` (blame the rank whose
collectives lasted longest) is the naive rule the chapter shows failing: the ranks that *wait*
for a straggler sit longest in the collective, so it blames a victim.
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
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist

SLOW_KINDS = ("slow_compute", "slow_link", "slow_nic", "slow_ingress")
HANG_KINDS = ("hang", "comm_hang")
FAULT_KINDS = SLOW_KINDS + HANG_KINDS
#: Faults that sit on one directed connection (they name a peer)
LINK_KINDS = ("slow_link", "comm_hang")
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
    "slow_ingress": "communication_slow",
    "hang": "non_communication_hang",
    "comm_hang": "communication_hang",
}
#: The collective's two phases: every message of the all-reduce belongs to one
PHASES = ("reduce-scatter", "all-gather")


# ---------------------------------------------------------------------------------------------
# Faults and the job's settings
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """One injected fault: its kind, the faulty rank, the receiving rank of a faulty link, and its size.

    `start` is the first iteration the fault is active in (for a hang: the iteration before whose
    collective the rank stops; for a communication hang: the first iteration whose message on the
    connection is never delivered). `size_ms` is the extra compute time (slow_compute) or the extra
    delay per message (slow_link, slow_nic, slow_ingress); None takes the job's default.
    """

    kind: str
    rank: int
    peer: int | None = None  # the other end of a faulty link (rank → peer); None otherwise
    start: int = 0
    size_ms: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"fault kind must be one of {FAULT_KINDS}, got {self.kind!r}")
        if self.rank < 0:
            raise ValueError(f"fault rank must be >= 0, got {self.rank}")
        if (self.kind in LINK_KINDS) != (self.peer is not None):
            raise ValueError(
                f"peer must be given for a {' or '.join(LINK_KINDS)} and only then, "
                f"got kind={self.kind!r} peer={self.peer}"
            )
        if self.peer is not None and self.peer == self.rank:
            raise ValueError(f"a link joins two different ranks, got {self.rank} → {self.peer}")
        if self.start < 0:
            raise ValueError(f"fault start must be >= 0, got {self.start}")
        if self.size_ms is not None and not (self.size_ms >= 0 and math.isfinite(self.size_ms)):
            raise ValueError(f"fault size_ms must be a finite number >= 0, got {self.size_ms}")

    def truth(self) -> tuple[str, tuple[int, ...], tuple[tuple[int, int], ...]]:
        """What a perfect detector answers: (diagnosis kind, culprit ranks, culprit links)."""
        if self.kind in LINK_KINDS:
            return EXPECTED_KIND[self.kind], (), ((self.rank, int(self.peer)),)
        return EXPECTED_KIND[self.kind], (self.rank,), ()


@dataclass(frozen=True)
class JobConfig:
    """The toy training job and its timeouts (milliseconds for work, seconds for timeouts)."""

    n_ranks: int = 4  # processes in the job, one per "GPU"
    iterations: int = 6  # training iterations (synchronization points) per episode
    compute_ms: float = 5.0  # per-iteration "compute": a small matmul, then a sleep standing for GPU time
    grad_numel: int = 4096  # floats in the gradient that the all-reduce sums
    probe_numel: int = 256  # floats in each point-to-point probe message of the ping mesh
    fault_ms: float = 40.0  # default extra compute time of a slow_compute rank
    link_ms: float = 20.0  # default extra delay per message on a slow link, out of a slow NIC, into a slow ingress
    ping_mesh: bool = False  # also probe every connection, one at a time, after the collective (a variant)
    probe_rounds: int = len(PHASES)  # ping-mesh probes per connection per iteration: the collective's messages
    pending_report_s: float = 0.25  # a rank waiting this long inside the collective reports what it waits for
    stall_timeout_s: float = 1.5  # C4D master: no new report for this long means a hang
    store_timeout_s: float = 10.0  # key-value store and process-group timeout (bounds every wait)
    job_timeout_s: float = 60.0  # hard limit on one session's wall time; ranks are killed after it

    def __post_init__(self) -> None:
        if self.n_ranks < 3:
            raise ValueError(f"n_ranks must be >= 3 (a row, a column and a cell must differ), got {self.n_ranks}")
        if self.iterations < 3:
            raise ValueError(f"iterations must be >= 3 (medians need several), got {self.iterations}")
        for name in ("compute_ms", "fault_ms", "link_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.probe_rounds < 1:
            raise ValueError(f"probe_rounds must be >= 1, got {self.probe_rounds}")
        for name in ("grad_numel", "probe_numel"):
            if getattr(self, name) < self.n_ranks:
                raise ValueError(f"{name} must be >= n_ranks = {self.n_ranks}, got {getattr(self, name)}")
        for name in ("pending_report_s", "stall_timeout_s", "store_timeout_s", "job_timeout_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")

    def size_ms(self, fault: Fault) -> float:
        """The fault's size: its own, or the job's default for its kind."""
        if fault.size_ms is not None:
            return fault.size_ms
        return self.fault_ms if fault.kind == "slow_compute" else self.link_ms


# ---------------------------------------------------------------------------------------------
# The instrumented communication layer (what runs inside each rank)
# ---------------------------------------------------------------------------------------------


class FaultyTransport:
    """Point-to-point sends with the injected link, NIC or ingress delay *below* the instrumentation.

    A slow link i → j delays every message on that connection, a slow NIC every message its rank
    sends, a slow ingress every message sent to its rank; a communication hang never delivers on
    its connection. The delay is a wait before the send: the receiver sees the data late, as it
    would behind a congested or degraded port.
    """

    def __init__(self, rank: int, config: JobConfig, onset: object = None) -> None:
        self.rank, self.config, self.onset = rank, config, onset
        self.fault: Fault | None = None
        self.iteration = 0

    def delay_to(self, dst: int) -> float:
        """Seconds of injected delay on the connection rank → dst in the current iteration (inf: never)."""
        f = self.fault
        if f is None or self.iteration < f.start or f.kind in ("slow_compute", "hang"):
            return 0.0
        size = self.config.size_ms(f) / 1000.0
        if f.kind == "slow_ingress":
            return size if dst == f.rank != self.rank else 0.0
        if f.rank != self.rank:
            return 0.0
        if f.kind == "comm_hang":
            return math.inf if f.peer == dst else 0.0
        if f.kind == "slow_nic" or f.peer == dst:
            return size
        return 0.0

    def isend(self, tensor: torch.Tensor, dst: int) -> dist.Work | None:
        """Send one message after its injected delay; None when the connection never delivers."""
        return self.send_all({dst: tensor})[0]

    def send_all(self, messages: dict[int, torch.Tensor]) -> list[dist.Work | None]:
        """Send every message at once, each after its own delay (in order of due time); None where it never goes."""
        started = time.monotonic()
        due = sorted(messages, key=self.delay_to)
        works: dict[int, dist.Work | None] = {}
        for dst in due:
            delay = self.delay_to(dst)
            if math.isinf(delay):
                if self.onset is not None and math.isnan(self.onset[self.rank]):
                    self.onset[self.rank] = time.monotonic()  # ground truth for the evaluation only
                works[dst] = None
                continue
            wait = started + delay - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            works[dst] = dist.isend(messages[dst], dst)
        return [works[dst] for dst in messages]


class InstrumentedComm:
    """C4's collective layer in miniature: a collective whose every message times itself.

    Each iteration it records, for its rank: `enter` and `exit` of the all-reduce (monotonic clock,
    shared by all processes on one host), and for every message of the collective the sender's
    hand-over time and the receiver's post and arrival times, per phase. `enter` is published the
    moment the rank enters the collective, the rest after the iteration; a rank that has waited
    `pending_report_s` inside the collective publishes which senders it still waits for, so a hang
    leaves its trace in the store.
    """

    def __init__(self, rank: int, config: JobConfig, store: dist.Store, transport: FaultyTransport) -> None:
        self.rank, self.n, self.config, self.store, self.transport = rank, config.n_ranks, config, store, transport
        self.prefix = ""
        self.record: dict[str, object] = {}

    def begin(self, episode: int, iteration: int) -> None:
        self.transport.iteration = iteration
        self.prefix = f"c4d/{episode}"
        self.record = {"begin": time.monotonic(), "sent": {}, "received": {}, "probe_sent": {}, "probe_received": {}}

    def _exchange(self, phase: int, outgoing: dict[int, torch.Tensor], incoming: dict[int, torch.Tensor], t: int):
        """Send and receive one message per connection at once, timing each receive separately."""
        posted = time.monotonic()
        works = {i: dist.irecv(buffer, i) for i, buffer in incoming.items()}
        arrived: dict[int, float] = {}

        def wait(i: int) -> None:
            works[i].wait()
            arrived[i] = time.monotonic()

        # one waiter per sender, so that each arrival is timed as it happens, not behind a slower one
        waiters = [threading.Thread(target=wait, args=(i,), daemon=True) for i in works]
        for waiter in waiters:
            waiter.start()
        handed = time.monotonic()
        self.record["sent"][phase] = {j: handed for j in outgoing}
        sends = self.transport.send_all(outgoing)
        deadline = time.monotonic() + self.config.pending_report_s
        for waiter in waiters:
            waiter.join(max(deadline - time.monotonic(), 0.0))
        if any(waiter.is_alive() for waiter in waiters):
            waiting_for = sorted(i for i in works if i not in arrived)
            self.store.set(f"{self.prefix}/pending/{self.rank}/{t}", json.dumps({"phase": phase, "from": waiting_for}))
            for waiter in waiters:
                waiter.join()
        for work in sends:
            if work is not None:
                work.wait()
        self.record["received"][phase] = {i: (posted, arrived[i]) for i in works}

    def all_reduce(self, tensor: torch.Tensor, iteration: int) -> torch.Tensor:
        """Sum `tensor` over ranks with a two-shot all-reduce (reduce-scatter, then all-gather).

        Split the tensor into n chunks. Reduce-scatter: rank r sends chunk j to every rank j and
        sums the chunks r it receives, s_r = Σ_i chunk_r(i). All-gather: rank r sends s_r to every
        rank and receives every s_j. Each phase is one concurrent message per directed connection.
        """
        enter = time.monotonic()
        self.record["enter"] = enter
        self.store.set(f"{self.prefix}/enter/{self.rank}/{iteration}", repr(enter))
        n, r = self.n, self.rank
        chunks = [c.contiguous() for c in tensor.clone().chunk(n)]  # the input stays untouched
        others = [j for j in range(n) if j != r]
        incoming = {i: torch.empty_like(chunks[r]) for i in others}
        self._exchange(0, {j: chunks[j] for j in others}, incoming, iteration)
        reduced = chunks[r] + sum(incoming.values())  # s_r = Σ_i chunk_r(i)
        gathered = {i: torch.empty_like(chunks[i]) for i in others}
        self._exchange(1, dict.fromkeys(others, reduced), gathered, iteration)
        self.record["exit"] = time.monotonic()
        return torch.cat([reduced if i == r else gathered[i] for i in range(n)])

    def probe_all(self, payload: torch.Tensor) -> None:
        """The ping mesh: time `probe_rounds` messages on every directed connection i → j, one at a time.

        The sender records when it is ready, the receiver when it posted its receive and when the
        data arrived; the transfer time is arrival − max(ready, posted).
        """
        buffer = torch.empty_like(payload)
        for k in range(self.config.probe_rounds):
            sent, received = (
                self.record["probe_sent"].setdefault(k, {}),
                self.record["probe_received"].setdefault(k, {}),
            )
            for i in range(self.n):
                for j in range(self.n):
                    if i == j:
                        continue
                    if self.rank == i:
                        sent[j] = time.monotonic()
                        work = self.transport.isend(payload, j)
                        if work is not None:
                            work.wait()
                    elif self.rank == j:
                        posted = time.monotonic()
                        dist.recv(buffer, i)
                        received[i] = (posted, time.monotonic())

    def publish(self, iteration: int) -> None:
        self.record["end"] = time.monotonic()
        self.store.set(f"{self.prefix}/iter/{self.rank}/{iteration}", json.dumps(self.record))


def _die_with_parent() -> None:
    """Ask Linux to kill this process when its parent dies (best effort; a safety net only)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _rank_main(
    rank: int, port: int, config: JobConfig, faults: Sequence[Fault | None], onset: object, seed: int
) -> None:
    """One rank of the job: join the group, run every episode, report timings to the store, leave."""
    _die_with_parent()
    signal.alarm(int(config.job_timeout_s) + 5)  # never outlive the job's hard limit
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    torch.set_num_threads(1)
    timeout = timedelta(seconds=config.store_timeout_s)
    store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timeout)
    dist.init_process_group(
        "gloo", store=dist.PrefixStore("pg", store), rank=rank, world_size=config.n_ranks, timeout=timeout
    )
    transport = FaultyTransport(rank, config, onset)
    comm = InstrumentedComm(rank, config, store, transport)
    store.set(f"c4d/ready/{rank}", "1")  # joined: from now on the master expects progress
    generator = torch.Generator().manual_seed(seed * 1000 + rank)
    weights = torch.randn(32, 32, generator=generator)
    gradient = torch.zeros(config.grad_numel)
    payload = torch.ones(config.probe_numel)
    compute_s = config.compute_ms / 1000.0
    for episode, fault in enumerate(faults):
        transport.fault = fault
        for iteration in range(config.iterations):
            comm.begin(episode, iteration)
            # "compute": a little real work, then the accelerator time it stands for
            gradient.normal_(generator=generator).mul_(float((weights @ weights).abs().mean()))
            faulty = fault is not None and fault.rank == rank and iteration >= fault.start
            extra = config.size_ms(fault) / 1000.0 if faulty and fault.kind == "slow_compute" else 0.0
            time.sleep(compute_s + extra)
            if faulty and fault.kind == "hang":
                onset[rank] = time.monotonic()  # ground truth for the evaluation; C4D never reads it
                time.sleep(config.job_timeout_s + 10)  # stuck until the master kills the job
            reduced = comm.all_reduce(gradient, iteration)
            # a checksum so that tests can verify the sum: Σ_r own_r must equal every rank's reduced total
            comm.record["own"], comm.record["reduced"] = float(gradient.double().sum()), float(reduced.double().sum())
            if config.ping_mesh:
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
    """Everything the ranks reported in one episode, as arrays (NaN where a rank never reported).

    begin[r, t], end[r, t]: the start and end of iteration t on rank r (seconds, monotonic clock);
    enter[r, t], exit[r, t]: its all-reduce; own[r, t], reduced[r, t]: the sum of the rank's gradient
    before and after the all-reduce (a checksum: Σ_r own[r, t] = reduced[q, t] for every q);
    sent[i, j, t, p]: when sender i handed the collective's phase-p message i → j over;
    posted[i, j, t, p] and arrived[i, j, t, p]: when receiver j posted that receive and when the
    data arrived; pending[i, j, t]: the phase in which receiver j reported still waiting for i
    (NaN: it did not); probe_sent, probe_posted, probe_arrived [i, j, t, k]: the ping mesh's k-th
    probe round (NaN without it). stalled: the master saw no new report for `stall_timeout_s` before
    every rank finished; watched_until: the master's clock when it stopped watching.
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
    pending: np.ndarray
    probe_sent: np.ndarray
    probe_posted: np.ndarray
    probe_arrived: np.ndarray
    stalled: bool
    watched_until: float

    @property
    def n_ranks(self) -> int:
        return self.enter.shape[0]

    def transfer_ms(self, source: str = "collective") -> np.ndarray:
        """Transfer times T = arrived − max(sent, posted) in ms: [i, j, t, phase] of the collective's
        messages, or [i, j, t, round] of the ping mesh's probes (NaN on i = j)."""
        if source == "collective":
            return (self.arrived - np.fmax(self.sent, self.posted)) * 1000.0
        if source == "ping_mesh":
            return (self.probe_arrived - np.fmax(self.probe_sent, self.probe_posted)) * 1000.0
        raise ValueError(f"source must be 'collective' or 'ping_mesh', got {source!r}")

    def complete_iterations(self) -> np.ndarray:
        """Indices of iterations that every rank reported in full."""
        full = np.isfinite(self.exit).all(axis=0)
        return np.flatnonzero(full)

    def prefix(self, k: int) -> Reports:
        """The reports as the master had them after the first `k` iterations (no stall yet)."""
        arrays = {}
        for name in ("begin", "end", "enter", "exit", "own", "reduced"):
            arrays[name] = getattr(self, name).copy()
            arrays[name][:, k:] = np.nan
        for name in ("sent", "posted", "arrived", "pending", "probe_sent", "probe_posted", "probe_arrived"):
            arrays[name] = getattr(self, name).copy()
            arrays[name][:, :, k:] = np.nan
        return replace(self, **arrays, stalled=False)


@dataclass
class JobRun:
    """One episode's outcome: the reports, the master's timing, and the ground truth for evaluation."""

    reports: Reports
    fault: Fault | None
    wall_s: float  # the whole session, start of the first rank to the last rank reaped
    hang_onset: float  # monotonic time the hang began (NaN when no hang): for evaluation only
    stall_detected: float  # monotonic time the master declared a stall (NaN when none)
    last_progress: float = math.nan  # the master's clock at the last new report before it declared the stall
    exitcodes: list[int | None] = field(default_factory=list)


def _collect(store: dist.Store, config: JobConfig, episode: int) -> dict[str, np.ndarray]:
    n, iterations = config.n_ranks, config.iterations
    shape2, shape3, shape4 = (n, iterations), (n, n, iterations), (n, n, iterations, len(PHASES))
    out = {name: np.full(shape2, np.nan) for name in ("begin", "end", "enter", "exit", "own", "reduced")}
    out |= {name: np.full(shape4, np.nan) for name in ("sent", "posted", "arrived")}
    out["pending"] = np.full(shape3, np.nan)
    probes = (n, n, iterations, config.probe_rounds)
    out |= {name: np.full(probes, np.nan) for name in ("probe_sent", "probe_posted", "probe_arrived")}
    prefix = f"c4d/{episode}"
    for rank in range(n):
        for t in range(iterations):
            enter_key, iter_key, pending_key = (f"{prefix}/{k}/{rank}/{t}" for k in ("enter", "iter", "pending"))
            if store.check([enter_key]):
                out["enter"][rank, t] = float(store.get(enter_key).decode())
            if store.check([pending_key]):
                waiting = json.loads(store.get(pending_key).decode())
                out["pending"][waiting["from"], rank, t] = waiting["phase"]
            if not store.check([iter_key]):
                continue
            record = json.loads(store.get(iter_key).decode())
            for name in ("begin", "end", "exit", "own", "reduced"):
                out[name][rank, t] = record[name]
            for phase, sent in record["sent"].items():
                for j, handed in sent.items():
                    out["sent"][rank, int(j), t, int(phase)] = handed
            for phase, received in record["received"].items():
                for i, (posted, arrived) in received.items():
                    out["posted"][int(i), rank, t, int(phase)] = posted
                    out["arrived"][int(i), rank, t, int(phase)] = arrived
            for k, sent in record["probe_sent"].items():
                for j, ready in sent.items():
                    out["probe_sent"][rank, int(j), t, int(k)] = ready
            for k, received in record["probe_received"].items():
                for i, (posted, arrived) in received.items():
                    out["probe_posted"][int(i), rank, t, int(k)] = posted
                    out["probe_arrived"][int(i), rank, t, int(k)] = arrived
    return out


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _check_faults(config: JobConfig, faults: Sequence[Fault | None]) -> None:
    if not faults:
        raise ValueError("a session needs at least one episode")
    for k, fault in enumerate(faults):
        if fault is None:
            continue
        if not isinstance(fault, Fault):
            raise TypeError(f"fault must be a Fault or None, got {type(fault).__name__}")
        if fault.rank >= config.n_ranks or (fault.peer is not None and fault.peer >= config.n_ranks):
            raise ValueError(f"fault ranks must be < n_ranks = {config.n_ranks}, got {fault}")
        if fault.start >= config.iterations:
            raise ValueError(f"fault start must be < iterations = {config.iterations}, got {fault.start}")
        if fault.kind in HANG_KINDS and k != len(faults) - 1:
            raise ValueError(f"a hang ends the job, so it must be the last episode, got {fault} at episode {k}")


def run_session(config: JobConfig | None, faults: Sequence[Fault | None], *, seed: int = 0) -> list[JobRun]:
    """Run one job as real processes through one episode per fault (None: healthy) and return each episode.

    The parent hosts the key-value store and watches it like C4D's master: the job ends when every
    rank reports done, or when no new report arrives for `stall_timeout_s` (a hang), or at
    `job_timeout_s`. Every child is then killed if still alive and reaped; no rank outlives the
    call, whatever happened. A hang can only be the last episode; episodes after a stall are not run.
    """
    config = config or JobConfig()
    if not isinstance(config, JobConfig):
        raise TypeError(f"config must be a JobConfig, got {type(config).__name__}")
    faults = list(faults)
    _check_faults(config, faults)
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    context = mp.get_context("fork")
    onset = context.Array("d", [math.nan] * config.n_ranks, lock=False)
    # Fork first, then start the store's server: its thread must not exist at fork time (a child
    # can inherit one of its locks held, and deadlock). The ranks' clients retry until it listens.
    port = _free_port()
    started = time.monotonic()
    processes = [
        context.Process(target=_rank_main, args=(r, port, config, faults, onset, seed), daemon=True)
        for r in range(config.n_ranks)
    ]
    stalled, stall_detected, last_change = False, math.nan, math.nan
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
        episodes = [_collect(store, config, e) for e in range(len(faults))]
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
    wall_s = time.monotonic() - started
    runs = []
    for arrays, fault in zip(episodes, faults, strict=True):
        if not (np.isfinite(arrays["begin"]).any() or np.isfinite(arrays["enter"]).any()):
            break  # never started: an earlier episode stalled
        is_stalled = stalled and not np.isfinite(arrays["exit"]).all()
        runs.append(
            JobRun(
                reports=Reports(**arrays, stalled=is_stalled, watched_until=watched_until),
                fault=fault,
                wall_s=wall_s,
                hang_onset=min(hang_onsets) if hang_onsets and is_stalled else math.nan,
                stall_detected=stall_detected if is_stalled else math.nan,
                last_progress=last_change if is_stalled else math.nan,
                exitcodes=[p.exitcode for p in processes],
            )
        )
        if is_stalled:
            break
    return runs


def run_job(config: JobConfig | None = None, fault: Fault | None = None, *, seed: int = 0) -> JobRun:
    """Run the job as real processes with one fault (or none) and return what the ranks reported."""
    return run_session(config, [fault], seed=seed)[0]


# ---------------------------------------------------------------------------------------------
# The detector and the baseline (they read Reports only)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Thresholds:
    """C4D's decision thresholds (milliseconds), above the noise of a healthy job (the baseline uses `late_ms` too).

    On the healthy episodes of calibration seeds 1000–1011 (default config, a loaded two-core machine) the
    largest median enter lateness was 6.1 ms and the largest latency-matrix cell 5.2 ms above the median:
    each threshold sits about twice above its noise. The faults are drawn over 2–40 ms, so many fall below.
    """

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


def latency_matrix(reports: Reports, source: str = "collective") -> np.ndarray:
    """M[i, j]: the median transfer time i → j over complete iterations, in ms (NaN on i = j).

    source 'collective': every message of the all-reduce on that connection (both phases), the
    collective's own concurrent traffic; 'ping_mesh': the mesh's dedicated probes (every round).
    """
    full = reports.complete_iterations()
    n = reports.n_ranks
    if full.size == 0:
        return np.full((n, n), np.nan)
    T = reports.transfer_ms(source)[:, :, full]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a connection never measured stays NaN
        M = np.nanmedian(T.reshape(n, n, -1), axis=2)
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


def _hang(reports: Reports, connections: bool) -> Diagnosis | None:
    """The hang rules on a stalled job's first incomplete iteration (None when the job did not stall)."""
    if not reports.stalled:
        return None
    incomplete = np.flatnonzero(~np.isfinite(reports.exit).all(axis=0))
    if not incomplete.size:
        return None
    t = int(incomplete[0])
    entered = np.isfinite(reports.enter[:, t])
    missing = tuple(int(r) for r in np.flatnonzero(~entered))
    if missing:
        return Diagnosis(
            "non_communication_hang",
            ranks=missing,
            evidence=f"iteration {t}: rank {_names(missing)} never entered the all-reduce the others wait in",
        )
    if not connections:  # without per-connection timings: blame the last rank to arrive
        last = int(np.nanargmax(reports.enter[:, t]))
        return Diagnosis("non_communication_hang", ranks=(last,), evidence=f"iteration {t}: rank {last} arrived last")
    pending = reports.pending[:, :, t]
    links: tuple[tuple[int, int], ...] = ()
    if np.isfinite(pending).any():
        first = np.nanmin(pending)  # the earliest phase anyone still waits in holds the root cause
        links = tuple((int(i), int(j)) for i, j in zip(*np.nonzero(pending == first), strict=True))
    where = ", ".join(f"{i} → {j}" for i, j in links) or "no connection reported"
    return Diagnosis(
        "communication_hang", links=links, evidence=f"iteration {t}: every rank entered, none left; waiting on {where}"
    )


def diagnose(reports: Reports, thresholds: Thresholds | None = None, source: str = "collective") -> Diagnosis:
    """Classify and localize an anomaly from the reported timings alone (C4D's master).

    1. Hang: the job stalled. In the first incomplete iteration, ranks that never entered the
       collective while others are inside it → non-communication hang of those ranks; if all
       entered and none left → communication hang of the connections the waiting ranks report
       pending in the earliest phase.
    2. Non-communication slow: one rank's median enter lateness exceeds `late_ms`.
    3. Communication slow: slow cells of the latency matrix (from `source`), localized by `localize`.
    4. Otherwise healthy.
    """
    if not isinstance(reports, Reports):
        raise TypeError(f"reports must be Reports, got {type(reports).__name__}")
    thresholds = thresholds or Thresholds()
    hang = _hang(reports, connections=True)
    if hang is not None:
        return hang
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
    mask = slow_cells(latency_matrix(reports, source), thresholds)
    if mask.any():
        ranks, links, evidence = localize(mask)
        return Diagnosis("communication_slow", ranks=ranks, links=links, evidence=evidence)
    return Diagnosis("healthy", evidence="no late rank, no slow connection")


def last_arrival(reports: Reports, thresholds: Thresholds | None = None) -> Diagnosis:
    """The strongest baseline without per-connection timings: per-rank compute time (last arrival).

    A stalled job: the ranks that never entered the collective, or else the last to enter. Otherwise
    the ranks whose median enter lateness (their compute time beyond the earliest rank's) exceeds
    the same `late_ms` as C4D's; otherwise healthy. It cannot tell a communication fault.
    """
    if not isinstance(reports, Reports):
        raise TypeError(f"reports must be Reports, got {type(reports).__name__}")
    thresholds = thresholds or Thresholds()
    hang = _hang(reports, connections=False)
    if hang is not None:
        return hang
    lateness = enter_lateness_ms(reports)
    late = tuple(int(r) for r in np.flatnonzero(lateness > thresholds.late_ms))
    if late:
        return Diagnosis("non_communication_slow", ranks=late, evidence=f"rank {_names(late)} arrives last")
    return Diagnosis("healthy", evidence="no late rank")


def permute_connections(reports: Reports, seed: int) -> Reports:
    """The reports with the per-connection timings' rank labels scrambled (a falsifier's input).

    The sender and receiver labels of every message, probe and pending report are relabelled by
    one permutation of the ranks drawn uniformly, so a culprit keeps its label only by chance; per-rank
    enter and exit times stay. A detector reading these still sees that a connection is slow, not which.
    """
    n = reports.n_ranks
    perm = np.random.default_rng([seed, 0xD]).permutation(n)
    arrays = {}
    for name in ("sent", "posted", "arrived", "pending", "probe_sent", "probe_posted", "probe_arrived"):
        arrays[name] = getattr(reports, name)[perm][:, perm]
    return replace(reports, **arrays)


def iterations_to_detection(
    reports: Reports, fault: Fault, detector: str = "c4d", thresholds: Thresholds | None = None
) -> float:
    """How many iterations the detector needs: the smallest k from which every prefix of k or more
    complete iterations is diagnosed exactly right (NaN when even the whole episode is not)."""
    full = len(reports.complete_iterations())
    judge = diagnose if detector == "c4d" else last_arrival
    right = [judge(reports.prefix(k), thresholds).matches(fault) for k in range(1, full + 1)]
    if not right or not right[-1]:
        return math.nan
    k = len(right)
    while k > 1 and right[k - 2]:
        k -= 1
    return float(k)


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


def step_ms(reports: Reports) -> float:
    """The job's time per iteration up to the collective's end, in ms: the median over complete iterations of
    max_r exit − min_r begin (the ping mesh, which runs after the collective, is left out)."""
    full = reports.complete_iterations()
    if full.size == 0:
        return math.nan
    return float(np.median(reports.exit[:, full].max(axis=0) - reports.begin[:, full].min(axis=0)) * 1000.0)


def mesh_ms(reports: Reports) -> float:
    """The ping mesh's time per iteration, in ms: the median over complete iterations of the last probe's
    arrival − the first probe's hand-over (NaN without the mesh)."""
    full = reports.complete_iterations()
    if full.size == 0 or not np.isfinite(reports.probe_arrived).any():
        return math.nan
    arrived = np.nanmax(
        reports.probe_arrived[:, :, full].reshape(-1, full.size, reports.probe_arrived.shape[3]), axis=(0, 2)
    )
    sent = np.nanmin(reports.probe_sent[:, :, full].reshape(-1, full.size, reports.probe_sent.shape[3]), axis=(0, 2))
    return float(np.median(arrived - sent) * 1000.0)


def slowest_collective(reports: Reports) -> int:
    """The naive rule: blame the rank whose collectives took longest (median over iterations)."""
    if not isinstance(reports, Reports):
        raise TypeError(f"reports must be Reports, got {type(reports).__name__}")
    return int(np.argmax(collective_time_ms(reports)))


def detection_latency_s(job: JobRun) -> float:
    """Seconds from a hang's onset (ground truth) to the master declaring the stall; NaN without a hang."""
    return job.stall_detected - job.hang_onset


def draw_faults(
    config: JobConfig,
    seed: int,
    kinds: Sequence[str] = FAULT_KINDS,
    sizes_ms: tuple[float, float] | None = None,
) -> list[Fault]:
    """One fault per kind with a random culprit (a random peer for a faulty link) and start.

    sizes_ms = (lo, hi): every slow fault gets a size drawn log-uniformly in [lo, hi] ms; None keeps
    the job's defaults.
    """
    rng = np.random.default_rng(seed)
    faults = []
    for kind in kinds:
        rank = int(rng.integers(config.n_ranks))
        peer = None
        if kind in LINK_KINDS:
            peer = int((rank + 1 + rng.integers(config.n_ranks - 1)) % config.n_ranks)
        # a hang strikes mid-job, after some healthy iterations; slow faults are present throughout
        start = int(rng.integers(2, config.iterations - 1)) if kind in HANG_KINDS else 0
        size = None
        if sizes_ms is not None and kind in SLOW_KINDS:
            lo, hi = sizes_ms
            size = float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
        faults.append(Fault(kind, rank, peer, start, size))
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


@dataclass(frozen=True)
class Outcome:
    """How one fault ended for a detector (seconds): when it was named, how long the diagnosis took, and
    for a slowdown the share of the job's speed it took (`slow_fraction`; 0 for a fault that stops the job).

    A fault that stops the job (a crash, a hang) stops it until it is named; a slowdown lets the job run,
    slowed, until it is named (`found_s` infinite: never, as with a watchdog, which no slowdown trips).
    """

    stops: bool
    found_s: float
    diagnose_s: float = 0.0
    slow_fraction: float = 0.0

    def __post_init__(self) -> None:
        if not (self.found_s >= 0 and self.diagnose_s >= 0 and math.isfinite(self.diagnose_s)):
            raise ValueError(f"found_s and diagnose_s must be >= 0 (diagnose_s finite), got {self}")
        if not 0 <= self.slow_fraction < 1:
            raise ValueError(f"slow_fraction must lie in [0, 1), got {self.slow_fraction}")
        if self.stops and not math.isfinite(self.found_s):
            raise ValueError("a fault that stops the job is always found (by the watchdog at the latest)")

    def cost_s(self, restart_s: float, checkpoint_interval_s: float, mtbf_s: float) -> tuple[float, float]:
        """(wall time the fault adds after the run before it, progress kept in that time − progress lost).

        Stops: time found + diagnose + restart, nothing kept, the work since the last checkpoint lost (c/2).
        A slowdown named after d: d more seconds at (1 − f) of the speed, then diagnose and restart, c/2 lost.
        A slowdown never named: the job runs slowed until the next fault's restart clears it, a mean time
        between faults later (arrivals are memoryless), so f · MTBF of progress is lost and no time added.
        A named slowdown is restarted only where that loses less (f · d + diagnose + restart + c/2 against
        f · MTBF): an operator does not stop a job for a slowdown that costs less than the stop.
        """
        if self.stops:
            return self.found_s + self.diagnose_s + restart_s, -checkpoint_interval_s / 2.0
        running = (0.0, -self.slow_fraction * mtbf_s)
        if not math.isfinite(self.found_s):
            return running
        f, d = self.slow_fraction, self.found_s
        if f * mtbf_s <= f * d + self.diagnose_s + restart_s + checkpoint_interval_s / 2.0:
            return running
        return d + self.diagnose_s + restart_s, (1.0 - f) * d - checkpoint_interval_s / 2.0


def mixed_downtime(
    job_faults_per_hour: float,
    stops: Sequence[Outcome],
    slowdowns: Sequence[Outcome],
    stop_share: float,
    restart_s: float,
    checkpoint_interval_s: float,
) -> float:
    """Error-induced downtime with an explicit fault mix: a share `stop_share` of faults stop the job.

    A cycle is a run of mean x = 1/Λ, then a fault drawn from the mix, which adds wall time τ and changes the
    progress kept by κ (`Outcome.cost_s`); with E over the mix (each kind's outcomes weighted equally):

        ETT = (x + E[κ]) / (x + E[τ]),   downtime = 1 − ETT.

    With every fault a stop found after `detect` and diagnosed in `diagnose`, this is `effective_training_time`.
    """
    if not (job_faults_per_hour > 0 and math.isfinite(job_faults_per_hour)):
        raise ValueError(f"job_faults_per_hour must be a finite number > 0, got {job_faults_per_hour}")
    if not 0 <= stop_share <= 1:
        raise ValueError(f"stop_share must lie in [0, 1], got {stop_share}")
    mtbf = 3600.0 / job_faults_per_hour
    time_s = kept_s = 0.0
    for share, group, stopping in ((stop_share, stops, True), (1.0 - stop_share, slowdowns, False)):
        if share == 0:
            continue
        if not group or any(o.stops != stopping for o in group):
            kind = "faults that stop the job" if stopping else "slowdowns"
            raise ValueError(f"a mix with a share {share} of {kind} needs outcomes of that kind only, got {group}")
        costs = [o.cost_s(restart_s, checkpoint_interval_s, mtbf) for o in group]
        time_s += share * float(np.mean([c[0] for c in costs]))
        kept_s += share * float(np.mean([c[1] for c in costs]))
    return 1.0 - max(mtbf + kept_s, 0.0) / (mtbf + time_s)


def rate_for_downtime(downtime: float, downtime_at: Callable[[float], float]) -> float:
    """The fault rate Λ (per hour) at which `downtime_at(Λ)`, increasing in Λ, equals `downtime` (bisection)."""
    if not 0 < downtime < 1:
        raise ValueError(f"downtime must be in (0, 1), got {downtime}")
    lo, hi = 1e-6, 1e3
    if not downtime_at(lo) < downtime < downtime_at(hi):
        raise ValueError(
            f"no fault rate in [{lo}, {hi}] per hour gives downtime {downtime} (the model spans "
            f"{downtime_at(lo):.3f} to {downtime_at(hi):.3f}): its floor comes from slowdowns nobody names"
        )
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if downtime_at(mid) < downtime else (lo, mid)
    return math.sqrt(lo * hi)
