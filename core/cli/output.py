"""What the CLI writes, in one place: a command's JSON with its envelope to ``--out`` or on stdout
(:func:`write_result`, the only way a command writes JSON), the ``--out`` paths checked before any work
(:func:`out_path`, :func:`out_folder`), and stdout's own failures as one line (:func:`emit_json`).

Light like every module of :mod:`core.cli`: no torch."""
from __future__ import annotations

import errno
import json
import sys
from pathlib import Path
from typing import Any

from core.foundations.errors import OutputPathError
from core.foundations.fileio import check_out_path, show_path, write_json_atomically
from core.foundations.version import stamped


def emit_json(obj: Any) -> None:
    """Print ``obj`` as JSON on stdout and flush, so that a full disk or a closed stdout is reported
    here (one line) rather than as "Exception ignored" when Python exits."""
    try:
        print(json.dumps(obj, indent=2))
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
        reason = f"the disk is full ({exc.strerror})" if full else (exc.strerror or str(exc))
        raise OutputPathError(f"cannot write the JSON to stdout: {reason}") from None


def write_result(out: Path | None, obj: Any, schema: str) -> None:
    """``obj`` with its envelope (:func:`core.foundations.version.stamped`: layout ``schema`` and the package
    version) written to ``out``, or printed on stdout where ``out`` is None."""
    stamped_obj = stamped(obj, schema)
    if out is not None:
        write_json_atomically(out, stamped_obj)
    else:
        emit_json(stamped_obj)


def out_path(text: str | None) -> Path | None:
    """The checked output file of an ``--out``-like option (:func:`core.foundations.fileio.check_out_path`: writable,
    a regular file or missing), before any work; None where the option was not given (stdout)."""
    return check_out_path(text) if text is not None else None


def out_folder(text: str, create: bool = True) -> Path:
    """The folder ``analyze --out DIR`` writes into, created (with its parents) if missing, as
    users expect of an output folder (``create=False``: only checked). A path that exists and is
    not a folder — a file, a device, or a symbolic link (even to a folder: the files would land
    where the link points) — is an :class:`OutputPathError`, as is one that cannot be created."""
    if not text or not text.strip() or "\x00" in text:
        raise OutputPathError(f"--out {show_path(text)} is not a valid folder name")
    try:
        folder = Path(text).expanduser().absolute()
    except RuntimeError:  # "~nosuchuser/dir"
        raise OutputPathError(f"cannot write into {show_path(text)}: no such user's home directory") from None
    try:
        if folder.is_symlink():
            raise OutputPathError(f"--out {show_path(text)} is a symbolic link; give a folder (links are not followed)")
        if folder.exists() and not folder.is_dir():
            raise OutputPathError(f"--out {show_path(text)} exists and is not a folder; give a folder (it is created if missing)")
    except OutputPathError:
        raise
    except OSError as exc:  # a name longer than the system allows, …
        raise OutputPathError(f"--out {show_path(text)}: {exc.strerror or exc}") from None
    if not create:
        return folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputPathError(f"cannot create the folder {show_path(text)}: {exc.strerror or exc}") from None
    return folder
