"""Typed results: what a run, an attack and a defended point produce, as frozen dataclasses.

The seam between ``core`` and its readers (pages, ``ui/``, views, analyses): the pipeline, the defenses
and the sweeps still build and cache plain JSON dicts (the documented layout of ``docs/architecture.md``,
"Summary JSON"; the cache stores dicts, and the CLI writes them unchanged), and they are typed once,
where the JSON is read or produced (the cache readers, the CLI, ``ui.shared``, the analyses that run
experiments): :class:`RunSummary`, :class:`AttackResult`, :class:`DefendedPoint` by ``from_dict`` —
validated there (after TF Privacy's ``AttackInputData.validate()``): a missing, ill-typed or unknown
field raises :class:`core.foundations.errors.ResultFormatError` with one line that names it
(``summary.attacks['lira'].auc must be a number, got 'x'``; ``summary has unknown key 'x' (written by
another version?)``). The views and analyses take the typed objects only and read attributes
(``run.attacks["lira"].auc``, ``run.per_record.scores_of("lira")``, ``point.attack.accuracy``).

``to_dict()`` gives back exactly the dict that was read — the same keys in the same order, the
same values (numbers are checked, never converted: an int stays an int); a key that was absent stays
absent (``None`` on the attribute). Three layouts are open by design and keep keys they do not type in
``extra``, written back where they were: a learning-curve row (a task's own columns, numbers), a
defended point (a registered mechanism's keys) and a defense baseline (the sweeps' keys). Built in code
rather than read, an object writes every typed field in the layout's order, then ``extra``. Nested
blobs that no reader needs typed (``config``, ``data``, ``examples``, ``shadow_fidelity``, ``privacy``)
stay JSON values; ``to_dict`` returns them as they are (not copied), so treat them as read-only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, ClassVar, Mapping, Sequence, TypeVar

from core.foundations.errors import ResultFormatError
from core.measurement.stats import Estimate

T = TypeVar("T", bound="_Typed")


# ---------------------------------------------------------------------------- field converters
@dataclass(frozen=True)
class _Conv:
    """How one JSON value is checked and read (``read(value, where)``) and written back (``write``)."""

    read: Callable[[Any, str], Any]
    write: Callable[[Any], Any]
    nullable: bool = False


def _fail(where: str, what: str, value: Any) -> ResultFormatError:
    shown = repr(value)
    return ResultFormatError(f"{where} must be {what}, got {shown if len(shown) <= 40 else shown[:37] + '...'}")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _number(v: Any, where: str) -> Any:
    if not _is_number(v):
        raise _fail(where, "a number", v)
    return v  # as it was: an int stays an int, so the JSON written back is the JSON read


def _integer(v: Any, where: str) -> Any:
    if not isinstance(v, int) or isinstance(v, bool):
        raise _fail(where, "an integer", v)
    return v


def _kind(kind: type | tuple[type, ...], what: str) -> _Conv:
    def read(v: Any, where: str) -> Any:
        if not isinstance(v, kind) or (kind is not bool and isinstance(v, bool)):
            raise _fail(where, what, v)
        return v

    return _Conv(read, lambda v: v)


NUM = _Conv(_number, lambda v: v)
INT = _Conv(_integer, lambda v: v)
STR = _kind(str, "a string")
BOOL = _kind(bool, "true or false")
DICT = _kind(dict, "a JSON object")
LIST = _kind(list, "a list")
ANY = _Conv(lambda v, where: v, lambda v: v)


def _null(conv: _Conv) -> _Conv:
    """``conv`` or JSON null (None)."""
    return _Conv(lambda v, where: None if v is None else conv.read(v, where),
                 lambda v: None if v is None else conv.write(v), nullable=True)


def _numbers() -> _Conv:
    """A list of numbers, read as a tuple."""
    def read(v: Any, where: str) -> tuple:
        if not isinstance(v, list):
            raise _fail(where, "a list of numbers", v)
        for i, x in enumerate(v):
            _number(x, f"{where}[{i}]")
        return tuple(v)

    return _Conv(read, list)


def _mapping(conv: _Conv, key_name: bool = False) -> _Conv:
    """A JSON object of ``conv`` values (``key_name``: each value's default name is its key)."""
    def read(v: Any, where: str) -> dict:
        if not isinstance(v, dict):
            raise _fail(where, "a JSON object", v)
        out = {}
        for k, x in v.items():
            at = f"{where}[{k!r}]"
            out[k] = conv.read(x, at) if not key_name else conv.read(x, at, k)  # type: ignore[call-arg]
        return out

    return _Conv(read, lambda v: {k: conv.write(x) for k, x in v.items()})


def _objects(cls: type[_Typed], key_name: bool = False) -> _Conv:
    """One typed object (``cls.from_dict``)."""
    if key_name:
        return _Conv(lambda v, where, name=None: cls.from_dict(v, where, name), lambda v: v.to_dict())
    return _Conv(lambda v, where: cls.from_dict(v, where), lambda v: v.to_dict())


def _sequence(conv: _Conv) -> _Conv:
    def read(v: Any, where: str) -> tuple:
        if not isinstance(v, list):
            raise _fail(where, "a list", v)
        return tuple(conv.read(x, f"{where}[{i}]") for i, x in enumerate(v))

    return _Conv(read, lambda v: [conv.write(x) for x in v])


def _estimate() -> _Conv:
    """A :class:`core.measurement.stats.Estimate` (mean, ci_low, ci_high, n, values, sd, method, confidence, note)."""
    def read(v: Any, where: str) -> Estimate:
        if not isinstance(v, dict):
            raise _fail(where, "an interval object", v)
        for key, conv in (("mean", _null(NUM)), ("n", INT)):
            if key not in v:
                raise ResultFormatError(f"{where} lacks {key!r}")
            conv.read(v[key], f"{where}.{key}")
        for key in ("ci_low", "ci_high"):
            if key in v:
                _null(NUM).read(v[key], f"{where}.{key}")
        return Estimate.from_dict(v)

    return _Conv(read, lambda e: e.to_dict())


# ---------------------------------------------------------------------------- the base
@dataclass(frozen=True)
class _Typed:
    """Shared ``from_dict`` / ``to_dict`` of the typed results (see the module docstring).

    A subclass lists its JSON keys in ``_FIELDS`` (``name -> (converter, required)``), in the
    layout's order; each is an attribute of the same name.
    """

    _FIELDS: ClassVar[dict[str, tuple[_Conv, bool]]] = {}
    _WHAT: ClassVar[str] = "result"
    #: refuse keys that are not in ``_FIELDS`` (a layout this version does not know is an error, not
    #: something carried along unread); False where the layout is open by design (see each class)
    _STRICT: ClassVar[bool] = True

    @classmethod
    def from_dict(cls: type[T], d: Mapping[str, Any], where: str | None = None, name: str | None = None) -> T:
        """Check ``d`` and read it (:class:`ResultFormatError`, one line, on a missing or ill-typed field).

        ``name``: the default of a ``name`` field the dict itself lacks (an attack under its name's key).
        """
        where = where or cls._WHAT
        if isinstance(d, cls):
            return d
        if not isinstance(d, Mapping):
            raise _fail(where, "a JSON object", d)
        values: dict[str, Any] = {}
        for key, (conv, required) in cls._FIELDS.items():
            if key not in d:
                if key == "name" and name is not None:
                    values[key] = name
                    continue
                if required:
                    raise ResultFormatError(f"{where} lacks {key!r}")
                values[key] = None
                continue
            value = d[key]
            if value is None and not conv.nullable:
                raise _fail(f"{where}.{key}", "given (not null)", value)
            values[key] = conv.read(value, f"{where}.{key}")
        extra = {k: v for k, v in d.items() if k not in cls._FIELDS}
        if extra and cls._STRICT:
            raise ResultFormatError(f"{where} has unknown key{'s' * (len(extra) > 1)} "
                                    f"{', '.join(map(repr, extra))} (written by another version?)")
        return cls(**values, extra=extra, keys=tuple(d))  # type: ignore[call-arg]

    @classmethod
    def coerce(cls: type[T], d: "T | Mapping[str, Any]") -> T:
        """``d`` itself when it is already typed, else :meth:`from_dict` (readers that accept both)."""
        return d if isinstance(d, cls) else cls.from_dict(d)

    def to_dict(self) -> dict[str, Any]:
        """The JSON dict: exactly the one read (keys, order, values), or every field when built in code."""
        order = self.keys or tuple(k for k, (_, required) in self._FIELDS.items()
                                   if required or getattr(self, k) is not None) + tuple(self.extra)
        out: dict[str, Any] = {}
        for k in order:
            if k in self._FIELDS:
                out[k] = self._FIELDS[k][0].write(getattr(self, k))
            else:
                out[k] = self.extra[k]
        return out


# ---------------------------------------------------------------------------- attacks
@dataclass(frozen=True)
class AttackResult(_Typed):
    """One attack on one balanced evaluation set (:func:`core.measurement.metrics.evaluate_attack`'s numbers).

    ``accuracy`` at the attack's threshold, ``advantage`` = TPR − FPR there (Yeom et al.), ROC
    ``auc``, ``tpr_at_fpr`` at the FPRs of :data:`core.measurement.metrics.LOW_FPRS` (keys ``"0.01"``,
    ``"0.001"``), the ROC curve when kept (``roc_fpr``, ``roc_tpr``), and — for a defended point's
    mean over draws — the standard deviations over draws (``*_std``). ``threshold`` is None for
    "never a member" (+∞ in the computation). The computing side is :class:`core.measurement.metrics.AttackMetrics`
    (what :func:`core.measurement.metrics.evaluate_attack` returns and the pipeline writes with ``to_dict``); this
    is that JSON read back, checked and frozen.
    """

    name: str
    accuracy: float
    advantage: float
    auc: float
    tpr_at_fpr: dict[str, float]
    accuracy_std: float | None = None
    advantage_std: float | None = None
    auc_std: float | None = None
    threshold: float | None = None
    n_members: int | None = None
    n_nonmembers: int | None = None
    roc_fpr: tuple[float, ...] | None = None
    roc_tpr: tuple[float, ...] | None = None
    #: threshold attacks: {"signal", "threshold" (in the signal's units), "member_if"}
    boundary: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False, kw_only=True)

    _WHAT: ClassVar[str] = "attack"

    @property
    def tpr_at_1pct_fpr(self) -> float | None:
        """TPR at 1 % FPR (None when not measured)."""
        return self.tpr_at_fpr.get("0.01")

    @property
    def tpr_at_01pct_fpr(self) -> float | None:
        """TPR at 0.1 % FPR (None when not measured)."""
        return self.tpr_at_fpr.get("0.001")

    @property
    def has_roc(self) -> bool:
        return bool(self.roc_fpr) and bool(self.roc_tpr)


