"""Victor: video-language pre-training whose proxy tasks teach the order of events.

Chenyi Lei, Shixian Luo, Yong Liu, Wanggui He, Jiamang Wang, Guoxin Wang, Haihong Tang, Chunyan
Miao and Houqiang Li. *Understanding Chinese Video and Language via Contrastive Multimodal Pre-Training.*
ACM Multimedia 2021 (arXiv:2104.09411).

**The problem.** An e-commerce platform holds millions of short product videos with Chinese
descriptions and wants one model for retrieval, classification, captioning and
recommendation. Pre-training in the style of VideoBERT learns which words co-occur with which
frames; a description that says *what happens first and what next* needs more than that.

**The method.** A query network (text, video and cross encoders) and a momentum copy of it
(MoCo style) with memory queues of features. Proxy tasks: masked language modeling (MLM);
masked sentence-order modeling (MSOM: cut the sentence into segments, shuffle them, classify
the permutation); masked frame-order modeling (MFOM: the same for the frames of a video);
intra- and inter-video masked frame modeling (MFM: predict a masked frame's feature,
contrastively, against the other frames of its video and of other videos); and dual
video–sentence alignment, InfoNCE in both directions against the momentum encoder's queues.
Trained on Alivol-10M (10M+ videos, not public); the paper reports gains over VideoBERT and
UniVL on retrieval and other downstream tasks (numbers not recovered for this book).

**What the toy keeps.** Videos of six frames in which three different sklearn digits appear
one after another, with Chinese captions that state the order (数字3先出现，然后是7，最后是1);
test videos use digit images that no training video contains. Frame features come from a
frozen PCA fitted on training digits only (the stand-in for a pre-extracted backbone). One-layer
transformers for text, video and the cross encoder; every proxy task above with its head and
loss; a momentum encoder with text and video queues whose false negatives (entries with the
query's caption) are masked by caption id. Five arms with one architecture and only the losses
changed, trained for equal compute: co-occurrence only (MLM + in-batch alignment),
+ sentence order, + frame order and masked frames, the full set with queue alignment, and an
order-blind bag-of-digits control. Metrics from unimodal pooled features: text→video R@1,
R@5 and median rank over a gallery of test videos, and group-6 accuracy (pick the right video
among the 6 orderings of the same three digits; chance is 1/6).

**What it drops.** Real video, a learned visual backbone, Chinese word segmentation, the
frame queue (inter-video negatives are the other videos of the batch), the downstream
fine-tuning tasks, and the scale (a 6-frame video, d = 32, seconds of CPU training).

**The frame-order task in this world.** Any order of three digits is a valid video, so a
shuffled video alone cannot reveal its permutation; the sentence has to. The task therefore
asks the sentence's pooled feature to pick the video's true segment order among its six
orders (contrastively, like Victor's other tasks). It is the only task that shows a model
reordered videos, the training-image twin of group-6; the claim checks that the skill
transfers to unseen images and to unimodal retrieval features.

**What it finds.** At equal compute, the order tasks roughly double group-6 accuracy over
co-occurrence only, on every seed, without the bimodal outcomes an earlier prototype saw (but
no arm solves group-6 at this budget); sentence order alone, solvable from the order words,
does not help; queues add nothing to group-6 beside an in-batch term (kept because queue-only
alignment collapsed in the prototype); and co-occurrence, with twice the steps on alignment,
retrieves better, so the paper's retrieval gain is not reproduced.
"""

from .claims import (
    CHANCE,
    CHANCE_TOLERANCE,
    CLAIMS,
    GROUP6_MARGIN,
    solved_fraction,
)
from .data import (
    CAPTION_LENGTH,
    CHARS,
    CLS,
    MASK,
    N_EVENTS,
    N_FRAMES,
    PERMUTATIONS,
    SEGMENT_LENGTHS,
    SEGMENT_TEMPLATES,
    SPECIALS,
    TOKEN,
    TRIPLET_ID,
    TRIPLETS,
    VOCAB,
    FrameEncoder,
    Group6,
    VideoBatch,
    bag_oracle_scores,
    caption,
    caption_segments,
    fit_frame_encoder,
    group6_accuracy,
    make_group6,
    make_videos,
    order_oracle_scores,
    reorder_segments,
    tokenize,
)
from .experiment import (
    SOLVED,
    Result,
    retrieval_metrics,
    retrieval_ranks,
    run,
)
from .figures import (
    ARM_LABELS,
    arm_colors,
    fig_examples,
    fig_group6_curves,
)
from .losses import (
    MemoryQueue,
    alignment_loss,
    frame_order_loss,
    info_nce,
    mask_caption,
    masked_frame_loss,
    masked_language_modeling,
    momentum_update,
    order_loss,
    queue_alignment_loss,
    shuffle_caption,
)
from .model import (
    CrossEncoder,
    TextEncoder,
    Victor,
    VideoEncoder,
)
from .results import (
    ORACLES,
    REFERENCE_SEEDS,
    RESULT_METRICS,
    reference_arrays,
    reference_results,
    results_from_arrays,
    video_reference_arrays,
)
from .training import (
    ARMS,
    BAG_SHARE,
    PASS_COST,
    TASKS,
    Config,
    TrainedArm,
    arm_steps,
    group6_scores,
    pooled_features,
    step_cost,
    train_arm,
    training_losses,
)

__all__ = [
    "ARMS",
    "ARM_LABELS",
    "BAG_SHARE",
    "CAPTION_LENGTH",
    "CHANCE",
    "CHANCE_TOLERANCE",
    "CHARS",
    "CLAIMS",
    "CLS",
    "GROUP6_MARGIN",
    "MASK",
    "N_EVENTS",
    "N_FRAMES",
    "ORACLES",
    "PASS_COST",
    "PERMUTATIONS",
    "REFERENCE_SEEDS",
    "RESULT_METRICS",
    "SEGMENT_LENGTHS",
    "SEGMENT_TEMPLATES",
    "SOLVED",
    "SPECIALS",
    "TASKS",
    "TOKEN",
    "TRIPLETS",
    "TRIPLET_ID",
    "VOCAB",
    "Config",
    "CrossEncoder",
    "FrameEncoder",
    "Group6",
    "MemoryQueue",
    "Result",
    "TextEncoder",
    "TrainedArm",
    "Victor",
    "VideoBatch",
    "VideoEncoder",
    "alignment_loss",
    "arm_colors",
    "arm_steps",
    "bag_oracle_scores",
    "caption",
    "caption_segments",
    "fig_examples",
    "fig_group6_curves",
    "fit_frame_encoder",
    "frame_order_loss",
    "group6_accuracy",
    "group6_scores",
    "info_nce",
    "make_group6",
    "make_videos",
    "mask_caption",
    "masked_frame_loss",
    "masked_language_modeling",
    "momentum_update",
    "order_loss",
    "order_oracle_scores",
    "pooled_features",
    "queue_alignment_loss",
    "reference_arrays",
    "reference_results",
    "reorder_segments",
    "results_from_arrays",
    "retrieval_metrics",
    "retrieval_ranks",
    "run",
    "shuffle_caption",
    "solved_fraction",
    "step_cost",
    "tokenize",
    "train_arm",
    "training_losses",
    "video_reference_arrays",
]
