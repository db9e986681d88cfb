"""The analyses' results read typed (issue 29): the JSON that :mod:`core.analyses.analysis` and
:mod:`core.analyses.record_views` produce — and that the worker jobs, ``analyses.json`` and the cache carry —
checked once by ``from_dict`` (:class:`core.experiment.typed_json.Typed`: one-line
:class:`core.foundations.errors.ResultFormatError` naming a missing or ill-typed field) and read by attribute.

Every layout here is open (``_STRICT`` False): it types the fields its readers use (the Analyses page's
captions and tables, :mod:`core.views.analyses_text`) and keeps the rest (the per-record lists the figures
draw) in ``extra``, so ``to_dict()`` gives back exactly the dict read and nothing written changes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from core.experiment.typed_json import (BOOL, DICT, INT, NUM, STR, Typed, flags, mapping, null, numbers, objects,
                                        optional_numbers, sequence)

_EXTRA = dict(default_factory=dict, kw_only=True)
_KEYS = dict(default=(), repr=False, compare=False, kw_only=True)


# ---------------------------------------------------------------------------- entropy scatter
@dataclass(frozen=True)
class Boundary(Typed):
    """A threshold attack's decision boundary: member iff ``signal`` ≤ ``threshold`` (in the signal's units)."""

    signal: str
    threshold: float | None = None
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "boundary"
    _STRICT: ClassVar[bool] = False


Boundary._FIELDS = {"signal": (STR, True), "threshold": (null(NUM), False)}


@dataclass(frozen=True)
class Surrogate(Typed):
    """A learned attack's surrogate on (log H, log CE): how often it agrees with the attack's decisions."""

    agreement: float
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "surrogate"
    _STRICT: ClassVar[bool] = False


Surrogate._FIELDS = {"agreement": (NUM, True)}


@dataclass(frozen=True)
class ScatterAttack(Typed):
    """One attack in the scatter: its accuracy at its threshold and its boundary (threshold attacks) or
    surrogate (learned attacks)."""

    accuracy: float
    boundary: Boundary | None = None
    surrogate: Surrogate | None = None
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "scatter attack"
    _STRICT: ClassVar[bool] = False


ScatterAttack._FIELDS = {"accuracy": (NUM, True), "boundary": (null(objects(Boundary)), False),
                         "surrogate": (null(objects(Surrogate)), False)}


@dataclass(frozen=True)
class Quadrant(Typed):
    """The best two-threshold rule "member iff CE ≤ a and H ≤ b" (None: that signal unused) and its accuracy."""

    accuracy: float
    cross_entropy_max: float | None = None
    entropy_max: float | None = None
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "quadrant"
    _STRICT: ClassVar[bool] = False


Quadrant._FIELDS = {"cross_entropy_max": (null(NUM), False), "entropy_max": (null(NUM), False),
                    "accuracy": (NUM, True)}


@dataclass(frozen=True)
class MemberMeans(Typed):
    """A signal's mean over the members and over the non-members."""

    members: float
    non_members: float
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "means"
    _STRICT: ClassVar[bool] = False


MemberMeans._FIELDS = {"members": (NUM, True), "non_members": (NUM, True)}


@dataclass(frozen=True)
class Scatter(Typed):
    """One architecture's entropy scatter (:func:`core.analyses.analysis.entropy_scatter`)."""

    attacks: dict[str, ScatterAttack]
    quadrant: Quadrant
    mean_ape: MemberMeans
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "scatter"
    _STRICT: ClassVar[bool] = False


Scatter._FIELDS = {"attacks": (mapping(objects(ScatterAttack)), True), "quadrant": (objects(Quadrant), True),
                   "mean_ape": (objects(MemberMeans), True)}


@dataclass(frozen=True)
class ExposedMember(Typed):
    """One of the scatter's most exposed members: its data ``index`` (where known), score, APE and CE."""

    score: float
    ape: float
    cross_entropy: float
    index: int | None = None
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "most exposed member"
    _STRICT: ClassVar[bool] = False


ExposedMember._FIELDS = {"score": (NUM, True), "ape": (NUM, True), "cross_entropy": (NUM, True),
                         "index": (INT, False)}


@dataclass(frozen=True)
class EpochRow(Typed):
    """One epoch of :func:`core.analyses.analysis.vulnerability`: utility, and at a checkpoint the APE of members and
    non-members and the primary attack's numbers (None where not measured)."""

    epoch: int
    utility_train: float | None = None
    utility_val: float | None = None
    ape_members: float | None = None
    ape_non_members: float | None = None
    attack_accuracy: float | None = None
    attack_auc: float | None = None
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "row"
    _STRICT: ClassVar[bool] = False


