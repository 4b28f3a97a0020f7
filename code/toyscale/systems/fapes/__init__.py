"""FaPES: lend idle inference GPUs to training, and take them back before the SLO breaks.

*FaPES: Enabling Efficient Elastic Scaling for Serverless Machine Learning Platforms.*
ACM SoCC 2024. Only the abstract is public; this module is built from it and from the peers it
names, and says which is which.

**The problem.** A serverless GPU platform runs two virtual clusters: an inference pool sized for
the daily peak of requests, and a training pool where jobs queue for the GPUs they asked for.
At night most inference GPUs idle while training jobs wait. Users also pick GPU counts and batch
sizes by hand, and distributed training is very sensitive to both.

**From the abstract (FaPES's mechanisms).** GPUs are *loaned* between the two virtual clusters;
loaned inference GPUs are *reclaimed on demand with minimal preemption overhead* so that inference
keeps its SLO; for training, the *GPU allocation and the hyper-parameters (here the batch size)
are chosen jointly* from an *ML-based performance model* and a *resource usage prediction board*
(a forecast of inference demand). The paper reports, on 128 GPUs, up to 24.8 % lower job completion
time (JCT) and 1.8× goodput against representative elastic scaling schemes.

**Reconstructed here (the abstract gives no details).**
- The performance model is Pollux's (Qiao et al., OSDI 2021): step time
  t(g, m) = α + β·m/g + [g > 1]·(γ + δ·(g − 1)), statistical efficiency E(m) = (φ + m₀)/(φ + m)
  with φ the gradient noise scale, and goodput = throughput × efficiency. It is fitted per job, only
  from the step times the job has reported (ridge regression towards a population prior), and
  explores at most twice the GPUs it has seen, as Pollux does. The true step time has a term the
  fit lacks (contention, κ·(g − 1)²), so the model is mis-specified and its accuracy is measured.
- The prediction board is a seasonal forecast: yesterday's hourly profile, rescaled by the ratio
  of the rate seen in the last minutes to yesterday's at the same hour.
- Cost-aware reclaim takes GPUs back by *scaling in* the jobs whose predicted goodput loss per GPU
  is smallest, after a checkpoint (no work lost); the naive reclaim kills the most recently started
  jobs holding loaned GPUs, which lose the work since their last periodic checkpoint.
- Allocation is greedy by marginal predicted speed-up (as in Optimus/AFS-style elastic schedulers).

**What the toy keeps** (`cluster`, `inference`, `simulation`). A SimPy discrete-event simulation
in minutes: a trace of training jobs (arrivals, requested GPUs, work, a hidden Pollux model each);
inference requests in seconds (Poisson arrivals at a diurnal rate with correlated noise, a 6 s
latency SLO) served first-come first-served by one replica per inference GPU, their latencies
computed exactly from the replicas over time; moving a GPU takes minutes (a checkpoint or a kill,
a hand-over, a restart). Jobs, yesterday's history and today's requests come from independent
random streams. Five policies on the same trace: static (FIFO, requested GPUs), Optimus-like
elastic (GPUs only), Pollux-like elastic (GPUs and batch together), Pollux-like with naive lending
(replicas sized from the last minutes, reclaim by kills) and FaPES (Pollux-like with lending sized
by the board, the same headroom, and cost-aware reclaim).

**How it is compared** (`experiment`, `claims`). The headline is split: FaPES against Optimus-like
elastic scaling, and what lending adds over Pollux-like scaling, the strongest baseline that does
not lend. The SLO claim compares FaPES with naive lending, paired, on the share of requests over
the SLO and on p99 latency. Two negative controls: a low training load, where lending has nothing
to add, and an evening burst the board has never seen, where its forecast has nothing to foresee.
Margins come from calibration seeds; every expected effect has two falsifiers (`FALSIFIERS`); two
boundary sweeps (`results`) show where each effect lives: over the training load, and over the
burstiness of the inference traffic.

**What the toy finds.** The claims table says which claims hold, with the numbers. In short:
FaPES shortens jobs against Optimus-like scaling, mostly through the joint batch choice that
Pollux-like scaling shares; lending with cost-aware reclaim adds a smaller cut on top, which grows
with the training load and vanishes when the training pool has GPUs to spare (with reclaim by kills
instead, part of it remains); the board keeps
fewer requests over the SLO than naive lending, but not on a burst it has never seen; the fitted
model beats its prior on configurations a job never ran, despite the term it lacks; the paper's
1.8× goodput is not reproduced.

**What it drops.** Real GPUs and frameworks, multi-GPU inference replicas, placement and network
topology, heterogeneous GPUs, other hyper-parameters than the batch size, a learning-rate scaling
rule, and the serverless function layer.
"""

from .claims import CLAIMS, FALSIFIERS
from .cluster import (
    ARMS,
    DAY,
    METHODS,
    POLICY_LABELS,
    STREAMS,
    TIMELINE_COLUMNS,
    Cluster,
    Config,
    Job,
    Trace,
    diurnal_rate,
    make_trace,
    streams,
)
from .experiment import (
    BURST_ARMS,
    ELASTIC_ARMS,
    LOW_LOAD_ARMS,
    MATCHED_ARMS,
    Result,
    forecast_error,
    jct_cut,
    lending_gain,
    load_boundary,
    metrics_of,
    noise_boundary,
    run,
    slo_gain,
    violation_cut,
)
from .figures import fig_gpus_over_day, fig_jct, fig_latency
from .inference import PredictionBoard, serve
from .performance import (
    PerformanceModel,
    goodput_rate,
    held_out_error,
    statistical_efficiency,
    step_time,
)
from .simulation import SimResult, allocate, simulate


def reference_arrays() -> dict:
    """The default trace at seed 0 as integer arrays, as its data card fingerprints."""
    import numpy as np

    trace = make_trace(Config(), seed=0)
    jobs = trace.jobs
    return {
        "arrival_s": np.array([round(j.arrival * 60) for j in jobs], dtype=np.int64),
        "gpus_requested": np.array([j.gpus_requested for j in jobs], dtype=np.int64),
        "m0": np.array([j.m0 for j in jobs], dtype=np.int64),
        "work": np.array([round(j.work) for j in jobs], dtype=np.int64),
        "requests_per_minute": trace.counts.astype(np.int64),
        "service_ms": np.round(1000 * trace.service_times).astype(np.int64),
    }


__all__ = [
    "ARMS",
    "BURST_ARMS",
    "CLAIMS",
    "DAY",
    "ELASTIC_ARMS",
    "FALSIFIERS",
    "LOW_LOAD_ARMS",
    "MATCHED_ARMS",
    "METHODS",
    "POLICY_LABELS",
    "STREAMS",
    "TIMELINE_COLUMNS",
    "Cluster",
    "Config",
    "Job",
    "PerformanceModel",
    "PredictionBoard",
    "Result",
    "SimResult",
    "Trace",
    "allocate",
    "diurnal_rate",
    "fig_gpus_over_day",
    "fig_jct",
    "fig_latency",
    "forecast_error",
    "goodput_rate",
    "held_out_error",
    "jct_cut",
    "lending_gain",
    "load_boundary",
    "make_trace",
    "metrics_of",
    "noise_boundary",
    "reference_arrays",
    "run",
    "serve",
    "simulate",
    "slo_gain",
    "statistical_efficiency",
    "step_time",
    "streams",
    "violation_cut",
]
