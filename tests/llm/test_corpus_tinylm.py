"""The shared LLM pieces: the corpus (alphabet, domains, deterministic disjoint splits) and the tiny LM."""

import numpy as np
import pytest
import torch

from toyscale.llm import corpus, tinylm

torch.set_num_threads(1)


def test_encode_decode_round_trip_and_outside_characters():
    text = "def f(x):\n\treturn x + 1  # é"
    ids = corpus.encode(text)
    assert ids.dtype == np.uint8 and ids.max() < corpus.VOCAB_SIZE == 96
    assert corpus.decode(ids) == "def f(x):\n return x + 1  # ?"
    with pytest.raises(TypeError, match="text"):
        corpus.encode(b"bytes")
    with pytest.raises(ValueError, match="ids"):
        corpus.decode([200])


def test_every_domain_is_built_deterministically_with_disjoint_splits():
    small = corpus.build_corpus(seed=3, max_chars=40_960, block_chars=1024)
    again = corpus.build_corpus(seed=3, max_chars=40_960, block_chars=1024)
    assert set(small) == set(corpus.DOMAINS) and len(small) >= 5
    for name, text in small.items():
        assert len(text) == 40_960
        for split in corpus.SPLITS:
            assert np.array_equal(text.split(split), again[name].split(split))
        # the splits are disjoint blocks of the text: their blocks never coincide
        blocks = {s: {bytes(b) for b in text.split(s).reshape(-1, 1024)} for s in corpus.SPLITS}
        assert not blocks["train"] & blocks["val"] and not blocks["val"] & blocks["test"]
        assert len(text.val) == len(text.test) == 4 * 1024
    other = corpus.build_corpus(["arithmetic"], seed=4, max_chars=40_960, block_chars=1024)
    assert not np.array_equal(other["arithmetic"].train, small["arithmetic"].train)


def test_domains_differ_in_difficulty_for_a_unigram_model():
    texts = corpus.build_corpus(seed=0, max_chars=100_000)

    def unigram_bits(ids):
        p = np.bincount(ids, minlength=corpus.VOCAB_SIZE) / len(ids)
        p = p[p > 0]
        return float(-(p * np.log2(p)).sum())

    entropy = {name: unigram_bits(t.train) for name, t in texts.items()}
    assert entropy["arithmetic"] < entropy["records"] < entropy["prose"]


def test_build_corpus_rejects_bad_input():
    with pytest.raises(ValueError, match="domains"):
        corpus.build_corpus(["poetry"])
    with pytest.raises(TypeError, match="domains"):
        corpus.build_corpus("prose")
    with pytest.raises(ValueError, match="max_chars"):
        corpus.build_corpus(["prose"], max_chars=10)
    with pytest.raises(ValueError, match="fractions"):
        corpus.split_blocks(np.zeros(10_000, np.uint8), seed=0, fractions=(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="split"):
        corpus.build_corpus(["prose"], max_chars=10_000, block_chars=1000)["prose"].split("dev")


def test_tiny_lm_shapes_causality_and_parameter_count():
    config = tinylm.TinyLMConfig(d_model=16, n_head=2, context=8)
    model = tinylm.TinyLM(config)
    ids = torch.randint(0, config.vocab_size, (3, 8))
    logits = model(ids)
    assert logits.shape == (3, 8, config.vocab_size)
    # changing the last character does not change the predictions at earlier positions
    changed = ids.clone()
    changed[:, -1] = (changed[:, -1] + 1) % config.vocab_size
    torch.testing.assert_close(model(changed)[:, :-1], logits[:, :-1])
    linear = sum(m.weight.numel() for m in model.linear_layers().values())
    assert linear == config.n_params
    assert list(model.linear_layers())[-1] == "head"
    with pytest.raises(ValueError, match="context"):
        model(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="d_model"):
        tinylm.TinyLMConfig(d_model=10, n_head=4)


def test_training_lowers_bits_per_char_and_is_deterministic():
    text = corpus.build_corpus(["records"], max_chars=30_000, block_chars=1000)["records"]
    config = tinylm.TinyLMConfig(d_model=16, n_head=2, context=16)
    untrained = tinylm.bits_per_char(tinylm.TinyLM(config), text.test)
    model, history = tinylm.train_lm(config, text.train, steps=60, lr=1e-2, seed=1, log_every=20)
    again, _ = tinylm.train_lm(config, text.train, steps=60, lr=1e-2, seed=1, log_every=20)
    assert len(history) == 3
    trained = tinylm.bits_per_char(model, text.test)
    assert trained < untrained - 1.0
    assert trained == tinylm.bits_per_char(again, text.test)
    restored = tinylm.from_state_arrays(config, tinylm.state_arrays(model))
    assert tinylm.bits_per_char(restored, text.test) == pytest.approx(trained)
    with pytest.raises(ValueError, match="steps"):
        tinylm.train_lm(config, text.train, steps=0)
    with pytest.raises(ValueError, match="tokens"):
        tinylm.bits_per_char(model, np.zeros(5, np.uint8))
