"""Fangorn: a job graph that reshapes itself from what the data turn out to be.

Yingda Chen, Jiamang Wang, Yifeng Lu, Ying Han, Zhiqiang Lv, Xuebin Min, Hua Cai, Wei Zhang,
Haochuan Fan, Chao Li, Tao Guan, Wei Lin, Yangqing Jia and Jingren Zhou. *Fangorn: Adaptive
Execution Framework for Heterogeneous Workloads on Shared Clusters.* PVLDB 14(12), 2021.

**The problem.** A distributed job is planned before it runs, from estimates: how many rows a
filter keeps, how large a join side is, how evenly keys spread. The estimates are often wrong,
and a plan fixed up front pays for every error: near-empty tasks after a selective filter, one
straggling task that holds a hot key, a shuffle join where the side would have fit in every
task's memory.

**The idea.** Fangorn models a job as a *mutable graph*: vertices are stages of tasks, edges are
data movements, and pluggable components read the statistics each stage reports and reshape the
graph before the next stage runs. The *parallelism* plug-in coalesces small partitions and
splits skewed ones; the *join* plug-in resolves a conditional branch of the logical plan
(broadcast or shuffle) from the real size of a side; the *execution-mode* plug-in runs a
sub-graph either in batch on on-demand resources or as a "bubble" on warm, long-running workers.
The paper reports tens of millions of jobs a day, dynamic adjustment removing about a billion
scheduled task instances in one day, and bubble execution speeding up millions of jobs by over 30 %.

**What the toy keeps** (`graph`, `cluster`). A real executor over numpy tables: map → shuffle →
reduce with a group-by aggregation and an optional join, run on threads, each map task reporting
rows per shuffle bucket; a map-side combiner wherever the aggregate directly follows the map (Hive's
rule: kept where it at least halves the rows); the three plug-ins acting on those statistics, the
coalescing bubble-aware (a post-shuffle stage that would run as a bubble is spread over the warm
pool); an exact integer result that every plan must reproduce. The hot key sits in a skewed shuffle
join, where no combiner applies. Each task's rows are replayed in a SimPy cluster of 64 slots and 16
warm workers with a committed cost model (per-row costs measured once, a checksummed artifact, so a
seed repeats its numbers on any machine), an assumed on-demand start latency, and jobs alone or
sharing the cluster.

**How it is compared** (`experiment`, `claims`). The regime is an ad-hoc job: it has not run
before, so a static plan has the catalog's estimates only. The static alternatives are a grid of
fixed reduce parallelisms (bubbles wherever the post-shuffle stage fits the warm pool) and a static
optimizer that applies the plug-ins' own rules to the estimates (`graph.optimize`), each tuned over
eight configurations on validation jobs, as adaptive's coalescing target is; the stronger of the
two on validation is the baseline, picked per seed. The claims read test jobs. The hot-key split
and the join branch are credited against adaptive with that plug-in off. A negative control
(uniform keys, against the grid's plan tuned on that job), a mechanism-off falsifier (stale
statistics) and each alternative in adaptive's place; four boundary sweeps (`results`): the key
skew, the error of the optimizer's estimate, the job's history (a recurring job, planned by a
history-based optimizer from its previous run's statistics) and the assumed start latency.

**What the toy finds.** The claims table says which claims hold, with the numbers; the prose of
the chapter glues them. What it cannot show, and why, is in each claim's reason.

**What it drops.** Real clusters, disks and networks: costs beyond the measured per-row work
(start latency, scheduling) are assumptions stated in `Cluster`; the bubble's pipelining overlap
is not modeled, only its warm start and the workers it holds.
"""

from . import cluster, graph
from .claims import CLAIMS, FALSIFIERS, FAR_OFF, NEAR_ORACLE
from .cluster import Cluster, CostModel, Replay, calibrate, committed_costs, simulate, simulate_jobs, task_seconds
from .experiment import (
    ABLATIONS,
    ADAPTIVE,
    BEST_STATIC,
    ESTIMATE_POINTS,
    GRID,
    HISTORIES,
    HISTORY,
    HISTORY_POINTS,
    OPTIMIZER,
    ORACLE,
    PER_JOB,
    SKEW_POINTS,
    START_POINTS,
    TARGET_FACTORS,
    Config,
    Record,
    Result,
    adaptive_plans,
    cut,
    estimate_delta,
    geomean,
    grid_plans,
    history_delta,
    optimizer_plans,
    policies,
    run,
    skew_delta,
    start_delta,
    static_plans,
    tasks,
)
from .figures import fig_graph, fig_job_times, fig_replay_check, fig_task_times
from .graph import (
    WORKLOADS,
    Execution,
    Knobs,
    Plan,
    Stage,
    Workload,
    execute,
    make_workload,
    optimize,
    reference_result,
)

__all__ = [
    "ABLATIONS",
    "ADAPTIVE",
    "BEST_STATIC",
    "CLAIMS",
    "ESTIMATE_POINTS",
    "FALSIFIERS",
    "FAR_OFF",
    "GRID",
    "HISTORIES",
    "HISTORY",
    "HISTORY_POINTS",
    "NEAR_ORACLE",
    "OPTIMIZER",
    "ORACLE",
    "PER_JOB",
    "SKEW_POINTS",
    "START_POINTS",
    "TARGET_FACTORS",
    "WORKLOADS",
    "Cluster",
    "Config",
    "CostModel",
    "Execution",
    "Knobs",
    "Plan",
    "Record",
    "Replay",
    "Result",
    "Stage",
    "Workload",
    "adaptive_plans",
    "calibrate",
    "cluster",
    "committed_costs",
    "cut",
    "estimate_delta",
    "execute",
    "fig_graph",
    "fig_job_times",
    "fig_replay_check",
    "fig_task_times",
    "geomean",
    "graph",
    "grid_plans",
    "history_delta",
    "make_workload",
    "optimize",
    "optimizer_plans",
    "policies",
    "reference_result",
    "run",
    "simulate",
    "simulate_jobs",
    "skew_delta",
    "start_delta",
    "static_plans",
    "task_seconds",
    "tasks",
]
