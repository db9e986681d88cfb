"""An audited ε from one training run (Steinke, Nasr & Jagielski, "Privacy auditing with one (1)
training run", NeurIPS 2023; arXiv:2305.08846). Pure numpy/scipy; the canary runs are
:mod:`core.analyses.record_views`.

The game (their Algorithm 1): m canaries; each is included in the training set independently with
probability ½ (Sᵢ = +1 in, −1 out). After the one training run the auditor scores every canary
("higher = member"), guesses Tᵢ = +1 on its k₊ highest scores and Tᵢ = −1 on its k₋ lowest,
and abstains (Tᵢ = 0) on the rest: r = k₊ + k₋ guesses, of which v = Σᵢ max(0, Tᵢ·Sᵢ) are correct.

If the training is (ε, δ)-DP in the canaries, correct guesses are stochastically dominated by
randomized response. With q = e^ε / (1 + e^ε) (the accuracy of ε-DP randomized response) and
W ~ Binomial(r, q):

* pure DP (δ = 0), their main theorem:  P[v ≥ v₀] ≤ β(v₀) = P[W ≥ v₀];
* approximate DP (δ > 0), their (ε, δ) theorem, computed as in their Appendix D:

      P[v ≥ v₀] ≤ β(v₀) + 2·m·δ·α(v₀),   α(v₀) = max_{i = 1..v₀} P[v₀ − i ≤ W < v₀] / i.

The bound of :func:`p_value` is this right-hand side (capped at 1). Observing v correct out of r,
the audit rejects "the run is (ε, δ)-DP" at significance β when p_value(m, r, v, ε, δ) < β; the
**audited ε** is the largest ε so rejected (:func:`epsilon_lower_bound`; p grows with ε, so a
root search finds it; Appendix D bisects, we use Brent's method on the same function). It holds
with confidence 1 − β whatever the scores, because the canaries' inclusion is the only randomness
the test uses.

Choosing k after looking at the outcome is a multiple test: :func:`audit` reports every k of a
grid and, as the headline, the best of them at significance β / (number of k) (Bonferroni), so
the headline keeps its 1 − β confidence.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np
from scipy import optimize, stats

#: the default significance β of the audit (95 % confidence)
SIGNIFICANCE = 0.05
#: largest ε the root search considers (p reaches 1 long before for any finite r)
EPS_CAP = 100.0


def p_value(m: int, r: int, v: int, eps: float, delta: float = 0.0) -> float:
    """P[≥ v correct of r guesses] under the null "(ε, δ)-DP" with m canaries (module docstring)."""
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 ≤ v ≤ r ≤ m, got v={v}, r={r}, m={m}")
    if eps < 0 or not 0 <= delta <= 1:
        raise ValueError(f"need ε ≥ 0 and δ in [0, 1], got ε={eps}, δ={delta}")
    q = 1.0 / (1.0 + math.exp(-eps))
    beta = float(stats.binom.sf(v - 1, r, q))  # P[W ≥ v]
    if delta == 0 or v == 0:
        return min(beta, 1.0)
    i = np.arange(1, v + 1)
    # P[v − i ≤ W < v] = P[W ≥ v − i] − P[W ≥ v]
    between = stats.binom.sf(v - i - 1, r, q) - beta
    alpha = float(np.max(between / i))
    return min(beta + alpha * delta * 2 * m, 1.0)


def epsilon_lower_bound(m: int, r: int, v: int, delta: float = 0.0, significance: float = SIGNIFICANCE) -> float:
    """The largest ε whose (ε, δ)-DP claim v correct of r guesses rejects at ``significance``
    (0 when even ε = 0 is not rejected)."""
    if not 0 < significance < 1:
        raise ValueError(f"significance must lie in (0, 1), got {significance}")

    def gap(eps: float) -> float:
        return significance - p_value(m, r, v, eps, delta)  # > 0: rejected

    if r == 0 or gap(0.0) <= 0:
        return 0.0
    hi = 1.0
    while gap(hi) > 0:
        if hi >= EPS_CAP:
            return EPS_CAP
        hi *= 2
    return float(optimize.brentq(gap, hi / 2 if hi > 1 else 0.0, hi, xtol=1e-6))


def guesses(scores: Any, k_positive: int, k_negative: int) -> np.ndarray:
    """T ∈ {−1, 0, +1}ᵐ: +1 on the ``k_positive`` highest scores, −1 on the ``k_negative`` lowest."""
    s = np.asarray(scores, np.float64)
    if np.isnan(s).any():
        raise ValueError("canary scores must not be NaN")
    if k_positive < 0 or k_negative < 0 or k_positive + k_negative > len(s):
        raise ValueError(f"k₊ + k₋ = {k_positive + k_negative} guesses for {len(s)} canaries")
    order = np.argsort(-s, kind="mergesort")
    t = np.zeros(len(s), np.int8)
    t[order[:k_positive]] = 1
    if k_negative:
        t[order[len(s) - k_negative:]] = -1
    return t


@dataclass(frozen=True)
class AuditAtK:
    """One number of guesses: r guesses (half + / half −), v correct, the audited ε."""

    k: int
    correct: int
    epsilon: float
    accuracy: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AuditResult:
    """The one-run audit of one training run's canaries."""

    m: int
    n_included: int
    delta: float
    significance: float
    per_k: tuple[AuditAtK, ...]
    #: the headline: the best k of the grid at significance / len(grid) (Bonferroni), its ε and k
    epsilon: float
    best_k: int
    #: every guess at the best k was right: the bound is set by m, not by the model (more canaries
    #: could prove more)
    saturated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"m": self.m, "n_included": self.n_included, "delta": self.delta, "significance": self.significance,
                "per_k": [a.to_dict() for a in self.per_k], "epsilon": self.epsilon, "best_k": self.best_k,
                "saturated": self.saturated,
                "confidence": 1 - self.significance,
                "method": "Steinke, Nasr & Jagielski 2023 (one training run), Bonferroni over the k grid"}


