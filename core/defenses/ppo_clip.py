"""PPO's clip ε as a training-time defense (navigation only): a small ε limits how far each
update moves the policy (paper 000 Fig. 7). The undefended run is the preset's ε
(rl-starter-files' 0.2); a regulariser, so no formal privacy guarantee.
"""
from __future__ import annotations

from typing import Any

from core.defenses.registry import Parameter, TrainingDefense, register_training


@register_training
class PPOClipDefense(TrainingDefense):
    name = "clip"
    label = "PPO clip ε"
    tasks = ("navigation",)
    parameter = Parameter(name="clip_eps", symbol="clip ε", low=0.0, high=1.0, low_open=True, log_scale=False,
                          grid=(0.02, 0.05, 0.1, 0.3), slider=(), slider_default=0.1, curve=(),
                          hint="PPO's clip ε", high_open=True)

    def updates(self, value: float, target_epsilon: bool = False, max_grad_norm: float | None = None,
                delta: float | None = None) -> dict[str, Any]:
        return {"clip_eps": float(value)}