EpochRow._FIELDS = {"epoch": (INT, True), **{k: (null(NUM), False) for k in (
    "utility_train", "utility_val", "ape_members", "ape_non_members", "attack_accuracy", "attack_auc")}}


@dataclass(frozen=True)
class Vulnerability(Typed):
    """One architecture's vulnerability over training (:func:`core.analyses.analysis.vulnerability`), and the
    overtraining run's (:func:`core.analyses.analysis.overtraining`: the same with ``preset_epochs``)."""

    best_val_epoch: int | None = None
    gap_final: float | None = None
    rows: tuple[EpochRow, ...] = ()
    preset_epochs: int | None = None
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "vulnerability"
    _STRICT: ClassVar[bool] = False


Vulnerability._FIELDS = {"best_val_epoch": (null(INT), False), "gap_final": (null(NUM), False),
                         "rows": (sequence(objects(EpochRow)), False), "preset_epochs": (INT, False)}


# ---------------------------------------------------------------------------- exposure per record
@dataclass(frozen=True)
class QuadrantCount(Typed):
    """Members (or non-members) in one quadrant (:class:`core.measurement.exposure.QuadrantCount`'s JSON)."""

    name: str
    count: int
    n: int
    share: float
    share_low: float
    share_high: float
    repeats: int | None = None
    mean_count: float | None = None
    count_low: float | None = None
    count_high: float | None = None
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "quadrant count"
    _STRICT: ClassVar[bool] = False


QuadrantCount._FIELDS = {
    "name": (STR, True), "count": (INT, True), "n": (INT, True), "share": (NUM, True), "share_low": (NUM, True),
    "share_high": (NUM, True), "repeats": (INT, False), "mean_count": (null(NUM), False),
    "count_low": (null(NUM), False), "count_high": (null(NUM), False)}


@dataclass(frozen=True)
class Realised(Typed):
    """One architecture's decisions at an FPR (:class:`core.measurement.exposure.Exposure`'s JSON): the FPR its
    threshold realised, and the threshold (in the score's units)."""

    fpr_realised: float
    threshold: float | None = None
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "exposure"
    _STRICT: ClassVar[bool] = False


Realised._FIELDS = {"fpr_realised": (NUM, True), "threshold": (NUM, False)}


@dataclass(frozen=True)
class QuadrantsAt(Typed):
    """The quadrants at one FPR (:class:`core.measurement.exposure.Quadrants`' JSON)."""

    a: Realised
    b: Realised
    members: tuple[QuadrantCount, ...]
    non_members: tuple[QuadrantCount, ...]
    quadrant: tuple[str, ...]
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "quadrants"
    _STRICT: ClassVar[bool] = False

    def non_member_count(self, name: str) -> int:
        """Non-members in quadrant ``name`` (false alarms)."""
        return next(q.count for q in self.non_members if q.name == name)


QuadrantsAt._FIELDS = {"a": (objects(Realised), True), "b": (objects(Realised), True),
                       "members": (sequence(objects(QuadrantCount)), True),
                       "non_members": (sequence(objects(QuadrantCount)), True),
                       "quadrant": (sequence(STR), True)}


@dataclass(frozen=True)
class FlipCounts(Typed):
    """Members that stop / start being exposed behind a defense (:class:`core.measurement.exposure.Flips`)."""

    n_stopped: int
    n_started: int
    kept: int
    n_members: int
    #: the members (evaluation-set positions) that stop / start being exposed
    stopped: tuple[int, ...] = ()
    started: tuple[int, ...] = ()
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "flips"
    _STRICT: ClassVar[bool] = False


FlipCounts._FIELDS = {"n_stopped": (INT, True), "n_started": (INT, True), "kept": (INT, True),
                      "n_members": (INT, True), "stopped": (sequence(INT), False), "started": (sequence(INT), False)}


@dataclass(frozen=True)
class ExposureView(Typed):
    """Issue 22's exposure view (:func:`core.analyses.record_views.exposure_view`)."""

    attack: str
    archs: tuple[str, ...]
    records: tuple[int, ...]
    membership: tuple[bool, ...]
    scores: dict[str, tuple[float | None, ...]]
    cross_entropy: dict[str, tuple[float | None, ...]]
    ape: dict[str, tuple[float | None, ...]]
    quadrants: dict[str, QuadrantsAt]
    repeat_seeds: tuple[int, ...] = ()
    flips: dict[str, dict[str, FlipCounts]] | None = None
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "exposure"
    _STRICT: ClassVar[bool] = False


