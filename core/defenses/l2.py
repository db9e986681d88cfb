"""The L2 penalty as a training-time defense: λ on the weight matrices (paper 000 Fig. 7).

Every λ retrains victim and shadows (:mod:`core.defenses.sweeps`); the undefended run is λ = 0. A
regulariser, so no formal privacy guarantee: only the measured attack says what it buys.
"""
from __future__ import annotations

import math
from typing import Any

from core.defenses.registry import Parameter, TrainingDefense, register_training


@register_training
class L2Defense(TrainingDefense):
    name = "l2"
    label = "L2 penalty λ"
    parameter = Parameter(name="lambda", symbol="λ", low=0.0, high=math.inf, low_open=False, log_scale=True,
                          grid=(1e-4, 1e-3, 1e-2, 1e-1), slider=(), slider_default=1e-3, curve=(),
                          hint="λ (the L2 coefficient)")

    def updates(self, value: float, target_epsilon: bool = False, max_grad_norm: float | None = None,
                delta: float | None = None) -> dict[str, Any]:
        return {"weight_decay": float(value)}

    def baseline_updates(self) -> dict[str, Any]:
        return {"weight_decay": 0.0}
