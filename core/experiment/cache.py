"""On-disk cache of trained weights, Responses and results (diskcache-backed).

Safety and integrity:
* Nothing read from the cache is ever unpickled. diskcache unpickles rows stored in "pickle" mode, and anyone
  who can write the folder could plant one, so the store (:class:`~core.experiment.cache_store.SafeDisk`)
  refuses such rows *before any byte is deserialised*: only ``str`` keys and ``bytes`` values go in, only raw
  or binary rows come out. A refused row is reported (``corrupted`` / the logger), deleted and treated as a miss.
* Weights are safetensors, Responses ``.npz`` read with ``allow_pickle=False``, results JSON.
* Every value is stored as ``MAGIC + sha256(payload) + payload``; a digest mismatch is discarded the same way.
* The typed getters check an entry is what its key claims (a ``validate`` hook, or the expected tensor names
  and shapes); one that fails is discarded the same way.
* diskcache commits an entry in one SQLite transaction after its file is written: no half entries.
* The folder is created only when something is first stored; reading a missing cache answers "miss".

The folder is ``cache/`` at the repository root unless ``MIA_CACHE_DIR`` names another.
"""
from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import sqlite3
from pathlib import Path
from typing import Any, Callable, Mapping

import diskcache
import torch
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from core.experiment.cache_store import (
    DB_NAME,
    MIN_FILE_SIZE,
    ReadOnlyStore,
    SafeDisk,
    connect_read_only,
    forget_shared_row,
    nearest_existing,
    writable,
)
from core.foundations.config import CACHE_SCHEMA_VERSION
from core.foundations.errors import CacheCorruptionError, CacheUnusableError, UnsafeCacheEntryError
from core.foundations.paths import cache_dir
from core.measurement.responses import Responses

log = logging.getLogger(__name__)

#: Revision of a kind of entry whose stored values changed meaning while the configs' hashes did not: its keys
#: become ``v<schema>.<revision>/<kind>/…``, so an older entry is never read (nor listed) and is recomputed from
#: the cached models. Raise it whenever a kind's numbers change, even by rounding.
KIND_REVISIONS = {"result": 3,
                  "defended": 1, "defended_fast": 1, "defended_fast_noquantile": 1, "defended_fast_noregistry": 1}

#: format tag of a wrapped value (version 2: the key is bound into the digest)
_MAGIC = b"MIAX2"
_DIGEST = 32

#: A validation hook: raises (any exception) or returns False when a value is not what its key
#: claims; returning anything else (None, True) accepts it.
Validator = Callable[[Any], object]


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
        self._opened: diskcache.Cache | ReadOnlyStore | None = None
        #: keys of entries found corrupted (and discarded) during this object's life
        self.corrupted: list[str] = []

    @staticmethod
    def key(kind: str, digest: str, *parts: object) -> str:
        """``v<schema>/<kind>/<digest>/<parts...>`` (``v<schema>.<revision>/…`` for a kind in :data:`KIND_REVISIONS`)."""
        revision = KIND_REVISIONS.get(kind)
        version = f"v{CACHE_SCHEMA_VERSION}" if revision is None else f"v{CACHE_SCHEMA_VERSION}.{revision}"
        return "/".join([version, kind, digest, *map(str, parts)])

    # ------------------------------------------------------------------ the store, opened lazily
    def _open(self) -> "diskcache.Cache | ReadOnlyStore":
        if self._opened is None:
            db = self.directory / DB_NAME
            if db.is_file() and not writable(self.directory, db):
                # diskcache writes on every read (LRU bookkeeping) and would fail each one as
                # "unreadable": a read-only cache is read through plain SQL instead
                self._opened = ReadOnlyStore(self.directory)
            else:
                self._opened = diskcache.Cache(
                    str(self.directory), disk=SafeDisk, size_limit=2**34, eviction_policy="least-recently-used",
                    disk_min_file_size=MIN_FILE_SIZE, disk_pickle_protocol=0,
                )
        return self._opened

    def _reader(self) -> "diskcache.Cache | ReadOnlyStore | None":
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
        return isinstance(self._opened, ReadOnlyStore) or (db.is_file() and not writable(self.directory, db))

    def check_usable(self, write: bool = False) -> None:
        """Raise :class:`CacheUnusableError` (one line, saying what to do) unless the cache folder
        can serve reads and, with ``write``, store: run it *before* work whose results must be stored.

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
                parent = nearest_existing(self.directory)
                if parent is None or not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
                    raise CacheUnusableError(f"the cache folder {where!r} cannot be created (check MIA_CACHE_DIR)")
            return
        db = self.directory / DB_NAME
        if os.path.lexists(db):
            if db.is_symlink() or not db.is_file():
                raise CacheUnusableError(f"{str(db)!r} is not a regular file; move it away or run `make clean-cache`")
            try:
                with connect_read_only(db) as con:
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
            if isinstance(store, ReadOnlyStore):
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
        if isinstance(store, ReadOnlyStore):
            log.warning("cache entry %r %s; ignoring it (the cache is read-only)", key, why)
            return
        log.warning("cache entry %r %s; discarding it and recomputing", key, why)
        try:
            if store is not None and not forget_shared_row(store, key):
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
