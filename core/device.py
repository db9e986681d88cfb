"""Where tensors live: a GPU when one is present, the CPU otherwise."""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

import torch


def default_device() -> torch.device:
    """``cuda`` if available (and not disabled by ``MIA_DEVICE=cpu``), else ``cpu``."""
    forced = os.environ.get("MIA_DEVICE")
    if forced:
        return torch.device(forced)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@contextmanager
def single_thread(threads: int = 1) -> Iterator[None]:
    """Run with ``threads`` intra-op torch threads, restoring the previous count afterwards.

    For small networks on small batches (PPO agents, attack classifiers) thread hand-offs cost
    more than they save, and on a shared machine extra threads only contend with other work.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, threads))
    try:
        yield
    finally:
        torch.set_num_threads(before)
