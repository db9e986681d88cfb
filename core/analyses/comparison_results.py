"""The FFNN-vs-RNN comparison read typed: the JSON of :func:`core.analyses.repeats.comparison_json`, checked once by
``from_dict`` (:class:`core.foundations.typed_json.Typed`) and read by attribute by the views.

Every layout here is open: it types the fields its readers use and keeps the rest in ``extra``, so ``to_dict()``
gives back exactly the dict read. The estimates stay their JSON dicts (the views read them with
``Estimate.from_dict``); the ROC bands are read typed (:class:`core.measurement.bootstrap.RocBand`)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from core.analyses.arch_answer import ArchAnswer
from core.foundations.typed_json import Typed, converter, json_key, mapping, omissible
from core.measurement.bootstrap import RocBand
from core.measurement.metrics import Resolution
from core.measurement.stats import Verdict


@dataclass(frozen=True, kw_only=True)
class DifferenceView(Typed):
    """The paired difference FFNN − RNN (:class:`core.measurement.stats.PairedDifference`'s JSON): its estimate
    ``diff`` (a JSON estimate), both p-values, Cohen's d_z and the number of pairs."""

    diff: dict[str, Any]
    p_t: float | None = None
    p_permutation: float | None = None
    effect_size: float | None = None
    n: int

    _WHAT: ClassVar[str] = "difference"
    _STRICT: ClassVar[bool] = False


@dataclass(frozen=True, kw_only=True)
class HolmP(Typed):
    """A secondary metric's p-values Holm-adjusted over its ``family``."""

    p_t: float | None = None
    p_permutation: float | None = None
    family: int | None = omissible()

    _WHAT: ClassVar[str] = "p_holm"
    _STRICT: ClassVar[bool] = False


@dataclass(frozen=True, kw_only=True)
class MetricComparison(Typed):
    """One metric's comparison (:func:`core.analyses.repeats.judged_comparisons`): the difference, the verdict
    (None: a duplicate, a rate finer than the data, a utility), and, from schema 2, its ``role``, display
    ``label``, Holm-adjusted ``p_holm`` (secondary metrics) and ``no_verdict_reason``. Each architecture's
    estimate is under its own label (``ffnn``, ``rnn``): :meth:`estimate`."""

    difference: DifferenceView
    verdict: Verdict | None = None
    role: str | None = None
    label: str | None = None
    p_holm: HolmP | None = None
    no_verdict_reason: str | None = None

    _WHAT: ClassVar[str] = "metric comparison"
    _STRICT: ClassVar[bool] = False

    def estimate(self, arch: str) -> dict[str, Any] | None:
        """``arch``'s mean with its interval (a JSON estimate), None where the comparison lacks it."""
        return self.extra.get(arch)

    @property
    def p_holm_permutation(self) -> float | None:
        """The Holm-adjusted sign-flip p (None outside the secondary family)."""
        return None if self.p_holm is None else self.p_holm.p_permutation


@dataclass(frozen=True, kw_only=True)
class PrimaryMetric(Typed):
    """The metric that carries the headline verdict, its label and why it is primary."""

    metric: str
    label: str
    why: str

    _WHAT: ClassVar[str] = "primary"
    _STRICT: ClassVar[bool] = False


@dataclass(frozen=True, kw_only=True)
class SecondaryFamily(Typed):
    """The secondary metrics (their p-values Holm-adjusted over this family)."""

    metrics: tuple[str, ...] | None = omissible(())

    _WHAT: ClassVar[str] = "secondary"
    _STRICT: ClassVar[bool] = False


@dataclass(frozen=True, kw_only=True)
class ComparisonResult(Typed):
    """:func:`core.analyses.repeats.comparison_json`'s JSON. A comparison written before roles (schema 1) has
    no ``primary`` key: :attr:`has_roles` is False and every metric carries its own verdict."""

    metrics: dict[str, MetricComparison]
    repeats: int | None = omissible()
    task: str | None = omissible()
    primary: PrimaryMetric | None = None
    secondary: SecondaryFamily | None = omissible()
    no_verdict: dict[str, str] | None = None
    #: each architecture's repeat-0 evaluation set: what one record is worth
    resolution: dict[str, Resolution] | None = None
    #: each architecture's primary attack's ROC band over the repeats (its JSON Schema stays the plain object the
    #: checked-in ``docs/schemas/compare.schema.json`` has)
    roc_band: dict[str, RocBand] | None = json_key(default=None, conv=replace(mapping(converter(RocBand)),
                                                                             schema={"type": "object"}))

    _WHAT: ClassVar[str] = "comparison"
    _STRICT: ClassVar[bool] = False

    @property
    def has_roles(self) -> bool:
        """Whether the comparison declares its primary metric (schema 2), even a null one."""
        return "primary" in self.keys or self.primary is not None

    @property
    def answer(self) -> ArchAnswer | None:
        """The one answer (:func:`core.analyses.arch_answer.arch_answer`) where the comparison carries it."""
        block = self.extra.get("answer")
        return ArchAnswer.from_dict(block) if isinstance(block, dict) else None

    def n_nonmembers(self) -> dict[str, int]:
        """Each architecture's evaluation non-members (repeat 0's ``resolution``), {} without the block."""
        return {a: r.n_nonmembers for a, r in (self.resolution or {}).items()}
