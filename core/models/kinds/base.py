"""The registry of model kinds and the loaded model: a model as its owner has it — torchvision, timm, Hugging Face, ONNX, or an ``nn.Module``.

A kind is one module that registers itself at definition (:func:`register`); :func:`load_model` turns a spec
``KIND:ARG`` (``torchvision:resnet18``, ``timm:resnet10t``, ``hf:DIR``, ``onnx:FILE``) plus the declared
:class:`~core.models.kinds.preprocess.Preprocess` into a :class:`LoadedModel`: its inputs prepared exactly as
declared (never the explorer's own preprocessing), its log-probabilities per record, and — where the kind can
rebuild the architecture untrained — :meth:`LoadedModel.fresh` for reference and shadow models.

Every file is read as data: weights from safetensors, Hugging Face folders through ``config.json`` +
``model.safetensors`` (``trust_remote_code`` never set), ONNX graphs by onnxruntime (no code runs). Pickled
files (joblib, ``.pkl``, torch full-model ``.pt``/``.pth``/``.bin``) are refused with one line naming the safe
export (:func:`refuse_pickle`). A user's Python (an ``nn.Module`` object or factory) enters only through the
Python function (:mod:`core.audit`), never through a spec string.

Imports only :mod:`core.foundations` (and the kinds' own optional third-party packages, lazily).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, cast

import numpy as np
import torch
from torch import nn

from core.foundations.errors import ConfigError
from core.foundations.fileio import read_named_file
from core.models.kinds.preprocess import Preprocess
from core.models.state_dict import fitted_state_dict

#: file suffixes that hold pickles, with the export to use instead
PICKLE_SUFFIXES = {
    ".pkl": "a pickle", ".pickle": "a pickle", ".joblib": "a joblib pickle", ".pt": "a torch.save file",
    ".pth": "a torch.save file", ".bin": "a torch.save file", ".ckpt": "a checkpoint pickle",
}
#: the first bytes of a pickle (protocol 2+) and of a zip (torch.save's default container)
_PICKLE_MAGIC = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
_ZIP_MAGIC = b"PK\x03\x04"
SAFE_EXPORTS = ("export the weights with safetensors.torch.save_file(model.state_dict(), 'model.safetensors'), "
                "a Hugging Face model with model.save_pretrained(DIR, safe_serialization=True), or any model "
                "(scikit-learn through skl2onnx, XGBoost, …) to ONNX")


def refuse_pickle(name: str, head: bytes = b"") -> None:
    """Raise one :class:`ConfigError` line when ``name`` (by suffix) or its first bytes are a pickle: a pickle runs
    code when loaded, so it is never opened."""
    suffix = ("." + name.rsplit(".", 1)[-1].lower()) if "." in name else ""
    what = PICKLE_SUFFIXES.get(suffix)
    if what is None and head[:2] in _PICKLE_MAGIC:
        what = "a pickle"
    if what is None and head[:4] == _ZIP_MAGIC and suffix not in (".onnx", ".npz"):
        what = "a zip archive (torch.save's format)"
    if what is not None:
        raise ConfigError(f"{name!r} is {what}: pickled models run code when opened and are never loaded; "
                          f"{SAFE_EXPORTS}")


def refuse_pickle_file(path: str) -> None:
    """:func:`refuse_pickle` on a file's name and its first bytes (read before anything else of the audit)."""
    refuse_pickle(str(path))
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return  # missing or unreadable: said with the file's name where it is read
    refuse_pickle(str(path), head)


def take(inputs: Any, index: np.ndarray | slice) -> Any:
    """Rows ``index`` of prepared inputs (a tensor, an array or a dict of them)."""
    if isinstance(inputs, Mapping):
        return {k: take(v, index) for k, v in inputs.items()}
    if isinstance(inputs, torch.Tensor) and not isinstance(index, slice):
        return inputs[torch.as_tensor(np.asarray(index), dtype=torch.long)]
    return inputs[index]


def n_rows(inputs: Any) -> int:
    if isinstance(inputs, Mapping):
        return n_rows(next(iter(inputs.values())))
    return int(len(inputs))


def to_device(inputs: Any, device: torch.device) -> Any:
    """Prepared inputs (a tensor, an array or a dict of them) on ``device``."""
    if isinstance(inputs, Mapping):
        return {k: to_device(v, device) for k, v in inputs.items()}
    return torch.as_tensor(inputs).to(device)


def module_device(module: nn.Module) -> torch.device:
    return next(iter(module.parameters()), torch.zeros(0)).device


def torch_log_probs(module: nn.Module, inputs: Any) -> np.ndarray:
    """(N, m) float64 log-softmax of ``module``'s outputs on prepared ``inputs`` (eval mode, no grad), 256 records
    at a time on the module's device."""
    device = module_device(module)
    was = module.training
    module.eval()
    out = []
    try:
        with torch.no_grad():
            for i in range(0, n_rows(inputs), 256):
                x = to_device(take(inputs, slice(i, i + 256)), device)
                logits = module(**x) if isinstance(x, Mapping) else module(x)
                logits = getattr(logits, "logits", logits)
                out.append(torch.log_softmax(logits.double(), -1).cpu().numpy())
    finally:
        module.train(was)
    return np.concatenate(out) if out else np.zeros((0, 0))


