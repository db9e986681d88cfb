"""Models: pure ``nn.Module`` definitions (FFNN and RNN per task, the attack networks, joint ensembles), a model as
its owner has it (``kinds/``), and a user's weights file checked against a model (``state_dict``).

Training loops live elsewhere. Imports only ``core.foundations`` (its errors, file reading).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import nn


def count_params(model: nn.Module) -> int:
    """The number of trainable parameters: what the FFNN and the RNN of a task are matched on."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
