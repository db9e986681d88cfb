"""Writing result files safely: checked before the work, written atomically after it.

A CLI run can take hours: :func:`check_out_path` refuses an unwritable ``--out`` before any work, and
:func:`write_json_atomically` writes a temporary file next to the target and renames it into place, so
the target is either the old file or the complete new one, never half a JSON file.

**Only regular files are written.** The rename replaces the directory entry it lands on, whatever
that entry is: ``--out /dev/stdout`` would replace the device node by a regular file (as root,
breaking the system's ``/dev/stdout``), and ``--out link`` would replace a symbolic link by a file
instead of writing where it points. Neither is what the user meant, and writing *through* a link
or a device without the rename would lose the atomicity. So a target that exists and is not a
regular file — a symbolic link (to anything, even a regular file), a device, a FIFO, a socket —
is refused with one line before any work, and :func:`write_text_atomically` checks again, without
following links, just before the rename: a link or node planted at the target during the run is
refused, never followed or replaced. Other failures are :class:`~core.foundations.errors.OutputPathError`
with a one-line message.
"""
from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
import tomllib
from pathlib import Path
from typing import Any, Callable

from core.foundations.errors import ConfigError, OutputPathError

#: temporary files in the target's folder start with this (short, so a long target name that the
#: file system accepts does not make the temporary name too long)
TMP_PREFIX = ".mia-out."


def show_path(path: str | os.PathLike) -> str:
    """A path for a one-line message: quoted, and cut in the middle when very long."""
    text = os.fspath(path)
    if len(text) > 120:
        text = text[:60] + "…" + text[-50:]
    return repr(text)


def _kind(mode: int) -> str:
    """What a non-regular file is, in words, from its ``st_mode``."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def refuse_non_regular(target: Path) -> None:
    """Raise :class:`OutputPathError` if ``target`` exists and is not a regular file (the link
    itself is looked at, not what it points to); a missing target is fine."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputPathError(f"cannot write {show_path(target)}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        what = _kind(mode)
        hint = "give a file name" if what == "a folder" else "give a regular file (or leave --out out for stdout)"
        raise OutputPathError(f"cannot write {show_path(target)}: it is {what}; only regular files are written, {hint}")


