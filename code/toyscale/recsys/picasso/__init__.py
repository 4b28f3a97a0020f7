"""PICASSO: packing, interleaving and caching to keep recommender training busy.

Yuanxing Zhang, Langshi Chen, Siran Yang, Man Yuan, Huimin Yi, Jie Zhang, Jiamang Wang, Jianbo
Dong, Yunlong Xu, Yue Song, Yong Li, Di Zhang, Wei Lin, Lin Qu and Bo Zheng. *PICASSO: Unleashing
the Potential of GPU-centric Training for Wide-and-deep Recommender Systems.* ICDE 2022
(arXiv:2204.04903).

**The problem.** A wide-and-deep CTR model reads hundreds of categorical feature fields. Each
field has its own embedding table, so one training step launches hundreds of tiny, memory-bound
lookups (and their backward passes and optimizer updates) before a small dense network runs.
The hardware spends its time in dispatch and waiting on memory, not in arithmetic: the paper
finds GPUs in such jobs far from busy.

**The method.** Three system-level fixes that leave the model's mathematics unchanged:

- *Packing.* Tables with the same attributes (dimension, combiner, initializer, optimizer) are
  merged into one table; field f's rows live at rows o_f .. o_f + V_f − 1, with o_f = Σ_{g<f} V_g,
  and the F lookups become one: e_{n,f} = Σ_l W[o_f + id_{n,f,l}].
- *Interleaving.* Stages that use different resources (reading and parsing data, embedding
  lookups and communication, dense compute) are pipelined over micro-batches, so that the step
  time approaches that of the slowest stage instead of the sum of the stages (D-interleaving);
  lookups of different features are interleaved inside the embedding layer too (K-interleaving).
- *Caching.* Feature ids are heavily skewed, so a small, fast tier that holds the hottest
  embeddings serves most lookups.

The paper reports up to 6× throughput over state-of-the-art baselines on GPU clusters, hardware
utilization up by an order of magnitude, and daily training jobs 7 hours shorter.

**What the toy keeps.** A wide-and-deep model over F multi-hot fields from
`toyscale.recsys.world.make_field_log`; per-field `EmbeddingBag` tables against one
`PackedEmbedding` (outputs and gradients identical, tested), timed phase by phase against per-field
tables trained by the same multi-tensor Adam; a real producer stage that parses raw byte records
and hashes 64-bit feature keys in NumPy, feeding a bounded queue from a thread, against the serial
loop (the trained model identical, tested); a two-tier table whose training is bit-identical to
one table (tested), and the rows it moves over the slow link per step under a Zipf id stream whose
hot set drifts, with LRU and a static hot set (profiled, or recounted every few steps) each tuned on
a validation stream. Every speed-up is
measured by `benchmark`, which alternates A and B runs and reports medians.

**What it drops, and what the numbers mean.** No GPU, no cluster, no parameter servers, no
communication, no K-interleaving. On a CPU the speed-ups measure *dispatch and memory overheads*
(Python and operator launch cost per table and per optimizer tensor, the parser's time), not GPU
kernel launches or PCIe traffic. The cache is measured in rows moved, not in time: both tiers live
in the same memory here, and no cache is ever timed by an injected sleep. Timings on a shared
machine are noisy; margins come from calibration seeds measured on the loaded build machine.

**What the toy finds.** The claims table says which claims hold, with the numbers. In short:
packing speeds up a training step, more with more fields, against the strongest per-field
baseline, through the forward lookups and the optimizer's tensor count more than the backward;
once the hot set drifts as the paper's premise has it, LRU keeps more traffic off the slow link
than a tuned static hot set, and with a hot set that holds still the static set wins; the fast tier
cuts the slow-link traffic on skewed ids (by less than its share of the lookups) and not on uniform
ones; interleaving cannot be measured on two shared cores.
"""

from .caching import (
    POLICIES,
    SingleTable,
    TwoTierEmbedding,
    drifting_stream,
    lru_hits,
    slow_tier_rows,
    static_hits,
    static_top_k,
    zipf_top_share,
)
from .claims import CLAIMS, DRIFT_MARGIN, FALSIFIERS, GROWTH_MARGIN, PACKING_MARGIN, TRAFFIC_FLOOR
from .experiment import (
    DRIFT_POINTS,
    PARTS,
    REGIME_DRIFT,
    SKEW_POINTS,
    Config,
    Result,
    drift_delta,
    hidden_fraction,
    measure_packing,
    measure_pipeline,
    measure_traffic,
    run,
    skew_delta,
    traffic_cut,
)
from .figures import fig_packing, fig_phases, fig_timeline, fig_traffic
from .interleaving import KEY_BYTES, Event, RawRecords, encode_records, parse_and_hash, train_pipeline
from .packing import FieldBags, PackedEmbedding, PackedGroups, WideAndDeep, click_loss, packed_copy
from .timing import PHASES, Timing, benchmark, training_steps

__all__ = [
    "CLAIMS",
    "DRIFT_MARGIN",
    "DRIFT_POINTS",
    "FALSIFIERS",
    "GROWTH_MARGIN",
    "KEY_BYTES",
    "PACKING_MARGIN",
    "PARTS",
    "PHASES",
    "POLICIES",
    "REGIME_DRIFT",
    "SKEW_POINTS",
    "TRAFFIC_FLOOR",
    "Config",
    "Event",
    "FieldBags",
    "PackedEmbedding",
    "PackedGroups",
    "RawRecords",
    "Result",
    "SingleTable",
    "Timing",
    "TwoTierEmbedding",
    "WideAndDeep",
    "benchmark",
    "click_loss",
    "drift_delta",
    "drifting_stream",
    "encode_records",
    "fig_packing",
    "fig_phases",
    "fig_timeline",
    "fig_traffic",
    "hidden_fraction",
    "lru_hits",
    "measure_packing",
    "measure_pipeline",
    "measure_traffic",
    "packed_copy",
    "parse_and_hash",
    "run",
    "skew_delta",
    "slow_tier_rows",
    "static_hits",
    "static_top_k",
    "traffic_cut",
    "train_pipeline",
    "training_steps",
    "zipf_top_share",
]
