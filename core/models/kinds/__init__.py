"""Model kinds: a model as its owner has it — ``torchvision:NAME``, ``timm:NAME``, ``hf:DIR``, ``onnx:FILE``, or an
``nn.Module`` given in Python (:mod:`core.models.kinds.module_kind`).

One module per kind, each registering itself at definition (:func:`core.models.kinds.base.register`);
:mod:`core.models.kinds.preprocess` is the declared preprocessing, applied exactly. Imports only
:mod:`core.foundations` and the kinds' optional third-party packages (loaded on first use).
"""
from __future__ import annotations

from core.models.kinds import hf_kind, onnx_kind, timm_kind, torchvision_kind  # noqa: F401  (they register)
from core.models.kinds.base import LoadedModel, ModelKind, load_model, refuse_pickle, split_spec
from core.models.kinds.module_kind import from_module
from core.models.kinds.preprocess import Preprocess, read_preprocess

__all__ = ["LoadedModel", "ModelKind", "Preprocess", "from_module", "load_model",
           "read_preprocess", "refuse_pickle", "split_spec"]
