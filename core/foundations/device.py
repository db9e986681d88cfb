"""Where tensors live: a GPU when one is present, the CPU otherwise."""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

import torch

from core.foundations.errors import ConfigError

# float32 means float32 on a GPU too: cuDNN convolutions default to TF32 (a 10-bit mantissa) on
# Ampere and later GPUs, so a "float32" GPU run would differ from the same config on the CPU, and
# the ensemble from the sequential path, by far more than float32 rounding. Speed on a GPU is asked
# for explicitly with ``precision = "bf16"``.
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False


def default_device() -> torch.device:
    """``cuda`` if available (and not disabled by ``MIA_DEVICE=cpu``), else ``cpu``.

    Raises:
        ConfigError: ``MIA_DEVICE`` is not ``cpu``, ``cuda`` or ``cuda:N``, or names a GPU this
            machine does not have (one line, instead of a RuntimeError deep inside torch).
    """
    forced = os.environ.get("MIA_DEVICE", "").strip()
    if forced:
        try:
            device = torch.device(forced)
        except RuntimeError:
            raise ConfigError(f"MIA_DEVICE must be cpu, cuda or cuda:N, got {forced!r}") from None
        if device.type == "mps" and torch.backends.mps.is_available():
            return device
        if device.type not in ("cpu", "cuda"):
            raise ConfigError(f"MIA_DEVICE must be cpu, cuda or cuda:N, got {forced!r}")
        if device.type == "cuda" and (not torch.cuda.is_available() or (device.index or 0) >= torch.cuda.device_count()):
            raise ConfigError(f"MIA_DEVICE={forced} but this machine has no such GPU; use MIA_DEVICE=cpu")
        return device
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def usable_cores() -> int:
    """CPU cores this process may really use: its CPU affinity, further limited by a cgroup v2
    CPU quota (containers), at least 1.

    ``os.cpu_count()`` reports the host's cores, so torch's default thread pool oversubscribes a
    container limited to 2 of 64 cores; size thread pools with this instead.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        with open("/sys/fs/cgroup/cpu.max") as fh:
            quota, period = fh.read().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, int(int(quota) // int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cores)


def configure_threads() -> int:
    """Size torch's intra-op thread pool to :func:`usable_cores` (entry points call this once:
    the CLI, the app's worker processes), or to ``OMP_NUM_THREADS`` when that asks for fewer;
    returns the count.

    An explicit ``OMP_NUM_THREADS=1`` is how a user keeps several runs from oversubscribing a small
    machine; overriding it would double each run's threads and make them spin against each other.
    """
    n = usable_cores()
    try:
        asked = int(os.environ.get("OMP_NUM_THREADS", ""))
    except ValueError:
        asked = 0
    if asked > 0:
        n = min(n, asked)
    torch.set_num_threads(n)
    return n


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
