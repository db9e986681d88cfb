"""LiRA and RMIA (core.experiment.reference_attacks): known optima on synthetic scores, a planted RMIA case,
sequence aggregation, state round trip, and the pipeline's wiring on a tiny image run."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from core.attacks.shadow_attacks import attack_to_bytes, load_attack_bytes
from core.experiment.reference_attacks import (
    ReferenceAttack,
    aligned,
    fit_reference_attacks,
    lira_global_variance,
    lira_scores,
    online_lira,
    reference_inputs,
    rmia_scores,
    score_reference_attacks,
    step_logit_confidence,
)
from core.measurement.metrics import roc_auc
from core.measurement.responses import Responses


def binary(phi: np.ndarray) -> Responses:
    """One-step records whose LiRA signal log p/(1−p) of the label (class 0) is ``phi``."""
    phi = np.asarray(phi, np.float64)
    logits = np.c_[phi, np.zeros_like(phi)]
    return Responses.from_logits(logits, np.ones(len(phi), np.int64), np.zeros(len(phi), np.int64))


def probs(p: np.ndarray) -> Responses:
    """One-step records answering the label (class 0) with probability ``p``."""
    p = np.asarray(p, np.float64)
    return Responses.from_probs(np.c_[p, 1 - p], np.ones(len(p), np.int64), np.zeros(len(p), np.int64))


def test_logit_confidence_is_exact_including_saturation():
    phi = np.array([-30.0, -2.0, 0.0, 3.0, 25.0, 60.0])
    assert np.allclose(step_logit_confidence(binary(phi)), phi, rtol=1e-5, atol=1e-5)
    # top-K Responses (large vocabularies) keep no full vectors: exact up to float64's saturation
    logits = np.full((5, 100), -50.0)
    phi = np.array([-3.0, 0.0, 4.0, 15.0, 30.0])
    logits[:, 0] = 0.0
    logits[:, 1] = -phi  # p0/p1 = e^φ, the other 98 classes negligible
    r = Responses.from_logits(logits, np.ones(5, np.int64), np.zeros(5, np.int64))
    assert r.probs is None
    assert np.allclose(step_logit_confidence(r), phi, rtol=1e-4, atol=1e-4)


def _gaussian_world(n=4000, refs=64, delta=2.0, spread=2.0, sigma=None, seed=0):
    """Per-record mean μᵢ (difficulty) and σᵢ; members' signal is shifted by delta·σᵢ."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(0, spread, n)
    sig = np.ones(n) if sigma is None else sigma(rng, n)
    member = rng.random(n) < 0.5
    target = mu + sig * rng.normal(size=n) + delta * sig * member
    out_refs = mu + sig * rng.normal(size=(refs, n))
    return mu, sig, member, target, out_refs


def test_offline_lira_recovers_the_known_optimum():
    mu, sig, member, target, out_refs = _gaussian_world()
    scores = lira_scores(binary(target), [binary(r) for r in out_refs])
    optimum = roc_auc(target - mu, member)  # Neyman–Pearson with the true per-record mean
    theory = stats.norm.cdf(2.0 / np.sqrt(2))  # AUC of N(Δ,1) vs N(0,1)
    loss_only = roc_auc(target, member)  # a global threshold on the raw signal
    assert abs(optimum - theory) < 0.02
    assert abs(roc_auc(scores, member) - optimum) < 0.01
    assert loss_only < optimum - 0.1
    # the pooled σ is the true one
    assert lira_global_variance(binary(target), [binary(r) for r in out_refs]) == pytest.approx(1.0, rel=0.05)


def test_per_example_variance_recovers_the_optimum_when_sigma_varies():
    mu, sig, member, target, out_refs = _gaussian_world(sigma=lambda rng, n: np.exp(rng.normal(0, 0.8, n)))
    refs = [binary(r) for r in out_refs]
    optimum = roc_auc((target - mu) / sig, member)
    per_example = roc_auc(lira_scores(binary(target), refs, variance="per_example"), member)
    pooled = roc_auc(lira_scores(binary(target), refs, variance="global"), member)
    assert abs(per_example - optimum) < 0.015
    assert per_example > pooled + 0.02


