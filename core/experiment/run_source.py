"""Where run summaries come from: this machine's cache, plus summaries imported from other machines.

Imported runs are a folder of summary JSONs, one sub-folder per batch (one machine, torch version, commit)::

    imported_runs/
        2026-11-26-h100-cpu/
            provenance.json    {"machine": ..., "torch": ..., "commit": ..., "source": ..., "files": {NAME: SHA256}}
            deen_ffnn_r0.json  ...

One failing check refuses the whole folder (:class:`ImportRefused`): each file's SHA-256 must match
``provenance.json``, parse as a :class:`RunSummary`, and its ``config`` hash to its own ``config_hash`` with the
same task and architecture. Only ``.json`` files and a README are allowed; anything else is refused, never opened.

A summary is served only under its config's hash (this machine's cache first), so repeats combine only when their
configs hash the same. A config in two batches is one repeat: the first batch by name is read
(:attr:`ImportedRuns.duplicates`). Every summary carries its :class:`Origin`.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import cached_run
from core.experiment.results import RunSummary
from core.experiment.roles import config_from_dict
from core.foundations.config import ExperimentConfig
from core.foundations.errors import ConfigError

#: the file in each batch that says where its summaries were made and binds each file's bytes
PROVENANCE = "provenance.json"
#: the largest summary read (real ones: about 170–300 KB)
MAX_SUMMARY_BYTES = 4 * 2**20
#: the most summaries in one imports folder (a mistaken folder is refused, not read for minutes)
MAX_SUMMARIES = 5000
#: files a batch may hold besides its summaries and provenance.json
_ALLOWED_OTHER = {"README.md"}
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,120}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
THIS_MACHINE = "this machine (its cache)"


class ImportRefused(ConfigError):
    """An imported summary failed a check; the message is one line naming the file and the check."""


@dataclass(frozen=True)
class Origin:
    """Where a summary was measured: the batch (sub-folder) and what its provenance says."""

    batch: str
    machine: str
    torch: str
    commit: str
    source: str = ""

    def label(self) -> str:
        return f"{self.machine}, torch {self.torch}, commit {self.commit} (imported: {self.batch})"

    def to_dict(self) -> dict[str, str]:
        return {"batch": self.batch, "machine": self.machine, "torch": self.torch, "commit": self.commit,
                "source": self.source}


@dataclass
class ImportedRuns:
    """The checked summaries of an imports folder, by config hash, each with its origin."""

    folder: str
    runs: dict[str, tuple[RunSummary, Origin]] = field(default_factory=dict)
    #: config hash → the batches that measured it too (read: the first batch's summary)
    duplicates: dict[str, list[str]] = field(default_factory=dict)
    batches: list[tuple[Origin, int]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"folder": self.folder,
                "batches": [dict(o.to_dict(), summaries=n) for o, n in self.batches],
                "duplicates": {h: list(b) for h, b in self.duplicates.items()}}


def _text(d: Mapping[str, Any], key: str, where: str) -> str:
    value = d.get(key)
    if not isinstance(value, str) or not value.strip() or len(value) > 300 or "\n" in value:
        raise ImportRefused(f"{where}: '{key}' must be one line of text (≤ 300 characters)")
    return value.strip()


def _provenance(batch: Path, name: str) -> tuple[Origin, dict[str, str]]:
    where = f"imported runs {name}/{PROVENANCE}"
    path = batch / PROVENANCE
    if not path.is_file() or path.is_symlink():
        raise ImportRefused(f"{where} is missing: each batch says its machine, torch version, commit and files")
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ImportRefused(f"{where} does not read as JSON ({str(exc).splitlines()[0][:120]})") from None
    if not isinstance(d, dict):
        raise ImportRefused(f"{where} must hold a JSON object")
    files = d.get("files")
    if not isinstance(files, dict) or not files or not all(
            isinstance(k, str) and isinstance(v, str) and _SHA256.fullmatch(v) for k, v in files.items()):
        raise ImportRefused(f"{where}: 'files' must map each summary's name to its SHA-256 (64 hex digits)")
    source = d.get("source", "")
    origin = Origin(name, _text(d, "machine", where), _text(d, "torch", where), _text(d, "commit", where),
                    source.strip()[:300] if isinstance(source, str) else "")
    return origin, files


def _checked_summary(path: Path, where: str, expected_sha: str) -> RunSummary:
    if path.is_symlink() or not path.is_file():
        raise ImportRefused(f"{where} is not a regular file")
    if path.stat().st_size > MAX_SUMMARY_BYTES:
        raise ImportRefused(f"{where} holds more than {MAX_SUMMARY_BYTES // 2**20} MiB: not a run summary")
    raw = path.read_bytes()
    got = hashlib.sha256(raw).hexdigest()
    if got != expected_sha:
        raise ImportRefused(f"{where}: SHA-256 {got[:12]}… is not the {expected_sha[:12]}… its provenance lists "
                            f"(the file was changed after it was imported)")
    try:
        d = json.loads(raw.decode("utf-8"))
        run = RunSummary.from_dict(d)
        cfg = config_from_dict(d["config"])
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, ConfigError) as exc:
        why = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise ImportRefused(f"{where} is not a run summary ({why})") from None
    if cfg.config_hash != run.config_hash:
        raise ImportRefused(f"{where}: its config hashes to {cfg.config_hash}, not to the {run.config_hash} it "
                            f"states (a setting was changed, or it was made by an incompatible version)")
    if (cfg.task, cfg.arch) != (run.task, run.arch):
        raise ImportRefused(f"{where}: its config is {cfg.task}/{cfg.arch} but it states {run.task}/{run.arch}")
    return run


def load_imports(folder: str | Path) -> ImportedRuns:
    """Every batch of ``folder`` checked (see the module docstring); the first failing check raises
    :class:`ImportRefused` with one line, and nothing is imported."""
    root = Path(folder)
    if not root.is_dir():
        raise ImportRefused(f"imported runs folder {str(folder)!r} not found")
    out = ImportedRuns(str(folder))
    count = 0
    for batch in sorted(p for p in root.iterdir() if not p.name.startswith(".")):
        name = batch.name
        if not batch.is_dir() or batch.is_symlink():
            if name in _ALLOWED_OTHER:
                continue
            raise ImportRefused(f"imported runs {name}: expected one folder per batch, found a file")
        if not _NAME.fullmatch(name):
            raise ImportRefused(f"imported runs: batch name {name[:60]!r} must be letters, digits, '.', '_' or '-'")
        origin, files = _provenance(batch, name)
        present = {p.name for p in batch.iterdir()} - {PROVENANCE} - _ALLOWED_OTHER
        for extra in sorted(present - set(files)):
            what = "a summary its provenance does not list" if extra.endswith(".json") else \
                "not a summary (only .json summaries are read: never weights)"
            raise ImportRefused(f"imported runs {name}/{extra[:80]}: {what}")
        for missing in sorted(set(files) - present):
            raise ImportRefused(f"imported runs {name}/{missing[:80]}: listed in its provenance but absent")
        for fname in sorted(files):
            if not _NAME.fullmatch(fname) or not fname.endswith(".json"):
                raise ImportRefused(f"imported runs {name}/{fname[:80]}: only .json summaries are read")
            count += 1
            if count > MAX_SUMMARIES:
                raise ImportRefused(f"imported runs {str(folder)!r} holds more than {MAX_SUMMARIES} summaries")
            run = _checked_summary(batch / fname, f"imported runs {name}/{fname}", files[fname])
            if run.config_hash in out.runs:
                out.duplicates.setdefault(run.config_hash, [out.runs[run.config_hash][1].batch]).append(name)
                continue
            out.runs[run.config_hash] = (run, origin)
        out.batches.append((origin, len(files)))
    return out


def write_batch(folder: str | Path, name: str, summaries: Mapping[str, bytes], machine: str, torch: str,
                commit: str, source: str = "") -> Path:
    """Write one batch: each summary's bytes under its name, and ``provenance.json`` binding them. Each summary is
    checked as :func:`load_imports` checks it, so a batch that would be refused is never written."""
    if not _NAME.fullmatch(name):
        raise ConfigError(f"batch name {name!r} must be letters, digits, '.', '_' or '-'")
    batch = Path(folder) / name
    batch.mkdir(parents=True, exist_ok=False)
    files = {}
    for fname, raw in sorted(summaries.items()):
        if not _NAME.fullmatch(fname) or not fname.endswith(".json"):
            raise ConfigError(f"summary name {fname!r}: letters, digits, '.', '_' or '-', ending in .json")
        (batch / fname).write_bytes(raw)
        files[fname] = hashlib.sha256(raw).hexdigest()
        _checked_summary(batch / fname, f"{name}/{fname}", files[fname])
    provenance = {"machine": machine, "torch": torch, "commit": commit, "source": source, "files": files}
    (batch / PROVENANCE).write_text(json.dumps(provenance, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return batch


class RunSource:
    """Run summaries for configs: this machine's cache first, then the imported summaries (by config hash).

    Readers that need more than summaries (defended points, analyses, models) use :attr:`cache`: those are never
    imported. :meth:`origins_of` names where each summary served came from."""

    def __init__(self, cache: ArtifactCache | None = None, imports: ImportedRuns | None = None):
        self.cache = cache or ArtifactCache()
        self.imports = imports
        self._served: dict[str, Origin | None] = {}  # config hash → origin (None: this machine)

    def run(self, cfg: ExperimentConfig) -> tuple[RunSummary | None, bool]:
        """(the summary of ``cfg`` or None, whether it came from this machine's cache)."""
        local = cached_run(cfg, self.cache)
        if local is not None:
            self._served[cfg.config_hash] = None
            return local, True
        hit = self.imports.runs.get(cfg.config_hash) if self.imports else None
        if hit is None:
            return None, False
        run, origin = hit
        if (run.task, run.arch) != (cfg.task, cfg.arch):
            return None, False
        self._served[cfg.config_hash] = origin
        return run, False

    def origins_of(self, config_hashes: Iterable[str]) -> list[str]:
        """The distinct origins (labels, in order of first use) of summaries this source served."""
        labels: list[str] = []
        for h in config_hashes:
            if h not in self._served:
                continue
            origin = self._served[h]
            label = THIS_MACHINE if origin is None else origin.label()
            if label not in labels:
                labels.append(label)
        return labels
