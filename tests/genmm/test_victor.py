"""Victor: the captions, videos, pools and order tests with their oracles, the encoders, every proxy task's
loss, the queue, compute accounting, the protocol, bad input, the claims and their falsifiers.

The claims the fast config shows are checked on five seeds of `Config.fast()` (calibrated on seeds
1000–1011, apart from these; three seeds were too few: a seed on which frame order does not beat
co-occurrence turns up in about a quarter of three-seed windows), on the arms and the checkpoint they
read; each falsifier reruns the experiment with its change on three of them, and the claims it names
must then fail.
The committed default results must hold the claims, and one point of their boundary is rerun and
compared (the notebook reruns seed 0's baseline and frame-order arms).
"""

import functools
import math
from contextlib import contextmanager
from dataclasses import replace
from itertools import permutations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from toyscale.core import BOOK_SEEDS, check_results, falsify, survivors, unmet
from toyscale.core.calibration import load_record
from toyscale.core.claims import EFFECT
from toyscale.genmm import victor

torch.set_num_threads(1)

FAST_SEEDS = BOOK_SEEDS
# The falsifier reruns take three of them, as before: under proxy_tasks_off 3.6 % (group-6) and 0.9 % (twin)
# of three-seed windows of the fast calibration seeds still pass, so a falsifier fails on at least 95 %
FALSIFIER_SEEDS = FAST_SEEDS[:3]


@pytest.fixture(scope="module")
def pools():
    return victor.image_pools(16)


@pytest.fixture(scope="module")
def videos(pools):
    generator = np.random.default_rng(0)
    return victor.make_videos(pools.test, victor.random_events(12, 3, generator), generator)


# --- captions and the tokenizer -----------------------------------------------------------------


def test_captions_state_the_order_by_position_only():
    assert victor.caption((3, 7, 1)) == "数字3出现，数字7出现，数字1出现"
    tokens = victor.tokenize(victor.caption((3, 7, 1)))
    assert len(tokens) == victor.caption_length(3) and tokens[0] == victor.CLS
    np.testing.assert_array_equal(victor.caption_tokens(np.array([[3, 7, 1]]), 3)[0], tokens)
    # no order words: every segment reads the same but for its digit
    assert not set("先然后最") & set(victor.VOCAB)
    # the six orders of the same digits use the same bag of characters
    assert len({tuple(sorted(victor.caption(p))) for p in permutations((3, 7, 1))}) == 1


def test_a_shuffled_caption_is_another_videos_true_caption():
    # so sentence order cannot be read from the text: only the video says which shuffle was applied
    for order in permutations(range(3)):
        shuffled = victor.shuffle_caption((3, 7, 1), order)
        said = [(3, 7, 1)[k] for k in order]
        np.testing.assert_array_equal(shuffled, victor.tokenize(victor.caption(said)))


def test_caption_ids_are_distinct_for_distinct_orders():
    events = np.array(list(permutations(range(10), 3)))
    assert len(set(victor.caption_ids(events).tolist())) == len(events)


# --- layouts, pools, videos ---------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3, 4, 6])
def test_layout_cuts_the_frames_and_plays_every_order(k):
    grid = victor.layout(k)
    assert len(grid.orders) == math.factorial(k) and grid.orders[0] == tuple(range(k))
    assert len(grid.lengths) == math.comb(victor.N_FRAMES - 1, k - 1)
    assert (grid.lengths.sum(axis=1) == victor.N_FRAMES).all() and (grid.lengths >= 1).all()
    assert grid.group_size == min(math.factorial(k), victor.GROUP_SIZE)
    for p in range(len(grid.lengths)):
        np.testing.assert_array_equal(grid.frame_index[p, 0], np.arange(victor.N_FRAMES))
        for o, order in enumerate(grid.orders):
            assert sorted(grid.frame_index[p, o].tolist()) == list(range(victor.N_FRAMES))
            played = grid.segment_of_frame[p][grid.frame_index[p, o]]
            assert list(dict.fromkeys(played.tolist())) == list(order)


