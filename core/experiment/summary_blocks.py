"""Blocks inside the typed results of :mod:`core.experiment.results`: the ``config`` fields readers use
(:class:`RunSettings`), what was read (:class:`DataBlock`), the ``examples`` showcase's kind
(:class:`ExampleShowcase`) and the converter of a defended point's empirical ε (:func:`number_or_bound`). Each
layout is open (what it does not type stays in ``extra``), so ``to_dict`` writes the JSON read."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from core.foundations.typed_json import Conv, Typed, fail, is_number
from core.measurement.metrics import EpsilonBound


@dataclass(frozen=True, kw_only=True)
class RunSettings(Typed):
    """The fields of a run's ``config`` that its readers use, typed (None where a config lacks one); every other
    field is in ``extra``, and ``RunSummary.config`` stays the JSON block."""

    #: numbers as the config holds them (any JSON number: the block never required integers)
    seed: float | None = None
    epochs: float | None = None
    n_shadows: float | None = None
    n_eval: float | None = None
    preset: str | None = None
    attack_epochs: tuple[float, ...] | None = None

    _WHAT: ClassVar[str] = "config"
    _STRICT: ClassVar[bool] = False


@dataclass(frozen=True, kw_only=True)
class DataBlock(Typed):
    """A summary's ``data`` block, what was read (``{"description": TaskData.description, **TaskData.info}``): its
    one-line ``description`` (a CSV's missing values among it) and, for a classifier, ``n_classes``; the task's other
    facts (vocabulary size, image shape, …) are its own and are kept in ``extra``."""

    description: str | None = None
    n_classes: float | None = None  # any JSON number (the block never required an integer)

    _WHAT: ClassVar[str] = "data"
    _STRICT: ClassVar[bool] = False


@dataclass(frozen=True, kw_only=True)
class ExampleShowcase(Typed):
    """A summary's ``examples`` block as an object (:meth:`core.tasks.base.Task.examples`): its ``kind``
    (``translation``, ``navigation``; None for a task's own layout); the task's fields are kept in ``extra``, for the
    renderers that know that kind."""

    kind: str | None = None

    _WHAT: ClassVar[str] = "examples"
    _STRICT: ClassVar[bool] = False


def number_or_bound() -> Conv:
    """A number (the mean over draws of a point after training) or a :class:`core.measurement.metrics.EpsilonBound`
    block (read, or as :func:`~core.measurement.metrics.empirical_epsilon` returned it)."""
    def read(v: Any, where: str) -> float | EpsilonBound:
        if is_number(v) or isinstance(v, EpsilonBound):
            return v
        if isinstance(v, dict):
            return EpsilonBound.from_dict(v, where)
        raise fail(where, "a number or an object", v)

    return Conv(read, lambda v: v.to_dict() if isinstance(v, EpsilonBound) else v,
                schema={"type": ["number", "object"]})
