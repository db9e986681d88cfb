"""``torchvision:NAME`` — a torchvision classification model (``resnet18``, ``mobilenet_v3_small``, …) built
untrained by name with ``num_classes`` outputs, filled from a safetensors state dict; its input transform is the
declared one (:mod:`core.models.kinds.preprocess`). Rebuilt untrained for references and shadows."""
from __future__ import annotations

from typing import cast

import torch

from core.foundations.errors import ConfigError
from core.models.kinds.base import LoadedModel, ModelKind, load_state_dict_into, register
from core.models.kinds.preprocess import Preprocess, transform_images
from core.models.kinds.vision_import import import_torchvision, vision_notes


def image_prepare(preprocess: Preprocess | None):
    """The declared image transform as a ``RawRecords → (N, C, H, W) tensor`` callable."""
    t = (preprocess or Preprocess()).image_or_default
    return lambda records: torch.from_numpy(transform_images(records, t))


def _load(name: str, weights: str | None, n_classes: int | None, preprocess: Preprocess | None) -> LoadedModel:
    tv = import_torchvision()
    if n_classes is None:
        raise ConfigError(f"torchvision:{name}: the number of classes is needed (num_classes in the preprocess file)")
    available = set(tv.models.list_models(module=tv.models))
    if name not in available:
        close = sorted(m for m in available if m.startswith(name[:4]))[:6]
        raise ConfigError(f"torchvision has no classification model {name!r}" +
                          (f" (close: {', '.join(close)})" if close else ""))

    def fresh():
        return tv.models.get_model(name, weights=None, num_classes=n_classes)

    module = fresh()
    load_state_dict_into(module, cast(str, weights), f"torchvision:{name} with {n_classes} classes")
    return LoadedModel(f"torchvision:{name}", "torchvision", n_classes, "image", image_prepare(preprocess), module,
                       fresh, preprocess=preprocess, notes=vision_notes())


KIND = register(ModelKind("torchvision", "a torchvision classification model by name + a safetensors state dict",
                          _load, needs_weights=True, extra="models"))
