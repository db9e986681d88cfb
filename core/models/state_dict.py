"""A user's weights file checked against a model: the one fit check of a safetensors state dict.

Both doors for weights a user trained elsewhere go through :func:`fitted_state_dict` — a model kind's ``--weights``
(:func:`core.models.kinds.base.load_state_dict_into`: torchvision, timm) and a config's ``target_weights``
(:func:`core.experiment.user_model.user_weights`: the explorer's own architectures) — so a file fits or is refused
by the same rules, in one :class:`~core.foundations.errors.ConfigError` line worded for the door it came through.

Imports only :mod:`core.foundations` (and torch, safetensors).
"""
from __future__ import annotations

from typing import Mapping

import torch
from safetensors.torch import load as load_safetensors

from core.foundations.errors import ConfigError


def _absent_allowed(name: str) -> bool:
    """A buffer torch keeps on its own (BatchNorm's ``num_batches_tracked``) that an export may leave out: nothing
    the model answers with depends on it."""
    return name.endswith("num_batches_tracked")


def _listed(label: str, names: list[str]) -> list[str]:
    return [f"{label} {', '.join(names[:3])}" + (" …" if len(names) > 3 else "")] if names else []


def fitted_state_dict(payload: bytes, expected: Mapping[str, torch.Tensor], *, what: str, source: str, model: str,
                      export_hint: str, names_hint: str, shape_hint: str = "") -> dict[str, torch.Tensor]:
    """The safetensors ``payload`` as the state dict of a model whose own is ``expected``, in its order: every name
    of it (a BatchNorm counter may be absent) and no other, each of its shape, floating point where the model's
    is, cast to the model's dtype (a float16 or float64 export loads into a float32 model) and finite there.

    The messages name the door: ``what`` (``--weights``, ``target_weights``) and ``source`` (the file as the user
    gave it), ``model`` (what the weights must fit), ``export_hint`` (how to export safetensors), ``names_hint``
    (which settings decide the names) and ``shape_hint`` (added to a shape mismatch).

    Raises:
        ConfigError: not safetensors; a name missing or extra, a shape or a kind differing; NaN or infinite values
            (after the cast: a float64 of 1e300 is infinite as float32).
    """
    try:
        tensors = load_safetensors(payload)
    except Exception as exc:  # safetensors raises its own error types for a malformed header
        reason = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise ConfigError(f"{what} {source!r} is not a safetensors file ({reason}); {export_hint}") from None
    fits = f"{what} do not fit {model} ({len(expected)} tensors)"
    missing = sorted(n for n in set(expected) - set(tensors) if not _absent_allowed(n))
    extra = sorted(set(tensors) - set(expected))
    if missing or extra:
        raise ConfigError(f"{fits}: {'; '.join(_listed('missing', missing) + _listed('not in it', extra))} "
                          f"({names_hint})")
    out = {}
    for name, want in expected.items():
        if name not in tensors:  # an absent BatchNorm counter: the model keeps its own
            continue
        got = tensors[name]
        if tuple(got.shape) != tuple(want.shape):
            raise ConfigError(f"{fits}: {name} has shape {tuple(got.shape)}, the model's is {tuple(want.shape)}"
                              f"{shape_hint}")
        if got.is_floating_point() != want.is_floating_point() or got.is_complex():
            raise ConfigError(f"{fits}: {name} is {got.dtype}, the model's {want.dtype}")
        # cast first, then check: a float64 of 1e300 is infinite as the model's float32, and float8 has
        # no isfinite of its own
        cast = got.to(want.dtype).contiguous()
        if cast.is_floating_point() and not bool(torch.isfinite(cast).all()):
            raise ConfigError(f"{what} hold NaN or infinite values in {name}" +
                              (f" (as the model's {want.dtype}; the file's {got.dtype} values are too large)"
                               if got.dtype != want.dtype else "") + ": a model that diverged cannot be audited")
        out[name] = cast
    return out
