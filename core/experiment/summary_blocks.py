"""Blocks inside the typed results of :mod:`core.experiment.results`, typed (issue 29): the fields of a run's
``config`` its readers use (:class:`RunSettings`, ``RunSummary.settings``; a ``resolution`` block is its producer's
layout, :class:`core.measurement.metrics.Resolution`), the ``examples`` kind (:class:`ExampleShowcase`) and the ε
block of a defended point (:class:`EpsilonBound`). Each layout is open (what it does not type stays in ``extra``)
and is read by ``from_dict``, so ``to_dict`` writes the JSON read. Kept apart so that ``results`` holds the
summary's and the points' own layouts within its size."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from core.foundations.typed_json import NUM, STR, Conv, Typed, fail, is_number, null


@dataclass(frozen=True)
class RunSettings(Typed):
    """The fields of a run's ``config`` (``ExperimentConfig.to_dict()``) that its readers use, typed: the seed, the
    epochs, the shadows and the evaluation set's size per side (None where a config lacks one). Open: every other
    field of the config is in ``extra``; ``RunSummary.config`` stays the JSON block (``config_of`` rebuilds the
    whole validated config from it)."""

    seed: int | None = None
    epochs: int | None = None
    n_shadows: int | None = None
    n_eval: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False, kw_only=True)

    _WHAT: ClassVar[str] = "config"
    _STRICT: ClassVar[bool] = False


RunSettings._FIELDS = {"seed": (null(NUM), False), "epochs": (null(NUM), False), "n_shadows": (null(NUM), False),
                       "n_eval": (null(NUM), False)}


@dataclass(frozen=True)
class ExampleShowcase(Typed):
    """A summary's ``examples`` block as an object (:meth:`core.tasks.base.Task.examples`): its ``kind``
    (``translation``, ``navigation``; None for a task's own layout); the task's fields are kept in ``extra``, for the
    renderers that know that kind."""

    kind: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False, kw_only=True)

    _WHAT: ClassVar[str] = "examples"
    _STRICT: ClassVar[bool] = False


ExampleShowcase._FIELDS = {"kind": (null(STR), False)}


@dataclass(frozen=True)
class EpsilonBound(Typed):
    """:func:`core.measurement.metrics.empirical_epsilon`'s block: the ``lower_bound`` on ε (0 when nothing is
    significant); how it was found (estimate, TPR / FPR, threshold, direction, method) is kept in ``extra``."""

    lower_bound: float
    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False, kw_only=True)

    _WHAT: ClassVar[str] = "epsilon_lower_bound"
    _STRICT: ClassVar[bool] = False


EpsilonBound._FIELDS = {"lower_bound": (NUM, True)}


def number_or_bound() -> Conv:
    """A number (the mean over draws of a point after training) or an :class:`EpsilonBound` block."""
    def read(v: Any, where: str) -> float | EpsilonBound:
        if is_number(v):
            return v
        if isinstance(v, dict):
            return EpsilonBound.from_dict(v, where)
        raise fail(where, "a number or an object", v)

    return Conv(read, lambda v: v.to_dict() if isinstance(v, EpsilonBound) else v)
