"""A table from a CSV file or scikit-learn, read without trusting it and encoded as features.

A file (:func:`read_csv_bytes`) must lie under the data root
(:func:`core.foundations.paths.resolve_data_dir`, links leading out refused), must not itself be a
symbolic link, must be a regular file, and is refused with one line past the caps of
:class:`CsvLimits` (bytes, rows, columns, cells, encoded features, classes), on a NUL byte or on
text that is not UTF-8 (:func:`parse_csv`). Nothing is evaluated: cells are strings parsed as floats
or kept as categories. The built-in table (:func:`builtin_table`) takes the very path a file takes,
and both go through one encoder (:func:`encode_table`; the encoding is described in
:mod:`core.tasks.tabular`, the task that reads through this module).

Imports only ``core.foundations``."""
from __future__ import annotations

import csv
import io
import math
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from core.foundations.errors import ConfigError, DatasetNotFoundError
from core.foundations.fileio import read_named_file
from core.foundations.paths import data_root, resolve_data_dir

#: cells read as a missing value (compared stripped and lower-cased)
MISSING_TOKENS = frozenset({"", "na", "n/a", "nan", "null", "none", "?"})
#: built-in tables (scikit-learn) and the name of their label column
BUILTIN_LABELS = {"breast_cancer": "diagnosis"}


@dataclass(frozen=True)
class CsvLimits:
    """Hard caps on a CSV file, each refused with one line before anything is trained.

    They keep one table within what a run on a laptop holds (every cell is a Python string while
    the file is parsed) and what the models read (an LSTM over 512 feature tokens).

    Attributes:
        max_bytes: file size (32 MiB).
        max_rows: data rows, the header excluded (200,000).
        max_columns: columns, the label included (256).
        max_cells: rows × columns (4,000,000).
        max_features: features after encoding (one-hot and missing indicators included) (512).
        max_classes: distinct label values (64: a label with more looks like a regression target,
            and the answers keep full probability vectors up to 64 classes).
    """

    max_bytes: int = 32 * 2**20
    max_rows: int = 200_000
    max_columns: int = 256
    max_cells: int = 4_000_000
    max_features: int = 512
    max_classes: int = 64


LIMITS = CsvLimits()


@dataclass(frozen=True)
class TableColumn:
    """How one source column became features: ``kind`` numeric or text, the indices of its features,
    and (text) the category of each of them."""

    name: str
    kind: str
    features: tuple[int, ...]
    categories: tuple[str, ...] = ()


@dataclass
class TabularRecords:
    """The encoded table.

    Attributes:
        x: (N, F) float32 features; NaN where a numeric value is missing (the models standardise
            and impute, from their own training records).
        labels: (N,) class indices.
        class_names: the label's values, in class-index order.
        feature_names: F names ("age", "age (missing)", "colour=red", "colour=(other)").
        standardised: (F,) bool, the numeric features the models standardise.
        columns: the source columns, for showing a row as it was (:meth:`core.tasks.tabular.TabularTask.describe_record`).
    """

    x: torch.Tensor
    labels: torch.Tensor
    class_names: tuple[str, ...]
    feature_names: tuple[str, ...]
    standardised: torch.Tensor
    columns: tuple[TableColumn, ...]

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    @property
    def n_features(self) -> int:
        return int(self.x.shape[1])


@dataclass
class EncodedTable:
    """:func:`encode_table`'s result: the records, the missing values per column, dropped columns."""

    records: TabularRecords
    missing: dict[str, int]
    dropped: tuple[str, ...]


# ---------------------------------------------------------------------------- reading a file
def read_csv_bytes(path_text: str, limits: CsvLimits = LIMITS, root: str | os.PathLike | None = None) -> bytes:
    """The bytes of the CSV file ``path_text`` (absolute, ``~/…`` or relative to the data root).

    Raises:
        ConfigError: empty, outside the data root, or a link leading out of it
            (:func:`core.foundations.paths.resolve_data_dir`).
        DatasetNotFoundError: missing, a symbolic link, not a regular file, unreadable, larger
            than ``limits.max_bytes``.
    """
    base = Path(root).expanduser().resolve() if root is not None else data_root()
    resolved = resolve_data_dir(path_text, base)  # confinement: "..", and links pointing out, refused
    given = Path(path_text.strip()).expanduser()
    given = given if given.is_absolute() else base / given
    shown = f"CSV file {path_text!r}"
    if given.is_symlink():  # links are not followed, even inside the root
        raise DatasetNotFoundError(f"{shown} is a symbolic link; give the file itself (links are not followed)")
    return read_named_file(resolved, limits.max_bytes, DatasetNotFoundError, shown)


