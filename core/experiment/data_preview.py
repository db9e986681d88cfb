"""What the explorer found in a data source, before anything trains.

:func:`preview_data` reads the source through the task (the same reader, caps and refusals as a run) and makes
the seeded splits a run would make: how many records were read, what one record is, how they split between the
victim and the attacker, and whether that fits the configured sizes. It trains nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.experiment.roles import make_splits
from core.experiment.user_model import user_weights
from core.foundations.config import ExperimentConfig
from core.foundations.errors import ConfigError
from core.tasks import get_task
from core.tasks.base import RecordView

#: records shown as examples (members first, then non-members)
EXAMPLES = 4


@dataclass(frozen=True)
class DataPreview:
    """The data source of ``config`` as a run would read and split it.

    Attributes:
        description: the task's one line ("digits: 1,797 8×8 images, 10 classes").
        info: the task's facts about the source (classes, vocabulary, missing values, ...).
        n_records: records read (the victim's and the attacker's halves together).
        victim_pool, attacker_pool: records in each half (disjoint).
        members, nonmembers: the victim's training records and the evaluation's non-members.
        shadow_members, shadow_nonmembers: per shadow model (the attacker's pool).
        split_problem: why the configured sizes do not fit this source (None when they do).
        examples: a few records as the app shows them (:class:`core.tasks.base.RecordView`).
        example_ids: their ids as a member list names them (:meth:`Task.record_ids`).
        record_id_meaning: what an id of a member list is for this task.
    """

    task: str
    dataset: str
    description: str
    info: dict[str, Any]
    n_records: int
    victim_pool: int
    attacker_pool: int
    members: int
    nonmembers: int
    shadows: int
    shadow_members: int
    shadow_nonmembers: int
    split_problem: str | None
    record_id_meaning: str
    example_ids: tuple[str, ...] = ()
    examples: tuple[RecordView, ...] = field(default=(), repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "dataset": self.dataset, "description": self.description,
                "info": _plain(self.info), "n_records": self.n_records, "victim_pool": self.victim_pool,
                "attacker_pool": self.attacker_pool, "members": self.members, "nonmembers": self.nonmembers,
                "shadows": self.shadows, "shadow_members": self.shadow_members,
                "shadow_nonmembers": self.shadow_nonmembers, "split_problem": self.split_problem,
                "record_id_meaning": self.record_id_meaning, "example_ids": list(self.example_ids),
                "examples": [{"kind": v.kind, "caption": v.caption} for v in self.examples]}


def _plain(value: Any) -> Any:
    """JSON-ready: numpy scalars and arrays to Python, tuples to lists (the task's ``info`` is free-form)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def preview_data(config: ExperimentConfig) -> DataPreview:
    """Read ``config``'s data source and make its seeded splits, as a run would, without training.

    Raises the reader's one-line errors (:class:`~core.foundations.errors.MIAError`) for a source it refuses
    and for ``target_weights`` that do not fit the architecture; a source too small for the configured sizes is
    not an error here but :attr:`DataPreview.split_problem`, so the page can show what was found.
    """
    task = get_task(config.task)
    data = task.load(config)
    if config.target_weights:  # a user's model: weights that do not fit say so here, before any shadow trains
        user_weights(task, config, data)
    n_victim, n_attacker = len(data.victim_pool), len(data.attacker_pool)
    problem = None
    members = nonmembers = shadow_in = shadow_out = 0
    shown: list[int] = []
    try:
        splits = make_splits(config, data)
    except ConfigError as exc:
        problem = str(exc)
    else:
        members, nonmembers = len(splits.victim_members), len(splits.victim_nonmembers)
        shadow_in = len(splits.shadow_in[0]) if splits.shadow_in else 0
        shadow_out = len(splits.shadow_out[0]) if splits.shadow_out else 0
        half = max(1, EXAMPLES // 2)
        shown = [int(i) for i in splits.victim_members[:half]] + [int(i) for i in splits.victim_nonmembers[:half]]
    views = []
    n_member_examples = min(max(1, EXAMPLES // 2), members)
    for k, index in enumerate(shown):
        role = "member" if k < n_member_examples else "non-member"
        views.append(task.describe_record(config, data, index, None, role))
    ids = tuple(task.record_ids(config, data, np.asarray(shown, np.int64))) if shown else ()
    return DataPreview(
        task=config.task, dataset=config.dataset, description=data.description, info=dict(data.info),
        n_records=n_victim + n_attacker, victim_pool=n_victim, attacker_pool=n_attacker,
        members=members, nonmembers=nonmembers, shadows=config.n_shadows, shadow_members=shadow_in,
        shadow_nonmembers=shadow_out, split_problem=problem, record_id_meaning=task.record_id_meaning,
        example_ids=ids, examples=tuple(views))