AttackResult._FIELDS = {
    "name": (STR, True), "accuracy": (NUM, True), "accuracy_std": (NUM, False), "advantage": (NUM, True),
    "advantage_std": (NUM, False), "auc": (NUM, True), "auc_std": (NUM, False),
    "tpr_at_fpr": (_mapping(NUM), True), "threshold": (_null(NUM), False), "n_members": (INT, False),
    "n_nonmembers": (INT, False), "roc_fpr": (_numbers(), False), "roc_tpr": (_numbers(), False),
    "boundary": (_null(DICT), False),
}
_ATTACK = _objects(AttackResult)
#: {name: AttackResult}: a result without a ``name`` key (a defended point's ``attacks``) takes its key
_ATTACKS = _mapping(_objects(AttackResult, key_name=True), key_name=True)


def _check_attacks(primary: AttackResult, attacks: Mapping[str, AttackResult], where: str) -> None:
    """Each attack under its own name, and the primary one among them."""
    for name, r in attacks.items():
        if r.name != name:
            raise ResultFormatError(f"{where}.attacks[{name!r}] holds the result of {r.name!r}")
    if primary.name not in attacks:
        raise ResultFormatError(f"{where}.attack names {primary.name!r}, which is not in {where}.attacks")


# ---------------------------------------------------------------------------- a run
@dataclass(frozen=True)
class Utility(_Typed):
    """The victim's final utility: ``metric`` (accuracy, bleu, return), on its members (``train``)
    and on unseen records (``val``); None where not measured."""

    metric: str
    train: float | None = None
    val: float | None = None
    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False, kw_only=True)

    _WHAT: ClassVar[str] = "utility"


