"""The Gaussian privacy module (paper 000, Algorithm 1) and its random-DP guarantee.

GPM: θ ← A(D) (the trained model); θ̃ = θ + N(0, σ²I); every query is answered with θ̃.
Only trainable parameters are perturbed (not BatchNorm statistics or other buffers).

* **Smooth curves over σ.** Draw d uses one fixed direction z_d ~ N(0, I) (seeded by the
  draw, the model's role and the defense seed), and θ̃ = θ + σ·z_d. A slider over σ then
  scales one noise vector instead of drawing a new one per value, so neighbouring σ give
  neighbouring models; r draws average out the direction.
* **Privacy (paper 000, Thm 5.1 / eq. 13).** With sensitivity S and μ = S/σ the mechanism is
  (ε, δ)-DP for δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2). S is estimated by the
  SensitivitySampler (:mod:`core.defenses.sensitivity`), which makes the guarantee
  *random* DP (Def. 3, Thm 5.3) with confidence γ (eq. 12):
  ρ = exp(½·W₋₁(−1/(4n))), γ = ρ + √(log(1/ρ)/(2n)).
"""
from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import torch
from scipy import optimize, special
from torch import nn

from core.defenses.registry import Parameter, WeightMechanism, register


def noise_direction(model: nn.Module, seed: int) -> dict[str, torch.Tensor]:
    """z ~ N(0, I) over every trainable parameter of ``model``, reproducible from ``seed``."""
    g = torch.Generator().manual_seed(int(seed) % 2**63)
    return {name: torch.randn(p.shape, generator=g, dtype=torch.float32)
            for name, p in model.named_parameters() if p.requires_grad}


@torch.no_grad()
def add_noise(model: nn.Module, base: dict[str, torch.Tensor], direction: dict[str, torch.Tensor], sigma: float) -> nn.Module:
    """Set ``model``'s parameters to θ + σ·z in place (``base`` = θ, ``direction`` = z); return it."""
    if not (math.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"σ must be a finite number ≥ 0, got {sigma!r}")
    for name, p in model.named_parameters():
        if name in direction:
            p.copy_(base[name].to(p.device) + sigma * direction[name].to(p.device, p.dtype))
    return model


def delta_of_epsilon(epsilon: float, mu: float) -> float:
    """δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2) (paper 000 eq. 13), in log space for large ε."""
    if mu <= 0:
        return 0.0
    if not math.isfinite(mu):
        return 1.0
    a = special.log_ndtr(-epsilon / mu + mu / 2)
    b = epsilon + special.log_ndtr(-epsilon / mu - mu / 2)
    if b >= a:
        return 0.0
    return float(math.exp(a) * -math.expm1(b - a))


def epsilon_at_delta(delta: float, sensitivity: float, sigma: float) -> float:
    """The smallest ε with δ(ε) ≤ ``delta`` for μ = S/σ (inf for σ = 0, 0 for S = 0)."""
    if not 0 < delta < 1:
        raise ValueError(f"δ must lie in (0, 1), got {delta}")
    if sensitivity <= 0:
        return 0.0
    if sigma <= 0:
        return math.inf
    mu = sensitivity / sigma
    if delta_of_epsilon(0.0, mu) <= delta:
        return 0.0
    hi = 1.0
    while delta_of_epsilon(hi, mu) > delta:
        hi *= 2
        if hi > 1e8:
            return math.inf
    return float(optimize.brentq(lambda e: delta_of_epsilon(e, mu) - delta, 0.0, hi, xtol=1e-10, rtol=1e-10))


def random_dp_gamma(n: int) -> float:
    """Confidence γ of random DP after n SensitivitySampler draws (paper 000 eq. 12)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rho = math.exp(0.5 * float(np.real(special.lambertw(-1.0 / (4 * n), k=-1))))
    return rho + math.sqrt(math.log(1 / rho) / (2 * n))


#: the Defenses page's table rows and curve (each point re-queries a noisy model per draw: coarse)
GPM_GRID = (0.0, 0.001, 0.003, 0.01, 0.03, 0.1)
#: the Defenses page's slider stops for σ
SIGMA_VALUES = (0.0,) + tuple(float(f"{v:.3g}") for v in np.logspace(-4, 0, 33))


@register
class GaussianPrivacyModule(WeightMechanism):
    """θ + σ·z (paper 000 Algorithm 1); guarantee: δ(ε) of eq. 13 with S from the SensitivitySampler."""

    name = "gpm"
    label = "Gaussian (weights)"
    short = "Gaussian"
    help = "gpm: weights θ + N(0, σ²I) (paper 000)"
    parameter = Parameter(name="sigma", symbol="σ", low=0.0, high=1e3, low_open=False, log_scale=False,
                          grid=GPM_GRID, slider=SIGMA_VALUES, slider_default=0.01, curve=GPM_GRID,
                          hint="σ of the weight noise")
    default_draws = 3
    needs_sensitivity = True

    def prepare(self, model: nn.Module, seed: int) -> dict[str, torch.Tensor]:
        return noise_direction(model, seed)

    def perturb(self, model: nn.Module, weights: dict[str, torch.Tensor], prepared: dict[str, torch.Tensor],
                spec: Any) -> nn.Module:
        return add_noise(copy.deepcopy(model), weights, prepared, spec.value)

    def guarantee(self, spec: Any, n_classes: int, sensitivity: Any | None) -> dict[str, Any]:
        s = sensitivity
        if s is None:
            return {"epsilon": None, "delta": spec.delta, "gamma": None,
                    "privacy_note": "sensitivity not estimated yet: run the SensitivitySampler"}
        eps = epsilon_at_delta(spec.delta, s.sensitivity, spec.value)
        return {"epsilon": eps if math.isfinite(eps) else None, "delta": spec.delta, "gamma": s.gamma,
                "sensitivity": s.sensitivity, "sensitivity_samples": s.n,
                "privacy_note": (f"random DP (000 Thm 5.3): S = {s.sensitivity:.4g} from n = {s.n} pairs, "
                                 f"holds with confidence 1 − γ = {1 - s.gamma:.3f}" +
                                 ("; σ = 0 gives no privacy (ε = ∞)" if not math.isfinite(eps) else ""))}