def test_online_lira_is_the_likelihood_ratio():
    rng = np.random.default_rng(1)
    n, refs, delta = 3000, 64, 1.5
    mu = rng.normal(0, 2, n)
    member = rng.random(n) < 0.5
    target = mu + rng.normal(size=n) + delta * member
    in_mask = rng.random((refs, n)) < 0.5
    ref_phi = mu + rng.normal(size=(refs, n)) + delta * in_mask
    scores = lira_scores(binary(target), [binary(r) for r in ref_phi], in_mask=in_mask)
    # the true log-likelihood ratio of N(μ+Δ, 1) against N(μ, 1)
    llr = -0.5 * (target - mu - delta) ** 2 + 0.5 * (target - mu) ** 2
    assert abs(roc_auc(scores, member) - roc_auc(llr, member)) < 0.01
    assert np.corrcoef(scores, llr)[0, 1] > 0.97


def test_lira_aggregates_aligned_steps_by_stouffer_and_unaligned_by_record_mean():
    # two records of 2 and 3 steps; references answer the same steps (aligned)
    def seq(phi, lengths, ref_index=None):
        phi = np.asarray(phi, np.float64)
        ref = np.zeros(len(phi), np.int64) if ref_index is None else np.asarray(ref_index)
        logits = np.zeros((len(phi), 2))
        logits[np.arange(len(phi)), ref] = phi
        return Responses.from_logits(logits, lengths, ref)

    lengths = [2, 3]
    refs = [seq([0, 0, 0, 0, 0], lengths), seq([2, 2, 2, 2, 2], lengths)]  # μ = 1, σ² = 2 per step
    target = seq([3, 1, 1, 1, 4], lengths)
    assert aligned(target, refs)
    z = (np.array([3, 1, 1, 1, 4]) - 1) / np.sqrt(2.0)
    expected = [z[:2].sum() / np.sqrt(2), z[2:].sum() / np.sqrt(3)]
    assert np.allclose(lira_scores(target, refs), expected)
    # a reference that walked other steps (another reference class) → one Gaussian per record on the step mean
    refs_unaligned = [seq([0, 0, 0, 0, 0], lengths, [1, 1, 1, 1, 1]), refs[1]]
    assert not aligned(target, refs_unaligned)
    record_phi = np.array([2.0, 2.0])  # means of [3, 1] and [1, 1, 4]
    mu = np.array([1.0, 1.0])
    pooled = ((0 - 1) ** 2 + (2 - 1) ** 2) * 2 / 2  # two records, each 1 degree of freedom
    assert np.allclose(lira_scores(target, refs_unaligned), (record_phi - mu) / np.sqrt(pooled))


def test_rmia_planted_case_by_hand():
    # target, two references, population of four; a = 1 → Pr(x) = mean of the references
    target, refs = probs([0.9, 0.4, 0.2]), [probs([0.3, 0.4, 0.2]), probs([0.3, 0.4, 0.2])]
    pop_t = probs([0.5, 0.5, 0.6, 0.2])
    pop_r = [probs([0.5, 0.25, 0.3, 0.2])] * 2
    s = rmia_scores(target, refs, pop_t, pop_r, a=1.0, gamma=1.0)
    # ratios: x = [3, 1, 1]; z = [1, 2, 2, 1] → share of z with ratio_x / ratio_z ≥ 1: [4/4, 2/4, 2/4]
    share = np.floor(s * 4 + 1e-9) / 4
    assert np.allclose(share, [1.0, 0.5, 0.5])
    # tie-break below one step: the record with the larger own ratio ranks first, never above the next step
    assert s[0] > s[1] and np.isclose(s[1], s[2]) and np.all(s - share < 0.25)


def test_rmia_separates_planted_members_that_a_loss_threshold_cannot():
    rng = np.random.default_rng(3)
    n = 2000
    difficulty = rng.uniform(0.05, 0.95, n)  # what every model answers on a record it did not train on
    member = rng.random(n) < 0.5
    boost = 1.25
    target_p = np.where(member, np.minimum(difficulty * boost, 0.999), difficulty) * rng.uniform(0.98, 1.0, n)
    refs = [probs(difficulty * rng.uniform(0.98, 1.0, n)) for _ in range(4)]
    pop_d = rng.uniform(0.05, 0.95, 500)
    pop_t = probs(pop_d * rng.uniform(0.98, 1.0, 500))
    pop_r = [probs(pop_d * rng.uniform(0.98, 1.0, 500)) for _ in range(4)]
    s = rmia_scores(probs(target_p), refs, pop_t, pop_r, a=1.0)
    assert roc_auc(s, member) > 0.97
    assert roc_auc(target_p, member) < 0.7  # the raw confidence is confounded by difficulty


