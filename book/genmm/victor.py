# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Victor: pre-training that learns what happens first
#
# A shopping platform holds millions of short product videos, each with a description written
# by the seller: "first the box is opened, then the phone is switched on, finally the camera is
# shown". One pre-trained video-language model then serves search, classification, captioning
# and recommendation. Pre-training in the style of VideoBERT {cite}`sun2019videobert` learns
# which words go with which frames. A description that says *what happens in which order*
# needs more: a model that knows the words and the frames but not their order cannot tell
# "the box, then the phone" from "the phone, then the box".
#
# *Understanding Chinese Video and Language via Contrastive Multimodal Pre-Training*
# {cite}`lei2021victor` (Victor, ACM MM 2021) adds proxy tasks that are about order, built in
# the contrastive style of MoCo {cite}`he2020moco`, and pre-trains on Alivol-10M, more than
# 10 million e-commerce videos with Chinese descriptions. Its abstract claims that Victor
# captures "sequential order and spatiotemporal relationships" that co-occurrence objectives
# miss, and reports better downstream results than VideoBERT and UniVL {cite}`luo2020univl`;
# we could not recover the numbers, so this chapter checks the mechanism instead: **do order
# tasks make a model understand order where co-occurrence alone does not?**

# %%
from dataclasses import replace

import numpy as np
import torch

from toyscale.core import (
    Stopwatch,
    Table,
    check_results,
    claims_table,
    mean_std,
    set_threads,
)
from toyscale.genmm import digits, victor

set_threads(1)  # tiny models: one thread is the fastest and keeps results stable

# %% [markdown]
# ## The idea
#
# **Three encoders.** A text encoder turns a caption into states $h^w_1, \dots, h^w_L$, a
# video encoder turns frame features into states $h^v_1, \dots, h^v_T$, and a cross encoder
# reads both. Retrieval uses the *unimodal* pooled features $t = W_t\,\mathrm{mean}_l\,h^w_l$
# and $v = W_v\,\mathrm{mean}_t\,h^v_t$, so a gallery of videos can be indexed once.
#
# **Co-occurrence.** Masked language modeling (MLM) predicts hidden words from the rest of the
# caption and the video. Video–sentence alignment is InfoNCE {cite}`oord2018cpc` in both
# directions: with $s_{ij} = \hat t_i \cdot \hat v_j / \tau$ on normalised features,
#
# $$
# \mathcal L_{t \to v} = -\frac1n \sum_i \log
#   \frac{e^{s_{ii}}}{\sum_{j \notin F_i} e^{s_{ij}}},
# $$
#
# and the same from video to text, where $F_i$ are *false negatives*: other videos with the
# very same caption, left out of the denominator. Nothing in these two losses asks about
# order: a model that knows *which* digits a video holds already separates most pairs.
#
# **Order.** Victor adds proxy tasks about structure. *Masked sentence-order modeling* cuts
# the caption into segments, shuffles them, and classifies which of the $3! = 6$
# permutations was applied. *Masked frame-order modeling* does the same for the frames; in
# our world any order of digits is a valid video, so the video alone cannot tell, and the
# caption has to say it: the sentence's feature must pick the video's true order among its
# six orders, $-\log \mathrm{softmax}_\pi(\hat t \cdot \hat v_\pi / \tau)$. *Masked frame
# modeling* hides a frame and predicts its feature contrastively against the other frames of
# the same video (intra) and of other videos (inter).
#
# **Queues.** MoCo keeps a momentum copy of the encoders,
# $\theta_k \leftarrow m\,\theta_k + (1 - m)\,\theta_q$, and a first-in-first-out queue of
# its features. Alignment then contrasts each query with thousands of stored negatives, not
# only with the batch, at the cost of one forward pass of the key encoders.
#
# **Group-6.** The test: a caption and the six videos made of the same three segments in
# every order; pick the right one by $\hat t \cdot \hat v$. Chance is $1/6$, and so is the
# score of any model that cannot see order.

# %% [markdown]
# ## Building it
#
# ### Frames that no training video shows
#
# The frames are the 8×8 digits that ship with scikit-learn, split class by class into a
# training and a test part. A frozen frame encoder, a whitened PCA fitted on the training
# digits only, stands in for the pre-extracted visual backbone of real video pre-training.
# Look for how many test images are new, pixel for pixel:

