"""The preprocessing a user's model was trained with, declared as data and applied exactly.

A ``--preprocess FILE`` (TOML or JSON) holds one section for the records' kind; nothing in it is code:

.. code-block:: toml

    num_classes = 10              # optional: else the data's number of classes
    [image]                       # a folder of class folders: DIR/<class>/<image>.png|jpg
    channels = 3                  # 1 = grey (Pillow "L"), 3 = RGB
    resize = 36                   # the shorter side to this many pixels (bilinear, antialiased), or [height, width]
    crop = 32                     # then the centre crop, or [height, width]
    scale = 255.0                 # pixel values 0…255 divided by this (torchvision's ToTensor: 255)
    mean = [0.4914, 0.4822, 0.4465]
    std = [0.2470, 0.2435, 0.2616]

    [table]                       # a CSV with a header row
    columns = ["age", "bmi"]      # the model's input columns, in its order (default: every column but label / id)
    label = "outcome"             # the class column: integers 0…m−1, or names (sorted → 0…m−1)
    id = "patient"                # optional: the record ids the member list names (default: the row number, 0-based)
    dtype = "float32"             # float32 | float64 | int64

    [text]                        # a CSV with a text column, for a Hugging Face text classifier
    column = "text"
    label = "label"
    id = "id"
    max_length = 128

An image is decoded, converted to ``channels``, resized, cropped, divided by ``scale``, then ``(x − mean) / std``
per channel, and laid out channels first (N, C, H, W), float32 — torchvision's ``Resize``, ``CenterCrop``,
``ToTensor``, ``Normalize`` in that order. A Hugging Face folder's own image processor or tokenizer replaces this
where the folder has one (:mod:`core.models.kinds.hf_kind`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, cast

import numpy as np
from PIL import Image

from core.foundations.errors import ConfigError
from core.foundations.fileio import read_document

#: the largest preprocessing file read (bytes)
MAX_PREPROCESS_BYTES = 64 * 2**10
#: the largest side an image is resized or cropped to
MAX_SIDE = 4096
DTYPES = ("float32", "float64", "int64")


@dataclass(frozen=True)
class ImageTransform:
    channels: int = 3
    resize: tuple[int, int] | int | None = None
    crop: tuple[int, int] | None = None
    scale: float = 255.0
    mean: tuple[float, ...] = ()
    std: tuple[float, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"channels": self.channels, "resize": list(self.resize) if isinstance(self.resize, tuple) else self.resize,
                "crop": list(self.crop) if self.crop else None, "scale": self.scale, "mean": list(self.mean),
                "std": list(self.std)}


@dataclass(frozen=True)
class TableSpec:
    columns: tuple[str, ...] = ()
    label: str = "label"
    id: str | None = None
    dtype: str = "float32"

    def to_dict(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "label": self.label, "id": self.id, "dtype": self.dtype}


@dataclass(frozen=True)
class TextSpec:
    column: str = "text"
    label: str = "label"
    id: str | None = None
    max_length: int = 128

    def to_dict(self) -> dict[str, Any]:
        return {"column": self.column, "label": self.label, "id": self.id, "max_length": self.max_length}


@dataclass(frozen=True)
class Preprocess:
    """The declared preprocessing (module docstring); ``source`` names where it came from."""

    image: ImageTransform | None = None
    table: TableSpec | None = None
    text: TextSpec | None = None
    num_classes: int | None = None
    source: str = "default"

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "num_classes": self.num_classes,
                "image": self.image.to_dict() if self.image else None,
                "table": self.table.to_dict() if self.table else None,
                "text": self.text.to_dict() if self.text else None}

    @property
    def image_or_default(self) -> ImageTransform:
        return self.image or ImageTransform()


@dataclass
class RawRecords:
    """Records as read, before any preprocessing: ``images`` (uint8 arrays, H×W×3 or H×W), ``columns``
    (CSV column → cells) or ``texts``; ``labels`` (N,) int64; ``ids`` the record ids; ``classes`` the class names."""

    modality: str
    labels: np.ndarray
    ids: tuple[str, ...]
    classes: tuple[str, ...]
    images: list[np.ndarray] | None = None
    columns: dict[str, list[str]] | None = None
    texts: list[str] | None = None
    source: str = ""
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return int(len(self.labels))

    def subset(self, index: np.ndarray) -> "RawRecords":
        idx = [int(i) for i in index]
        return RawRecords(self.modality, self.labels[np.asarray(idx, np.int64)], tuple(self.ids[i] for i in idx),
                          self.classes, None if self.images is None else [self.images[i] for i in idx],
                          None if self.columns is None else {k: [v[i] for i in idx] for k, v in self.columns.items()},
                          None if self.texts is None else [self.texts[i] for i in idx], self.source, list(self.notes))


# ---------------------------------------------------------------------------- reading the file
def _side(value: Any, key: str, pair: bool) -> Any:
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConfigError(f"preprocess: {key} must be a number of pixels, got {value!r}")
    if isinstance(value, int):
        if not 1 <= value <= MAX_SIDE:
            raise ConfigError(f"preprocess: {key} must lie in 1..{MAX_SIDE}, got {value}")
        return (value, value) if pair else value
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) and not isinstance(v, bool)
                                                             and 1 <= v <= MAX_SIDE for v in value):
        return (value[0], value[1])
    raise ConfigError(f"preprocess: {key} must be a number of pixels or [height, width], got {value!r}")


def _floats(value: Any, key: str, n: int) -> tuple[float, ...]:
    if value is None:
        return ()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [value] * n
    if not (isinstance(value, list) and len(value) == n and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                                 and math.isfinite(v) for v in value)):
        raise ConfigError(f"preprocess: {key} must be {n} finite numbers (one per channel), got {value!r}")
    return tuple(float(v) for v in value)


def _only(section: Mapping[str, Any], name: str, keys: set[str]) -> None:
    extra = sorted(set(section) - keys)
    if extra:
        raise ConfigError(f"preprocess: [{name}] has no key {extra[0]!r} (keys: {', '.join(sorted(keys))})")


def _text_of(section: Mapping[str, Any], key: str, default: str | None) -> str | None:
    value = section.get(key, default)
    if value is not None and not (isinstance(value, str) and value.strip()):
        raise ConfigError(f"preprocess: {key} must be a column name, got {value!r}")
    return value


def parse_preprocess(data: Mapping[str, Any], source: str = "given") -> Preprocess:
    """A :class:`Preprocess` from its parsed TOML/JSON (module docstring); one line on a bad key or value."""
    if not isinstance(data, Mapping):
        raise ConfigError("preprocess: the file must hold a table (TOML) or an object (JSON)")
    _only(data, "top level", {"num_classes", "image", "table", "text"})
    n = data.get("num_classes")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 100_000):
        raise ConfigError(f"preprocess: num_classes must be an integer in 2..100000, got {n!r}")
    image = table = text = None
    if "image" in data:
        s = data["image"]
        _only(s, "image", {"channels", "resize", "crop", "scale", "mean", "std"})
        channels = s.get("channels", 3)
        if channels not in (1, 3) or isinstance(channels, bool):
            raise ConfigError(f"preprocess: channels must be 1 or 3, got {channels!r}")
        scale = s.get("scale", 255.0)
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not (math.isfinite(scale) and scale > 0):
            raise ConfigError(f"preprocess: scale must be a positive number (255 for torchvision's ToTensor), got {scale!r}")
        mean, std = _floats(s.get("mean"), "mean", channels), _floats(s.get("std"), "std", channels)
        if bool(mean) != bool(std):
            raise ConfigError("preprocess: mean and std come together (torchvision's Normalize)")
        if std and min(std) <= 0:
            raise ConfigError(f"preprocess: std must be positive, got {list(std)}")
        image = ImageTransform(channels, _side(s.get("resize"), "resize", False), _side(s.get("crop"), "crop", True),
                               float(scale), mean, std)
    if "table" in data:
        s = data["table"]
        _only(s, "table", {"columns", "label", "id", "dtype"})
        cols = s.get("columns", [])
        if not isinstance(cols, list) or not all(isinstance(c, str) and c for c in cols) or len(set(cols)) != len(cols):
            raise ConfigError("preprocess: [table] columns must be a list of distinct column names")
        dtype = s.get("dtype", "float32")
        if dtype not in DTYPES:
            raise ConfigError(f"preprocess: dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        table = TableSpec(tuple(cols), cast(str, _text_of(s, "label", "label")), _text_of(s, "id", None), dtype)
    if "text" in data:
        s = data["text"]
        _only(s, "text", {"column", "label", "id", "max_length"})
        ml = s.get("max_length", 128)
        if isinstance(ml, bool) or not isinstance(ml, int) or not 1 <= ml <= 8192:
            raise ConfigError(f"preprocess: max_length must be an integer in 1..8192, got {ml!r}")
        text = TextSpec(cast(str, _text_of(s, "column", "text")), cast(str, _text_of(s, "label", "label")),
                        _text_of(s, "id", None), ml)
    return Preprocess(image, table, text, n, source)


def read_preprocess(payload: bytes, name: str) -> Preprocess:
    """Parse a preprocessing file's bytes: JSON when ``name`` ends in ``.json``, else TOML."""
    data = read_document(payload, name, "preprocess", MAX_PREPROCESS_BYTES)
    return parse_preprocess(data, name.rsplit("/", 1)[-1])


