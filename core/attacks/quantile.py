"""Quantile-regression membership inference (Bertran et al., NeurIPS 2023, "Scalable membership
inference attacks via quantile regression"): no shadow model of the target's architecture.

The attacker holds public records it knows the target did not train on (its non-member pool) and
may query the target on them. With s(x) the target's score on record x — here LiRA's
logit-scaled confidence of the reference, φ = log c − log(1 − c), averaged over a record's steps
(:func:`core.experiment.reference_attacks.step_logit_confidence`) — one regressor q̂(x) is fitted
on the pool's (features(x), s(x)) by the pinball (quantile) loss

    ρ_τ(u) = max(τ·u, (τ − 1)·u),   u = s − q̂(x),   τ = 1 − α,

whose minimiser over functions of x is the conditional (1 − α) quantile of s given x (Koenker &
Bassett 1978). A regressor fitted on a few hundred records overfits them (its quantiles are too
tight on unseen records), so it is fitted on 70 % of the pool and shifted by the conformal offset of
the other 30 % — the ⌈(n + 1)(1 − α)⌉-th smallest held-out residual s − q̂ (conformalised quantile
regression, Romano, Patterson & Candès, NeurIPS 2019) — which bounds the false-positive rate on
records exchangeable with the pool by α. The features are the record's own (model-independent), so
q̂(x) predicts how confident *a model that did not train on x* is on x. Member iff s(x) > q̂(x); the
score s(x) − q̂(x) gives the full ROC. The pool and the features are chosen in
:mod:`core.experiment.model_attacks`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

#: the default α: member iff the score exceeds the non-members' predicted 95 % quantile
QUANTILE_ALPHA = 0.05
#: share of the pool held out to calibrate the regressor (conformalised quantile regression)
CALIBRATION_SHARE = 0.3


@dataclass
class QuantileTraining:
    """Hyper-parameters of the quantile regressor (a one-hidden-layer MLP, full-batch Adam)."""

    hidden: int = 64
    steps: int = 600
    lr: float = 1e-2
    weight_decay: float = 1e-3
    seed: int = 0


def pinball_loss(residual: torch.Tensor, tau: float) -> torch.Tensor:
    """Mean ρ_τ(u) = max(τu, (τ − 1)u) of residuals u = s − q̂: minimised by q̂ = the τ-quantile."""
    return torch.maximum(tau * residual, (tau - 1.0) * residual).mean()


class QuantileRegressor:
    """q̂_τ(x): an MLP on standardised features fitted by the pinball loss at τ = 1 − α.

    Deterministic given ``training.seed`` (full batches: no data order). The target is
    standardised too, so one learning rate suits scores of any scale.
    """

    def __init__(self, alpha: float = QUANTILE_ALPHA, training: QuantileTraining | None = None):
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
        self.alpha = float(alpha)
        self.training = training or QuantileTraining()
        self.model: nn.Module | None = None
        self.offset = 0.0

    def _net(self, in_dim: int) -> nn.Module:
        h = self.training.hidden
        return nn.Sequential(nn.Linear(in_dim, h), nn.ReLU(), nn.Linear(h, 1))

    @staticmethod
    def _finite(features: np.ndarray, scores: np.ndarray) -> tuple[torch.Tensor, np.ndarray]:
        x = torch.as_tensor(np.asarray(features, np.float32).reshape(len(features), -1))
        s = np.asarray(scores, np.float64)
        ok = np.isfinite(s)
        if ok.sum() < 10:
            raise ValueError(f"quantile regression needs at least 10 non-member scores, got {int(ok.sum())}")
        return x[torch.as_tensor(ok)], s[ok]

    def _split(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Seeded (fit, calibration) positions: the last :data:`CALIBRATION_SHARE` calibrate."""
        order = np.random.default_rng([self.training.seed, 0xC0F]).permutation(n)
        n_cal = int(round(CALIBRATION_SHARE * n))
        return order[n_cal:], order[:n_cal]

    def _calibrate(self, x: torch.Tensor, s: np.ndarray) -> None:
        """The conformal offset: the ⌈(n + 1)(1 − α)⌉-th smallest residual s − q̂ of the held-out records."""
        self.offset = 0.0
        residual = np.sort(s - self.predict(x.numpy()))
        k = int(np.ceil((len(residual) + 1) * (1.0 - self.alpha))) - 1
        self.offset = float(residual[min(max(k, 0), len(residual) - 1)])

    def fit(self, features: np.ndarray, scores: np.ndarray) -> "QuantileRegressor":
        """Fit on ``features`` and ``scores`` (full-batch Adam, :meth:`_descend`), then calibrate."""
        x, s = self._finite(features, scores)
        fit, cal = self._split(len(s))
        self._x_mean, self._x_std = x[fit].mean(0), x[fit].std(0).clamp_min(1e-3)
        self._s_mean, self._s_std = float(s[fit].mean()), float(max(s[fit].std(), 1e-6))
        torch.manual_seed(self.training.seed)
        self.model = self._descend(self._net(x.shape[1]), x[fit], s[fit], self.training.steps)
        self._calibrate(x[cal], s[cal])
        return self

    def refit(self, features: np.ndarray, scores: np.ndarray, steps: int) -> "QuantileRegressor":
        """A copy fitted to new scores of the same records' kind, starting from this fit's weights and
        standardisation (the same pinball objective, fewer steps: a defended victim's pool answers,
        draw after draw)."""
        if self.model is None:
            raise RuntimeError("quantile regressor: fit() before refit()")
        x, s = self._finite(features, scores)
        other = self._copy()
        net = self._net(x.shape[1])
        net.load_state_dict(self.model.state_dict())
        fit, cal = self._split(len(s))
        other.model = other._descend(net, x[fit], s[fit], steps)
        other._calibrate(x[cal], s[cal])
        return other

    def _copy(self) -> "QuantileRegressor":
        """An unfitted regressor with this one's α, training and standardisation (a refit's start)."""
        other = QuantileRegressor(self.alpha, self.training)
        other._x_mean, other._x_std, other._s_mean, other._s_std = self._x_mean, self._x_std, self._s_mean, self._s_std
        return other

    def _descend(self, net: nn.Module, x: torch.Tensor, s: np.ndarray, steps: int) -> nn.Module:
        """Full-batch Adam on the pinball loss at τ = 1 − α (standardised features and target)."""
        z = (x - self._x_mean) / self._x_std
        y = torch.as_tensor((s - self._s_mean) / self._s_std, dtype=torch.float32)
        opt = torch.optim.Adam(net.parameters(), lr=self.training.lr, weight_decay=self.training.weight_decay)
        tau = 1.0 - self.alpha
        net.train()
        for _ in range(steps):
            opt.zero_grad()
            loss = pinball_loss(y - net(z)[:, 0], tau)
            loss.backward()
            opt.step()
        return net.eval()

    def predict(self, features: np.ndarray) -> np.ndarray:
        """(N,) predicted (1 − α) quantiles of the score, in the score's units."""
        if self.model is None:
            raise RuntimeError("quantile regressor: fit() before predict()")
        x = torch.as_tensor(np.asarray(features, np.float32).reshape(len(features), -1))
        with torch.no_grad():
            q = self.model((x - self._x_mean) / self._x_std)[:, 0].double().numpy()
        return q * self._s_std + self._s_mean + self.offset


def quantile_scores(scores: np.ndarray, quantiles: np.ndarray) -> np.ndarray:
    """The attack's score s(x) − q̂(x): member iff > 0 (threshold 0 ⇒ FPR ≈ α on non-members)."""
    return np.asarray(scores, np.float64) - np.asarray(quantiles, np.float64)
