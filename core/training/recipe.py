"""A user's training recipe, declared as data (``--recipe FILE``, TOML or JSON), and training by it.

References and shadows of a user's model must be trained the way the model was: the same architecture (an untrained
copy, :meth:`core.models.kinds.base.LoadedModel.fresh`) and this recipe:

.. code-block:: toml

    optimizer = "sgd"         # sgd | adam | adamw
    lr = 0.05
    momentum = 0.9            # sgd only
    weight_decay = 5e-4
    epochs = 30
    batch_size = 128
    references = 4            # reference models to train (each on a random half of the records)
    [augmentation]            # images only; applied per batch, as torchvision's transforms would
    hflip = true              # RandomHorizontalFlip(0.5)
    crop_padding = 4          # RandomCrop(size, padding=4): zero padding, a random window of the original size

Training is cross-entropy over the records' labels, mini-batches in a seeded order; a module whose output has
``.logits`` (Hugging Face) is read through it. Nothing in the file is code.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping

import numpy as np
import torch
from torch import nn

from core.foundations.errors import ConfigError
from core.foundations.fileio import read_document

OPTIMIZERS = ("sgd", "adam", "adamw")
MAX_RECIPE_BYTES = 64 * 2**10
#: the most reference models a recipe may ask for
MAX_REFERENCES = 64


@dataclass(frozen=True)
class Recipe:
    optimizer: str = "adam"
    lr: float = 1e-3
    momentum: float = 0.9
    weight_decay: float = 0.0
    epochs: int = 10
    batch_size: int = 64
    references: int = 4
    hflip: bool = False
    crop_padding: int = 0
    source: str = "default"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _number(d: Mapping[str, Any], key: str, default: float, low: float, high: float, integer: bool = False) -> Any:
    v = d.get(key, default)
    ok = not isinstance(v, bool) and (isinstance(v, int) if integer else isinstance(v, (int, float)))
    if not ok or not math.isfinite(v) or not low <= v <= high:
        kind = "an integer" if integer else "a number"
        raise ConfigError(f"recipe: {key} must be {kind} in {low:g}..{high:g}, got {v!r}")
    return int(v) if integer else float(v)


def parse_recipe(data: Mapping[str, Any], source: str = "given") -> Recipe:
    """A :class:`Recipe` from its parsed TOML/JSON; one line on a bad key or value."""
    if not isinstance(data, Mapping):
        raise ConfigError("recipe: the file must hold a table (TOML) or an object (JSON)")
    keys = {"optimizer", "lr", "momentum", "weight_decay", "epochs", "batch_size", "references", "augmentation"}
    extra = sorted(set(data) - keys)
    if extra:
        raise ConfigError(f"recipe: no key {extra[0]!r} (keys: {', '.join(sorted(keys))})")
    opt = data.get("optimizer", "adam")
    if opt not in OPTIMIZERS:
        raise ConfigError(f"recipe: optimizer must be one of {', '.join(OPTIMIZERS)}, got {opt!r}")
    aug = data.get("augmentation", {})
    if not isinstance(aug, Mapping) or set(aug) - {"hflip", "crop_padding"}:
        raise ConfigError("recipe: [augmentation] takes hflip (true/false) and crop_padding (pixels)")
    hflip = aug.get("hflip", False)
    if not isinstance(hflip, bool):
        raise ConfigError(f"recipe: hflip must be true or false, got {hflip!r}")
    return Recipe(opt, _number(data, "lr", 1e-3, 1e-8, 10.0), _number(data, "momentum", 0.9, 0.0, 0.999),
                  _number(data, "weight_decay", 0.0, 0.0, 1.0), _number(data, "epochs", 10, 1, 10_000, True),
                  _number(data, "batch_size", 64, 1, 65_536, True),
                  _number(data, "references", 4, 2, MAX_REFERENCES, True), hflip,
                  _number(aug, "crop_padding", 0, 0, 64, True), source)


def read_recipe(payload: bytes, name: str) -> Recipe:
    """Parse a recipe file's bytes: JSON when ``name`` ends in ``.json``, else TOML."""
    data = read_document(payload, name, "recipe", MAX_RECIPE_BYTES)
    return parse_recipe(data, name.rsplit("/", 1)[-1])


def _optimizer(recipe: Recipe, params) -> torch.optim.Optimizer:
    if recipe.optimizer == "sgd":
        return torch.optim.SGD(params, lr=recipe.lr, momentum=recipe.momentum, weight_decay=recipe.weight_decay)
    if recipe.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=recipe.lr, weight_decay=recipe.weight_decay)
    return torch.optim.Adam(params, lr=recipe.lr, weight_decay=recipe.weight_decay)


def _augment(x: torch.Tensor, recipe: Recipe, g: torch.Generator) -> torch.Tensor:
    if x.ndim != 4:
        return x
    if recipe.hflip:
        flip = torch.rand(len(x), generator=g) < 0.5
        x = torch.where(flip[:, None, None, None], x.flip(-1), x)
    p = recipe.crop_padding
    if p:
        h, w = x.shape[-2:]
        padded = nn.functional.pad(x, (p, p, p, p))
        dy = torch.randint(0, 2 * p + 1, (len(x),), generator=g)
        dx = torch.randint(0, 2 * p + 1, (len(x),), generator=g)
        x = torch.stack([padded[i, :, dy[i]:dy[i] + h, dx[i]:dx[i] + w] for i in range(len(x))])
    return x


def _rows(inputs: Any, index: torch.Tensor) -> Any:
    if isinstance(inputs, Mapping):
        return {k: v[index] for k, v in inputs.items()}
    return inputs[index]


def train_by_recipe(module: nn.Module, inputs: Any, labels: np.ndarray, recipe: Recipe, seed: int,
                    on_epoch: Callable[[int, int], None] | None = None) -> nn.Module:
    """Train ``module`` in place on (``inputs``, ``labels``) by ``recipe`` (module docstring), on the module's device
    (the data stays where it is: each batch moves); returns it. ``on_epoch(done, epochs)`` after each epoch: a
    progress report, and where a job's cancel takes effect (an exception raised there ends the training)."""
    device = next(iter(module.parameters()), torch.zeros(0)).device
    g = torch.Generator().manual_seed(int(seed))
    y = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    opt = _optimizer(recipe, [p for p in module.parameters() if p.requires_grad])
    module.train()
    for epoch in range(recipe.epochs):
        order = torch.randperm(len(y), generator=g)
        for i in range(0, len(y), recipe.batch_size):
            idx = order[i:i + recipe.batch_size]
            if len(idx) < 2 < len(y):  # a last batch of one record: BatchNorm cannot train on it
                continue
            x = _rows(inputs, idx)
            if not isinstance(x, Mapping):
                x = _augment(torch.as_tensor(x), recipe, g).to(device)
            else:
                x = {k: v.to(device) for k, v in x.items()}
            out = module(**x) if isinstance(x, Mapping) else module(x)
            loss = nn.functional.cross_entropy(getattr(out, "logits", out), y[idx].to(device))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        if on_epoch is not None:
            on_epoch(epoch + 1, recipe.epochs)
    module.eval()
    return module
