"""Reading a user's per-record scores file ("Just the scores"): CSV or npz, nothing trusted.

One row per record the user's model was asked about. What each column holds:

============== ==================================================================================
``member``     1 if the target model trained on the record, 0 if not (required; only 0 or 1)
``loss``       the target model's loss on the record: −log p(true label), natural log, ≥ 0
``logit_<j>``  instead of ``loss``: the target model's logits, j = 0 … m−1 (m ≥ 2 columns, numbered
               from 0 without gaps); the loss is then computed from them and ``label``
``label``      the record's true class, an integer in 0 … m−1 (required with logits; optional with
               ``loss``, where it is only a slicing)
``ref_loss_<k>`` reference model k's loss on the record, in the same units as ``loss``
               (k = 0 … K−1 without gaps): a model trained like the target on other data
``ref_in_<k>`` 1 if reference model k trained on this record, 0 if not (optional; given for one
               k, needed for every k). Without them every reference is taken as OUT (never trained
               on the record): the offline setting of LiRA and RMIA
``slice``      any label (text, at most :data:`MAX_SLICE_CHARS` characters) to break results down by
``id``         the record's name; read and ignored (it only has to be there or not)
============== ==================================================================================

An ``.npz`` file holds the same as arrays: ``member`` (N,), ``loss`` (N,) or ``logits`` (N, m),
``label`` (N,), ``ref_loss`` (N, K), ``ref_in`` (N, K), ``slice`` (N,) of text or integers, ``id``.
It is read with ``allow_pickle=False`` after its zip directory has been checked against the caps, so
an array of Python objects or a decompression bomb is refused before a byte of it is unpacked.

Every refusal is one :class:`ScoresFileError` line naming the column, row (CSV line number) or
array and saying what to fix; nothing is computed before the whole file has passed. The final
path component must not be a symbolic link (opened with ``O_NOFOLLOW``), the file must be a
regular file, and with ``root`` given its real path must lie under it. Caps: :data:`MAX_FILE_BYTES`,
:data:`MAX_ROWS`, :data:`MAX_COLUMNS`, :data:`MAX_CELLS`, :data:`MAX_CLASSES`, :data:`MAX_REFERENCES`,
:data:`MAX_SLICES`.
"""
from __future__ import annotations

import csv
import io
import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.foundations.errors import ConfigError, MIAError
from core.foundations.fileio import read_named_file, show_path
from core.foundations.paths import refuse_hidden

#: the largest file read (bytes on disk), CSV or npz
MAX_FILE_BYTES = 256 * 2**20
#: the most an npz may unpack to (sum of its arrays' sizes), checked from its zip directory first
MAX_UNPACKED_BYTES = 1 * 2**30
#: the most records (rows); the bootstrap over records is what grows with it
MAX_ROWS = 200_000
#: the most columns of a CSV (logits + references + the rest)
MAX_COLUMNS = 2_100
#: the most numbers in the file (rows × columns)
MAX_CELLS = 20_000_000
#: the most classes (logit columns)
MAX_CLASSES = 1_000
#: the most reference models
MAX_REFERENCES = 512
#: the most distinct slices, and the longest slice label
MAX_SLICES = 100
MAX_SLICE_CHARS = 100
#: the largest |value| of a loss or a logit: e^−1,000,000 is no probability any float holds, and larger
#: values would overflow the Gaussians of LiRA (a loss of 1e300 squared)
MAX_MAGNITUDE = 1e6
#: the fewest members and non-members: the thresholds are fitted on one half and scored on the other
MIN_PER_CLASS = 10
#: the file types read
SUFFIXES = (".csv", ".npz")

_LOGIT = re.compile(r"logit_(\d+)")
_REF_LOSS = re.compile(r"ref_loss_(\d+)")
_REF_IN = re.compile(r"ref_in_(\d+)")
_PLAIN = ("member", "loss", "label", "slice", "id")
_NPZ_KEYS = ("member", "loss", "logits", "label", "ref_loss", "ref_in", "slice", "id")


