"""On-disk cache of trained weights, Responses and results (diskcache-backed).

Safety and integrity:
* Only raw bytes go into diskcache, so reading an entry never unpickles anything. Weights are
  safetensors, Responses ``.npz`` read with ``allow_pickle=False``, results JSON.
* Every value is wrapped as ``MAGIC + sha256(payload) + payload``; a value whose digest does not
  match (truncated file, bit rot, a hand-edited entry) raises :class:`CacheCorruptionError`
  internally, is deleted, reported through ``corrupted`` / the logger, and treated as a miss so
  the caller recomputes it.
* diskcache commits an entry in one SQLite transaction after its file is fully written, so a
  crash mid-write leaves no half entry under the key.

The folder is ``cache/`` at the repository root unless ``MIA_CACHE_DIR`` names another.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import diskcache
import torch
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from .config import CACHE_SCHEMA_VERSION
from .errors import CacheCorruptionError
from .responses import Responses

log = logging.getLogger(__name__)

_MAGIC = b"MIAX1"
_DIGEST = 32
DEFAULT_DIR = Path(__file__).resolve().parent.parent / "cache"


def cache_dir() -> Path:
    """The cache folder: ``$MIA_CACHE_DIR`` or ``<repo>/cache``."""
    return Path(os.environ.get("MIA_CACHE_DIR") or DEFAULT_DIR)


def _wrap(payload: bytes) -> bytes:
    return _MAGIC + hashlib.sha256(payload).digest() + payload


def _unwrap(key: str, blob: Any) -> bytes:
    if not isinstance(blob, (bytes, bytearray)) or not blob.startswith(_MAGIC):
        raise CacheCorruptionError(f"cache entry {key!r} has an unknown format")
    digest = blob[len(_MAGIC) : len(_MAGIC) + _DIGEST]
    payload = bytes(blob[len(_MAGIC) + _DIGEST :])
    if hashlib.sha256(payload).digest() != digest:
        raise CacheCorruptionError(f"cache entry {key!r} failed its checksum")
    return payload


class ArtifactCache:
    """Typed get/put of bytes, JSON, tensors and Responses under string keys."""

    def __init__(self, directory: str | os.PathLike | None = None):
        self.directory = Path(directory) if directory is not None else cache_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        self._store = diskcache.Cache(str(self.directory), size_limit=2**34, eviction_policy="least-recently-used")
        #: keys of entries found corrupted (and discarded) during this object's life
        self.corrupted: list[str] = []

    @staticmethod
    def key(kind: str, digest: str, *parts: object) -> str:
        """``v<schema>/<kind>/<digest>/<parts...>``."""
        return "/".join([f"v{CACHE_SCHEMA_VERSION}", kind, digest, *map(str, parts)])

    # ------------------------------------------------------------------ bytes
    def get_bytes(self, key: str) -> bytes | None:
        try:
            blob = self._store.get(key, default=None, retry=True)
        except (OSError, EOFError, ValueError) as exc:  # e.g. the value's file was removed
            blob = exc
        if blob is None:
            return None
        try:
            if isinstance(blob, Exception):
                raise CacheCorruptionError(f"cache entry {key!r} is unreadable: {blob}")
            return _unwrap(key, blob)
        except CacheCorruptionError as exc:
            log.warning("%s; discarding it and recomputing", exc)
            self.corrupted.append(key)
            self._store.delete(key, retry=True)
            return None

    def put_bytes(self, key: str, payload: bytes) -> None:
        self._store.set(key, _wrap(payload), retry=True)

    def __contains__(self, key: str) -> bool:
        return key in self._store

    # ------------------------------------------------------------------ typed helpers
    def get_json(self, key: str) -> Any | None:
        data = self.get_bytes(key)
        if data is None:
            return None
        try:
            return json.loads(data)
        except ValueError:
            self._discard(key, "is not valid JSON")
            return None

    def put_json(self, key: str, value: Any) -> None:
        self.put_bytes(key, json.dumps(value, sort_keys=True).encode())

    def get_tensors(self, key: str) -> dict[str, torch.Tensor] | None:
        data = self.get_bytes(key)
        if data is None:
            return None
        try:
            return load_safetensors(data)
        except Exception:  # safetensors raises its own error types for malformed headers
            self._discard(key, "is not a valid safetensors blob")
            return None

    def put_tensors(self, key: str, tensors: dict[str, torch.Tensor]) -> None:
        self.put_bytes(key, save_safetensors({k: v.detach().cpu().contiguous() for k, v in tensors.items()}))

    def get_responses(self, key: str) -> Responses | None:
        data = self.get_bytes(key)
        if data is None:
            return None
        try:
            return Responses.from_bytes(data)
        except (ValueError, KeyError, OSError):
            self._discard(key, "is not a valid Responses archive")
            return None

    def put_responses(self, key: str, responses: Responses) -> None:
        self.put_bytes(key, responses.to_bytes())

    def _discard(self, key: str, why: str) -> None:
        log.warning("cache entry %r %s; discarding it and recomputing", key, why)
        self.corrupted.append(key)
        self._store.delete(key, retry=True)

    def clear(self) -> None:
        self._store.clear(retry=True)

    def close(self) -> None:
        self._store.close()