# %%
split = digits.split()
config = victor.Config()
encoder = victor.fit_frame_encoder(split.train_images, config.feature_dim)
train_features = encoder(split.train_images)
test_features = encoder(split.test_images)
print(f"{len(split.train_images)} training and {len(split.test_images)} test digits")
print(
    f"test digits whose pixels appear nowhere in training: {split.unseen_fraction():.1%}"
)
print(f"frame features: {train_features.shape[1]} whitened PCA dimensions")
assert np.allclose(train_features.std(axis=0, ddof=1), 1.0, atol=1e-3)

# %% [markdown]
# ### Videos and captions
#
# A video has six frames; three different digits appear one after another, each for a segment
# of random length, and every frame is a random image of its digit. The caption states the
# order. Three test videos and their captions:

# %%
generator = np.random.default_rng(0)
triplets = np.array([(3, 7, 1), (0, 5, 8), (9, 2, 4)])
examples = victor.make_videos(test_features, split.test_labels, triplets, generator)
for triplet, lengths in zip(examples.triplet, examples.lengths, strict=True):
    print(victor.caption(triplet), " segment lengths:", lengths.tolist())
assert victor.caption((3, 7, 1)) == "数字3先出现，然后是7，最后是1"

# %% [markdown]
# The tokenizer reads one character at a time from a small vocabulary (the caption's
# characters, the ten digits and three special tokens); every caption has the same length.
# The three segments are what sentence-order modeling shuffles:

# %%
tokens = victor.tokenize(victor.caption((3, 7, 1)))
print(f"vocabulary: {len(victor.VOCAB)} symbols; caption: {len(tokens)} tokens")
print("token ids:", tokens)
shuffled = victor.shuffle_caption((3, 7, 1), (2, 0, 1))
print("segments in order (2, 0, 1):", "".join(victor.VOCAB[t] for t in shuffled[1:]))

# %% [markdown]
# ### Group-6, and two oracles that check it
#
# Each group-6 set holds one test video in all six segment orders, with the caption of the
# true one. An earlier design of this toy leaked the answer through the caption's words, so
# two oracles check the sets before any model sees them. The *caption-leak oracle* knows
# every frame's true digit and every character of the caption, but not their order; it must
# land exactly on chance. The *order oracle* reads the order and must be perfect:

# %%
group = victor.make_group6(examples)
leak = victor.group6_accuracy(victor.bag_oracle_scores(group), group.answer)
order = victor.group6_accuracy(victor.order_oracle_scores(group), group.answer)
print(
    f"caption-leak oracle: {leak:.4f} (chance {1 / 6:.4f}); order oracle: {order:.2f}"
)
bags = {tuple(sorted(victor.caption(p))) for p in [(3, 7, 1), (7, 1, 3), (1, 3, 7)]}
print(f"distinct bags of characters among three orders of 3, 7, 1: {len(bags)}")
assert abs(leak - 1 / 6) < 1e-12 and order == 1.0 and len(bags) == 1

# %% [markdown]
# A tie at the top counts $1/k$ for $k$ tied candidates, so a scorer that cannot tell the six
# apart gets exactly $1/6$, not a lucky draw.
#
# ### The encoders, and a control that cannot see order
#
# Text and video encoders are small one-layer transformers with position embeddings and mean
# pooling; the cross encoder is one more layer over both. The bag-of-digits control is
# the same model without the video's position embeddings: a transformer without them treats
# its frames as a set. Play a video backwards and compare the pooled features:

# %%
torch.manual_seed(0)
model = victor.Victor(config.feature_dim, 32, 1, 2, 32, positional=True)
bag = victor.Victor(config.feature_dim, 32, 1, 2, 32, positional=False)
frames = torch.as_tensor(examples.frames)
with torch.no_grad():
    change = (
        (model.video(frames)[1] - model.video(frames.flip(1))[1]).abs().max().item()
    )
    bag_change = (
        (bag.video(frames)[1] - bag.video(frames.flip(1))[1]).abs().max().item()
    )
n_params = sum(p.numel() for p in model.parameters())
print(f"{n_params:,} parameters")
print(
    f"largest change of the pooled feature when played backwards: model {change:.3f}, "
    f"bag control {bag_change:.1e}"
)
assert bag_change < 1e-5 < change

# %% [markdown]
# ### The losses on tiny inputs
#
# InfoNCE with one query, a matching key and an orthogonal one at $\tau = 0.1$ is
# $\log(1 + e^{-10})$; with the orthogonal key masked as a false negative nothing is left to
# contrast and the loss is zero:

