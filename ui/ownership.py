"""What a browser session brought to a shared server and who may see it: its uploads and the runs made on a
user's data (a CSV, image folders, parallel text, a user's weights and member list).

The files themselves stay content-addressed and shared (:func:`core.foundations.user_files.store_upload`: the
same bytes are one file, and a computed number is the same for whoever asks), but a *listing* shows a session
only its own: :class:`UploadLedger` keeps which uploads each session made (and caps them per session), and
:class:`RunOwners` which sessions made which run on user data, kept in the cache folder so a restart does not
make a student's run public. Runs of the built-in data sets are everybody's. A run on user data that no session
made (the server account's own, e.g. from the command line) is listed to everybody; one whose record cannot be
read is listed to nobody but a lecturer (fail closed).
"""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Iterable, Mapping

from core.foundations.errors import ConfigError
from core.foundations.fileio import read_named_file, write_text_atomically

#: data sets that are a user's files, not a built-in data set (the Your model page's layouts)
USER_DATASETS = frozenset({"folder", "csv", "pairs"})
#: uploads one session may keep, and their bytes in all (the upload folder's own cap, for everybody, is MAX_UPLOADS
#: in core): a class of thirty fills neither the folder's cap nor the disk through one student
UPLOADS_PER_SESSION = 20
UPLOAD_BYTES_PER_SESSION = 1024 * 2**20
#: the record of who made which run on user data, in the cache folder
OWNERS_FILE = "run_owners.json"
#: largest owners record read (bytes)
MAX_OWNERS_BYTES = 8 * 2**20


def on_user_data(config: Mapping[str, Any]) -> bool:
    """Whether a run's config (a summary's ``config`` or ``ExperimentConfig.to_dict()``) reads a user's files."""
    return (config.get("dataset") in USER_DATASETS or bool(config.get("target_weights"))
            or bool(config.get("members")))


class RunOwners:
    """Which sessions made which run on user data (config hash → owner ids), kept in ``folder/run_owners.json``."""

    def __init__(self, folder: str | Path) -> None:
        self.path = Path(folder) / OWNERS_FILE
        self._lock = threading.Lock()
        self._owners: dict[str, set[str]] | None = None
        self.unreadable = False

    def _load(self) -> dict[str, set[str]]:
        if self._owners is not None:
            return self._owners
        owners: dict[str, set[str]] = {}
        if self.path.exists():
            try:
                data = json.loads(read_named_file(self.path, MAX_OWNERS_BYTES, ConfigError, str(self.path)))
                if not isinstance(data, dict) or not all(
                        isinstance(k, str) and isinstance(v, list) and all(isinstance(o, str) for o in v)
                        for k, v in data.items()):
                    raise ValueError("not a mapping of config hashes to owner lists")
                owners = {k: set(v) for k, v in data.items()}
            except (OSError, ValueError, ConfigError):
                self.unreadable = True  # listed to nobody but a lecturer until the record is fixed or removed
        self._owners = owners
        return owners

    def add(self, config_hashes: Iterable[str], owner: str) -> None:
        """Record ``owner`` as one who made each run (written through at once; an unwritable cache folder leaves
        the record in memory: the run stays private while the server runs)."""
        with self._lock:
            owners = self._load()
            changed = False
            for h in config_hashes:
                if owner not in owners.setdefault(h, set()):
                    owners[h].add(owner)
                    changed = True
            if changed and not self.unreadable:
                try:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    write_text_atomically(self.path, json.dumps({k: sorted(v) for k, v in owners.items()}))
                except (OSError, ConfigError, ValueError):
                    pass

    def visible(self, config: Mapping[str, Any], config_hash: str, owner: str | None, lecturer: bool) -> bool:
        """Whether a session (``owner``; None: the server itself) lists the run."""
        if lecturer or owner is None or not on_user_data(config):
            return True
        with self._lock:
            owners = self._load()
            if self.unreadable:
                return False
            made_by = owners.get(config_hash)
        return made_by is None or owner in made_by


class UploadLedger:
    """The uploads each session made (owner → paths), at most :data:`UPLOADS_PER_SESSION` each."""

    def __init__(self, per_session: int = UPLOADS_PER_SESSION, bytes_per_session: int = UPLOAD_BYTES_PER_SESSION
                 ) -> None:
        self.per_session, self.bytes_per_session = per_session, bytes_per_session
        self._lock = threading.Lock()
        self._by_owner: dict[str, set[str]] = {}
        self._bytes: dict[str, int] = {}

    def check_room(self, owner: str, path_if_kept: str | None = None, size: int = 0) -> None:
        """Raise :class:`ConfigError` when an upload of ``size`` bytes would take ``owner`` past its number of
        uploads or its bytes (a file it uploaded before costs nothing)."""
        with self._lock:
            mine = self._by_owner.get(owner, set())
            if path_if_kept in mine:
                return
            if len(mine) >= self.per_session:
                raise ConfigError(f"this session has uploaded {len(mine)} files, the most one session keeps; "
                                  "use one of them again")
            used = self._bytes.get(owner, 0)
            if used + size > self.bytes_per_session:
                raise ConfigError(f"this upload ({size / 2**20:,.1f} MiB) would take this session's uploads past "
                                  f"{self.bytes_per_session // 2**20:,} MiB in all ({used / 2**20:,.1f} MiB kept)")

    def add(self, owner: str, path: str, size: int = 0) -> None:
        with self._lock:
            mine = self._by_owner.setdefault(owner, set())
            if str(path) not in mine:
                mine.add(str(path))
                self._bytes[owner] = self._bytes.get(owner, 0) + size

    def owns(self, owner: str, path: str) -> bool:
        with self._lock:
            return str(path) in self._by_owner.get(owner, set())

    def of(self, owner: str) -> list[str]:
        """The session's uploads (sorted paths)."""
        with self._lock:
            return sorted(self._by_owner.get(owner, set()))
