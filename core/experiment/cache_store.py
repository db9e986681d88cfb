"""The stores under :class:`core.experiment.cache.ArtifactCache`: they read and write the cache folder's bytes
and refuse what they must not touch.

* :class:`SafeDisk` — the diskcache ``Disk`` that never unpickles (str keys, bytes values; a pickled row is
  refused before a byte of it is read) and never touches a file outside the cache folder (value-file names
  checked, links not followed: :func:`read_value_file`).
* :class:`ReadOnlyStore` — reads from a folder the cache cannot write (diskcache writes on every read).
* :func:`forget_shared_row`, :func:`writable`, :func:`connect_read_only`, :func:`nearest_existing` — folder checks.
"""
from __future__ import annotations

import logging
import os
import re
import sqlite3
import stat
from pathlib import Path
from typing import Any

import diskcache
from diskcache.core import MODE_BINARY, MODE_PICKLE, MODE_RAW, UNKNOWN

from core.foundations.errors import CacheUnusableError, UnsafeCacheEntryError
from core.foundations.fileio import read_capped

log = logging.getLogger(__name__)

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
    return read_capped(fd, limit, UnsafeCacheEntryError, f"cache value file {filename!r}", read_errors=False)


def forget_shared_row(store: diskcache.Cache, key: str) -> bool:
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


def writable(directory: Path, db: Path) -> bool:
    return os.access(directory, os.W_OK | os.X_OK) and os.access(db, os.W_OK)


def nearest_existing(path: Path) -> Path | None:
    for p in [path, *path.parents]:
        if os.path.lexists(p):
            return p
    return None


def connect_read_only(db: Path) -> sqlite3.Connection:
    """A read-only connection that writes nothing, not even WAL side files: ``mode=ro`` where the
    folder allows it, else ``immutable=1`` (a read-only folder cannot hold the ``-shm`` file)."""
    uri = f"file:{db.as_posix()}?mode=ro"
    if not os.access(db.parent, os.W_OK):
        uri += "&immutable=1"
    return sqlite3.connect(uri, uri=True, timeout=60, isolation_level=None)


class ReadOnlyStore:
    """The reads :class:`ArtifactCache` needs from a cache it cannot write: ``get`` and keys, by
    plain SQL on diskcache's table, values through the same checks as :class:`SafeDisk`."""

    def __init__(self, directory: Path):
        self.directory = directory
        self._con = connect_read_only(directory / DB_NAME)

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
