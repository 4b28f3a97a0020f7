"""The synthetic ad world: shapes, determinism, whole-context splits and batches, bad input."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from toyscale.core.seeding import rng
from toyscale.recsys.world import (
    WorldConfig,
    context_batches,
    make_log,
    sample_population,
    split_by_context,
    true_logit,
    user_activity_bucket,
)

torch.set_num_threads(1)
SMALL = WorldConfig(n_users=300, n_items=50, n_contexts=400)


def test_log_shapes_and_ranges():
    log = make_log(SMALL, seed=0)
    n = len(log)
    assert 400 * 5 <= n <= 400 * 15
    for array in (log.user, log.item, log.context, log.y, log.p_true, log.shift):
        assert array.shape == (n,)
    assert set(np.unique(log.y)) <= {0, 1}
    assert ((log.p_true > 0) & (log.p_true < 1)).all()
    assert np.all(np.diff(log.context) >= 0)
    for name, codes in log.fields.items():
        assert codes.shape == (n,) and codes.min() >= 0 and codes.max() < log.cardinality[name]


def test_items_within_a_context_are_distinct():
    log = make_log(SMALL, seed=1)
    for z in np.unique(log.context)[:50]:
        items = log.item[log.context == z]
        assert items.size == np.unique(items).size
        assert np.unique(log.user[log.context == z]).size == 1  # one user per context
        assert np.unique(log.shift[log.context == z]).size == 1  # one shift s_z per context


def test_same_seed_same_log_other_seed_other_log():
    a, b, c = make_log(SMALL, seed=3), make_log(SMALL, seed=3), make_log(SMALL, seed=4)
    assert np.array_equal(a.y, b.y) and np.array_equal(a.item, b.item) and np.allclose(a.p_true, b.p_true)
    assert len(a) != len(c) or not np.array_equal(a.item, c.item)


def test_true_logit_follows_the_equation():
    config = SMALL
    population = sample_population(config, rng(0))
    user, item, shift = np.array([0, 1]), np.array([2, 3]), np.array([0.5, -1.0])
    expected = (
        config.base_logit
        + population.user_bias[user]
        + population.item_bias[item]
        + config.affinity_scale * np.sum(population.user_vec[user] * population.item_vec[item], 1) / 2.0
        + shift
    )
    assert np.allclose(true_logit(config, population, user, item, shift), expected)


def test_clicks_match_the_true_probability_on_average():
    log = make_log(SMALL, seed=2)
    assert abs(log.y.mean() - log.p_true.mean()) < 0.02


def test_users_are_long_tailed():
    log = make_log(WorldConfig(), seed=0)
    first = np.r_[True, log.context[1:] != log.context[:-1]]
    owned = np.bincount(log.user[first])
    owned = owned[owned > 0]
    assert np.median(owned) <= 3 and owned.max() >= 100


def test_split_keeps_whole_contexts():
    log = make_log(SMALL, seed=0)
    train, test = split_by_context(log, 0.25, seed=0)
    assert len(train) + len(test) == len(log)
    assert not set(train.context) & set(test.context)


def test_batches_hold_whole_contexts_and_cover_the_log():
    log = make_log(SMALL, seed=0)
    seen = []
    for index in context_batches(log, 16, seed=5):
        batch_contexts = np.unique(log.context[index])
        assert batch_contexts.size <= 16
        for z in batch_contexts:
            assert np.sum(log.context[index] == z) == np.sum(log.context == z)
        seen.append(index)
    assert np.array_equal(np.sort(np.concatenate(seen)), np.arange(len(log)))


def test_batches_are_shuffled_by_seed():
    log = make_log(SMALL, seed=0)
    first = [next(context_batches(log, 8, seed=s)) for s in (0, 0, 1)]
    assert np.array_equal(first[0], first[1]) and not np.array_equal(first[0], first[2])


def test_activity_buckets():
    log = make_log(SMALL, seed=0)
    train, test = split_by_context(log, 0.25, seed=0)
    bucket = user_activity_bucket(train, test)
    assert bucket.shape == (len(test),) and set(np.unique(bucket)) <= {0, 1, 2}


@pytest.mark.parametrize(
    "change, word",
    [
        (dict(n_users=0), "n_users"),
        (dict(session_size=1), "session_size"),
        (dict(side_info=1.5), "side_info"),
        (dict(context_shift_std=-1.0), "context_shift_std"),
    ],
)
def test_bad_world_config_names_the_field(change, word):
    with pytest.raises(ValueError, match=word):
        replace(WorldConfig(), **change)


def test_bad_split_and_batch_arguments():
    log = make_log(SMALL, seed=0)
    with pytest.raises(ValueError, match="test_fraction"):
        split_by_context(log, 1.5)
    with pytest.raises(ValueError, match="contexts_per_batch"):
        next(context_batches(log, 0, seed=0))
    shuffled = log.subset(rng(0).permutation(len(log)))
    with pytest.raises(ValueError, match="sorted"):
        next(context_batches(shuffled, 4, seed=0))


# ---------------------------------------------------------------------------------------------
# Several domains (the STAR chapter)
# ---------------------------------------------------------------------------------------------

from toyscale.recsys.world import MULTI_DOMAIN, domain_logit, make_domain_log, random_network  # noqa: E402

SMALL_DOMAINS = replace(MULTI_DOMAIN, n_users=300, n_items=50, n_contexts=2000)


def test_domain_log_shapes_sizes_and_determinism():
    log, world = make_domain_log(SMALL_DOMAINS, seed=0)
    n, m = len(log), SMALL_DOMAINS.n_domains
    assert log.X.shape == log.latent.shape == (n, 2 * SMALL_DOMAINS.latent_dim)
    assert log.domain.min() >= 0 and log.domain.max() < m and log.n_domains == m
    # a context lies in one domain; domain shares follow the long tail, largest first
    for z in np.unique(log.context)[:50]:
        assert np.unique(log.domain[log.context == z]).size == 1
    assert np.all(np.diff(world.share) < 0) and world.share[0] > 0.4 and world.share[-1] < 0.07
    again, _ = make_domain_log(SMALL_DOMAINS, seed=0)
    assert np.array_equal(log.y, again.y) and np.array_equal(log.X, again.X)


def test_domain_features_are_the_domains_view_of_the_latent_vectors():
    log, world = make_domain_log(SMALL_DOMAINS, seed=1)
    expected = world.feature_shift[log.domain] + world.feature_scale[log.domain] * log.latent
    assert np.allclose(log.X, expected)
    means = np.stack([log.X[log.domain == d].mean(0) for d in range(SMALL_DOMAINS.n_domains)])
    assert means.std(0).mean() > 0.3  # domains see visibly shifted features


def test_domain_logit_follows_the_equation():
    config = replace(SMALL_DOMAINS, domain_strength=2.0)
    log, world = make_domain_log(config, seed=2)
    x, d = log.latent[:20], log.domain[:20]
    own = np.array([world.own[k](x[i : i + 1])[0] for i, k in enumerate(d)])
    expected = config.base_logit + world.bias[d] + config.affinity_scale * (world.shared(x) + 2.0 * own) / np.sqrt(5)
    assert np.allclose(domain_logit(config, world, x, d), expected)
    assert np.allclose(log.p_true[:20], 1 / (1 + np.exp(-expected)))


def test_with_rho_zero_domains_share_the_click_function_up_to_a_bias():
    config = replace(SMALL_DOMAINS, domain_strength=0.0)
    _, world = make_domain_log(config, seed=0)
    x = rng(5).standard_normal((10, 2 * config.latent_dim))
    logits = [domain_logit(config, world, x, np.full(10, d)) - world.bias[d] for d in range(config.n_domains)]
    assert all(np.allclose(logits[0], other) for other in logits[1:])


def test_random_network_has_mean_zero_and_unit_variance():
    net = random_network(8, 16, rng(0))
    out = net(rng(1).standard_normal((20000, 8)))
    assert abs(out.std() - 1.0) < 0.05 and abs(out.mean()) < 0.05


def test_domain_log_bad_input():
    with pytest.raises(ValueError, match="n_domains"):
        make_domain_log(replace(MULTI_DOMAIN, n_domains=1))
    with pytest.raises(ValueError, match="n_domains"):
        make_log(replace(WorldConfig(), n_domains=3))
    with pytest.raises(ValueError, match="domain_strength"):
        replace(MULTI_DOMAIN, domain_strength=-1.0)
    with pytest.raises(TypeError, match="config"):
        make_domain_log("six domains")
