"""Two more readings of the one-run audit's canaries (:mod:`core.measurement.audit`), beside
Steinke, Nasr & Jagielski's ε bound, and every reading against the number of guesses. Pure
numpy/scipy; the canary run itself is :func:`core.analyses.record_views.canary_audit`.

**Gaussian differential privacy** (Dong, Roth & Su, "Gaussian differential privacy", JRSS-B 2022;
arXiv:1905.02383). A mechanism is μ-GDP when telling "canary in" from "canary out" is at least as
hard as telling N(0, 1) from N(μ, 1): its trade-off curve (type II error against type I error α)
lies above G_μ(α) = Φ(Φ⁻¹(1 − α) − μ). μ-GDP is (ε, δ(ε))-DP for every ε ≥ 0 with (their
Corollary 2.13)

    δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2),

so a μ is read as ε at the run's δ by solving this for ε
(:func:`core.measurement.audit.gaussian_mechanism_epsilon`).

1. **The GDP estimate** (:func:`gdp_estimate`) — an *estimate*, not a bound. The ROC of G_μ is
   that of N(μ, 1) against N(0, 1), whose area is AUC = P[N(μ, 1) > N(0, 1)] = Φ(μ/√2). The
   estimate is the μ of the G_μ curve with the canaries' empirical AUC (members' scores against
   non-members', ties ½):

       μ̂ = √2·Φ⁻¹(AUC),

   the binormal equal-variance fit of the whole empirical ROC by its area; it does not change
   under any increasing transform of the scores (−loss, its logit, …). Its 95 % interval is the
   percentile bootstrap over canaries (members and non-members resampled apart, so both counts
   stay fixed); ε̂ and its interval are μ̂ and the interval's ends read at δ (ε is increasing in
   μ). It has no guaranteed direction: on a μ-GDP mechanism it exceeds the true μ about half the
   time, and it fits one curve family (a mechanism whose curve is not Gaussian is summarised,
   not bounded).

2. **The f-DP one-run bound** (Mahloujifar, Melis & Chaudhuri, "Auditing f-differential privacy
   in one run", ICML 2025; arXiv:2410.22235) for the Gaussian family. The game is Steinke et al.'s
   (each canary in with probability ½, k guesses on the most confident canaries, c of them
   right, m canaries). For an f-DP mechanism, their guessing-game theorem bounds the probability
   of c or more correct guesses by the recursion of their audit procedure: with τ the
   significance, start

       r = τ·c/m,   h = τ·(k − c)/m,

   and for i = c − 1, …, 0:

       h' = max(h, f̄⁻¹(r)),   r' = min(r + i/(k − i)·(h' − h), 1),

   where f̄(x) = 1 − f(x) is f's blow-up; for f = G_μ, f̄(x) = Φ(Φ⁻¹(x) + μ) and
   f̄⁻¹(y) = Φ(Φ⁻¹(y) − μ). If at the end r + h > k/m, no f-DP mechanism gives c correct of k
   with probability τ or more, and "the run is μ-GDP" is rejected at level τ
   (:func:`fdp_rejects`). The **bound** is the largest μ so rejected (:func:`fdp_mu_lower_bound`;
   rejection shrinks as μ grows, so a bisection over μ finds it): with confidence 1 − τ, the run
   is not μ-GDP for any smaller μ. It is the paper's recursion (not the simpler binomial-tail
   counting bound) for the Gaussian family only, vectorised over μ, k and c. Read as ε at δ, it is a
   lower bound on the run's ε **if the run's trade-off curve is Gaussian**
   (DP-SGD's nearly is); for another curve the μ statement holds but its ε reading need not
   (ε-DP randomized response is μ-GDP only from μ = 2·Φ⁻¹(e^ε/(1 + e^ε)), whose ε at δ > 0 is
   larger than ε). As for Steinke et al.'s bound, the headline is the best k of the grid at
   significance τ / (number of k) (Bonferroni), so it keeps its 1 − τ confidence.

3. **The bound against the number of guesses** (:func:`bound_curve`): at each k of a finer grid,
   Steinke et al.'s ε and the f-DP μ and ε, each at τ on its own (the headlines correct for the
   grid; the curve shows where the guesses stop paying).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from scipy import special

from core.measurement.audit import (
    SIGNIFICANCE,
    default_k_grid,
    epsilon_lower_bound,
    gaussian_mechanism_epsilon,
    guesses,
)

#: bootstrap resamples of the GDP estimate's interval
RESAMPLES = 1000
#: largest μ the bisection considers (μ = 20 is ε ≈ 200 at δ = 1e-5: beyond any audit of m ≤ 10⁵)
MU_CAP = 20.0
#: bisection steps over [0, MU_CAP] (MU_CAP / 2⁴⁰ < 1e-10)
BISECTIONS = 40
#: points of the bound-against-guesses curve
CURVE_POINTS = 20


def gdp_epsilon(mu: float | None, delta: float) -> float | None:
    """ε at δ of μ-GDP (Dong, Roth & Su, Cor. 2.13); 0 for μ ≤ 0, None for no finite μ."""
    if not 0 < delta < 1:
        raise ValueError(f"δ must lie in (0, 1), got {delta}")
    if mu is None:
        return None
    return 0.0 if mu <= 0 else gaussian_mechanism_epsilon(float(mu), float(delta))


def _auc_bootstrap(s_in: np.ndarray, s_out: np.ndarray, resamples: int,
                   rng: np.random.Generator) -> tuple[float, np.ndarray]:
    """The members-vs-non-members AUC (ties ½) and its ``resamples`` stratified bootstrap values.

    A resample is a count per canary (multinomial); with the non-members sorted, the non-members
    below a member are a prefix, so each resample's AUC is Σᵢ cᵢ·(C(< sᵢ) + ½·C(= sᵢ)) / (n₊·n₋)
    with C the cumulated non-member counts: O(B·m) time and memory."""
    n_in, n_out = len(s_in), len(s_out)
    out_sorted = np.sort(s_out)
    lo = np.searchsorted(out_sorted, s_in, side="left")   # non-members strictly below
    hi = np.searchsorted(out_sorted, s_in, side="right")  # … or tied
    auc = float((lo + hi).sum() / (2.0 * n_in * n_out))
    c_in = rng.multinomial(n_in, np.full(n_in, 1.0 / n_in), size=resamples)
    c_out = rng.multinomial(n_out, np.full(n_out, 1.0 / n_out), size=resamples)  # in sorted order: exchangeable
    cum = np.concatenate([np.zeros((resamples, 1)), np.cumsum(c_out, axis=1)], axis=1)
    below = (cum[:, lo] + cum[:, hi]) / 2.0
    return auc, (c_in * below).sum(axis=1) / (n_in * n_out)


def _mu_of_auc(auc: float, floor: float) -> float | None:
    """μ = √2·Φ⁻¹(AUC), the AUC raised to ``floor`` at least; None at AUC = 1 (a perfect split
    of the canaries has no finite μ)."""
    return None if auc >= 1.0 else float(math.sqrt(2.0) * special.ndtri(max(auc, floor)))


def gdp_estimate(scores: Any, included: Any, delta: float, confidence: float = 1 - SIGNIFICANCE,
                 resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """The μ-GDP estimate μ̂ = √2·Φ⁻¹(AUC) of the canaries (module docstring, 1), with its
    percentile-bootstrap interval, and both read as ε at ``delta``. An estimate, not a bound.

    A perfect split (every member above every non-member, AUC = 1) has no finite μ: ``mu`` and
    ``epsilon`` are then None and ``saturated`` True (m canaries cannot tell how much larger μ
    is); so is the interval's upper end when 2.5 % or more of the resamples split perfectly. The
    AUC is raised to 1/(2·n₊·n₋) at least (half a pair) so that a reversed split stays finite."""
    s = np.asarray(scores, np.float64)
    inc = np.asarray(included, bool)
    if len(s) != len(inc) or np.isnan(s).any():
        raise ValueError("one inclusion flag per canary, and no NaN score")
    if inc.all() or not inc.any():
        raise ValueError("the GDP estimate needs members and non-members among the canaries")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    rng = np.random.default_rng([int(seed), 0x6D0])
    auc, boot = _auc_bootstrap(s[inc], s[~inc], int(resamples), rng)
    floor = 1.0 / (2.0 * inc.sum() * (~inc).sum())
    mu = _mu_of_auc(auc, floor)
    tail = (1 - confidence) / 2
    lo, hi = (_mu_of_auc(float(v), floor) for v in np.quantile(boot, [tail, 1 - tail]))  # μ is increasing in AUC
    return {"kind": "estimate", "mu": mu, "mu_low": lo, "mu_high": hi, "auc": auc,
            "epsilon": gdp_epsilon(mu, delta), "epsilon_low": gdp_epsilon(lo, delta),
            "epsilon_high": gdp_epsilon(hi, delta), "delta": float(delta), "confidence": confidence,
            "resamples": int(resamples), "saturated": auc >= 1.0,
            "method": "Gaussian-DP estimate (Dong, Roth & Su 2019): μ̂ = √2·Φ⁻¹(AUC) of the canaries' scores, "
                      "percentile bootstrap over canaries; ε at δ by their Cor. 2.13. An estimate, not a bound"}


def fdp_rejects(mu: Any, m: int, k: Any, c: Any, significance: Any = SIGNIFICANCE) -> np.ndarray:
    """Whether c correct of k guesses (m canaries) reject "μ-GDP" at ``significance``: the
    recursion of Mahloujifar et al. (module docstring, 2) for f = G_μ, elementwise over the
    broadcast ``mu``, ``k``, ``c`` and ``significance``."""
    mu, k, c, tau = (a.astype(np.float64) for a in np.broadcast_arrays(np.asarray(mu, np.float64), np.asarray(k),
                                                                          np.asarray(c), np.asarray(significance)))
    if (c < 0).any() or (c > k).any() or (k > m).any() or (k < 1).any():
        raise ValueError(f"need 0 ≤ c ≤ k ≤ m = {m} and k ≥ 1")
    r = tau * c / m
    h = tau * (k - c) / m
    for i in range(int(c.max(initial=0)) - 1, -1, -1):
        active = i < c
        h_new = np.maximum(h, special.ndtr(special.ndtri(r) - mu))
        step = np.where(active, i / np.where(active, k - i, 1.0), 0.0)
        r_new = np.minimum(r + step * (h_new - h), 1.0)
        h = np.where(active, h_new, h)
        r = np.where(active, r_new, r)
    return r + h > k / m


def fdp_mu_lower_bound(m: int, k: Any, c: Any, significance: Any = SIGNIFICANCE) -> np.ndarray:
    """The largest μ that c correct of k guesses reject (0 when even μ = 0 is not rejected;
    ``MU_CAP`` when every μ considered is): a bisection vectorised over ``k``, ``c`` and
    ``significance`` (module docstring, 2)."""
    k, c, tau = np.broadcast_arrays(np.asarray(k), np.asarray(c), np.asarray(significance, np.float64))
    lo = np.zeros(k.shape)
    hi = np.full(k.shape, MU_CAP)
    rejected_at_0 = fdp_rejects(lo, m, k, c, tau)
    at_cap = fdp_rejects(hi, m, k, c, tau)
    for _ in range(BISECTIONS):
        mid = (lo + hi) / 2
        rej = fdp_rejects(mid, m, k, c, tau)
        lo = np.where(rej, mid, lo)
        hi = np.where(rej, hi, mid)
    return np.where(~rejected_at_0, 0.0, np.where(at_cap, MU_CAP, lo))


def correct_guesses(scores: Any, included: Any, ks: Sequence[int] | np.ndarray) -> np.ndarray:
    """Correct guesses at each k: k//2 + k%2 highest scores guessed IN, k//2 lowest OUT (as
    :func:`core.measurement.audit.audit`)."""
    truth = np.where(np.asarray(included, bool), 1, -1)
    return np.array([int(np.maximum(0, guesses(scores, k // 2 + k % 2, k // 2) * truth).sum()) for k in ks])


def fdp_audit(scores: Any, included: Any, delta: float, k_grid: Sequence[int] | None = None,
              significance: float = SIGNIFICANCE) -> dict[str, Any]:
    """The f-DP one-run bound (module docstring, 2) at each k of the grid (significance on its
    own) and the headline: the best k at ``significance`` / len(grid) (Bonferroni), as μ and as ε
    at ``delta`` (the latter assuming a Gaussian trade-off curve)."""
    s = np.asarray(scores, np.float64)
    m = len(s)
    grid = np.asarray(tuple(k_grid) if k_grid else default_k_grid(m))
    c = correct_guesses(s, included, grid)
    taus = np.r_[np.full(len(grid), significance), np.full(len(grid), significance / len(grid))]
    mus = fdp_mu_lower_bound(m, np.r_[grid, grid], np.r_[c, c], taus)
    per_k, corrected = mus[:len(grid)], mus[len(grid):]
    best = int(np.argmax(corrected))
    mu = float(corrected[best])
    return {"kind": "lower bound", "mu": mu, "epsilon": gdp_epsilon(mu, delta), "best_k": int(grid[best]),
            "correct": int(c[best]), "saturated": bool(c[best] == grid[best] and mu > 0), "at_cap": mu >= MU_CAP,
            "per_k": [{"k": int(k), "correct": int(v), "mu": float(u), "epsilon": gdp_epsilon(float(u), delta)}
                      for k, v, u in zip(grid, c, per_k)],
            "delta": float(delta), "significance": significance, "confidence": 1 - significance,
            "method": "f-DP one-run bound for the Gaussian family (Mahloujifar, Melis & Chaudhuri 2024, the "
                      "recursion of their guessing-game theorem), Bonferroni over the k grid; ε at δ assumes a "
                      "Gaussian trade-off curve"}


def curve_k_grid(m: int, points: int = CURVE_POINTS) -> tuple[int, ...]:
    """About ``points`` guess counts from 2 to m, evenly spaced, with the headline grid's."""
    return tuple(sorted({*np.linspace(2, m, points).round().astype(int).tolist(), *default_k_grid(m)}))


