"""Where a run is made: the CPU model and core count, the GPU (where the run used one), torch's version and the
machine's load when the run finished (the 1-minute load average), as a summary's ``machine`` block. A timing read
without it says nothing about the machine it came from."""
from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

import torch


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else :func:`platform.processor`), or ``unknown``."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def machine_info(device: str | torch.device | None = None) -> dict[str, Any]:
    """The ``machine`` block: ``cpu``, ``cores``, ``gpu`` (the device's name where ``device`` is a GPU, else None),
    ``torch`` and ``load`` (None where the platform has no load average)."""
    gpu = None
    dev = torch.device(device) if device is not None else None
    if dev is not None and dev.type == "cuda" and torch.cuda.is_available():
        gpu = torch.cuda.get_device_name(dev)
    try:
        load: float | None = float(os.getloadavg()[0])
    except (OSError, AttributeError):
        load = None
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "gpu": gpu, "torch": torch.__version__, "load": load}
