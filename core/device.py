"""Where tensors live: a GPU when one is present, the CPU otherwise."""
from __future__ import annotations

import os

import torch


def default_device() -> torch.device:
    """``cuda`` if available (and not disabled by ``MIA_DEVICE=cpu``), else ``cpu``."""
    forced = os.environ.get("MIA_DEVICE")
    if forced:
        return torch.device(forced)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