# %%
q, k = torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 0.0], [0.0, 1.0]])
plain = victor.info_nce(q, k, torch.tensor([0]), 0.1).item()
masked = victor.info_nce(
    q, k, torch.tensor([0]), 0.1, torch.tensor([[False, True]])
).item()
print(f"InfoNCE {plain:.3e} (by hand {np.log1p(np.exp(-10)):.3e}); masked {masked:.1e}")
assert np.isclose(plain, np.log1p(np.exp(-10)), rtol=1e-3) and abs(masked) < 1e-6

# %% [markdown]
# In a queue, a copy of the query's own video under the same caption id would be a false
# negative. Take two perfectly aligned caption–video pairs and fill a queue with copies of
# the videos, once under their own caption ids and once under other ids. Masked by caption
# id, the copies cost nothing; unmasked, each one ties with the positive and the loss cannot
# fall below $\log 2$:

# %%
torch.manual_seed(1)
t = torch.nn.functional.normalize(torch.randn(2, 4), dim=-1)
v = t.clone()  # each caption's video feature equals its own: a perfect pair
ids = torch.tensor([1, 2])
losses = {}
for name, queue_ids in (("same caption ids", ids), ("other caption ids", ids + 10)):
    queue = victor.MemoryQueue(8, 4, torch.device("cpu"))
    queue.push(v, t, queue_ids)
    losses[name] = victor.queue_alignment_loss(t, v, t, v, ids, queue, 0.1).item()
print({name: round(value, 4) for name, value in losses.items()})
print(f"log 2 = {np.log(2):.4f}")
assert losses["same caption ids"] < 0.1 < np.log(2) <= losses["other caption ids"]

# %% [markdown]
# ### Five arms, equal compute
#
# Every arm has the same architecture and starts from the same weights and the same stream
# of videos; only the losses differ. The order tasks cost more per step, so each arm gets
# as many steps as buy the compute of the full Victor arm, counted in token-layer passes
# per sample (a pass with gradients counts 3, a momentum pass 1). The bag control gets a
# share of that (in the caption), since its group-6 accuracy is $1/6$ for any weights:

# %%
Table(
    ["arm", "tasks", "passes per sample per step", "steps"],
    [
        [
            victor.ARM_LABELS[arm],
            ", ".join(victor.TASKS[arm]),
            victor.step_cost(arm),
            victor.arm_steps(arm, config.budget_steps),
        ]
        for arm in victor.ARMS
    ],
    caption=(
        f"Default budget: {config.budget_steps} steps of the Victor arm "
        f"(the bag control: {victor.BAG_SHARE:.0%} of it)"
    ),
)

# %% [markdown]
# What each arm sees: all arms see the same training videos and their captions. The
# sentence-order arm also sees its captions with shuffled segments. The order-task arms also
# see each training video's segments in all six orders beside its caption (the frame-order
# task), which is the training-image twin of the group-6 test; Victor adds queues of older
# features. No arm ever sees a test image.

# %% [markdown]
# ## The experiment
#
# `victor.run` trains all five arms and scores each on group-6 (a few hundred test groups)
# and on text→video retrieval over a gallery of test videos with distinct captions. Five seeds
# of the default configuration take longer than this page may, so they are committed as a
# checked file (`python -m toyscale data --rebuild victor_results` recomputes it). First,
# proof that the file holds what `run` computes: train seed 0's order-task arm again, here
# (the same numbers on the machine that made the file; a small drift on another CPU).

# %%
results = victor.reference_results()
seeds = [r.seed for r in results]
with Stopwatch() as watch:
    check = victor.run(replace(config, arms=("order_tasks",)), seed=0)
live, stored = check.metrics["order_tasks"], results[0].metrics["order_tasks"]
print(f"order-task arm, seed 0, trained again in {watch.seconds:.1f} s:")
print(
    f"  group-6 {live['group6']:.4f} (committed {stored['group6']:.4f}), "
    f"R@1 {live['r1']:.4f} (committed {stored['r1']:.4f})"
)
# equal on the machine that made the file; another CPU or PyTorch may round differently
assert all(abs(live[m] - stored[m]) <= 0.05 for m in ("group6", "r1", "r5"))

# %% [markdown]
# Three of seed 0's test videos, one row each. The captions:

# %%
for example in results[0].examples:
    print(example["caption"])
victor.fig_examples(results[0]).show()

# %% [markdown]
# Group-6 accuracy during training, every seed, on the same compute axis. Look at where the
# co-occurrence arm levels off and whether the order-task arms climb past it:

# %%
victor.fig_group6_curves(results).show()

# %% [markdown]
# The final numbers, mean ± standard deviation over the five seeds, with the share of seeds
# that solve group-6 (accuracy at least 0.9) and the retrieval metrics:

