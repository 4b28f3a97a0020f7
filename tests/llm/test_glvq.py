"""GLVQ: Babai rounding against brute force, companding, the fit, bit accounting, bad input, claims over 5 seeds."""

import dataclasses
import math

import pytest
import torch

from toyscale.core.claims import evaluate, unmet
from toyscale.llm import glvq
from toyscale.llm.corpus import build_corpus
from toyscale.llm.tinylm import TinyLMConfig, bits_per_char

torch.set_num_threads(1)


def _random_lattice(d: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.eye(d, dtype=torch.float64) + 0.4 * torch.randn(d, d, generator=generator, dtype=torch.float64)


def test_babai_on_a_hand_computed_case():
    G = torch.tensor([[2.0, 0.0], [0.0, 0.5]], dtype=torch.float64)
    X = torch.tensor([[3.1, -0.9], [0.26, 1.4]], dtype=torch.float64)
    # G⁻¹X = [[1.55, -0.45], [0.52, 2.8]] → round → [[2, -0], [1, 3]]
    assert glvq.babai_round(G, X).tolist() == [[2.0, -0.0], [1.0, 3.0]]
    # 2 bits hold [-2, 1]: the 3 is clamped to 1
    assert glvq.babai_round(G, X, bits=2).tolist() == [[1.0, -0.0], [1.0, 1.0]]


def test_babai_is_the_nearest_point_for_an_orthogonal_basis():
    Q, _ = torch.linalg.qr(torch.randn(4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0)))
    G = Q * torch.tensor([0.5, 1.0, 2.0, 0.7], dtype=torch.float64)
    for x in torch.randn(50, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1)):
        assert torch.equal(glvq.babai_round(G, x[:, None])[:, 0], glvq.nearest_point(G, x, radius=1))


def test_babai_against_brute_force_on_skewed_lattices():
    # Babai is never closer than the brute-force nearest point, and often equal to it
    G = _random_lattice(3, seed=2)
    X = torch.randn(200, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3)) * 3
    babai = glvq.babai_round(G, X.T).T
    exact = torch.stack([glvq.nearest_point(G, x, radius=2) for x in X])
    d_babai = ((babai @ G.T - X) ** 2).sum(dim=1)
    d_exact = ((exact @ G.T - X) ** 2).sum(dim=1)
    assert bool((d_exact <= d_babai + 1e-12).all())
    assert 0.3 < float((d_exact == d_babai).double().mean()) < 1.0


def test_indices_stay_in_their_b_bit_range():
    W = torch.randn(64, 32, dtype=torch.float64) * torch.rand(1, 32, dtype=torch.float64) * 5
    X = torch.randn(32, 500, dtype=torch.float64)
    H = X @ X.T / 500
    for bits in (1, 2, 3, 4):
        code = glvq.glvq_quantize(W, H, bits, glvq.GLVQSettings(group_size=512, iterations=5))
        lo, hi = glvq.index_range(bits)
        assert code.Z.min() >= lo and code.Z.max() <= hi
        assert torch.equal(code.Z, torch.round(code.Z))
    per_group = torch.tensor([1, 2, 3, 4])
    code = glvq.glvq_quantize(W, H, per_group, glvq.GLVQSettings(group_size=512, iterations=5))
    for g, bits in enumerate(per_group.tolist()):
        lo, hi = glvq.index_range(bits)
        assert code.Z[g].min() >= lo and code.Z[g].max() <= hi


def test_mu_law_inverts_and_is_odd():
    w = torch.linspace(-1.5, 1.5, 101, dtype=torch.float64)
    mu, scale = torch.tensor(40.0, dtype=torch.float64), torch.tensor(1.5, dtype=torch.float64)
    y = glvq.mu_law(w, mu, scale)
    torch.testing.assert_close(glvq.mu_law_inverse(y, mu, scale), w)
    torch.testing.assert_close(glvq.mu_law(-w, mu, scale), -y)
    assert float(y[-1]) == pytest.approx(1.5)  # [−s, s] maps onto itself
    # small weights are stretched: F(0.01 s) ≫ 0.01 s
    assert float(glvq.mu_law(torch.tensor(0.015), mu, scale)) > 5 * 0.015


