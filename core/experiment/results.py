"""Typed results: what a run, an attack and a defended point produce, as frozen dataclasses.

The seam between ``core`` and its readers (pages, ``ui/``, views, analyses). JSON (the layout of
``docs/architecture.md``, "Summary JSON") is typed once where it is read or produced, by ``from_dict``, which
validates it (after TF Privacy's ``AttackInputData.validate()``): a missing, ill-typed or unknown field raises
:class:`core.foundations.errors.ResultFormatError` with one line that names it.

``to_dict()`` gives back exactly the dict that was read: same keys, order and values (numbers are checked, never
converted); an absent key stays absent. Three layouts are open and keep untyped keys in ``extra``: a
learning-curve row, a defended point and a defense baseline. Nested blobs no reader needs typed (``config``,
``examples``, ``privacy``) stay JSON values, returned as they are: treat them as read-only.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Mapping, Sequence

from core.experiment.fidelity_results import ShadowFidelity
from core.experiment.summary_blocks import DataBlock, ExampleShowcase, RunSettings, number_or_bound
from core.foundations.errors import ResultFormatError
from core.foundations.typed_json import (
    NUM,
    Typed,
    fields_of,
    is_number,
    json_key,
    kind,
    null,
    omissible,
)
from core.measurement.bootstrap import RocBand
from core.measurement.metrics import EpsilonBound, Resolution
from core.measurement.stats import Estimate


# ---------------------------------------------------------------------------- attacks
@dataclass(frozen=True, kw_only=True)
class AttackResult(Typed):
    """One attack on one balanced evaluation set (:func:`core.measurement.metrics.evaluate_attack`'s numbers).

    ``accuracy`` at the attack's threshold, ``advantage`` = TPR − FPR there (Yeom et al.), ROC
    ``auc``, ``tpr_at_fpr`` at the FPRs of :data:`core.measurement.metrics.LOW_FPRS` (keys ``"0.01"``,
    ``"0.001"``), the ROC curve when kept (``roc_fpr``, ``roc_tpr``), and — for a defended point's
    mean over draws — the standard deviations over draws (``*_std``). ``threshold`` is None for
    "never a member" (+∞ in the computation). This is :class:`core.measurement.metrics.AttackMetrics`' JSON read
    back, checked and frozen.
    """

    name: str
    accuracy: float
    accuracy_std: float | None = omissible()
    advantage: float
    advantage_std: float | None = omissible()
    auc: float
    auc_std: float | None = omissible()
    tpr_at_fpr: dict[str, float]
    threshold: float | None = None
    n_members: int | None = omissible()
    n_nonmembers: int | None = omissible()
    roc_fpr: tuple[float, ...] | None = omissible()
    roc_tpr: tuple[float, ...] | None = omissible()
    #: threshold attacks: {"signal", "threshold" (in the signal's units), "member_if"}
    boundary: dict[str, Any] | None = None
    #: ``run --online-lira N``'s attacks (:meth:`RunSummary.with_attack`): ``online`` (references trained with and
    #: without each target record) and, for LiRA online, the number of reference models
    threat_model: str | None = None
    reference_models: int | None = None

    _WHAT: ClassVar[str] = "attack"

    @property
    def tpr_at_1pct_fpr(self) -> float | None:
        """TPR at 1 % FPR (None when not measured)."""
        return self.tpr_at_fpr.get("0.01")

    @property
    def tpr_at_01pct_fpr(self) -> float | None:
        """TPR at 0.1 % FPR (None when not measured)."""
        return self.tpr_at_fpr.get("0.001")


def _check_attacks(primary: AttackResult, attacks: Mapping[str, AttackResult], where: str) -> None:
    """Each attack under its own name, and the primary one among them."""
    for name, r in attacks.items():
        if r.name != name:
            raise ResultFormatError(f"{where}.attacks[{name!r}] holds the result of {r.name!r}")
    if primary.name not in attacks:
        raise ResultFormatError(f"{where}.attack names {primary.name!r}, which is not in {where}.attacks")


# ---------------------------------------------------------------------------- a run
@dataclass(frozen=True, kw_only=True)
class Utility(Typed):
    """The victim's final utility: ``metric`` (accuracy, bleu, return), on its members (``train``)
    and on unseen records (``val``); None where not measured."""

    metric: str
    train: float | None = None
    val: float | None = None

    _WHAT: ClassVar[str] = "utility"


@dataclass(frozen=True, kw_only=True)
class EpochRecord(Typed):
    """One checkpoint of the victim's learning curve, with the primary attack's numbers at that
    epoch where attacks were fitted there (None elsewhere). Task-specific columns (navigation's
    ``steps_train`` / ``steps_val``) are in ``extra``: :meth:`get`."""

    epoch: int
    utility_train: float | None = None
    utility_val: float | None = None
    attack_accuracy: float | None = None
    attack_auc: float | None = None

    _WHAT: ClassVar[str] = "per_epoch row"
    #: open: a task's ``epoch_metrics`` adds its own curves (navigation's steps; a plugin's), each a number
    _STRICT: ClassVar[bool] = False

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str | None = None, name: str | None = None) -> "EpochRecord":
        row = super().from_dict(d, where, name)
        for k, v in row.extra.items():  # a task's own column: a number, or null where not measured
            null(NUM).read(v, f"{where or cls._WHAT}.{k}")
        return row

    def get(self, name: str, default: Any = None) -> Any:
        """A column by name, typed or task-specific."""
        if name in fields_of(type(self)):
            value = getattr(self, name)
            return default if value is None else value
        return self.extra.get(name, default)


@dataclass(frozen=True, kw_only=True)
class RepeatsBlock(Typed):
    """``run --repeats N``'s block (:func:`core.analyses.repeats.repeats_block`): per headline metric the mean
    with its 95 % interval over the repeats, the primary attack's ROC band, and repeat 0's
    bootstrap intervals over records (``within_run``)."""

    n: int
    seeds: tuple[int, ...]
    config_hashes: tuple[str, ...]
    metrics: dict[str, Estimate]
    roc_band: RocBand | None = None
    #: repeat 0's evaluation-set resolution (:func:`core.analyses.repeats.summary_resolution`): the band's 1/n floor
    resolution: Resolution | None = None
    within_run: dict[str, Estimate] | None = omissible()

    _WHAT: ClassVar[str] = "repeats"

    @property
    def n_nonmembers(self) -> int | None:
        """Repeat 0's evaluation non-members (the band's 1/n floor), None for a block written before ``resolution``."""
        return None if self.resolution is None else self.resolution.n_nonmembers


@dataclass(frozen=True, kw_only=True)
class RunRecords(Typed):
    """A run's per-record signals on its balanced evaluation set (the summary's ``records`` block,
    :func:`core.experiment.pipeline.record_signals`): ``membership`` (member or not, record by record),
    APE (paper 000 eq. 3) and mean cross-entropy, the answer ``length`` in steps, every attack's
    ``scores`` (None where an attack could not score a record) and each threshold attack's decision
    ``boundaries`` in its signal's units. Optional fields are absent in summaries written before them."""

    membership: tuple[bool, ...] | None = omissible()
    ape: tuple[float, ...] | None = omissible()
    cross_entropy: tuple[float, ...] | None = omissible()
    length: tuple[int, ...] | None = omissible()
    scores: dict[str, tuple[float | None, ...]] | None = omissible()
    boundaries: dict[str, dict[str, Any]] | None = omissible()

    _WHAT: ClassVar[str] = "records"

    def scores_of(self, attack: str) -> tuple[float | None, ...] | None:
        """``attack``'s per-record scores, None when the run has none for it."""
        return (self.scores or {}).get(attack)

    def has_scores(self, attack: str) -> bool:
        return attack in (self.scores or {})


