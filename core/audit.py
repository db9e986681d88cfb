"""Audit a model you already have — the notebook door (the CLI's ``python -m core audit`` and the Your model page
call the same :func:`audit`, so the three give the same numbers on the same inputs and seed).

.. code-block:: python

    from core.audit import audit
    result = audit("torchvision:resnet18", weights="~/resnet.safetensors", data="~/pets", members="~/members.txt",
                   preprocess="~/preprocess.toml", recipe="~/recipe.toml")
    result.attack("lira_online").auc          # an Estimate: mean, ci_low, ci_high, n
    result.to_json(); result.report("audit.html")
    result.dirichlet(1.0).attack("loss").auc  # the what-ifs, without retraining
    result.gaussian(0.01)

    # a stored audit (the app keeps its JSON and the arrays the JSON leaves out) with its what-ifs back, nothing retrained
    kept = result.kept_arrays()
    again = restore_audit(json.loads(result.to_json()), kept, "torchvision:resnet18", weights="~/resnet.safetensors",
                          data="~/pets", preprocess="~/preprocess.toml")

    # an nn.Module from a notebook, on tensors already preprocessed by your own Dataset:
    result = audit(net, members=(x_train, y_train), non_members=(x_test, y_test), population=(x_pool, y_pool),
                   n_classes=10, factory=Net, recipe={"optimizer": "sgd", "lr": 0.05, "epochs": 20})

``model``: a spec ``KIND:ARG`` (``torchvision:NAME``, ``timm:NAME``, ``hf:DIR``, ``onnx:FILE``; :mod:`core.models.kinds`)
with ``weights`` where the kind needs them, or an ``nn.Module`` (``factory`` builds its untrained copies; ``train_fn``
trains one instead of the recipe: ``train_fn(module, inputs, labels, seed)`` gets the module on the explorer's device — a
GPU where there is one, ``MIA_DEVICE=cpu`` forces the CPU — and the inputs on the CPU, and returns the trained module). Records: ``data`` (a class folder or a CSV) with ``members`` (ids, or a member
list file) and optionally ``non_members`` (ids), or arrays / tensors / Datasets / DataLoaders of ``(inputs,
labels)`` for ``members``, ``non_members`` and ``population`` (the attacker's pool) — taken as the model's inputs as
they are. ``preprocess`` / ``recipe``: a file (TOML / JSON), a dict of the same keys, or the parsed object.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sized, cast

import numpy as np
import torch
from torch import nn

from core.analyses.user_audit import (
    AuditOutcome,
    TrainFn,
    dirichlet,
    gaussian,
    kept_arrays,
    outcome_from_dict,
    run_audit,
    with_state,
)
from core.data.user_records import read_records
from core.foundations.errors import ConfigError
from core.foundations.fileio import read_named_file, write_json_atomically, write_text_atomically
from core.foundations.progress import ProgressCallback
from core.foundations.user_files import MAX_MEMBERS_BYTES, parse_member_ids, user_file_path
from core.foundations.version import stamped, unstamped
from core.models.kinds import LoadedModel, Preprocess, from_module, load_model
from core.models.kinds.base import refuse_pickle_file
from core.models.kinds.preprocess import RawRecords, parse_preprocess, read_preprocess
from core.training.recipe import Recipe, parse_recipe, read_recipe
from core.views.audit_report import audit_report_html

__all__ = ["AuditResult", "audit", "load_preprocess", "load_recipe", "read_ids", "restore_audit"]


@dataclass(frozen=True)
class AuditResult(AuditOutcome):
    """An audit's result (:class:`~core.analyses.user_audit.AuditOutcome`) with its doors: :meth:`to_json`,
    :meth:`report`, and the what-ifs :meth:`dirichlet` and :meth:`gaussian` (no retraining)."""

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """The JSON text; also written to ``path`` when given."""
        doc = stamped(self.to_dict(), "model_audit")
        if path is not None:
            write_json_atomically(path, doc)
        return json.dumps(doc, indent=2, ensure_ascii=False)

    def report(self, path: str | os.PathLike) -> str:
        """Write the self-contained HTML report to ``path``; returns the HTML."""
        text = audit_report_html(self)
        write_text_atomically(path, text)
        return text

    def dirichlet(self, k: float, eta: float = 1e-6, seed: int = 0) -> "AuditResult":
        """Every attack again with the model's answers drawn from Dir(k·p̃)."""
        return cast(AuditResult, dirichlet(self, k, eta, seed))  # a dataclasses.replace of self: an AuditResult

    def gaussian(self, sigma: float, seed: int = 0) -> "AuditResult":
        """Every attack again with the weights θ + σ·z (torch models)."""
        return cast(AuditResult, gaussian(self, sigma, seed))  # a dataclasses.replace of self: an AuditResult

    def kept_arrays(self) -> dict[str, np.ndarray]:
        """What the JSON leaves out and :meth:`from_dict` needs back (:func:`core.analyses.user_audit.kept_arrays`)."""
        return kept_arrays(self)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], kept: Mapping[str, np.ndarray]) -> "AuditResult":
        """A stored audit read back typed (its JSON, from :meth:`to_json`, and :meth:`kept_arrays`), without its
        what-ifs (:func:`restore_audit` brings them back). Raises ResultFormatError (one line) on anything else."""
        outcome = outcome_from_dict(unstamped(doc), kept)
        return cls(**{f: getattr(outcome, f) for f in AuditOutcome.__dataclass_fields__})


