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
  t(g, m) = α + β·m/g + [g > 1]·(γ + δ·(g − 1)) (compute of the local batch, then a synchronization
  that grows with the GPU count), statistical efficiency E(m) = (φ + m₀)/(φ + m) with φ the gradient
  noise scale, and *goodput* = throughput × efficiency. FaPES's model is fitted per job, only from
  the step times it has observed (ridge regression towards a population prior), and explores at
  most twice the GPUs it has seen, as Pollux does.
- The prediction board is a seasonal forecast: yesterday's hourly profile, rescaled by the ratio
  of the rate seen in the last minutes to yesterday's at the same hour, plus a safety margin.
- Cost-aware reclaim takes GPUs back by *scaling in* the jobs whose predicted goodput loss per GPU
  is smallest, after a checkpoint (no work lost); the naive reclaim kills the most recently started
  jobs holding loaned GPUs, which lose the work since their last periodic checkpoint.
- Allocation is greedy by marginal predicted speed-up (as in Optimus/AFS-style elastic schedulers).

**What the toy keeps.** A SimPy discrete-event simulation: requests (Poisson arrivals at a diurnal
rate with correlated noise) served first-come first-served by replicas, one per inference GPU, with
a latency SLO counted per request; a trace of training jobs (arrivals, requested GPUs, work, a
Pollux model each); reclaiming and rescaling take time (a checkpoint, a restart) and lending hands a
GPU over only after its last request finished. Four policies on the same trace, GPUs and seed:
static (FIFO, requested GPUs), elastic within the training pool, loaning with naive reclaim, FaPES.

**What it drops.** Real GPUs and frameworks, multi-GPU inference replicas, placement and network
topology, heterogeneous GPUs, other hyper-parameters than the batch size, a learning-rate scaling
rule, and the serverless function layer. Times are minutes of a simulated day.
"""

from .cluster import (
    ARMS,
    DAY,
    POLICY_LABELS,
    TIMELINE_COLUMNS,
    Cluster,
    Config,
    Job,
    Trace,
    diurnal_rate,
    make_trace,
)
from .experiment import (
    CLAIMS,
    GOODPUT_MARGIN,
    JCT_MARGIN,
    LOAN_MARGIN,
    LOW_LOAD_SHARE,
    MODEL_MARGIN,
    SLO_LIMIT,
    Result,
    fig_gpus_over_day,
    fig_jct,
    fig_load_sweep,
    loan_gain,
    reference_arrays,
    run,
)
from .inference import (
    PredictionBoard,
    ReplicaPool,
)
from .performance import (
    PerformanceModel,
    goodput_rate,
    held_out_error,
    statistical_efficiency,
    step_time,
)
from .simulation import (
    SimResult,
    allocate,
    simulate,
)

__all__ = [
    "ARMS",
    "CLAIMS",
    "DAY",
    "GOODPUT_MARGIN",
    "JCT_MARGIN",
    "LOAN_MARGIN",
    "LOW_LOAD_SHARE",
    "MODEL_MARGIN",
    "POLICY_LABELS",
    "SLO_LIMIT",
    "TIMELINE_COLUMNS",
    "Cluster",
    "Config",
    "Job",
    "PerformanceModel",
    "PredictionBoard",
    "ReplicaPool",
    "Result",
    "SimResult",
    "Trace",
    "allocate",
    "diurnal_rate",
    "fig_gpus_over_day",
    "fig_jct",
    "fig_load_sweep",
    "goodput_rate",
    "held_out_error",
    "loan_gain",
    "make_trace",
    "reference_arrays",
    "run",
    "simulate",
    "statistical_efficiency",
    "step_time",
]
