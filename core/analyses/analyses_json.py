"""The analyses' combined result read typed (issue 29): the dict :func:`core.analyses.analysis.analyze` returns
and ``analyses.json`` holds (the Analyses page's export too), read once by :meth:`AnalysesResults.from_dict` so
that the report reads its one-run verdicts and its verdicts over paired repeats by attribute. Each analysis'
own data stays under its name in ``analyses`` (its registered figure and table builders read it, typed by
:mod:`core.analyses.analysis_results`). A reader: the JSON written is the dict itself, unchanged."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from core.analyses.verdicts import RepeatedVerdicts, RunVerdict

#: the keys of the combined result that are not an analysis' data
_OWN_KEYS = ("task", "archs", "verdicts", "repeats")


@dataclass(frozen=True)
class AnalysesResults:
    """``analyze``'s result: the task and architectures (None / () in a hand-made dict that lacks them), the
    one-run ``verdicts`` by key, the ``repeats`` block (None without repeats) and every other entry — each
    analysis' data and its extras — by name in ``analyses``."""

    verdicts: dict[str, RunVerdict]
    repeats: RepeatedVerdicts | None = None
    task: str | None = None
    archs: tuple[str, ...] = ()
    analyses: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "AnalysesResults":
        repeats = d.get("repeats")
        return cls(verdicts={k: RunVerdict.from_dict(v) for k, v in (d.get("verdicts") or {}).items()},
                   repeats=RepeatedVerdicts.from_dict(repeats) if repeats else None, task=d.get("task"),
                   archs=tuple(d.get("archs") or ()), analyses={k: v for k, v in d.items() if k not in _OWN_KEYS})
