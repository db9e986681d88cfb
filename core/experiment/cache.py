"""On-disk cache of trained weights, Responses and results (diskcache-backed).

Safety and integrity:
* Nothing read from the cache is ever unpickled. diskcache unpickles any row whose stored mode
  is "pickle" (values, in the database or in a ``.val`` file) and any key stored as a pickle;
  a cache folder is just files, so anyone who can write there could plant such a row. The
  store therefore uses :class:`SafeDisk`, which refuses those rows *before any byte is
  deserialised*: only ``str`` keys and ``bytes`` values go in, and only raw or binary rows come
  out. A refused row is reported through ``corrupted`` / the logger, deleted and treated as a
  miss, so the caller recomputes it.
* Weights are safetensors, Responses ``.npz`` read with ``allow_pickle=False``, results JSON.
* Every value is wrapped as ``MAGIC + sha256(payload) + payload``; a value whose digest does not
  match (truncated file, bit rot, a hand-edited entry) is discarded the same way.
* An entry can pass its checksum and still not be what its key claims (a result ``[1, 2, 3]``,
  weights of another model): the typed getters take a ``validate`` hook (JSON, Responses) or
  the expected tensor names and shapes (weights); an entry that fails is discarded the same way.
* diskcache commits an entry in one SQLite transaction after its file is fully written, so a
  crash mid-write leaves no half entry under the key.
* The folder and its database are created only when something is first stored: a run that
  fails before storing anything leaves no empty cache behind, and reading a cache that does
  not exist answers "miss" without creating it.

The folder is ``cache/`` at the repository root unless ``MIA_CACHE_DIR`` names another.
"""
from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import sqlite3
import stat
from pathlib import Path
from typing import Any, Callable, Mapping

import diskcache
import torch
from diskcache.core import MODE_BINARY, MODE_PICKLE, MODE_RAW, UNKNOWN
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from core.foundations.config import CACHE_SCHEMA_VERSION
from core.foundations.errors import CacheCorruptionError, CacheUnusableError, UnsafeCacheEntryError
from core.foundations.paths import DEFAULT_CACHE_DIR as DEFAULT_DIR  # noqa: F401  (re-exported: the old name)
from core.foundations.paths import cache_dir
from core.measurement.responses import Responses

log = logging.getLogger(__name__)

#: Revision of one kind of entry whose stored values changed meaning while the configs' hashes (and so the
#: trained models under them) did not: its keys become ``v<schema>.<revision>/<kind>/…``, so an older entry
#: is never read as a new one (nor listed by ``keys(key(kind, ""))``) and is recomputed from the cached models.
#: result 2: per-record scores stored exactly (``core.measurement.metrics.scores_for_json``), not to 6 decimals.
KIND_REVISIONS = {"result": 2}

#: format tag of a wrapped value: version 2 binds the key into the digest (version 1 did not,
#: so an intact entry copied to another key was served; such entries are discarded and recomputed)
_MAGIC = b"MIAX2"
_DIGEST = 32
#: the only value-file names we read or delete: what diskcache writes, ``xx/yy/<28 hex>.val``
#: (a row naming anything else — ``/etc/passwd``, ``../../x`` — is refused before any access)
_VALUE_FILE = re.compile(r"[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{28}\.val")
#: largest value file read (the biggest entries, paper-preset weights, are a few MB): a row
#: pointing at a huge file cannot exhaust memory
MAX_VALUE_BYTES = 2**31
#: diskcache's database file inside the cache folder
DB_NAME = diskcache.core.DBNAME
#: values at least this large go to their own file (diskcache's default, pinned so that a
#: planted Settings row cannot change it)
MIN_FILE_SIZE = 2**15

#: A validation hook: raises (any exception) or returns False when a value is not what its key
#: claims; returning anything else (None, True) accepts it.
Validator = Callable[[Any], object]


