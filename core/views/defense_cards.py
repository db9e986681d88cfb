"""The Defenses page's cards of one defended point, as data: each card's label, its number, its change from the
undefended run and its 95 % interval; the guarantee (ε, δ, γ) goes into a caption.

Every number a card shows is the one its label names — each attack its own card, never the larger of two. A TPR
at an FPR finer than one non-member is named "TPR at 0 false positives"; one resting on one or two false
positives is flagged (biased up, its interval covers less than it says). Intervals are over the records of draw
1's scores: DeLong's variance for an AUC, Clopper–Pearson for an accuracy.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

from core.experiment.results import AttackResult, DefendedPoint, DefenseBaseline
from core.foundations.names import ATTACK_SHORT
from core.measurement.bootstrap import delong_auc
from core.measurement.stats import CONFIDENCE, Estimate

#: the low FPR the strong attacks' cards read
LOW_FPR = 0.001


@dataclass(frozen=True)
class Card:
    """One ``st.metric``: its ``row`` (cards of one row sit side by side), ``label``, ``value`` and ``delta`` (the
    change from the undefended run, None: none) and its ``help``."""

    row: str
    label: str
    value: str
    delta: str | None = None
    help: str | None = None


def tpr_label(fpr: float, n_nonmembers: int, prefix: str = "") -> tuple[str, str | None]:
    """The name of a TPR at ``fpr`` with ``n_nonmembers`` non-members, and a flag (None: none). Below one
    non-member's step (⌊fpr·n⌋ = 0) it is the TPR at zero false positives and says so; where the FPR allows one
    or two false positives it is flagged: it rests on that many highest-scoring non-members."""
    k = int(math.floor(fpr * n_nonmembers + 1e-12))
    head = f"{prefix} " if prefix else ""
    if k == 0:
        return (f"{head}TPR at 0 false positives", f"FPR {fpr:g} is below one non-member's step (1/{n_nonmembers}): "
                                                   "this is the TPR at zero false positives")
    name = f"{head}TPR @ {fpr * 100:g} % FPR"
    if k <= 2:
        return (f"{name} (≤ {k} FP)", f"FPR {fpr:g} allows {k} false positive{'s' if k > 1 else ''} among "
                                      f"{n_nonmembers} non-members: an estimate biased up, whose bootstrap interval "
                                      "covers less than 95 %; read it as a flag, not a measurement")
    return name, None


def accuracy_interval(accuracy: float, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Clopper–Pearson interval of an accuracy over ``n`` records (the count ``round(accuracy·n)``)."""
    k = int(round(accuracy * n))
    alpha = 1 - confidence
    low = 0.0 if k == 0 else float(sps.beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k == n else float(sps.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return low, high


def record_intervals(point: DefendedPoint, names: list[str]) -> dict[str, Estimate]:
    """Per attack of ``names`` whose draw-1 per-record scores the point stores, its AUC's 95 % interval over the
    records (:func:`delong_auc`)."""
    records: dict[str, Any] = point.records or {}
    membership = records.get("membership")
    scores = records.get("scores") or {}
    out: dict[str, Estimate] = {}
    if not membership:
        return out
    y = np.asarray(membership, bool)
    if y.all() or not y.any():
        return out
    for name in names:
        s = scores.get(name)
        if s is None or len(s) != len(y) or any(v is None for v in s):
            continue
        arr = np.asarray(s, np.float64)
        if not np.isfinite(arr).all():
            continue
        out[name] = delong_auc(arr, y)
    return out


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _delta(now: float | None, then: float | None) -> str | None:
    return None if now is None or then is None else f"{now - then:+.3f}"


def _interval(e: Estimate | None) -> str:
    return "" if e is None or e.ci_low is None else f"[{e.ci_low:.2f}, {e.ci_high:.2f}]"


def point_cards(point: DefendedPoint, base: DefenseBaseline, n_nonmembers: int) -> tuple[list[Card], str, str]:
    """The cards of one architecture at ``point``, the line of their 95 % intervals, and the guarantee's caption."""
    a: AttackResult = point.attack
    n = ((a.n_members or 0) + (a.n_nonmembers or 0)) or len((point.records or {}).get("membership") or ()) or None
    strong = [s for s in ("lira", "rmia") if s in point.attacks and s in base.attacks]
    draws = f"mean of {point.draws} draws" if (point.draws or 1) > 1 else "one draw"
    cards = [
        Card("r1", "attack accuracy", _num(a.accuracy), _delta(a.accuracy, base.attack.accuracy),
             f"naive attacker ({a.name}), {draws}; undefended {base.attack.accuracy:.3f}"),
        Card("r1", "AUC", _num(a.auc), _delta(a.auc, base.attack.auc),
             f"naive attacker ({a.name}), {draws}; undefended {base.attack.auc:.3f}"),
        Card("r1", "ε̂ lower bound", "—" if point.epsilon_hat is None else f"{point.epsilon_hat:.2f}", None,
             "one 95 % lower bound on ε from the naive attacker's scores, every draw's trials pooled (the threshold "
             "chosen on half the records, the bound read on the other half); it holds over the mechanism's draws on "
             "these records")]
    for s in strong:
        r, r0 = point.attacks[s], base.attacks[s]
        short = ATTACK_SHORT.get(s, s)
        label, flag = tpr_label(LOW_FPR, n_nonmembers, short)
        cards += [
            Card(s, f"{short} AUC", _num(r.auc), _delta(r.auc, r0.auc),
                 f"naive: references and threshold fitted on undefended shadows, {draws}; undefended {r0.auc:.3f}"),
            Card(s, label, _num(r.tpr_at_01pct_fpr), _delta(r.tpr_at_01pct_fpr, r0.tpr_at_01pct_fpr),
                 (flag or f"{short} alone at FPR {LOW_FPR:g}") + f"; {draws}")]
    intervals = record_intervals(point, [a.name, *strong])
    parts = []
    if n:
        lo, hi = accuracy_interval(a.accuracy, int(n))
        parts.append(f"accuracy [{lo:.2f}, {hi:.2f}]")
    for name, e in intervals.items():
        parts.append(f"{'AUC' if name == a.name else ATTACK_SHORT.get(name, name) + ' AUC'} {_interval(e)}")
    where = (f"over the {len((point.records or {}).get('membership') or ())} records of draw 1 (DeLong)"
             + (f" (the cards: the mean of {point.draws} draws)" if (point.draws or 1) > 1 else ""))
    interval_line = f"95 % intervals — {' · '.join(parts)}; {where}; accuracy: Clopper–Pearson" if parts else ""
    # the guarantee: its numbers where it has them, else the mechanism's own words (e.g. "vacuous (δ ≥ 1): …")
    guarantee = []
    if point.epsilon is not None:
        guarantee.append(f"ε (theory) = {point.epsilon:.3g}")
        if point.delta is not None:
            guarantee.append(f"δ = {point.delta:.2g}")
    if point.gamma is not None:
        guarantee.append(f"random DP with confidence γ = {point.gamma:.3f}")
    note = point.privacy_note or (point.guarantee if point.epsilon is None else None) or ""
    caption = "Guarantee at this value: " + "; ".join([*guarantee, *([note] if note else [])])
    return cards, interval_line, caption