def test_pools_are_disjoint_and_the_encoder_is_a_whitened_pca_of_training_digits(pools):
    features = pools.train.features
    np.testing.assert_allclose(features.mean(axis=0), 0.0, atol=1e-4)
    np.testing.assert_allclose(features.std(axis=0, ddof=1), 1.0, atol=1e-3)
    np.testing.assert_allclose(pools.encoder.components @ pools.encoder.components.T, np.eye(16), atol=1e-8)
    train = {image.tobytes() for image in pools.train.images}
    assert len(pools.validation.labels) == round(0.2 * (len(pools.train.labels) + len(pools.validation.labels)))
    # a split by image: the validation pool holds no training image but a few pixel-identical duplicates
    assert np.mean([image.tobytes() in train for image in pools.validation.images]) < 0.05
    assert pools.unseen_fraction > 0.9


def test_videos_play_the_digits_in_order_with_pool_images_only(pools, videos):
    for i in range(len(videos.events)):
        assert videos.lengths[i].sum() == victor.N_FRAMES and (videos.lengths[i] >= 1).all()
        assert videos.labels[i].tolist() == np.repeat(videos.events[i], videos.lengths[i]).tolist()
        assert (pools.test.labels[videos.image_index[i]] == videos.labels[i]).all()
        np.testing.assert_array_equal(videos.frames[i], pools.test.features[videos.image_index[i]])
        np.testing.assert_array_equal(videos.tokens[i], victor.tokenize(victor.caption(videos.events[i])))


def test_reorder_moves_whole_segments(videos):
    frames, labels = victor.reorder(videos, np.full((len(videos.events), 1), 5))  # order (2, 1, 0)
    a, b, c = videos.events[0]
    la, lb, lc = videos.lengths[0]
    assert labels[0, 0].tolist() == [c] * lc + [b] * lb + [a] * la
    np.testing.assert_array_equal(np.sort(frames[0, 0], axis=0), np.sort(videos.frames[0], axis=0))


def test_scrambled_captions_name_the_same_digits_in_a_random_order(videos):
    scrambled = victor.scramble_captions(videos, np.random.default_rng(0))
    np.testing.assert_array_equal(scrambled.frames, videos.frames)
    said = scrambled.tokens[:, victor.layout(3).digit_position]
    digit_of = {int(t): d for d, t in enumerate(victor.data.DIGIT_TOKENS)}
    orders_changed = 0
    for i in range(len(videos.events)):
        named = [digit_of[int(t)] for t in said[i]]
        assert sorted(named) == sorted(videos.events[i].tolist())
        orders_changed += named != videos.events[i].tolist()
    assert orders_changed > 0


def test_group6_oracles_and_the_tie_rule(videos):
    group = victor.make_group6(videos)
    assert group.frames.shape[:3] == (len(videos.events), 6, victor.N_FRAMES)
    assert victor.group6_accuracy(victor.bag_oracle_scores(group), group.answer) == pytest.approx(1 / 6)
    assert victor.group6_accuracy(victor.order_oracle_scores(group), group.answer) == 1.0
    scores = np.array([[0.9, 0.9, 0.1], [0.2, 0.8, 0.1]])
    assert victor.group6_accuracy(scores, np.array([0, 1])) == pytest.approx((0.5 + 1.0) / 2)


def test_with_many_orders_a_group_holds_the_true_one_and_five_others(pools):
    generator = np.random.default_rng(1)
    videos = victor.make_videos(pools.test, victor.random_events(20, 4, generator), generator)
    group = victor.make_group6(videos, generator)
    assert group.frames.shape[1] == 6
    assert victor.group6_accuracy(victor.order_oracle_scores(group), group.answer) == 1.0
    for g in range(20):
        shown = {tuple(dict.fromkeys(group.labels[g, c].tolist())) for c in range(6)}
        assert len(shown) == 6