ExposureView._FIELDS = {
    "attack": (STR, True), "archs": (sequence(STR), True), "records": (numbers(), True),
    "membership": (flags(), True), "scores": (mapping(optional_numbers()), True),
    "cross_entropy": (mapping(optional_numbers()), True), "ape": (mapping(optional_numbers()), True),
    "repeat_seeds": (numbers(), False), "quadrants": (mapping(objects(QuadrantsAt)), True),
    "flips": (mapping(mapping(objects(FlipCounts))), False)}


# ---------------------------------------------------------------------------- reference budget
@dataclass(frozen=True)
class BudgetPointView(Typed):
    """One budget of a curve (:class:`core.measurement.budget.BudgetPoint`'s JSON): AUC and TPR per FPR (keys
    ``"0.01"``, ``"0.001"``) with their 2.5–97.5 % spread over the ``draws`` reference subsets."""

    n_references: int
    draws: int
    auc: float
    auc_low: float
    auc_high: float
    tpr_at_fpr: dict[str, float]
    tpr_low: dict[str, float]
    tpr_high: dict[str, float]
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "budget point"
    _STRICT: ClassVar[bool] = False


BudgetPointView._FIELDS = {"n_references": (INT, True), "draws": (INT, True), "auc": (NUM, True),
                           "auc_low": (NUM, True), "auc_high": (NUM, True), "tpr_at_fpr": (mapping(NUM), True),
                           "tpr_low": (mapping(NUM), True), "tpr_high": (mapping(NUM), True)}


@dataclass(frozen=True)
class BudgetCurveView(Typed):
    """One attack's curve against the number of references (:class:`core.measurement.budget.BudgetCurve`)."""

    n_available: int
    points: tuple[BudgetPointView, ...]
    flattens_at: int | None = None
    n_non_members: int | None = None
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "budget curve"
    _STRICT: ClassVar[bool] = False


BudgetCurveView._FIELDS = {"n_available": (INT, True), "points": (sequence(objects(BudgetPointView)), True),
                           "flattens_at": (null(INT), False), "n_non_members": (INT, False)}


@dataclass(frozen=True)
class BudgetView(Typed):
    """One architecture's reference budget (:func:`core.analyses.record_views.budget_view`)."""

    curves: dict[str, BudgetCurveView]
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "budget"
    _STRICT: ClassVar[bool] = False


BudgetView._FIELDS = {"curves": (mapping(objects(BudgetCurveView)), True)}


# ---------------------------------------------------------------------------- audited ε
@dataclass(frozen=True)
class AuditK(Typed):
    """One number of guesses k of the audit (:class:`core.measurement.audit.AuditAtK`) or of the f-DP bound:
    correct guesses, the accuracy of the guesses (the audit) or the bound's μ (f-DP), and its ε."""

    k: int
    correct: int | None = None
    accuracy: float | None = None
    mu: float | None = None
    epsilon: float | None = None
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "per_k"
    _STRICT: ClassVar[bool] = False


AuditK._FIELDS = {"k": (INT, True), "correct": (INT, False), "accuracy": (null(NUM), False), "mu": (null(NUM), False),
                  "epsilon": (null(NUM), False)}


@dataclass(frozen=True)
class AuditHeadline(Typed):
    """The audit's headline (:class:`core.measurement.audit.AuditResult`): best k and whether every guess was right."""

    best_k: int
    saturated: bool | None = None
    confidence: float | None = None
    per_k: tuple[AuditK, ...] = ()
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "audit"
    _STRICT: ClassVar[bool] = False


AuditHeadline._FIELDS = {"best_k": (INT, True), "saturated": (null(BOOL), False), "confidence": (NUM, False),
                         "per_k": (sequence(objects(AuditK)), False)}


@dataclass(frozen=True)
class Accountant(Typed):
    """The accountant's ε of a DP-SGD run, by RDP and by PRV."""

    rdp: float | None = None
    prv: float | None = None
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "accountant_epsilon"
    _STRICT: ClassVar[bool] = False


Accountant._FIELDS = {"rdp": (null(NUM), False), "prv": (null(NUM), False)}


@dataclass(frozen=True)
class FdpBound(Typed):
    """The f-DP lower bound (μ, its ε) at the best k; None: no finite value from these canaries."""

    best_k: int | None = None
    mu: float | None = None
    epsilon: float | None = None
    per_k: tuple[AuditK, ...] = ()
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "fdp_bound"

    def at(self, k: int) -> AuditK | None:
        """The bound at ``k`` guesses, None where the grid lacks it."""
        return next((p for p in self.per_k or () if p.k == k), None)
    _STRICT: ClassVar[bool] = False


