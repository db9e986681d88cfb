"""Writing result files safely: checked before the work, written atomically after it.

Why: a CLI run can take minutes to hours. An ``--out`` into a missing folder or an unwritable
place used to fail only at the very end (a FileNotFoundError traceback, the results lost), and
an interrupted write left half a JSON file that later readers choke on. :func:`check_out_path`
runs before any work; :func:`write_json_atomically` writes a temporary file next to the target
and renames it into place, so the target is either the old file or the complete new one.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .errors import OutputPathError


def check_out_path(path: str | os.PathLike) -> Path:
    """The absolute path of an output file that can be written; raise before any work if not.

    Checks that the folder exists and is a folder, that the path is not itself a folder, and
    that a file can really be created in the folder (by creating and removing a temporary one:
    permission bits alone do not tell, e.g. for root or on read-only mounts).

    Raises:
        OutputPathError: with a one-line message saying what to fix.
    """
    text = os.fspath(path)
    if not text or "\x00" in text:
        raise OutputPathError(f"--out {text!r} is not a valid file name")
    target = Path(text).expanduser().absolute()
    folder = target.parent
    if not folder.exists():
        raise OutputPathError(f"cannot write {str(target)!r}: the folder {str(folder)!r} does not exist (create it first)")
    if not folder.is_dir():
        raise OutputPathError(f"cannot write {str(target)!r}: {str(folder)!r} is not a folder")
    if target.is_dir():
        raise OutputPathError(f"cannot write {str(target)!r}: it is a folder; give a file name")
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".probe")
    except OSError as exc:
        raise OutputPathError(f"cannot create a file in {str(folder)!r}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(probe)
    return target


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and ``os.replace``.

    Raises:
        OutputPathError: the folder vanished or became unwritable, or the disk is full.
    """
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    except OSError as exc:
        raise OutputPathError(f"cannot write {str(target)!r}: {exc.strerror or exc}") from None
    try:
        # mkstemp makes the file private (0600); give it the mode a plain open() would have
        os.fchmod(fd, target.stat().st_mode & 0o777 if target.exists() else 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OutputPathError(f"cannot write {str(target)!r}: {exc.strerror or exc}") from None
        raise


def write_json_atomically(path: str | os.PathLike, obj: Any, indent: int | None = 2) -> None:
    """``json.dumps(obj)`` (plus a newline) written atomically to ``path``."""
    write_text_atomically(path, json.dumps(obj, indent=indent) + "\n")
