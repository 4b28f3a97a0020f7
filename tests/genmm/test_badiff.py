"""BADiff: the codec, the rate estimate and hinge, the diffusion pieces, the judge, bad input, and the
claims over 5 seeds."""

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from toyscale.core.claims import check_results, evaluate, unmet
from toyscale.genmm import badiff, digits

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def split():
    return digits.split()


@pytest.fixture(scope="module")
def test_images(split):
    return digits.to_unit(split.test_images).astype(np.float64)


# --- the codec --------------------------------------------------------------------------------


def test_context_model_is_a_probability_table():
    for levels in (2, 5, 17):
        table = badiff.context_model(levels)
        assert table.shape == (levels, levels, levels)
        np.testing.assert_allclose((2.0**table).sum(axis=-1), 1.0, atol=1e-12)


def test_codec_bits_by_hand_on_a_tiny_image():
    # one image, L = 2: a single white pixel at (0, 1) in a black image
    image = np.zeros((1, 8, 8))
    image[0, 0, 1] = 1.0
    table = badiff.context_model(2)
    # pixel (0,1) is white with (left, top) = (0, 0); pixel (0,2) black after a white left
    # neighbour; pixel (1,1) black below a white top neighbour; the other 61 pixels black in black
    bits = -(table[0, 0, 1] + table[1, 0, 0] + table[0, 1, 0] + 61 * table[0, 0, 0]) / 64
    assert badiff.codec_bits(image, 2)[0] == pytest.approx(bits)


def test_codec_is_lossless_at_17_levels_and_costs_more_with_more_levels(test_images):
    q = badiff.quantize(test_images, 17)
    np.testing.assert_array_equal(q, digits.split().test_images)
    np.testing.assert_allclose(badiff.dequantize(q, 17), test_images)
    means = [badiff.codec_bits(test_images, level).mean() for level in badiff.LADDER]
    assert all(a < b for a, b in itertools.pairwise(means))


def test_transmit_picks_the_finest_level_that_fits(test_images):
    sent = badiff.transmit(test_images[:50], 1.1)
    for image, level, bpp in zip(test_images[:50], sent.levels, sent.bpp, strict=True):
        assert bpp == pytest.approx(badiff.codec_bits(image[None], int(level))[0])
        finer = [lv for lv in badiff.LADDER if lv > level]
        if bpp <= 1.1 and finer:
            assert badiff.codec_bits(image[None], finer[0])[0] > 1.1
    lossless = badiff.transmit(test_images[:5], 100.0)
    np.testing.assert_allclose(lossless.received, test_images[:5])
    starved = badiff.transmit(test_images[:5], 0.01)
    assert (starved.levels == 2).all() and (starved.bpp > 0.01).all()


# --- the rate estimate and the hinge --------------------------------------------------------------


def test_rate_surrogate_follows_the_codec_and_has_gradients(test_images):
    x = torch.tensor(test_images.reshape(-1, 64), requires_grad=True)
    for level in (2, 3, 4):
        estimate = badiff.rate_surrogate(x, level)
        truth = badiff.codec_bits(test_images, level)
        assert np.corrcoef(estimate.detach().numpy(), truth)[0, 1] > 0.6
        assert abs(estimate.detach().numpy().mean() - truth.mean()) < 0.1
    estimate.sum().backward()
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0


def test_hinge_is_zero_under_target_and_the_mean_excess_above():
    rate = torch.tensor([0.5, 1.0, 1.5])
    target = torch.tensor([1.0, 1.0, 1.0])
    assert badiff.hinge_rate_loss(rate, target).item() == pytest.approx(0.5 / 3)
    assert badiff.hinge_rate_loss(rate * 0.5, target).item() == 0.0
    with pytest.raises(ValueError, match="target_bpp"):
        badiff.hinge_rate_loss(rate, target[:2])


# --- the judge: Fréchet distance, diversity, and images that must not win ---------------------------


def test_frechet_distance_identities():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4000, 3))
    assert badiff.frechet_distance(a, a) == pytest.approx(0.0, abs=1e-6)
    shift = np.array([1.0, 2.0, 0.0])
    assert badiff.frechet_distance(a, a + shift) == pytest.approx(5.0, rel=1e-6)
    # 1-D Gaussians N(0, 1) and N(0, s²): FD = 1 + s² − 2s = (1 − s)²
    one = rng.standard_normal((20000, 1))
    expected = 4 * one.var(ddof=1)  # (σ − 3σ)² with σ² the sample variance
    assert badiff.frechet_distance(one, 3 * one) == pytest.approx(expected, rel=1e-4)


