"""The Your model page's audit as a job of the worker queue (kind ``own_model_audit``): the page never trains.

An audit (:func:`core.audit.audit`) trains reference models and scores every attack, so it runs in a worker
process with progress, cancel and an owner. This module registers the kind; it never imports Streamlit.

* **Parameters** (:class:`AuditParams`): ``spec`` (``KIND:ARG``, one of :data:`KINDS`), ``weights``, ``data``,
  ``members`` (paths under the data root), ``preprocess`` and ``recipe`` (TOML texts) and ``seed``. Nothing names
  code. They are checked where the page builds them and again in the worker before a file is read: an unknown
  key, a path outside the data root, a link on the way, a bad TOML — one line, nothing trained.
* **The key.** :class:`AuditRequest` stands in for a config: its :attr:`~AuditRequest.config_hash` digests the
  parameters and the input files' stamps (size and mtime), so a changed file is another audit. Its ``to_dict``
  names the member list (user data), so the submitting session owns the audit.
* **The result**: the audit's JSON and the arrays it leaves out, cached under the request's hash; the page reads
  it back typed (:func:`stored_audit`) and restores its what-ifs (:func:`restored_audit`) without retraining.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Mapping

import numpy as np

from core.audit import AuditResult, audit, restore_audit
from core.experiment.cache import ArtifactCache
from core.foundations.errors import ConfigError, ResultFormatError
from core.foundations.paths import MAX_PATH_CHARS, data_root, resolve_data_dir
from core.foundations.progress import ProgressCallback
from core.foundations.user_files import user_file_path
from core.jobs.worker import JobKind, register_job_kind
from core.models.kinds.preprocess import Preprocess, read_preprocess
from core.training.recipe import Recipe, read_recipe

#: the job kind's name
KIND = "own_model_audit"
#: the kinds of a model the page audits (an nn.Module is audited from Python, never through the app)
KINDS = ("torchvision", "timm", "hf", "onnx")
#: the name the page's TOML texts are read under (the JSON's ``preprocess.source`` / ``recipe.source``)
TEXT_NAME = "page.toml"
#: revision of the request's hash: a change to what an audit job computes from the same inputs bumps it
REQUEST_REVISION = 1
#: the cache entries of a stored audit (ArtifactCache kind)
STORE_KIND = "own_model_audit"
#: the most files stamped under a folder (a records folder or a Hugging Face folder); more: one line
MAX_STAMPED_FILES = 500_000


def _text(params: Mapping[str, Any], key: str, optional: bool = False) -> str | None:
    value = params.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"an audit job's {key!r} must be a string, got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class AuditParams:
    """An ``own_model_audit`` job's parameters, checked (module docstring); paths absolute under the data root."""

    spec: str
    weights: str | None
    data: str
    members: str
    preprocess: str
    recipe: str
    seed: int = 0

    FIELDS: ClassVar[tuple[str, ...]] = ("spec", "weights", "data", "members", "preprocess", "recipe", "seed")

    @classmethod
    def from_dict(cls, params: Mapping[str, Any]) -> "AuditParams":
        """Read and checked under the current data root (:class:`ConfigError`, one line): no key but :attr:`FIELDS`,
        the kind one of :data:`KINDS`, every path under the data root without a link on the way, both TOML texts
        parsed. Returns them with every path made absolute."""
        if not isinstance(params, Mapping):
            raise ConfigError(f"an audit job's parameters must be a JSON object, got {type(params).__name__}")
        unknown = sorted(set(params) - set(cls.FIELDS))
        if unknown:
            raise ConfigError(f"an audit job takes {', '.join(cls.FIELDS)}; not {str(unknown[0])[:40]!r}")
        spec = (_text(params, "spec") or "").strip()
        kind, _, arg = spec.partition(":")
        arg = arg.strip()
        if kind not in KINDS or not arg or len(spec) > MAX_PATH_CHARS:
            raise ConfigError(f"an audit job's model {spec[:80]!r} is not KIND:ARG with KIND one of {', '.join(KINDS)}")
        if kind in ("torchvision", "timm"):
            if not all(c.isalnum() or c in "_-." for c in arg):
                raise ConfigError(f"{kind}: {arg[:80]!r} is not a model name")
        elif kind == "hf":
            arg = str(resolve_data_dir(arg))
        else:
            arg = str(user_file_path(arg, "the ONNX file"))
        weights = _text(params, "weights", optional=True)
        if kind in ("torchvision", "timm") and not weights:
            raise ConfigError(f"{kind}:{arg}: the weights (.safetensors) are needed")
        data = _text(params, "data") or ""
        data = str(user_file_path(data, "records") if data.strip().lower().endswith(".csv") else resolve_data_dir(data))
        members = str(user_file_path(_text(params, "members") or "", "members"))
        weights = str(user_file_path(weights, "weights")) if weights else None
        texts = {key: _text(params, key) or "" for key in ("preprocess", "recipe")}  # capped where parsed
        seed = params.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**31:
            raise ConfigError(f"an audit job's seed must be an integer in 0..2³¹−1, got {seed!r}")
        out = cls(f"{kind}:{arg}", weights, data, members, texts["preprocess"], texts["recipe"], seed)
        out.parsed()  # a bad TOML: one line here, before the job is queued or a file read
        return out

    def parsed(self) -> tuple[Preprocess | None, Recipe | None]:
        """The preprocessing and the recipe the texts declare (an empty text: none)."""
        pre = read_preprocess(self.preprocess.encode(), TEXT_NAME) if self.preprocess.strip() else None
        recipe = read_recipe(self.recipe.encode(), TEXT_NAME) if self.recipe.strip() else None
        return pre, recipe

    def to_dict(self) -> dict[str, Any]:
        """The job's parameters (JSON)."""
        return {name: getattr(self, name) for name in self.FIELDS}

    def stamped_paths(self) -> list[str]:
        """The files and folders the audit reads: their stamps key it."""
        kind, _, arg = self.spec.partition(":")
        return [p for p in (self.weights, self.data, self.members, arg if kind in ("hf", "onnx") else None) if p]


