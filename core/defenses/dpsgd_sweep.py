"""DP-SGD as a training-time defense (paper 000 eq. 7–8): a grid of noise multipliers σ, or of
target ε at δ (each σ then found by Opacus' ``get_noise_multiplier``).

The training itself is :mod:`core.training` + :mod:`core.training.dpsgd`; this module only says
which config fields a point sets and reads the run's accountant record into the point's
guarantee ((ε, δ) by RDP, PRV for comparison).
"""
from __future__ import annotations

import math
from typing import Any

from core.defenses.registry import Parameter, TrainingDefense, register_training
from core.experiment.results import RunSummary
from core.foundations.errors import ConfigError


@register_training
class DPSGDDefense(TrainingDefense):
    name = "dpsgd"
    label = "DP-SGD (Opacus)"
    accounted = True
    parameter = Parameter(name="sigma", symbol="σ", low=0.0, high=math.inf, low_open=False, log_scale=False,
                          grid=(0.5, 1.0, 2.0, 4.0), slider=(), slider_default=1.0, curve=(),
                          hint="noise multipliers σ")
    target = Parameter(name="epsilon", symbol="ε", low=0.0, high=math.inf, low_open=True, log_scale=True,
                       grid=(1.0, 3.0, 8.0, 30.0), slider=(), slider_default=8.0, curve=(), hint="target ε (σ found by Opacus)")

    def updates(self, value: float, target_epsilon: bool = False, max_grad_norm: float | None = None,
                delta: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"dp": "epsilon" if target_epsilon else "sigma",
                               "dp_epsilon" if target_epsilon else "dp_noise_multiplier": float(value)}
        if max_grad_norm is not None:
            out.update(dp_max_grad_norm=float(max_grad_norm))
        if delta is not None:
            out.update(dp_delta=float(delta))
        return out

    def baseline_updates(self) -> dict[str, Any]:
        return {"dp": "off"}

    def guarantee(self, run: RunSummary) -> dict[str, Any]:
        dp = run.privacy
        if dp is None:
            raise ConfigError(f"the run {run.config_hash} has no DP-SGD record (cached by an older version?)")
        out: dict[str, Any] = {"dpsgd": dp.to_dict(), "epsilon": dp.epsilon, "delta": dp.delta, "gamma": None}
        recipe = (f"σ = {dp.noise_multiplier:.4g}, C = {dp.max_grad_norm:g}, q = {dp.sample_rate:.4g}, "
                  f"{dp.steps} steps")
        if dp.epsilon is None:
            out.update(privacy_note=f"no finite ε ({recipe}): {next(iter((dp.notes or {}).values()), '')}")
        else:
            prv = dp.epsilon_by("prv")
            out.update(privacy_note=f"(ε, δ)-DP for {dp.unit} ({recipe}); ε by {(dp.accountant or '').upper()}"
                                    + (f", PRV gives {prv:.3g}" if prv is not None else ""))
        return out

    def spec_extra(self, config: Any) -> dict[str, Any]:
        return {"max_grad_norm": config.dp_max_grad_norm, "delta": config.dp_delta, "accountant": config.dp_accountant}