def test_rmia_temperature_needs_full_vectors_and_changes_saturated_ranking():
    """Two records the target answers with saturated confidence (logits 30 and 22; the reference
    model 20 and 21). At T = 1 both likelihood ratios are ≈ 1 and they beat the same population
    records: a tie. Re-tempered at T = 4, record 0 — whose confidence rose far above its
    reference's — beats one population record more than record 1."""
    target, references = binary(np.array([30.0, 22.0])), [binary(np.array([20.0, 21.0]))]
    n_z = 50
    population, population_refs = binary(np.linspace(-3, 3, n_z)), [binary(np.linspace(3, -3, n_z))]
    assert target.probs is not None

    def beaten(temperature):  # population records each beats: the score less its tie-break (< 1/(n_z + 1))
        scores = rmia_scores(target, references, population, population_refs, temperature=temperature)
        assert np.all(np.isfinite(scores))
        return np.floor(scores * n_z).astype(int)

    flat, tempered = beaten(1.0), beaten(4.0)
    assert flat[0] == flat[1]
    assert tempered[0] > tempered[1]
    top_k_only = Responses.from_logits(np.random.default_rng(0).normal(size=(3, 100)), [1, 1, 1], [0, 1, 2])
    with pytest.raises(ValueError, match="full probability vectors"):
        rmia_scores(top_k_only, [top_k_only], top_k_only, [top_k_only], temperature=2.0)


def test_reference_attack_state_round_trip():
    attack = ReferenceAttack("rmia", "rmia", a=0.25, temperature=4.0, threshold=0.7)
    blob = attack_to_bytes(attack)
    back = load_attack_bytes(ReferenceAttack("rmia", "rmia"), blob)
    assert (back.a, back.temperature, back.threshold) == (0.25, 4.0, 0.7)
    with pytest.raises(ValueError):
        load_attack_bytes(ReferenceAttack("lira", "lira"), blob)
    with pytest.raises(RuntimeError, match="bind"):
        ReferenceAttack("lira", "lira").score(binary(np.zeros(2)))


TINY = dict(n_train=40, n_eval=20, epochs=3, attack_epochs=(), n_shadows=2, attack_train_epochs=5, batch_size=20)


def test_pipeline_adds_lira_and_rmia_and_online_lira_runs():
    from core.experiment.pipeline import run_experiment, trained_models
    from core.tasks import get_task

    cfg = get_task("image").make_config("ffnn", "quick", TINY)
    summary = run_experiment(cfg).summary
    for name in ("lira", "rmia"):
        r = summary["attacks"][name]
        scores = np.asarray(summary["records"]["scores"][name], float)
        member = np.asarray(summary["records"]["membership"], bool)
        assert len(scores) == 2 * cfg.n_eval and member.sum() == cfg.n_eval
        # the reported AUC is the one of the per-record scores the summary keeps, on the last epoch
        assert r["auc"] == pytest.approx(roc_auc(scores, member), abs=1e-6)
        assert summary["attacks_by_epoch"][str(cfg.epochs)][name]["auc"] == pytest.approx(r["auc"])
        assert set(r["tpr_at_fpr"]) == {"0.01", "0.001"}
    assert summary["timings"]["reference_attacks_s"] >= 0
    models = trained_models(cfg)
    inputs = reference_inputs(models)
    again = score_reference_attacks(fit_reference_attacks(inputs), inputs.target, models.eval_membership)  # cached answers
    assert again["lira"].result.auc == pytest.approx(summary["attacks"]["lira"]["auc"])
    online = online_lira(models, n_models=2)
    assert online.result.name == "lira_online" and np.all(np.isfinite(online.scores))
    one_shadow = get_task("image").make_config("ffnn", "quick", {**TINY, "n_shadows": 1})
    assert reference_inputs(trained_models(one_shadow)) is None