def _read(path: str | os.PathLike, what: str, limit: int = 64 * 2**10) -> bytes:
    return read_named_file(os.path.expanduser(str(path)), limit, ConfigError, f"{what} {str(path)!r}")


def load_preprocess(value: str | os.PathLike | Mapping[str, Any] | Preprocess | None) -> Preprocess | None:
    """A :class:`Preprocess` from a file, a dict or itself."""
    if value is None or isinstance(value, Preprocess):
        return value
    if isinstance(value, Mapping):
        return parse_preprocess(value, "given")
    return read_preprocess(_read(value, "preprocess"), str(value))


def load_recipe(value: str | os.PathLike | Mapping[str, Any] | Recipe | None) -> Recipe | None:
    """A :class:`Recipe` from a file, a dict or itself."""
    if value is None or isinstance(value, Recipe):
        return value
    if isinstance(value, Mapping):
        return parse_recipe(value, "given")
    return read_recipe(_read(value, "recipe"), str(value))


def read_ids(value: Any, what: str) -> tuple[str, ...] | None:
    """Record ids: a list as given, or a member-list file read (one id a line)."""
    if value is None:
        return None
    if isinstance(value, (str, os.PathLike)):
        return parse_member_ids(_read(value, what, MAX_MEMBERS_BYTES), what)
    return tuple(str(v) for v in value)


def _tensors(value: Any, what: str) -> tuple[torch.Tensor, np.ndarray]:
    """(inputs, labels) from a pair, a Dataset or a DataLoader."""
    if isinstance(value, tuple) and len(value) == 2:
        x, y = value
    elif isinstance(value, torch.utils.data.DataLoader):
        xs, ys = zip(*[(b[0], b[1]) for b in value])
        x, y = torch.cat(xs), torch.cat(ys)
    elif isinstance(value, torch.utils.data.Dataset):
        items = [value[i] for i in range(len(cast(Sized, value)))]
        x, y = torch.stack([torch.as_tensor(i[0]) for i in items]), torch.as_tensor([int(i[1]) for i in items])
    else:
        raise ConfigError(f"{what}: give (inputs, labels), a Dataset or a DataLoader, got {type(value).__name__}")
    x = torch.as_tensor(np.asarray(x)) if not isinstance(x, torch.Tensor) else x
    y = np.asarray(y.numpy() if isinstance(y, torch.Tensor) else y, np.int64).reshape(-1)
    if len(x) != len(y):
        raise ConfigError(f"{what}: {len(x)} inputs but {len(y)} labels")
    return x.float() if x.is_floating_point() else x, y


def _array_records(members: Any, non_members: Any, population: Any, n_classes: int | None
                   ) -> tuple[RawRecords, torch.Tensor, tuple[str, ...], tuple[str, ...]]:
    parts = [("m", _tensors(members, "members"))]
    if non_members is None:
        raise ConfigError("non_members: with arrays for the members, give the non-members' too")
    parts.append(("n", _tensors(non_members, "non_members")))
    if population is not None:
        parts.append(("p", _tensors(population, "population")))
    x = torch.cat([p[1][0] for p in parts])
    y = np.concatenate([p[1][1] for p in parts])
    ids = tuple(f"{tag}{i}" for tag, (px, _) in parts for i in range(len(px)))
    m = n_classes or int(y.max()) + 1
    records = RawRecords("prepared", y, ids, tuple(str(c) for c in range(m)), source="arrays")
    return records, x, ids[:len(parts[0][1][1])], ids[len(parts[0][1][1]):len(parts[0][1][1]) + len(parts[1][1][1])]


