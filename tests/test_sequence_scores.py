"""Sequence-model scores (core/attacks/sequence_scores.py) on planted cases."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import core.experiment.model_attacks  # noqa: F401  (registers the models-stage attacks, reference_ratio among them)
from core.attacks import registry
from core.attacks.sequence_scores import (
    MIN_K,
    ZLIB_FEATURE,
    min_k_attack,
    min_k_mean,
    min_k_plus_plus_attack,
    min_k_plus_plus_scores,
    min_k_scores,
    reference_ratio_scores,
    zlib_attack,
    zlib_length,
    zlib_scores,
)
from core.attacks.shadow_attacks import attack_to_bytes, load_attack_bytes, loss_threshold_attack
from core.measurement.metrics import evaluate_attack
from core.measurement.responses import FULL_VECTOR_LIMIT, Responses

V = 200  # a vocabulary above FULL_VECTOR_LIMIT: Responses keep the top-K only
assert V > FULL_VECTOR_LIMIT


def _step(p_ref: float, others: list[float]) -> np.ndarray:
    """A step's distribution over V tokens: the reference (token 0) at p_ref, the listed others at tokens
    1…, the rest of the mass spread evenly over the remaining tokens."""
    p = np.zeros(V)
    p[0] = p_ref
    p[1 : 1 + len(others)] = others
    rest = 1.0 - p.sum()
    p[1 + len(others) :] = rest / (V - 1 - len(others))
    return p


def _records(steps_per_record: list[list[np.ndarray]]) -> Responses:
    probs = np.concatenate([np.stack(s) for s in steps_per_record])
    return Responses.from_probs(probs, [len(s) for s in steps_per_record], np.zeros(len(probs), np.int64))


def test_min_k_pp_ranks_memorised_above_novel_where_loss_ties():
    # both sentences give their reference tokens the same probability 0.3: plain loss (and Min-K%) tie.
    # Memorised: the reference is the mode of a peaked distribution (the rest spread thin);
    # novel: another token is more likely than the reference (0.6), the reference is no local maximum.
    memorised = [_step(0.3, []) for _ in range(5)]
    novel = [_step(0.3, [0.6]) for _ in range(5)]
    r = _records([memorised, novel])
    loss = r.mean_cross_entropy
    assert loss[0] == pytest.approx(loss[1], rel=1e-6)
    assert min_k_scores(r)[0] == pytest.approx(min_k_scores(r)[1], rel=1e-6)
    pp = min_k_plus_plus_scores(r)
    assert pp[0] > pp[1] + 1.0

    # the attack, threshold fitted on shadows planted the same way, separates a victim's records
    shadow = _records([memorised] * 4 + [novel] * 4)
    shadow_m = np.r_[np.ones(4, bool), np.zeros(4, bool)]
    victim = _records([memorised, novel, memorised, novel])
    victim_m = np.array([True, False, True, False])
    attack = min_k_plus_plus_attack().fit(shadow, shadow_m)
    res = evaluate_attack(attack.name, attack.score(victim), victim_m, attack.threshold)
    assert res.auc == 1.0 and res.accuracy == 1.0
    base = loss_threshold_attack().fit(shadow, shadow_m)
    assert evaluate_attack("loss", base.score(victim), victim_m, base.threshold).auc == 0.5


def test_zlib_separates_repetitive_nonmember_from_memorised_member():
    member_text = "Two young, White males are outside near many bushes while a dog jumps over a log."
    repetitive_text = "a man a man a man a man a man a man a man a man a man a man a man a man a man a man."
    # the repetitive non-member is easy for any model (loss 0.2 per token); the memorised member's loss is 0.5
    member = [_step(float(np.exp(-0.5)), []) for _ in range(12)]
    repetitive = [_step(float(np.exp(-0.2)), []) for _ in range(12)]

    def with_texts(records, texts):
        r = _records(records)
        r.record_features[ZLIB_FEATURE] = np.array([[zlib_length(t)] for t in texts], np.float32)
        return r.validate()

    r = with_texts([member, repetitive], [member_text, repetitive_text])
    loss_score = loss_threshold_attack().score(r)
    assert loss_score[1] > loss_score[0]  # plain loss calls the repetitive non-member the member
    assert zlib_length(repetitive_text) < zlib_length(member_text) / 2
    z = zlib_scores(r)
    assert z[0] > z[1]

    shadow = with_texts([member] * 3 + [repetitive] * 3, [member_text] * 3 + [repetitive_text] * 3)
    attack = zlib_attack().fit(shadow, np.r_[np.ones(3, bool), np.zeros(3, bool)])
    res = evaluate_attack(attack.name, attack.score(r), np.array([True, False]), attack.threshold)
    assert res.accuracy == 1.0


def test_moments_match_full_vocabulary_recomputation():
    rng = np.random.default_rng(0)
    logits = torch.from_numpy(rng.normal(0, 3, (37, 500)))
    ref = torch.from_numpy(rng.integers(0, 500, 37))
    r = Responses.from_logits(logits, [10, 20, 7], ref)
    assert r.probs is None and r.logp_var is not None  # reduced to the top-K, the moments kept
    logp = torch.log_softmax(logits.double(), -1).numpy()
    p = np.exp(logp)
    mu = (p * logp).sum(1)
    var = (p * logp ** 2).sum(1) - mu ** 2
    np.testing.assert_allclose(-r.entropy, mu, rtol=1e-5)
    np.testing.assert_allclose(r.logp_var, var, rtol=1e-5)
    # the standardised log-probability of Min-K%++ from the kept moments, against the full vectors
    z = (logp[np.arange(37), ref.numpy()] - mu) / np.sqrt(var)
    expect = min_k_mean(z, r.lengths, MIN_K)
    np.testing.assert_allclose(min_k_plus_plus_scores(r), expect, rtol=1e-4)
    # kept by subset, concat and the archive
    sub = r.subset([2, 0])
    np.testing.assert_array_equal(sub.logp_var, np.concatenate([r.logp_var[30:], r.logp_var[:10]]))
    np.testing.assert_array_equal(Responses.concat([r, r]).logp_var, np.concatenate([r.logp_var] * 2))
    np.testing.assert_array_equal(Responses.from_bytes(r.to_bytes()).logp_var, r.logp_var)


def test_old_responses_without_moments_load_and_say_why_not():
    rng = np.random.default_rng(1)
    r = Responses.from_logits(torch.from_numpy(rng.normal(0, 1, (6, 100))), [3, 3], torch.zeros(6, dtype=torch.long))
    old = Responses(**{**{k: getattr(r, k) for k in ("lengths", "n_classes", "top_probs", "ref_index", "ref_prob",
                                                      "ref_rank", "entropy", "cross_entropy")}})
    back = Responses.from_bytes(old.to_bytes())  # an archive written before logp_var was kept
    assert back.logp_var is None
    why = registry.unavailable("translation", back)
    assert set(why) == {"min_k_pp", "zlib"} and "logp_var" in why["min_k_pp"]
    assert "min_k_pp" not in [a.name for a in registry.responses_attacks("translation", None, back)]
    with pytest.raises(ValueError, match="logp_var"):
        min_k_plus_plus_scores(back)
    # a part without the moments drops them from a concatenation (never a partial array)
    assert Responses.concat([r, back]).logp_var is None
    # new distributions without new moments: the stale spread is dropped
    assert r.with_step_signals(entropy=r.entropy * 0.5).logp_var is None


def test_dirichlet_top_k_recomputes_the_moments():
    from core.defenses.dirichlet import _defend_top_k
    rng = np.random.default_rng(2)
    r = Responses.from_logits(torch.from_numpy(rng.normal(0, 3, (40, 300))), [20, 20],
                              torch.from_numpy(rng.integers(0, 300, 40)))
    out = _defend_top_k(r, 1e6, 0.0, np.random.default_rng(0))
    assert out.logp_var is not None and np.all(np.isfinite(out.logp_var)) and out.logp_var.min() >= 0
    assert np.all(np.isfinite(min_k_plus_plus_scores(out)))


def test_registrations_and_state_roundtrip():
    names = {e.name for e in registry.entries("translation")}
    assert {"min_k", "min_k_pp", "zlib", "reference_ratio"} <= names
    for task in ("image", "navigation"):
        for name in ("min_k", "min_k_pp", "zlib", "reference_ratio"):
            assert registry.get(name).why_not(task)
    r = _records([[_step(0.3, [])] * 3, [_step(0.3, [0.6])] * 3])
    for attack in (min_k_attack(), min_k_plus_plus_attack()):
        attack.fit(r, np.array([True, False]))
        fresh = load_attack_bytes(type(attack)(attack.name, attack.score_fn), attack_to_bytes(attack))
        assert fresh.threshold == attack.threshold
        with pytest.raises(ValueError):
            load_attack_bytes(zlib_attack(), attack_to_bytes(attack))


def test_reference_ratio_scores():
    victim = np.array([0.5, 2.0, 1.0])
    refs = np.array([[2.0, 2.0, 9.0], [4.0, 2.0, 9.0]])
    out = np.array([[True, True, False], [True, True, False]])
    s = reference_ratio_scores(victim, refs, out)
    np.testing.assert_allclose(s[:2], [2.5, 0.0])
    assert np.isnan(s[2])  # no reference is out on the third record
