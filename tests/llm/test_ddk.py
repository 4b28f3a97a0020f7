"""DDK: the teacher, Eq. 1 and Eq. 2 on hand-computed cases, the sampler, the loss, bad input, claims over 5 seeds."""

import copy
import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from toyscale.core.claims import check_results, evaluate, unmet
from toyscale.llm import ddk
from toyscale.llm.corpus import ALPHABET, VOCAB_SIZE, encode

torch.set_num_threads(1)


def test_teacher_on_a_hand_computed_case():
    # text "abab": after 'a' always 'b' (C = 2, T = 1); after 'b' once 'a' (C = 1, T = 1)
    text = encode("abab")
    teacher = ddk.NGramTeacher([text], order=2, calculator=False)
    unigram = np.ones(VOCAB_SIZE)
    unigram[ALPHABET.index("a")] += 2
    unigram[ALPHABET.index("b")] += 2
    unigram /= 4 + VOCAB_SIZE
    p = np.exp(teacher.log_probs(encode("ab")[None, :]))[0, 0]
    # P(c | 'a') = (C(a, c) + T(a) · P0(c)) / (C(a) + T(a)) = (2·[c = b] + P0(c)) / 3
    expected = (2 * (np.arange(VOCAB_SIZE) == ALPHABET.index("b")) + unigram) / 3
    np.testing.assert_allclose(p, expected, rtol=1e-5)
    # an unseen context falls back to the unigram
    p_unseen = np.exp(teacher.log_probs(encode("zz")[None, :]))[0, 0]
    np.testing.assert_allclose(p_unseen, unigram, rtol=1e-5)


def test_teacher_gives_distributions_that_see_only_the_window():
    rng = np.random.default_rng(0)
    texts = [rng.integers(0, 20, 3000), encode("the cat sat on the mat. " * 100)]
    teacher = ddk.NGramTeacher(texts, order=4, calculator=False)
    windows = rng.integers(0, 20, (6, 12))
    p = np.exp(teacher.log_probs(windows))
    assert p.shape == (6, 11, VOCAB_SIZE)
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-5)
    assert (p > 0).all()
    # position t depends only on the last order − 1 = 3 characters up to t
    other = windows.copy()
    other[:, :4] = rng.integers(0, 20, (6, 4))
    q = np.exp(teacher.log_probs(other))
    np.testing.assert_allclose(p[:, 6:], q[:, 6:], rtol=1e-6)
    # a window is scored on its own: cut at position 5, its rows with 3 characters of context
    # inside it are the full window's, and its first row (1 character of context) is not
    sub = np.exp(teacher.log_probs(windows[:, 5:]))
    np.testing.assert_allclose(sub[:, 2:], p[:, 7:], rtol=1e-6)
    assert not np.allclose(sub[:, 0], p[:, 5])


def test_calculator_knows_the_answer_only_for_whole_facts():
    teacher = ddk.NGramTeacher([encode("1+1=2\n" * 50)], order=3, calculator=True)
    window = encode("\n12+30=42\n7")[None, :]
    p = np.exp(teacher.log_probs(window))[0]
    text = "\n12+30=42\n7"
    for target in (7, 8, 9):  # '4', '2', '\n'
        assert p[target - 1, ALPHABET.index(text[target])] >= ddk.CALCULATOR_CONFIDENCE
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-5)
    # without the newline before it, the first operand may be cut off: no answer is given
    cut = np.exp(teacher.log_probs(encode("2+30=42\n")[None, :]))[0]
    assert cut[4, ALPHABET.index("4")] < 0.5


def test_domain_factors_on_a_hand_computed_case():
    r = ddk.domain_factors([2.0, 6.0], [2.0, 3.0])  # ratios 1 and 2
    np.testing.assert_allclose(r, [1 / (1 + math.e), math.e / (1 + math.e)])
    # only the ratio matters
    np.testing.assert_allclose(ddk.domain_factors([4.0, 12.0], [4.0, 6.0]), r)