def audit(model: str | nn.Module | LoadedModel, members: Any, non_members: Any = None, *, data: str | None = None,
          population: Any = None, weights: str | None = None, n_classes: int | None = None,
          preprocess: str | Mapping[str, Any] | Preprocess | None = None,
          recipe: str | Mapping[str, Any] | Recipe | None = None, train_fn: TrainFn | None = None,
          factory: Callable[[], nn.Module] | None = None,
          reference_losses: np.ndarray | None = None, reference_in: np.ndarray | None = None,
          stated_accuracy: float | None = None, prior: float | None = None, fpr: float = 0.01, seed: int = 0,
          n_boot: int | None = None, progress: Callable[[str], None] | None = None,
          root: str | os.PathLike | None = None, on_progress: ProgressCallback | None = None) -> AuditResult:
    """Audit ``model`` on its members (module docstring); every metric with its 95 % interval, the blind baseline,
    the risk figures, what ran and why the rest did not.

    ``root``: every file and folder named must lie under it (the app passes the data root; links are not followed
    there); None — Python and the CLI — reads what the caller can. ``progress(message)`` says each step in words,
    ``on_progress`` gets its :class:`~core.foundations.progress.ProgressEvent` (stage, fraction, ETA; the app's job
    queue shows it, and cancels the audit at a report).

    Raises:
        ConfigError: one line on any bad input, before anything trains — including the model not fitting its own
            members under the declared preprocessing.
    """
    confined = _confine(model, root, weights=weights, members=members, non_members=non_members,
                        preprocess=preprocess, recipe=recipe)
    pre = load_preprocess(preprocess)
    rec = load_recipe(recipe)
    if data is not None:
        records = read_records(os.path.expanduser(str(data)), pre, root=confined)
        member_ids, nonmember_ids = (cast("tuple[str, ...]", read_ids(members, "members")),  # required: not None
                                      read_ids(non_members, "non-members"))
        prepared = None
    else:
        records, prepared, member_ids, nonmember_ids = _array_records(members, non_members, population, n_classes)
    m = n_classes or (pre.num_classes if pre and pre.num_classes else None) or len(records.classes)
    if prepared is not None:  # the arrays are the model's inputs as they are
        records.modality = "image" if prepared.ndim == 4 else "table"
    loaded = _loaded(model, weights, m, records, pre, factory)
    if prepared is not None:
        loaded = replace(loaded, prepare=lambda _records: prepared, modality=records.modality)
    outcome = run_audit(loaded, records, member_ids, nonmember_ids=nonmember_ids, recipe=rec, train_fn=train_fn,
                        reference_losses=reference_losses, reference_in=reference_in, stated_accuracy=stated_accuracy,
                        prior=prior, fpr=fpr, seed=seed, n_boot=n_boot, progress=progress, on_progress=on_progress)
    return AuditResult(**{f: getattr(outcome, f) for f in AuditOutcome.__dataclass_fields__})


def _confine(model: Any, root: str | os.PathLike | None, **files: Any) -> str:
    """The root records are read under (``"/"`` without ``root``); with ``root``, every file named (and an ``hf`` /
    ``onnx`` model's path) must lie under it, with no link on the way: else one line. A pickle is refused here, before
    anything else is read."""
    if root is not None:
        confined = str(root)
        for what, value in files.items():
            if isinstance(value, (str, os.PathLike)):
                user_file_path(str(value), what.replace("_", "-"))  # under the root, no link on the way: else one line
        if isinstance(model, str) and ":" in model and model.split(":", 1)[0] in ("hf", "onnx"):
            if not os.path.realpath(os.path.expanduser(model.split(":", 1)[1].strip())).startswith(
                    os.path.realpath(confined) + os.sep):
                raise ConfigError(f"{model!r} lies outside the data root {confined!r}")
    else:
        confined = "/"
    weights = files.get("weights")
    if weights is not None:  # a pickle is refused before anything else is read
        refuse_pickle_file(os.path.expanduser(str(weights)))
    if isinstance(model, str) and model.startswith("onnx:"):
        refuse_pickle_file(os.path.expanduser(model[5:].strip()))
    return confined


def _loaded(model: str | nn.Module | LoadedModel, weights: str | None, n_classes: int, records: RawRecords,
            pre: Preprocess | None, factory: Callable[[], nn.Module] | None = None) -> LoadedModel:
    if isinstance(model, LoadedModel):
        return model
    if isinstance(model, nn.Module):
        return from_module(model, n_classes, records.modality, pre, factory)
    if isinstance(model, str):
        return load_model(model, None if weights is None else os.path.expanduser(str(weights)), n_classes, pre)
    raise ConfigError(f"model must be a spec string (torchvision:NAME, timm:NAME, hf:DIR, onnx:FILE) or an "
                      f"nn.Module, got {type(model).__name__}")


def restore_audit(doc: Mapping[str, Any], kept: Mapping[str, np.ndarray], model: str, *, data: str,
                  weights: str | None = None, n_classes: int | None = None,
                  preprocess: str | Mapping[str, Any] | Preprocess | None = None,
                  root: str | os.PathLike | None = None) -> AuditResult:
    """A stored audit of ``model`` on the records ``data`` (its JSON and :meth:`AuditResult.kept_arrays`) with its
    what-ifs back: the model and the records loaded as :func:`audit` loads them, nothing retrained or refitted.

    Raises:
        ConfigError: one line on a bad input, or when the model or the records are not the ones audited.
        ResultFormatError: the JSON or the arrays are not an audit's.
    """
    stored = AuditResult.from_dict(doc, kept)
    confined = _confine(model, root, weights=weights, preprocess=preprocess)
    pre = load_preprocess(preprocess)
    records = read_records(os.path.expanduser(str(data)), pre, root=confined)
    m = n_classes or (pre.num_classes if pre and pre.num_classes else None) or len(records.classes)
    restored = with_state(stored, _loaded(model, weights, m, records, pre), records, kept)
    return AuditResult(**{f: getattr(restored, f) for f in AuditOutcome.__dataclass_fields__})