def test_the_twin_gallery_holds_every_order_of_each_digit_set_as_separate_videos(pools):
    twins = victor.make_twin_gallery(pools.test, 10, 3, np.random.default_rng(0))
    assert len(twins.events) == 60 and len(set(twins.caption_id.tolist())) == 60
    families = twins.events.reshape(10, 6, 3)
    for family in families:
        assert len({tuple(sorted(e)) for e in family.tolist()}) == 1 and len({tuple(e) for e in family}) == 6
    # drawn one by one: twins do not share their frames as a group-6 set does
    images = twins.image_index.reshape(10, 6, victor.N_FRAMES)
    assert any(len({tuple(v) for v in family}) == 6 for family in images)


# --- the encoders -------------------------------------------------------------------------------


def test_encoder_shapes_and_a_model_without_positions_is_order_blind(videos):
    config = victor.Config()
    torch.manual_seed(0)
    model, bag = victor.new_model(config), victor.new_model(config, positional=False)
    frames = torch.as_tensor(videos.frames)
    states, pooled = model.video(frames)
    assert states.shape == (len(frames), victor.N_FRAMES, 32) and pooled.shape == (len(frames), 32)
    text_states, text_pooled = model.text(torch.as_tensor(videos.tokens))
    assert text_states.shape == (len(frames), victor.caption_length(3), 32) and text_pooled.shape == (len(frames), 32)
    with torch.no_grad():
        assert not torch.allclose(model.video(frames)[1], model.video(frames.flip(1))[1], atol=1e-4)
        torch.testing.assert_close(bag.video(frames)[1], bag.video(frames.flip(1))[1], atol=1e-5, rtol=1e-5)
    group = victor.make_group6(videos)
    assert victor.group6_accuracy(victor.group6_scores(bag, group), group.answer) == pytest.approx(1 / 6)


# --- the losses ---------------------------------------------------------------------------------


def test_info_nce_by_hand():
    q = torch.tensor([[1.0, 0.0]])
    k = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    assert victor.info_nce(q, k, torch.tensor([0]), 0.1).item() == pytest.approx(math.log1p(math.exp(-10.0)), rel=1e-3)
    invalid = torch.tensor([[False, True]])
    assert victor.info_nce(q, k, torch.tensor([0]), 0.1, invalid).item() == pytest.approx(0.0, abs=1e-6)


def test_alignment_masks_false_negatives_by_caption_id():
    torch.manual_seed(0)
    text, video = torch.randn(4, 8), torch.randn(4, 8)
    video[1] = video[0]
    ids = torch.tensor([5, 5, 6, 7])
    assert (
        victor.alignment_loss(text, video, ids, 0.1).item()
        < victor.alignment_loss(text, video, torch.arange(4), 0.1).item()
    )


def test_queue_alignment_masks_queue_entries_with_the_same_caption():
    torch.manual_seed(0)
    text, video = F.normalize(torch.randn(2, 4), dim=-1), F.normalize(torch.randn(2, 4), dim=-1)
    ids = torch.tensor([1, 2])
    same, other = victor.MemoryQueue(8, 4, torch.device("cpu")), victor.MemoryQueue(8, 4, torch.device("cpu"))
    same.push(video, text, ids)
    other.push(video, text, torch.tensor([3, 4]))
    loss_same = victor.queue_alignment_loss(text, video, text, video, ids, same, 0.1)
    assert loss_same.item() < victor.queue_alignment_loss(text, video, text, video, ids, other, 0.1).item()


def test_queue_is_a_fifo_and_the_key_encoder_trails():
    queue = victor.MemoryQueue(3, 2, torch.device("cpu"))
    for k in range(4):
        queue.push(torch.ones(1, 2) * (k + 1), torch.ones(1, 2), torch.tensor([k]))
    assert queue.filled == 3 and sorted(queue.caption_id.tolist()) == [1, 2, 3]
    query, key = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    before = key.weight.detach().clone()
    victor.momentum_update(query, key, 0.9)
    torch.testing.assert_close(key.weight, 0.9 * before + 0.1 * query.weight.detach())