FdpBound._FIELDS = {"best_k": (null(INT), False), "mu": (null(NUM), False), "epsilon": (null(NUM), False),
                    "per_k": (sequence(objects(AuditK)), False)}


@dataclass(frozen=True)
class GdpEstimate(Typed):
    """The Gaussian-DP estimate μ̂ (and ε̂) with its interval; ``saturated``: a perfect split, no finite value."""

    saturated: bool = False
    mu: float | None = None
    mu_low: float | None = None
    mu_high: float | None = None
    epsilon: float | None = None
    epsilon_low: float | None = None
    epsilon_high: float | None = None
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "gdp_estimate"
    _STRICT: ClassVar[bool] = False


GdpEstimate._FIELDS = {"saturated": (BOOL, False), **{k: (null(NUM), False) for k in (
    "mu", "mu_low", "mu_high", "epsilon", "epsilon_low", "epsilon_high")}}


@dataclass(frozen=True)
class BoundCurve(Typed):
    """The bounds against the number of guesses ``k`` (:func:`core.measurement.audit_estimators.bound_curve`):
    correct guesses, Steinke et al.'s ε and the f-DP μ and ε at each k."""

    k: tuple[int, ...]
    correct: tuple[int, ...]
    steinke_epsilon: tuple[float | None, ...]
    fdp_mu: tuple[float | None, ...]
    fdp_epsilon: tuple[float | None, ...]
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "curve"
    _STRICT: ClassVar[bool] = False


BoundCurve._FIELDS = {"k": (numbers(), True), "correct": (numbers(), True),
                      "steinke_epsilon": (optional_numbers(), True), "fdp_mu": (optional_numbers(), True),
                      "fdp_epsilon": (optional_numbers(), True)}


@dataclass(frozen=True)
class Estimators(Typed):
    """The other estimators of the same canaries (:func:`core.measurement.audit_estimators.audit_estimators`)."""

    fdp_bound: FdpBound
    gdp_estimate: GdpEstimate
    curve: BoundCurve | None = None
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "estimators"
    _STRICT: ClassVar[bool] = False


Estimators._FIELDS = {"fdp_bound": (objects(FdpBound), True), "gdp_estimate": (objects(GdpEstimate), True),
                      "curve": (objects(BoundCurve), False)}


@dataclass(frozen=True)
class AuditView(Typed):
    """One architecture's audit beside its accountant and attack ε (:func:`core.analyses.record_views.audit_beside`)."""

    audited_epsilon: float
    audit: AuditHeadline
    attack: str
    attack_epsilon_lower_bound: float
    utility_val: float
    estimators: Estimators
    accountant_epsilon: Accountant | None = None
    delta: float | None = None
    m: int | None = None
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "audit view"
    _STRICT: ClassVar[bool] = False


AuditView._FIELDS = {
    "audited_epsilon": (NUM, True), "audit": (objects(AuditHeadline), True), "attack": (STR, True),
    "attack_epsilon_lower_bound": (NUM, True), "utility_val": (NUM, True), "estimators": (objects(Estimators), True),
    "accountant_epsilon": (null(objects(Accountant)), False), "delta": (NUM, False), "m": (INT, False)}


# ---------------------------------------------------------------------------- slices
@dataclass(frozen=True)
class SliceRow(Typed):
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
    tpr_resolved: bool | None = None
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "slice"
    _STRICT: ClassVar[bool] = False


SliceRow._FIELDS = {
    "slice": (STR, True), "n_members": (INT, True), "n_non_members": (INT, True), "too_small": (BOOL, True),
    **{k: (null(NUM), False) for k in ("auc", "auc_low", "auc_high", "tpr_at_1pct", "tpr_low", "tpr_high")},
    "tpr_resolved": (BOOL, False)}


@dataclass(frozen=True)
class SlicesView(Typed):
    """Attack metrics per slice (:func:`core.analyses.record_views.slices_view`): arch → slicing → rows."""

    attack: str
    min_records: int
    archs: dict[str, dict[str, tuple[SliceRow, ...]]]
    extra: dict[str, Any] = field(**_EXTRA)
    keys: tuple[str, ...] = field(**_KEYS)

    _WHAT: ClassVar[str] = "slices"
    _STRICT: ClassVar[bool] = False

    @property
    def slicings(self) -> list[str]:
        """The slicings, in the first architecture's order."""
        return list(next(iter(self.archs.values()), {}))


SlicesView._FIELDS = {"attack": (STR, True), "min_records": (INT, True),
                      "archs": (mapping(mapping(sequence(objects(SliceRow)))), True)}