def parse_csv(data: bytes, source: str, limits: CsvLimits = LIMITS) -> tuple[list[str], list[list[str]]]:
    """The header and the columns (one list of cell strings per column) of CSV ``data``.

    Comma-separated, ``"``-quoted, UTF-8 (a byte-order mark is skipped); blank lines skipped.

    Raises:
        DatasetNotFoundError: binary content (a NUL byte, not UTF-8), no header, empty or duplicate
            column names, a row of another length than the header, a malformed quote, more
            columns, rows or cells than ``limits`` allows.
    """
    nul = data.find(b"\x00")
    if nul >= 0:
        raise DatasetNotFoundError(f"{source} holds binary content (a NUL byte at offset {nul:,}), not a CSV text file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetNotFoundError(f"{source} is not UTF-8 text (byte {exc.start:,}): binary content, or save it "
                                   "as UTF-8") from None
    first = text.split("\n", 1)[0]
    if first.count(",") + 1 > limits.max_columns:  # counted before the csv module splits a huge header
        raise DatasetNotFoundError(f"{source} has about {first.count(',') + 1:,} columns; at most "
                                   f"{limits.max_columns} (the label included)")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if not header:
            raise DatasetNotFoundError(f"{source} is empty: a CSV needs a header row naming its columns")
        header = [h.strip() for h in header]
        if len(header) > limits.max_columns:
            raise DatasetNotFoundError(f"{source} has {len(header):,} columns; at most {limits.max_columns} "
                                       "(the label included)")
        if len(header) < 2:
            raise DatasetNotFoundError(f"{source} has one column ({header[0]!r}): a table needs a label column and "
                                       "at least one feature, separated by commas")
        if any(not h for h in header):
            raise DatasetNotFoundError(f"{source}: column {header.index('') + 1} of the header has no name")
        twice = [h for h, n in Counter(header).items() if n > 1]
        if twice:
            raise DatasetNotFoundError(f"{source}: column name {twice[0]!r} appears twice in the header")
        columns: list[list[str]] = [[] for _ in header]
        rows = 0
        for row in reader:
            if not row:  # a blank line
                continue
            if len(row) != len(header):
                raise DatasetNotFoundError(f"{source}, line {reader.line_num}: {len(row)} cells, the header has "
                                           f"{len(header)}")
            rows += 1
            if rows > limits.max_rows:
                raise DatasetNotFoundError(f"{source} has more than {limits.max_rows:,} rows; at most "
                                           f"{limits.max_rows:,} (take a sample)")
            if rows * len(header) > limits.max_cells:
                raise DatasetNotFoundError(f"{source} has more than {limits.max_cells:,} cells (rows × columns); "
                                           "take a sample or fewer columns")
            for column, cell in zip(columns, row):
                column.append(cell)
    except csv.Error as exc:  # an unclosed quote, a field over the csv module's size limit
        raise DatasetNotFoundError(f"{source}, line {reader.line_num}: malformed CSV ({exc})") from None
    if rows == 0:
        raise DatasetNotFoundError(f"{source} has a header but no rows")
    return header, columns


# ---------------------------------------------------------------------------- encoding
def _is_missing(cell: str) -> bool:
    return cell.strip().lower() in MISSING_TOKENS


def _as_numbers(cells: list[str]) -> np.ndarray | None:
    """The column as float64 with NaN for missing (and non-finite) values, or None when a non-missing
    cell is not a number (a text column)."""
    out = np.empty(len(cells), np.float64)
    for i, cell in enumerate(cells):
        if _is_missing(cell):
            out[i] = np.nan
            continue
        try:
            value = float(cell)
        except ValueError:
            return None
        out[i] = value if math.isfinite(value) else np.nan
    return out


def _label_classes(name: str, cells: list[str], source: str, limits: CsvLimits) -> tuple[np.ndarray, tuple[str, ...]]:
    """Class index per row and the class names (numbers in numeric order, text in alphabetical order)."""
    missing = [i for i, c in enumerate(cells) if _is_missing(c)]
    numbers = _as_numbers(cells)
    if missing:
        kind = "numeric" if numbers is not None else "a text column"
        raise ConfigError(f"label column {name!r} of {source} is {kind} with {len(missing):,} missing values "
                          f"(first in data row {missing[0] + 1}): fill them or drop those rows")
    if numbers is not None:
        values, index = np.unique(numbers, return_inverse=True)
        names = tuple(f"{v:g}" for v in values)
    else:
        stripped = [c.strip() for c in cells]
        names = tuple(sorted(set(stripped)))
        position = {n: k for k, n in enumerate(names)}
        index = np.array([position[c] for c in stripped], np.int64)
    if len(names) < 2:
        raise ConfigError(f"label column {name!r} of {source} has one value ({names[0]!r}) in every row: "
                          "a classifier needs two classes or more")
    if len(names) > limits.max_classes:
        raise ConfigError(f"label column {name!r} of {source} has {len(names):,} distinct values, more than "
                          f"{limits.max_classes} classes: it looks like a number to predict (regression), not a class")
    return index.astype(np.int64), names