class SafeDisk(diskcache.Disk):
    """A diskcache ``Disk`` that never unpickles: str keys and bytes values only.

    diskcache calls ``put``/``get`` to convert keys and ``store``/``fetch`` to convert values.
    The base class pickles anything that is not a str/bytes/int/float and unpickles rows marked
    as pickles; here writing anything but a ``str`` key or a ``bytes`` value raises
    ``TypeError``, and reading a pickled key or a row in any mode but raw/binary raises
    :class:`UnsafeCacheEntryError` before the stored bytes are even opened. The error is not an
    ``OSError``, so diskcache does not swallow it as "key vanished": it reaches
    :class:`ArtifactCache`, which reports, deletes and recomputes the entry.
    """

    def __init__(self, directory: str, min_file_size: int = MIN_FILE_SIZE, pickle_protocol: int = 0, **_: Any):
        # settings read from the database are ignored: nothing stored there may steer us
        super().__init__(directory, min_file_size=MIN_FILE_SIZE, pickle_protocol=0)

    def put(self, key: Any) -> tuple[Any, bool]:
        if type(key) is not str:
            raise TypeError(f"cache keys must be str, got {type(key).__name__}")
        return super().put(key)

    def get(self, key: Any, raw: bool) -> Any:
        if not raw:
            raise UnsafeCacheEntryError("cache row has a pickled key; refusing to unpickle it")
        return super().get(key, raw)

    def store(self, value: Any, read: bool, key: Any = UNKNOWN) -> tuple[int, int, str | None, Any]:
        if read or type(value) is not bytes:
            raise TypeError(f"the cache stores bytes only, got {type(value).__name__}")
        return super().store(value, read, key)

    def fetch(self, mode: int, filename: str | None, value: Any, read: bool) -> Any:
        if mode not in (MODE_RAW, MODE_BINARY) or read:
            kind = "pickle" if mode == MODE_PICKLE else f"mode {mode}"
            raise UnsafeCacheEntryError(f"cache row is stored as {kind}; refusing to read it")
        if mode == MODE_RAW:
            return super().fetch(mode, filename, value, read)
        return read_value_file(self._directory, filename)

    def remove(self, file_path: str) -> None:
        """Delete a value file of ours and its emptied ``xx/yy`` folders — nothing else.

        diskcache joins the row's ``filename`` to the folder and deletes it, then every emptied
        parent (``os.removedirs``): a planted row naming ``/some/dir/precious.txt`` or ``../../x``
        would delete that file and its folder. Only names of the form diskcache writes are
        accepted, the path is walked without following links, and the walk stops at the cache
        folder itself.
        """
        if not _is_value_name(file_path):
            log.warning("cache row names a file outside the cache (%r); not deleting it", file_path)
            return
        try:
            with _value_folder(self._directory, file_path) as (outer_fd, inner_fd, name):
                if stat.S_ISREG(os.stat(name, dir_fd=inner_fd, follow_symlinks=False).st_mode):
                    os.unlink(name, dir_fd=inner_fd)
                # the emptied folders yy, then xx, and never above the cache folder
                # (rmdir removes neither a link nor a folder that still holds something)
                os.rmdir(file_path[3:5], dir_fd=outer_fd)
                os.rmdir(os.path.join(self._directory, file_path[:2]))
        except OSError:  # already gone, or another process removed it
            pass

    def filename(self, key: Any = UNKNOWN, value: Any = UNKNOWN) -> tuple[str, str]:
        """A new value file's name; refuses to write through a planted link in ``xx`` or ``xx/yy``."""
        name, full_path = super().filename(key, value)
        for part in (name[:2], name[:5]):
            path = os.path.join(self._directory, part)
            if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
                raise CacheUnusableError(
                    f"the cache folder holds {path!r}, which is not a plain folder; refusing to write through it "
                    "(remove it, or run `make clean-cache`)")
        return name, full_path


def _is_value_name(filename: Any) -> bool:
    return isinstance(filename, str) and _VALUE_FILE.fullmatch(filename) is not None


class _value_folder:
    """``with _value_folder(dir, "xx/yy/name.val") as (xx_fd, yy_fd, name)``: the two levels of
    folders opened without following links (``O_NOFOLLOW``), so that a planted link cannot lead
    a read or a delete outside the cache folder."""

    def __init__(self, directory: str, filename: str):
        self.directory, self.filename = directory, filename
        self.fds: list[int] = []

    def __enter__(self) -> tuple[int, int, str]:
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
        try:
            outer = os.open(os.path.join(self.directory, self.filename[:2]), flags)
            self.fds.append(outer)
            inner = os.open(self.filename[3:5], flags, dir_fd=outer)
            self.fds.append(inner)
        except BaseException:
            self.__exit__()
            raise
        return outer, inner, self.filename[6:]

    def __exit__(self, *exc: object) -> None:
        for fd in reversed(self.fds):
            os.close(fd)
        self.fds = []