# %%
rows = []
for arm in victor.ARMS:
    row = [victor.ARM_LABELS[arm]]
    for metric in ("group6", "r1", "r5", "median_rank"):
        row.append(
            "{:.3f} ± {:.3f}".format(
                *mean_std([r.metrics[arm][metric] for r in results])
            )
        )
    row.append(f"{victor.solved_fraction(results, arm):.0%}")
    rows.append(row)
for oracle in victor.ORACLES:
    value = "{:.3f} ± {:.3f}".format(
        *mean_std([r.metrics[oracle]["group6"] for r in results])
    )
    rows.append([victor.ARM_LABELS[oracle], value, "", "", "", ""])
Table(
    ["arm", "group-6", "R@1", "R@5", "median rank", "seeds solved"],
    rows,
    caption=f"Test videos, seeds {seeds} (retrieval over {config.gallery} videos)",
)

# %% [markdown]
# ## Does the claim hold?
#
# Each claim compares an arm with the co-occurrence baseline trained on the same videos,
# initial weights and compute, paired by seed: the mean gain must clear a margin set from the
# seed noise and the arm must win on at least four seeds in five. The tests check the same
# claims on five seeds of a smaller configuration, and `python -m toyscale reproduce victor`
# on three seeds of this one.

# %%
outcomes = check_results(victor.CLAIMS, results, seeds=seeds, chapter="victor")
assert not any(o.fails_strict for o in outcomes), "an expected claim failed"
claims_table(outcomes)

# %% [markdown]
# The paired gains of group-6 accuracy per seed:

# %%
gains = {
    arm: [r.metrics[arm]["group6"] - r.metrics["cooccur"]["group6"] for r in results]
    for arm in ("sentence_order", "order_tasks", "victor")
}
Table(
    ["arm", *[f"seed {s}" for s in seeds], "mean ± std"],
    [
        [victor.ARM_LABELS[arm], *values, "{:+.3f} ± {:.3f}".format(*mean_std(values))]
        for arm, values in gains.items()
    ],
    caption="Group-6 gain over co-occurrence only, per seed",
)

# %% [markdown]
# What holds, and what does not:
#
# - **Order tasks raise group-6: yes, on every seed.** With the frame-order and masked-frame
#   tasks beside sentence order, group-6 accuracy roughly doubles over co-occurrence only, at
#   equal compute: the co-occurrence arm got about twice as many steps and still levels off
#   well below. The curves show no bimodality here (the prototype of this toy saw seeds that
#   either solved group-6 or stayed near 0.5); the gain is steady across seeds, but no arm
#   *solves* group-6 (0.9 or more) at this budget, so "seeds solved" is zero everywhere.
# - **Sentence order alone does nothing for group-6.** The sentence-order task is solved
#   from the order words 先, 然后 and 最后 alone; it teaches the text encoder where segments
#   sit, not which digit comes first in a video. The gain comes with the frame-order task,
#   the only task that shows the model videos whose segments are reordered. In this toy world
#   any order of digits is a valid video, so that task needs the caption to define the
#   order, and it is the training-image twin of group-6: what the claim adds is that the
#   skill transfers to unseen digit images and to the unimodal pooled features.
# - **Queues: no gain at this budget.** The full Victor arm, with momentum encoders and
#   queues, beats co-occurrence on group-6 on every seed but trails the order-task arm
#   without queues. Its queue term is kept *beside* an in-batch term: the prototype's
#   queue-only alignment collapsed, and with 200 steps the momentum keys lag the encoder by
#   a large part of training. The queue does help retrieval over the order-task arm.
# - **Better retrieval than co-occurrence: not here.** Co-occurrence spends all of its
#   (twice as many) steps on alignment, and the gallery's captions differ mostly in which
#   digits they hold, which co-occurrence already matches; order understanding buys little
#   R@1 in this gallery. The paper's downstream gains come from ten million videos and a
#   pre-training budget where the proxy tasks do not compete with alignment for steps.
# - **Honesty checks.** The bag-of-digits model, trained, sits exactly at chance on every
#   seed, and so does the caption-leak oracle: the six candidates and the caption leave only
#   order to decide. False negatives are masked by caption id in the batch and in the queue;
#   every sample draws its own permutation; retrieval and group-6 use unimodal pooled
#   features; and no arm sees a test image.