def default_k_grid(m: int) -> tuple[int, ...]:
    """Guess counts tried: 5 %, 10 %, 20 %, 50 % and 100 % of the canaries (at least 2 each)."""
    return tuple(sorted({max(2, min(m, int(round(f * m)))) for f in (0.05, 0.1, 0.2, 0.5, 1.0)}))


def audit(scores: Any, included: Any, delta: float = 0.0, k_grid: Sequence[int] | None = None,
          significance: float = SIGNIFICANCE) -> AuditResult:
    """Guess on the most confident canaries and bound ε (see the module docstring).

    Args:
        scores: per canary, "higher = member" (e.g. −loss on the canary's own label).
        included: per canary, whether it was in the training set (the coin flips Sᵢ).
        delta: δ of the (ε, δ) claim under test.
        k_grid: numbers of guesses to try (each split k//2 highest as IN, the rest lowest as OUT).
    """
    s = np.asarray(scores, np.float64)
    inc = np.asarray(included, bool)
    if len(s) != len(inc) or len(s) < 2:
        raise ValueError("one inclusion flag per canary, and at least two canaries")
    m = len(s)
    grid = tuple(k_grid) if k_grid else default_k_grid(m)
    truth = np.where(inc, 1, -1)
    per_k = []
    for k in grid:
        t = guesses(s, k // 2 + k % 2, k // 2)
        v = int(np.maximum(0, t * truth).sum())
        per_k.append(AuditAtK(int(k), v, epsilon_lower_bound(m, k, v, delta, significance), v / k))
    corrected = [epsilon_lower_bound(m, a.k, a.correct, delta, significance / len(grid)) for a in per_k]
    best = int(np.argmax(corrected))
    return AuditResult(m, int(inc.sum()), float(delta), float(significance), tuple(per_k), float(corrected[best]),
                       per_k[best].k, per_k[best].correct == per_k[best].k and corrected[best] > 0)


def gaussian_mechanism_epsilon(mu: float, delta: float) -> float:
    """ε at δ of the Gaussian mechanism with sensitivity/σ = μ (Balle & Wang 2018, Thm 8):
    the ε solving δ = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2). The truth for synthetic audits."""
    def d(eps: float) -> float:
        return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta

    if d(0.0) <= 0:
        return 0.0
    hi = 1.0
    while d(hi) > 0:
        hi *= 2
    return float(optimize.brentq(d, 0.0, hi, xtol=1e-10))


def audit_comparability(canary_unit: str, privacy_unit: str, same_unit: bool) -> dict[str, Any]:
    """Whether an audited ε and an accountant's ε bound the same thing. The audit's canary is
    ``canary_unit`` (one record of the task: an image, a map); the accountant's ε protects one
    ``privacy_unit`` (DP-SGD's sample). When they differ (navigation: a canary map is replayed in
    many 16-frame windows, each a DP-SGD sample), the audited ε bounds a group of samples and the
    accountant's ε one sample: group privacy would scale the latter to k·ε with δ scaled to
    k·e^{(k−1)ε}·δ over the k windows a map yields, which for hundreds of windows says nothing, so
    the two are "not comparable" and no verdict is drawn from them."""
    if same_unit:
        return {"comparable": True, "reason": f"both bound one {canary_unit.removeprefix('one ')}"}
    return {"comparable": False,
            "reason": f"the audit's canary is {canary_unit}, the accountant protects {privacy_unit}: group privacy over "
                      f"the samples one canary yields would be needed (ε and δ scaled by their number), so the two ε "
                      f"are not on one unit"}

