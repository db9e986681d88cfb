"""The attack stage's model answers, each computed once.

The models-stage attacks ask the trained models overlapping questions (LiRA/RMIA, the reference ratio, the
label-only attack and augmented LiRA on the same augmented images). With an :class:`AnswerMemo` on the
:class:`~core.experiment.roles.TrainedModels` (the pipeline sets one for its attack stage) each model is built
once and each (model, kind of answer) pair answers each record once; without one (``memo`` None) every question
runs its forward passes anew. The answers are the same up to float rounding. The memo lives for one attack stage.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable

import numpy as np


class AnswerMemo:
    """Models built once, and per key (e.g. ``("respond", "shadow_0")``) the answers of each record
    computed once; see the module docstring."""

    def __init__(self) -> None:
        self._models: dict[str, Any] = {}
        #: per key: the answers computed so far (parts) and where each record's row is (part, row)
        self._rows: dict[Hashable, tuple[list[Any], dict[int, tuple[int, int]]]] = {}

    def model(self, role: str, build: Callable[[], Any]) -> Any:
        """The model of ``role``, built by ``build()`` the first time it is asked for."""
        if role not in self._models:
            self._models[role] = build()
        return self._models[role]

    def seed(self, key: Hashable, index: np.ndarray, answers: Any) -> None:
        """Answers of records ``index`` already at hand (a shadow's own stored answers on its query
        records), kept under ``key`` before any question is asked under it (later: ignored)."""
        if key not in self._rows:
            self._rows[key] = ([answers], {int(r): (0, row) for row, r in enumerate(np.asarray(index, np.int64))})

    def rows(self, key: Hashable, index: np.ndarray, compute: Callable[[np.ndarray], Any],
             concat: Callable[[list[Any]], Any], take: Callable[[Any, np.ndarray], Any]) -> Any:
        """The answers of records ``index`` (in that order, repeats allowed) under ``key``.

        ``compute(records)`` answers records not yet asked under ``key`` (once each, in first-asked
        order); ``concat(parts)`` joins answers of several computations; ``take(answers, rows)``
        picks rows of one (Responses.subset, or an array's rows)."""
        parts, where = self._rows.setdefault(key, ([], {}))
        records = [int(r) for r in np.asarray(index, np.int64)]
        missing = [r for r in dict.fromkeys(records) if r not in where]
        if missing:  # computed first: a question that raises leaves the memo as it was
            parts.append(compute(np.asarray(missing, np.int64)))
            for row, r in enumerate(missing):
                where[r] = (len(parts) - 1, row)
        places = [where[r] for r in records]
        used = sorted({p for p, _ in places})
        start, offset = 0, {}
        for p in used:
            offset[p] = start
            start += _length(parts[p])
        joined = parts[used[0]] if len(used) == 1 else concat([parts[p] for p in used])
        rows = np.asarray([offset[p] + row for p, row in places], np.int64)
        if len(rows) == _length(joined) and np.array_equal(rows, np.arange(len(rows))):
            return joined  # exactly what was computed
        return take(joined, rows)


def _length(answers: Any) -> int:
    """Records in one computation's answers (Responses, an array, or a tuple of arrays)."""
    return len(answers[0]) if isinstance(answers, tuple) else len(answers)


def concat_arrays(parts: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """``concat`` for answers that are tuples of per-record arrays."""
    return tuple(np.concatenate(column) for column in zip(*parts))


def take_arrays(answers: tuple[np.ndarray, ...], rows: np.ndarray) -> tuple[np.ndarray, ...]:
    """``take`` for answers that are tuples of per-record arrays."""
    return tuple(a[rows] for a in answers)