def bound_curve(scores: Any, included: Any, delta: float, ks: Sequence[int] | None = None,
                significance: float = SIGNIFICANCE) -> dict[str, Any]:
    """Each bound against the number of guesses k (module docstring, 3): Steinke et al.'s ε and
    the f-DP μ and ε at each k, each at ``significance`` on its own."""
    s = np.asarray(scores, np.float64)
    m = len(s)
    ks = tuple(ks) if ks else curve_k_grid(m)
    c = correct_guesses(s, included, ks)
    mus = fdp_mu_lower_bound(m, np.asarray(ks), c, significance)
    return {"k": [int(k) for k in ks], "correct": c.tolist(),
            "steinke_epsilon": [epsilon_lower_bound(m, int(k), int(v), delta, significance) for k, v in zip(ks, c)],
            "fdp_mu": mus.tolist(), "fdp_epsilon": [gdp_epsilon(float(u), delta) for u in mus],
            "significance": significance,
            "note": "each point is a 95 % bound on its own; the headlines take the best k of the coarse grid at "
                    "95 % / (number of k) (Bonferroni)"}


def audit_estimators(scores: Any, included: Any, delta: float, significance: float = SIGNIFICANCE,
                     resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """The GDP estimate, the f-DP bound and the bound-against-guesses curve of one canary run."""
    return {"gdp_estimate": gdp_estimate(scores, included, delta, 1 - significance, resamples, seed),
            "fdp_bound": fdp_audit(scores, included, delta, significance=significance),
            "curve": bound_curve(scores, included, delta, significance=significance)}
