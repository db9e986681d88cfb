"""The attacker's reference budget: an attack's numbers against the number of reference models it uses.

LiRA and RMIA (:mod:`core.experiment.reference_attacks`) compare the victim with reference models; more
references estimate each record's "OUT" behaviour better, up to a point. :func:`budget_curve` takes
any ``score(subset) -> per-record scores`` (the attack run with only the references in ``subset``),
and for each budget n draws which n references are used — every subset when there are at most
``resamples`` of them, else ``resamples`` seeded draws — and reports AUC and TPR at 1 % / 0.1 % FPR
with their mean and 2.5–97.5 percentiles over the draws (the spread that comes from *which*
references the attacker happened to hold; with all references there is one draw and no spread).

:func:`flattening_point` says where the curve flattens: the smallest budget whose mean AUC is
within ``tolerance`` of the largest budget's, below the largest (none with fewer than three budgets). Pure numpy; no training.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Sequence

import numpy as np

from core.foundations.typed_json import Open, omissible
from core.measurement.metrics import LOW_FPRS, roc_auc, tpr_at_fpr

#: AUC gain below which more references are said not to help (absolute AUC)
FLAT_TOLERANCE = 0.01


def budgets(n_available: int, minimum: int = 1) -> tuple[int, ...]:
    """1, 2, 4, … (from ``minimum``) up to ``n_available``, which is always included."""
    if n_available < minimum:
        return ()
    out = {n_available}
    n = 1
    while n < n_available:
        if n >= minimum:
            out.add(n)
        n *= 2
    return tuple(sorted(out))


def subsets(n_available: int, n: int, resamples: int, seed: int = 0) -> list[tuple[int, ...]]:
    """Which references a budget of ``n`` uses: all C(n_available, n) subsets when there are at most
    ``resamples``, else ``resamples`` distinct seeded draws."""
    total = math.comb(n_available, n)
    if total <= resamples:
        return [tuple(c) for c in itertools.combinations(range(n_available), n)]
    rng = np.random.default_rng([seed, n_available, n])
    seen: set[tuple[int, ...]] = set()
    while len(seen) < resamples:
        seen.add(tuple(sorted(int(i) for i in rng.choice(n_available, n, replace=False))))
    return sorted(seen)


@dataclass(frozen=True, kw_only=True)
class BudgetPoint(Open):
    """One budget: the metric's mean and 95 % spread over the ``draws`` reference subsets; TPR per FPR (keys
    ``"0.01"``, ``"0.001"``). Its JSON is read back as this class too (``from_dict``)."""

    n_references: int
    draws: int
    auc: float
    auc_low: float
    auc_high: float
    tpr_at_fpr: dict[str, float]
    tpr_low: dict[str, float]
    tpr_high: dict[str, float]

    _WHAT: ClassVar[str] = "budget point"


@dataclass(frozen=True, kw_only=True)
class BudgetCurve(Open):
    """One attack's curve against the number of references; its JSON is read back as this class too
    (``from_dict``: the fields a reader needs required, the others None where a layout lacks them)."""

    attack: str | None = omissible()
    n_available: int
    points: tuple[BudgetPoint, ...]
    #: smallest budget within FLAT_TOLERANCE of the largest budget's mean AUC
    flattens_at: int | None = None
    flat_tolerance: float | None = omissible(FLAT_TOLERANCE)
    n_members: int | None = omissible()
    n_non_members: int | None = omissible()

    _WHAT: ClassVar[str] = "budget curve"
    _ALL: ClassVar[bool] = True  # built here, every field is written (flattens_at as null)


#: budgets a curve needs before it can be said to flatten: one to reach the level, one beyond it to stay there, and
#: one before it to rise from (with two points, "flattens at 4 of 4" only said where the curve ended)
MIN_BUDGETS_FOR_PLATEAU = 3


def flattening_point(sizes: Sequence[int], mean_auc: Sequence[float], tolerance: float = FLAT_TOLERANCE) -> int | None:
    """The smallest budget whose mean AUC is within ``tolerance`` of the last (largest) budget's — None where no
    plateau is seen: fewer than :data:`MIN_BUDGETS_FOR_PLATEAU` budgets, or only the last one is there."""
    if len(sizes) < MIN_BUDGETS_FOR_PLATEAU:
        return None
    last = mean_auc[-1]
    for n, a in zip(sizes[:-1], mean_auc[:-1]):
        if a >= last - tolerance:
            return int(n)
    return None


def _spread(values: list[float]) -> tuple[float, float, float]:
    v = np.asarray(values, np.float64)
    return float(v.mean()), float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))


def budget_curve(attack: str, score: Callable[[tuple[int, ...]], np.ndarray], n_available: int, membership: Any,
                 sizes: Sequence[int] | None = None, resamples: int = 8, seed: int = 0, minimum: int = 1) -> BudgetCurve:
    """The attack's AUC and TPR at low FPR against the number of references (module docstring).

    ``score(subset)`` returns per-record scores ("higher = member") of the evaluated records when
    the attack may use only the references whose positions are in ``subset``; records it cannot
    score (NaN) are left out of that draw's metrics.
    """
    y = np.asarray(membership, bool)
    sizes = tuple(sizes) if sizes else budgets(n_available, minimum)
    points = []
    for n in sizes:
        aucs: list[float] = []
        tprs: dict[str, list[float]] = {str(f): [] for f in LOW_FPRS}
        for sub in subsets(n_available, n, resamples, seed):
            s = np.asarray(score(sub), np.float64)
            ok = np.isfinite(s)
            if ok.sum() < 2 or y[ok].all() or not y[ok].any():
                continue
            aucs.append(roc_auc(s[ok], y[ok]))
            for f in LOW_FPRS:
                tprs[str(f)].append(tpr_at_fpr(s[ok], y[ok], f))
        if not aucs:
            continue
        a, lo, hi = _spread(aucs)
        t = {k: _spread(v) for k, v in tprs.items()}
        points.append(BudgetPoint(n_references=int(n), draws=len(aucs), auc=a, auc_low=lo, auc_high=hi,
                                  tpr_at_fpr={k: v[0] for k, v in t.items()}, tpr_low={k: v[1] for k, v in t.items()},
                                  tpr_high={k: v[2] for k, v in t.items()}))
    flat = flattening_point([p.n_references for p in points], [p.auc for p in points])
    return BudgetCurve(attack=attack, n_available=int(n_available), points=tuple(points), flattens_at=flat,
                       flat_tolerance=FLAT_TOLERANCE, n_members=int(y.sum()), n_non_members=int((~y).sum()))
