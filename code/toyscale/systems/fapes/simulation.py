"""The simulation: greedy allocation by marginal predicted speed-up, and every policy on the SimPy cluster."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import simpy

from .cluster import (
    ARMS,
    DAY,
    METHODS,
    Config,
    Job,
    Trace,
    observation_stream,
)
from .inference import (
    PredictionBoard,
    serve,
)
from .performance import (
    PerformanceModel,
    goodput_rate,
    held_out_error,
    step_time,
)

# ---------------------------------------------------------------------------------------------
# Allocation: greedy by marginal predicted speed-up
# ---------------------------------------------------------------------------------------------


def allocate(rates: list[list[float]], capacity: int, min_gain: float) -> list[int]:
    """GPUs per job (FIFO order) from predicted rates[j][g − 1] (best over batch sizes).

    First one GPU per job in arrival order while GPUs last (a job with none waits); then each
    further GPU goes to the job with the largest marginal speed-up (R_j(g + 1) − R_j(g))/R_j(1),
    while that gain is at least min_gain.
    """
    if capacity < 0:
        raise ValueError(f"capacity must be >= 0, got {capacity}")
    alloc = [1 if j < capacity else 0 for j in range(len(rates))]
    free = capacity - sum(alloc)
    while free > 0:
        best, best_gain = -1, min_gain
        for j, r in enumerate(rates):
            g = alloc[j]
            if g == 0 or g >= len(r):
                continue
            # marginal speed-up of one more GPU, in units of the job's 1-GPU rate
            gain = (r[g] - r[g - 1]) / r[0]
            if gain >= best_gain:
                best, best_gain = j, gain
        if best < 0:
            break
        alloc[best] += 1
        free -= 1
    return alloc


# ---------------------------------------------------------------------------------------------
# The simulation
# ---------------------------------------------------------------------------------------------


@dataclass
class _JobState:
    job: Job
    model: PerformanceModel
    noise: np.random.Generator  # the job's own observation noise (the same under every policy)
    gpus: int = 0  # GPUs held now
    batch: int = 0
    phase: str = "queued"  # queued, restart, run, checkpoint, kill, done
    phase_end: float = 0.0
    version: int = 0
    progress: float = 0.0
    last_update: float = 0.0
    run_since: float = 0.0  # start of the current run phase
    observed_since: float = 0.0  # the steps since this time are not yet reported
    next_gpus: int = 0  # after a checkpoint: restart on this many GPUs (0: re-queue)
    next_batch: int = 0
    started: float | None = None
    finished: float | None = None
    preemptions: int = 0
    lost_gpu_min: float = 0.0


@dataclass
class SimResult:
    """One policy on one trace: per-job times, per-request latencies and the cluster's timelines."""

    policy: str
    jct: np.ndarray  # minutes from arrival to completion, per finished job
    job_goodput: np.ndarray  # per finished job: work / (finish − first start), over its requested configuration's
    completed: int
    n_jobs: int
    makespan: float
    throughput: float  # cluster throughput: useful work per minute while jobs are in the system (m0-samples)
    latency_s: np.ndarray  # latency of every request of the inference window (seconds, float32)
    request_minutes: np.ndarray  # their arrival minutes
    preemptions: int
    gpu_seconds_lost: float
    model_error: float  # mean held-out relative error of the fitted step-time model (nan: none)
    prior_error: float  # the same for the prior alone, before any observation
    timeline: np.ndarray  # rows: t, held by jobs, of which loaned, replicas, lent, to training,
    # idle returning to inference, reclaimed from jobs (see TIMELINE_COLUMNS)
    forecast: np.ndarray  # rows (t, the board's forecast of the peak rate over its horizon), FaPES only


