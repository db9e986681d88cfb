"""The audit's other estimators: the Gaussian-DP estimate and the f-DP one-run bound of
Mahloujifar et al. on simulated canaries whose privacy is known exactly — μ-GDP Gaussian scores and
ε-DP randomized response — and their wiring (the audit's entry, table and figure)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from core.analyses import record_views
from core.analyses.analysis_results import AuditView, CanaryAudit
from core.measurement import audit
from core.measurement import audit_estimators as ae
from core.measurement.metrics import roc_auc
from core.views import analysis_tables, report
from core.views.record_view_figures import audit_guesses_figure
from tests.typed_runs import typed_run

TRIALS = 200


def simulated_counts(scores: np.ndarray, included: np.ndarray, k: int) -> np.ndarray:
    """Correct guesses per trial (row) at k: ⌈k/2⌉ highest guessed IN, ⌊k/2⌋ lowest OUT."""
    order = np.argsort(-scores, axis=1, kind="mergesort")
    m = scores.shape[1]
    top = np.take_along_axis(included, order[:, :k // 2 + k % 2], 1).sum(1)
    bottom = (~np.take_along_axis(included, order[:, m - k // 2:], 1)).sum(1) if k // 2 else 0
    return top + bottom


def gaussian_canaries(mu: float, m: int, trials: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Exactly μ-GDP in each canary: score = μ·[included] + N(0, 1)."""
    rng = np.random.default_rng(seed)
    included = rng.random((trials, m)) < 0.5
    return mu * included + rng.normal(size=(trials, m)), included


