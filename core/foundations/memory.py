"""Memory estimates computed from a config alone, before anything is built or allocated.

Closed forms, because building a model to count its parameters is itself the allocation we want
to refuse. Each task's :meth:`~core.tasks.base.Task.memory_estimate` adds its model's training run to the attack
classifiers' training (:func:`attack_training_bytes`) and the Responses every model keeps
(:func:`responses_bytes`); the pipeline compares the sum with the memory available and raises
:class:`~core.foundations.errors.ResourceLimitError` up front.

The estimates are deliberately rough (a factor of two either way): their job is to tell
"fits" from "would be killed by the OS", not to predict peak RSS.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only for type hints: keep this module import-light
    from core.foundations.config import ExperimentConfig

#: bytes of one float32
FLOAT_BYTES = 4
#: copies of every parameter while training with Adam: weights, gradients, two moments
ADAM_COPIES = 4
#: mini-batch size of the attack classifiers (``core.attacks.shadow_attacks.AttackTraining.batch_size``)
ATTACK_BATCH = 128


def training_state_bytes(n_params: int) -> int:
    """Weights, gradients and Adam's two moments of a model with ``n_params`` parameters."""
    return int(n_params) * FLOAT_BYTES * ADAM_COPIES


def cnn_param_count(in_channels: int, n_classes: int, width: int, stages: int, fc: int) -> int:
    """Closed form of ``count_params(ResidualCNN(in_channels, n_classes, width, stages, fc))``.

    Stem conv + GroupNorm; per stage a residual block (two 3×3 convs, two GroupNorms) and, but
    for the last stage, a stride-2 conv doubling the channels; then two linear layers.
    """
    total = in_channels * width * 9 + width + 2 * width
    c = width
    for s in range(stages):
        total += 2 * (c * c * 9 + c) + 2 * 2 * c
        if s < stages - 1:
            total += c * 2 * c * 9 + 2 * c
            c *= 2
    return total + c * fc + fc + fc * n_classes + n_classes


def mlp_agent_param_count(actor_hidden: int, critic_hidden: int) -> int:
    """Closed form of ``count_params(MLPAgent(...))`` on the 980 one-hot view inputs: two tanh layers each for
    actor (7 actions) and critic."""

    def two_layer(hidden: int, out: int) -> int:
        return 980 * hidden + hidden + hidden * hidden + hidden + hidden * out + out

    return two_layer(actor_hidden, 7) + two_layer(critic_hidden, 1)


def attack_training_bytes(cfg: "ExperimentConfig", n_features: int, max_steps: int = 1) -> int:
    """Peak bytes of training one attack classifier on every shadow's query set.

    The features of ``n_shadows × 2 n_eval`` records, padded to ``max_steps`` steps, exist
    three times (raw, standardised, a mask-multiplied copy); an MLP (``max_steps == 1``) or an
    LSTM of width ``attack_hidden`` with Adam state; activations of one mini-batch (an LSTM
    keeps gates and states of every step for backpropagation).
    """
    h = cfg.attack_hidden
    records = cfg.n_shadows * 2 * cfg.n_eval
    features = 3 * records * max_steps * n_features * FLOAT_BYTES
    if max_steps > 1:
        params = 4 * (n_features * h + h * h + 2 * h) + h * h + h + h + 1
        act = ATTACK_BATCH * max_steps * h * 8 * FLOAT_BYTES * 2
    else:
        params = n_features * h + h + h * h + h + h + 1
        act = ATTACK_BATCH * h * 4 * FLOAT_BYTES * 2
    return int(features + training_state_bytes(params) + act)


def responses_bytes(cfg: "ExperimentConfig", steps_per_record: int, floats_per_step: int) -> int:
    """Bytes of the Responses the pipeline keeps: the victim and every shadow, at every
    checkpoint epoch, answer ``2 n_eval`` records of ``steps_per_record`` steps."""
    models = 1 + cfg.n_shadows
    return int(models * len(cfg.checkpoint_epochs) * 2 * cfg.n_eval * steps_per_record * floats_per_step * FLOAT_BYTES)