@dataclass(frozen=True, kw_only=True)
class RunSummary(Typed):
    """One run's summary (``python -m core run``'s JSON, the cache's ``result`` entry).

    ``attack`` is the task's primary attack at the final epoch (no ROC); ``attacks`` every attack
    there (with ROC); ``attacks_by_epoch[str(epoch)]`` every attack fitted at a checkpoint (no ROC);
    ``per_epoch`` the learning curve. Optional blocks (absent in summaries written before them):
    ``shadow_fidelity``, ``resolution``, ``privacy`` (None unless DP-SGD), ``examples``, ``repeats``.
    """

    task: str
    arch: str
    preset: str | None = None
    config: dict[str, Any]
    config_hash: str
    training_hash: str | None = None
    params: int
    data: DataBlock | None = None
    device: str | None = None
    #: where the run was made (core.foundations.machine): CPU, cores, GPU, torch, load; None in older summaries
    machine: dict[str, Any] | None = None
    utility: Utility
    attack: AttackResult
    attacks: dict[str, AttackResult] = json_key(by_name=True)
    attacks_by_epoch: dict[str, dict[str, AttackResult]] | None = json_key(default=None, nullable=False, by_name=True)
    per_epoch: tuple[EpochRecord, ...]
    timings: dict[str, Any]
    cache_hit: bool | None = omissible()
    models_from_cache: dict[str, Any] | None = None
    cache_corrupted: list[Any] | None = None
    #: whose victim: ``{kind: trained | user weights, weights_sha256, members_sha256, n_members}``
    victim_source: dict[str, Any] | None = None
    #: do the shadows track the victim (core.experiment.fidelity), typed: core.experiment.fidelity_results
    shadow_fidelity: ShadowFidelity | None = None
    #: every registered attack that did not run here, and why
    attacks_not_run: dict[str, str] | None = None
    #: what one evaluation record is worth (:func:`core.measurement.metrics.resolution`); None in a summary written
    #: before the block (its config's ``n_eval`` says the balanced set's size: ``settings.n_eval``)
    resolution: Resolution | None = None
    privacy: DPSGDBlock | None = None
    examples: dict[str, Any] | list[Any] | None = json_key(default=None, conv=kind((dict, list), "a JSON object or a list"))
    records: dict[str, Any]
    repeats: RepeatsBlock | None = None

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

    @cached_property
    def settings(self) -> RunSettings:
        """The ``config`` block's fields that readers use, typed (read on first use)."""
        return RunSettings.from_dict(self.config, f"{self._WHAT}.config")

    @property
    def primary(self) -> str:
        """The primary attack's name."""
        return self.attack.name

    @property
    def seed(self) -> int:
        """The run's seed (the config's): repeat r of both architectures shares it (same split)."""
        seed = self.settings.seed
        if seed is None:
            raise ResultFormatError(f"{self._WHAT}.config lacks 'seed'")
        return int(seed)

    @property
    def epochs(self) -> int:
        """The number of training epochs (the config's)."""
        epochs = self.settings.epochs
        return int(epochs) if epochs is not None else (self.per_epoch[-1].epoch if self.per_epoch else 0)

    def with_attack(self, result: AttackResult, scores: Sequence[float | None]) -> "RunSummary":
        """A copy with one more attack at the final epoch (``run --online-lira``: attacks on references trained after
        the pipeline ran): its result under its name last in ``attacks``, its per-record scores last in the records'
        ``scores``, and no longer among ``attacks_not_run``; every other key where it was."""
        name = result.name
        scores_now = {n: list(v) for n, v in (self.per_record.scores or {}).items()}
        not_run = {n: why for n, why in (self.attacks_not_run or {}).items() if n != name}
        return self.with_json({
            "attacks": {**{n: r.to_dict() for n, r in self.attacks.items()}, name: result.to_dict()},
            "records": self.per_record.with_json({"scores": {**scores_now, name: list(scores)}}).to_dict(),
            **({} if self.attacks_not_run is None else {"attacks_not_run": not_run})})

    def attacks_at(self, epoch: int) -> dict[str, AttackResult]:
        """Every attack fitted at checkpoint ``epoch`` ({} where none was)."""
        return dict((self.attacks_by_epoch or {}).get(str(epoch), {}))

    def timing(self, name: str) -> float:
        """A timing in seconds (``total_s``, ``victim_trained_s``, …); 0 where the summary has none."""
        value = self.timings.get(name)
        return float(value) if value is not None and is_number(value) else 0.0

    @property
    def example_kind(self) -> str | None:
        """The ``examples`` block's kind (``translation``, ``navigation``), None without one."""
        if not isinstance(self.examples, dict):  # none, or a task's list of examples
            return None
        return ExampleShowcase.from_dict(self.examples, f"{self._WHAT}.examples").kind


