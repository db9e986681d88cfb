"""A user's records as read, before any preprocessing, for auditing a model of their own (:mod:`core.audit`).

* ``DIR``: a folder of class folders (``DIR/<class>/<image>.png|jpg``; record id: the path relative to DIR;
  classes: the folders' names sorted, as torchvision's ``ImageFolder``, so every class the model knows must be
  there). Each image is decoded at its own size as uint8, grey kept grey, else RGB; the model's own declared
  transform is applied later (:mod:`core.models.kinds.preprocess`), never the explorer's resizing.
* ``FILE.csv``: a table with a header row (:func:`core.data.csv_table.parse_csv`), the columns kept as text; the
  label is the model's output index when it holds integers below ``num_classes``, else encoded to 0…m−1 in
  scikit-learn's ``classes_`` order; the record id is the declared ``id`` column, else the 0-based data row.

The caps of the readers underneath hold, plus :data:`MAX_RAW_BYTES` of decoded pixels.
"""
from __future__ import annotations

import numpy as np

from core.data.csv_table import LIMITS, _label_classes, parse_csv, read_csv_bytes
from core.data.image_folder import GREY_MODES, IMAGE_FORMATS, MAX_IMAGE_PIXELS, _opened, _read_bytes, list_image_folder
from core.foundations.errors import ConfigError, DatasetNotFoundError
from core.models.kinds.preprocess import Preprocess, RawRecords, TableSpec, TextSpec

#: the most bytes of decoded pixels held at once (uint8)
MAX_RAW_BYTES = 2 * 2**30


def _pixels(raw: bytes, shown: str) -> np.ndarray:
    try:
        with _opened(raw) as img:
            if img.format not in IMAGE_FORMATS:
                raise DatasetNotFoundError(f"image {shown} is {img.format or 'of an unknown format'}, not a PNG or JPEG")
            if img.size[0] * img.size[1] > MAX_IMAGE_PIXELS:
                raise DatasetNotFoundError(f"image {shown} declares more than {MAX_IMAGE_PIXELS:,} pixels")
            img.load()
            if img.mode.startswith("I") or img.mode == "F":
                raise DatasetNotFoundError(f"image {shown} has {img.mode} pixels; 8-bit grey or colour is read")
            return np.asarray(img.convert("L" if img.mode in GREY_MODES else "RGB"), np.uint8)
    except DatasetNotFoundError:
        raise
    except Exception as exc:  # a hostile file can raise anything from a decoder
        raise DatasetNotFoundError(f"image {shown} is unreadable or truncated "
                                   f"({' '.join(str(exc).split())[:160] or type(exc).__name__})") from None


def read_image_records(data_dir: str, root: str | None = None) -> RawRecords:
    """Every image of a class folder (module docstring)."""
    listing = list_image_folder(data_dir, root)
    images, total = [], 0
    for rel in listing.paths:
        px = _pixels(_read_bytes(listing.folder, rel), rel)
        total += px.nbytes
        if total > MAX_RAW_BYTES:
            raise DatasetNotFoundError(f"the images of {data_dir!r} take more than {MAX_RAW_BYTES // 2**30} GiB decoded")
        images.append(px)
    return RawRecords("image", listing.labels.astype(np.int64), tuple(listing.paths), tuple(listing.classes),
                      images=images, source=str(data_dir))


def _class_ids(cells: list[str]) -> np.ndarray | None:
    """The cells as non-negative integers, or None when one is not."""
    out = []
    for c in cells:
        try:
            v = float(c)
        except ValueError:
            return None
        if v < 0 or v != int(v):
            return None
        out.append(int(v))
    return np.asarray(out, np.int64)


def read_table_records(path: str, preprocess: Preprocess | None, root: str | None = None) -> RawRecords:
    """A CSV's rows (module docstring); ``[text]`` in the preprocessing makes it a text table."""
    text = preprocess.text if preprocess and preprocess.text else None
    spec: TableSpec | TextSpec = text or (preprocess.table if preprocess and preprocess.table else TableSpec())
    header, columns = parse_csv(read_csv_bytes(path, LIMITS, root), path, LIMITS)
    by_name = dict(zip(header, columns))
    if spec.label not in by_name:
        raise ConfigError(f"{path}: no label column {spec.label!r} (columns: {', '.join(header[:12])}); declare it "
                          f"as label in the preprocess file")
    labels, classes = _label_classes(spec.label, by_name[spec.label], path, LIMITS)
    declared = preprocess.num_classes if preprocess else None
    ints = _class_ids(by_name[spec.label])
    if ints is not None and declared is not None and int(ints.max()) < declared:
        # integer labels below the declared number of classes are the model's output indices as they are (a table
        # holding some of the classes keeps each record's own index)
        labels, classes = ints, tuple(str(i) for i in range(declared))
    n = len(labels)
    if spec.id is not None:
        if spec.id not in by_name:
            raise ConfigError(f"{path}: no id column {spec.id!r}")
        ids = tuple(c.strip() for c in by_name[spec.id])
        if len(set(ids)) != n:
            raise ConfigError(f"{path}: the id column {spec.id!r} names a record twice")
    else:
        ids = tuple(str(i) for i in range(n))
    if text is not None:
        if text.column not in by_name:
            raise ConfigError(f"{path}: no text column {text.column!r}")
        return RawRecords("text", labels, ids, classes, texts=list(by_name[text.column]), source=str(path))
    return RawRecords("table", labels, ids, classes, columns=by_name, source=str(path))


def read_records(data: str, preprocess: Preprocess | None = None, root: str | None = None) -> RawRecords:
    """An image folder or a CSV file, by what ``data`` names."""
    if str(data).lower().endswith(".csv"):
        return read_table_records(data, preprocess, root)
    return read_image_records(data, root)
