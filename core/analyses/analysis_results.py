"""The analyses' results read typed: the JSON of :mod:`core.analyses.analysis` and
:mod:`core.analyses.record_views`, checked once by ``from_dict`` (:class:`core.foundations.typed_json.Typed`:
a one-line :class:`core.foundations.errors.ResultFormatError` naming a missing or ill-typed field).

Every layout here is open (:class:`core.foundations.typed_json.Open`): it types the fields its readers use and
keeps the rest in ``extra``, so ``to_dict()`` gives back exactly the dict read."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from core.foundations.typed_json import (
    Open,
    omissible,
)
from core.measurement.budget import BudgetCurve
from core.measurement.exposure import QuadrantCount


# ---------------------------------------------------------------------------- entropy scatter
@dataclass(frozen=True, kw_only=True)
class Boundary(Open):
    """A threshold attack's decision boundary: member iff ``signal`` ≤ ``threshold`` (in the signal's units)."""

    signal: str
    threshold: float | None = None

    _WHAT: ClassVar[str] = "boundary"


@dataclass(frozen=True, kw_only=True)
class Surrogate(Open):
    """A learned attack's surrogate on (log H, log CE): how often it agrees with the attack's decisions, and its
    member probability over the lattice ``x`` × ``y`` (rows: y; None away from the records)."""

    agreement: float
    x: tuple[float, ...] | None = omissible(())
    y: tuple[float, ...] | None = omissible(())
    member_probability: list[list[float | None]] | None = omissible()

    _WHAT: ClassVar[str] = "surrogate"


@dataclass(frozen=True, kw_only=True)
class ScatterAttack(Open):
    """One attack in the scatter: its accuracy at its threshold, its decision per record and whether each was
    ``correct``, and its boundary (threshold attacks) or surrogate (learned attacks)."""

    accuracy: float
    decision: tuple[bool, ...] | None = omissible()
    correct: tuple[bool, ...] | None = omissible()
    boundary: Boundary | None = None
    surrogate: Surrogate | None = None

    _WHAT: ClassVar[str] = "scatter attack"


@dataclass(frozen=True, kw_only=True)
class Quadrant(Open):
    """The best two-threshold rule "member iff CE ≤ a and H ≤ b" (None: that signal unused), chosen on one half of
    the records, and its ``accuracy`` on the other half (``n_scored`` records); ``accuracy_chosen_on``: on the half
    that chose it (a maximum over every rule: it overstates). Written before the split, ``n_scored`` is None and
    ``accuracy`` was read on the records that chose it."""

    cross_entropy_max: float | None = None
    entropy_max: float | None = None
    accuracy: float
    accuracy_chosen_on: float | None = None
    n_scored: int | None = None

    _WHAT: ClassVar[str] = "quadrant"


@dataclass(frozen=True, kw_only=True)
class MemberMeans(Open):
    """A signal's mean over the members and over the non-members."""

    members: float
    non_members: float

    _WHAT: ClassVar[str] = "means"


@dataclass(frozen=True, kw_only=True)
class Scatter(Open):
    """One architecture's entropy scatter (:func:`core.analyses.analysis.entropy_scatter`); the per-record
    ``log10_ape`` and ``membership`` None where the scatter holds no records."""

    attacks: dict[str, ScatterAttack]
    quadrant: Quadrant
    mean_ape: MemberMeans
    log10_ape: tuple[float, ...] | None = omissible()
    log10_cross_entropy: tuple[float, ...] | None = omissible()
    membership: tuple[bool, ...] | None = omissible()
    #: per record: its signal was at or below ``floor`` (drawn on ``strip``); None: written before the flags
    clipped_ape: tuple[bool, ...] | None = omissible()
    clipped_cross_entropy: tuple[bool, ...] | None = omissible()
    floor: float | None = omissible()
    #: per signal (``log10_ape``, ``log10_cross_entropy``): the unclipped records' log₁₀ span [lo, hi] and where
    #: clipped records are drawn
    range: dict[str, tuple[float, ...]] | None = omissible()
    strip: dict[str, float] | None = omissible()

    _WHAT: ClassVar[str] = "scatter"


@dataclass(frozen=True, kw_only=True)
class ExposedMember(Open):
    """One of the scatter's most exposed members (:func:`core.analyses.analysis.most_exposed`): its ``position`` in
    the evaluation set, its data ``index`` (where known), score, APE and CE."""

    position: int | None = omissible()
    score: float
    ape: float
    cross_entropy: float
    index: int | None = omissible()

    _WHAT: ClassVar[str] = "most exposed member"


@dataclass(frozen=True, kw_only=True)
class EpochRow(Open):
    """One epoch of :func:`core.analyses.analysis.vulnerability`: utility, and at a checkpoint the APE of members and
    non-members and the primary attack's numbers (None where not measured)."""

    epoch: int
    utility_train: float | None = None
    utility_val: float | None = None
    ape_members: float | None = None
    ape_non_members: float | None = None
    attack_accuracy: float | None = None
    attack_auc: float | None = None

    _WHAT: ClassVar[str] = "row"