def test_smooth_factors_on_a_hand_computed_case_and_identities():
    r = np.array([0.5, 0.25, 0.25])
    ratio = np.array([1.0, 2.0, 1.5])
    psi = r * np.exp(ratio)
    expected = 0.5 * psi / psi.sum() + 0.5 / 3
    np.testing.assert_allclose(ddk.smooth_factors(r, ratio * 3.0, [3.0] * 3, alpha=0.5), expected)
    # α = 1 from a uniform r is Eq. 1; α = 0 is the uniform mix
    uniform = np.full(3, 1 / 3)
    np.testing.assert_allclose(ddk.smooth_factors(uniform, ratio, [1.0] * 3, 1.0), ddk.domain_factors(ratio, [1.0] * 3))
    np.testing.assert_allclose(ddk.smooth_factors(r, ratio, [1.0] * 3, 0.0), uniform)


def test_smoothing_keeps_r_within_its_bounds():
    rng = np.random.default_rng(1)
    n, alpha = 5, 0.5
    r = np.full(n, 1 / n)
    for _ in range(200):
        r = ddk.smooth_factors(r, rng.uniform(1, 8, n), np.ones(n), alpha)
        assert r.sum() == pytest.approx(1.0)
        assert r.min() >= (1 - alpha) / n - 1e-12 and r.max() <= alpha + (1 - alpha) / n + 1e-12
    # a domain that always lags most climbs to a fixed point below the upper bound, which it
    # approaches as its lead grows: the floor hands every other domain (1 − α)/N back each time
    for lead, gap in ((2.0, 0.06), (9.0, 1e-3)):
        r = np.full(n, 1 / n)
        for _ in range(200):
            r = ddk.smooth_factors(r, [1.0 + lead, 1.0, 1.0, 1.0, 1.0], np.ones(n), alpha)
        assert 0 < (alpha + (1 - alpha) / n) - r[0] < gap


def test_sampler_follows_r():
    generator = torch.Generator().manual_seed(0)
    r = np.array([0.6, 0.3, 0.1, 0.0])
    draws = ddk.sample_domains(r, 20_000, generator)
    freq = np.bincount(draws.numpy(), minlength=4) / 20_000
    np.testing.assert_allclose(freq, r, atol=0.015)
    assert freq[3] == 0
    a = ddk.sample_domains(r, 50, torch.Generator().manual_seed(3))
    b = ddk.sample_domains(r, 50, torch.Generator().manual_seed(3))
    assert torch.equal(a, b)


def test_distillation_loss():
    logits = torch.randn(2, 5, 7)
    targets = torch.randint(0, 7, (2, 5))
    ce = F.cross_entropy(logits.reshape(-1, 7), targets.reshape(-1))
    teacher = torch.log_softmax(torch.randn(2, 5, 7), -1)
    assert ddk.distillation_loss(logits, targets, teacher, 0.0).item() == pytest.approx(ce.item(), rel=1e-6)
    # a teacher equal to the student adds nothing; any other teacher adds γ · KL > 0
    same = torch.log_softmax(logits, -1)
    assert ddk.distillation_loss(logits, targets, same, 0.5).item() == pytest.approx(ce.item(), rel=1e-5)
    p_t = teacher.exp()
    kl = (p_t * (teacher - torch.log_softmax(logits, -1))).sum(-1).mean()
    value = ddk.distillation_loss(logits, targets, teacher, 0.2).item()
    assert value == pytest.approx(ce.item() + 0.2 * kl.item(), rel=1e-5)
    assert kl.item() > 0