def test_blank_and_faded_images_are_punished(split, test_images):
    judge = badiff.train_classifier()
    reference = badiff.classifier_features(judge, test_images)
    real = digits.to_unit(split.train_images[:539]).astype(np.float64)
    blank = np.zeros_like(real)
    faded = 0.25 * real
    fd_real = badiff.frechet_distance(badiff.classifier_features(judge, real), reference)
    for cheap in (blank, faded):
        # cheap to send ...
        assert badiff.codec_bits(cheap, 4).mean() < badiff.codec_bits(real, 4).mean()
        # ... but the judge sees through them
        assert badiff.frechet_distance(badiff.classifier_features(judge, cheap), reference) > 10 * fd_real
    assert badiff.class_diversity(judge, blank) == 0.0
    assert badiff.class_diversity(judge, real) > 0.95
    assert badiff.classifier_confidence(judge, real) > badiff.classifier_confidence(judge, faded)


def test_classifier_is_accurate_and_deterministic(split, test_images):
    judge = badiff.train_classifier()
    with torch.no_grad():
        predicted = judge(torch.tensor(test_images.reshape(-1, 64), dtype=torch.float32)).argmax(1).numpy()
    assert (predicted == split.test_labels).mean() > 0.9
    train_classifier = badiff.train_classifier.__wrapped__
    again = train_classifier()
    for p, q in zip(judge.parameters(), again.parameters(), strict=True):
        torch.testing.assert_close(p, q)


# --- the diffusion pieces -------------------------------------------------------------------------


def test_schedule_and_embeddings():
    alpha_bar = badiff.cosine_schedule(50)
    assert alpha_bar.shape == (50,) and (alpha_bar[1:] < alpha_bar[:-1]).all()
    assert alpha_bar.min() > 0 and alpha_bar.max() < 1
    e = badiff.sinusoidal_embedding(torch.tensor([0.0, 3.0]), 8)
    assert e.shape == (2, 8)
    torch.testing.assert_close(e[0], torch.tensor([0.0] * 4 + [1.0] * 4))


def test_reverse_step_identities():
    alpha_bar = badiff.cosine_schedule(50)
    torch.manual_seed(0)
    x0, eps, z = torch.rand(4, 64) * 2 - 1, torch.randn(4, 64), torch.randn(4, 64)
    t = 30
    x_t = badiff.q_sample(x0, torch.full((4,), t), eps, alpha_bar)
    # with the true x₀ and η = 0, one step lands exactly on the same ε's point at t − 1
    expected = alpha_bar[t - 1].sqrt() * x0 + (1 - alpha_bar[t - 1]).sqrt() * eps
    torch.testing.assert_close(badiff.reverse_step(x_t, x0, t, alpha_bar, z, eta=0.0), expected)
    # η = 1 is DDPM's posterior q(x_{t−1} | x_t, x₀)
    a, a_prev = alpha_bar[t], alpha_bar[t - 1]
    beta = 1 - a / a_prev
    mean = a_prev.sqrt() * beta / (1 - a) * x0 + (1 - beta).sqrt() * (1 - a_prev) / (1 - a) * x_t
    ddpm = mean + (beta * (1 - a_prev) / (1 - a)).sqrt() * z
    torch.testing.assert_close(badiff.reverse_step(x_t, x0, t, alpha_bar, z, eta=1.0), ddpm)
    torch.testing.assert_close(badiff.reverse_step(x_t, x0, 0, alpha_bar, z, eta=1.0), x0)


def test_denoiser_shapes_and_the_quality_embedding_is_small():
    plain = badiff.Denoiser(128, 2, 50, conditioned=False)
    model = badiff.Denoiser(128, 2, 50, conditioned=True)
    x, t = torch.randn(5, 64), torch.randint(0, 50, (5,))
    x0_hat, h = model(x, t, torch.full((5,), 1.1))
    assert x0_hat.shape == (5, 64) and h.shape == (5, 128)
    assert plain(x, t)[0].shape == (5, 64)
    with pytest.raises(ValueError, match="target_bpp"):
        model(x, t)
    extra = sum(p.numel() for p in model.quality.parameters())
    assert extra < 0.03 * sum(p.numel() for p in plain.parameters())  # the paper: < 0.1 % of a U-Net
    # the target changes the output
    assert not torch.allclose(model(x, t, torch.full((5,), 0.8))[0], x0_hat)


def test_stop_labels_on_a_hand_made_trajectory():
    # three steps, one image: black, then a full-white square, then the same square (the end)
    steps = np.zeros((3, 1, 8, 8))
    steps[1:, 0, 2:6, 2:6] = 1.0
    trajectory = badiff.Trajectory(steps, np.zeros((3, 1, 16), dtype=np.float32))
    best, labels = badiff.stop_labels(trajectory, 100.0, beta=10.0, gamma=0.3)
    # step 2 already equals the end: no distortion, less step cost than step 3 → k* = 2
    assert best.tolist() == [2]
    assert labels[:, 0].tolist() == [0.0, 1.0, 1.0]
    best_cheap, _ = badiff.stop_labels(trajectory, 100.0, beta=0.0, gamma=0.3)
    assert best_cheap.tolist() == [1]  # without a distortion price, the blank first step wins