# ---------------------------------------------------------------------------- applying it
def _resize(img: Image.Image, resize: tuple[int, int] | int) -> Image.Image:
    if isinstance(resize, tuple):
        h, w = resize
    else:  # the shorter side to ``resize``, the aspect kept (torchvision's Resize(int))
        width, height = img.size
        if width <= height:
            w, h = resize, int(resize * height / width)
        else:
            h, w = resize, int(resize * width / height)
    return img.resize((w, h), Image.Resampling.BILINEAR.value)  # the int Image.BILINEAR is


def _crop(img: Image.Image, crop: tuple[int, int]) -> Image.Image:
    ch, cw = crop
    width, height = img.size
    if ch > height or cw > width:
        raise ConfigError(f"preprocess: crop {ch}×{cw} is larger than an image of {height}×{width} after resizing")
    top, left = int(round((height - ch) / 2.0)), int(round((width - cw) / 2.0))
    return img.crop((left, top, left + cw, top + ch))


def transform_image(pixels: np.ndarray, t: ImageTransform) -> np.ndarray:
    """One image (uint8, H×W or H×W×3) → (C, H', W') float32 by ``t`` (module docstring)."""
    img = Image.fromarray(pixels)
    img = img.convert("L" if t.channels == 1 else "RGB")
    if t.resize is not None:
        img = _resize(img, t.resize)
    if t.crop is not None:
        img = _crop(img, t.crop)
    x = np.asarray(img, np.float32) / np.float32(t.scale)
    x = x[None] if x.ndim == 2 else np.transpose(x, (2, 0, 1))
    if t.mean:
        x = (x - np.asarray(t.mean, np.float32)[:, None, None]) / np.asarray(t.std, np.float32)[:, None, None]
    return np.ascontiguousarray(x, np.float32)


