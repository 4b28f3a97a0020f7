"""Rec4Ad: the mixed-feed world, the losses on hand-computed cases, IPS weights, bad input, the claims."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from toyscale.core.claims import check_results, unmet
from toyscale.core.seeding import rng
from toyscale.recsys import rec4ad
from toyscale.recsys.world import AD_WORLD, WorldConfig, expose, make_ad_log

torch.set_num_threads(1)
SEEDS = range(5)


@pytest.fixture(scope="module")
def results():
    return [rec4ad.run(rec4ad.Config.fast(), seed=s) for s in SEEDS]


def test_the_ad_world_is_deterministic_and_split_by_policy():
    train_a, test_a, _ = make_ad_log(AD_WORLD, seed=3)
    train_b, test_b, _ = make_ad_log(AD_WORLD, seed=3)
    assert np.array_equal(train_a.y, train_b.y) and np.array_equal(test_a.item, test_b.item)
    n_ads = AD_WORLD.n_contexts
    assert (train_a.is_ad == 1).sum() == n_ads and (train_a.is_ad == 0).sum() == 3 * n_ads
    # the test log holds ads only, each shown by the uniform policy: propensity 1/m
    assert (test_a.is_ad == 1).all()
    assert np.allclose(test_a.propensity, 1.0 / AD_WORLD.ad_candidates)


def test_selection_bias_shows_in_the_click_rate():
    train, test, _ = make_ad_log(AD_WORLD, seed=0)
    # the legacy ranker picks likely clicks: its ads' true CTR exceeds the uniform ads'
    assert train.p_true[train.is_ad == 1].mean() > test.p_true.mean() + 0.05
    # and with τ = 0 the two match within noise
    uniform = replace(AD_WORLD, exposure_bias=0.0)
    train0, test0, _ = make_ad_log(uniform, seed=0)
    assert abs(train0.p_true[train0.is_ad == 1].mean() - test0.p_true.mean()) < 0.02


def test_the_ad_penalty_lowers_the_ad_logit():
    from toyscale.recsys.world import ad_logit

    _, _, world = make_ad_log(AD_WORLD, seed=0)
    user = np.zeros(1, dtype=np.int64)
    ad, organic = world.ads[:1], world.organic[:1]
    no_penalty = replace(AD_WORLD, ad_penalty=0.0)
    gap = ad_logit(no_penalty, world, user, ad) - ad_logit(AD_WORLD, world, user, ad)
    assert gap == pytest.approx(AD_WORLD.ad_penalty)
    assert ad_logit(no_penalty, world, user, organic) == pytest.approx(ad_logit(AD_WORLD, world, user, organic))


def test_expose_propensity_is_the_softmax():
    scores = np.array([[0.0, 1.0, 2.0], [5.0, 5.0, 5.0]])
    column, propensity = expose(scores, 1.0, rng(0))
    softmax = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    assert np.allclose(propensity, softmax[np.arange(2), column])
    _, uniform = expose(scores, 0.0, rng(0))
    assert np.allclose(uniform, 1 / 3)


def test_new_world_fields_validate():
    with pytest.raises(ValueError, match="ad_share"):
        WorldConfig(ad_share=1.0)
    with pytest.raises(ValueError, match="exposure_bias"):
        WorldConfig(exposure_bias=-1.0)
    with pytest.raises(ValueError, match="legacy_blind"):
        WorldConfig(legacy_blind=9)


def test_alignment_loss_hand_computed():
    h_ad = torch.tensor([[0.0, 0.0], [2.0, 0.0]])
    h_rec = torch.tensor([[0.0, 0.0], [0.0, 2.0]])
    # means (1, 0) vs (0, 1): gap 2; covariances diag(2, 0) vs diag(0, 2): Frobenius² 8, over d = 2: 4
    assert rec4ad.alignment_loss(h_ad, h_rec).item() == pytest.approx(6.0)
    assert rec4ad.alignment_loss(h_ad, h_ad).item() == pytest.approx(0.0)


def test_decorrelation_loss_is_zero_for_independent_and_one_for_copies():
    a = torch.tensor([[1.0], [-1.0], [1.0], [-1.0]])
    b = torch.tensor([[1.0], [1.0], [-1.0], [-1.0]])
    assert rec4ad.decorrelation_loss(a, b).item() == pytest.approx(0.0, abs=1e-6)
    assert rec4ad.decorrelation_loss(a, 3 * a).item() == pytest.approx(1.0, abs=1e-4)


def test_ips_weights():
    w = rec4ad.ips_weights(np.array([0.5, 0.05, 0.01]), 10, clip=5.0)
    # raw (1/10)/π = 0.2, 2, 10 → clipped 0.2, 2, 5 → mean 1
    assert np.allclose(w, np.array([0.2, 2.0, 5.0]) / 2.4)
    with pytest.raises(ValueError, match="propensity"):
        rec4ad.ips_weights(np.array([0.0]), 10, clip=5.0)
    with pytest.raises(ValueError, match="clip"):
        rec4ad.ips_weights(np.array([0.5]), 10, clip=0.5)


def test_model_shapes_and_domain_bias():
    for arm in rec4ad.ARMS:
        model = rec4ad.make_model(arm, 8, rec4ad.Config())
        X, is_ad = torch.randn(5, 8), torch.tensor([0, 1, 1, 0, 1])
        assert model(X, is_ad).shape == (5,)
    model = rec4ad.make_model("rec4ad", 8, rec4ad.Config())
    h_s, h_p = model.representations(X, is_ad)
    assert h_s.shape == (5, 32) and h_p.shape == (5, 4)
    with pytest.raises(ValueError, match="arm"):
        rec4ad.make_model("bogus", 8, rec4ad.Config())


def test_serve_picks_the_top_score():
    test = rec4ad.OnlineTest(
        X=np.zeros((2, 2, 1)),
        bid=np.array([[1.0, 2.0], [1.0, 1.0]]),
        p_true=np.array([[0.5, 0.1], [0.2, 0.4]]),
        legacy=np.zeros((2, 2)),
    )
    out = rec4ad.serve(np.array([[1.0, 0.0], [0.0, 1.0]]), test)
    assert out["ctr"] == pytest.approx(0.45) and out["rpm"] == pytest.approx(1000 * 0.45)


def test_bad_config():
    with pytest.raises(TypeError, match="config"):
        rec4ad.run("fast")
    with pytest.raises(ValueError, match="steps"):
        rec4ad.Config(steps=0)
    with pytest.raises(ValueError, match="bias_sweep"):
        rec4ad.Config(bias_sweep=(-1.0,))


def test_run_is_deterministic(results):
    again = rec4ad.run(rec4ad.Config.fast(), seed=0)
    assert again.metrics == results[0].metrics


def test_claims_hold_over_seeds(results):
    outcomes = check_results(rec4ad.CLAIMS, results, list(SEEDS), chapter="rec4ad")
    assert not unmet(outcomes), unmet(outcomes)


def test_a_broken_method_fails_the_claims(results):
    # pretend the mixed models learned nothing from the recommendations: the ads-only numbers
    broken = []
    for r in results:
        metrics = {arm: dict(v) for arm, v in r.metrics.items()}
        metrics["mix_domain"] = dict(metrics["ads_only"])
        metrics["rec4ad"] = dict(metrics["naive_mix"])
        broken.append(replace(r, metrics=metrics))
    outcomes = {o.claim.id: o for o in check_results(rec4ad.CLAIMS, broken, list(SEEDS), guard=False)}
    assert outcomes["rec_samples_raise_auc"].fails_strict
    assert outcomes["calibrated_with_domain_info"].fails_strict
