"""The built-in image sources as arrays: CIFAR-10's python-version batches, read without trusting
them (a file's size, the pickle's opcodes and declared sizes, the classes it may load, then the
types and shapes of what it holds), and scikit-learn's bundled 8×8 digits.

Imports only ``core.foundations``."""
from __future__ import annotations

import io
import pickle
import pickletools
from pathlib import Path
from typing import Any

import numpy as np

from core.foundations.errors import DatasetNotFoundError
from core.foundations.fileio import read_named_file

CIFAR10_BATCHES = [f"data_batch_{i}" for i in range(1, 6)]


#: CIFAR-10's python batches: 10,000 rows of 3 × 32 × 32 uint8 pixels each; a file may hold more
#: rows (a user's own batch), up to this size: 64 MiB, twice the official 31 MB batch
CIFAR10_ROW = 3 * 32 * 32
MAX_BATCH_BYTES = 64 * 2**20
#: pickle opcodes a CIFAR batch may use: containers, strings, bytes, ints, memo, and the global +
#: reduce/build that rebuild a numpy array (its classes limited by :class:`_RestrictedUnpickler`);
#: anything else (PERSID, EXT*, INST/OBJ, NEWOBJ, floats: pixels and labels are integers) is refused
_BATCH_OPCODES = frozenset({
    "PROTO", "FRAME", "STOP", "MARK", "POP", "POP_MARK", "DUP", "NONE", "NEWTRUE", "NEWFALSE",
    "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4",
    "STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8",
    "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8",
    "EMPTY_LIST", "APPEND", "APPENDS", "LIST", "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
    "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS",
    "GLOBAL", "STACK_GLOBAL", "REDUCE", "BUILD",
    "PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE", "GET", "BINGET", "LONG_BINGET",
})
#: at most this many memo reads: a batch reads back a handful (a dtype, a class); thousands are
#: how a few hundred bytes grow into billions of references ("billion laughs")
_MAX_MEMO_READS = 1000
#: deepest nesting of MARKs the scan lets through (a real batch nests 2 or 3 deep); containers
#: built without MARKs are never walked (:func:`_batch_arrays` checks types first)
_MAX_NESTING = 32


class _RestrictedUnpickler(pickle.Unpickler):
    """Unpickler for the CIFAR-10 batches: dicts, lists, strings, bytes and numpy arrays only."""

    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"), ("builtins", "list"), ("builtins", "dict"),
        ("_codecs", "encode"),  # protocol-2 pickles of numpy arrays written by Python 3
    }

    def find_class(self, module: str, name: str):
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a dataset file")
        return super().find_class(module, name)


def _scan_batch(raw: bytes) -> None:
    """Refuse a pickle before anything of it is built (``ValueError``): an opcode outside
    :data:`_BATCH_OPCODES`, a declared length beyond the file's end (pickletools reads the file's
    bytes, never allocates the declared size: a 14-byte file declaring 1 TiB fails here instead of
    in the unpickler's allocation), too many memo reads, or nesting deeper than :data:`_MAX_NESTING`."""
    memo_reads = depth = 0
    for opcode, _arg, _pos in pickletools.genops(io.BytesIO(raw)):
        name = opcode.name
        if name not in _BATCH_OPCODES:
            raise ValueError(f"pickle opcode {name} is not used by CIFAR-10 batches")
        if name in ("GET", "BINGET", "LONG_BINGET"):
            memo_reads += 1
            if memo_reads > _MAX_MEMO_READS:
                raise ValueError(f"more than {_MAX_MEMO_READS} memo references (a self-referencing pickle)")
        if name == "MARK":
            depth += 1
            if depth > _MAX_NESTING:
                raise ValueError(f"nested more than {_MAX_NESTING} levels deep")
        elif name in ("APPENDS", "SETITEMS", "LIST", "DICT", "TUPLE", "POP_MARK"):
            depth = max(0, depth - 1)


