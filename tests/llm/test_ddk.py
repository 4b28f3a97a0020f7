"""DDK: the teacher, Eq. 1 and Eq. 2 on hand-computed cases, the sampler, the loss, the data and the protocol,
the claims and their falsifiers.

One default run (seed 0) is computed once and must match seed 0 of the committed results, which hold the
five book seeds of the default configuration (the file `python -m toyscale reproduce ddk` recomputes); the
claims are checked on those. Each falsifier reruns the experiment on `Config.fast()` with its change, and
the claims it names must then fail. The premise (the teacher beats the student) is asserted here, not claimed.
"""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from toyscale.core import BOOK_SEEDS, check_results, falsify, survivors, unmet
from toyscale.core.claims import EFFECT
from toyscale.llm import ddk
from toyscale.llm.corpus import ALPHABET, VOCAB_SIZE, build_corpus, encode
from toyscale.llm.ddk import results as committed

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
        ddk.distill_arm("doremi", None, None, ddk.Config.fast(), 0)
    with pytest.raises(ValueError, match="arms"):
        ddk.Config(arms=("kd", "doremi"))
    with pytest.raises(ValueError, match="method"):
        ddk.Config(method="cpt")
    with pytest.raises(ValueError, match="heterogeneity"):
        ddk.Config(heterogeneity=1.5)
    with pytest.raises(ValueError, match="gammas"):
        ddk.gamma_sweep(ddk.Config.fast(), [], [0])
    with pytest.raises(ValueError, match="points"):
        ddk.gap_boundary(ddk.Config.fast(), [2.0], [0])


TINY = ddk.Config(
    chars_per_domain=61_440, warmup_steps=20, steps=40, update_every=10, patience=2, val_windows=16, test_windows=16
)


def test_the_cipher_is_dealt_with_the_prose_so_no_text_crosses_splits():
    corpus = build_corpus(["prose", "cipher"], seed=7, max_chars=100_000)
    prose, cipher = corpus["prose"], corpus["cipher"]
    letters = "abcdefghijklmnopqrstuvwxyz"
    # the cipher maps letters one to one and leaves everything else: the non-letters of each split match
    for split in ("train", "val", "test"):
        a, b = prose.split(split), cipher.split(split)
        assert len(a) == len(b)
        other = ~np.isin(a, encode(letters + letters.upper()))
        assert np.array_equal(a[other], b[other])


def test_windows_never_straddle_two_blocks():
    ids = np.arange(3 * 100) % 50
    windows = ddk.cut_windows(ids, 33, block_chars=100)
    assert windows.shape == (3 * 3, 33)
    np.testing.assert_array_equal(windows[3], ids[100:133])  # the second block starts a window


@pytest.fixture(scope="module")
def tiny_data():
    return ddk.prepare(TINY, 3)


def test_mixing_the_domains_keeps_every_window_in_its_split(tiny_data):
    data, _ = tiny_data
    assert ddk.mix_domains(data, 1.0, 3) is data
    for h in (0.0, 0.5):
        mixed = ddk.mix_domains(data, h, 3)
        for split in ("train", "val", "test"):
            before = getattr(data, split).reshape(-1, 33).numpy().astype(np.uint8)
            after = getattr(mixed, split).reshape(-1, 33).numpy().astype(np.uint8)
            assert sorted(map(bytes, before)) == sorted(map(bytes, after))
        # the teacher's numbers travel with their windows
        assert torch.allclose(mixed.teacher_val.sum(), data.teacher_val.sum())
        row = mixed.val[1, 0]
        match = (data.val.reshape(-1, 33) == row).all(dim=1).nonzero()[0, 0]
        assert mixed.teacher_val[1, 0] == data.teacher_val.reshape(-1)[match]


