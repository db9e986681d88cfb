"""A user's trained model as an experiment's victim: the two files it is named by.

``--set target_weights=FILE.safetensors --set members=FILE.txt`` makes the victim the user's model,
loaded instead of trained. The config names the files by path, but an experiment is what the files
*hold*: :func:`bind_user_files` reads both (once, when the config is made) and puts the sha256 of
their bytes into the config (``target_weights_sha256``, ``members_sha256``); the hashes, not the
paths, enter the config hash, so a changed file is another experiment and a moved one the same.
Whoever reads a file again later (the victim's weights, the member list) checks its bytes against
the hash the config holds (:func:`read_bound_file`).

Nothing read is trusted (the app passes what was typed in a browser): both files must lie under the
data root (:mod:`core.foundations.paths`; ``MIA_DATA_ROOT=/`` lifts it), no component of the path
may be a symbolic link, the file must be a regular file no larger than its cap, and the member list
must be UTF-8 text with one record id per line and no id twice. Each failure is one
:class:`~core.foundations.errors.ConfigError` line, before any data is loaded or model trained.
"""
from __future__ import annotations

import hashlib
import os
import secrets
import stat
from pathlib import Path
from typing import Any

from core.foundations.errors import ConfigError
from core.foundations.fileio import read_named_file
from core.foundations.paths import DATA_ROOT_ENV, MAX_PATH_CHARS, data_root, refuse_hidden

#: largest weights file read (bytes): far above the presets' models (the paper presets' largest is a few MB)
MAX_WEIGHTS_BYTES = 256 * 2**20
#: largest member list read (bytes): CIFAR-10's 50,000 indices take 300 kB, relative image paths a few MB
MAX_MEMBERS_BYTES = 32 * 2**20
#: longest record id (one line of the member list), in characters
MAX_ID_CHARS = 4096


def user_file_path(text: str, what: str) -> Path:
    """The absolute path ``text`` names (``~`` expanded, relative to the data root), if it lies under
    the data root and no component of it is a symbolic link.

    Raises:
        ConfigError: empty, too long, a NUL byte, outside the data root, or through a link.
    """
    text = (text or "").strip()
    if not text:
        raise ConfigError(f"{what}: no file named")
    if len(text) > MAX_PATH_CHARS or "\x00" in text:
        raise ConfigError(f"{what} must be a path of at most {MAX_PATH_CHARS} characters without NUL bytes")
    root = data_root()
    try:
        path = Path(text).expanduser()
    except RuntimeError:  # "~nobody/x"
        raise ConfigError(f"{what} {text!r}: no such home directory") from None
    path = Path(os.path.normpath(path if path.is_absolute() else root / path))
    if not path.is_relative_to(root):
        # the root itself may be a link (a home under /home -> /data/home, /tmp -> /private/tmp):
        # a path through the root as configured names the same file; only that one link is followed
        for alias in _root_aliases():
            if path.is_relative_to(alias):
                path = root / path.relative_to(alias)
                break
    if not path.is_relative_to(root):
        raise ConfigError(f"{what} {text!r} lies outside the data root {str(root)!r}: put the file under it, "
                          f"or set {DATA_ROOT_ENV} to a folder that holds it")
    refuse_hidden(path, root, f"{what} {text!r}")
    # links are not followed: a link inside the root could lead anywhere, and what the config's hash
    # binds must be the file the path names
    probe = root
    for part in path.relative_to(root).parts:
        probe = probe / part
        try:
            linked = stat.S_ISLNK(os.lstat(probe).st_mode)
        except FileNotFoundError:
            break  # what is missing is said when the file is opened
        except OSError as exc:  # a name too long for the file system, a folder without permission, …
            raise ConfigError(f"{what} {text!r} cannot be read: {exc.strerror or exc}") from None
        if linked:
            raise ConfigError(f"{what} {text!r} passes through the symbolic link {str(probe)!r}: name the file itself")
    return path