Utility._FIELDS = {"metric": (STR, True), "train": (_null(NUM), False), "val": (_null(NUM), False)}


@dataclass(frozen=True)
class EpochRecord(_Typed):
    """One checkpoint of the victim's learning curve, with the primary attack's numbers at that
    epoch where attacks were fitted there (None elsewhere). Task-specific columns (navigation's
    ``steps_train`` / ``steps_val``) are in ``extra``: :meth:`get`."""

    epoch: int
    utility_train: float | None = None
    utility_val: float | None = None
    attack_accuracy: float | None = None
    attack_auc: float | None = None
    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False, kw_only=True)

    _WHAT: ClassVar[str] = "per_epoch row"
    #: open: a task's ``epoch_metrics`` adds its own curves (navigation's steps; a plugin's), each a number
    _STRICT: ClassVar[bool] = False

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str | None = None, name: str | None = None) -> "EpochRecord":
        row = super().from_dict(d, where, name)
        for k, v in row.extra.items():  # a task's own column: a number, or null where not measured
            _null(NUM).read(v, f"{where or cls._WHAT}.{k}")
        return row

    def get(self, name: str, default: Any = None) -> Any:
        """A column by name, typed or task-specific."""
        if name in self._FIELDS:
            value = getattr(self, name)
            return default if value is None else value
        return self.extra.get(name, default)