def content_stamp(path: str) -> str:
    """What changes when the file at ``path`` changes (its size and modification time), or, for a folder, any file
    under it (each file's relative path, size and modification time; links not followed); ``"missing"`` when there
    is nothing there."""
    p = Path(path)
    try:
        if p.is_file():
            st = p.stat()
            return f"{st.st_size}:{st.st_mtime_ns}"
        if not p.is_dir():
            return "missing"
        h, count = hashlib.sha256(), 0
        for folder, dirs, files in os.walk(p, followlinks=False):
            dirs.sort()
            for name in sorted(files):
                count += 1
                if count > MAX_STAMPED_FILES:
                    raise ConfigError(f"{path!r} holds more than {MAX_STAMPED_FILES:,} files")
                f = os.path.join(folder, name)
                st = os.lstat(f)
                h.update(f"{os.path.relpath(f, p)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        return f"folder:{count}:{h.hexdigest()}"
    except OSError as exc:
        return f"unreadable:{exc.errno}"


@dataclass(frozen=True)
class AuditRequest:
    """What keys an audit job where the queue takes an ExperimentConfig (module docstring): its parameters and its
    input files' stamps. ``task``, ``arch`` and ``preset`` name it in the job lists."""

    params: AuditParams
    stamps: tuple[str, ...]

    task: ClassVar[str] = "your model"
    preset: ClassVar[str] = "audit"

    @classmethod
    def of(cls, params: AuditParams) -> "AuditRequest":
        """The request of ``params`` with its files' stamps as they are now."""
        return cls(params, tuple(content_stamp(p) for p in params.stamped_paths()))

    @property
    def arch(self) -> str:
        kind, _, arg = self.params.spec.partition(":")
        return f"{kind}:{Path(arg).name}"

    @property
    def config_hash(self) -> str:
        text = json.dumps({"revision": REQUEST_REVISION, "params": self.params.to_dict(), "stamps": self.stamps},
                          sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        """The audit's inputs (a user's data: it names a member list, :func:`ui.ownership.on_user_data`)."""
        return {"kind": "model audit", **self.params.to_dict()}


# ---------------------------------------------------------------------------- the stored result
def _keys(request: AuditRequest) -> tuple[str, str]:
    return (ArtifactCache.key(STORE_KIND, request.config_hash, "json"),
            ArtifactCache.key(STORE_KIND, request.config_hash, "arrays"))


def store_audit(request: AuditRequest, result: AuditResult, cache: ArtifactCache | None = None) -> dict[str, Any]:
    """Keep the audit's JSON and its :meth:`~core.audit.AuditResult.kept_arrays` under the request's hash (the arrays
    first: a JSON found is a whole entry); returns the JSON."""
    cache = cache or ArtifactCache()
    doc = json.loads(result.to_json())
    buf = io.BytesIO()
    arrays: dict[str, Any] = result.kept_arrays()  # (numpy's stubs would take a name for savez's own allow_pickle)
    np.savez(buf, **arrays)
    json_key, arrays_key = _keys(request)
    cache.put_bytes(arrays_key, buf.getvalue())
    cache.put_json(json_key, doc, allow_nan=False)
    return doc


def _is_audit(value: Any) -> bool:
    return isinstance(value, dict) and value.get("kind") == "audit"


def stored_audit(request: AuditRequest, cache: ArtifactCache | None = None
                 ) -> tuple[dict[str, Any], dict[str, np.ndarray], AuditResult] | None:
    """The stored audit of ``request``: (its JSON, its kept arrays, the two read back typed), or None when there is
    none (or it cannot be read back: then it is discarded and computed again)."""
    cache = cache or ArtifactCache()
    json_key, arrays_key = _keys(request)
    doc = cache.get_json(json_key, validate=_is_audit)
    payload = cache.get_bytes(arrays_key) if doc is not None else None
    if doc is None or payload is None:
        return None
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
            kept = {name: npz[name] for name in npz.files}
        return doc, kept, AuditResult.from_dict(doc, kept)
    except (ResultFormatError, ValueError, OSError) as exc:
        cache.discard(json_key, f"cannot be read back as an audit ({exc})")
        return None


def restored_audit(request: AuditRequest, doc: Mapping[str, Any], kept: Mapping[str, np.ndarray]) -> AuditResult:
    """The stored audit with its what-ifs back (:func:`core.audit.restore_audit`: the model and the records loaded
    under the data root as the job loaded them; nothing retrained). ConfigError: one line."""
    p = request.params
    pre, _ = p.parsed()
    return restore_audit(doc, kept, p.spec, data=p.data, weights=p.weights, preprocess=pre, root=str(data_root()))


# ---------------------------------------------------------------------------- the job
def run_own_model_audit(config: Any, progress: ProgressCallback, params: dict[str, Any]) -> dict[str, Any]:
    """The worker's side: the parameters checked again here (one line on anything not an audit's, before a file is
    read), the stamps compared with the request's (a file replaced since the click: one line), then
    :func:`core.audit.audit` with ``progress`` (each report is where a cancel stops it), the result stored
    (:func:`store_audit`) → its JSON."""
    p = AuditParams.from_dict(params)
    request = AuditRequest.of(p)
    if not isinstance(config, AuditRequest) or request.config_hash != config.config_hash:
        raise ConfigError("the audit's inputs changed since it was queued (a file was replaced or the parameters "
                          "differ from the request): run it again")
    pre, recipe = p.parsed()
    result = audit(p.spec, p.members, data=p.data, weights=p.weights, preprocess=pre, recipe=recipe, seed=p.seed,
                   root=str(data_root()), on_progress=progress)
    return store_audit(request, result)


def _label(params: dict[str, Any]) -> str:
    return ""  # the request's task, arch and preset say it: "your model · onnx:tree.onnx (audit)"


register_job_kind(JobKind(KIND, run_own_model_audit, _label))