def test_bad_input_raises_value_error_naming_the_argument():
    with pytest.raises(ValueError, match="student_ppl"):
        ddk.domain_factors([1.0, -2.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="one value per domain"):
        ddk.domain_factors([1.0, 2.0], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="r must sum to 1"):
        ddk.smooth_factors([0.5, 0.6], [1.0, 2.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="alpha"):
        ddk.smooth_factors([0.5, 0.5], [1.0, 2.0], [1.0, 1.0], alpha=1.5)
    with pytest.raises(ValueError, match="r must be"):
        ddk.sample_domains([0.5, 0.2], 3, torch.Generator())
    with pytest.raises(ValueError, match="gamma"):
        ddk.distillation_loss(torch.zeros(1, 2, 3), torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 2, 3), -1)
    with pytest.raises(ValueError, match="order"):
        ddk.NGramTeacher([encode("abc")], order=0)
    with pytest.raises(ValueError, match="windows"):
        ddk.NGramTeacher([encode("abcdef")], order=2).log_probs(np.zeros(5, dtype=np.int64))
    with pytest.raises(ValueError, match="domains"):
        ddk.Config(domains=("prose", "poetry"))
    with pytest.raises(ValueError, match="update_every"):
        ddk.Config(steps=100, update_every=30)
    with pytest.raises(ValueError, match="alpha"):
        ddk.Config(alpha=2.0)
    with pytest.raises(TypeError, match="config"):
        ddk.run(config="fast")
    with pytest.raises(ValueError, match="seed"):
        ddk.run(ddk.Config.fast(), seed=-1)
    with pytest.raises(ValueError, match="arm"):
        ddk.distill_arm("doremi", None, None, ddk.Config.fast(), 0, np.ones(5) / 5)


@pytest.fixture(scope="module")
def fast_results():
    return [ddk.run(ddk.Config.fast(), seed=s) for s in range(5)]


def test_run_is_deterministic():
    tiny = ddk.Config(
        chars_per_domain=61_440, warmup_steps=20, steps=40, update_every=10, val_windows=8, test_windows=8
    )
    first, again = ddk.run(tiny, seed=3), ddk.run(tiny, seed=3)
    assert again.metrics == first.metrics
    assert again.r_history == first.r_history
    assert ddk.run(tiny, seed=4).metrics != first.metrics


def test_run_is_complete(fast_results):
    result = fast_results[0]
    assert set(result.metrics) == {"teacher", "warm", *ddk.ARMS}
    config = result.config
    n_updates = config.steps // config.update_every
    for arm in ddk.ARMS:
        assert len(result.r_history[arm]) == n_updates
        assert len(result.loss_history[arm]) == n_updates
        for d in result.domains:
            assert result.metrics[arm][f"ratio_{d}"] > 1.0  # the teacher is better everywhere
    assert result.tokens_per_arm == config.steps * config.batch_size * config.student.context
    # CPT and KD keep the uniform mix, the static arm r₀, and DDK starts at r₀
    uniform = [1 / 5] * 5
    assert all(np.allclose(row, uniform) for row in result.r_history["kd"] + result.r_history["cpt"])
    assert all(np.allclose(row, result.r_history["static"][0]) for row in result.r_history["static"])
    assert np.allclose(result.r_history["ddk"][0], result.r_history["static"][0])
    lo, hi = (1 - config.alpha) / 5, config.alpha + (1 - config.alpha) / 5
    assert all(lo - 1e-9 <= v <= hi + 1e-9 for row in result.r_history["ddk"][1:] for v in row)


def test_figures_build(fast_results):
    result = fast_results[0]
    for fig in (ddk.fig_mixture(result), ddk.fig_ratios(result), ddk.fig_worst_gap(result)):
        assert len(fig.data) >= 2 and fig.layout.title.text


def test_claims_over_five_seeds(fast_results):
    outcomes = evaluate(ddk.CLAIMS, lambda config, seed: fast_results[seed], seeds=range(5))
    assert not unmet(outcomes), unmet(outcomes)


def test_a_broken_method_fails_the_claims(fast_results):
    # "DDK" that is really KD (the mixture never follows the gaps) must fail the worst-domain claim
    broken = []
    for result in fast_results:
        fake = copy.deepcopy(result)
        fake.metrics["ddk"] = dict(result.metrics["kd"], r_change=result.metrics["ddk"]["r_change"])
        broken.append(fake)
    outcomes = {o.claim.id: o for o in check_results(ddk.CLAIMS, broken, range(5), guard=False)}
    assert not outcomes["narrows_worst_domain"].verdict.passed
    # and a run without the teacher's arithmetic (a weaker teacher) is caught by the premise check
    weak = dataclasses.replace(fast_results[0], metrics=copy.deepcopy(fast_results[0].metrics))
    weak.metrics["kd"]["ratio_arithmetic"] = 0.9
    assert not ddk.CLAIMS[0].check([weak]).passed