def test_frame_order_masked_frame_and_mlm_inputs():
    torch.manual_seed(0)
    text = torch.randn(3, 8)
    candidates = torch.randn(3, 6, 8)
    candidates[torch.arange(3), torch.tensor([0, 2, 5])] = 10 * text
    assert victor.frame_order_loss(text, candidates, torch.tensor([0, 2, 5]), 0.1).item() < 0.1
    assert victor.frame_order_loss(text, candidates, torch.tensor([1, 3, 4]), 0.1).item() > 0.1
    frames = torch.randn(2, victor.N_FRAMES, 4)
    masked_at = torch.tensor([1, 4])
    assert victor.masked_frame_loss(frames[torch.arange(2), masked_at], frames, masked_at, 0.01).item() < 0.1
    caption = torch.tensor([victor.tokenize(victor.caption((1, 2, 3)))] * 2)
    masked_tokens, masked = victor.mask_caption(caption, 0.15, torch.Generator().manual_seed(0))
    assert masked.sum(dim=1).min() >= 1 and not masked[:, 0].any() and (masked_tokens[masked] == victor.MASK).all()


def test_every_task_of_an_arm_yields_a_loss_and_alignment_weighs_one_everywhere(pools, videos):
    config = victor.Config()
    model = victor.new_model(config)
    key, queue = victor.new_model(config), victor.MemoryQueue(16, 32, torch.device("cpu"))
    for arm in victor.ARMS:
        w = victor.weights(victor.TASKS[arm], config)
        assert w["align"] + w.get("queue", 0.0) == 1.0
        terms, _ = victor.training_losses(
            model, key, queue, videos, np.random.default_rng(0), torch.Generator().manual_seed(0), w, config
        )
        assert set(terms) == set(victor.TASKS[arm]) and all(torch.isfinite(v) for v in terms.values())
    off = victor.weights(victor.TASKS["victor"], replace(config, proxy_weight=0.0))
    terms, _ = victor.training_losses(
        model, key, queue, videos, np.random.default_rng(0), torch.Generator().manual_seed(0), off, config
    )
    assert set(terms) == {"mlm", "align", "queue"}


def test_compute_accounting_equal_compute_and_equal_steps():
    costs = {arm: victor.step_cost(arm) for arm in victor.ARMS}
    assert costs["cooccur"] < costs["frame_order"] < costs["order_tasks"] < costs["victor"]
    for arm in victor.ARMS:
        steps = victor.arm_steps(arm, 100)
        if arm in victor.EQUAL_STEPS:
            assert steps == 100
        else:
            assert abs(steps * costs[arm] - 100 * costs["victor"]) <= costs[arm]


def test_a_stand_in_trains_the_baseline_under_the_method_names():
    config = replace(victor.Config(), stand_in="cooccur")
    assert [victor.recipe(arm, config) for arm in victor.METHOD_ARMS] == ["cooccur"] * len(victor.METHOD_ARMS)
    assert victor.recipe("sentence_order", config) == "sentence_order"
    assert victor.learning_rate("victor", config, "order") == victor.LEARNING_RATES["cooccur"][0]


def test_retrieval_metrics_by_hand():
    ranks = victor.retrieval_ranks(torch.eye(3), torch.tensor([[1.0, 0, 0], [0, 0, 1.0], [0, 1.0, 0]]))
    assert ranks.tolist() == [1, 2, 2]
    assert victor.retrieval_metrics(ranks) == {"r1": 1 / 3, "r5": 1.0, "median_rank": 2.0}


# --- bad input ------------------------------------------------------------------------------------


def test_bad_input_raises_clear_errors():
    with pytest.raises(ValueError, match="events"):
        victor.caption((1, 1, 2))
    with pytest.raises(ValueError, match="vocabulary"):
        victor.tokenize("数字A")
    with pytest.raises(ValueError, match="dim"):
        victor.fit_frame_encoder(np.zeros((5, 8, 8), dtype=np.uint8), 0)
    with pytest.raises(ValueError, match="segments"):
        victor.layout(7)
    for bad in (
        dict(budget_steps=0),
        dict(width=30, heads=4),
        dict(arms=("nope",)),
        dict(segments=0),
        dict(lr=-1.0),
        dict(proxy_weight=-1.0),
        dict(stand_in="nope"),
        dict(rates="nope"),
    ):
        with pytest.raises(ValueError, match=next(iter(bad)).split("_")[0]):
            victor.Config(**bad)
    with pytest.raises(ValueError, match="arm"):
        victor.step_cost("nope")
    with pytest.raises(ValueError, match="checkpoint"):
        victor.learning_rate("cooccur", victor.Config(), "best")
    with pytest.raises(TypeError, match="config"):
        victor.run(config="fast")
    with pytest.raises(ValueError, match="seed"):
        victor.run(victor.Config.fast(), seed=-1)
    with pytest.raises(ValueError, match="checkpoints"):
        victor.run(victor.Config.fast(), checkpoints=("best",))
    with pytest.raises(ValueError, match="scores"):
        victor.group6_accuracy(np.zeros(6), np.zeros(1, dtype=int))
    with pytest.raises(ValueError, match="metric"):
        victor.fig_attribution([], "nope")