def _batch_arrays(batch: Any) -> tuple[np.ndarray, np.ndarray]:
    """The checked (data, labels) of one unpickled batch, refused (``ValueError``, one line) unless
    ``data`` is one uint8 array of n × 3072 pixels and ``labels`` n integers in 0..9, with n ≥ 1.
    Nothing is converted before its type and size are known: a nested list as ``data`` (however
    it was built) is refused, not walked, and float (NaN) or int64 pixels are refused, not cast."""
    if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
        raise ValueError("expected a dict with b'data' and b'labels'")
    data, labels = batch[b"data"], batch[b"labels"]
    if type(data) is not np.ndarray or data.dtype != np.uint8:
        kind = f"an array of {data.dtype}" if isinstance(data, np.ndarray) else f"a {type(data).__name__}"
        raise ValueError(f"data is {kind}; expected uint8 pixels (0..255) as one array")
    if data.ndim != 2 or data.shape[1] != CIFAR10_ROW:
        raise ValueError(f"data has shape {data.shape}, expected (N, {CIFAR10_ROW})")
    n = data.shape[0]
    if n == 0:
        raise ValueError("it holds no images")
    if isinstance(labels, np.ndarray):
        if labels.dtype.kind not in "iu" or labels.ndim != 1:
            raise ValueError(f"labels are an array of {labels.dtype} with {labels.ndim} dimensions; expected N integers")
        lab = labels.astype(np.int64)
    elif isinstance(labels, list):
        if len(labels) != n:  # checked before the walk: its length is bounded by the data's
            raise ValueError(f"{len(labels)} labels for {n} images")
        bad = next((v for v in labels if type(v) is not int), None)
        if bad is not None:
            raise ValueError(f"labels must be integers 0..9, expected an int, got a {type(bad).__name__}")
        if any(not 0 <= v <= 9 for v in labels):  # before int64 conversion: 2**70 must not overflow
            lo, hi = min(labels), max(labels)
            raise ValueError(f"labels {lo}..{hi}, expected classes 0..9")
        lab = np.asarray(labels, dtype=np.int64)
    else:
        raise ValueError(f"labels are a {type(labels).__name__}; expected a list of integers")
    if len(lab) != n:
        raise ValueError(f"{len(lab)} labels for {n} images")
    if not (0 <= lab.min() and lab.max() <= 9):  # a label ≥ 10 would index past the 10 outputs
        raise ValueError(f"labels {lab.min()}..{lab.max()}, expected classes 0..9")
    return data, lab


def read_cifar10_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """One CIFAR-10 python batch as (data (n, 3072) uint8, labels (n,) int64), checked in order:
    the file's size (:data:`MAX_BATCH_BYTES`, a regular file, not a link), the pickle's opcodes and
    declared sizes (:func:`_scan_batch`), the classes it may load (:class:`_RestrictedUnpickler`),
    then the types and shapes of what it holds (:func:`_batch_arrays`).

    Raises:
        DatasetNotFoundError: one line naming the file and what is wrong.
    """
    where = f"CIFAR-10 batch {path.name} in {str(path.parent)!r}"
    raw = read_named_file(path, MAX_BATCH_BYTES, DatasetNotFoundError, where)
    try:
        _scan_batch(raw)
        batch = _RestrictedUnpickler(io.BytesIO(raw), encoding="bytes").load()
        return _batch_arrays(batch)
    except (pickle.UnpicklingError, KeyError, EOFError, TypeError, ValueError, OverflowError, MemoryError,
            RecursionError, IndexError, AttributeError) as exc:
        raise DatasetNotFoundError(f"{where} is malformed: {' '.join(str(exc).split()) or type(exc).__name__}") from None


def cifar10_folder_problem(folder: str | Path) -> str | None:
    """Why ``folder`` is no CIFAR-10 python-version folder (missing, or lacking a batch file), else None;
    the files' contents are checked when they are read."""
    folder = Path(folder)
    if not folder.is_dir():
        return (f"CIFAR-10 folder {str(folder)!r} not found: download the 'CIFAR-10 python version' and point data_dir "
                f"at the extracted 'cifar-10-batches-py' folder (it holds data_batch_1 … data_batch_5)")
    missing = [b for b in CIFAR10_BATCHES if not (folder / b).is_file()]
    return f"CIFAR-10 folder {str(folder)!r} lacks {', '.join(missing)}" if missing else None


def load_cifar10(folder: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Images (N, 3, 32, 32) uint8 and labels (N,) from CIFAR-10's python-version batches
    (each read by :func:`read_cifar10_batch`).

    Raises:
        DatasetNotFoundError: folder or a batch file missing, or a batch malformed.
    """
    folder = Path(folder)
    problem = cifar10_folder_problem(folder)
    if problem:
        raise DatasetNotFoundError(problem)
    images, labels = [], []
    for name in CIFAR10_BATCHES:
        data, lab = read_cifar10_batch(folder / name)
        images.append(data.reshape(-1, 3, 32, 32))
        labels.append(lab)
    return np.concatenate(images), np.concatenate(labels)


def load_digits_images() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled digits as (N, 1, 8, 8) float in [0, 1] and labels (N,)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return (d.images[:, None] / 16.0).astype(np.float32), d.target.astype(np.int64)
