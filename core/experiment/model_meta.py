"""A trained model's meta entry, typed: what :mod:`core.experiment.roles` caches beside a model's weights and
answers, and what a training worker sends back with its bytes.

The layout: ``{"params", "per_epoch", "train_s", "privacy"}`` (``privacy`` null when not private, never left
out), each ``per_epoch`` row an :class:`core.experiment.results.EpochRecord`. Read once where it comes off the
cache or the worker (:meth:`ModelMeta.from_dict`), and passed on typed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

from core.experiment.results import EpochRecord
from core.foundations.typed_json import DICT, Conv, Typed, fail, json_key
from core.training.dpsgd import PrivacyRecord

#: the meta entry's keys in the order the roles wrote them as a dict (``privacy`` null, never left out)
_KEYS = ("params", "per_epoch", "train_s", "privacy")


def _privacy(v: Any, where: str) -> PrivacyRecord:
    """A ``privacy`` entry read (its keys as :meth:`PrivacyRecord.to_dict` writes them)."""
    DICT.read(v, where)
    try:
        return PrivacyRecord.from_dict(v)
    except TypeError:  # a required field missing
        raise fail(where, "a DP-SGD privacy record", v) from None


#: ``privacy``: read as a :class:`PrivacyRecord`, written as the dict it was read from
PRIVACY = Conv(_privacy, lambda r: r.to_dict(), schema=DICT.schema)


@dataclass(frozen=True, kw_only=True)
class ModelMeta(Typed):
    """One trained role's meta: its parameter count, its learning curve (one row per epoch; a shadow's rows hold
    the epoch only), the seconds it trained, and DP-SGD's record of the training (σ, C, q, steps, accountant
    history; None unless private). ``ensemble_members``: how many models the ensemble executor trained as one
    (a worker's report only; never cached)."""

    params: int
    per_epoch: tuple[EpochRecord, ...]
    train_s: float
    privacy: PrivacyRecord | None = json_key(default=None, conv=PRIVACY)
    ensemble_members: int | None = None

    _WHAT: ClassVar[str] = "model meta"
    #: open: an entry written by another version may hold keys this one does not read (kept in ``extra``)
    _STRICT: ClassVar[bool] = False

    @classmethod
    def of(cls, params: int, per_epoch: Sequence[EpochRecord], train_s: float,
           privacy: PrivacyRecord | None = None) -> "ModelMeta":
        """The meta entry as the cache stores it (the four keys, in their order)."""
        return cls(params=params, per_epoch=tuple(per_epoch), train_s=train_s, privacy=privacy, keys=_KEYS)
