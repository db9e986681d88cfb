"""The ``shadow_fidelity`` block of a summary, typed (layout: :mod:`core.experiment.fidelity`'s docstring).

Built by ``from_dict`` where it is born, so ``to_dict`` writes the block's JSON byte for byte. Every layout is
open, and fields that older summaries lack (``shadow_each``, ``warnings``) are optional.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from core.foundations.typed_json import Typed


@dataclass(frozen=True, kw_only=True)
class LossStats(Typed):
    """Mean per-record loss and top-1 agreement of members and non-members (:func:`core.experiment.fidelity.response_stats`;
    the shadows' mean of them); None where not measured (no such record, no shadow)."""

    member_loss: float | None = None
    nonmember_loss: float | None = None
    member_top1: float | None = None
    nonmember_top1: float | None = None

    _WHAT: ClassVar[str] = "stats"
    _STRICT: ClassVar[bool] = False

    def loss(self, which: str) -> float | None:
        """``member_loss`` or ``nonmember_loss`` by name (the warnings loop over both)."""
        return self.member_loss if which == "member_loss" else self.nonmember_loss


@dataclass(frozen=True, kw_only=True)
class FidelityCheckpoint(Typed):
    """One checkpoint: the victim's stats, the shadows' mean and each shadow's, and the relative loss gaps
    |shadows − victim| / max(victim, floor) (None where a side is not measured)."""

    epoch: int
    victim: LossStats
    shadows: LossStats
    shadow_each: tuple[LossStats, ...] | None = None
    member_loss_gap: float | None = None
    nonmember_loss_gap: float | None = None

    _WHAT: ClassVar[str] = "checkpoint"
    _STRICT: ClassVar[bool] = False

    def gap(self, which: str) -> float | None:
        """``member_loss_gap`` or ``nonmember_loss_gap`` by the loss's name."""
        return self.member_loss_gap if which == "member_loss" else self.nonmember_loss_gap


@dataclass(frozen=True, kw_only=True)
class UtilityPair(Typed):
    """A model's utility on its members / in records (``train``) and on unseen / out records (``val``)."""

    train: float | None = None
    val: float | None = None

    _WHAT: ClassVar[str] = "utility"
    _STRICT: ClassVar[bool] = False


@dataclass(frozen=True, kw_only=True)
class FidelityUtility(Typed):
    """The final utilities: the victim's, each shadow's and the shadows' mean (empty without shadows)."""

    metric: str | None = None
    victim: UtilityPair | None = None
    shadows: tuple[UtilityPair, ...] | None = None
    shadow_mean: UtilityPair | None = None

    _WHAT: ClassVar[str] = "utility"
    _STRICT: ClassVar[bool] = False


@dataclass(frozen=True, kw_only=True)
class ShadowFidelity(Typed):
    """Do the shadows track the victim: the loss tolerance and floor, one :class:`FidelityCheckpoint` per
    checkpoint epoch, the final utilities and the warnings (:func:`core.experiment.fidelity.fidelity_warnings`)."""

    loss_tolerance: float | None = None
    loss_floor: float | None = None
    checkpoints: tuple[FidelityCheckpoint, ...] | None = None
    utility: FidelityUtility | None = None
    warnings: tuple[str, ...] | None = None

    _WHAT: ClassVar[str] = "shadow_fidelity"
    _STRICT: ClassVar[bool] = False

    @property
    def last_epoch(self) -> int | None:
        """The last checkpoint's epoch (None without checkpoints)."""
        return max((c.epoch for c in self.checkpoints or ()), default=None)
