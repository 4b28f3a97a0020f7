"""JRC: the losses on hand-computed cases, their identities, bad input, and the claims over 5 seeds."""

import math

import numpy as np
import pytest
import torch

from toyscale.core.claims import evaluate, unmet
from toyscale.recsys import jrc

torch.set_num_threads(1)


def test_ranking_loss_on_a_hand_computed_context():
    # one context of three samples, labels (1, 0, 0)
    logits = torch.tensor([[0.0, 2.0], [1.0, 0.0], [0.0, 1.0]])
    y = torch.tensor([1, 0, 0])
    context = torch.tensor([7, 7, 7])
    # sample 0 competes on f1 = (2, 0, 1); samples 1, 2 on f0 = (0, 1, 0)
    lse1, lse0 = math.log(math.e**2 + 1 + math.e), math.log(1 + math.e + 1)
    expected = ((lse1 - 2.0) + (lse0 - 1.0) + (lse0 - 0.0)) / 3
    assert jrc.ranking_loss(logits, y, context).item() == pytest.approx(expected, rel=1e-6)
    # 'other': sample 0 against itself and the negatives (all of them); a negative against itself and sample 0
    other = ((lse1 - 2.0) + (math.log(math.e + 1) - 1.0) + (math.log(1 + 1) - 0.0)) / 3
    assert jrc.ranking_loss(logits, y, context, "other").item() == pytest.approx(other, rel=1e-6)


def test_jrc_loss_mixes_the_two_terms():
    logits, y, context = torch.randn(8, 2), torch.tensor([1, 0, 0, 1, 0, 0, 0, 1]), torch.tensor([0] * 4 + [1] * 4)
    calib, rank = jrc.calibration_loss(logits, y), jrc.ranking_loss(logits, y, context)
    for alpha in (0.0, 0.3, 1.0):
        value = jrc.jrc_loss(logits, y, context, alpha).item()
        assert value == pytest.approx(alpha * calib.item() + (1 - alpha) * rank.item(), rel=1e-6)


def test_p_click_is_softmax_one():
    logits = torch.randn(20, 2)
    assert torch.allclose(jrc.p_click(logits), torch.softmax(logits, dim=1)[:, 1], atol=1e-6)


def test_ranking_term_ignores_a_shift_shared_by_a_context():
    logits, y = torch.randn(10, 2), torch.tensor([1, 0, 0, 1, 0, 1, 0, 0, 0, 1])
    context = torch.tensor([0] * 5 + [1] * 5)
    # add a constant per (context, channel): the within-context softmax is unchanged
    shift = torch.tensor([[3.0, -1.0]] * 5 + [[-2.0, 5.0]] * 5)
    for denominator in jrc.DENOMINATORS:
        before = jrc.ranking_loss(logits, y, context, denominator)
        after = jrc.ranking_loss(logits + shift, y, context, denominator)
        assert after.item() == pytest.approx(before.item(), rel=1e-5)
    s = torch.randn(10)
    before, after = jrc.listwise_loss(s, y, context), jrc.listwise_loss(s + shift[:, 0], y, context)
    assert after.item() == pytest.approx(before.item(), rel=1e-5)


def test_contexts_do_not_mix():
    logits, y = torch.randn(6, 2), torch.tensor([1, 0, 0, 0, 1, 0])
    context = torch.tensor([0, 0, 0, 1, 1, 1])
    together = jrc.ranking_loss(logits, y, context)
    apart = (jrc.ranking_loss(logits[:3], y[:3], context[:3]) + jrc.ranking_loss(logits[3:], y[3:], context[3:])) / 2
    assert together.item() == pytest.approx(apart.item(), rel=1e-6)


def test_listwise_loss_is_jrc_ranking_on_zero_and_s_less_a_constant():
    s, y, context = torch.randn(9), torch.tensor([1, 0, 0, 0, 1, 1, 0, 0, 0]), torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2])
    f = torch.stack([torch.zeros(9), s], dim=1)
    # each of the 6 negatives adds −log(1/n_z) = log 3 on the zero channel
    constant = 6 * math.log(3) / 9
    assert jrc.ranking_loss(f, y, context).item() == pytest.approx(jrc.listwise_loss(s, y, context).item() + constant)