@dataclass(frozen=True, kw_only=True)
class Vulnerability(Open):
    """One architecture's vulnerability over training (:func:`core.analyses.analysis.vulnerability`), and the
    overtraining run's (:func:`core.analyses.analysis.overtraining`: the same with ``preset_epochs``)."""

    best_val_epoch: int | None = None
    gap_final: float | None = None
    rows: tuple[EpochRow, ...] | None = omissible(())
    preset_epochs: int | None = omissible()

    _WHAT: ClassVar[str] = "vulnerability"


# ---------------------------------------------------------------------------- exposure per record
@dataclass(frozen=True, kw_only=True)
class Realised(Open):
    """One architecture's decisions at an FPR (:class:`core.measurement.exposure.Exposure`'s JSON): the FPR its
    threshold realised, and the threshold (in the score's units)."""

    fpr_realised: float
    threshold: float | None = omissible()

    _WHAT: ClassVar[str] = "exposure"


@dataclass(frozen=True, kw_only=True)
class QuadrantsAt(Open):
    """The quadrants at one FPR (:class:`core.measurement.exposure.Quadrants`' JSON)."""

    a: Realised
    b: Realised
    members: tuple[QuadrantCount, ...]
    non_members: tuple[QuadrantCount, ...]
    quadrant: tuple[str, ...]

    _WHAT: ClassVar[str] = "quadrants"

    def non_member_count(self, name: str) -> int:
        """Non-members in quadrant ``name`` (false alarms)."""
        return next(q.count for q in self.non_members if q.name == name)


@dataclass(frozen=True, kw_only=True)
class FlipCounts(Open):
    """Members that stop / start being exposed behind a defense (:class:`core.measurement.exposure.Flips`)."""

    n_stopped: int
    n_started: int
    kept: int
    n_members: int
    #: the members (evaluation-set positions) that stop / start being exposed
    stopped: tuple[int, ...] | None = omissible(())
    started: tuple[int, ...] | None = omissible(())

    _WHAT: ClassVar[str] = "flips"


@dataclass(frozen=True, kw_only=True)
class ExposureView(Open):
    """The per-record exposure view (:func:`core.analyses.record_views.exposure_view`)."""

    attack: str
    archs: tuple[str, ...]
    #: the evaluation-set positions (any JSON numbers: the layout never required integers)
    records: tuple[float, ...]
    membership: tuple[bool, ...]
    scores: dict[str, tuple[float | None, ...]]
    cross_entropy: dict[str, tuple[float | None, ...]]
    ape: dict[str, tuple[float | None, ...]]
    repeat_seeds: tuple[float, ...] | None = omissible(())
    quadrants: dict[str, QuadrantsAt]
    flips: dict[str, dict[str, FlipCounts]] | None = omissible()

    _WHAT: ClassVar[str] = "exposure"


# ---------------------------------------------------------------------------- reference budget
@dataclass(frozen=True, kw_only=True)
class BudgetView(Open):
    """One architecture's reference budget (:func:`core.analyses.record_views.budget_view`)."""

    curves: dict[str, BudgetCurve]

    _WHAT: ClassVar[str] = "budget"


# ---------------------------------------------------------------------------- audited ε
@dataclass(frozen=True, kw_only=True)
class AuditK(Open):
    """One number of guesses k of the audit (:class:`core.measurement.audit.AuditAtK`) or of the f-DP bound:
    correct guesses, the accuracy of the guesses (the audit) or the bound's μ (f-DP), and its ε."""

    k: int
    correct: int | None = omissible()
    accuracy: float | None = None
    mu: float | None = None
    epsilon: float | None = None

    _WHAT: ClassVar[str] = "per_k"


@dataclass(frozen=True, kw_only=True)
class AuditHeadline(Open):
    """The audit's headline (:class:`core.measurement.audit.AuditResult`): best k, its audited ε and whether every
    guess was right."""

    best_k: int
    epsilon: float | None = None
    saturated: bool | None = None
    confidence: float | None = omissible()
    per_k: tuple[AuditK, ...] | None = omissible(())

    _WHAT: ClassVar[str] = "audit"


@dataclass(frozen=True, kw_only=True)
class Accountant(Open):
    """The accountant's ε of a DP-SGD run, by RDP and by PRV."""

    rdp: float | None = None
    prv: float | None = None

    _WHAT: ClassVar[str] = "accountant_epsilon"


@dataclass(frozen=True, kw_only=True)
class FdpBound(Open):
    """The f-DP lower bound (μ, its ε) at the best k; None: no finite value from these canaries."""

    best_k: int | None = None
    mu: float | None = None
    epsilon: float | None = None
    per_k: tuple[AuditK, ...] | None = omissible(())

    _WHAT: ClassVar[str] = "fdp_bound"

    def at(self, k: int) -> AuditK | None:
        """The bound at ``k`` guesses, None where the grid lacks it."""
        return next((p for p in self.per_k or () if p.k == k), None)