def read_value_file(directory: str, filename: Any, limit: int | None = None) -> bytes:
    """The bytes of value file ``filename`` inside ``directory``, read safely.

    Refused (:class:`UnsafeCacheEntryError`, before a byte is read): a name that is not one
    diskcache writes (absolute, ``..``, anything but ``xx/yy/<hex>.val``), a link anywhere on
    the way, anything but a regular file (``/dev/zero`` would read until memory runs out), or
    a file over ``limit`` bytes (default :data:`MAX_VALUE_BYTES`).
    """
    limit = MAX_VALUE_BYTES if limit is None else limit
    if not _is_value_name(filename):
        raise UnsafeCacheEntryError(f"cache row names the file {filename!r}, which is not a value file of the cache")
    with _value_folder(directory, filename) as (_, inner, name):
        try:
            # O_NONBLOCK: a FIFO planted as a value file must not block the open (fstat refuses it next)
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=inner)
        except OSError as exc:
            if exc.errno == 40:  # ELOOP: the file itself is a link
                raise UnsafeCacheEntryError(f"cache value file {filename!r} is a link; refusing to follow it") from None
            raise
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeCacheEntryError(f"cache value file {filename!r} is not a regular file")
        if info.st_size > limit:
            raise UnsafeCacheEntryError(f"cache value file {filename!r} holds {info.st_size} bytes, over the {limit} limit")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise UnsafeCacheEntryError(f"cache value file {filename!r} grew past the {limit}-byte limit while read")
    return data


def _digest(key: str, payload: bytes) -> bytes:
    """sha256 over the format tag, the key and the payload: an entry only verifies under the key
    it was stored under, so a value copied or moved to another key (another seed's result, the
    victim's weights under a shadow's name) is discarded instead of served."""
    h = hashlib.sha256(_MAGIC)
    h.update(len(key.encode()).to_bytes(8, "big"))
    h.update(key.encode())
    h.update(payload)
    return h.digest()


def _wrap(key: str, payload: bytes) -> bytes:
    return _MAGIC + _digest(key, payload) + payload


def _unwrap(key: str, blob: Any) -> bytes:
    if not isinstance(blob, (bytes, bytearray)) or not blob.startswith(_MAGIC):
        raise CacheCorruptionError(f"cache entry {key!r} has an unknown format (written by an older version?)")
    digest = blob[len(_MAGIC) : len(_MAGIC) + _DIGEST]
    payload = bytes(blob[len(_MAGIC) + _DIGEST :])
    if _digest(key, payload) != digest:
        raise CacheCorruptionError(f"cache entry {key!r} failed its checksum (damaged, or stored under another key)")
    return payload


def tensor_shapes(tensors: Mapping[str, torch.Tensor]) -> dict[str, tuple[int, ...]]:
    """``{name: shape}`` of a state dict: what :meth:`ArtifactCache.get_tensors` should expect
    for weights of a freshly built model (``tensor_shapes(model.state_dict())``)."""
    return {name: tuple(int(d) for d in t.shape) for name, t in tensors.items()}


def dict_with(**types: type | tuple[type, ...]) -> Validator:
    """A :data:`Validator` accepting a dict that has every named key with a value of that type.

    ``int`` never accepts a bool, and ``float`` accepts an int (JSON writes 2.0 as 2)::

        cache.get_json(key, validate=dict_with(params=int, per_epoch=list, train_s=float))
    """

    def check(value: Any) -> None:
        if not isinstance(value, dict):
            raise TypeError(f"expected an object, got {type(value).__name__}")
        for name, expected in types.items():
            if name not in value:
                raise KeyError(f"missing {name!r}")
            allowed = expected if isinstance(expected, tuple) else (expected,)
            if float in allowed:
                allowed = allowed + (int,)
            v = value[name]
            if (isinstance(v, bool) and bool not in allowed) or not isinstance(v, allowed):
                raise TypeError(f"{name!r} is a {type(v).__name__}, expected {'/'.join(t.__name__ for t in allowed)}")

    return check