def test_every_arm_starts_smoothed_keeps_its_best_validation_point_and_stays_in_budget(tiny_data):
    data, warm = tiny_data
    first = ddk.first_mixture(warm, data, TINY.alpha)
    lo, hi = (1 - TINY.alpha) / 5, TINY.alpha + (1 - TINY.alpha) / 5
    assert first.min() >= lo - 1e-12 and first.max() <= hi + 1e-12
    fits = {arm: ddk.distill_arm(arm, warm, data, TINY, 3, static=first) for arm in ddk.SCHEDULES}
    np.testing.assert_allclose(fits["ddk"].r[0], first)  # DDK's first block already draws from Eq. 2
    assert all(np.allclose(r, first) for r in fits["static"].r)
    assert all(np.allclose(r, 0.2) for arm in ("cpt", "kd") for r in fits[arm].r)
    assert all(lo - 1e-9 <= v <= hi + 1e-9 for arm in ("ddk", "ddk_shuffled") for r in fits[arm].r for v in r)
    for fit in fits.values():
        means = [float(np.mean(v)) for v in fit.val_ratio]
        assert 0 < fit.steps <= TINY.steps and fit.steps % TINY.update_every == 0
        assert means[fit.steps // TINY.update_every - 1] == min(means)
        assert len(fit.r) == len(fit.val_ratio) <= TINY.steps // TINY.update_every
    # CPT and KD draw the very same windows; only the loss differs
    assert fits["cpt"].r == fits["kd"].r


def test_run_is_deterministic():
    first, again = ddk.run(TINY, seed=3), ddk.run(TINY, seed=3)
    assert again.metrics == first.metrics
    assert again.r_history == first.r_history
    assert ddk.run(TINY, seed=4).metrics != first.metrics


@pytest.fixture(scope="module")
def seed0() -> ddk.Result:
    return ddk.run(ddk.Config(), seed=0)


@pytest.fixture(scope="module")
def reference() -> committed.Reference:
    return committed.reference()


def test_run_is_complete_and_the_teacher_beats_the_student(seed0, reference):
    config = ddk.Config()
    for result in (seed0, *reference.results):
        assert set(result.metrics) == {"teacher", "warm", *config.arms, *ddk.CONTROL_ARMS}
        # the premise of distillation, on every arm, domain and seed: the teacher is better
        for arm, scores in result.metrics.items():
            if arm != "teacher":
                assert all(scores[f"ratio_{d}"] > 1.0 for d in result.domains), (result.seed, arm)
        # mixing the domains is what equalises the gaps
        assert result.gap_spread["control"] < result.gap_spread["default"] / 2
    assert seed0.tokens_per_arm == config.steps * config.batch_size * config.student.context
    for arm in ("kd", "static"):
        assert all(np.allclose(r, seed0.r_history[arm][0]) for r in seed0.r_history[arm])
    np.testing.assert_allclose(seed0.r_history["ddk"][0], seed0.r_history["static"][0])


def test_figures_build(seed0):
    for fig in (ddk.fig_mixture(seed0), ddk.fig_ratios(seed0), ddk.fig_worst_gap(seed0)):
        assert len(fig.data) >= 2 and fig.layout.title.text
    sweep = {f"{a}_{m}": np.ones((2, 3)) for a in ("cpt", "kd", "ddk") for m in ddk.SWEEP_METRICS}
    assert len(ddk.fig_gamma([0.1, 0.2, 0.5], sweep).data) == 3
    with pytest.raises(ValueError, match="metric"):
        ddk.fig_gamma([0.1, 0.2, 0.5], sweep, "nope")


def test_the_committed_results_hold_the_claims_and_their_boundary_agrees_with_them(reference):
    # current by fingerprint (checked on load), never compared with a rerun: on another CPU it differs a little
    assert [r.seed for r in reference.results] == list(BOOK_SEEDS)
    # the worst-domain boundary's full-heterogeneity end is the results' own Δ, seed by seed
    point = reference.worst.points.index(1.0)
    own = [r.metrics["kd"]["max_ratio"] - r.metrics["ddk"]["max_ratio"] for r in reference.results]
    np.testing.assert_allclose(reference.worst.deltas[point], own)
    outcomes = check_results(ddk.CLAIMS, reference.results, BOOK_SEEDS, "ddk")
    assert not unmet(outcomes), unmet(outcomes)


@pytest.mark.parametrize("falsifier", ddk.FALSIFIERS, ids=lambda f: f.name)
def test_every_expected_effect_fails_under_its_falsifiers(falsifier):
    outcomes = falsify(falsifier, ddk.CLAIMS, ddk.run, BOOK_SEEDS, ddk.Config.fast(), "ddk")
    assert not survivors(outcomes), survivors(outcomes)


def test_every_expected_effect_has_both_falsifiers():
    for claim in ddk.CLAIMS:
        if claim.kind == EFFECT and claim.expected:
            kinds = {f.kind for f in ddk.FALSIFIERS if claim.id in f.claims}
            assert len(kinds) == 2, f"{claim.id} lacks a falsifier: has {kinds}"