# --- the protocol, the experiment and its claims -----------------------------------------------------

TINY = victor.Config(
    budget_steps=6,
    batch_size=8,
    eval_every=3,
    validation_groups=10,
    validation_gallery=10,
    test_groups=20,
    gallery=20,
    twin_families=5,
    arms=("cooccur", "frame_order"),
)


def test_run_is_deterministic_and_checkpoints_are_chosen_on_validation(pools):
    first, second = victor.run(TINY, seed=3), victor.run(TINY, seed=3)
    assert first.metrics == second.metrics and first.curves == second.curves
    # scoring the order checkpoint alone gives the same order metrics, without the retrieval ones
    order = victor.run(TINY, seed=3, checkpoints=("order",))
    for arm in TINY.arms:
        assert order.metrics[arm] == {k: v for k, v in first.metrics[arm].items() if k in order.metrics[arm]}
        assert "r1" not in order.metrics[arm] and order.curves[arm][:2] == first.curves[arm][:2]
    sets = victor.evaluation_sets(TINY, seed=3)
    for arm in TINY.arms:
        lr = victor.learning_rate(arm, TINY, "order")
        trained = victor.train_arm(arm, pools.train, (sets.validation_group, sets.validation_gallery), TINY, 3, lr)
        assert trained.curve_compute[0] == 0 and abs(trained.curve_compute[-1] - TINY.budget_steps) <= 1
        # each checkpoint is the first best validation point of its own score, within the same budget
        assert trained.order.step == trained.curve_steps[int(np.argmax(trained.curve_group6))]
        assert trained.retrieval.step == trained.curve_steps[int(np.argmax(trained.curve_r1))]
        assert trained.curve_steps[-1] == trained.steps == victor.arm_steps(arm, TINY.budget_steps)
        assert first.metrics[arm]["order_steps"] == trained.order.step


def test_the_boundary_gain_is_runs_own_difference():
    # order_gain trains only the two arms' order-rate runs; it must give what run reports
    config = replace(TINY, segments=2)
    result = victor.run(config, seed=1)
    own = result.metrics["frame_order"]["group6"] - result.metrics["cooccur"]["group6"]
    assert victor.order_gain(config, seed=1) == own
    assert victor.order_gain(replace(TINY, segments=1), seed=1) == 0.0


@pytest.mark.parametrize("rates", sorted(victor.RATE_RECORDS))
def test_every_arms_rates_are_chosen_on_validation_over_the_same_grid(rates):
    record = victor.load_tuning(rates)
    assert record["grid"] == list(victor.LEARNING_RATE_GRID) and set(record["arms"]) == set(victor.ARMS)
    assert record.get("fast", False) == (rates == "fast")
    # tuning seeds apart from the book's, the calibration seeds and the confirmation runs
    assert not set(record["seeds"]) & {*range(5), *range(1000, 1012)}
    for arm, row in record["arms"].items():
        for scores, chosen in (("validation_group6", "order_lr"), ("validation_r1", "retrieval_lr")):
            means = {float(lr): float(np.mean(values)) for lr, values in row[scores].items()}
            assert sorted(means) == sorted(victor.LEARNING_RATE_GRID)
            assert row[chosen] == max(sorted(means), key=means.get)  # the best mean; the smaller rate on a tie
        assert victor.tuned_rates(rates)[arm] == (row["order_lr"], row["retrieval_lr"])
    assert (
        victor.learning_rate("victor", victor.Config(rates=rates), "retrieval")
        == record["arms"]["victor"]["retrieval_lr"]
    )


