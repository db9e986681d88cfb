"""An ``nn.Module`` given in Python (the notebook door, :func:`core.audit.audit`): the one way a user's own code
enters, and only from the user's own Python — never from a spec string, a file or anything a browser sends.

``factory`` (a class or a function returning an untrained module) is what references and shadows are built from;
without it the model is audited without them (the result says so)."""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

from core.foundations.errors import ConfigError
from core.models.kinds.base import LoadedModel
from core.models.kinds.preprocess import Preprocess, RawRecords, table_features, transform_images


def from_module(model: nn.Module, n_classes: int, modality: str = "image", preprocess: Preprocess | None = None,
                factory: Callable[[], nn.Module] | None = None,
                prepare: Callable[[RawRecords], Any] | None = None) -> LoadedModel:
    """A :class:`LoadedModel` of a module object. ``prepare`` (records → the module's inputs) is the declared
    preprocessing by default: the image transform, or the table's declared columns as float32."""
    if not isinstance(model, nn.Module):
        raise ConfigError(f"model must be a torch.nn.Module (or a spec string), got {type(model).__name__}")
    if prepare is None:
        p = preprocess or Preprocess()
        if modality == "image":
            def prepare(records: RawRecords):
                return torch.from_numpy(transform_images(records, p.image_or_default))
        elif modality == "table":
            def prepare(records: RawRecords):
                spec = p.table
                if spec is None:
                    raise ConfigError("a table needs a [table] section in the preprocessing (its input columns)")
                return torch.from_numpy(table_features(records, spec)[0].astype("float32"))
        else:
            raise ConfigError(f"modality must be image or table for a module without prepare=, got {modality!r}")
    module = model.float()
    why = "" if factory is not None else ("no factory was given (factory=MyNet or a function returning an untrained "
                                          "module): references and shadows cannot be built")
    return LoadedModel(f"module:{type(model).__name__}", "module", int(n_classes), modality, prepare, module, factory,
                       why, preprocess=preprocess)