EpochRecord._FIELDS = {"epoch": (INT, True), "utility_train": (_null(NUM), False),
                       "utility_val": (_null(NUM), False), "attack_accuracy": (_null(NUM), False),
                       "attack_auc": (_null(NUM), False)}


@dataclass(frozen=True)
class RepeatsBlock(_Typed):
    """``run --repeats N``'s block (:func:`core.analyses.repeats.repeats_block`): per headline metric the mean
    with its 95 % interval over the repeats, the primary attack's ROC band, and repeat 0's
    bootstrap intervals over records (``within_run``)."""

    n: int
    seeds: tuple[int, ...]
    config_hashes: tuple[str, ...]
    metrics: dict[str, Estimate]
    roc_band: dict[str, Any] | None = None
    #: repeat 0's evaluation-set resolution (:func:`core.analyses.repeats.summary_resolution`): the band's 1/n floor
    resolution: dict[str, Any] | None = None
    within_run: dict[str, Estimate] | None = None
    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False, kw_only=True)

    _WHAT: ClassVar[str] = "repeats"


RepeatsBlock._FIELDS = {"n": (INT, True), "seeds": (_sequence(INT), True), "config_hashes": (_sequence(STR), True),
                        "metrics": (_mapping(_estimate()), True), "roc_band": (_null(DICT), False),
                        "resolution": (_null(DICT), False), "within_run": (_mapping(_estimate()), False)}


def _optional_numbers() -> _Conv:
    """A list of numbers or nulls (a record an attack could not score), read as a tuple."""
    def read(v: Any, where: str) -> tuple:
        if not isinstance(v, list):
            raise _fail(where, "a list of numbers", v)
        for i, x in enumerate(v):
            if x is not None:
                _number(x, f"{where}[{i}]")
        return tuple(v)

    return _Conv(read, list)