def test_evaluation_sets_read_validation_and_test_images_only(pools):
    sets = victor.evaluation_sets(TINY, seed=0)
    for batch, pool in ((sets.validation_gallery, pools.validation), (sets.gallery, pools.test)):
        np.testing.assert_array_equal(batch.frames, pool.features[batch.image_index])
    assert len(set(sets.gallery.caption_id.tolist())) == TINY.gallery


# The claims the fast config shows (calibration/fast.json: at least 95 % of five-seed windows pass there)
# and the arms they read; victor_raises_group6 is left to `reproduce`: at the fast budget the full bundle
# does not learn order yet, while frame order alone does
FAST_CLAIMS = (
    "frame_order_raises_group6",
    "frame_order_out_of_format",
    "shuffled_captions_at_chance",
    "order_blind_at_chance",
)
FAST_ARMS = ("cooccur", "frame_order", "shuffled")
# every claim above reads the order checkpoint only, so no arm trains at its retrieval rate (run's
# order metrics do not depend on it)
run_order = functools.partial(victor.run, checkpoints=("order",))
TRAINED: dict = {}  # this module's trainings, by everything that decides them (see trained_once)


@contextmanager
def trained_once():
    """Within the block, `run` trains each recipe at each rate, seed and configuration once per module.

    A falsifier's rerun then reuses the trainings its change leaves alone (co-occurrence under both
    falsifiers is the fixture's own). The key holds what decides a training: the recipe, its loss
    weights, the rate, the seed and the config but for the arms list and the stand-in (read through
    the recipe); the same inputs train the same weights (test_run_is_deterministic, without it).
    """
    train_arm = victor.experiment.train_arm

    def once(arm, train_pool, validation, config, seed, lr):
        trains = victor.recipe(arm, config)
        loss_weights = tuple(sorted(victor.weights(victor.TASKS[trains], config).items()))
        key = (trains, loss_weights, lr, seed, replace(config, arms=victor.ARMS, stand_in="", proxy_weight=1.0))
        if key not in TRAINED:
            TRAINED[key] = train_arm(arm, train_pool, validation, config, seed, lr)
        return TRAINED[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(victor.experiment, "train_arm", once)
        yield


@pytest.fixture(scope="module")
def fast_results():
    # the arms FAST_CLAIMS read: an arm's numbers do not depend on which other arms train, so these are
    # Config.fast()'s own (the calibration record's configuration)
    with trained_once():
        return [run_order(replace(victor.Config.fast(), arms=FAST_ARMS), seed=s) for s in FAST_SEEDS]


def test_run_is_complete(fast_results):
    result = fast_results[0]
    assert set(result.metrics) == {*FAST_ARMS, *victor.ORACLES}
    for arm in FAST_ARMS:
        order_metrics = {"group6", "solved", "twin6", "twin_r1", "steps", "step_cost", "order_steps", "order_lr"}
        assert set(result.metrics[arm]) == order_metrics
        assert result.metrics[arm]["order_lr"] == victor.tuned_rates("fast")[arm][0]
    assert len(result.examples) == 3 and result.examples[0]["images"].shape == (victor.N_FRAMES, 8, 8)


def test_figures_build(fast_results):
    assert len(victor.fig_examples(fast_results[0]).data) == 3 * victor.N_FRAMES
    fig = victor.fig_group6_curves(fast_results)
    assert len(fig.data) == len(FAST_ARMS) * len(fast_results) and fig.layout.title.text
    shown = [arm for arm in victor.figures.ATTRIBUTION if arm in FAST_ARMS]
    assert len(victor.fig_attribution(fast_results).data[0].x) == len(shown) > 0
    with pytest.raises(ValueError, match="arms"):
        victor.fig_group6_curves(fast_results, arms=("nope",))


def test_claims_over_five_fast_seeds(fast_results):
    claims = [c for c in victor.CLAIMS if c.id in FAST_CLAIMS]
    outcomes = check_results(claims, fast_results, FAST_SEEDS, "victor")
    assert not unmet(outcomes), unmet(outcomes)


@pytest.mark.parametrize("falsifier", victor.FALSIFIERS, ids=lambda f: f.name)
def test_every_expected_effect_fails_under_its_falsifiers(falsifier, fast_results):
    # at the fast budget, the effects it shows (victor_raises_group6 fails there with the method too),
    # rerun with the falsifier's change on the arms they read
    shown = tuple(claim for claim in falsifier.claims if claim in FAST_CLAIMS)
    arms = tuple(arm for arm in FAST_ARMS if arm in falsifier.change(victor.Config.fast()).arms)
    fast = replace(falsifier, claims=shown, change=lambda c: replace(falsifier.change(c), arms=arms))
    assert shown and arms
    with trained_once():
        outcomes = falsify(fast, victor.CLAIMS, run_order, FALSIFIER_SEEDS, victor.Config.fast(), "victor")
    assert not survivors(outcomes), survivors(outcomes)


def test_every_expected_effect_has_both_falsifiers():
    for claim in victor.CLAIMS:
        if claim.kind == EFFECT and claim.expected:
            kinds = {f.kind for f in victor.FALSIFIERS if claim.id in f.claims}
            assert len(kinds) == 2, f"{claim.id} lacks a falsifier: has {kinds}"


def test_the_committed_results_hold_the_claims_and_their_boundary_agrees_with_them():
    # current by fingerprint (checked on load), never compared with a rerun: on another CPU it differs a little
    reference = victor.reference()
    assert [r.seed for r in reference.results] == [0, 1, 2, 3, 4]
    assert not unmet(check_results(victor.CLAIMS, reference.results, (0, 1, 2, 3, 4), "victor"))
    sweep = reference.boundary.as_arrays()
    assert sweep["points"].tolist() == list(victor.SEGMENT_POINTS) and sweep["seeds"].tolist() == [0, 1, 2, 3, 4]
    # the default point is the results' own gain; with one segment there is nothing to order
    deltas = sweep["deltas"]
    own = [r.metrics["frame_order"]["group6"] - r.metrics["cooccur"]["group6"] for r in reference.results]
    np.testing.assert_allclose(deltas[list(victor.SEGMENT_POINTS).index(3)], own)
    assert not deltas[0].any()


def test_the_calibration_records_set_the_margins_and_expectations():
    claims = {claim.id: claim for claim in victor.CLAIMS}
    default, fast = load_record(victor), load_record(victor, "fast")
    for record in (default, fast):
        # both written by `python -m toyscale calibrate victor --seeds 12 [--fast]`: every claim, every falsifier
        assert record["seeds"] == list(range(1000, 1012))
        assert {entry["id"] for entry in record["claims"]} == set(claims)
        assert {falsifier["name"] for falsifier in record["falsifiers"]} == {f.name for f in victor.FALSIFIERS}
        margins = {e["id"]: e["parts"][0]["margin"] for e in record["claims"]}
        assert margins["frame_order_raises_group6"] == margins["victor_raises_group6"] == victor.GROUP6_MARGIN
        assert margins["frame_order_out_of_format"] == victor.TWIN_MARGIN
        assert margins["shuffled_captions_at_chance"] == victor.CONTROL_BAND
        for falsifier in record["falsifiers"]:
            assert min(falsifier["fail_rates"].values()) >= 0.95, falsifier["name"]
    assert not default["fast"] and fast["fast"]
    for entry in default["claims"]:
        claim = claims[entry["id"]]
        assert entry["expected"] == claim.expected
        if claim.kind == EFFECT:
            # expected exactly when at least 95 % of five-seed windows pass
            assert (entry["pass_rate"] >= 0.95) == claim.expected, entry["id"]
    # the tests check at the fast config exactly the expected claims that pass there
    rates = {entry["id"]: entry["pass_rate"] for entry in fast["claims"]}
    shown = {claim.id for claim in victor.CLAIMS if claim.expected and claim.check and rates[claim.id] >= 0.95}
    assert shown == set(FAST_CLAIMS)