class _Sim:
    def __init__(self, policy: str, trace: Trace, config: Config, seed: int):
        self.policy, self.trace, self.config, self.c = policy, trace, config, config.cluster
        self.seed = seed
        self.env = simpy.Environment()
        self.loaning = policy not in ("static", "optimus", "pollux")
        self.elastic = policy != "static"
        self.joint = policy not in ("static", "optimus", "fapes_gpus_only")
        self.forecasting = policy.startswith("fapes") and policy != "fapes_reactive"  # sizes replicas ahead
        self.kills = policy in ("loan_naive", "fapes_kills")  # naive reclaim kills; FaPES's checkpoints, scales in
        self.fitting = policy != "fapes_no_fit"
        self.capacity = self.c.infer_gpus  # replicas serving requests now
        self.capacity_log: list[tuple[float, int]] = []
        self.board = PredictionBoard(trace.history_rate)
        self.lent = 0  # inference GPUs usable by training
        self.to_train = 0  # in hand-over to training (their last request is finishing)
        self.to_infer = 0  # idle lent GPUs on their way back to inference
        self.reclaiming = 0  # lent GPUs a job is giving back (its checkpoint or kill, then the hand-over)
        self.states: list[_JobState] = []
        self.active: list[_JobState] = []  # arrived, not finished, in arrival order
        self.timeline: list[tuple] = []
        self.forecast: list[tuple[float, float]] = []
        self.wake = self.env.event()
        self.done_jobs = 0

    # -- bookkeeping -------------------------------------------------------------------------
    def held(self) -> int:
        return sum(s.gpus for s in self.active)

    def record(self) -> None:
        held = self.held()
        loaned = max(0, held - self.c.train_gpus)
        self.timeline.append(
            (self.env.now, held, loaned, self.capacity, self.lent, self.to_train, self.to_infer, self.reclaiming)
        )

    def set_capacity(self, replicas: int) -> None:
        self.capacity = replicas
        self.capacity_log.append((self.env.now, replicas))

    def advance(self, s: _JobState) -> None:
        now = self.env.now
        if s.phase == "run":
            s.progress += goodput_rate(s.job, s.gpus, s.batch) * (now - s.last_update)
        s.last_update = now

    def set_phase(self, s: _JobState, phase: str, duration: float) -> None:
        self.advance(s)
        s.phase, s.version = phase, s.version + 1
        s.phase_end = self.env.now + duration
        if phase in ("restart", "checkpoint", "kill"):
            s.lost_gpu_min += s.gpus * duration  # GPUs held, no progress
        if phase == "run":
            s.run_since = s.observed_since = self.env.now
            remaining = max(s.job.work - s.progress, 0.0)
            duration = remaining / goodput_rate(s.job, s.gpus, s.batch)
            s.phase_end = self.env.now + duration
        version = s.version
        self.env.timeout(duration).callbacks.append(lambda _e: self.phase_over(s, version))

    def observe_steps(self, s: _JobState) -> None:
        """The job reports its mean step time and a noise-scale estimate for the segment it ran."""
        ran = self.env.now - s.observed_since
        if ran <= 0 or s.phase != "run":
            return
        true = step_time(s.job, s.gpus, s.batch)
        noise = self.config.step_noise / math.sqrt(min(ran, 10.0))
        seconds = true * math.exp(s.noise.normal(0.0, noise))
        phi = s.job.phi * math.exp(s.noise.normal(0.0, 0.3))
        if self.fitting:
            s.model.observe(s.gpus, s.batch, seconds, phi)

    # -- job phases ----------------------------------------------------------------------------
    def phase_over(self, s: _JobState, version: int) -> None:
        if version != s.version:
            return
        self.advance(s)
        if s.phase == "restart":
            self.set_phase(s, "run", 0.0)
        elif s.phase == "run":
            self.observe_steps(s)
            s.progress = s.job.work
            s.phase, s.finished, s.gpus = "done", self.env.now, 0
            s.version += 1
            self.active.remove(s)
            self.done_jobs += 1
            self.after_release()
        elif s.phase in ("checkpoint", "kill"):
            released = s.gpus - s.next_gpus
            s.gpus = s.next_gpus
            if s.next_gpus == 0:
                s.phase, s.version = "queued", s.version + 1
            else:
                s.batch = s.next_batch
                self.set_phase(s, "restart", self.c.restart_min)
            del released
            self.after_release()
        self.record()

    def start_or_resize(self, s: _JobState, gpus: int, batch: int) -> None:
        """Start a queued job, or checkpoint a running one and restart it on a new configuration."""
        if s.phase == "queued":
            if s.started is None:
                s.started = self.env.now
            s.gpus, s.batch = gpus, batch
            self.set_phase(s, "restart", self.c.restart_min)
            return
        self.observe_steps(s)
        s.next_gpus, s.next_batch = gpus, batch
        if gpus > s.gpus:  # growing: the new GPUs are reserved now
            s.gpus = gpus
        self.set_phase(s, "checkpoint", self.c.checkpoint_min)

    # -- the GPUs moving between pools ---------------------------------------------------------
    def after_release(self) -> None:
        if not self.wake.triggered:
            self.wake.succeed()

    def future_held(self) -> int:
        """GPUs jobs will hold once their checkpoints and kills are over."""
        return sum(s.next_gpus if s.phase in ("checkpoint", "kill") else s.gpus for s in self.active)

    def reclaim(self, k: int) -> None:
        """Take k lent GPUs back for inference: idle ones first, then from jobs (never instant)."""
        idle = max(0, self.lent - max(0, self.held() - self.c.train_gpus))
        take_idle = min(idle, k)
        if take_idle:
            self.lent -= take_idle
            self.move_back(take_idle, self.c.handover_min, from_jobs=False)
            k -= take_idle
        if k <= 0:
            return
        # the lent GPUs jobs will hold beyond the training pool must fall by k
        self.lent -= k
        excess = self.future_held() - self.c.train_gpus - self.lent
        if self.kills:
            # naive: kill the most recently started jobs until the excess is gone
            for s in sorted(self.running(), key=lambda s: -(s.started or 0)):
                if excess <= 0:
                    break
                excess -= s.next_gpus if s.phase == "checkpoint" else s.gpus
                self.kill(s)
        else:
            self.scale_in(excess)
        # the GPUs reach inference once the last job giving them up has released them, and the hand-over
        releasing = [s.phase_end for s in self.active if s.phase in ("checkpoint", "kill")]
        released = max(releasing, default=self.env.now) - self.env.now
        self.move_back(k, released + self.c.handover_min, from_jobs=True)

    def scale_in(self, excess: int) -> None:
        """Cost-aware reclaim: take GPUs one at a time where the predicted goodput lost is least."""
        while excess > 0:
            best, best_cost = None, math.inf
            for s in self.running():
                g = s.next_gpus if s.phase == "checkpoint" else s.gpus
                if g <= 1:
                    continue
                # cost of one GPU less: the predicted speed-up it gave, in 1-GPU units
                cost = (self.best_rate(s, g)[0] - self.best_rate(s, g - 1)[0]) / self.best_rate(s, 1)[0]
                if cost < best_cost:
                    best, best_cost = s, cost
            if best is None:  # every job is down to one GPU: checkpoint and suspend the newest
                s = max(self.running(), key=lambda s: s.started or 0)
                excess -= s.next_gpus if s.phase == "checkpoint" else s.gpus
                s.preemptions += 1
                if s.phase == "checkpoint":
                    s.next_gpus = 0
                else:
                    self.start_or_resize(s, 0, s.batch)
                continue
            g = (best.next_gpus if best.phase == "checkpoint" else best.gpus) - 1
            m = self.best_rate(best, g)[1]
            if best.phase == "checkpoint":
                best.next_gpus, best.next_batch = g, m
            else:
                best.preemptions += 1
                self.start_or_resize(best, g, m)
            excess -= 1

    def kill(self, s: _JobState) -> None:
        self.advance(s)
        if s.phase == "run":
            self.observe_steps(s)
            # the work since the last periodic checkpoint is lost
            lost_min = (self.env.now - s.run_since) % self.c.periodic_checkpoint_min
            s.progress = max(0.0, s.progress - goodput_rate(s.job, s.gpus, s.batch) * lost_min)
            s.lost_gpu_min += lost_min * s.gpus
        s.preemptions += 1
        s.next_gpus = 0
        self.set_phase(s, "kill", self.c.kill_min)

    def move_back(self, k: int, delay: float, from_jobs: bool) -> None:
        """k GPUs on their way back to inference; they serve requests again after `delay`."""
        if from_jobs:
            self.reclaiming += k
        else:
            self.to_infer += k

        def arrive(_e: simpy.Event) -> None:
            if from_jobs:
                self.reclaiming -= k
            else:
                self.to_infer -= k
            self.set_capacity(self.capacity + k)
            self.record()

        self.env.timeout(delay).callbacks.append(arrive)

    def lend(self, k: int) -> None:
        """Hand k replicas' GPUs to training: they stop taking requests now, finish the last one, then move."""
        self.set_capacity(self.capacity - k)
        self.to_train += k

        def arrive(_e: simpy.Event) -> None:
            self.to_train -= k
            self.lent += k
            self.after_release()
            self.record()

        self.env.timeout(self.config.service_cap_s / 60.0 + self.c.handover_min).callbacks.append(arrive)

    def running(self) -> list[_JobState]:
        return [
            s
            for s in self.active
            if s.phase in ("run", "restart", "checkpoint")
            and s.gpus > 0
            and not (s.phase == "checkpoint" and s.next_gpus == 0)
        ]

    # -- processes -----------------------------------------------------------------------------
    def autoscaler(self):
        """Every minute: size the replicas to the demand, lend the surplus, reclaim on demand.

        Both lending policies keep `headroom` on their demand estimate. The naive one estimates it
        from the last 5 minutes' requests; FaPES takes the larger of that and the prediction board's
        peak over the next `forecast_horizon_min`, so it keeps replicas ahead of a rise it expects.
        """
        counts, minute = self.trace.counts, 0
        while minute + 1 < counts.size:
            yield self.env.timeout(1.0)
            minute += 1
            if not self.loaning:
                continue
            recent = float(np.mean(counts[max(0, minute - 5) : minute]))
            expect = recent
            if self.forecasting:
                seen = float(np.mean(counts[max(0, minute - 15) : minute]))
                board = self.board.forecast(self.env.now, seen, self.config.forecast_horizon_min)
                self.forecast.append((self.env.now, board))
                expect = max(board, recent)
            expect *= 1 + self.config.headroom
            keep = min(self.c.infer_gpus, max(1, math.ceil(expect / self.config.per_replica_rate)))
            have = self.capacity + self.to_infer + self.reclaiming
            if have < keep:
                self.reclaim(min(keep - have, self.lent))
                self.record()
            elif self.capacity > keep + 1 and have > keep + 1:
                # lend the surplus beyond one spare replica
                self.lend(min(self.capacity - keep, have - keep) - 1)
                self.record()

    def best_rate(self, s: _JobState, g: int) -> tuple[float, int]:
        """Predicted goodput at g GPUs and the batch that gives it (m0 only unless joint)."""
        choices = s.job.batch_choices(g) if self.joint else [s.job.m0]
        rates = [(s.model.predict_goodput(g, m), m) for m in choices]
        return max(rates)

    def scheduler(self):
        while True:
            self.schedule()
            self.record()
            timeout = self.env.timeout(self.config.schedule_every_min)
            yield self.wake | timeout
            if self.wake.triggered:
                self.wake = self.env.event()
            if self.done_jobs == len(self.trace.jobs):
                return

    def schedule(self) -> None:
        for s in self.active:  # running jobs report their recent steps (Pollux fits online)
            if s.phase == "run" and self.env.now - s.observed_since >= self.config.schedule_every_min:
                self.observe_steps(s)
                s.observed_since = self.env.now
        capacity = self.c.train_gpus + (self.lent if self.loaning else 0)
        if not self.elastic:
            free = capacity - self.held()
            for s in self.active:  # strict FIFO on requested GPUs
                if s.phase != "queued":
                    continue
                if s.job.gpus_requested > free:
                    break
                free -= s.job.gpus_requested
                self.start_or_resize(s, s.job.gpus_requested, s.job.m0)
            return
        jobs = [s for s in self.active if s.phase in ("queued", "run", "restart")]
        busy = sum(s.gpus for s in self.active if s.phase in ("checkpoint", "kill"))
        budget = capacity - busy
        rates = []
        for s in jobs:
            cap = max(s.job.gpus_requested, 2 * s.model.max_observed_gpus)  # explore at most 2x
            cap = min(cap, self.c.max_gpus_per_job)
            rates.append([self.best_rate(s, g)[0] for g in range(1, cap + 1)])
        target = allocate(rates, max(budget, 0), self.config.min_gain)
        free = capacity - self.held()
        # shrink (only to admit queued jobs), then start and grow within what is free now
        admit = any(s.phase == "queued" and g > 0 for s, g in zip(jobs, target, strict=True))
        for s, g in zip(jobs, target, strict=True):
            if admit and s.phase != "queued" and 0 < g < s.gpus:
                self.start_or_resize(s, g, self.best_rate(s, g)[1])
        for s, g in zip(jobs, target, strict=True):
            if g == 0:
                continue
            m = self.best_rate(s, g)[1]
            if s.phase == "queued":
                if g <= free:
                    free -= g
                    self.start_or_resize(s, g, m)
            elif g > s.gpus and g - s.gpus <= free and s.phase == "run":
                gain = self.best_rate(s, g)[0] / self.best_rate(s, s.gpus)[0]
                remaining = (s.job.work - s.progress) / max(goodput_rate(s.job, s.gpus, s.batch), 1e-9)
                # grow only when the predicted gain repays the checkpoint and the restart
                if gain > 1.05 and remaining * (1 - 1 / gain) > 2 * (self.c.checkpoint_min + self.c.restart_min):
                    free -= g - s.gpus
                    self.start_or_resize(s, g, m)

    def arrivals(self):
        for job in self.trace.jobs:
            if job.arrival > self.env.now:
                yield self.env.timeout(job.arrival - self.env.now)
            noise = observation_stream(self.seed, job.id)
            s = _JobState(job, PerformanceModel(job.m0), noise, last_update=self.env.now)
            self.states.append(s)
            self.active.append(s)
            self.after_release()

    def run(self) -> None:
        self.env.process(self.arrivals())
        self.env.process(self.autoscaler())
        done = self.env.process(self.scheduler())
        self.env.run(until=simpy.AnyOf(self.env, [done, self.env.timeout(self.config.max_days * DAY)]))
        for s in self.active:
            self.advance(s)
        self.record()
        if self.env.now < self.config.window_min:  # inference goes on until the end of its window
            self.env.run(until=self.config.window_min)
            self.record()