# ---------------------------------------------------------------------------- defended points
@dataclass(frozen=True, kw_only=True)
class DefenseBand(Typed):
    """What a curve point's ``intervals`` are over (``band``: :func:`core.analyses.repeats.defense_curve_bands`,
    :func:`core.defenses.sweeps.collect_points_repeats`): N ``repeats``, D ``draws`` per point, ``over``
    ``repeats`` | ``draws`` | None (one repeat and one draw: no interval)."""

    repeats: int
    draws: int
    over: str | None = None

    _WHAT: ClassVar[str] = "band"


@dataclass(frozen=True, kw_only=True)
class DPSGDBlock(Typed):
    """A DP-SGD run's accountant record (:func:`core.training.dpsgd.report`: a summary's ``privacy``, a
    training-time point's ``dpsgd``): σ, C, q, steps, δ, the accountant and ε by RDP / PRV / GDP (``epsilons``,
    None where infinite or where an accountant failed: ``notes`` says why), the accountant ``history``
    ([σ, q, steps] per phase) to recompute them, |D| and the expected batch, the privacy ``unit``."""

    noise_multiplier: float
    max_grad_norm: float
    sample_rate: float
    steps: float  # a count, read as any JSON number (the layout never required an integer)
    delta: float
    accountant: str | None = None
    target_epsilon: float | None = None
    epsilon: float | None = None
    epsilons: dict[str, float | None]
    notes: dict[str, Any] | None = None
    history: list[Any] | None = None
    n_samples: float | None = None
    expected_batch_size: float | None = None
    unit: str | None = None
    poisson_sampling: bool | None = None

    _WHAT: ClassVar[str] = "dpsgd"
    _STRICT: ClassVar[bool] = False

    def epsilon_by(self, accountant: str) -> float | None:
        """ε by ``accountant`` (``rdp``, ``prv``, ``gdp``), None where infinite or not computed."""
        return self.epsilons.get(accountant)


