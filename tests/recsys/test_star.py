"""STAR: the building blocks' identities, the folded serving model, bad input, and the claims over 5 seeds."""

import copy
from dataclasses import replace

import numpy as np
import pytest
import torch

from toyscale.core.claims import check_results, evaluate, unmet
from toyscale.recsys import star
from toyscale.recsys.world import MULTI_DOMAIN, make_domain_log

torch.set_num_threads(1)


def _trained_like(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Perturb every parameter and buffer, as training would, so identities are not tested at init only."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=generator))
        for name, b in model.named_buffers():
            if "var" in name:
                b.copy_(0.5 + torch.rand(b.shape, generator=generator))
            elif "mean" in name:
                b.copy_(torch.randn(b.shape, generator=generator))
    return model


# ------------------------------------------------------------------------------ PartitionedNorm


def test_partitioned_norm_hand_computed_single_domain_batch():
    pn = star.PartitionedNorm(1, 2)
    with torch.no_grad():
        pn.gamma.fill_(2.0)
        pn.domain_gamma[1].fill_(3.0)
        pn.beta.fill_(0.5)
        pn.domain_beta[1].fill_(-1.0)
    z = torch.tensor([[1.0], [3.0]])  # mean 2, variance 1
    out = pn(z, torch.tensor([1, 1]))
    # (γ·γ_p) (z − μ)/√(σ² + ε) + (β + β_p) = 6 · (∓1)/√(1 + 1e-5) − 0.5
    expected = torch.tensor([[-6.0], [6.0]]) / np.sqrt(1 + 1e-5) - 0.5
    torch.testing.assert_close(out, expected)
    # only domain 1's moving averages moved: μ ← 0.9·0 + 0.1·2, σ² ← 0.9·1 + 0.1·1
    torch.testing.assert_close(pn.running_mean, torch.tensor([[0.0], [0.2]]))
    torch.testing.assert_close(pn.running_var, torch.tensor([[1.0], [1.0]]))


def test_partitioned_norm_uses_each_domains_statistics_at_test_time():
    pn = star.PartitionedNorm(3, 2).eval()
    with torch.no_grad():
        pn.running_mean.copy_(torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.0, 1.0]]))
        pn.running_var.copy_(torch.tensor([[4.0, 4.0, 4.0], [0.25, 0.25, 0.25]]))
    z = torch.tensor([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    out = pn(z, torch.tensor([0, 1]))
    torch.testing.assert_close(out[0], torch.zeros(3), atol=1e-6, rtol=0)
    torch.testing.assert_close(out[1], torch.tensor([4.0, 4.0, 4.0]), rtol=1e-4, atol=0)
    scale, offset = pn.affine(1)
    torch.testing.assert_close(out[1], scale * z[1] + offset)


def test_partitioned_norm_at_init_is_batch_norm_on_a_single_domain_batch():
    z = torch.randn(64, 5) * 3 + 1
    pn, bn = star.PartitionedNorm(5, 3), torch.nn.BatchNorm1d(5)
    torch.testing.assert_close(pn(z, torch.full((64,), 2)), bn(z))


def test_partitioned_norm_of_a_mixed_batch_normalizes_each_domain_apart():
    z, domain = torch.randn(40, 4), torch.tensor([0, 1] * 20)
    together = star.PartitionedNorm(4, 2)(z, domain)
    for d in (0, 1):
        alone = star.PartitionedNorm(4, 2)(z[domain == d], domain[domain == d])
        torch.testing.assert_close(together[domain == d], alone)


# ------------------------------------------------------------------------------ StarTopologyFCN


def test_star_fcn_starts_as_the_shared_network_in_every_domain():
    fcn = star.StarTopologyFCN([5, 8, 4, 1], n_domains=3)
    x = torch.randn(10, 5)
    outs = [fcn(x, torch.full((10,), d)) for d in range(3)]
    # the shared network alone: ReLU(W1 x + b1) → ReLU(W2 · + b2) → W3 · + b3
    h = torch.relu(x @ fcn.weight[0].T + fcn.bias[0])
    h = torch.relu(h @ fcn.weight[1].T + fcn.bias[1])
    shared = (h @ fcn.weight[2].T + fcn.bias[2]).squeeze(1)
    for out in outs:
        torch.testing.assert_close(out, shared)


def test_star_fcn_layer_is_the_elementwise_product():
    fcn = _trained_like(star.StarTopologyFCN([3, 1], n_domains=2))
    x = torch.randn(6, 3)
    W, b = fcn.weight[0], fcn.bias[0]
    Wp, bp = fcn.domain_weight[0][1], fcn.domain_bias[0][1]
    # out = (W_p ⊙ W) x + b_p + b
    torch.testing.assert_close(fcn(x, torch.ones(6, dtype=torch.long)), (x @ (Wp * W).T + bp + b).squeeze(1))


def test_a_domains_weights_change_only_that_domain():
    fcn = star.StarTopologyFCN([4, 6, 1], n_domains=3)
    x = torch.randn(9, 4)
    domain = torch.tensor([0, 1, 2] * 3)
    before = fcn(x, domain)
    with torch.no_grad():
        fcn.domain_weight[0][1].mul_(2.0)
    after = fcn(x, domain)
    torch.testing.assert_close(after[domain != 1], before[domain != 1])
    assert not torch.allclose(after[domain == 1], before[domain == 1])


def test_auxiliary_network_gives_one_logit_per_domain():
    aux = star.AuxiliaryNetwork(4)
    out = aux(torch.tensor([0, 2, 0, 2, 3]))
    assert out.shape == (5,) and out[0] == out[2] and out[1] == out[3]


# ------------------------------------------------------------------------------ STAR and folding


@pytest.mark.parametrize("norm, aux", [("pn", True), ("pn", False), ("bn", True)])
def test_folded_model_gives_the_same_logits(norm, aux):
    model = star.STAR(6, 3, hidden=(8, 4), norm=norm, aux=aux)
    model.train()
    for d in range(3):  # a few training-mode passes fill the moving statistics
        model(torch.randn(32, 6) * (d + 1) + d, torch.full((32,), d))
    model = _trained_like(model).eval()
    folded = star.fold_star(model)
    X, domain = torch.randn(300, 6) * 2, torch.randint(0, 3, (300,))
    torch.testing.assert_close(folded(X, domain), model(X, domain), rtol=1e-5, atol=1e-5)
    # the folded model is plain layers: per domain, the shared network's shapes and nothing else
    shapes = [tuple(p.shape) for p in folded.networks[0].parameters()]
    assert shapes == [(8, 6), (8,), (4, 8), (4,), (1, 4), (1,)]


def test_fold_star_rejects_a_model_in_training_mode_or_not_star():
    model = star.STAR(4, 2, hidden=(8,))
    with pytest.raises(ValueError, match="eval"):
        star.fold_star(model)
    with pytest.raises(TypeError, match="STAR"):
        star.fold_star(torch.nn.Linear(2, 1))


def test_star_model_shapes_and_every_baseline():
    log = make_domain_log(replace(MULTI_DOMAIN, n_contexts=300), seed=0)[0]
    config = star.Config(hidden=(8, 4))
    data = star.as_tensors(log)
    for arm in star.ARMS:
        model = star.build_model(arm, log, config)
        out = model(data["X"], data["domain"])
        assert out.shape == (len(log),) and torch.isfinite(out).all()


def test_separate_models_learn_only_from_their_domain():
    log = make_domain_log(replace(MULTI_DOMAIN, n_contexts=300), seed=0)[0]
    model = star.build_model("separate", log, star.Config(hidden=(8,)))
    data = star.as_tensors(log)
    rows = data["domain"] == 2
    model(data["X"][rows], data["domain"][rows]).sum().backward()
    for d, mlp in enumerate(model.mlps):
        has_grad = any(p.grad is not None and p.grad.abs().sum() > 0 for p in mlp.parameters())
        assert has_grad == (d == 2)


def test_domain_batches_hold_one_domain_and_cover_every_row():
    domain = np.repeat(np.arange(4), [50, 30, 7, 1])
    batches = list(star.domain_batches(domain, 16, seed=0))
    for index in batches:
        assert np.unique(domain[index]).size == 1 and index.size <= 16
    assert np.array_equal(np.sort(np.concatenate(batches)), np.arange(domain.size))
    again = list(star.domain_batches(domain, 16, seed=0))
    assert all(np.array_equal(a, b) for a, b in zip(batches, again, strict=True))


def test_mlp_flops():
    assert star.mlp_flops([10, 4, 1]) == 2 * (40 + 4)


# ------------------------------------------------------------------------------ bad input


def test_bad_input_raises_value_error_naming_the_argument():
    with pytest.raises(ValueError, match="norm"):
        star.STAR(4, 2, norm="ln")
    with pytest.raises(ValueError, match="domain"):
        star.STAR(4, 2)(torch.randn(3, 4), torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="domain"):
        star.PartitionedNorm(4, 2)(torch.randn(3, 4), torch.tensor([0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="widths"):
        star.StarTopologyFCN([4, 8, 2], 2)
    with pytest.raises(ValueError, match="momentum"):
        star.PartitionedNorm(4, 2, momentum=0.0)
    with pytest.raises(ValueError, match="batch_size"):
        next(star.domain_batches(np.zeros(4, dtype=int), 0, seed=0))
    with pytest.raises(ValueError, match="hidden"):
        star.Config(hidden=())
    with pytest.raises(ValueError, match="epochs"):
        star.Config(epochs=0)
    with pytest.raises(ValueError, match="n_domains"):
        star.Config(world=replace(MULTI_DOMAIN, n_domains=1))
    with pytest.raises(TypeError, match="world"):
        star.Config(world="big")
    with pytest.raises(TypeError, match="config"):
        star.run(config="fast")
    with pytest.raises(ValueError, match="arms"):
        star.run(star.Config.fast(), arms=("star", "cross_stitch"))
    with pytest.raises(ValueError, match="rhos"):
        star.rho_sweep(star.Config.fast(), rhos=())


# ------------------------------------------------------------------------------ the experiment


@pytest.fixture(scope="module")
def fast_results():
    return [star.run(star.Config.fast(), seed=s) for s in range(5)]


def test_run_is_complete_and_sane(fast_results):
    result = fast_results[0]
    assert set(result.metrics) == {*star.ARMS, "oracle"}
    for arm in result.metrics:
        assert set(result.metrics[arm]) == set(star.METRIC_NAMES)
        assert len(result.domain_auc[arm]) == len(result.train_rows) == 6
    assert result.train_rows[-1] == min(result.train_rows)  # the last domain is the smallest
    assert result.metrics["oracle"]["auc_weighted"] > max(result.metrics[a]["auc_weighted"] for a in star.ARMS)
    assert len(result.domain_weights) == 3 and result.domain_weights[0].shape == (6, 64, 12)
    assert result.fold_max_diff < star.FOLD_TOLERANCE


def test_run_is_deterministic():
    config = star.Config(world=replace(MULTI_DOMAIN, n_contexts=1200), epochs=1)
    a, b = star.run(config, seed=3, arms=("star",)), star.run(config, seed=3, arms=("star",))
    assert a.metrics == b.metrics and set(a.metrics) == {"shared", "star", "oracle"}


def test_figures_build(fast_results):
    result = fast_results[0]
    for fig in (star.fig_domain_auc(result), star.fig_domain_weights(result), star.fig_history(result)):
        assert len(fig.data) >= 2 and fig.layout.title.text
    sweep = star.RhoSweep(rhos=[0.0, 1.0], gain={"star": [0.01, 0.02]}, smallest_gain={"star": [0.0, 0.0]}, seed=0)
    assert star.fig_rho_gain(sweep).layout.title.text
    with pytest.raises(ValueError, match="layer"):
        star.fig_domain_weights(result, layer=5)


def test_claims_over_five_seeds(fast_results):
    outcomes = evaluate(star.CLAIMS, lambda config, seed: fast_results[seed], seeds=range(5))
    assert not unmet(outcomes), unmet(outcomes)


def test_a_broken_method_fails_the_claims(fast_results):
    # STAR with batch norm in place of partitioned normalization, reported as STAR
    broken = []
    for result in fast_results:
        fake = copy.deepcopy(result)
        fake.metrics["star"] = dict(result.metrics["star_bn"])
        broken.append(fake)
    outcomes = {o.claim.id: o for o in check_results(star.CLAIMS, broken, range(5), guard=False)}
    assert not outcomes["beats_shared"].verdict.passed
    assert not outcomes["beats_separate"].verdict.passed
    assert not outcomes["pn_beats_bn"].verdict.passed
