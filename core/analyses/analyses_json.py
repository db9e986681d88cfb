"""The analyses' combined result, typed: what :func:`core.analyses.analysis.analyze` returns (``to_dict()`` is the
``analyses.json`` it writes) and what the report reads back. The one-run verdicts and the verdicts over paired
repeats are typed; every other key is an analysis' data (or its extras), kept in ``extra`` in the order read, so
``to_dict()`` writes back exactly the dict read."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from core.analyses.verdicts import RepeatedVerdicts, RunVerdict
from core.foundations.typed_json import Conv, Open, fail, json_key, mapping, omissible


def _verdict_object(cls: type[RunVerdict] | type[RepeatedVerdicts]) -> Conv:
    """A verdict block read by ``cls.from_dict`` (the verdicts' own readers) and written by its ``to_dict``."""
    def read(v: Any, where: str) -> Any:
        if isinstance(v, cls):
            return v
        if not isinstance(v, Mapping):
            raise fail(where, "a JSON object", v)
        return cls.from_dict(v)

    return Conv(read, lambda v: v.to_dict(), schema={"type": "object"})


@dataclass(frozen=True, kw_only=True)
class AnalysesResults(Open):
    """``analyses.json``: the task and architectures (None in a hand-made dict that lacks them), the one-run
    ``verdicts`` by key (None: none given), the ``repeats`` block (None without repeats) and every other entry —
    each analysis' data and its extras — by name in :attr:`analyses`."""

    task: str | None = omissible()
    archs: tuple[str, ...] | None = omissible()
    verdicts: dict[str, RunVerdict] | None = json_key(default=None, conv=mapping(_verdict_object(RunVerdict)))
    repeats: RepeatedVerdicts | None = json_key(default=None, conv=_verdict_object(RepeatedVerdicts))

    _WHAT: ClassVar[str] = "analyses"

    @property
    def analyses(self) -> dict[str, Any]:
        """Each analysis' data (and its extras) by name, in the order written."""
        return self.extra

    def printed(self) -> dict[str, Any]:
        """What ``analyze`` prints on stdout: the one-run verdicts' JSON; with repeats, ``verdicts`` and
        ``repeats`` (the JSON written, verdicts as in ``to_dict``)."""
        verdicts = {k: v.to_dict() for k, v in (self.verdicts or {}).items()}
        return verdicts if self.repeats is None else {"verdicts": verdicts, "repeats": self.repeats.to_dict()}