# %% [markdown]
# ## At full scale
#
# The toy's co-occurrence arm learns some order because a random batch now and then holds a
# *hard negative*: a video with the same three digits in another order. How often depends on
# how many videos share their content. With 720 ordered triplets, a negative is a hard one
# with probability 5/719; in a catalogue of product videos, two descriptions with the same
# steps in another order are far rarer. A rough count of the hard negatives a query meets,
# with an assumed rate for real data:

# %%
toy_rate = 5 / 719  # another order of the same three digits, among the other captions
real_rate = 1e-6  # an assumed rate for product videos: same steps, another order
for name, rate in (("toy", toy_rate), ("catalogue (assumed)", real_rate)):
    for label, negatives in (
        ("batch of 32", 31),
        ("batch of 1,024", 1023),
        ("MoCo queue of 65,536", 65_536),
    ):
        print(
            f"{name:>20}, {label:>21}: {rate * negatives:9.4f} hard negatives per query"
        )

# %% [markdown]
# At the paper's scale a contrastive objective almost never meets a reordered twin of its
# video, in a batch or a queue, so co-occurrence learning gets no signal about order at all:
# the order tasks are the only source of it, which makes the paper's premise stronger there
# than in this toy. Their price grows too: the frame-order task encodes every video once per
# candidate order, and a real video has many more segments than three (a task with $k$
# segments has $k!$ orders, so real systems classify a sampled few, or predict positions
# frame by frame):

# %%
# an assumed ViT-B video encoder: 32 frames × 49 patches, width 768, 12 layers
clip_tokens, width, layers = 32 * 49, 768, 12
# a layer holds about 12 d² weights, and a token costs 2 FLOP per weight
flop_per_pass = 2 * 12 * width**2 * layers * clip_tokens
for orders in (1, 6, 24):
    tflop = 3 * orders * flop_per_pass / 1e12
    print(
        f"{orders:>2} orders per video: {tflop:6.2f} TFLOP per training video (forward + backward)"
    )

# %% [markdown]
# ## Exercises
#
# 1. **A bigger batch for co-occurrence.** Train the co-occurrence arm with
#    `Config(batch_size=128)` and the same number of videos seen (a quarter of the steps).
#    Does group-6 rise? Why would a larger batch teach order to a co-occurrence objective?
#
# ```{admonition} Solution
# :class: dropdown
# `victor.run(replace(victor.Config(), batch_size=128, budget_steps=50, arms=("cooccur",)),
# seed=0)`. A bigger batch holds more hard negatives per query (about $127 \cdot 5/719$
# instead of $31 \cdot 5/719$), so the alignment loss sees more pairs that only order can
# separate. In our run of seed 0 group-6 rose a little, and stayed far below the order-task
# arm. For a co-occurrence objective the negatives are the only carrier of order, and only
# the rare reordered twins among them carry it; a bigger batch (or a queue) adds a few.
# ```
#
# 2. **Take away the positions.** Train the order-task arm with the video's position
#    embeddings removed (build `victor.Victor(..., positional=False)` and train it with the
#    order tasks). What happens to the frame-order loss and to group-6?
#
# ```{admonition} Solution
# :class: dropdown
# Without positions the video encoder sees a set: the six candidate orders of a video get the
# same pooled feature, the frame-order loss stays at $\log 6 \approx 1.79$ with zero gradient,
# and group-6 stays at exactly $1/6$. Order tasks cannot teach what the architecture cannot
# represent; the bag control in this chapter is that model.
# ```
#
# 3. **Where the order lives.** The co-occurrence arm's MLM loss falls far below what
#    guessing the digits would cost, so its cross encoder reads the order of the video to fill
#    in "然后是[MASK]". Why does that not help group-6?
#
# ```{admonition} Solution
# :class: dropdown
# Group-6 and retrieval use the unimodal pooled features, not the cross encoder. The cross
# encoder can bind a caption position to a video position by attention over the token
# states; nothing asks the mean-pooled features to keep that binding. Scoring group-6 with
# the cross encoder would need one cross pass per caption–video pair, which is what
# unimodal retrieval avoids at the scale of a catalogue.
# ```

# %% [markdown]
# ## References
#
# - The paper: {cite}`lei2021victor`.
# - Co-occurrence pre-training it compares with: {cite}`sun2019videobert`,
#   {cite}`luo2020univl`.
# - Momentum contrast and its queue: {cite}`he2020moco`; InfoNCE: {cite}`oord2018cpc`.
# - The digits: the UCI optical-recognition set that ships with scikit-learn, cited in
#   {doc}`badiff`.
#
# ```{bibliography}
# :filter: docname in docnames
# ```