def simulate(
    policy: str, trace: Trace, config: Config | None = None, seed: int = 0, *, fixed_latency: np.ndarray | None = None
) -> SimResult:
    """Run one policy on one trace until every job finishes (or max_days), and measure it.

    policy: an arm, or what a falsifier runs in FaPES's place (`cluster.METHODS`); seed: the seed
    the trace was drawn from (it seeds each job's observation noise). The latencies of the requests
    are computed after the run from the replicas over time (`inference.serve`); fixed_latency: the
    latencies with every replica serving throughout, if already computed for this trace.
    """
    if policy not in ARMS + METHODS:
        raise ValueError(f"policy must be one of {sorted(set(ARMS + METHODS))}, got {policy!r}")
    if not isinstance(trace, Trace):
        raise TypeError(f"trace must be a Trace, got {type(trace).__name__}")
    config = config or Config()
    sim = _Sim(policy, trace, config, seed)
    sim.run()
    finished = [s for s in sim.states if s.finished is not None]
    jct = np.array([s.finished - s.job.arrival for s in finished])
    goodput = np.array(
        [s.job.work / (s.finished - s.started) / goodput_rate(s.job, s.job.gpus_requested, s.job.m0) for s in finished]
    )
    end = max((s.finished for s in finished), default=sim.env.now)
    work = sum(s.job.work for s in finished)
    in_system = _busy_minutes([(s.job.arrival, s.finished or end) for s in sim.states])
    if sim.capacity_log or fixed_latency is None:
        served = serve(trace.request_times, trace.service_times / 60.0, sim.capacity_log, config.cluster.infer_gpus)
        latency = (60.0 * served).astype(np.float32)
    else:
        latency = fixed_latency
    errors = [held_out_error(s.model, s.job, config.cluster.max_gpus_per_job) for s in sim.states]
    prior = [held_out_error(PerformanceModel(s.job.m0), s.job, config.cluster.max_gpus_per_job) for s in sim.states]
    return SimResult(
        policy=policy,
        jct=jct,
        job_goodput=goodput,
        completed=len(finished),
        n_jobs=len(trace.jobs),
        makespan=float(end),
        throughput=work / max(in_system, 1e-9),
        latency_s=latency,
        request_minutes=trace.request_times,
        preemptions=sum(s.preemptions for s in sim.states),
        gpu_seconds_lost=60.0 * sum(s.lost_gpu_min for s in sim.states),
        model_error=float(np.nanmean(errors)) if policy != "static" else float("nan"),
        prior_error=float(np.nanmean(prior)),
        timeline=np.array(sim.timeline, dtype=float),
        forecast=np.array(sim.forecast, dtype=float).reshape(-1, 2),
    )


def _busy_minutes(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of [arrival, finish] intervals: the time jobs are in the system."""
    total, end = 0.0, -math.inf
    for a, b in sorted(intervals):
        if a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total
