import numpy as np
import pytest
import torch

from core.measurement.responses import FULL_VECTOR_LIMIT, TOP_K, Responses


def make(seed=0, lengths=(1, 3, 2), m=5):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(sum(lengths), m, generator=g)
    probs = torch.softmax(logits, 1)
    ref = torch.randint(0, m, (sum(lengths),), generator=g)
    return probs, ref, Responses.from_probs(probs, lengths, ref)


def test_per_step_signals_by_hand():
    probs = torch.tensor([[0.5, 0.25, 0.25], [0.1, 0.2, 0.7]])
    r = Responses.from_probs(probs, [2], torch.tensor([1, 2]))
    h0 = -(0.5 * np.log(0.5) + 2 * 0.25 * np.log(0.25))
    h1 = -(0.1 * np.log(0.1) + 0.2 * np.log(0.2) + 0.7 * np.log(0.7))
    np.testing.assert_allclose(r.entropy, [h0, h1], rtol=1e-5)
    np.testing.assert_allclose(r.ape, [(h0 + h1) / 2], rtol=1e-5)  # eq. 3: mean over the sequence
    np.testing.assert_allclose(r.cross_entropy, [-np.log(0.25), -np.log(0.7)], rtol=1e-5)
    np.testing.assert_allclose(r.ref_prob, [0.25, 0.7], rtol=1e-6)
    np.testing.assert_array_equal(r.ref_rank, [1, 0])


def test_soft_reference_cross_entropy():
    probs = torch.tensor([[0.5, 0.3, 0.2]])
    ref = torch.tensor([[0.5, 0.5, 0.0]])
    r = Responses.from_probs(probs, [1], ref)
    assert r.cross_entropy[0] == pytest.approx(-(0.5 * np.log(0.5) + 0.5 * np.log(0.3)), rel=1e-5)
    assert r.ref_prob[0] == pytest.approx(0.4)
    assert r.ref_index[0] == 0


def test_subset_concat_roundtrip():
    _, _, r = make()
    both = Responses.concat([r.subset([2, 0]), r.subset([1])])
    np.testing.assert_array_equal(both.lengths, [2, 1, 3])
    np.testing.assert_allclose(both.ape, r.ape[[2, 0, 1]], rtol=1e-6)
    np.testing.assert_allclose(both.probs[:2], r.probs[4:6])


def test_bytes_roundtrip_keeps_everything():
    _, _, r = make()
    r.record_features["bleu"] = np.arange(6, dtype=np.float32).reshape(3, 2)
    back = Responses.from_bytes(r.to_bytes())
    for name in Responses._ARRAYS:
        np.testing.assert_array_equal(getattr(back, name), getattr(r, name))
    np.testing.assert_array_equal(back.record_features["bleu"], r.record_features["bleu"])
    assert back.n_classes == r.n_classes


def test_large_vocabulary_keeps_only_top_k():
    """2,000 sentences x 15 tokens over a vocabulary far above FULL_VECTOR_LIMIT: a few MB, where the full
    vectors would be hundreds (30,000 x 1,000 doubles = 240 MB; the bound below is 48 times smaller). What
    is kept does not grow with the vocabulary, so 1,000 words test what 10,000 would, at a tenth of the work."""
    vocab = 1_000
    assert vocab > 10 * FULL_VECTOR_LIMIT
    parts = []
    for i in range(20):  # built in batches, as a task does
        probs = torch.softmax(torch.randn(100 * 15, vocab), 1)
        parts.append(Responses.from_probs(probs, [15] * 100, torch.randint(0, vocab, (1500,))))
    r = Responses.concat(parts)
    assert len(r) == 2000 and r.probs is None and r.top_probs.shape == (30_000, TOP_K)
    assert r.nbytes < 5 * 2**20
    assert r.step_features().shape == (30_000, TOP_K + 4)
