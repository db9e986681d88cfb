"""Inter-process locks per key, so one model is trained once across processes and sessions.

Two CLI runs (or an app server and a CLI run) sharing a cache should not both train the same
model: the second should wait for the first and then load its result from the cache. A lock
here is an exclusive ``fcntl.flock`` on a small file ``<cache>/locks/<sha256(key)>.lock``.

Why flock (stdlib, no dependency):

* the kernel releases it when the holder's file is closed, which includes every way a process
  ends: normal exit, an exception, Ctrl-C, ``kill -9``, an out-of-memory kill. A crashed holder
  therefore never blocks anyone, and no stale-lock cleanup is needed;
* it is per open file, so it also excludes two threads of one process that each hold their own
  :class:`KeyLock` (the app's job slots are threads of one server);
* a holder that is alive but stuck is bounded by the waiter's ``timeout``: after it, the waiter
  gets :class:`~core.foundations.errors.LockTimeoutError` (naming the holder's pid and how long it has held
  the lock) and decides — typically train anyway, since cache writes are atomic and a
  duplicate training is only wasted time.

Lock files are never deleted (deleting a file another process may be about to lock is racy);
they are a few bytes each. flock works on local file systems; on NFS it may be emulated or
unsupported, so keep the cache on a local disk.

Typical use in the pipeline (the second process waits, then finds the model in the cache)::

    with hold(f"train/{cfg.training_hash}/{role}", timeout=3600):
        model = load_from_cache() or train_and_store()
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import socket
import stat
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from core.foundations.errors import LockFileError, LockTimeoutError
from core.foundations.paths import cache_dir

#: seconds between attempts while waiting for a lock
POLL_S = 0.05
#: most bytes of a holder record read back (it is ~100 bytes; a planted big file is not read whole)
MAX_RECORD_BYTES = 4096


def lock_dir() -> Path:
    """Where lock files live: ``<cache folder>/locks`` (``$MIA_CACHE_DIR`` honoured)."""
    return cache_dir() / "locks"


class KeyLock:
    """An exclusive inter-process (and inter-thread) lock named by a string key.

    Args:
        key: any string; equal keys are the same lock everywhere on the machine.
        directory: folder of the lock files (default :func:`lock_dir`), created on first acquire.

    Not re-entrant: acquiring a lock the same object already holds raises ``RuntimeError``.
    """

    def __init__(self, key: str, directory: str | os.PathLike | None = None):
        if not isinstance(key, str) or not key:
            raise TypeError("a lock key must be a non-empty str")
        self.key = key
        self.directory = Path(directory) if directory is not None else lock_dir()
        self.path = self.directory / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".lock")
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock now."""
        return self._fd is not None

    def holder(self) -> dict[str, Any] | None:
        """What the current (or last) holder wrote: ``pid``, ``host``, ``since`` (epoch s), ``key``
        (read without following links, at most :data:`MAX_RECORD_BYTES`)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            text = os.pread(fd, MAX_RECORD_BYTES, 0).decode("utf-8", "replace")
            value = json.loads(text) if text.strip() else None
            return value if isinstance(value, dict) else None
        except (OSError, ValueError):
            return None
        finally:
            os.close(fd)

    def _open_lock_file(self) -> int:
        """The lock file, opened for writing without following a link anywhere we control.

        A link planted as ``locks/`` or as a lock file would otherwise make the next run truncate
        and overwrite the link's target with the holder record. ``O_NOFOLLOW`` refuses a link as
        the file, the folder is checked not to be a link, and anything but a regular file (a FIFO,
        a device) is refused after opening (``O_NONBLOCK``: a FIFO must not block the open).
        """
        if os.path.islink(self.directory):
            raise LockFileError(f"the lock folder {str(self.directory)!r} is a symbolic link; refusing to use it")
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise LockFileError(f"the lock file {str(self.path)!r} is a symbolic link; remove it") from None
            raise LockFileError(f"cannot open the lock file {str(self.path)!r}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise LockFileError(f"the lock file {str(self.path)!r} is not a regular file; remove it")
        return fd

    def acquire(self, timeout: float | None = None) -> None:
        """Block until the lock is held by this object; ``timeout``: seconds to wait at most (None: forever,
        0: one try).

        Raises:
            LockTimeoutError: still busy after ``timeout`` seconds.
        """
        if self._fd is not None:
            raise RuntimeError(f"lock {self.key!r} is already held by this object")
        fd = self._open_lock_file()
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    pass
                if deadline is not None and time.monotonic() >= deadline:
                    info = self.holder() or {}
                    who = f"process {info.get('pid', '?')} on {info.get('host', '?')}"
                    held = f" for {time.time() - info['since']:.0f} s" if isinstance(info.get("since"), (int, float)) else ""
                    raise LockTimeoutError(f"{who} has held the lock on {self.key!r}{held}; gave up after {timeout:g} s")
                time.sleep(POLL_S)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        record = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": time.time(), "key": self.key})
        os.ftruncate(fd, 0)
        os.pwrite(fd, record.encode(), 0)

    def release(self) -> None:
        """Release the lock (closing the file releases it in the kernel); a no-op if not held."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> "KeyLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:  # a forgotten lock must not outlive its object
        self.release()


@contextmanager
def hold(
    key: str,
    timeout: float | None = None,
    directory: str | os.PathLike | None = None,
) -> Iterator[KeyLock]:
    """``with hold(key, timeout): ...`` — acquire :class:`KeyLock` ``key``, release on exit.

    Raises:
        LockTimeoutError: the lock stayed busy for ``timeout`` seconds (nothing is held then).
    """
    lock = KeyLock(key, directory)
    lock.acquire(timeout=timeout)
    try:
        yield lock
    finally:
        lock.release()