def transform_images(records: RawRecords, t: ImageTransform) -> np.ndarray:
    """(N, C, H, W) float32; every image must come out the same size (declare resize and crop otherwise)."""
    if records.images is None:
        raise ConfigError("preprocess: these records are not images")
    out = [transform_image(p, t) for p in records.images]
    shapes = sorted({x.shape for x in out})
    if len(shapes) > 1:
        raise ConfigError(f"preprocess: the images come out in {len(shapes)} sizes ({shapes[0]} … {shapes[-1]}): "
                          f"declare resize and crop as the model was trained with")
    return np.stack(out) if out else np.zeros((0, t.channels, 1, 1), np.float32)


def table_features(records: RawRecords, spec: TableSpec) -> tuple[np.ndarray, tuple[str, ...]]:
    """(N, d) features of the declared columns (every non-label, non-id column when none is declared)."""
    if records.columns is None:
        raise ConfigError("preprocess: these records are not a table")
    cols = spec.columns or tuple(c for c in records.columns if c not in (spec.label, spec.id))
    missing = [c for c in cols if c not in records.columns]
    if missing:
        raise ConfigError(f"preprocess: column {missing[0]!r} is not in the table (columns: "
                          f"{', '.join(list(records.columns)[:12])})")
    out = np.empty((len(records), len(cols)), np.float64)
    for j, c in enumerate(cols):
        for i, cell in enumerate(records.columns[c]):
            try:
                out[i, j] = float(cell)
            except ValueError:
                raise ConfigError(f"preprocess: column {c!r} row {i} holds {cell[:30]!r}, not a number (the model's "
                                  f"inputs must be numbers; encode it as the model was trained)") from None
    if not np.isfinite(out).all():
        raise ConfigError("preprocess: the table's input columns hold missing or infinite values")
    return out.astype(spec.dtype), tuple(cols)