def _root_aliases() -> list[Path]:
    """The data root as configured, before its links were resolved (``$MIA_DATA_ROOT``, else the home
    directory), absolute and normalised; empty where it cannot be told."""
    configured = os.environ.get(DATA_ROOT_ENV, "").strip()
    try:
        alias = Path(configured).expanduser() if configured else Path.home()
    except (RuntimeError, OSError, ValueError):
        return []
    return [Path(os.path.normpath(alias.absolute()))]


def read_user_file(text: str, what: str, limit: int) -> bytes:
    """The bytes of the regular file ``text`` names (:func:`user_file_path`), at most ``limit`` of them.

    Raises:
        ConfigError: not found, not a regular file (a folder, a FIFO, a device), larger than
            ``limit``, or unreadable.
    """
    return read_named_file(user_file_path(text, what), limit, ConfigError, f"{what} {text!r}")


def sha256_hex(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()


def read_bound_file(text: str, what: str, limit: int, digest: str) -> bytes:
    """:func:`read_user_file`, and the bytes must be the ones the config's ``digest`` names.

    Raises:
        ConfigError: as :func:`read_user_file`, or the file changed since the config was made.
    """
    payload = read_user_file(text, what, limit)
    actual = sha256_hex(payload)
    if actual != digest:
        raise ConfigError(f"{what} {text!r} changed since this experiment was set up (its sha256 is now "
                          f"{actual[:12]}…, the experiment's is {digest[:12]}…): start the run again to audit the new file")
    return payload


def parse_member_ids(payload: bytes, what: str = "members") -> tuple[str, ...]:
    """The record ids of a member list: UTF-8 text (a byte-order mark skipped), one id a line (``\\n``,
    ``\\r\\n`` or ``\\r`` ends a line; surrounding blanks removed, blank lines skipped), in file order.

    Raises:
        ConfigError: not UTF-8, no id, an id longer than :data:`MAX_ID_CHARS`, or an id twice.
    """
    try:
        text = payload.decode("utf-8-sig")  # a byte-order mark (Windows Notepad) is no part of the first id
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what}: not UTF-8 text (byte {exc.start}); one record id a line") from None
    ids: list[str] = []
    first_line: dict[str, int] = {}
    # line ends: \n, \r\n and a lone \r (old Mac editors)
    for number, line in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), start=1):
        record = line.strip()
        if not record:
            continue
        if len(record) > MAX_ID_CHARS or "\x00" in record:
            raise ConfigError(f"{what}: line {number} is not a record id (over {MAX_ID_CHARS} characters or a NUL byte)")
        if record in first_line:
            raise ConfigError(f"{what}: record id {record[:60]!r} is listed twice (lines {first_line[record]} and {number})")
        first_line[record] = number
        ids.append(record)
    if not ids:
        raise ConfigError(f"{what}: the member list names no record")
    return tuple(ids)


def bind_user_files(cfg: Any, given: frozenset[str] | set[str] = frozenset()) -> Any:
    """``cfg`` with the sha256 of its user files filled in, read now where missing.

    A config naming no user file comes back unchanged. Otherwise both files must be named; a file
    whose hash the config already holds (a config rebuilt from a summary or a job) is not read
    here — its bytes are checked against the hash when it is read. Where the member list is read,
    the fields the user did not set (``given``: the keys of the overrides) follow it: ``n_train``
    (the shadows' training-set size) becomes the number of members, ``n_eval`` at most that, and
    ``attack_epochs`` empty (a loaded model has its final weights only).

    Raises:
        ConfigError: one file without the other, or a file refused by :func:`read_user_file` /
            :func:`parse_member_ids`.
    """
    weights, members = cfg.target_weights, cfg.members
    if not weights and not members:
        return cfg
    if not weights or not members:
        raise ConfigError("target_weights and members go together: the weights of your trained model and the list "
                          "of the records it trained on (one record id a line)")
    updates: dict[str, Any] = {}
    if not cfg.target_weights_sha256:
        updates["target_weights_sha256"] = sha256_hex(read_user_file(weights, "target_weights", MAX_WEIGHTS_BYTES))
    if not cfg.members_sha256:
        payload = read_user_file(members, "members", MAX_MEMBERS_BYTES)
        n_members = len(parse_member_ids(payload))
        updates["members_sha256"] = sha256_hex(payload)
        if "n_train" not in given:
            updates["n_train"] = n_members
        if "n_eval" not in given:
            updates["n_eval"] = min(cfg.n_eval, n_members)
        if "attack_epochs" not in given:
            updates["attack_epochs"] = ()
    return cfg.with_updates(updates) if updates else cfg