def test_context_logsumexp_is_stable_and_handles_empty_masks():
    scores = torch.tensor([1000.0, 1000.0, -5.0])
    context = torch.tensor([0, 0, 1])
    out = jrc.context_logsumexp(scores, context)
    assert torch.allclose(out, torch.tensor([1000.0 + math.log(2), 1000.0 + math.log(2), -5.0]))
    masked = jrc.context_logsumexp(scores, context, mask=torch.tensor([True, True, False]))
    assert masked[2].item() < -60 and torch.isfinite(masked).all()


def test_gradients_are_finite_for_single_label_contexts():
    logits = torch.randn(6, 2, requires_grad=True)
    y, context = torch.tensor([0, 0, 0, 1, 1, 1]), torch.tensor([0, 0, 0, 1, 1, 1])
    for denominator in jrc.DENOMINATORS:
        jrc.jrc_loss(logits, y, context, 0.5, denominator).backward()
        assert torch.isfinite(logits.grad).all()
        logits.grad = None


def test_model_shapes():
    model = jrc.CTRModel({"user": 5, "item": 4, "seg": 2}, embedding_dim=3, hidden=8, n_logits=2)
    X = torch.tensor([[0, 1, 1], [4, 3, 0]])
    assert model(X).shape == (2, 2)
    single = jrc.CTRModel({"user": 5, "item": 4}, embedding_dim=3, hidden=8, n_logits=1)
    assert single(X[:, :2]).shape == (2, 1)


def test_bad_input_raises_value_error_naming_the_argument():
    logits, y, context = torch.randn(4, 2), torch.tensor([1, 0, 0, 1]), torch.tensor([0, 0, 1, 1])
    with pytest.raises(ValueError, match="alpha"):
        jrc.jrc_loss(logits, y, context, 1.5)
    with pytest.raises(ValueError, match="logits"):
        jrc.jrc_loss(torch.randn(4, 3), y, context, 0.5)
    with pytest.raises(ValueError, match="context"):
        jrc.ranking_loss(logits, y, context[:3])
    with pytest.raises(ValueError, match="y"):
        jrc.calibration_loss(logits, torch.tensor([2, 0, 0, 1]))
    with pytest.raises(ValueError, match="denominator"):
        jrc.ranking_loss(logits, y, context, "some")
    with pytest.raises(ValueError, match="alpha"):
        jrc.combined_loss(torch.randn(4), y, context, -0.1)
    with pytest.raises(ValueError, match="alpha"):
        jrc.Config(alpha=2.0)
    with pytest.raises(ValueError, match="ranking_weights"):
        jrc.Config(ranking_weights=(0.9,))
    with pytest.raises(TypeError, match="config"):
        jrc.run(config="fast")


@pytest.fixture(scope="module")
def fast_results():
    return [jrc.run(jrc.Config.fast(), seed=s) for s in range(5)]


def test_run_is_deterministic_and_complete(fast_results):
    again = jrc.run(jrc.Config.fast(), seed=0)
    assert again.metrics == fast_results[0].metrics
    result = fast_results[0]
    assert set(result.metrics) == {"pointwise", "combined", "jrc", "jrc_other", "oracle"}
    for arm in result.metrics:
        assert set(result.metrics[arm]) == set(jrc.METRIC_NAMES)
    assert len(result.sweep["jrc"]["gauc"]) == len(result.ranking_weights)
    assert result.metrics["oracle"]["log_loss"] < result.metrics["pointwise"]["log_loss"]


def test_figures_build(fast_results):
    result = fast_results[0]
    figures = [jrc.fig_reliability(result), jrc.fig_activity(result)]
    figures += [jrc.fig_sweep(result, metric) for metric in ("gauc", "log_loss", "ece")]
    for fig in figures:
        assert len(fig.data) >= 2 and fig.layout.title.text
    with pytest.raises(ValueError, match="metric"):
        jrc.fig_sweep(result, "nope")


def test_claims_over_five_seeds(fast_results):
    outcomes = evaluate(jrc.CLAIMS, lambda config, seed: fast_results[seed], seeds=range(5))
    assert not unmet(outcomes), unmet(outcomes)
    assert np.mean([r.metrics["jrc"]["gauc"] > r.metrics["pointwise"]["gauc"] for r in fast_results]) == 1.0