class ArtifactCache:
    """Typed get/put of bytes, JSON, tensors and Responses under string keys.

    Reads never raise for a bad entry: they return None (a miss) and append the key to
    :attr:`corrupted`. Nothing is created on disk until the first ``put_*``.
    """

    def __init__(self, directory: str | os.PathLike | None = None):
        self.directory = Path(directory) if directory is not None else cache_dir()
        self._opened: diskcache.Cache | _ReadOnlyStore | None = None
        #: keys of entries found corrupted (and discarded) during this object's life
        self.corrupted: list[str] = []

    @staticmethod
    def key(kind: str, digest: str, *parts: object) -> str:
        """``v<schema>/<kind>/<digest>/<parts...>`` (``v<schema>.<revision>/…`` for a kind in :data:`KIND_REVISIONS`)."""
        revision = KIND_REVISIONS.get(kind)
        version = f"v{CACHE_SCHEMA_VERSION}" if revision is None else f"v{CACHE_SCHEMA_VERSION}.{revision}"
        return "/".join([version, kind, digest, *map(str, parts)])

    # ------------------------------------------------------------------ the store, opened lazily
    def _open(self) -> "diskcache.Cache | _ReadOnlyStore":
        if self._opened is None:
            db = self.directory / DB_NAME
            if db.is_file() and not _writable(self.directory, db):
                # diskcache writes on every read (LRU bookkeeping) and would fail each one as
                # "unreadable": a read-only cache is read through plain SQL instead
                self._opened = _ReadOnlyStore(self.directory)
            else:
                self._opened = diskcache.Cache(
                    str(self.directory), disk=SafeDisk, size_limit=2**34, eviction_policy="least-recently-used",
                    disk_min_file_size=MIN_FILE_SIZE, disk_pickle_protocol=0,
                )
        return self._opened

    def _reader(self) -> "diskcache.Cache | _ReadOnlyStore | None":
        """The store if its database exists (never creates it), else None."""
        if self._opened is None and not (self.directory / DB_NAME).is_file():
            return None
        return self._open()

    @property
    def _store(self) -> diskcache.Cache:
        """The underlying diskcache store, created if needed (for writers and tests)."""
        if self.read_only:
            raise CacheUnusableError(f"the cache folder {str(self.directory)!r} is read-only: it serves cached "
                                     "results but cannot store new ones (point MIA_CACHE_DIR at a writable folder)")
        self.directory.mkdir(parents=True, exist_ok=True)
        store = self._open()
        assert isinstance(store, diskcache.Cache)
        return store

    @property
    def exists(self) -> bool:
        """Whether the cache database exists (something was ever stored here)."""
        return self._opened is not None or (self.directory / DB_NAME).is_file()

    @property
    def read_only(self) -> bool:
        """Whether the cache can only be read (its database or folder is not writable by us)."""
        db = self.directory / DB_NAME
        return isinstance(self._opened, _ReadOnlyStore) or (db.is_file() and not _writable(self.directory, db))

    def check_usable(self, write: bool = False) -> None:
        """Raise :class:`CacheUnusableError` (one line, saying what to do) unless the cache folder
        can serve reads and, with ``write``, store: run it *before* work whose results must be
        stored, so a broken cache fails in a second rather than after the whole training.

        Checked: the folder is a folder (or can be created), its database opens and its rows can
        be counted (a truncated or garbage ``cache.db`` fails here), ``locks/`` is a plain folder;
        with ``write``: folder, database and ``locks/`` writable. Creates nothing.
        """
        where = str(self.directory)
        try:
            self._check_usable(write)
        except OSError as exc:  # e.g. a folder on the way that we may not enter
            raise CacheUnusableError(f"the cache folder {where!r} cannot be used: {exc.strerror or exc}") from None

    def _check_usable(self, write: bool) -> None:
        where = str(self.directory)
        if os.path.lexists(self.directory) and not self.directory.is_dir():
            raise CacheUnusableError(f"the cache folder {where!r} is not a folder (check MIA_CACHE_DIR)")
        if not self.directory.exists():
            if write:
                parent = _nearest_existing(self.directory)
                if parent is None or not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
                    raise CacheUnusableError(f"the cache folder {where!r} cannot be created (check MIA_CACHE_DIR)")
            return
        db = self.directory / DB_NAME
        if os.path.lexists(db):
            if db.is_symlink() or not db.is_file():
                raise CacheUnusableError(f"{str(db)!r} is not a regular file; move it away or run `make clean-cache`")
            try:
                with _connect_read_only(db) as con:
                    con.execute("SELECT COUNT(*), SUM(LENGTH(key)) FROM Cache").fetchone()
            except sqlite3.Error as exc:
                raise CacheUnusableError(f"the cache database {str(db)!r} is unreadable ({exc}); move the folder away "
                                         "or run `make clean-cache`") from None
        locks = self.directory / "locks"
        if os.path.lexists(locks) and (locks.is_symlink() or not locks.is_dir()):
            raise CacheUnusableError(f"{str(locks)!r} is not a plain folder; remove it")
        if write:
            targets = [self.directory] + [p for p in (db, locks) if p.exists()]
            if not all(os.access(p, os.W_OK) for p in targets):
                raise CacheUnusableError(f"the cache folder {where!r} is read-only: it serves cached results but "
                                         "cannot store new ones (point MIA_CACHE_DIR at a writable folder)")

    # ------------------------------------------------------------------ bytes
    def get_bytes(self, key: str) -> bytes | None:
        """The payload stored under ``key``, or None if absent or discarded as corrupted/unsafe."""
        _check_key(key)
        try:
            store = self._reader()
            if store is None:
                return None
            blob = store.get(key, default=None, retry=True)
        except UnsafeCacheEntryError as exc:
            self._discard(key, f"is unsafe ({exc})")
            return None
        except (OSError, EOFError, ValueError, sqlite3.DatabaseError) as exc:  # e.g. the value's file was removed
            if _disk_full(exc):  # diskcache writes on every read (LRU bookkeeping): the entry may be intact
                raise self._full_error() from None
            self._discard(key, f"is unreadable ({exc})")
            return None
        if blob is None:
            return None
        try:
            return _unwrap(key, blob)
        except CacheCorruptionError as exc:
            self._discard(key, f"is corrupted ({exc})")
            return None

    def put_bytes(self, key: str, payload: bytes) -> None:
        """Store ``payload`` under ``key`` (creating the cache folder on first use)."""
        _check_key(key)
        if not isinstance(payload, (bytes, bytearray)):
            raise TypeError(f"payload must be bytes, got {type(payload).__name__}")
        try:
            self._store.set(key, _wrap(key, bytes(payload)), retry=True)
        except (OSError, sqlite3.OperationalError) as exc:
            # diskcache removes a value file whose row was not committed, and SQLite rolls the row
            # back: nothing half-written is left to serve; the user gets one line, not a traceback
            if _disk_full(exc):
                raise self._full_error() from None
            raise

    def _full_error(self) -> CacheUnusableError:
        return CacheUnusableError(f"the disk under the cache folder {str(self.directory)!r} is full: free some space "
                                  "or point MIA_CACHE_DIR at another disk (cached entries are kept)")

    def __contains__(self, key: str) -> bool:
        try:
            store = self._reader()
            return store is not None and key in store
        except (OSError, sqlite3.DatabaseError):
            return False

    # ------------------------------------------------------------------ typed helpers
    def get_json(self, key: str, validate: Validator | None = None) -> Any | None:
        """The JSON value under ``key``; None if absent, not JSON, or rejected by ``validate``."""
        data = self.get_bytes(key)
        if data is None:
            return None
        try:
            value = json.loads(data)
        except ValueError:
            self._discard(key, "is not valid JSON")
            return None
        return value if self._accepted(key, value, validate) else None

    def put_json(self, key: str, value: Any, allow_nan: bool = True) -> None:
        """Store ``value`` as JSON. ``allow_nan=False`` refuses NaN/±inf anywhere in it
        (``ValueError``), so a diverged run's numbers can never become a cached result."""
        self.put_bytes(key, json.dumps(value, sort_keys=True, allow_nan=allow_nan).encode())

    def get_tensors(
        self,
        key: str,
        expected: Mapping[str, tuple[int, ...]] | None = None,
        require_finite: bool = False,
    ) -> dict[str, torch.Tensor] | None:
        """The tensors under ``key``; None if absent, malformed or not what the caller expects.

        Args:
            expected: exact ``{name: shape}`` the entry must hold (e.g.
                ``tensor_shapes(model.state_dict())`` of a freshly built model): other names,
                missing names or other shapes discard the entry instead of failing later in
                ``load_state_dict``.
            require_finite: also discard it if a floating-point tensor holds NaN or ±inf.
        """
        data = self.get_bytes(key)
        if data is None:
            return None
        try:
            tensors = load_safetensors(data)
        except Exception:  # safetensors raises its own error types for malformed headers
            self._discard(key, "is not a valid safetensors blob")
            return None
        if expected is not None:
            why = _shape_mismatch(tensors, expected)
            if why:
                self._discard(key, f"does not hold the expected tensors ({why})")
                return None
        if require_finite:
            bad = [n for n, t in tensors.items() if t.is_floating_point() and not bool(torch.isfinite(t).all())]
            if bad:
                self._discard(key, f"holds non-finite values in {', '.join(sorted(bad)[:3])}")
                return None
        return tensors

    def put_tensors(self, key: str, tensors: dict[str, torch.Tensor]) -> None:
        self.put_bytes(key, save_safetensors({k: v.detach().cpu().contiguous() for k, v in tensors.items()}))

    def get_responses(self, key: str, validate: Validator | None = None) -> Responses | None:
        """The Responses under ``key``; None if absent, malformed or rejected by ``validate``
        (e.g. a check of the number of records)."""
        data = self.get_bytes(key)
        if data is None:
            return None
        try:
            responses = Responses.from_bytes(data)
        except Exception:  # numpy/zipfile raise several types for a malformed archive
            self._discard(key, "is not a valid Responses archive")
            return None
        return responses if self._accepted(key, responses, validate) else None

    def put_responses(self, key: str, responses: Responses) -> None:
        self.put_bytes(key, responses.to_bytes())

    # ------------------------------------------------------------------ discarding
    def _accepted(self, key: str, value: Any, validate: Validator | None) -> bool:
        if validate is None:
            return True
        try:
            ok = validate(value)
        except Exception as exc:  # a validator says "wrong schema" by raising anything
            self._discard(key, f"does not match its schema ({type(exc).__name__}: {exc})")
            return False
        if ok is False:
            self._discard(key, "does not match its schema")
            return False
        return True

    def keys(self, prefix: str = "") -> list[str]:
        """Keys of the stored entries starting with ``prefix`` (keys are strings only: never unpickled)."""
        store = self._reader()
        if store is None:
            return []
        try:
            # plain SQL over the rows whose key is stored raw (a str); diskcache's iterkeys would
            # stop at the first pickled key (refused by SafeDisk), hiding every entry after it
            if isinstance(store, _ReadOnlyStore):
                rows = store.raw_keys()
            else:
                rows = [r[0] for r in store._sql("SELECT key FROM Cache WHERE raw = 1 ORDER BY rowid").fetchall()]
        except sqlite3.Error as exc:
            log.warning("could not list the cache's keys: %s", exc)
            return []
        return [k for k in rows if isinstance(k, str) and k.startswith(prefix)]

    def discard(self, key: str, why: str) -> None:
        """Delete ``key`` and report it in ``corrupted``: for entries whose content a caller found
        not to be what the key promises (e.g. a fitted attack that does not load)."""
        self._discard(key, why)

    def _discard(self, key: str, why: str) -> None:
        self.corrupted.append(key)
        try:
            store = self._reader()
        except (OSError, sqlite3.DatabaseError) as exc:  # an unusable database: nothing to delete from
            log.warning("cache entry %r %s; the cache database is unusable (%s)", key, why, exc)
            return
        if isinstance(store, _ReadOnlyStore):
            log.warning("cache entry %r %s; ignoring it (the cache is read-only)", key, why)
            return
        log.warning("cache entry %r %s; discarding it and recomputing", key, why)
        try:
            if store is not None and not _forget_shared_row(store, key):
                store.delete(key, retry=True)
        except (OSError, sqlite3.DatabaseError) as exc:  # an unusable database: nothing to delete from
            log.warning("could not delete cache entry %r: %s", key, exc)

    def clear(self) -> None:
        store = self._reader()
        if store is not None:
            store.clear(retry=True)

    def close(self) -> None:
        if self._opened is not None:
            self._opened.close()
            self._opened = None


