"""``timm:NAME`` — a timm model (``resnet10t``, ``vit_tiny_patch16_224``, …) created untrained
(``pretrained=False``: nothing is downloaded) with ``num_classes`` outputs, filled from a safetensors state dict;
the declared input transform (timm's ``data_config`` is not consulted: what the model was trained with is the
user's to declare). Rebuilt untrained for references and shadows."""
from __future__ import annotations

from typing import cast

from core.foundations.errors import ConfigError
from core.models.kinds.base import LoadedModel, ModelKind, load_state_dict_into, register
from core.models.kinds.preprocess import Preprocess
from core.models.kinds.torchvision_kind import image_prepare
from core.models.kinds.vision_import import import_timm, vision_notes


def _load(name: str, weights: str | None, n_classes: int | None, preprocess: Preprocess | None) -> LoadedModel:
    timm = import_timm()
    if n_classes is None:
        raise ConfigError(f"timm:{name}: the number of classes is needed (num_classes in the preprocess file)")
    if not timm.is_model(name):
        close = timm.list_models(f"{name[:5]}*")[:6]
        raise ConfigError(f"timm has no model {name!r}" + (f" (close: {', '.join(close)})" if close else ""))
    channels = (preprocess or Preprocess()).image_or_default.channels

    def fresh():
        return timm.create_model(name, pretrained=False, num_classes=n_classes, in_chans=channels)

    module = fresh()
    load_state_dict_into(module, cast(str, weights), f"timm:{name} with {n_classes} classes")
    return LoadedModel(f"timm:{name}", "timm", n_classes, "image", image_prepare(preprocess), module, fresh,
                       preprocess=preprocess, notes=vision_notes())


KIND = register(ModelKind("timm", "a timm model by name + a safetensors state dict", _load, needs_weights=True,
                          extra="models"))
