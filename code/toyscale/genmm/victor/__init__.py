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
The paper also names "conflicts between video–sentence alignment and other proxy tasks",
which its design resolves. Trained on Alivol-10M (10M+ videos, not public); it reports gains
over VideoBERT and UniVL on retrieval and other downstream tasks (numbers not recovered here).

**What the toy keeps.** Videos of six frames in which k different sklearn digits (3 by
default) appear one after another, with Chinese captions that name them in order, every
segment alike (数字3出现，数字7出现，数字1出现: no order words, so sentence order cannot be read
from the text alone); the digit images split into train, validation and test pools, and
test videos show only test images. Frame features come from a frozen PCA fitted on the
training pool (the stand-in for a pre-extracted backbone). One-layer transformers for text,
video and the cross encoder; every proxy task above with its head and loss, MSOM in the
cross encoder with the video; a momentum encoder with text and video queues whose false
negatives are masked by caption id.

**How it is compared** (`training`, `experiment`): eight arms with one architecture and only
the losses changed, at equal compute: co-occurrence only (MLM + in-batch alignment), each
order task alone, all three, the full Victor with queues (its alignment weight split between
the in-batch and the queue term, so every arm aligns alike), co-occurrence at the Victor arm's
steps, and a negative control (the frame-order arm on captions whose digit order is random).
Every arm's learning rate is chosen over the same grid on validation videos (`tuning`; the fast
test config is tuned apart, at its own budget); each
keeps two checkpoints, its best validation group-6 (the order claims) and its best validation
R@1 (the retrieval claims); the test sets are read once per checkpoint. Metrics from unimodal
pooled features: group-6 accuracy (pick the right video among the six orders of the same
segments; chance 1/6), R@1 over a *twin gallery* of separate videos of the same digits in
every order (the order question out of the training task's format), and text→video R@1, R@5
over a gallery of distinct captions. Margins come from calibration seeds (`claims`), and a
sweep over the segments per video (`segments_boundary`) shows where the order gain lives.

**The frame-order task in this world.** Any order of the digits is a valid video, so a
shuffled video alone cannot reveal its permutation; the sentence has to. The task therefore
asks the sentence's pooled feature to pick the video's true segment order among its
reorderings: contrastive training on reordered hard negatives, defined by the caption, which
is the group-6 test's own format run on training images. The twin gallery is the test that
is not its twin.

**What the toy finds** (the calibration record and the book's seeds agree). One task carries the
order gain: frame ordering, contrastive training on the video's own segments reordered, raises
group-6 far over co-occurrence at equal compute, and the gain holds among separate twin videos,
out of the task's format. The full Victor beats co-occurrence on group-6 only through it: sentence
order (in the cross encoder) and masked frames leave group-6 where co-occurrence has it or lower,
and bundled with frame ordering they dilute it, so the tasks do not add up. The order tasks cost
retrieval: at the Victor arm's own steps co-occurrence alone retrieves better (the paper's
"conflicts", present here and not resolved by the queue), and Victor does not beat co-occurrence
at retrieval. Trained on captions in random digit order, the frame-order arm sits at chance; with
one segment per video there is no order and no gain.

**What it drops.** Real video, a learned visual backbone, Chinese word segmentation, the
frame queue (inter-video negatives are the other videos of the batch), the downstream
fine-tuning tasks, and the scale (a 6-frame video, d = 32, seconds of CPU training).
"""

from .claims import (
    CLAIMS,
    CONFLICT_TOLERANCE,
    CONTROL_BAND,
    FALSIFIERS,
    GROUP6_MARGIN,
    TWIN_MARGIN,
    chance,
    solved_fraction,
)
from .data import (
    CHARS,
    CLS,
    GROUP_SIZE,
    MASK,
    N_FRAMES,
    SEGMENT_TEMPLATE,
    SEGMENTS,
    SPECIALS,
    TOKEN,
    VOCAB,
    FrameEncoder,
    Group6,
    Layout,
    Pool,
    Pools,
    VideoBatch,
    bag_oracle_scores,
    candidate_orders,
    caption,
    caption_ids,
    caption_length,
    caption_tokens,
    distinct_events,
    fit_frame_encoder,
    group6_accuracy,
    image_pools,
    layout,
    make_group6,
    make_twin_gallery,
    make_videos,
    order_oracle_scores,
    random_events,
    reorder,
    scramble_captions,
    shuffle_caption,
    tokenize,
)
from .experiment import (
    BOUNDARY_ARMS,
    ORACLES,
    SOLVED,
    EvaluationSets,
    Result,
    evaluation_sets,
    order_gain,
    retrieval_metrics,
    run,
    segments_boundary,
    twin_accuracy,
)
from .figures import (
    ARM_LABELS,
    arm_colors,
    fig_attribution,
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
)
from .model import (
    CrossEncoder,
    TextEncoder,
    Victor,
    VideoEncoder,
)
from .results import (
    SEGMENT_POINTS,
    Reference,
    pack,
    reference,
    reference_arrays,
    reference_from_arrays,
    segment_sweep,
    video_reference_arrays,
)
from .training import (
    ARMS,
    CHECKPOINTS,
    EQUAL_STEPS,
    LEARNING_RATE_GRID,
    LEARNING_RATES,
    METHOD_ARMS,
    PROXY_TASKS,
    RATE_RECORDS,
    SCRAMBLED,
    TASKS,
    Checkpoint,
    Config,
    TrainedArm,
    arm_steps,
    gallery_ranks,
    group6_scores,
    learning_rate,
    load_tuning,
    new_model,
    pass_cost,
    pooled_features,
    recipe,
    retrieval_ranks,
    step_cost,
    train_arm,
    training_losses,
    tuned_rates,
    weights,
)

__all__ = [
    "ARMS",
    "ARM_LABELS",
    "BOUNDARY_ARMS",
    "CHARS",
    "CHECKPOINTS",
    "CLAIMS",
    "CLS",
    "CONFLICT_TOLERANCE",
    "CONTROL_BAND",
    "EQUAL_STEPS",
    "FALSIFIERS",
    "GROUP6_MARGIN",
    "GROUP_SIZE",
    "LEARNING_RATES",
    "LEARNING_RATE_GRID",
    "MASK",
    "METHOD_ARMS",
    "N_FRAMES",
    "ORACLES",
    "PROXY_TASKS",
    "RATE_RECORDS",
    "SCRAMBLED",
    "SEGMENTS",
    "SEGMENT_POINTS",
    "SEGMENT_TEMPLATE",
    "SOLVED",
    "SPECIALS",
    "TASKS",
    "TOKEN",
    "TWIN_MARGIN",
    "VOCAB",
    "Checkpoint",
    "Config",
    "CrossEncoder",
    "EvaluationSets",
    "FrameEncoder",
    "Group6",
    "Layout",
    "MemoryQueue",
    "Pool",
    "Pools",
    "Reference",
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
    "candidate_orders",
    "caption",
    "caption_ids",
    "caption_length",
    "caption_tokens",
    "chance",
    "distinct_events",
    "evaluation_sets",
    "fig_attribution",
    "fig_examples",
    "fig_group6_curves",
    "fit_frame_encoder",
    "frame_order_loss",
    "gallery_ranks",
    "group6_accuracy",
    "group6_scores",
    "image_pools",
    "info_nce",
    "layout",
    "learning_rate",
    "load_tuning",
    "make_group6",
    "make_twin_gallery",
    "make_videos",
    "mask_caption",
    "masked_frame_loss",
    "masked_language_modeling",
    "momentum_update",
    "new_model",
    "order_gain",
    "order_loss",
    "order_oracle_scores",
    "pack",
    "pass_cost",
    "pooled_features",
    "queue_alignment_loss",
    "random_events",
    "recipe",
    "reference",
    "reference_arrays",
    "reference_from_arrays",
    "reorder",
    "retrieval_metrics",
    "retrieval_ranks",
    "run",
    "scramble_captions",
    "segment_sweep",
    "segments_boundary",
    "shuffle_caption",
    "solved_fraction",
    "step_cost",
    "tokenize",
    "train_arm",
    "training_losses",
    "tuned_rates",
    "twin_accuracy",
    "video_reference_arrays",
    "weights",
]