def _disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or the user's quota) is full: ENOSPC/EDQUOT from a file write,
    or SQLite's SQLITE_FULL ("database or disk is full")."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(exc)


def _check_key(key: Any) -> None:
    if type(key) is not str:
        raise TypeError(f"cache keys must be str, got {type(key).__name__}")


def _shape_mismatch(tensors: Mapping[str, torch.Tensor], expected: Mapping[str, tuple[int, ...]]) -> str:
    """Why ``tensors`` differ from ``expected`` names and shapes ("" when they match)."""
    missing = sorted(set(expected) - set(tensors))
    extra = sorted(set(tensors) - set(expected))
    if missing or extra:
        parts = [f"missing {', '.join(missing[:3])}" if missing else "", f"unexpected {', '.join(extra[:3])}" if extra else ""]
        return "; ".join(p for p in parts if p)
    for name, shape in expected.items():
        if tuple(tensors[name].shape) != tuple(shape):
            return f"{name} has shape {tuple(tensors[name].shape)}, expected {tuple(shape)}"
    return ""


def _forget_shared_row(store: diskcache.Cache, key: str) -> bool:
    """Delete ``key``'s row but not its value file when another row names the same file (a row
    copied to another key): deleting the file would destroy the intact original too. True if
    done so; False leaves the ordinary delete (row and file) to the caller."""
    row = store._sql("SELECT filename FROM Cache WHERE key = ? AND raw = 1", (key,)).fetchone()
    if row is None or row[0] is None:
        return False
    (sharing,) = store._sql("SELECT COUNT(*) FROM Cache WHERE filename = ?", (row[0],)).fetchone()
    if sharing < 2:
        return False
    with store.transact(retry=True):
        store._sql("DELETE FROM Cache WHERE key = ? AND raw = 1", (key,))
    return True


