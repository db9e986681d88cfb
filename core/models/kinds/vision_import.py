"""Importing torchvision (and timm, which imports it) beside this torch, whatever build each came from.

torchvision ships compiled operators (``_C.so``: NMS, RoIAlign, deformable convolutions — detection only). A
torchvision wheel built for another torch (PyPI's CUDA torch beside a CPU torch, say) cannot load them; torchvision
is written to run without them (``torchvision.extension._has_ops``), but its ``_meta_registrations`` module then
fails at import ("operator torchvision::nms does not exist"), so ``import torchvision`` fails as a whole although
the classification models (ResNet, …) are plain Python on torch. When — and only when — loading ``_C.so`` fails,
that one module is replaced by an empty one before the import: it only attaches fake-tensor kernels to the compiled
operators, which do not exist here. The classification models then load and run as written; a detection operator
called would raise torchvision's own "Couldn't load custom C++ ops". The result says so (:func:`vision_notes`).
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path

import torch

from core.foundations.errors import ConfigError

_NOTES: list[str] = []
#: what to install, said where an optional model package is missing
EXTRA = ("install the optional model packages: pip install -r requirements.txt (or the project's 'models' extra: "
         "torchvision, timm, transformers, onnxruntime)")


def _compiled_ops_load(spec_origin: str) -> bool:
    lib = next(Path(spec_origin).parent.glob("_C*.so"), None)
    if lib is None:
        return False
    try:
        torch.ops.load_library(str(lib))
        return True
    except (OSError, RuntimeError):
        return False


def import_torchvision() -> types.ModuleType:
    """``torchvision``, imported once (module docstring). Raises :class:`ConfigError` when it is not installed or
    does not import even without its compiled operators."""
    if "torchvision" in sys.modules and getattr(sys.modules["torchvision"], "models", None) is not None:
        return sys.modules["torchvision"]
    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None:
        raise ConfigError(f"torchvision is not installed: {EXTRA}")
    if not _compiled_ops_load(spec.origin):
        sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
        note = (f"torchvision's compiled operators do not load beside torch {torch.__version__} (a build for another "
                f"torch); its classification models run without them (detection operators are unavailable)")
        if note not in _NOTES:
            _NOTES.append(note)
    try:
        return importlib.import_module("torchvision")
    except Exception as exc:  # an import failing inside a third-party package: its own error types
        version = getattr(importlib.util.find_spec("torchvision"), "name", "torchvision")
        raise ConfigError(f"{version} cannot be imported beside torch {torch.__version__} "
                          f"({' '.join(str(exc).split())[:120]}): install the torchvision build matching this torch") from None


def import_timm() -> types.ModuleType:
    """``timm`` (after :func:`import_torchvision`, which it imports)."""
    import_torchvision()
    if importlib.util.find_spec("timm") is None:
        raise ConfigError(f"timm is not installed: {EXTRA}")
    try:
        return importlib.import_module("timm")
    except Exception as exc:  # third-party import errors
        raise ConfigError(f"timm cannot be imported ({' '.join(str(exc).split())[:120]})") from None


def vision_notes() -> list[str]:
    """What :func:`import_torchvision` had to do, in words (empty when torchvision loaded as built)."""
    return list(_NOTES)