def _name_max(folder: Path) -> int:
    """The longest file name (bytes) the folder's file system takes (255 where it does not say)."""
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def check_out_path(path: str | os.PathLike) -> Path:
    """The absolute path of an output file that can be written; raise before any work if not.

    Checks that the name is not empty and expands (``~user`` of an existing user), that the
    folder exists and is a folder, that the file name fits the file system's limit, that the
    target is missing or a regular file (not a link, device, FIFO, socket or folder: module
    docstring), and that a file can really be created in the folder (by creating and removing a
    temporary one: permission bits alone do not tell, e.g. for root or on read-only mounts).

    Raises:
        OutputPathError: with a one-line message saying what to fix.
    """
    text = os.fspath(path)
    if not text or not text.strip() or "\x00" in text:
        raise OutputPathError(f"--out {show_path(text)} is not a valid file name")
    try:
        target = Path(text).expanduser().absolute()
    except RuntimeError:  # "~nosuchuser/r.json"
        raise OutputPathError(f"cannot write {show_path(text)}: no such user's home directory") from None
    if text.endswith(os.sep) or target.name in ("", ".", ".."):
        raise OutputPathError(f"cannot write {show_path(text)}: it names a folder; give a file name")
    folder = target.parent
    try:
        if not folder.exists():
            raise OutputPathError(f"cannot write {show_path(target)}: the folder {show_path(folder)} does not exist (create it first)")
        if not folder.is_dir():
            raise OutputPathError(f"cannot write {show_path(target)}: {show_path(folder)} is not a folder")
    except OSError as exc:  # a path longer than the system allows, a component that is a file, …
        if isinstance(exc, OutputPathError):
            raise
        raise OutputPathError(f"cannot write {show_path(text)}: {exc.strerror or exc}") from None
    limit = _name_max(folder)
    if len(os.fsencode(target.name)) > limit:
        raise OutputPathError(f"cannot write {show_path(target)}: the file name is longer than the "
                              f"{limit} bytes this file system allows")
    refuse_non_regular(target)
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=TMP_PREFIX, suffix=".probe")
    except OSError as exc:
        raise OutputPathError(f"cannot create a file in {show_path(folder)}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(probe)
    return target


class NotRegularFileError(OSError):
    """An opened path is a folder, a FIFO, a device or a socket: :func:`read_opened_file` refuses it."""


class FileTooLargeError(OSError):
    """A file holds more than the reader's cap (``size``: its size when known before reading; None when it
    grew past the cap while being read)."""

    def __init__(self, size: int | None) -> None:
        super().__init__(f"larger than the cap ({size:,} bytes)" if size is not None else "grew past the cap")
        self.size = size


def read_opened_file(fd: int, limit: int) -> bytes:
    """The bytes of the open file ``fd``, at most ``limit`` of them; ``fd`` is closed here.

    The readers of files a user names (member lists, weights, score files, images) open without following
    links and then call this: ``fstat`` first, so a folder, FIFO or device is refused before a read could
    block, and a file over ``limit`` before a byte is read; one byte past ``limit`` is read to notice a file
    that grew meanwhile. Each reader turns the exceptions into its own one-line message.

    Raises:
        NotRegularFileError, FileTooLargeError, OSError (the read failed).
    """
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFileError(f"not a regular file ({_kind(info.st_mode)})")
        if info.st_size > limit:
            raise FileTooLargeError(info.st_size)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise FileTooLargeError(None)
    return b"".join(chunks)


def read_capped(fd: int, limit: int, error: Callable[[str], Exception], name: str, read_errors: bool = True) -> bytes:
    """:func:`read_opened_file`, each refusal one line ``error(message)`` naming the file as ``name``: the one
    wording of "not a regular file" and "over the cap" for every capped reader (user files, score files,
    images, CIFAR-10 batches, the cache's value files), each raising its own class. ``read_errors=False``: an
    OSError of the read itself propagates unchanged (the cache's reader: diskcache takes it as a vanished value)."""
    try:
        return read_opened_file(fd, limit)
    except NotRegularFileError:
        raise error(f"{name} is not a regular file") from None
    except FileTooLargeError as exc:
        held = f"{exc.size:,} bytes" if exc.size is not None else "more bytes"  # None: it grew while being read
        raise error(f"{name} holds {held}; at most {limit:,} are read") from None
    except OSError as exc:
        if not read_errors:
            raise
        raise error(f"{name} cannot be read: {exc.strerror or exc}") from None


def read_named_file(path: str | os.PathLike, limit: int, error: Callable[[str], Exception], name: str) -> bytes:
    """The bytes of the file at ``path`` (:func:`read_capped`), opened without following a link in its last
    component (a link is refused) and without blocking on a FIFO; every failure one line ``error(message)``
    naming the file as ``name`` (no such file, a link, unreadable, not a regular file, over ``limit``)."""
    try:
        # O_NOFOLLOW: a link is refused, not followed; O_NONBLOCK: a FIFO does not hang the open
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise error(f"{name}: no such file") from None
    except OSError as exc:
        if os.path.islink(path):
            raise error(f"{name} is a symbolic link; links are not followed: give the file itself") from None
        raise error(f"{name} cannot be read: {exc.strerror or exc}") from None
    return read_capped(fd, limit, error, name)


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and ``os.replace``;
    refuses (without following) a target that is, or became, anything but a regular file.

    Raises:
        OutputPathError: the target is not a regular file, the folder vanished or became
            unwritable, or the disk is full (the temporary file is removed).
    """
    target = Path(path)
    refuse_non_regular(target)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=TMP_PREFIX, suffix=".part")
    except OSError as exc:
        raise OutputPathError(f"cannot write {show_path(target)}: {exc.strerror or exc}") from None
    try:
        try:  # mkstemp makes the file private (0600); give it the mode a plain open() would have
            mode = os.lstat(target).st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
        os.fchmod(fd, mode)
        data = text.encode("utf-8")
        view = memoryview(data)
        while view:  # os.write may write less than asked
            view = view[os.write(fd, view):]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        # the last look before the rename: a link or node planted during the run is refused,
        # never replaced (rename itself does not follow links, it would replace the entry)
        refuse_non_regular(target)
        os.replace(tmp, target)
    except BaseException as exc:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OutputPathError):
            raise
        if isinstance(exc, OSError):
            full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
            reason = f"the disk is full ({exc.strerror})" if full else (exc.strerror or str(exc))
            raise OutputPathError(f"cannot write {show_path(target)}: {reason}") from None
        raise


def write_json_atomically(path: str | os.PathLike, obj: Any) -> None:
    """``json.dumps(obj, indent=2)`` (plus a newline) written atomically to ``path``."""
    write_text_atomically(path, json.dumps(obj, indent=2) + "\n")


def read_document(payload: bytes, name: str, what: str, limit: int) -> Any:
    """A small declared document (a preprocessing, a recipe) from its bytes: JSON where ``name`` ends in ``.json``,
    else TOML; at most ``limit`` bytes. Anything else is one :class:`ConfigError` line naming ``what`` and ``name``."""
    if len(payload) > limit:
        raise ConfigError(f"{what} {name!r} is larger than {limit // 1024} KiB")
    is_json = name.lower().endswith(".json")
    try:
        text = payload.decode("utf-8-sig")
        return json.loads(text) if is_json else tomllib.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        reason = " ".join(str(exc).split())[:120]
        raise ConfigError(f"{what} {name!r} is not valid {'JSON' if is_json else 'TOML'}: {reason}") from None
