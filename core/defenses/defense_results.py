"""The defenses' typed results: ``python -m core defend``'s JSON (:class:`DefenseRun`) and the Training defenses
page's utility-cost comparison (:class:`UtilityCost`, :class:`UtilityCostRow`).

Built from the layout's dict by ``from_dict`` where they are born, so ``to_dict`` writes exactly that JSON
(:mod:`core.foundations.typed_json`). Points and baselines are :class:`core.experiment.results.DefendedPoint` and
:class:`core.experiment.results.DefenseBaseline`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from core.experiment.results import DefendedPoint, DefenseBaseline
from core.foundations.typed_json import Typed, omissible
from core.measurement.metrics import AttackMetrics, scores_for_json
from core.measurement.stats import Estimate, Verdict


# ---------------------------------------------------------------------------- a point's draws
def per_record_for_json(values: Any) -> Sequence[float | None]:
    """Per-record values for JSON: each float64 exactly (:func:`core.measurement.metrics.scores_for_json`; 6
    decimals tied a confident model's losses), None where not finite; vectorised, as every slider step
    writes a few thousand of them. A list either way (the float list itself where every value is finite)."""
    a = scores_for_json(values)
    finite = np.isfinite(a)
    return a if finite.all() else [v if f else None for v, f in zip(a, finite.tolist())]


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value) of a point's per-draw values."""
    a = np.asarray(values, np.float64)
    return float(a.mean()), float(a.std(ddof=1)) if len(a) > 1 else 0.0


def summarise_draws(per_draw: Sequence[Mapping[str, AttackMetrics]], primary: str
                    ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Mean (± std over draws) of every attack's headline numbers, ``per_draw[d]``: draw d's metrics by attack name.
    Returns (the ``primary`` attack's JSON, every attack's JSON by name), a point's ``attack`` and ``attacks``."""
    names = per_draw[0].keys()
    attacks = {}
    for name in names:
        rows = [d[name] for d in per_draw]
        out: dict[str, Any] = {}
        for metric in ("accuracy", "advantage", "auc"):
            out[metric], out[f"{metric}_std"] = mean_std([getattr(r, metric) for r in rows])
        out.update(tpr_at_fpr={f: mean_std([r.tpr_at_fpr[f] for r in rows])[0] for f in rows[0].tpr_at_fpr},
                   boundary=rows[0].boundary)
        attacks[name] = out
    head = {k: v for k, v in attacks[primary].items() if k != "boundary"}
    return {"name": primary, **head}, attacks


# ---------------------------------------------------------------------------- defend's JSON
@dataclass(frozen=True, kw_only=True)
class Unreachable(Typed):
    """A target ε a sweep could not reach (the value and the one-line reason): not computed."""

    value: float
    error: str

    _WHAT: ClassVar[str] = "unreachable"


@dataclass(frozen=True, kw_only=True)
class Difference(Typed):
    """FFNN − RNN paired by repeat (:class:`core.measurement.stats.PairedDifference`'s JSON, with ``of``)."""

    of: str | None = omissible()
    a: Estimate | None = omissible()
    b: Estimate | None = omissible()
    diff: Estimate
    p_t: float | None = None
    p_permutation: float | None = None
    permutation_exact: bool | None = omissible()
    effect_size: float | None = None
    n: int | None = omissible()

    _WHAT: ClassVar[str] = "difference"


@dataclass(frozen=True, kw_only=True)
class ArchLoss(Typed):
    """One architecture's utility loss at a value: the mean over repeats and each repeat's."""

    utility_loss: float | None
    per_repeat: tuple[float, ...] | None = omissible(())

    _WHAT: ClassVar[str] = "loss"


@dataclass(frozen=True, kw_only=True)
class ArchPair(Typed):
    """A number per architecture (the ε each reached at a value; None: ∞ or not measured)."""

    ffnn: float | None = None
    rnn: float | None = None

    _WHAT: ClassVar[str] = "pair"


@dataclass(frozen=True, kw_only=True)
class UtilityCostRow(Typed):
    """One swept value of :class:`UtilityCost`: both architectures' utility loss, their paired difference and
    its verdict (``label`` "inconclusive (one repeat)" with N = 1), whether the value is ``comparable`` (and
    why not), and under DP-SGD the ε each reached."""

    value: float
    value_name: str | None = omissible()
    n: int
    ffnn: ArchLoss
    rnn: ArchLoss
    difference: Difference
    verdict: Verdict
    label: str
    sentence: str | None = omissible()
    comparable: bool
    not_comparable: tuple[str, ...] | None = omissible(())
    epsilon: ArchPair | None = None
    same_epsilon: bool | None = None
    epsilon_note: str | None = omissible()

    _WHAT: ClassVar[str] = "utility cost row"


@dataclass(frozen=True, kw_only=True)
class UtilityCost(Typed):
    """:func:`core.defenses.utility_cost.utility_cost_comparison`'s block (the sweep JSON's
    ``utility_cost_comparison``): the question, the values compared (:class:`UtilityCostRow`) and the summary
    line; ``how`` (the CLI) says which cached runs it read. A comparison that could not start has the question,
    no values and the summary saying why."""

    question: str
    metric: str | None = omissible()
    of: str | None = omissible()
    expected: int | None = omissible()
    claim: str | None = omissible()
    compared_at: str | None = omissible()
    values: tuple[UtilityCostRow, ...]
    repeats: int | None = omissible()
    note: str | None = None
    per_value_tests: str | None = omissible()
    summary: str | None = omissible()
    how: str | None = omissible()

    _WHAT: ClassVar[str] = "utility_cost_comparison"


@dataclass(frozen=True, kw_only=True)
class DefenseRun(Typed):
    """``python -m core defend``'s JSON: one config's ``baseline`` (undefended) and a defended point per value.

    After training (:func:`core.defenses.defender.defense_run`): ``spec`` the
    :class:`core.defenses.spec.DefenseSpec` of the first value, ``sensitivity`` the GPM's SensitivitySampler
    estimate (None without); ``defend --repeats N`` adds ``repeats`` and each point's ``intervals``. A
    training-time sweep (:func:`core.defenses.sweeps.sweep`): ``attacker`` adaptive with its ``attacker_note``,
    ``spec`` the grid, ``unreachable`` the target ε not reached, and the CLI's ``utility_cost_comparison``.
    """

    task: str
    arch: str
    preset: str | None = None
    mechanism: str
    attacker: str
    attacker_note: str | None = omissible()
    config_hash: str
    training_hash: str | None = None
    spec: dict[str, Any]
    sensitivity: dict[str, Any] | None = None
    baseline: DefenseBaseline
    points: tuple[DefendedPoint, ...]
    unreachable: tuple[Unreachable, ...] | None = omissible()
    utility_cost_comparison: UtilityCost | None = None
    repeats: dict[str, Any] | None = None

    _WHAT: ClassVar[str] = "defend"