class ScoresFileError(MIAError, ValueError):
    """A scores file that cannot be read as documented (one line saying what to fix)."""


@dataclass(frozen=True)
class ScoresTable:
    """A checked scores file.

    Attributes:
        source: the file's name (not its folder).
        member: (N,) bool, the target model trained on the record.
        loss: (N,) float64 ≥ 0, the target model's −log p(label).
        loss_from: ``"loss"`` (the column) or ``"logits"`` (computed from the logits and labels).
        entropy: (N,) float64 of softmax(logits), None without logits.
        label: (N,) int64 or None.
        ref_loss: (N, K) float64 ≥ 0, reference model k's loss on record i (K may be 0).
        ref_in: (N, K) bool, reference model k trained on record i (all False without ``ref_in``).
        ref_in_given: whether the file said which references trained on which records.
        slice: (N,) str labels or None.
        n_classes: m with logits, else None.
    """

    source: str
    member: np.ndarray
    loss: np.ndarray
    loss_from: str
    entropy: np.ndarray | None
    label: np.ndarray | None
    ref_loss: np.ndarray
    ref_in: np.ndarray
    ref_in_given: bool
    slice: np.ndarray | None
    n_classes: int | None

    @property
    def n_records(self) -> int:
        return int(len(self.member))

    @property
    def n_references(self) -> int:
        return int(self.ref_loss.shape[1])

    def columns(self) -> list[str]:
        """What the file gave, in words (for the result and the page)."""
        out = ["member", "loss" if self.loss_from == "loss" else f"logits ({self.n_classes} classes)"]
        if self.label is not None:
            out.append("label")
        if self.n_references:
            out.append(f"{self.n_references} reference losses" + (" with IN/OUT masks" if self.ref_in_given else ""))
        if self.slice is not None:
            out.append("slice")
        return out


# ---------------------------------------------------------------------------- the file itself
def read_bytes(path: str | os.PathLike, root: str | os.PathLike | None = None) -> tuple[str, bytes]:
    """(the file's name, its bytes): a regular file, not a symbolic link, at most :data:`MAX_FILE_BYTES`,
    under ``root`` when given (its real path: a link in a parent folder that leads out is refused)."""
    text = os.fspath(path)
    if not text or "\x00" in text:
        raise ScoresFileError(f"--in {show_path(text)} is not a valid file name")
    p = Path(text).expanduser()
    if p.suffix.lower() not in SUFFIXES:
        raise ScoresFileError(f"{show_path(p)}: give a .csv or .npz file (got {p.suffix or 'no suffix'!r})")
    if root is not None:
        base = os.path.realpath(Path(root).expanduser())
        if not p.is_absolute():  # as a folder typed in the app: relative to the data root
            p = Path(base) / p
        real = os.path.realpath(p)
        if os.path.commonpath([base, real]) != base:
            raise ScoresFileError(f"{show_path(p)} lies outside the data root {show_path(base)}")
        try:  # the home's hidden files and folders, without MIA_DATA_ROOT (core.foundations.paths)
            refuse_hidden(Path(real), Path(base), show_path(p))
        except ConfigError as exc:
            raise ScoresFileError(str(exc)) from None
    data = read_named_file(p, MAX_FILE_BYTES, ScoresFileError, show_path(p))
    return p.name, data


def read_scores(path: str | os.PathLike, root: str | os.PathLike | None = None) -> ScoresTable:
    """The checked :class:`ScoresTable` of a ``.csv`` or ``.npz`` file (module docstring)."""
    name, data = read_bytes(path, root)
    if name.lower().endswith(".npz"):
        arrays = _npz_arrays(name, data)
    else:
        arrays = _csv_arrays(name, data)
    return _table(name, arrays)