def _flags() -> _Conv:
    def read(v: Any, where: str) -> tuple:
        if not isinstance(v, list) or not all(isinstance(x, bool) for x in v):
            raise _fail(where, "a list of true / false", v)
        return tuple(v)

    return _Conv(read, list)


@dataclass(frozen=True)
class RunRecords(_Typed):
    """A run's per-record signals on its balanced evaluation set (the summary's ``records`` block,
    :func:`core.experiment.pipeline.record_signals`): ``membership`` (member or not, record by record),
    APE (paper 000 eq. 3) and mean cross-entropy, the answer ``length`` in steps, every attack's
    ``scores`` (None where an attack could not score a record) and each threshold attack's decision
    ``boundaries`` in its signal's units. Optional fields are absent in summaries written before them."""

    membership: tuple[bool, ...] | None = None
    ape: tuple[float, ...] | None = None
    cross_entropy: tuple[float, ...] | None = None
    length: tuple[int, ...] | None = None
    scores: dict[str, tuple[float | None, ...]] | None = None
    boundaries: dict[str, dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False, kw_only=True)

    _WHAT: ClassVar[str] = "records"

    def scores_of(self, attack: str) -> tuple[float | None, ...] | None:
        """``attack``'s per-record scores, None when the run has none for it."""
        return (self.scores or {}).get(attack)

    def has_scores(self, attack: str) -> bool:
        return attack in (self.scores or {})


RunRecords._FIELDS = {
    "membership": (_flags(), False), "ape": (_numbers(), False), "cross_entropy": (_numbers(), False),
    "length": (_sequence(INT), False), "scores": (_mapping(_optional_numbers()), False),
    "boundaries": (_mapping(DICT), False),
}


@dataclass(frozen=True)
class RunSummary(_Typed):
    """One run's summary (``python -m core run``'s JSON, the cache's ``result`` entry).

    ``attack`` is the task's primary attack at the final epoch (no ROC); ``attacks`` every attack
    there (with ROC); ``attacks_by_epoch[str(epoch)]`` every attack fitted at a checkpoint (no ROC);
    ``per_epoch`` the learning curve. Optional blocks (absent in summaries written before them):
    ``shadow_fidelity``, ``resolution``, ``privacy`` (None unless DP-SGD), ``examples``, ``repeats``.
    """

    task: str
    arch: str
    config: dict[str, Any]
    config_hash: str
    params: int
    utility: Utility
    attack: AttackResult
    attacks: dict[str, AttackResult]
    per_epoch: tuple[EpochRecord, ...]
    timings: dict[str, Any]
    records: dict[str, Any]
    preset: str | None = None
    training_hash: str | None = None
    data: dict[str, Any] | None = None
    device: str | None = None
    attacks_by_epoch: dict[str, dict[str, AttackResult]] | None = None
    cache_hit: bool | None = None
    models_from_cache: dict[str, Any] | None = None
    cache_corrupted: list[Any] | None = None
    #: whose victim (issue 33): ``{kind: trained | user weights, weights_sha256, members_sha256, n_members}``
    victim_source: dict[str, Any] | None = None
    shadow_fidelity: dict[str, Any] | None = None
    #: every registered attack that did not run here, and why (issue 34)
    attacks_not_run: dict[str, str] | None = None
    resolution: dict[str, Any] | None = None
    privacy: dict[str, Any] | None = None
    examples: dict[str, Any] | list[Any] | None = None
    repeats: RepeatsBlock | None = None
    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False, kw_only=True)

    _WHAT: ClassVar[str] = "summary"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str | None = None, name: str | None = None) -> "RunSummary":
        run = super().from_dict(d, where, name)
        if isinstance(d, RunSummary):
            return run
        _check_attacks(run.attack, run.attacks, where or cls._WHAT)
        run.per_record  # the records block checked here too, so a malformed one is refused as it is read
        return run

    @cached_property
    def per_record(self) -> RunRecords:
        """The ``records`` block typed (checked on first use). ``records`` itself stays the JSON block: the
        training-time sweeps and the tasks' ``slice_labels`` (a plugin's API) read it as a dict."""
        return RunRecords.from_dict(self.records, f"{self._WHAT}.records")

    @property
    def primary(self) -> str:
        """The primary attack's name."""
        return self.attack.name

    @property
    def epochs(self) -> int:
        """The number of training epochs (the config's)."""
        return int(self.config.get("epochs", self.per_epoch[-1].epoch if self.per_epoch else 0))

    def attacks_at(self, epoch: int) -> dict[str, AttackResult]:
        """Every attack fitted at checkpoint ``epoch`` ({} where none was)."""
        return dict((self.attacks_by_epoch or {}).get(str(epoch), {}))

    def timing(self, name: str, default: float = 0.0) -> float:
        """A timing in seconds (``total_s``, ``victim_trained_s``, …)."""
        value = self.timings.get(name)
        return float(value) if _is_number(value) else default

    @property
    def example_kind(self) -> str | None:
        """The ``examples`` block's kind (``translation``, ``navigation``), None without one."""
        return self.examples.get("kind") if isinstance(self.examples, dict) else None