# ---------------------------------------------------------------------------- files uploaded through the app
#: the folder under the data root where the app stores uploaded files (content-addressed names)
UPLOAD_FOLDER = "mia_uploads"
#: what an upload may be: kind → (file suffix, the most bytes kept)
UPLOAD_KINDS = {"weights": (".safetensors", MAX_WEIGHTS_BYTES), "members": (".txt", MAX_MEMBERS_BYTES),
                "scores_csv": (".csv", 64 * 2**20), "scores_npz": (".npz", 64 * 2**20)}
#: uploads kept at most (a server shared by a class must not fill its disk through the browser; each session holds
#: at most 20 of them and 1 GiB: ui.ownership)
MAX_UPLOADS = 1000


def upload_path(content: bytes, kind: str, root: str | os.PathLike | None = None) -> Path:
    """Where :func:`store_upload` keeps ``content`` of ``kind``: ``<data root>/mia_uploads/<sha256>[:32]<suffix>``."""
    if kind not in UPLOAD_KINDS:
        raise ConfigError(f"unknown upload kind {kind!r}; one of {', '.join(UPLOAD_KINDS)}")
    folder = (Path(root) if root is not None else data_root()) / UPLOAD_FOLDER
    return folder / (hashlib.sha256(content).hexdigest()[:32] + UPLOAD_KINDS[kind][0])


def store_upload(content: bytes, kind: str, root: str | os.PathLike | None = None) -> Path:
    """Keep an uploaded file's bytes under ``<data root>/mia_uploads/`` and return its path.

    The name is the content's sha256 plus the kind's suffix, never anything the browser sent, so an
    upload cannot choose where it lands; the same bytes land on the same file (a re-upload is free).
    The file is then read back like any user file (:func:`read_user_file`: confined, no links, capped)
    and its content is checked by the reader of its kind, as a file typed on the command line would be.

    Raises:
        ConfigError: an unknown kind, an empty or too large upload, a full upload folder, or a folder
            that cannot be written.
    """
    if kind not in UPLOAD_KINDS:
        raise ConfigError(f"unknown upload kind {kind!r}; one of {', '.join(UPLOAD_KINDS)}")
    suffix, limit = UPLOAD_KINDS[kind]
    if not content:
        raise ConfigError("the uploaded file is empty")
    if len(content) > limit:
        raise ConfigError(f"the uploaded file holds {len(content):,} bytes; at most {limit:,} are kept for {kind}")
    target = upload_path(content, kind, root)
    folder = target.parent
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        if folder.is_symlink() or not folder.is_dir():
            raise ConfigError(f"{folder} is not a folder the app can keep uploads in")
        if target.exists() and not target.is_symlink() and target.is_file():
            return target
        if sum(1 for _ in folder.iterdir()) >= MAX_UPLOADS:
            raise ConfigError(f"{folder} already holds {MAX_UPLOADS} uploads: remove old ones to upload more")
        # a name of this call alone: the app serves every session from one process, and two sessions
        # uploading the same bytes at once must not meet on one temporary file
        tmp = folder / f".{target.name}.{os.getpid()}.{secrets.token_hex(8)}.part"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(content)
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                tmp.unlink()
    except OSError as exc:
        raise ConfigError(f"the upload cannot be kept in {folder}: {exc.strerror or exc}") from None
    return target