@dataclass
class LoadedModel:
    """A user's model ready to be queried.

    Attributes:
        spec: the spec as given (``KIND:ARG``).
        kind: the kind's name.
        n_classes: the model's number of outputs.
        modality: ``image``, ``table`` or ``text`` — what :meth:`prepare` accepts.
        prepare: raw records → the model's inputs, by the declared preprocessing (or the HF folder's processor).
        module: the torch module (None for ONNX): its outputs are logits.
        fresh_factory: builds an untrained copy of the same architecture (None: cannot be retrained).
        why_not_retrainable: where ``fresh_factory`` is None, why.
        run: for non-torch kinds, prepared inputs → (N, m) log-probabilities.
        notes: what was found while loading (a fallback taken, a property of the file).
    """

    spec: str
    kind: str
    n_classes: int
    modality: str
    prepare: Callable[[Any], Any]
    module: nn.Module | None = None
    fresh_factory: Callable[[], nn.Module] | None = None
    why_not_retrainable: str = ""
    run: Callable[[Any], np.ndarray] | None = None
    preprocess: Preprocess | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def retrainable(self) -> bool:
        return self.fresh_factory is not None

    def fresh(self, seed: int) -> nn.Module:
        """An untrained copy of the architecture, initialised from ``seed``."""
        if self.fresh_factory is None:
            raise ConfigError(f"{self.spec}: {self.why_not_retrainable}")
        torch.manual_seed(int(seed))
        return self.fresh_factory()

    def log_probs(self, inputs: Any, module: nn.Module | None = None) -> np.ndarray:
        """(N, m) log-probabilities of ``module`` (default this model) on prepared inputs."""
        if module is None and self.run is not None:
            return self.run(inputs)
        # without a ``run`` (ONNX) the model is a torch module
        return torch_log_probs(module if module is not None else cast(nn.Module, self.module), inputs)


@dataclass(frozen=True)
class ModelKind:
    """One kind: ``load(arg, weights, n_classes, preprocess)`` → :class:`LoadedModel`. ``arg`` is the text after
    ``KIND:``; ``weights`` the weights file's path or None (kinds whose folder or file holds them)."""

    name: str
    summary: str
    load: Callable[[str, str | None, int | None, Preprocess | None], LoadedModel]
    needs_weights: bool
    extra: str  # the optional dependency group that provides it


_KINDS: dict[str, ModelKind] = {}


def register(kind: ModelKind) -> ModelKind:
    if kind.name in _KINDS:
        raise ValueError(f"model kind {kind.name!r} registered twice")
    _KINDS[kind.name] = kind
    return kind


def split_spec(spec: str) -> tuple[ModelKind, str]:
    """The kind and its argument of ``KIND:ARG``; one line naming the kinds when it is not one."""
    text = (spec or "").strip()
    name, sep, arg = text.partition(":")
    if not sep or not arg.strip() or name not in _KINDS:
        kinds = ", ".join(f"{k}:…" for k in _KINDS)
        raise ConfigError(f"--model {spec!r} is not KIND:NAME with KIND one of {kinds} (an nn.Module object is "
                          f"audited from Python: core.audit.audit(model, ...))")
    return _KINDS[name], arg.strip()


def load_model(spec: str, weights: str | None = None, n_classes: int | None = None,
               preprocess: Preprocess | None = None) -> LoadedModel:
    """Load ``spec`` (module docstring). Raises :class:`ConfigError` (one line) on any bad input."""
    kind, arg = split_spec(spec)
    if kind.needs_weights and not weights:
        raise ConfigError(f"{spec}: --weights FILE.safetensors is needed (the state dict of the trained model)")
    if weights:
        refuse_pickle(str(weights))
    return kind.load(arg, weights, n_classes, preprocess)


# ---------------------------------------------------------------------------- helpers the torch kinds share
#: the largest weights / model file read (bytes)
MAX_MODEL_BYTES = 2 * 2**30


def read_model_file(path: str, what: str) -> bytes:
    """A weights or model file's bytes (a regular file, not a link, at most :data:`MAX_MODEL_BYTES`); pickles refused
    first."""
    refuse_pickle(str(path))
    payload = read_named_file(path, MAX_MODEL_BYTES, ConfigError, f"{what} {str(path)!r}")
    refuse_pickle(str(path), payload[:4])
    return payload


def load_state_dict_into(module: nn.Module, path: str, spec: str) -> list[str]:
    """Fill ``module`` with the safetensors state dict at ``path``, checked against the module's own
    (:func:`core.models.state_dict.fitted_state_dict`). Returns notes. Raises :class:`ConfigError` (one line)."""
    state = fitted_state_dict(read_model_file(path, "--weights"), module.state_dict(), what="--weights",
                              source=str(path), model=spec, export_hint=SAFE_EXPORTS,
                              names_hint="the name and the number of classes must be those the model was trained with",
                              shape_hint=" (is the number of classes right?)")
    module.load_state_dict(state, strict=False)  # strict=False: a BatchNorm counter the export left out
    return []