def encode_table(header: list[str], columns: list[list[str]], label: str, source: str,
                 max_categories: int = 16) -> EncodedTable:
    """The records of a parsed table (see the module docstring for the encoding).

    Raises:
        ConfigError: no label given or no such column, a label with missing values, one value
            or more than ``LIMITS.max_classes``, no feature column left, more encoded features
            than ``LIMITS.max_features``.
    """
    shown_columns = ", ".join(header[:20]) + (f", … ({len(header)} in all)" if len(header) > 20 else "")
    if not label:
        raise ConfigError(f"name the label column of {source}: --set label=COLUMN (columns: {shown_columns})")
    if label not in header:
        raise ConfigError(f"{source} has no column {label!r} to use as the label; columns: {shown_columns}")
    labels, class_names = _label_classes(label, columns[header.index(label)], source, LIMITS)
    n_rows = len(labels)
    blocks: list[np.ndarray] = []
    names: list[str] = []
    standardised: list[bool] = []
    described: list[TableColumn] = []
    missing: dict[str, int] = {}
    dropped: list[str] = []
    for name, cells in zip(header, columns):
        if name == label:
            continue
        numbers = _as_numbers(cells)
        absent = np.isnan(numbers) if numbers is not None else np.array([_is_missing(c) for c in cells])
        if absent.any():
            missing[name] = int(absent.sum())
        if absent.all():  # nothing to learn from
            dropped.append(name)
            continue
        start = len(names)
        if numbers is not None:
            blocks.append(numbers[:, None])
            names.append(name)
            standardised.append(True)
            if absent.any():
                blocks.append(absent[:, None].astype(np.float64))
                names.append(f"{name} (missing)")
                standardised.append(False)
            described.append(TableColumn(name, "numeric", tuple(range(start, len(names)))))
            continue
        values = [c.strip() for c in cells]
        counts = Counter(v for v, gone in zip(values, absent) if not gone)
        # the most frequent values seen at least twice (a value of one row would be a fingerprint of it)
        kept = [v for v, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n >= 2][: max_categories - 1]
        categories = kept + ["(other)"] + (["(missing)"] if absent.any() else [])
        position = {v: k for k, v in enumerate(kept)}
        other = len(kept)
        code = np.array([other + 1 if gone else position.get(v, other) for v, gone in zip(values, absent)], np.int64)
        onehot = np.zeros((n_rows, len(categories)))
        onehot[np.arange(n_rows), code] = 1.0
        blocks.append(onehot)
        names += [f"{name}={c}" for c in categories]
        standardised += [False] * len(categories)
        described.append(TableColumn(name, "text", tuple(range(start, len(names))), tuple(categories)))
    if not names:
        raise ConfigError(f"{source} has no feature column with values besides the label {label!r}")
    if len(names) > LIMITS.max_features:
        raise ConfigError(f"{source} encodes to {len(names):,} features (one-hot and missing indicators "
                          f"included), more than {LIMITS.max_features}: lower max_categories or drop columns")
    x = torch.from_numpy(np.concatenate(blocks, axis=1).astype(np.float32))
    records = TabularRecords(x, torch.from_numpy(labels), class_names, tuple(names),
                             torch.tensor(standardised, dtype=torch.bool), tuple(described))
    return EncodedTable(records, missing, tuple(dropped))


def builtin_table(name: str) -> tuple[list[str], list[list[str]]]:
    """A table bundled with scikit-learn as header and cell strings (the CSV reader's output), so the
    built-in data takes the very path a user's file takes."""
    if name != "breast_cancer":
        raise ConfigError(f"unknown tabular dataset {name!r}; choose breast_cancer or csv")
    from sklearn.datasets import load_breast_cancer

    d = load_breast_cancer()
    header = [str(f) for f in d.feature_names] + [BUILTIN_LABELS[name]]
    columns = [[repr(float(v)) for v in d.data[:, j]] for j in range(d.data.shape[1])]
    columns.append([str(d.target_names[t]) for t in d.target])
    return header, columns
