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
tight on records it has not seen: measured on a 100-member digits run, 15 % of the victim's
non-members exceeded a 95 % quantile), so it is fitted on 70 % of the pool and shifted by the
conformal offset of the other 30 % — the ⌈(n + 1)(1 − α)⌉-th smallest held-out residual s − q̂
(conformalised quantile regression, Romano, Patterson & Candès, NeurIPS 2019) — which makes the
false-positive rate on records exchangeable with the pool at most α (marginally, over the pool's draw). The features are the record's own (its pixels and label): model-independent, so
q̂(x) predicts how confident *a model that did not train on x* is on x. The attack declares x a
member iff s(x) > q̂(x): on non-members distributed like the pool, the false-positive rate is α
by construction (Bertran et al., Thm 3.1 in the population limit). Its score is s(x) − q̂(x), so
the ROC (AUC, TPR at 1 % and 0.1 % FPR) is read at every threshold, like LiRA's and RMIA's.

This module is the math on arrays (numpy in, numpy out; the regressor in torch); which records
form the pool and which features a task gives live in :mod:`core.experiment.model_attacks`.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Sequence

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


def pinball_backward(residual: torch.Tensor, tau: float, d_mean: torch.Tensor, d_half: torch.Tensor) -> torch.Tensor:
    """∂ :func:`pinball_loss` / ∂ residual as autograd computes it, given the mean's gradient ``d_mean`` (and
    ``d_half`` = d_mean / 2): ``torch.maximum``'s backward on its two branches (at a tie, residual 0, half to
    each), each times its scalar, summed (addition commutes: autograd's order of the two does not matter)."""
    left, right = tau * residual, (tau - 1.0) * residual
    tie = left == right
    d_left = torch.where(tie, d_half, d_mean).masked_fill_(left < right, 0)
    d_right = torch.where(tie, d_half, d_mean).masked_fill_(left > right, 0)
    return d_left * tau + d_right * (tau - 1.0)


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
        #: the latest :meth:`refit_many`'s fits by their inputs' content (:meth:`_refit_key`): what :meth:`refit`
        #: returns for the same features, scores and steps
        self._refits: dict[bytes, QuantileRegressor] = {}

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

    def fit(self, features: np.ndarray, scores: np.ndarray, by_hand: bool = False) -> "QuantileRegressor":
        """Fit on ``features`` and ``scores``; ``by_hand``: :meth:`_descend_by_hand` (the same weights, bit
        for bit, in about half the CPU time) instead of :meth:`_descend` (autograd and torch.optim.Adam)."""
        x, s = self._finite(features, scores)
        fit, cal = self._split(len(s))
        self._x_mean, self._x_std = x[fit].mean(0), x[fit].std(0).clamp_min(1e-3)
        self._s_mean, self._s_std = float(s[fit].mean()), float(max(s[fit].std(), 1e-6))
        torch.manual_seed(self.training.seed)
        descend = self._descend_by_hand if by_hand else self._descend
        self.model = descend(self._net(x.shape[1]), x[fit], s[fit], self.training.steps)
        self._calibrate(x[cal], s[cal])
        return self

    def refit(self, features: np.ndarray, scores: np.ndarray, steps: int) -> "QuantileRegressor":
        """A copy fitted to new scores of the same records' kind, starting from this fit's weights and
        standardisation (the same pinball objective, fewer steps: a defended victim's pool answers,
        draw after draw). A fit of the same features, scores and steps made by the latest
        :meth:`refit_many` is returned as it is (equal to this refit up to float rounding: tested)."""
        if self.model is None:
            raise RuntimeError("quantile regressor: fit() before refit()")
        remembered = self._refits.get(self._refit_key(features, scores, steps))
        if remembered is not None:
            return remembered
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

    @staticmethod
    def _refit_key(features: np.ndarray, scores: np.ndarray, steps: int) -> bytes:
        """The content of a refit's inputs (shapes, dtypes and bytes of features and scores, the steps)."""
        h = hashlib.sha256()
        for a in (np.ascontiguousarray(features), np.ascontiguousarray(scores)):
            h.update(f"{a.shape}/{a.dtype}/".encode())
            h.update(a.tobytes())
        h.update(f"steps={int(steps)}".encode())
        return h.digest()

    def refit_many(self, features: np.ndarray, scores: Sequence[np.ndarray], steps: int) -> list["QuantileRegressor"]:
        """:meth:`refit` of several score vectors of the same records (the draws of a defense) as one fit.

        Each vector's regressor starts from this fit's weights and runs its own full-batch Adam on its own
        pinball loss, exactly as :meth:`refit` does; they are only computed together: the first layers of
        all E regressors as one (features × in·E·hidden) product, the second layers as one batched
        product, the E losses summed (each regressor's gradient is its own loss's: they share no
        parameter) and Adam over the joined parameters (elementwise: each regressor's moments are its own).
        One E-wide product instead of E narrow ones sums in another order, so a regressor's predictions
        equal :meth:`refit`'s up to float rounding (``tests/test_quantile_refits.py`` bounds the difference).
        Vectors whose finite entries differ are fitted in groups of equal masks. The fits are remembered
        (the latest call's only): :meth:`refit` with the same features, scores and steps returns them."""
        if self.model is None:
            raise RuntimeError("quantile regressor: fit() before refit_many()")
        scores = [np.asarray(s) for s in scores]
        keys = [self._refit_key(features, s, steps) for s in scores]
        out: list[QuantileRegressor | None] = [None] * len(scores)
        groups: dict[bytes, list[int]] = {}
        for i, s in enumerate(scores):
            groups.setdefault(np.isfinite(np.asarray(s, np.float64)).tobytes(), []).append(i)
        for members in groups.values():
            fitted = self._fit_together(features, [scores[i] for i in members], steps)
            for i, reg in zip(members, fitted):
                out[i] = reg
        self._refits = dict(zip(keys, out))
        return out  # type: ignore[return-value]

    def _fit_together(self, features: np.ndarray, scores: list[np.ndarray], steps: int) -> list["QuantileRegressor"]:
        """:meth:`refit_many` for score vectors with the same finite entries: E regressors, one loop.

        Forward and backward by hand (no autograd graph per step; the gradients are those autograd gives
        :meth:`_descend`'s loss, ties of the pinball loss's two branches split evenly as ``torch.maximum``
        does) and Adam on one flat buffer of every regressor's parameters (``torch.optim.Adam``'s update with
        L2 weight decay, bias-corrected): a step is two (N × in) · (in × E·h) products and a few
        elementwise passes, whatever E."""
        fitted = [self._finite(features, s) for s in scores]
        x = fitted[0][0]
        fit, cal = self._split(len(x))
        e, h = len(scores), self.training.hidden
        first, second = self.model[0], self.model[2]
        d_in = first.weight.shape[1]
        z = ((x[fit] - self._x_mean) / self._x_std).contiguous()
        z_t = z.T.contiguous()
        n = len(z)
        y = torch.as_tensor(np.stack([(s[fit] - self._s_mean) / self._s_std for _, s in fitted], 1),
                            dtype=torch.float32)                                  # (N, E)
        # every regressor's parameters in one buffer; regressor j: columns j·h … (j + 1)·h − 1 of w1 and b1, row j
        # of w2, entry j of b2 — each starting from this fit's weights
        sizes = (d_in * e * h, e * h, e * h, e)
        theta = torch.cat([first.weight.detach().T.repeat(1, e).reshape(-1), first.bias.detach().repeat(e),
                           second.weight.detach().repeat(e, 1).reshape(-1), second.bias.detach().repeat(e)])
        grad = torch.zeros_like(theta)
        w1, b1, w2, b2 = theta.split(sizes)
        w1, w2 = w1.view(d_in, e * h), w2.view(e, h)
        g_w1, g_b1, g_w2, g_b2 = grad.split(sizes)
        g_w1, g_w2 = g_w1.view(d_in, e * h), g_w2.view(e, h)
        m, v = torch.zeros_like(theta), torch.zeros_like(theta)
        lr, wd = self.training.lr, self.training.weight_decay
        beta1, beta2, eps = 0.9, 0.999, 1e-8  # torch.optim.Adam's defaults, as _descend uses them
        tau = 1.0 - self.alpha
        # the second layers as one (E·h × E) block-diagonal matrix: regressor j's output is its own hidden units'
        # sum, and its hidden units' gradient its own output's (the zeros add exact zeros)
        block = torch.block_diag(*[torch.ones(h, 1)] * e).bool()                  # (E·h, E)
        with torch.no_grad():
            for t in range(1, steps + 1):
                pre = torch.addmm(b1, z, w1)                                      # (N, E·h)
                hidden = pre.clamp_min(0.0)
                w2_block = torch.zeros(e * h, e).masked_scatter_(block, w2.reshape(-1))
                residual = y - torch.addmm(b2, hidden, w2_block)                  # (N, E)
                # d mean ρ_τ(u) / d q̂ = −(τ if u > 0, τ − 1 if u < 0, τ − ½ at a tie) / N
                d_out = torch.where(residual > 0, -tau, torch.where(residual < 0, 1.0 - tau, 0.5 - tau)) / n
                g_b2.copy_(d_out.sum(0))
                g_w2.copy_(torch.mm(hidden.T, d_out).view(e, h, e).diagonal(dim1=0, dim2=2).T)
                d_pre = torch.ops.aten.threshold_backward(torch.mm(d_out, w2_block.T), hidden, 0.0)
                g_b1.copy_(d_pre.sum(0))
                torch.mm(z_t, d_pre, out=g_w1)
                # Adam (L2 weight decay added to the gradient, as torch.optim.Adam's weight_decay does)
                grad.add_(theta, alpha=wd)
                m.lerp_(grad, 1.0 - beta1)
                v.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
                denom = (v.sqrt() / math.sqrt(1.0 - beta2 ** t)).add_(eps)
                theta.addcdiv_(m, denom, value=-lr / (1.0 - beta1 ** t))
            out = []
            for j, (_, s) in enumerate(fitted):
                other = self._copy()
                net = self._net(x.shape[1])
                net[0].weight.copy_(w1[:, j * h:(j + 1) * h].T)
                net[0].bias.copy_(b1[j * h:(j + 1) * h])
                net[2].weight.copy_(w2[j:j + 1])
                net[2].bias.copy_(b2[j:j + 1])
                other.model = net.eval()
                other._calibrate(x[cal], s[cal])
                out.append(other)
        return out

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

    def _descend_by_hand(self, net: nn.Module, x: torch.Tensor, s: np.ndarray, steps: int) -> nn.Module:
        """:meth:`_descend` without autograd's graph and torch.optim's bookkeeping: the very operations they
        run, in their order, so the weights come out bit for bit the same (tests/test_quantile_by_hand.py; a
        torch whose autograd or Adam computes otherwise fails it). The image quick pool's 600 steps took 0.29–0.35
        CPU s through autograd and torch.optim, 0.19–0.20 s here (load 5–9; docs/performance.md).

        Forward: ``nn.Linear`` is ``addmm(b, x, W.t())``. Backward (autograd's formulas): the mean's gradient
        (taken from autograd itself, once), the pinball loss's (:func:`pinball_backward`), the difference's
        negation, then per layer ``Wgrad = g.t().mm(input)``, ``bgrad = g.sum(0)`` and ReLU's
        ``threshold_backward``. Adam: torch.optim.Adam's single-tensor update with L2 weight decay, run on
        the four parameters by the multi-tensor (``_foreach``) functions, which on a CPU apply the same
        per-tensor operation to each."""
        z = (x - self._x_mean) / self._x_std
        y = torch.as_tensor((s - self._s_mean) / self._s_std, dtype=torch.float32)
        tau = 1.0 - self.alpha
        first, second = net[0], net[2]
        params = [first.weight, first.bias, second.weight, second.bias]
        probe = torch.zeros(len(z), requires_grad=True)
        probe.mean().backward()
        d_mean = probe.grad  # ∂ mean(u) / ∂u, exactly as autograd gives it
        d_half = d_mean / 2
        lr, wd = self.training.lr, self.training.weight_decay
        beta1, beta2, eps = 0.9, 0.999, 1e-8  # torch.optim.Adam's defaults, as _descend uses them
        exp_avgs = [torch.zeros_like(p) for p in params]
        exp_avg_sqs = [torch.zeros_like(p) for p in params]
        net.train()
        with torch.no_grad():
            for step in range(1, steps + 1):
                hidden = torch.relu(torch.addmm(first.bias, z, first.weight.t()))
                residual = y - torch.addmm(second.bias, hidden, second.weight.t())[:, 0]
                d_out = (-pinball_backward(residual, tau, d_mean, d_half))[:, None]  # (N, 1)
                d_pre = torch.ops.aten.threshold_backward(d_out.mm(second.weight), hidden, 0)
                grads = [d_pre.t().mm(z), d_pre.sum(0, keepdim=True).view(-1),
                         d_out.t().mm(hidden), d_out.sum(0, keepdim=True).view(-1)]
                grads = torch._foreach_add(grads, params, alpha=wd)
                torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)
                torch._foreach_mul_(exp_avg_sqs, beta2)
                torch._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
                # Adam reads its step count from a float tensor: the same float here
                bias_correction1, bias_correction2 = 1 - beta1 ** float(step), 1 - beta2 ** float(step)
                denom = torch._foreach_sqrt(exp_avg_sqs)
                torch._foreach_div_(denom, bias_correction2 ** 0.5)
                torch._foreach_add_(denom, eps)
                torch._foreach_addcdiv_(params, exp_avgs, denom, -(lr / bias_correction1))
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