RunSummary._FIELDS = {
    "task": (STR, True), "arch": (STR, True), "preset": (_null(STR), False), "config": (DICT, True),
    "config_hash": (STR, True), "training_hash": (_null(STR), False), "params": (INT, True),
    "data": (_null(DICT), False), "device": (_null(STR), False), "utility": (_objects(Utility), True),
    "attack": (_ATTACK, True), "attacks": (_ATTACKS, True),
    "attacks_by_epoch": (_mapping(_ATTACKS), False), "per_epoch": (_sequence(_objects(EpochRecord)), True),
    "timings": (DICT, True), "cache_hit": (BOOL, False), "models_from_cache": (_null(DICT), False),
    "cache_corrupted": (_null(LIST), False), "victim_source": (_null(DICT), False),
    "shadow_fidelity": (_null(DICT), False), "attacks_not_run": (_null(_mapping(STR)), False),
    "resolution": (_null(DICT), False), "privacy": (_null(DICT), False),
    "examples": (_null(_kind((dict, list), "a JSON object or a list")), False),
    "records": (DICT, True), "repeats": (_null(_objects(RepeatsBlock)), False),
}


# ---------------------------------------------------------------------------- defended points
@dataclass(frozen=True)
class DefendedPoint(_Typed):
    """One defended point (``defend``'s ``points[i]``, the cache's ``defended`` entry, a Defenses-page
    point): a mechanism at one ``value``, the attacks on the defended victim (the naive attacker's
    ``attack`` / ``attacks``, means over draws with ``*_std``; the adaptive attacker's when measured),
    utility and utility loss L = 1 − M(defended)/M(undefended) (paper 000, Def. 4; None when not
    measured), the mechanism's guarantee (``epsilon``, ``delta``, ``gamma``, ``privacy_note``; a
    registered mechanism may add keys: in ``extra``), the attack's empirical ε lower bound, and with
    ``defend --repeats N`` the 95 % ``intervals`` per metric (:func:`core.analyses.repeats.defense_intervals`).
    Training-time points (``core.defenses.sweeps.point_of``) carry ``value_name``, ``config_hash``,
    ``training_hash``, ``cache_hit`` and, under DP-SGD, the ``dpsgd`` block.
    """

    value: float
    attack: AttackResult
    attacks: dict[str, AttackResult]
    mechanism: str | None = None
    draws: int | None = None
    value_name: str | None = None
    config_hash: str | None = None
    training_hash: str | None = None
    adaptive_attack: AttackResult | None = None
    adaptive_attacks: dict[str, AttackResult] | None = None
    utility: float | None = None
    utility_std: float | None = None
    utility_train: float | None = None
    utility_train_std: float | None = None
    utility_loss: float | None = None
    utility_loss_train: float | None = None
    epsilon: float | None = None
    delta: float | None = None
    gamma: float | None = None
    privacy_note: str | None = None
    #: the naive attack's empirical ε lower bound: its mean over draws (after training), or
    #: :func:`core.measurement.metrics.empirical_epsilon`'s block (a training-time point): :attr:`epsilon_hat`
    epsilon_lower_bound: float | dict[str, Any] | None = None
    epsilon_lower_bound_detail: dict[str, Any] | None = None
    records: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    skipped_attacks: tuple[str, ...] | None = None
    cache_hit: bool | None = None
    dpsgd: dict[str, Any] | None = None
    intervals: dict[str, Estimate] | None = None
    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False, kw_only=True)

    _WHAT: ClassVar[str] = "point"
    #: open: a registered mechanism adds its own keys to its points (kept in ``extra``)
    _STRICT: ClassVar[bool] = False

    def interval(self, metric: str) -> Estimate | None:
        """The 95 % interval of ``metric`` (``attack_accuracy``, ``attack_auc``, ``utility``,
        ``utility_loss``) over repeats × draws, None without ``--repeats``."""
        return (self.intervals or {}).get(metric)

    @property
    def epsilon_hat(self) -> float | None:
        """The empirical ε lower bound as a number, whichever layout holds it."""
        bound = self.epsilon_lower_bound
        return bound.get("lower_bound") if isinstance(bound, dict) else bound

    @property
    def has_utility(self) -> bool:
        """Whether utility was measured at this point (the slider's fast points have none)."""
        return self.utility is not None


