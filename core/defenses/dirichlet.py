"""The Dirichlet mechanism on output distributions (paper 001 eq. 4; Gohari et al. 2021).

Every probability vector p a model answers with is replaced by one sample x ~ Dir(k·p), whose
density is ∝ Πᵢ xᵢ^{k·pᵢ − 1} on the simplex. E[x] = p; a large k concentrates x around p, a
small k scatters it towards the simplex' corners (k → 0: a one-hot vector drawn with probs p).

* **Inside the simplex.** Dir(k·p) needs every pᵢ > 0, so p is first mixed with the uniform
  distribution, p̃ = (1 − nη)·p + η (n classes): every p̃ᵢ ≥ η, as Lemma 1's p* assumes, and the
  order of the classes is kept.
* **Log space.** Samples are drawn as log-probabilities: a Gamma(a) variate is
  Gamma(a + 1)·U^{1/a}, so log G = log Gamma(a + 1) + log(U)/a stays finite where G itself
  underflows to 0 (k·p̃ᵢ ≪ 1), and x = G/ΣG becomes log x = log G − logsumexp(log G).
* **Every k in (0, 1e9], however small.** Two limits of the number formats, not of the math:
  (i) log x is floored at :data:`LOG_PROB_FLOOR` = −1e30 (e^(−1e30) is 0 in every float format, and
  the float32 signals hold a cross-entropy of 1e30 nats); only the stored cross-entropy of such an
  answer saturates. (ii) k is sampled as max(k, :data:`K_SAMPLING_MIN` = 1e-250), below which
  log(U)/(k·p̃ᵢ) overflows float64. As k → 0, Dir(k·p) tends to the one-hot vector e_I with
  P(I = i) = pᵢ within O(k), so every k ≤ 1e-250 gives the same distribution of stored answers.
* **Top-K Responses (large vocabularies).** Only the K largest probabilities, the reference's
  and the total of the rest are stored. By the aggregation property of the Dirichlet
  distribution, (x_known…, x_rest) ~ Dir(k·p_known…, k·p_rest) exactly, so the reference's
  probability and cross-entropy of the defended answer are exact. The split of x_rest over the
  unseen tokens is approximated by n_eff = exp(H_rest) equally likely tokens (H_rest the rest's
  conditional entropy, recovered from the stored entropy): R of them drawn explicitly, the
  largest of the others drawn as a maximum of Gamma variates, and the remaining ones as one
  aggregate whose entropy and rank contributions are their expectations. The
  top-K, the reference's rank and the entropy are therefore approximate.
* **Privacy (Lemma 1, eq. 5–7 of paper 001, as printed).** With p* = [η, …, η, 1 − (n−1)η],
  δ = 1 − P_{x ~ Dir(k·p*)}(x ∈ Δₙ(τ)), Δₙ(τ) = {x : τ ≤ xᵢ ≤ 1 − τ ∀i}, bounded here by the
  union bound over the Beta marginals xᵢ ~ Beta(k·p*ᵢ, k − k·p*ᵢ) (never below the true δ), and
  ε ≤ 2k(1 − η) − 3 + (k·b/2)·|log(1 − (n−1)τ) − log τ|. The study gives no τ and b; ours are
  documented defaults. For small k the bound is vacuous (δ ≈ 1, as 001 §5.3 notes) and the
  printed ε can even be negative: we report it as computed and flag it.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from scipy import special, stats

from core.defenses.registry import OutputMechanism, Parameter, register
from core.experiment.reference_attacks import step_logit_confidence
from core.measurement import studies
from core.measurement.responses import Responses

#: explicit tokens representing the unseen rest of a top-K answer (see module docstring)
REST_TOKENS = 32
#: floor of a sampled log-probability: e^(−1e30) is 0 in any float, and a cross-entropy of 1e30
#: nats still fits the float32 signals (module docstring, "Every k")
LOG_PROB_FLOOR = -1e30
#: smallest k actually sampled: below it the draw is the k → 0 limit (module docstring, "Every k")
K_SAMPLING_MIN = 1e-250


def sampling_k(k: float) -> float:
    """The k used to draw samples: ``k``, or :data:`K_SAMPLING_MIN` below it (same distribution of
    stored answers; module docstring)."""
    return max(float(k), K_SAMPLING_MIN)


def floor_probs(p: np.ndarray, eta: float) -> np.ndarray:
    """(1 − nη)·p + η: every component ≥ η, the order kept (n = the last axis' size)."""
    n = p.shape[-1]
    if not 0 <= eta * n < 1:
        raise ValueError(f"the floor η = {eta} must satisfy 0 ≤ n·η < 1 for n = {n} classes")
    return (1.0 - n * eta) * p + eta


def log_gamma_variates(rng: np.random.Generator, shape_param: np.ndarray) -> np.ndarray:
    """log G with G ~ Gamma(a), elementwise for a > 0, finite even where G underflows (for
    a ≥ ~1e-300; −∞ where a is 0, a component that must be 0)."""
    a = np.asarray(shape_param, np.float64)
    u = rng.random(a.shape)
    with np.errstate(divide="ignore"):
        return np.log(rng.standard_gamma(a + 1.0)) + np.log(np.maximum(u, 1e-300)) / a


def log_dirichlet(rng: np.random.Generator, alpha: np.ndarray) -> np.ndarray:
    """log x for x ~ Dir(alpha) along the last axis, floored at :data:`LOG_PROB_FLOOR`."""
    log_g = log_gamma_variates(rng, alpha)
    return np.maximum(log_g - special.logsumexp(log_g, axis=-1, keepdims=True), LOG_PROB_FLOOR)


def sample_probs(p: np.ndarray, k: float, eta: float, rng: np.random.Generator) -> np.ndarray:
    """Log-probabilities of Dir(k·p̃) samples, one per row of ``p`` (full vectors); any k > 0."""
    return log_dirichlet(rng, sampling_k(k) * floor_probs(np.asarray(p, np.float64), eta))


def torch_output_transform(k: float, eta: float, generator: torch.Generator) -> "DirichletOutputTransform":
    """A callable mapping (B, m) log-probabilities to log-probabilities of Dir(k·p̃) samples, in torch (for
    decisions inside a model's decoding or rollout loop); any k > 0.

    Every random number comes from ``generator`` (one seed per call feeds :func:`log_gamma_variates`), so a draw
    is fixed by the defense's seed; ``torch._standard_gamma`` takes no generator."""
    return DirichletOutputTransform(sampling_k(k), eta, generator)


class DirichletOutputTransform:
    """:func:`torch_output_transform`'s callable; :meth:`apply_together` applies several draws' transforms to
    the same log-probabilities at once (the task's ``*_under`` queries)."""

    def __init__(self, k: float, eta: float, generator: torch.Generator):
        self.k, self.eta, self.generator = k, eta, generator

    def _alpha(self, log_probs: torch.Tensor) -> torch.Tensor:
        p = log_probs.double().exp()
        n = p.shape[-1]
        return self.k * ((1.0 - n * self.eta) * p + self.eta)

    def _log_gamma(self, alpha: np.ndarray) -> np.ndarray:
        seed = int(torch.randint(0, 2**62, (1,), generator=self.generator))
        return log_gamma_variates(np.random.default_rng(seed), alpha)

    @staticmethod
    def _finish(log_g: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        log_x = (log_g - torch.logsumexp(log_g, -1, keepdim=True)).clamp_min(LOG_PROB_FLOOR)
        # float16/bfloat16 cannot hold the floor: their own most negative finite value instead
        return log_x.clamp_min(torch.finfo(dtype).min).to(dtype)

    def __call__(self, log_probs: torch.Tensor) -> torch.Tensor:
        alpha = self._alpha(log_probs)
        log_g = torch.from_numpy(self._log_gamma(alpha.cpu().numpy())).to(alpha.device)
        return self._finish(log_g, log_probs.dtype)

    @staticmethod
    def apply_together(transforms: list["DirichletOutputTransform"], log_probs: torch.Tensor) -> torch.Tensor | None:
        """(T, B, m): each transform applied to ``log_probs`` (the same numbers as one call each), the shared work
        done once. None where the transforms differ in k or η (the caller then calls each)."""
        first = transforms[0]
        if any(not isinstance(t, DirichletOutputTransform) or (t.k, t.eta) != (first.k, first.eta) for t in transforms):
            return None
        alpha = first._alpha(log_probs)
        alpha_np = alpha.cpu().numpy()
        log_g = torch.from_numpy(np.stack([t._log_gamma(alpha_np) for t in transforms])).to(alpha.device)
        return first._finish(log_g, log_probs.dtype)


@dataclass(frozen=True)
class SaturatedShare:
    """:func:`saturated_share`'s numbers: the share of ``members`` and of ``non_members`` saturated past the
    ``floor`` (n − 1)·η."""

    members: float
    non_members: float
    floor: float

    @property
    def most(self) -> float:
        """The larger of the two shares."""
        return max(self.members, self.non_members)


def saturated_share(responses: Responses, membership: np.ndarray, eta: float) -> SaturatedShare:
    """The share of members and of non-members whose true-class answer is saturated past Dir_k's floor:
    1 − c below (n − 1)·η (per step, then averaged per record). For those, the noisy 1 − c is set by the
    draw's scatter around the floor, not by p, and LiRA's logit φ = log c − log(1 − c) moves by many units
    even at large k — why LiRA/RMIA's AUC can rise under Dir_k or fall at almost no noise."""
    member = np.asarray(membership, bool)
    floor = (responses.n_classes - 1) * eta
    phi = step_logit_confidence(responses)
    # 1 − c from φ without cancellation: 1 − c = 1 / (1 + e^φ)
    below = (special.expit(-phi) < floor).astype(np.float64)
    per_record = responses.record_mean(below)
    return SaturatedShare(members=float(per_record[member].mean()) if member.any() else 0.0,
                          non_members=float(per_record[~member].mean()) if (~member).any() else 0.0, floor=float(floor))


def defend_responses(responses: Responses, k: float, eta: float, rng: np.random.Generator) -> Responses:
    """The answers of ``responses`` passed through Dir_k, every step independently."""
    if responses.probs is not None:
        return responses.with_log_probs(sample_probs(responses.probs, k, eta, rng))
    return _defend_top_k(responses, k, eta, rng)


def _log_gamma_cdf(a: np.ndarray, log_g: np.ndarray) -> np.ndarray:
    """P(G ≤ g) for G ~ Gamma(a), from log g; the small-g series g^a/Γ(a+1) where g underflows."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        direct = special.gammainc(a, np.exp(np.minimum(log_g, 700.0)))
        series = np.exp(np.minimum(a * log_g - special.gammaln(a + 1.0), 0.0))
    return np.where(log_g > -700.0, direct, series)


def _log_max_of_gammas(rng: np.random.Generator, a: np.ndarray, n: np.ndarray) -> np.ndarray:
    """log of max(G₁…G_n), Gᵢ ~ Gamma(a) iid (n real ≥ 1): inverse CDF of F(g)^n at a uniform."""
    log_q = np.log(np.maximum(rng.random(a.shape), 1e-300)) / n  # log of u^{1/n}
    with np.errstate(divide="ignore", under="ignore"):
        direct = np.log(special.gammaincinv(a, np.exp(log_q)))
    series = (special.gammaln(a + 1.0) + log_q) / a  # where F(g) ≈ g^a/Γ(a+1)
    return np.where(np.isfinite(direct) & (direct > -700.0), direct, series)


def _defend_top_k(r: Responses, k: float, eta: float, rng: np.random.Generator) -> Responses:
    """Aggregated sampling for top-K Responses (module docstring).

    Components per step: the known probabilities (top-K and the reference), R explicit tokens
    of the unseen rest, and its remaining n_tail tokens as (the largest of them, the others):
    the largest is drawn as the max of n_tail Gamma variates, so a small k that piles the mass
    on one unseen token still shows it in the top-K; the others are one aggregate Gamma.
    """
    k = sampling_k(k)
    t, kk, v = r.n_steps, r.top_probs.shape[1], r.n_classes
    if not 0 <= v * eta < 1:
        raise ValueError(f"the floor η = {eta} must satisfy 0 ≤ n·η < 1 for n = {v} classes")
    top = r.top_probs.astype(np.float64)
    ref = r.ref_prob.astype(np.float64)
    ref_in_top = r.ref_rank < kk
    # known components: the top-K, plus the reference where it is not among them
    known = np.concatenate([top, np.where(ref_in_top, 0.0, ref)[:, None]], axis=1)  # (T, K+1)
    n_known = kk + (~ref_in_top).astype(np.int64)
    rest = np.clip(1.0 - known.sum(1), 0.0, 1.0)
    n_rest = np.maximum(v - n_known, 0)
    # conditional entropy of the rest, from H(p) = −Σ_known p log p − p_rest log p_rest + p_rest·H_rest
    known_h = -(special.xlogy(known, known)).sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        h_rest = (r.entropy.astype(np.float64) - known_h + special.xlogy(rest, rest)) / rest
    h_rest = np.where(rest > 1e-12, np.clip(np.nan_to_num(h_rest), 0.0, np.log(np.maximum(n_rest, 1))), 0.0)
    n_eff = np.where(n_rest > 0, np.clip(np.exp(h_rest), 1.0, np.maximum(n_rest, 1)), 0.0)
    explicit = np.minimum(np.floor(n_eff).astype(np.int64), REST_TOKENS)
    n_tail = np.maximum(n_eff - explicit, 0.0)

    # the floor (1 − nη)·p + η over the whole vocabulary, mapped onto the components
    scale = 1.0 - v * eta
    known_f = np.where(known > 0, scale * known + eta, 0.0)
    per_token = np.where(n_eff > 0, (scale * rest + eta * n_rest) / np.maximum(n_eff, 1.0), 0.0)
    a = np.maximum(k * per_token, 1e-300)  # Gamma shape of one unseen token
    cols = np.arange(REST_TOKENS)[None, :]
    alpha = np.concatenate([k * known_f, np.where(cols < explicit[:, None], a[:, None], 0.0)], axis=1)
    log_g = np.full((t, alpha.shape[1] + 2), -np.inf)
    present = alpha > 0
    log_g[:, :-2][present] = log_gamma_variates(rng, alpha[present])
    has_tail = n_tail > 0
    # the largest tail token (a fractional tail, n_tail < 1, is one token of shape n_tail·a)
    single = has_tail & (n_tail < 1)
    many = n_tail >= 1
    log_g[single, -2] = log_gamma_variates(rng, (n_tail * a)[single])
    log_g[many, -2] = _log_max_of_gammas(rng, a[many], n_tail[many])
    others = n_tail > 1
    log_g[others, -1] = log_gamma_variates(rng, ((n_tail - 1) * a)[others])
    # each other token is below the max: where their total shape is small the sum is dominated by
    # its own largest term, so it cannot exceed M (unconditioned, it would in about half the draws)
    sparse = others & ((n_tail - 1) * a < 1.0)
    log_g[sparse, -1] = np.minimum(log_g[sparse, -1], log_g[sparse, -2])
    log_x = np.maximum(log_g - special.logsumexp(log_g, axis=1, keepdims=True), LOG_PROB_FLOOR)
    x = np.exp(log_x)

    # the reference's component: its slot among the top-K, or the extra known slot
    ref_col = np.where(ref_in_top, r.ref_rank, kk).astype(np.int64)
    rows = np.arange(t)
    log_ref = log_x[rows, ref_col]
    x_ref = x[rows, ref_col]
    visible = x[:, :-1]
    new_top = -np.sort(-visible, axis=1)[:, :kk]
    rank = (visible > x_ref[:, None]).sum(1).astype(np.float64)
    # the other tail tokens: Gᵢ ~ Gamma(a) below the tail's max M, independent of G_ref; the
    # expected number above G_ref is (n_tail − 1)·(F(M) − F(G_ref))/F(M)
    f_ref = _log_gamma_cdf(a, log_g[rows, ref_col])
    f_max = _log_gamma_cdf(a, log_g[:, -2])
    # np.where computes both branches: where f_max is tiny and not above f_ref the unused quotient
    # overflows (a warning, not a value: those entries take 0)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        above = np.where(others & (f_max > f_ref), (n_tail - 1) * (f_max - f_ref) / f_max, 0.0)
    rank = rank + np.nan_to_num(above)
    # entropy: exact over the visible components, the expectation over the others' split
    x_others = x[:, -1]
    n_o = np.maximum(n_tail - 1, 0.0)
    others_h = np.where(others, special.digamma(n_o * a + 1.0) - special.digamma(a + 1.0), 0.0)
    entropy = (-(special.xlogy(visible, visible)).sum(1) - special.xlogy(x_others, x_others)
               + x_others * np.clip(others_h, 0, None))
    entropy = np.maximum(entropy, 0.0)
    # the spread of log p (Min-K%++'s σ², Zhang et al. 2024), like the entropy: exact over the visible
    # components, over the others (mass x_o split as s ~ Dir(a, …, a) over n_o tokens) its expectation
    # E Σᵢ x_o sᵢ (log x_o + log sᵢ)² = x_o [(log x_o)² − 2 log x_o · H_o + (ψ(a+1) − ψ(n_o·a+1))² + ψ₁(a+1) − ψ₁(n_o·a+1)]
    # (sᵢ ~ Beta(a, (n_o − 1)a); E[s (log s)²] = E[s]·E_{Beta(a+1, (n_o−1)a)}[(log s)²]); σ² = that second moment − H²
    log_vis, log_o = log_x[:, :-1], log_x[:, -1]
    split_m2 = np.where(others, (special.digamma(a + 1.0) - special.digamma(n_o * a + 1.0)) ** 2
                        + special.polygamma(1, a + 1.0) - special.polygamma(1, n_o * a + 1.0), 0.0)
    second = (visible * log_vis ** 2).sum(1) + x_others * (log_o ** 2 - 2.0 * log_o * np.clip(others_h, 0, None)
                                                          + np.clip(split_m2, 0, None))
    return r.with_step_signals(
        top_probs=new_top.astype(np.float32),
        ref_prob=x_ref.astype(np.float32),
        ref_rank=np.rint(rank).astype(np.int32),
        entropy=entropy.astype(np.float32),
        cross_entropy=(-log_ref).astype(np.float32),
        logp_var=np.maximum(second - entropy ** 2, 0.0).astype(np.float32),
    )


@dataclass(frozen=True)
class DirichletPrivacy:
    """(ε, δ) of Lemma 1 (paper 001, eq. 6–7 as printed) for one k."""

    epsilon: float
    delta: float
    k: float
    n: int
    eta: float
    tau: float
    b: float

    @property
    def vacuous(self) -> bool:
        """True when the bound says nothing: δ ≥ 1, or the printed ε is negative."""
        return self.delta >= 1.0 or self.epsilon < 0


@functools.lru_cache(maxsize=1024)
def lemma1_bound(k: float, n: int, eta: float, tau: float, b: float) -> DirichletPrivacy:
    """Lemma 1: ε ≤ 2k(1 − η) − 3 + (k·b/2)·|log(1 − (n−1)τ) − log τ| and
    δ = 1 − P(x ∈ Δₙ(τ)) for x ~ Dir(k·p*), p* = [η, …, η, 1 − (n−1)η].

    δ is bounded above by the union bound Σᵢ P(xᵢ < τ) + P(xᵢ > 1 − τ) over the Beta(k·p*ᵢ,
    k − k·p*ᵢ) marginals (clipped to 1), so the reported δ is never smaller than the lemma's.
    Memoised: every slider step asks again for each curve point's guarantee.
    """
    if not (k > 0 and 0 < eta and (n - 1) * eta < 1 and 0 < tau and (n - 1) * tau < 1 and b > 0):
        raise ValueError("lemma 1 needs k > 0, 0 < η, (n−1)η < 1, 0 < τ, (n−1)τ < 1 and b > 0")
    eps = 2 * k * (1 - eta) - 3 + (k * b / 2) * abs(np.log(1 - (n - 1) * tau) - np.log(tau))
    small = k * eta
    big = k * (1 - (n - 1) * eta)
    out_small = stats.beta.cdf(tau, small, k - small) + stats.beta.sf(1 - tau, small, k - small)
    out_big = stats.beta.cdf(tau, big, k - big) + stats.beta.sf(1 - tau, big, k - big)
    delta = min(1.0, (n - 1) * out_small + out_big)
    return DirichletPrivacy(float(eps), float(delta), float(k), int(n), float(eta), float(tau), float(b))


def bound_status(bound: DirichletPrivacy) -> str | None:
    """Why Lemma 1 gives no guarantee at this k (None when it gives one): δ ≥ 1 makes any ε vacuous;
    the printed formula (eq. 7) goes negative for small k, which no ε-DP bound can be."""
    if bound.delta >= 1.0:
        return "vacuous (δ ≥ 1)"
    if bound.epsilon < 0:
        return "no bound (the printed formula goes negative)"
    return None


#: the studies' table rows (001 Tables 1–2)
DIRICHLET_GRID = (100.0, 10.0, 1.0, 0.1, 0.01)
#: the Defenses page's slider stops for k (log-spaced, three significant digits)
K_VALUES = tuple(float(f"{v:.3g}") for v in np.logspace(-2, 4, 49))


@register
class DirichletMechanism(OutputMechanism):
    """Dir_k on every answer (paper 001 eq. 4); guarantee: Lemma 1 (eq. 5–7) at the spec's η, τ, b."""

    name = "dirichlet"
    label = "Dirichlet (outputs)"
    short = "Dirichlet"
    help = "dirichlet: outputs x ~ Dir(k·p) (paper 001)"
    parameter = Parameter(name="k", symbol="k", low=0.0, high=1e9, low_open=True, log_scale=True,
                          grid=DIRICHLET_GRID, slider=K_VALUES, slider_default=10.0,
                          # Dir_k re-samples cached answers: a fine curve is cheap
                          curve=K_VALUES[::4], hint="k (log scale: smaller = more noise)")
    # one draw scatters more than neighbouring k differ (translation's BLEU); 8 draws resolve the curve
    default_draws = 8

    def transform(self, responses: Responses, spec: Any, rng: np.random.Generator) -> Responses:
        return defend_responses(responses, spec.value, spec.eta, rng)

    def torch_transform(self, spec: Any, generator: torch.Generator):
        return torch_output_transform(spec.value, spec.eta, generator)

    def guarantee(self, spec: Any, n_classes: int, sensitivity: Any | None) -> dict[str, Any]:
        bound = lemma1_bound(spec.value, n_classes, spec.eta, spec.tau, spec.b)
        where = f"Lemma 1 (001 eq. 7) with n = {n_classes}, η = {spec.eta:g}, τ = {spec.tau:g}, b = {spec.b:g}"
        # a vacuous guarantee is never shown as a number: an ε beside δ = 1, or a negative ε from the
        # printed formula, reads as a promise the lemma does not make
        status = bound_status(bound)
        note = f"{status}: {where} says nothing at this k" if status else where
        return {"epsilon": None if status else bound.epsilon, "delta": bound.delta, "gamma": None,
                "privacy_note": note, "guarantee": status or "(ε, δ)-DP"}

    def study_rows(self, task: str, arch: str) -> studies.StudyTable | None:
        return studies.dirichlet_rows(task, arch)