def _writable(directory: Path, db: Path) -> bool:
    return os.access(directory, os.W_OK | os.X_OK) and os.access(db, os.W_OK)


def _nearest_existing(path: Path) -> Path | None:
    for p in [path, *path.parents]:
        if os.path.lexists(p):
            return p
    return None


def _connect_read_only(db: Path) -> sqlite3.Connection:
    """A read-only connection that writes nothing, not even WAL side files: ``mode=ro`` where the
    folder allows it, else ``immutable=1`` (a read-only folder cannot hold the ``-shm`` file)."""
    uri = f"file:{db.as_posix()}?mode=ro"
    if not os.access(db.parent, os.W_OK):
        uri += "&immutable=1"
    return sqlite3.connect(uri, uri=True, timeout=60, isolation_level=None)


class _ReadOnlyStore:
    """The reads :class:`ArtifactCache` needs from a cache it cannot write: ``get`` and keys, by
    plain SQL on diskcache's table, values through the same checks as :class:`SafeDisk`."""

    def __init__(self, directory: Path):
        self.directory = directory
        self._con = _connect_read_only(directory / DB_NAME)

    def get(self, key: str, default: Any = None, retry: bool = True) -> Any:
        row = self._con.execute(
            "SELECT mode, filename, value, expire_time FROM Cache WHERE key = ? AND raw = 1", (key,)).fetchone()
        if row is None:  # (pickled keys, raw = 0, are never compared: that would unpickle them)
            return default
        mode, filename, value, _ = row
        if mode not in (MODE_RAW, MODE_BINARY):
            kind = "pickle" if mode == MODE_PICKLE else f"mode {mode}"
            raise UnsafeCacheEntryError(f"cache row is stored as {kind}; refusing to read it")
        if mode == MODE_RAW:
            return bytes(value) if isinstance(value, (bytes, memoryview)) else value
        return read_value_file(str(self.directory), filename)

    def __contains__(self, key: str) -> bool:
        return self._con.execute("SELECT 1 FROM Cache WHERE key = ? AND raw = 1", (key,)).fetchone() is not None

    def raw_keys(self) -> list[str]:
        return [r[0] for r in self._con.execute("SELECT key FROM Cache WHERE raw = 1 ORDER BY rowid").fetchall()]

    def clear(self, retry: bool = True) -> None:
        raise CacheUnusableError(f"the cache folder {str(self.directory)!r} is read-only")

    def close(self) -> None:
        self._con.close()