DefendedPoint._FIELDS = {
    "value": (NUM, True), "mechanism": (STR, False), "draws": (INT, False), "value_name": (STR, False),
    "config_hash": (STR, False), "training_hash": (_null(STR), False), "attack": (_ATTACK, True),
    "attacks": (_ATTACKS, True), "epsilon_lower_bound": (_null(_kind((int, float, dict), "a number or an object")), False),
    "epsilon_lower_bound_detail": (_null(DICT), False), "records": (_null(DICT), False),
    "adaptive_attack": (_null(_ATTACK), False), "adaptive_attacks": (_null(_ATTACKS), False),
    "epsilon": (_null(NUM), False), "delta": (_null(NUM), False), "gamma": (_null(NUM), False),
    "privacy_note": (_null(STR), False), "utility_train": (_null(NUM), False),
    "utility_train_std": (_null(NUM), False), "utility": (_null(NUM), False), "utility_std": (_null(NUM), False),
    "utility_loss": (_null(NUM), False), "utility_loss_train": (_null(NUM), False),
    "timings": (_null(DICT), False), "skipped_attacks": (_null(_sequence(STR)), False),
    "cache_hit": (BOOL, False), "dpsgd": (_null(DICT), False), "intervals": (_null(_mapping(_estimate())), False),
}


@dataclass(frozen=True)
class DefenseBaseline(_Typed):
    """The undefended numbers a defended point is compared with (``defend``'s ``baseline``,
    ``Defender.baseline``): the attacks, utility on unseen records and on members, and the
    primary attack's empirical ε lower bound (a number, or :func:`core.measurement.metrics.empirical_epsilon`'s
    block)."""

    attack: AttackResult
    attacks: dict[str, AttackResult]
    utility: float | None = None
    utility_train: float | None = None
    utility_metric: str | None = None
    epsilon_lower_bound: Any = None
    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False, kw_only=True)

    _WHAT: ClassVar[str] = "baseline"
    #: open: the training-time sweeps add their own keys (``utility_chance``), kept in ``extra``
    _STRICT: ClassVar[bool] = False


DefenseBaseline._FIELDS = {
    "attack": (_ATTACK, True), "attacks": (_ATTACKS, True), "utility": (_null(NUM), False),
    "utility_train": (_null(NUM), False), "utility_metric": (_null(STR), False),
    "epsilon_lower_bound": (ANY, False),
}


def runs(summaries: Sequence[RunSummary | Mapping[str, Any]]) -> list[RunSummary]:
    """Each summary typed (already typed ones as they are)."""
    return [RunSummary.coerce(s) for s in summaries]