def randomized_response(eps: float, m: int, trials: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Exactly ε-DP: each canary's inclusion reported truthfully with probability e^ε / (1 + e^ε)."""
    rng = np.random.default_rng(seed)
    included = rng.random((trials, m)) < 0.5
    truthful = rng.random((trials, m)) < math.exp(eps) / (1 + math.exp(eps))
    return np.where(included == truthful, 1.0, -1.0) + 1e-6 * rng.random((trials, m)), included


# ---------------------------------------------------------------------------- the f-DP bound
def test_fdp_bound_of_an_exactly_mu_gdp_mechanism_exceeds_mu_in_at_most_5_percent_of_trials():
    mu, m = 1.0, 500
    scores, included = gaussian_canaries(mu, m, TRIALS, seed=0)
    for k in (25, 100, 500):
        bound = ae.fdp_mu_lower_bound(m, k, simulated_counts(scores, included, k))
        assert (bound > mu).mean() <= 0.05
        assert np.median(bound) > 0.25  # and it proves something: not a bound that is always 0
    # the headline: the best k of the grid at 5 % / (number of k), as fdp_audit takes it
    grid = audit.default_k_grid(m)
    counts = np.stack([simulated_counts(scores, included, k) for k in grid], axis=1)
    headline = ae.fdp_mu_lower_bound(m, np.asarray(grid), counts, audit.SIGNIFICANCE / len(grid)).max(axis=1)
    assert (headline > mu).mean() <= 0.05
    assert headline[0] == ae.fdp_audit(scores[0], included[0], 1e-5)["mu"]


def test_fdp_bound_of_randomized_response_stays_below_its_gdp_mu():
    # ε-DP randomized response is μ-GDP from μ = 2·Φ⁻¹(e^ε / (1 + e^ε)) (G_μ through its kink), not below
    eps, m = 1.0, 500
    mu = 2 * special.ndtri(math.exp(eps) / (1 + math.exp(eps)))
    scores, included = randomized_response(eps, m, TRIALS, seed=1)
    for k in (50, 500):
        correct = simulated_counts(scores, included, k)
        assert (ae.fdp_mu_lower_bound(m, k, correct) > mu).mean() <= 0.05
        # and Steinke et al.'s ε bound stays below ε itself
        steinke = [audit.epsilon_lower_bound(m, k, int(c), 0.0) for c in correct]
        assert np.mean(np.asarray(steinke) > eps) <= 0.05


def test_fdp_bound_is_tighter_than_steinke_on_gaussian_canaries_and_below_the_truth():
    mu, delta, m = 1.0, 1e-5, 2000
    scores, included = gaussian_canaries(mu, m, 1, seed=2)
    fdp = ae.fdp_audit(scores[0], included[0], delta)
    steinke = audit.audit(scores[0], included[0], delta)
    truth = audit.gaussian_mechanism_epsilon(mu, delta)
    assert steinke.epsilon < fdp["epsilon"] <= truth and 0 < fdp["mu"] <= mu


def test_fdp_rejects_grows_with_correct_guesses_and_shrinks_with_mu():
    m, k = 200, 100
    bounds = ae.fdp_mu_lower_bound(m, k, np.array([50, 70, 90, 100]))
    assert bounds[0] == 0.0 and np.all(np.diff(bounds) > 0)  # chance accuracy proves nothing
    assert ae.fdp_mu_lower_bound(m, 1, 0) == 0.0
    mus = np.linspace(0, 5, 11)
    rejected = ae.fdp_rejects(mus, m, k, 90)
    assert rejected[0] and not rejected[-1] and np.all(np.diff(rejected.astype(int)) <= 0)
    with pytest.raises(ValueError):
        ae.fdp_rejects(1.0, m, 10, 11)


# ---------------------------------------------------------------------------- the GDP estimate
@pytest.mark.parametrize("mu", [0.5, 1.5])
def test_gdp_estimate_recovers_a_planted_mu_on_many_canaries(mu):
    scores, included = gaussian_canaries(mu, 4000, 1, seed=3)
    est = ae.gdp_estimate(scores[0], included[0], 1e-5)
    assert est["kind"] == "estimate" and abs(est["mu"] - mu) < 0.1 and est["mu_high"] - est["mu_low"] < 0.3
    assert est["epsilon_low"] <= est["epsilon"] <= est["epsilon_high"]
    # the same ROC under any increasing transform of the scores: the same estimate
    assert ae.gdp_estimate(np.exp(scores[0]), included[0], 1e-5)["mu"] == pytest.approx(est["mu"], abs=1e-12)
    # its 95 % interval covers the planted μ (and so ε at δ) in most of 20 smaller audits
    scores, included = gaussian_canaries(mu, 400, 20, seed=4)
    ests = [ae.gdp_estimate(s, i, 1e-5, resamples=400, seed=j) for j, (s, i) in enumerate(zip(scores, included))]
    truth = audit.gaussian_mechanism_epsilon(mu, 1e-5)
    assert sum(e["mu_low"] < mu < e["mu_high"] and e["epsilon_low"] < truth < e["epsilon_high"] for e in ests) >= 17


def test_gdp_estimate_reads_the_auc_with_ties_and_clips_a_perfect_split():
    est = ae.gdp_estimate([1.0, 3.0, 2.0, 4.0], [True, True, False, False], 1e-5, resamples=50)
    assert est["auc"] == 0.25 and est["mu"] == pytest.approx(math.sqrt(2) * special.ndtri(0.25))
    assert est["epsilon"] == 0.0  # μ̂ < 0: no leakage read
    tied = ae.gdp_estimate([1.0, 2.0, 1.0, 0.0], [True, True, False, False], 1e-5, resamples=50)
    assert tied["auc"] == pytest.approx(roc_auc(np.array([1.0, 2.0, 1.0, 0.0]), np.array([1, 1, 0, 0], bool)))
    perfect = ae.gdp_estimate([3.0, 4.0, 1.0, 2.0], [True, True, False, False], 1e-5, resamples=50)
    assert perfect["saturated"] and perfect["mu"] is None and perfect["epsilon"] is None  # no finite μ from m
    assert perfect["mu_high"] is None and perfect["epsilon_high"] is None
    with pytest.raises(ValueError):
        ae.gdp_estimate([1.0, 2.0], [True, True], 1e-5)


def test_bootstrap_auc_matches_a_direct_resample():
    rng = np.random.default_rng(4)
    s_in, s_out = rng.normal(1, 1, 30).round(1), rng.normal(0, 1, 20).round(1)  # rounded: ties
    auc, boot = ae._auc_bootstrap(s_in, s_out, 300, np.random.default_rng(5))
    assert auc == pytest.approx(roc_auc(np.r_[s_in, s_out], np.r_[np.ones(30), np.zeros(20)].astype(bool)))
    # the same distribution as resampling the records themselves (counts are exchangeable)
    direct = []
    for _ in range(300):
        a, b = rng.choice(s_in, 30), rng.choice(s_out, 20)
        direct.append(roc_auc(np.r_[a, b], np.r_[np.ones(30), np.zeros(20)].astype(bool)))
    assert abs(np.mean(boot) - np.mean(direct)) < 0.02 and abs(np.std(boot) - np.std(direct)) < 0.015


# ---------------------------------------------------------------------------- the curve and the wiring
def test_bound_curve_agrees_with_the_steinke_audit_at_each_k():
    scores, included = gaussian_canaries(1.0, 300, 1, seed=6)
    est = ae.audit_estimators(scores[0], included[0], 1e-5, resamples=100)
    curve = est["curve"]
    assert set(audit.default_k_grid(300)) <= set(curve["k"]) and curve["k"] == sorted(curve["k"])
    per_k = {a.k: a for a in audit.audit(scores[0], included[0], 1e-5).per_k}
    for k, c, eps, mu in zip(curve["k"], curve["correct"], curve["steinke_epsilon"], curve["fdp_mu"]):
        if k in per_k:
            assert c == per_k[k].correct and eps == pytest.approx(per_k[k].epsilon)
            assert mu == pytest.approx(next(p["mu"] for p in est["fdp_bound"]["per_k"] if p["k"] == k))
    # the headline corrects for the grid: never above the best uncorrected point
    assert est["fdp_bound"]["mu"] <= max(p["mu"] for p in est["fdp_bound"]["per_k"])


def test_audit_entry_table_and_figure_carry_the_estimators():
    scores, included = gaussian_canaries(1.0, 100, 1, seed=7)
    entry = {"arch": "ffnn", "m": 100, "seed": 0, "delta": 1e-5, "scores": scores[0].tolist(),
             "included": included[0].tolist(), "audit": audit.audit(scores[0], included[0], 1e-5).to_dict(),
             "accountant": {"epsilons": {"rdp": 5.0, "prv": 4.8}}, "utility_val": 0.5}
    summary = typed_run({"task": "image", "attack": {"name": "loss"},
                         "records": {"membership": [True, False] * 10, "scores": {"loss": list(np.linspace(0, 1, 20))}}})
    v = record_views.audit_beside(CanaryAudit.from_dict(entry), summary).to_dict()  # analyses.json's layout
    est = v["estimators"]
    assert est["gdp_estimate"]["kind"] == "estimate" and est["fdp_bound"]["kind"] == "lower bound"
    typed = AuditView.from_dict(v)  # the views take it typed: read once, as the report reads analyses.json
    audits = {"ffnn": typed, "rnn": typed}
    table = analysis_tables.tables({"audit": audits})["audit"]
    assert {"fdp_mu", "fdp_epsilon_at_k", "gdp_mu_estimate", "gdp_mu_low", "gdp_mu_high"} <= set(table.columns)
    fig = audit_guesses_figure(audits)
    names = {t.name for t in fig.data}
    assert {"accountant ε (RDP)", "accountant ε (PRV)", "Steinke et al. bound (ε)"} <= names
    assert list(fig.data[0].y) == est["curve"]["steinke_epsilon"]
    assert "audit_guesses" in report.figures_of({"audit": audits})


def test_a_saturated_audit_has_no_finite_gdp_estimate_and_still_draws():
    included = np.arange(40) % 2 == 0
    scores = np.where(included, 1.0, 0.0) + np.linspace(0, 0.1, 40)  # every member above every non-member
    est = ae.audit_estimators(scores, included, 1e-4, resamples=100)
    assert est["gdp_estimate"]["saturated"] and est["gdp_estimate"]["epsilon"] is None
    assert est["fdp_bound"]["saturated"] and est["fdp_bound"]["mu"] > 0  # m's ceiling, a finite bound
    entry = {"m": 40, "delta": 1e-4, "accountant_epsilon": None, "estimators": est, "audited_epsilon": 0.0,
             "audit": {"best_k": 2}, "attack": "loss", "attack_epsilon_lower_bound": 0.0, "utility_val": 0.5}
    fig = audit_guesses_figure({"ffnn": AuditView.from_dict(entry)})
    assert any(t.name.startswith("Gaussian-DP estimate") and t.showlegend for t in fig.data)  # the band alone