def test_decoding_is_a_matrix_vector_product():
    W = torch.randn(32, 16, dtype=torch.float64)
    code = glvq.glvq_quantize(
        W,
        torch.eye(16, dtype=torch.float64),
        3,
        glvq.GLVQSettings(group_size=256, companding=False, row_scale=False, iterations=3),
    )
    # the first sub-vector of the first row: ŵ = G (z + ½)
    torch.testing.assert_close(glvq.decode(code)[0, :4], code.G[0] @ (code.Z[0, :, 0] + 0.5))


def test_learning_g_lowers_the_output_error_and_beats_the_init():
    X = glvq.synthetic_groups(4, 256, 4, seed=0)
    identity = torch.eye(4, dtype=torch.float64)
    base = glvq.GLVQSettings(dim=4, group_size=1024, row_scale=False)
    fixed = glvq.glvq_quantize(X, identity, 2, glvq.replace_settings(base, learn=False))
    learned = glvq.glvq_quantize(X, identity, 2, base)
    assert glvq.sqnr_db(X, glvq.decode(learned)) >= glvq.sqnr_db(X, glvq.decode(fixed))


def test_identical_inputs_give_identical_codes():
    W = torch.randn(64, 32, dtype=torch.float64)
    H = torch.eye(32, dtype=torch.float64)
    a = glvq.glvq_quantize(W, H, 2, glvq.GLVQSettings(group_size=512, iterations=10))
    b = glvq.glvq_quantize(W, H, 2, glvq.GLVQSettings(group_size=512, iterations=10))
    assert torch.equal(a.Z, b.Z) and torch.equal(a.G, b.G)


def test_side_information_is_charged():
    W = torch.randn(64, 32, dtype=torch.float64)
    H = torch.eye(32, dtype=torch.float64)
    code = glvq.glvq_quantize(W, H, 2, glvq.GLVQSettings(group_size=512, iterations=2))
    # 4 groups of 512 weights: G 16 fp16 numbers, μ and s in fp16, a 2-bit width code; 64 fp16 row scales
    assert code.side_bits() == 4 * (16 * 16 + 2 * 16 + 2) + 64 * 16
    assert code.index_bits() == 2 * W.numel()
    bpw = glvq.bits_per_weight(code.index_bits(), code.side_bits(), W.numel())
    assert bpw == pytest.approx(2 + code.side_bits() / W.numel())
    shared = glvq.glvq_quantize(W, H, 2, glvq.GLVQSettings(group_size=512, iterations=2, shared=True))
    assert shared.side_bits() == 1 * 16 * 16 + 4 * (2 * 16 + 2) + 64 * 16
    assert torch.equal(shared.G[0], shared.G[3])


def test_salience_allocation_keeps_the_exact_mean():
    salience = torch.tensor([5.0, 0.1, 3.0, 0.2, 9.0, 1.0, 0.5, 2.0])
    bits = glvq.allocate_bits(salience, 3, fraction=0.25)
    assert bits.tolist() == [4, 2, 3, 2, 4, 3, 3, 3]
    assert bits.double().mean() == 3
    assert glvq.allocate_bits(salience, 2, fraction=0.0).tolist() == [2] * 8
    with pytest.raises(ValueError, match="fraction"):
        glvq.allocate_bits(salience, 3, fraction=0.7)


def test_rtn_and_gptq_use_the_b_bit_grid():
    W = torch.randn(8, 64, dtype=torch.float64)
    W_hat, step = glvq.rtn_quantize(W, 2)
    levels = W_hat / step[:, None] - 0.5
    assert torch.allclose(levels, torch.round(levels)) and levels.min() >= -2 and levels.max() <= 1
    X = torch.randn(64, 400, dtype=torch.float64)
    H = X @ X.T / 400
    Q = glvq.gptq_quantize(W, H, 2)
    assert len(torch.unique(Q[0])) <= 4
    # error feedback lowers the output error against plain RTN on the same grid
    err = lambda A: float(((W - A) @ H * (W - A)).sum())  # noqa: E731
    assert err(Q) < err(W_hat)


def test_synthetic_structure_and_the_negative_control():
    X = glvq.synthetic_groups(8, 256, 8, seed=0)
    sqnr = glvq.synthetic_sqnr(X, 2, 8, glvq.GLVQSettings())
    assert sqnr["glvq"] > sqnr["rtn"] + 1.0
    gaussian = glvq.synthetic_groups(8, 256, 8, seed=0, heavy_tailed=False)
    control = glvq.synthetic_sqnr(gaussian, 2, 8, glvq.GLVQSettings())
    assert control["glvq"] < control["rtn"] + 0.5
    assert math.isfinite(glvq.sqnr_db(X, X * 0.9))