@dataclass(frozen=True, kw_only=True)
class DefendedPoint(Typed):
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
    mechanism: str | None = omissible()
    draws: int | None = omissible()
    value_name: str | None = omissible()
    config_hash: str | None = omissible()
    training_hash: str | None = None
    attack: AttackResult
    #: each attack under its name: a result without a ``name`` key (a defended point's) takes its key
    attacks: dict[str, AttackResult] = json_key(by_name=True)
    #: the naive attack's empirical ε lower bound: its mean over draws (after training), or
    #: :func:`core.measurement.metrics.empirical_epsilon`'s block (a training-time point): :attr:`epsilon_hat`
    epsilon_lower_bound: float | EpsilonBound | None = json_key(default=None, conv=number_or_bound())
    #: draw 0's :class:`EpsilonBound` (after training), how the bound was found
    epsilon_lower_bound_detail: EpsilonBound | None = None
    records: dict[str, Any] | None = None
    adaptive_attack: AttackResult | None = None
    adaptive_attacks: dict[str, AttackResult] | None = json_key(default=None, by_name=True)
    epsilon: float | None = None
    delta: float | None = None
    gamma: float | None = None
    privacy_note: str | None = None
    utility_train: float | None = None
    utility_train_std: float | None = None
    utility: float | None = None
    utility_std: float | None = None
    utility_loss: float | None = None
    utility_loss_train: float | None = None
    timings: dict[str, Any] | None = None
    skipped_attacks: tuple[str, ...] | None = None
    cache_hit: bool | None = omissible()
    dpsgd: DPSGDBlock | None = None
    intervals: dict[str, Estimate] | None = None
    band: DefenseBand | None = None

    _WHAT: ClassVar[str] = "point"
    #: open: a registered mechanism adds its own keys to its points (kept in ``extra``)
    _STRICT: ClassVar[bool] = False

    def interval(self, metric: str) -> Estimate | None:
        """The 95 % interval of ``metric`` (``attack_accuracy``, ``attack_auc``, ``utility``,
        ``utility_loss``) over repeats × draws, None without ``--repeats``."""
        return (self.intervals or {}).get(metric)

    @cached_property
    def per_record(self) -> RunRecords | None:
        """The ``records`` block typed (a run's records layout: membership, APE, cross-entropy, the naive attacks'
        scores on the defended outputs), read on first use; None without one. ``records`` stays the JSON block."""
        return RunRecords.from_dict(self.records, f"{self._WHAT}.records") if self.records else None

    @property
    def epsilon_hat(self) -> float | None:
        """The empirical ε lower bound as a number, whichever layout holds it."""
        bound = self.epsilon_lower_bound
        return bound.lower_bound if isinstance(bound, EpsilonBound) else bound

    @property
    def guarantee(self) -> str | None:
        """The mechanism's one-word status of its guarantee (Dir_k: ``(ε, δ)-DP`` or why there is none), if any."""
        return self.extra.get("guarantee")


@dataclass(frozen=True, kw_only=True)
class DefenseBaseline(Typed):
    """The undefended numbers a defended point is compared with (``defend``'s ``baseline``,
    ``Defender.baseline``): the attacks, utility on unseen records and on members, and the
    primary attack's empirical ε lower bound (a number, or :func:`core.measurement.metrics.empirical_epsilon`'s
    block)."""

    attack: AttackResult
    attacks: dict[str, AttackResult] = json_key(by_name=True)
    utility: float | None = None
    utility_train: float | None = None
    utility_metric: str | None = None
    #: the training-time sweeps' (:func:`core.defenses.sweeps.baseline_of`): the utility of a model that learned
    #: nothing (:func:`core.experiment.fidelity.chance_utility`) and, after the bound, the undefended run's config hash
    utility_chance: float | None = None
    epsilon_lower_bound: float | EpsilonBound | None = json_key(default=None, conv=number_or_bound())
    config_hash: str | None = omissible()

    _WHAT: ClassVar[str] = "baseline"
    #: open: a layout's keys this version does not type are kept in ``extra``
    _STRICT: ClassVar[bool] = False


def runs(summaries: Sequence[Mapping[str, Any]]) -> list[RunSummary]:
    """Each summary's JSON typed: where run JSON is read (files, planted test data)."""
    return [RunSummary.from_dict(s) for s in summaries]