def test_stop_steps_follow_the_policy():
    trajectory = badiff.Trajectory(np.zeros((5, 3, 8, 8)), np.zeros((5, 3, 16), dtype=np.float32))
    policy = badiff.StopPolicy(16, pooled=4)
    with torch.no_grad():
        policy.mlp[-1].bias.fill_(10.0)
        policy.mlp[-1].weight.zero_()
    assert badiff.stop_steps(policy, trajectory, 1.0, 0.5).tolist() == [1, 1, 1]
    with torch.no_grad():
        policy.mlp[-1].bias.fill_(-10.0)
    assert badiff.stop_steps(policy, trajectory, 1.0, 0.5).tolist() == [5, 5, 5]


# --- bad input ------------------------------------------------------------------------------------


def test_bad_input_raises_clear_errors():
    with pytest.raises(ValueError, match="levels"):
        badiff.codec_bits(np.zeros((1, 8, 8)), 1)
    with pytest.raises(ValueError, match="images"):
        badiff.codec_bits(np.zeros((1, 7, 7)), 4)
    with pytest.raises(ValueError, match="images"):
        badiff.codec_bits(np.full((1, 8, 8), 1.5), 4)
    with pytest.raises(ValueError, match="target_bpp"):
        badiff.transmit(np.zeros((1, 8, 8)), 0.0)
    with pytest.raises(ValueError, match="features"):
        badiff.frechet_distance(np.zeros((5, 3)), np.zeros((5, 4)))
    with pytest.raises(ValueError, match="targets"):
        badiff.Config(targets=(1.4, 0.8))
    with pytest.raises(ValueError, match="train_steps"):
        badiff.Config(train_steps=0)
    with pytest.raises(ValueError, match="threshold"):
        badiff.Config(threshold=1.0)
    with pytest.raises(TypeError, match="config"):
        badiff.run(config="fast")
    with pytest.raises(ValueError, match="levels"):
        badiff.train_denoiser(torch.zeros(4, 64), badiff.Config(), conditioned=True, seed=0, levels={0.8: 2})


# --- the experiment and its claims ----------------------------------------------------------------


@pytest.fixture(scope="module")
def fast_results():
    return [badiff.run(badiff.Config.fast(), seed=s) for s in range(5)]


def test_run_is_deterministic():
    tiny = badiff.Config(train_steps=30, trajectories=8, policy_epochs=5, n_samples=40)
    first, second = badiff.run(tiny, seed=3), badiff.run(tiny, seed=3)
    assert first.metrics == second.metrics and first.stop_steps == second.stop_steps


def test_run_is_complete(fast_results):
    result = fast_results[0]
    assert set(result.metrics) == {*badiff.ARMS, *badiff.DIAGNOSTICS}
    for arm in result.metrics:
        assert set(result.metrics[arm]) == set(badiff.METRICS)
        assert len(result.by_target[arm]["fd"]) == len(result.targets)
    assert result.metrics["cascade"]["evals"] == result.config.steps
    # the naive arm never gets fewer evaluations than BADiff
    for k, naive in zip(result.stop_steps, result.by_target["naive"]["evals"], strict=True):
        assert naive >= np.mean(k) and naive == math.ceil(np.mean(k))


def test_figures_build(fast_results):
    result = fast_results[0]
    for fig in (badiff.fig_samples(result), badiff.fig_quality_vs_rate(result), badiff.fig_evals(result)):
        assert len(fig.data) >= 3 and fig.layout.title.text
    with pytest.raises(ValueError, match="arms"):
        badiff.fig_samples(result, arms=("nope",))


def test_claims_over_five_seeds(fast_results):
    outcomes = evaluate(badiff.CLAIMS, lambda config, seed: fast_results[seed], seeds=range(5))
    assert not unmet(outcomes), unmet(outcomes)


def test_a_broken_method_fails_the_claims(fast_results):
    # a "BADiff" that runs every step saves nothing; one that sends blank images loses on quality
    broken = []
    for result in fast_results:
        metrics = {arm: dict(values) for arm, values in result.metrics.items()}
        metrics["badiff"]["evals"] = float(result.config.steps)
        broken.append(replace(result, metrics=metrics))
    outcomes = {o.claim.id: o for o in check_results(badiff.CLAIMS, broken, range(5), guard=False)}
    assert not outcomes["fewer_evals_than_cascade"].verdict.passed
    judge = badiff.train_classifier()
    reference = badiff.classifier_features(judge, digits.to_unit(digits.split().test_images))
    blank_fd = badiff.frechet_distance(badiff.classifier_features(judge, np.zeros((300, 8, 8))), reference)
    assert blank_fd > 10 * max(r.metrics["cascade"]["fd"] for r in fast_results)