def test_bad_input_raises_value_error_naming_the_argument():
    with pytest.raises(ValueError, match="bits"):
        glvq.babai_round(torch.eye(2), torch.ones(2, 3), bits=0)
    with pytest.raises(ValueError, match="X must be"):
        glvq.babai_round(torch.eye(2), torch.ones(3, 3))
    with pytest.raises(ValueError, match="group_size"):
        glvq.glvq_quantize(torch.randn(10, 8), torch.eye(8), 2, glvq.GLVQSettings(group_size=64))
    with pytest.raises(ValueError, match="H"):
        glvq.glvq_quantize(torch.randn(16, 8), torch.eye(4), 2)
    with pytest.raises(ValueError, match="arm"):
        glvq.quantize_model(None, {}, 2, "awq", glvq.GLVQSettings())
    with pytest.raises(ValueError, match="bits"):
        glvq.Config(bits=(1, 2))
    with pytest.raises(TypeError, match="config"):
        glvq.run(config="fast")
    with pytest.raises(ValueError, match="seed"):
        glvq.run(seed=-1)
    with pytest.raises(ValueError, match="ablation_bits"):
        glvq.Config(ablation_bits=(3,))
    with pytest.raises(TypeError, match="training"):
        glvq.Config(training=glvq.Config())


@pytest.fixture(scope="module")
def fast_results():
    return [glvq.run(glvq.Config.fast(), seed=s) for s in range(5)]


def test_run_is_complete_honest_and_deterministic(fast_results):
    result = fast_results[0]
    assert result.lm_loaded  # the fast config quantizes the committed model
    assert set(result.metrics) == {"fp", *glvq.LM_ARMS}
    for arm in glvq.LM_ARMS:
        assert {f"bpc@{b}" for b in glvq.arm_bits(result.config, arm)} <= set(result.metrics[arm])
        for bits in glvq.arm_bits(result.config, arm):
            # the true size includes side information: never below the nominal bits
            assert bits < result.metrics[arm][f"bpw@{bits}"] < bits + 1.0
            assert result.metrics[arm][f"bpc@{bits}"] > result.metrics["fp"]["bpc"] - 0.05
    again = glvq.run(glvq.Config.fast(), seed=0)
    assert again.metrics == result.metrics and again.synthetic == result.synthetic


def test_figures_build(fast_results):
    result = fast_results[0]
    for fig in (glvq.fig_synthetic(result), glvq.fig_tradeoff(result), glvq.fig_lattice(result)):
        assert len(fig.data) >= 3 and fig.layout.title.text


def test_claims_over_five_seeds(fast_results):
    outcomes = evaluate(glvq.CLAIMS, lambda config, seed: fast_results[seed], seeds=range(5))
    assert not unmet(outcomes), unmet(outcomes)


def test_a_broken_method_fails_the_headline_claim(fast_results):
    # swap GLVQ's numbers for RTN's: the headline claim must fail
    broken = []
    for r in fast_results:
        metrics = {**r.metrics, "glvq": dict(r.metrics["rtn"])}
        broken.append(dataclasses.replace(r, metrics=metrics))
    claim = next(c for c in glvq.CLAIMS if c.id == "beats_rtn_at_2_bits")
    assert not claim.check(broken).passed


def test_the_committed_model_is_the_default_training_in_fp16():
    prose = build_corpus(["prose"], seed=1)["prose"]
    model, history, loaded = glvq.trained_model(glvq.LMTraining(), prose.train, seed=1)
    assert loaded and len(history) == glvq.LMTraining().steps // 100
    assert history[-1] < history[0] - 1.0  # it was trained
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, tensor.half().float()), f"{name} is not fp16"
    # trained well beyond a unigram model of the text (about 4.4 bits per character)
    assert bits_per_char(model, prose.test[:10_000]) < 2.3


def test_other_training_settings_train_a_model_instead_of_loading_one():
    prose = build_corpus(["prose"], seed=0, max_chars=20_000, block_chars=1000)["prose"]
    tiny = glvq.LMTraining(lm=TinyLMConfig(d_model=16, n_head=2, context=16), steps=5)
    model, history, loaded = glvq.trained_model(tiny, prose.train, seed=0)
    assert not loaded and len(history) == 1 and model.config == tiny.lm
    again, _, _ = glvq.trained_model(tiny, prose.train, seed=0)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values(), strict=True))
    with pytest.raises(ValueError, match="steps"):
        glvq.LMTraining(steps=0)
