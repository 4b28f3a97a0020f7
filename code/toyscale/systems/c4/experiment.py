"""The C4 experiment: the real job under every fault kind and size, both detectors, the modelled downtime, the fabric.

Every seed runs two sessions of the real job (`diagnose.run_session`). Each starts with a healthy
episode (its false alarms), then one episode per slow fault kind with a random culprit and a size
drawn log-uniformly in `Config.fault_sizes_ms` (so the detection rate is measured over fault sizes,
not at one convenient size), and ends with a hang: a non-communication hang in the first session, a
communication hang in the second. The second session also runs two slow-compute faults at
`control_size_ms`, well above the lateness threshold: with the first session's non-communication
hang they are the negative control, faults that the last-arrival baseline sees by the very rule C4D
applies first, so C4D − baseline must vanish there. C4D and the last-arrival baseline read the same
reports; `Config.detector` says what runs under C4D's name (the falsifier puts a scrambled-connection
C4D there). Every detector in the table is scored by one criterion: the fault's kind and culprits
named exactly. The downtime model is fed, per seed, with the detection time C4D measured on each of
those faults, and printed beside the floor of a perfect detector. The fabric part compares C4P's plan
with ECMP over hash seeds on four fabrics, and on the hard one (2:1 oversubscribed, background flows)
sweeps the queue pairs per connection: each arm (C4P, ECMP with a search over hash seeds at the
planner's budget, plain ECMP) picks its queue pairs on validation placements and is scored on others.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from torch.distributed.constants import default_pg_timeout

from toyscale.core.seeding import seed_everything

from . import diagnose
from .diagnose import (
    EXPECTED_KIND,
    SLOW_KINDS,
    Diagnosis,
    Fault,
    JobConfig,
    JobRun,
    Outcome,
    Thresholds,
    collective_time_ms,
    detection_latency_s,
    draw_faults,
    enter_lateness_ms,
    iterations_to_detection,
    last_arrival,
    latency_matrix,
    mesh_ms,
    mixed_downtime,
    permute_connections,
    rate_for_downtime,
    run_session,
    slowest_collective,
    step_ms,
)
from .plan import (
    Fabric,
    FabricConfig,
    background_paths,
    ecmp_paths,
    ecmp_search_paths,
    job_step_times,
    link_loads,
    plan_paths,
    random_paths,
    ring_flows,
    simulate,
)

#: The fabric on which C4P's effect is read: 2:1 oversubscribed (two spines for four hosts per leaf) and
#: four background flows of other tenants from the hosts the three jobs leave free. The queue pairs per
#: connection (each hashed alone) are every arm's knob, chosen on validation placements (`Config.qps_grid`);
#: the chapter's previous world, two of them, stays as this variant and as a point of the sweep.
HARD_WORLD = {"n_spines": 2, "n_jobs": 3, "background_flows": 4}
HARD_FABRIC = {**HARD_WORLD, "qps_per_connection": 2}
# The fabric variants of the C4P experiment: name → changes to the base FabricConfig
VARIANTS: dict[str, dict[str, object]] = {
    "non-blocking fabric": {},
    "bonded dual-port NICs": {"ports_per_nic": 2},
    "one leaf-spine link down": {"failed_links": ((0, 0),)},
    "2:1, 2 QPs, background": HARD_FABRIC,
}
HARD = "2:1, 2 QPs, background"
#: What may run under C4D's name: C4D itself, C4D reading scrambled connection labels, the two alternatives.
DETECTORS = ("c4d", "c4d_scrambled", "last_arrival", "ping_mesh")
#: The detection claim's alternatives, judged on every episode beside C4D.
ALTERNATIVES = ("last_arrival", "ping_mesh")
#: What may run under C4P's name: the plan, or a plan that reads no loads (one uniform draw per flow).
PLANNERS = ("c4p", "random")
#: The arms of the queue-pair comparison: what runs under C4P's name, ECMP with its hash search, plain ECMP.
HASHING = ("c4p", "ecmp", "ecmp_hash")
PARTS = ("c4d", "c4p")


@dataclass(frozen=True)
class Config:
    """Toy defaults for the C4 experiment."""

    job: JobConfig = field(default_factory=lambda: JobConfig(ping_mesh=True))  # the real job, ping mesh on
    thresholds: Thresholds = field(default_factory=Thresholds)  # C4D's (and the baseline's) thresholds
    fault_sizes_ms: tuple[float, float] = (2.0, 40.0)  # slow faults' sizes, drawn log-uniformly per fault
    control_size_ms: float = 40.0  # the negative control's slow-compute size: visible to both detectors
    detector: str = "c4d"  # what runs under C4D's name (see DETECTORS; the falsifiers change it)
    planner: str = "c4p"  # what runs under C4P's name (see PLANNERS; the falsifiers change it)
    parts: tuple[str, ...] = PARTS  # which halves run: a falsifier runs only the half its claim reads
    fabric: FabricConfig = field(default_factory=FabricConfig)  # the base leaf-spine fabric and its jobs
    hash_seeds: int = 40  # ECMP hash seeds drawn per placement (ECMP is reported as a distribution)
    qps_grid: tuple[int, ...] = (
        1,
        2,
        4,
        8,
    )  # queue pairs per connection tried on validation (NCCL_IB_QPS_PER_CONNECTION)
    search_budget: int = 256  # assignments C4P's planner and ECMP's hash search each evaluate under the sharing model
    val_placements: int = 3  # job placements per seed on which each arm picks its queue pairs
    test_placements: int = 3  # job placements per seed on which the picked settings are scored
    n_nodes: int = 128  # nodes of the modeled production job (1,024 GPUs at 8 per node)
    watchdog_s: float = default_pg_timeout.total_seconds()  # the collective watchdog (torch's default, 30 min)
    manual_diagnosis_s: float = 2 * 3600.0  # an engineer finding the faulty node by hand (assumed)
    restart_s: float = 600.0  # isolate, reschedule, reload the checkpoint, re-initialize (assumed)
    checkpoint_interval_s: float = 1800.0  # time between checkpoints; half of it is lost per fault (assumed)
    iteration_s: float = 10.0  # one production training iteration: a slow fault is seen after k of them (assumed)
    baseline_downtime: float = 0.31  # the paper's downtime before C4D: calibrates the fault rate
    stop_share: float = 0.8  # share of faults that stop the job (crashes, hangs); the rest slow it (assumed)
    rate_multipliers: tuple[float, ...] = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)  # downtime curve
    stop_shares: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)  # the downtime model's fault-mix boundary

    def __post_init__(self) -> None:
        for name, kind in (("job", JobConfig), ("thresholds", Thresholds), ("fabric", FabricConfig)):
            if not isinstance(getattr(self, name), kind):
                raise TypeError(f"{name} must be a {kind.__name__}, got {type(getattr(self, name)).__name__}")
        lo, hi = self.fault_sizes_ms
        if not 0 < lo <= hi:
            raise ValueError(f"fault_sizes_ms must be 0 < lo <= hi, got {self.fault_sizes_ms}")
        if self.control_size_ms < 0:
            raise ValueError(f"control_size_ms must be >= 0, got {self.control_size_ms}")
        if self.detector not in DETECTORS:
            raise ValueError(f"detector must be one of {DETECTORS}, got {self.detector!r}")
        if self.planner not in PLANNERS:
            raise ValueError(f"planner must be one of {PLANNERS}, got {self.planner!r}")
        if not self.parts or set(self.parts) - set(PARTS):
            raise ValueError(f"parts must be a non-empty subset of {PARTS}, got {self.parts}")
        if not self.qps_grid or min(self.qps_grid) < 1:
            raise ValueError(f"qps_grid must be queue-pair counts >= 1, got {self.qps_grid}")
        for name in ("search_budget", "val_placements", "test_placements"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.hash_seeds < 2:
            raise ValueError(f"hash_seeds must be >= 2 (a distribution), got {self.hash_seeds}")
        if self.n_nodes < 1:
            raise ValueError(f"n_nodes must be >= 1, got {self.n_nodes}")
        for name in ("watchdog_s", "manual_diagnosis_s", "restart_s", "checkpoint_interval_s", "iteration_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 0 < self.baseline_downtime < 1:
            raise ValueError(f"baseline_downtime must be in (0, 1), got {self.baseline_downtime}")
        if not self.rate_multipliers or min(self.rate_multipliers) <= 0:
            raise ValueError(f"rate_multipliers must be positive, got {self.rate_multipliers}")
        for share in (self.stop_share, *self.stop_shares):
            if not 0 <= share <= 1:
                raise ValueError(f"stop shares must lie in [0, 1], got {share}")

    @classmethod
    def fast(cls) -> Config:
        """Fewer iterations per episode and fewer hash seeds, for tests."""
        return cls(job=JobConfig(iterations=4, ping_mesh=True), hash_seeds=20)


@dataclass
class FaultRecord:
    """One episode of the real job and what each detector said about it."""

    fault: Fault | None
    reports: diagnose.Reports  # what the ranks reported (the detectors' only input)
    diagnosis: Diagnosis  # what ran under C4D's name
    baseline: Diagnosis  # the last-arrival baseline
    mesh: Diagnosis  # the ping mesh: per-rank rules, then the dedicated probes' latency matrix
    c4d_correct: bool
    baseline_correct: bool
    mesh_correct: bool
    blamed: int  # the rank the naive slowest-collective rule blames
    blamed_correct: bool
    control: bool  # a negative-control fault (a visible slow compute, seen by both detectors' lateness rule)
    size_ms: float  # the fault's size (NaN for a hang or a healthy episode)
    iterations_to_detection: float  # for a slow fault: iterations C4D needed (NaN: missed)
    detection_latency_s: float  # for a hang: seconds from its onset to the master's stall verdict
    diagnose_s: float  # C4D's compute time on the reports
    slow_fraction: float  # a slow fault's share of the job's speed: 1 − healthy step / this episode's step


@dataclass
class Result:
    """Everything one run measured.

    metrics[arm][metric] for the arms 'c4d' (what ran under its name), 'last_arrival',
    'slowest_collective', 'watchdog', 'ecmp', 'c4p'; records: one FaultRecord per episode; timeline:
    the slow-compute episode's per-rank begin/enter/exit/end of its median iteration (ms);
    matrices: the latency matrix (ms) of the healthy, slow-link, slow-NIC and slow-ingress
    episodes; downtime: error-induced downtime against faults per node per day for both detectors;
    step_ratios: per fabric variant, ECMP's per-hash-seed mean step time / ideal and the plan's.
    """

    config: Config
    seed: int
    metrics: dict[str, dict[str, float]]
    records: list[FaultRecord] = field(default_factory=list)
    timeline: dict[str, object] = field(default_factory=dict)
    matrices: dict[str, np.ndarray] = field(default_factory=dict)
    downtime: dict[str, list[float]] = field(default_factory=dict)
    step_ratios: dict[str, dict[str, object]] = field(default_factory=dict)
    qps_sweep: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    planned_max_load: dict[str, float] = field(default_factory=dict)


def _timeline(job: JobRun) -> dict[str, object]:
    """The per-rank phases (ms from the earliest begin) of the job's median complete iteration."""
    r = job.reports
    full = r.complete_iterations()
    durations = np.nanmax(r.end[:, full], axis=0) - np.nanmin(r.begin[:, full], axis=0)
    t = int(full[np.argsort(durations)[len(durations) // 2]])
    origin = float(np.min(r.begin[:, t]))
    ms = {name: ((getattr(r, name)[:, t] - origin) * 1000.0).tolist() for name in ("begin", "enter", "exit", "end")}
    return {"iteration": t, "culprit": job.fault.rank if job.fault else None, **ms}


def _sessions(config: Config, seed: int) -> list[tuple[list[Fault | None], set[int]]]:
    """The two sessions' episodes, and which episode indices are control faults."""
    job = config.job
    first = draw_faults(job, seed * 2, kinds=(*SLOW_KINDS, "hang"), sizes_ms=config.fault_sizes_ms)
    second = draw_faults(job, seed * 2 + 1, kinds=(*SLOW_KINDS, "comm_hang"), sizes_ms=config.fault_sizes_ms)
    control = [
        Fault(f.kind, f.rank, f.peer, f.start, config.control_size_ms)
        for f in draw_faults(job, seed * 2 + 10_001, kinds=("slow_compute", "slow_compute"))
    ]
    one = [None, *first]
    two = [None, *second[:-1], *control, second[-1]]
    return [(one, set()), (two, set(range(len(second), len(second) + len(control))))]


def ping_mesh(reports: diagnose.Reports, thresholds: Thresholds) -> Diagnosis:
    """The practitioner's alternative: an all-pairs ping mesh, `probe_rounds` probes per connection per iteration.

    Per-rank rules first (who never entered the collective, who arrives late), then the slow cells of the
    probes' latency matrix. A communication hang is found by a mesh run after the stall, whose probe on the
    dead connection never arrives; the toy stands that in by the connections the waiting ranks report
    pending, which are the same, so on hangs the mesh and C4D agree by construction.
    """
    return diagnose.diagnose(reports, thresholds, source="ping_mesh")


def _judge(config: Config, reports: diagnose.Reports, seed: int) -> Diagnosis:
    """What runs under C4D's name reads the reports (see `Config.detector`)."""
    if config.detector == "last_arrival":
        return last_arrival(reports, config.thresholds)
    if config.detector == "ping_mesh":
        return ping_mesh(reports, config.thresholds)
    if config.detector == "c4d_scrambled":
        reports = permute_connections(reports, seed)
    return diagnose.diagnose(reports, config.thresholds)


def _slow_fraction(config: Config, healthy_ms: float, job: JobRun) -> float:
    """A slow fault's share of the job's speed, f = 1 − healthy step / this episode's step, in [0, 0.99].

    Where a step cannot be measured (an episode cut short on a loaded machine leaves no complete
    iteration), the fault's size against the healthy step (or the compute time) stands in for it.
    """
    faulty_ms = step_ms(job.reports)
    if math.isfinite(healthy_ms) and math.isfinite(faulty_ms) and faulty_ms > 0:
        fraction = 1.0 - healthy_ms / faulty_ms
    else:
        base = healthy_ms if math.isfinite(healthy_ms) else config.job.compute_ms
        size = config.job.size_ms(job.fault)
        fraction = size / (base + size)
    return min(max(fraction, 0.0), 0.99)


def _c4d_experiment(config: Config, seed: int) -> tuple[list[FaultRecord], dict, dict]:
    records, matrices, timeline = [], {}, {}
    for session, (faults, control) in enumerate(_sessions(config, seed)):
        jobs = run_session(config.job, faults, seed=seed)
        healthy_ms = step_ms(jobs[0].reports)  # every session starts with a healthy episode
        for index, job in enumerate(jobs):
            fault = job.fault
            started = time.perf_counter()
            verdict = _judge(config, job.reports, seed * 1000 + session * 100 + index)
            diagnose_s = time.perf_counter() - started
            base = last_arrival(job.reports, config.thresholds)
            mesh = ping_mesh(job.reports, config.thresholds)
            blamed = slowest_collective(job.reports)
            kind = fault.kind if fault else "healthy"
            slow = fault is not None and fault.kind in SLOW_KINDS
            itd = np.nan
            if slow and verdict.matches(fault) and config.detector == "c4d":
                itd = iterations_to_detection(job.reports, fault, "c4d", config.thresholds)
            records.append(
                FaultRecord(
                    fault=fault,
                    reports=job.reports,
                    diagnosis=verdict,
                    baseline=base,
                    mesh=mesh,
                    c4d_correct=verdict.matches(fault),
                    baseline_correct=base.matches(fault),
                    mesh_correct=mesh.matches(fault),
                    blamed=blamed,
                    blamed_correct=Diagnosis(EXPECTED_KIND["slow_compute"], (blamed,)).matches(fault),
                    control=index in control,
                    size_ms=config.job.size_ms(fault) if slow else np.nan,
                    iterations_to_detection=itd if slow else np.nan,
                    detection_latency_s=detection_latency_s(job) if fault and not slow else np.nan,
                    diagnose_s=diagnose_s,
                    slow_fraction=_slow_fraction(config, healthy_ms, job) if slow else 0.0,
                )
            )
            if index in control:
                continue
            if kind in ("healthy", "slow_link", "slow_nic", "slow_ingress") and kind not in matrices:
                matrices[kind] = latency_matrix(job.reports)
            if kind == "slow_compute" and not timeline:
                timeline = _timeline(job)
                timeline["lateness_ms"] = enter_lateness_ms(job.reports).tolist()
                timeline["collective_ms"] = collective_time_ms(job.reports).tolist()
    return records, matrices, timeline


def _validation(config: Config, seed: int) -> dict[str, dict[str, float]]:
    """Each detector's share of faults named on a validation session of its own (a healthy episode, then one
    fault of each slow kind, culprits and sizes drawn apart from the scored sessions): the strongest
    alternative is picked on it, per seed."""
    faults = [None, *draw_faults(config.job, seed * 2 + 20_003, kinds=SLOW_KINDS, sizes_ms=config.fault_sizes_ms)]
    jobs = run_session(config.job, faults, seed=seed)[1:]
    judges = {
        "c4d": lambda r: diagnose.diagnose(r, config.thresholds),
        "last_arrival": lambda r: last_arrival(r, config.thresholds),
        "ping_mesh": lambda r: ping_mesh(r, config.thresholds),
    }
    return {
        arm: {"val_accuracy": float(np.mean([judge(j.reports).matches(j.fault) for j in jobs]))}
        for arm, judge in judges.items()
    }


def outcomes(config: Config, records: list[FaultRecord], detector: str) -> tuple[list[Outcome], list[Outcome]]:
    """Each scored fault's outcome for `detector` ('c4d', 'watchdog' or 'perfect'): (stops, slowdowns).

    C4D names a hang at its measured stall latency and a slow fault after the iterations it needed ×
    `iteration_s`, each with its measured diagnosis time; a hang it gets wrong waits for the watchdog and the
    manual search, a slowdown it misses is never named. The watchdog names every stop at its timeout, then
    the manual search, and no slowdown. A perfect detector names every fault at once.
    """
    if detector not in ("c4d", "watchdog", "perfect"):
        raise ValueError(f"detector must be 'c4d', 'watchdog' or 'perfect', got {detector!r}")
    stops, slowdowns = [], []
    for r in records:
        if r.fault is None or r.control:
            continue
        slow = r.fault.kind in SLOW_KINDS
        if detector == "perfect":
            found = (0.0, 0.0)
        elif detector == "watchdog" or not r.c4d_correct:
            found = (math.inf, 0.0) if slow else (config.watchdog_s, config.manual_diagnosis_s)
        elif slow:
            needed = r.iterations_to_detection if np.isfinite(r.iterations_to_detection) else config.job.iterations
            found = (needed * config.iteration_s, r.diagnose_s)
        else:
            found = (r.detection_latency_s, r.diagnose_s)
        if slow:
            slowdowns.append(Outcome(False, *found, slow_fraction=r.slow_fraction))
        else:
            stops.append(Outcome(True, *found))
    return stops, slowdowns


def downtime_model(config: Config, records: list[FaultRecord]) -> dict[str, object]:
    """The downtime model fed with this run's faults: the fault rate at which the watchdog baseline loses
    `baseline_downtime` under the mix `stop_share`, each detector's downtime there, and the curves over the
    fault rate (× `rate_multipliers`) and over the mix (`stop_shares`, at that rate)."""
    fed = {d: outcomes(config, records, d) for d in ("watchdog", "c4d", "perfect")}

    def downtime(detector: str, rate: float, share: float) -> float:
        stops, slowdowns = fed[detector]
        return mixed_downtime(rate, stops, slowdowns, share, config.restart_s, config.checkpoint_interval_s)

    rate = rate_for_downtime(config.baseline_downtime, lambda x: downtime("watchdog", x, config.stop_share))
    rates = [m * rate for m in config.rate_multipliers]
    return {
        "rate": rate,
        "at": {d: downtime(d, rate, config.stop_share) for d in fed},
        "faults_per_node_day": [x * 24.0 / config.n_nodes for x in rates],
        "stop_shares": list(config.stop_shares),
        **{d: [downtime(d, x, config.stop_share) for x in rates] for d in fed},
        **{f"{d}_by_mix": [downtime(d, rate, share) for share in config.stop_shares] for d in fed},
    }


def _detector_metrics(records: list[FaultRecord], correct: str, alarm: str) -> dict[str, float]:
    faulty = [r for r in records if r.fault is not None and not r.control]
    slow = [r for r in faulty if r.fault.kind in SLOW_KINDS]
    healthy = [r for r in records if r.fault is None]
    # faults every detector sees by the same per-rank rule: visible slow compute, a rank that hangs
    visible = [r for r in records if r.control or (r.fault is not None and r.fault.kind == "hang")]
    return {
        "accuracy": float(np.mean([getattr(r, correct) for r in faulty])),
        "slow_detection_rate": float(np.mean([getattr(r, correct) for r in slow])),
        "false_alarm": float(np.mean([getattr(r, alarm).alarm for r in healthy])),
        "control_named": float(np.mean([getattr(r, correct) for r in visible])),
    }


def _c4d_metrics(config: Config, records: list[FaultRecord], model: dict) -> dict[str, dict[str, float]]:
    hangs = [r.detection_latency_s for r in records if r.fault is not None and r.fault.kind not in SLOW_KINDS]
    itd = [r.iterations_to_detection for r in records if np.isfinite(r.iterations_to_detection)]
    faulty = [r for r in records if r.fault is not None and not r.control]
    healthy = [r for r in records if r.fault is None]
    return {
        "c4d": {
            **_detector_metrics(records, "c4d_correct", "diagnosis"),
            "detection_latency_s": float(np.mean(hangs)),
            "iterations_to_detection": float(np.mean(itd)) if itd else float("nan"),
            "diagnose_ms": float(max(r.diagnose_s for r in records) * 1000.0),
            "step_ms": float(np.mean([step_ms(r.reports) for r in healthy])),
            "downtime": model["at"]["c4d"],
        },
        "perfect": {"downtime": model["at"]["perfect"]},
        "last_arrival": _detector_metrics(records, "baseline_correct", "baseline"),
        "ping_mesh": {
            **_detector_metrics(records, "mesh_correct", "mesh"),
            "mesh_ms": float(np.mean([mesh_ms(r.reports) for r in healthy])),
        },
        "slowest_collective": {"accuracy": float(np.mean([r.blamed_correct for r in faulty]))},
        "watchdog": {
            "detection_latency_s": config.watchdog_s,
            "downtime": model["at"]["watchdog"],
            "faults_per_node_day": model["rate"] * 24.0 / config.n_nodes,
        },
    }


def fabric_variant(config: Config, name: str) -> FabricConfig:
    return FabricConfig(**{**config.fabric.__dict__, **VARIANTS[name]})


def _planned(config: Config, flows, fabric: Fabric, fixed: dict, seed: int) -> list[list]:
    """What runs under C4P's name (see `Config.planner`): the plan (one assignment), or, for the falsifier,
    `hash_seeds` draws of a load-blind assignment (every job flow on a uniformly drawn path)."""
    if config.planner == "c4p":
        return [plan_paths(flows, fabric, fixed=fixed, budget=config.search_budget, seed=seed)]
    draws = []
    for h in range(config.hash_seeds):
        paths = random_paths(flows, fabric, seed * 100_003 + h)
        draws.append([fixed.get(i, p) for i, p in enumerate(paths)])
    return draws


def _step(flows, fabric: Fabric, paths, ideal: float) -> float:
    return float(job_step_times(flows, simulate(flows, paths, fabric), ideal).mean())


def _ecmp_steps(config: Config, flows, fabric: Fabric, fixed: dict, seed: int) -> list[float]:
    """Plain ECMP's mean step time / ideal on each of `hash_seeds` hash seeds."""
    ideal = fabric.config.step_bytes
    out = []
    for h in range(config.hash_seeds):
        paths = [fixed.get(i, p) for i, p in enumerate(ecmp_paths(flows, fabric, seed * 100_003 + h))]
        out.append(_step(flows, fabric, paths, ideal))
    return out


def _c4p_experiment(config: Config, seed: int) -> tuple[dict, dict]:
    step_ratios, max_loads = {}, {}
    for name in VARIANTS:
        fabric_config = fabric_variant(config, name)
        fabric = Fabric(fabric_config)
        flows = ring_flows(fabric_config, seed)
        fixed = background_paths(flows, fabric, seed)
        ideal = fabric_config.step_bytes  # every flow at the NIC's line rate of 1
        planned = _planned(config, flows, fabric, fixed, seed)
        plan_step = [_step(flows, fabric, paths, ideal) for paths in planned]
        step_ratios[name] = {"ecmp": _ecmp_steps(config, flows, fabric, fixed, seed), "c4p": float(np.mean(plan_step))}
        max_loads[name] = max(link_loads(flows, planned[0], fabric).values())
    return step_ratios, max_loads


def placement_seeds(config: Config, seed: int) -> dict[str, list[int]]:
    """The job placements of one seed: validation ones (where every arm picks its queue pairs) and test ones."""
    return {
        "val": [10_000_000 + seed * 16 + v for v in range(config.val_placements)],
        "test": [seed * 16 + k for k in range(config.test_placements)],
    }


def _qps_sweep(config: Config, seed: int) -> dict[str, dict[str, list[float]]]:
    """Per arm and split, the mean step time / ideal over the split's placements at every queue-pair count.

    On each placement of the hard fabric: what runs under C4P's name, ECMP with its search (the best modelled
    of `search_budget` hash draws, the planner's budget and model), and plain ECMP (the mean over hash seeds).
    """
    sweep = {arm: {"val": [], "test": []} for arm in HASHING}
    for qps in config.qps_grid:
        fabric_config = FabricConfig(**{**config.fabric.__dict__, **HARD_WORLD, "qps_per_connection": qps})
        fabric = Fabric(fabric_config)
        ideal = fabric_config.step_bytes
        for split, placements in placement_seeds(config, seed).items():
            steps = {arm: [] for arm in HASHING}
            for placement in placements:
                flows = ring_flows(fabric_config, placement)
                fixed = background_paths(flows, fabric, placement)
                planned = _planned(config, flows, fabric, fixed, placement)
                steps["c4p"].append(float(np.mean([_step(flows, fabric, p, ideal) for p in planned])))
                searched = ecmp_search_paths(
                    flows, fabric, fixed=fixed, budget=config.search_budget, seed=placement * 7 + 0xE
                )
                steps["ecmp"].append(_step(flows, fabric, searched, ideal))
                steps["ecmp_hash"].append(float(np.mean(_ecmp_steps(config, flows, fabric, fixed, placement))))
            for arm in HASHING:
                sweep[arm][split].append(float(np.mean(steps[arm])))
    return sweep


def _hashing_metrics(config: Config, sweep: dict) -> dict[str, dict[str, float]]:
    """Per arm: the queue pairs it picked on validation (least mean step time, ties to fewer), its validation and
    test step time there."""
    out = {}
    for arm in HASHING:
        k = int(np.argmin(sweep[arm]["val"]))
        out[arm] = {
            "qps": float(config.qps_grid[k]),
            "val_step_ratio": sweep[arm]["val"][k],
            "tuned_step_ratio": sweep[arm]["test"][k],
        }
    return out


def _c4p_metrics(step_ratios: dict, max_loads: dict) -> dict[str, dict[str, float]]:
    base, hard = step_ratios["non-blocking fabric"], step_ratios[HARD]
    return {
        "ecmp": {
            "step_ratio": float(np.mean(base["ecmp"])),
            "step_ratio_p95": float(np.percentile(base["ecmp"], 95)),
            "hard_step_ratio": float(np.mean(hard["ecmp"])),
            "bonded_step_ratio": float(np.mean(step_ratios["bonded dual-port NICs"]["ecmp"])),
            "link_down_step_ratio": float(np.mean(step_ratios["one leaf-spine link down"]["ecmp"])),
        },
        "c4p": {
            "step_ratio": base["c4p"],
            "hard_step_ratio": hard["c4p"],
            "hard_cut": 1.0 - hard["c4p"] / float(np.mean(hard["ecmp"])),
            "bonded_step_ratio": step_ratios["bonded dual-port NICs"]["c4p"],
            "link_down_step_ratio": step_ratios["one leaf-spine link down"]["c4p"],
            "max_planned_load": max_loads["non-blocking fabric"],
        },
    }


def run(config: Config | None = None, *, seed: int = 0) -> Result:
    """Run the real job under every fault, diagnose each episode both ways, model the downtime, and
    compare ECMP with planned paths on the fabric variants."""
    config = config or Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a c4.Config, got {type(config).__name__}")
    seed_everything(seed)
    result = Result(config=config, seed=seed, metrics={})
    if "c4d" in config.parts:
        result.records, result.matrices, result.timeline = _c4d_experiment(config, seed)
        model = downtime_model(config, result.records)
        result.metrics |= _c4d_metrics(config, result.records, model)
        for arm, metrics in _validation(config, seed).items():
            result.metrics[arm].update(metrics)
        result.downtime = {k: v for k, v in model.items() if k not in ("rate", "at")}
    if "c4p" in config.parts:
        result.step_ratios, result.planned_max_load = _c4p_experiment(config, seed)
        result.metrics |= _c4p_metrics(result.step_ratios, result.planned_max_load)
        result.qps_sweep = _qps_sweep(config, seed)
        tuned = _hashing_metrics(config, result.qps_sweep)
        for arm, metrics in tuned.items():
            result.metrics.setdefault(arm, {}).update(metrics)
    return result