@dataclass(frozen=True, kw_only=True)
class GdpEstimate(Open):
    """The Gaussian-DP estimate μ̂ (and ε̂) with its interval; ``saturated``: a perfect split, no finite value."""

    saturated: bool | None = omissible(False)
    mu: float | None = None
    mu_low: float | None = None
    mu_high: float | None = None
    epsilon: float | None = None
    epsilon_low: float | None = None
    epsilon_high: float | None = None

    _WHAT: ClassVar[str] = "gdp_estimate"


@dataclass(frozen=True, kw_only=True)
class BoundCurve(Open):
    """The bounds against the number of guesses ``k`` (:func:`core.measurement.audit_estimators.bound_curve`):
    correct guesses, Steinke et al.'s ε and the f-DP μ and ε at each k."""

    #: counts, read as any JSON numbers (the layout never required integers)
    k: tuple[float, ...]
    correct: tuple[float, ...]
    steinke_epsilon: tuple[float | None, ...]
    fdp_mu: tuple[float | None, ...]
    fdp_epsilon: tuple[float | None, ...]

    _WHAT: ClassVar[str] = "curve"


@dataclass(frozen=True, kw_only=True)
class Estimators(Open):
    """The other estimators of the same canaries (:func:`core.measurement.audit_estimators.audit_estimators`)."""

    fdp_bound: FdpBound
    gdp_estimate: GdpEstimate
    curve: BoundCurve | None = omissible()

    _WHAT: ClassVar[str] = "estimators"


@dataclass(frozen=True, kw_only=True)
class PrivacyReport(Open):
    """The accountant's report of a DP-SGD run (:func:`core.training.dpsgd.report`): ε per accountant."""

    epsilons: dict[str, float | None] | None = omissible()

    _WHAT: ClassVar[str] = "accountant"


@dataclass(frozen=True, kw_only=True)
class CanaryAudit(Open):
    """One canary run's audit (:func:`core.analyses.record_views.canary_audit`, cached as this JSON): the canaries'
    scores and coin flips, the audit of them and the run's own accountant (None: not private)."""

    m: int
    seed: int | None = omissible()  # None: cached before the seed was written (seed 0)
    delta: float
    scores: tuple[float, ...]
    included: tuple[bool, ...]
    audit: AuditHeadline
    accountant: PrivacyReport | None = None

    _WHAT: ClassVar[str] = "canary audit"


@dataclass(frozen=True, kw_only=True)
class Comparability(Open):
    """Whether an audited ε and the accountant's bound one unit
    (:func:`core.measurement.audit.audit_comparability`)."""

    comparable: bool
    reason: str

    _WHAT: ClassVar[str] = "comparability"


@dataclass(frozen=True, kw_only=True)
class AuditView(Open):
    """One architecture's audit beside its accountant and attack ε (:func:`core.analyses.record_views.audit_beside`)."""

    audited_epsilon: float
    audit: AuditHeadline
    attack: str
    attack_epsilon_lower_bound: float
    utility_val: float
    estimators: Estimators
    accountant_epsilon: Accountant | None = None
    delta: float | None = omissible()
    m: int | None = omissible()
    comparability: Comparability | None = omissible()

    _WHAT: ClassVar[str] = "audit view"


# ---------------------------------------------------------------------------- slices
@dataclass(frozen=True, kw_only=True)
class SliceRow(Open):
    """One slice's metrics (:class:`core.measurement.slices.SliceResult`'s JSON)."""

    slice: str
    n_members: int
    n_non_members: int
    too_small: bool
    auc: float | None = None
    auc_low: float | None = None
    auc_high: float | None = None
    tpr_at_1pct: float | None = None
    tpr_low: float | None = None
    tpr_high: float | None = None
    tpr_resolved: bool | None = omissible()

    _WHAT: ClassVar[str] = "slice"


@dataclass(frozen=True, kw_only=True)
class SlicesView(Open):
    """Attack metrics per slice (:func:`core.analyses.record_views.slices_view`): arch → slicing → rows."""

    attack: str
    min_records: int
    archs: dict[str, dict[str, tuple[SliceRow, ...]]]

    _WHAT: ClassVar[str] = "slices"

    @property
    def slicings(self) -> list[str]:
        """The slicings, in the first architecture's order."""
        return list(next(iter(self.archs.values()), {}))


@dataclass(frozen=True)
class ReportViews:
    """The per-record views a run report shows (:func:`core.analyses.record_views.report_views`): each None (the
    budget: empty) where the runs cannot give it, and then its reason under ``skipped`` (the view's name, per
    architecture for the budget → the reason). Not written as JSON: the report draws it."""

    exposure: ExposureView | None = None
    budget: dict[str, BudgetView] = field(default_factory=dict)
    slices: SlicesView | None = None
    skipped: dict[str, str] = field(default_factory=dict)