# ---------------------------------------------------------------------------- CSV
def _csv_arrays(name: str, data: bytes) -> dict[str, np.ndarray]:
    if b"\x00" in data[: 1 << 20] or data[:4] == b"PK\x03\x04":
        raise ScoresFileError(f"{name}: binary content, not a text CSV")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ScoresFileError(f"{name}: not UTF-8 text (line {line}); save the CSV as UTF-8") from None
    if "\x00" in text:
        raise ScoresFileError(f"{name}: binary content, not a text CSV")
    previous = csv.field_size_limit()
    csv.field_size_limit(1000)  # no field of this format is longer; a huge one is garbage
    try:
        return _csv_columns(name, csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise ScoresFileError(f"{name}: not a readable CSV ({exc})") from None
    finally:
        csv.field_size_limit(previous)


def _csv_columns(name: str, reader) -> dict[str, np.ndarray]:
    header = next(reader, None)
    if not header or not any(h.strip() for h in header):
        raise ScoresFileError(f"{name}: empty file; the first line must name the columns (member, loss, …)")
    header = [h.strip() for h in header]
    if len(header) > MAX_COLUMNS:
        raise ScoresFileError(f"{name}: {len(header):,} columns; at most {MAX_COLUMNS:,} are read")
    seen: set[str] = set()
    for h in header:
        if h in seen:
            raise ScoresFileError(f"{name}: column {h!r} appears twice")
        seen.add(h)
    unknown = [h for h in header if h not in _PLAIN and not (_LOGIT.fullmatch(h) or _REF_LOSS.fullmatch(h)
                                                          or _REF_IN.fullmatch(h))]
    if unknown:
        raise ScoresFileError(f"{name}: unknown column {unknown[0]!r}; the columns are member, loss or logit_0…, "
                              "label, ref_loss_0…, ref_in_0…, slice, id (docs/your_data.md)")
    max_rows = min(MAX_ROWS, MAX_CELLS // len(header))
    rows: list[list[str]] = []
    lines: list[int] = []  # each record's line in the file, for messages (blank lines are skipped)
    for row in reader:
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # blank lines (a trailing newline) carry no record
        if len(row) != len(header):
            raise ScoresFileError(f"{name}: line {reader.line_num} has {len(row)} fields, the header {len(header)}")
        if len(rows) == max_rows:
            raise ScoresFileError(f"{name}: more than {max_rows:,} rows; at most {MAX_ROWS:,} records "
                                  f"and {MAX_CELLS:,} values are read")
        rows.append(row)
        lines.append(reader.line_num)
    if not rows:
        raise ScoresFileError(f"{name}: no records below the header")
    columns = list(zip(*rows))
    by_name = dict(zip(header, columns))
    out: dict[str, np.ndarray] = {"_lines": np.asarray(lines)}
    for key in ("member", "loss", "label"):
        if key in by_name:
            out[key] = _numbers(name, key, by_name[key], lines)
    if "slice" in by_name:
        out["slice"] = np.array([v.strip() for v in by_name["slice"]], dtype=object)
    out.update(_numbered(name, header, by_name, _LOGIT, "logit", "logits", lines))
    out.update(_numbered(name, header, by_name, _REF_LOSS, "ref_loss", "ref_loss", lines))
    out.update(_numbered(name, header, by_name, _REF_IN, "ref_in", "ref_in", lines))
    return out


def _numbers(name: str, column: str, values: tuple[str, ...], lines: list[int]) -> np.ndarray:
    """A column of text as float64; an empty or non-numeric cell is refused with its line."""
    out = np.empty(len(values))
    for i, v in enumerate(values):
        try:
            out[i] = float(v)
        except ValueError:
            shown = v.strip()[:30]
            what = "an empty cell" if not shown else f"{shown!r}, not a number"
            raise ScoresFileError(f"{name}: column {column!r}, line {lines[i]}: {what}") from None
    return out


def _numbered(name: str, header: list[str], by_name: dict, pattern: re.Pattern, stem: str, key: str,
              lines: list[int]) -> dict[str, np.ndarray]:
    """``stem_0 … stem_{n−1}`` columns as one (N, n) array; gaps in the numbering are refused."""
    found = sorted((int(m.group(1)), h) for h in header if (m := pattern.fullmatch(h)))
    if not found:
        return {}
    numbers = [k for k, _ in found]
    if numbers != list(range(len(numbers))):
        missing = sorted(set(range(max(numbers) + 1)) - set(numbers))
        raise ScoresFileError(f"{name}: the {stem}_* columns must be numbered 0, 1, 2, … without gaps "
                              f"({'no ' + stem + '_' + str(missing[0]) if missing else 'a number written twice'})")
    return {key: np.stack([_numbers(name, h, by_name[h], lines) for _, h in found], axis=1)}


# ---------------------------------------------------------------------------- npz
def _npz_arrays(name: str, data: bytes) -> dict[str, np.ndarray]:
    if data[:4] != b"PK\x03\x04":
        raise ScoresFileError(f"{name}: not an npz file (no zip header); save it with numpy.savez")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ScoresFileError(f"{name}: a damaged npz ({' '.join(str(exc).split())})") from None
    unpacked = sum(i.file_size for i in infos)
    if unpacked > MAX_UNPACKED_BYTES:  # the sizes the directory declares; a lying entry fails its CRC below
        raise ScoresFileError(f"{name}: unpacks to {unpacked:,} bytes; at most {MAX_UNPACKED_BYTES:,} are read")
    keys = [i.filename[:-4] if i.filename.endswith(".npy") else i.filename for i in infos]
    unknown = [k for k in keys if k not in _NPZ_KEYS]
    if unknown:
        raise ScoresFileError(f"{name}: unknown array {unknown[0]!r}; the arrays are {', '.join(_NPZ_KEYS)} "
                              "(docs/your_data.md)")
    _check_npy_headers(name, data, infos)
    out: dict[str, np.ndarray] = {}
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            for key in keys:
                out[key] = npz[key]
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
            raise ScoresFileError(f"{name}: an array holds Python objects, which would need unpickling; refused "
                                  "(save numbers, or text as a unicode array)") from None
        raise ScoresFileError(f"{name}: a damaged npz ({' '.join(str(exc).split())})") from None
    except (zipfile.BadZipFile, OSError, EOFError, KeyError) as exc:
        raise ScoresFileError(f"{name}: a damaged npz ({' '.join(str(exc).split())})") from None
    for key, a in out.items():
        if a.dtype.kind not in ("b", "i", "u", "f", "U", "S") or (key != "slice" and key != "id"
                                                                    and a.dtype.kind in ("U", "S")):
            raise ScoresFileError(f"{name}: array {key!r} has dtype {a.dtype}; "
                                  f"{'text or integers' if key in ('slice', 'id') else 'numbers'} expected")
    n = None
    for key, a in out.items():
        want = 2 if key in ("logits", "ref_loss", "ref_in") else 1
        if a.ndim != want:
            raise ScoresFileError(f"{name}: array {key!r} has shape {a.shape}; {'(N, columns)' if want == 2 else '(N,)'} expected")
        if n is None:
            n = a.shape[0]
        elif a.shape[0] != n:
            raise ScoresFileError(f"{name}: array {key!r} has {a.shape[0]} rows, the others {n}")
    if n is not None and n > MAX_ROWS:
        raise ScoresFileError(f"{name}: {n:,} records; at most {MAX_ROWS:,} are read")
    out.pop("id", None)
    for key in ("member", "loss", "label", "logits", "ref_loss", "ref_in"):
        if key in out:
            out[key] = out[key].astype(np.float64)
    if "slice" in out:
        s = out["slice"]
        out["slice"] = np.array([v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in s.tolist()],
                                dtype=object)
    return out


def _check_npy_headers(name: str, data: bytes, infos: list[zipfile.ZipInfo]) -> None:
    """Each array's dtype and shape, read from its ``.npy`` header before the array: numpy allocates
    the whole array its header declares before reading a byte of it, so a 200-byte entry declaring
    (2⁴⁰,) float64 would ask for 8 TiB. The declared size must lie within the entry's (already capped)
    unpacked size and the caps on records and columns; an object dtype is refused here too."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for info in infos:
                key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                with z.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    if version == (1, 0):
                        shape, _, dtype = np.lib.format.read_array_header_1_0(f, max_header_size=10_000)
                    elif version in ((2, 0), (3, 0)):
                        shape, _, dtype = np.lib.format.read_array_header_2_0(f, max_header_size=10_000)
                    else:
                        raise ValueError(f"npy format version {version}")
                if dtype.hasobject:
                    raise ScoresFileError(f"{name}: an array holds Python objects, which would need unpickling; "
                                          "refused (save numbers, or text as a unicode array)")
                count = 1
                for d in shape:
                    count *= d
                if shape and (shape[0] > MAX_ROWS or count > MAX_CELLS
                              or count * max(dtype.itemsize, 1) > info.file_size):
                    raise ScoresFileError(f"{name}: array {key!r} declares shape {shape} of {dtype}; at most "
                                          f"{MAX_ROWS:,} records and {MAX_CELLS:,} values are read, and the "
                                          f"entry holds {info.file_size:,} bytes")
    except ScoresFileError:
        raise
    except (ValueError, zipfile.BadZipFile, OSError, EOFError, SyntaxError, TypeError) as exc:
        raise ScoresFileError(f"{name}: a damaged npz ({' '.join(str(exc).split())[:160]})") from None


# ---------------------------------------------------------------------------- the checks shared by both
def _where(name: str, key: str, bad: np.ndarray, lines: np.ndarray | None) -> str:
    """Where the first bad value is: the CSV line (header = line 1) or the npz row (from 0)."""
    i = int(np.argmax(bad.reshape(len(bad), -1).any(axis=1)))
    if bad.ndim == 2:  # name the column: ref_loss_3 (CSV) or ref_loss[:, 3] (npz)
        j = int(np.argmax(bad[i]))
        key = key.replace("*", str(j)) if "*" in key else f"{key}[:, {j}]"
    return f"{name}: {key!r}, {'row ' + str(i) if lines is None else 'line ' + str(int(lines[i]))}"


def _finite(name: str, key: str, a: np.ndarray, lines: np.ndarray | None) -> None:
    bad = ~np.isfinite(a)
    if bad.any():
        v = a.reshape(len(a), -1)[bad.reshape(len(a), -1)][0]
        raise ScoresFileError(f"{_where(name, key, bad, lines)}: {v} (every value must be a finite number)")


def _table(name: str, arrays: dict[str, np.ndarray]) -> ScoresTable:
    lines = arrays.pop("_lines", None)  # None: an npz, whose rows are counted from 0
    npz = lines is None
    csv_columns = {"logits": "logit_*", "ref_loss": "ref_loss_*", "ref_in": "ref_in_*"}

    def col(stem: str) -> str:
        """The name a message gives an array: the npz key, or the CSV column (a 2-D array's columns as stem_*)."""
        return stem if npz else csv_columns.get(stem, stem)

    if "member" not in arrays:
        raise ScoresFileError(f"{name}: no 'member' {'array' if npz else 'column'} (1 = trained on, 0 = not)")
    has_loss, has_logits = "loss" in arrays, "logits" in arrays
    if has_loss == has_logits:
        raise ScoresFileError(f"{name}: give either a 'loss' {'array' if npz else 'column'} or the logits "
                              f"({'logits' if npz else 'logit_0, logit_1, …'}), {'not both' if has_loss else 'none found'}")
    for key, a in arrays.items():
        if key != "slice":
            _finite(name, col(key), a, lines)
            if key in ("loss", "logits", "ref_loss"):
                bad = np.abs(a) > MAX_MAGNITUDE
                if bad.any():
                    raise ScoresFileError(f"{_where(name, col(key), bad, lines)}: {a[bad][0]:g}; values up to "
                                          f"{MAX_MAGNITUDE:g} in size are read (is it a loss in nats?)")
    member = arrays["member"]
    bad = (member != 0) & (member != 1)
    if bad.any():
        raise ScoresFileError(f"{_where(name, 'member', bad, lines)}: {member[bad][0]:g}; member must be 0 or 1")
    member = member.astype(bool)
    n_in, n_out = int(member.sum()), int((~member).sum())
    if n_in == 0 or n_out == 0:
        raise ScoresFileError(f"{name}: every record has member = {int(n_in > 0)}; membership inference needs "
                              "members (1) and non-members (0)")
    if min(n_in, n_out) < MIN_PER_CLASS:
        raise ScoresFileError(f"{name}: {n_in} members and {n_out} non-members; at least {MIN_PER_CLASS} of each "
                              "are needed (thresholds are fitted on one half and scored on the other)")
    label = None
    if "label" in arrays:
        lab = arrays["label"]
        bad = (lab != np.round(lab)) | (lab < 0)
        if bad.any():
            raise ScoresFileError(f"{_where(name, 'label', bad, lines)}: {lab[bad][0]:g}; a label is a class index 0, 1, 2, …")
        label = lab.astype(np.int64)
    entropy, n_classes = None, None
    if has_logits:
        logits = arrays["logits"]
        n_classes = logits.shape[1]
        if not 2 <= n_classes <= MAX_CLASSES:
            raise ScoresFileError(f"{name}: {n_classes} logit columns; 2 to {MAX_CLASSES} classes are read")
        if label is None:
            raise ScoresFileError(f"{name}: logits need a 'label' {'array' if npz else 'column'} (the true class) "
                                  "to compute the loss")
        bad = label >= n_classes
        if bad.any():
            raise ScoresFileError(f"{_where(name, 'label', bad, lines)}: {label[bad][0]}; with {n_classes} logit "
                                  f"columns a label lies in 0…{n_classes - 1}")
        z = logits - logits.max(axis=1, keepdims=True)  # log-softmax in float64
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        loss = -logp[np.arange(len(logp)), label]
        entropy = -(np.exp(logp) * logp).sum(axis=1)
        loss_from = "logits"
    else:
        loss = arrays["loss"]
        bad = loss < 0
        if bad.any():
            raise ScoresFileError(f"{_where(name, 'loss', bad, lines)}: {loss[bad][0]:g}; a loss is −log p(label) ≥ 0")
        loss_from = "loss"
    n = len(member)
    ref_loss = arrays.get("ref_loss", np.zeros((n, 0)))
    if ref_loss.shape[1] > MAX_REFERENCES:
        raise ScoresFileError(f"{name}: {ref_loss.shape[1]} reference models; at most {MAX_REFERENCES} are read")
    bad = ref_loss < 0
    if bad.any():
        raise ScoresFileError(f"{_where(name, col('ref_loss'), bad, lines)}: {ref_loss[bad][0]:g}; a loss is ≥ 0")
    ref_in_given = "ref_in" in arrays
    if ref_in_given:
        ref_in = arrays["ref_in"]
        if ref_in.shape[1] != ref_loss.shape[1]:
            raise ScoresFileError(f"{name}: {ref_in.shape[1]} {col('ref_in')} columns for {ref_loss.shape[1]} "
                                  f"{col('ref_loss')} columns; give one mask per reference model")
        bad = (ref_in != 0) & (ref_in != 1)
        if bad.any():
            raise ScoresFileError(f"{_where(name, col('ref_in'), bad, lines)}: {ref_in[bad][0]:g}; ref_in must be 0 or 1")
        ref_in = ref_in.astype(bool)
    else:
        ref_in = np.zeros(ref_loss.shape, bool)
    slices = arrays.get("slice")
    if slices is not None:
        long = [s for s in slices if len(s) > MAX_SLICE_CHARS]
        if long:
            raise ScoresFileError(f"{name}: a slice label of {len(long[0])} characters; at most {MAX_SLICE_CHARS}")
        distinct = len(set(slices.tolist()))
        if distinct > MAX_SLICES:
            raise ScoresFileError(f"{name}: {distinct} distinct slices; at most {MAX_SLICES} (group them first)")
    return ScoresTable(name, member, np.asarray(loss, np.float64), loss_from, entropy, label, ref_loss, ref_in,
                       ref_in_given, slices, n_classes)
