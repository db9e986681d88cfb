"""Membership inference from a file of scores, with no model ("Just the scores").

The file (:mod:`core.analyses.scores_file`) gives, per record, whether the target model trained
on it (``member``), the target's loss (or logits) and optionally reference models' losses on the
same record. From it:

* **Threshold attacks**: ``loss`` (member if the loss is low; Yeom et al. 2018) and, with logits,
  ``entropy`` (member if softmax(logits) is confident). Their thresholds are **cross-fitted**: the
  records are split in two halves, stratified by membership (seeded); the threshold fitted on one
  half (the one maximising TPR − FPR there) decides the other half's records, and the reverse, so
  no record is decided by a threshold fitted on it. Advantage TPR − FPR and the balanced accuracy
  ½(1 + advantage) are read off these out-of-half decisions.
* **LiRA, offline** (with ≥ 2 reference losses): per record, a Gaussian fitted to the OUT
  references' logit-scaled confidence φ = log c − log(1 − c), c = e^−loss; the score is the
  target's one-sided z (Carlini et al. 2022; the variance pooled over records). **Online** LiRA
  as well when ``ref_in`` says every record has IN and OUT references: the log-likelihood ratio.
  The references' losses need no membership label, so the scores are not fitted on the scored
  records; only their thresholds are, cross-fitted as above.
* **RMIA, offline** (Zarifzadeh et al. 2024) with Pr(x|θ) = e^−loss: the share of population
  records z with LR(x, z) ≥ 1. Population and the offline scaling ``a`` are cross-fitted too: a
  half's records are scored against the *other* half's non-members, with the ``a`` that gave the
  best AUC on that other half.
* For every attack: ROC (full; drawn log-log), AUC and TPR at 1 % and 0.1 % FPR with a stratified
  BCa bootstrap 95 % interval over records (:func:`core.measurement.bootstrap.bootstrap_metric`); a
  TPR at an FPR below 1/(non-members) is labelled "TPR at 0 false positives (FPR < 1/n)" and gets
  no verdict; a ROC band (pointwise bootstrap); ε̂, a 95 % lower bound on ε (below); per slice
  (``slice`` column and ``label``) AUC and TPR at 1 % FPR with bootstrap intervals
  (:func:`core.measurement.slices.slice_metrics`); and each reference attack's AUC minus the loss
  attack's, paired bootstrap interval over the same resampled records.
* **ε̂**: an ε-DP training forces TPR ≤ e^ε·FPR at every threshold (and TNR ≤ e^ε·FNR). The
  threshold and direction are chosen on one half (the largest Clopper–Pearson-bounded ε there), the
  bound ln(TPR_low / FPR_high) is computed on the other half at that single threshold; both
  halves take a turn, each at 97.5 % (Bonferroni), and the larger bound is reported: it holds with
  ≥ 95 %.

A finding needs its interval: ``leak`` when the AUC's 95 % interval lies above 0.5,
``inconclusive`` when it contains 0.5, ``below chance`` when it lies below (the scores rank
members lower: a sign error in the file?). The math is numpy/scipy; nothing here imports torch.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy import stats as sps

from core.analyses.scores_file import MAX_SLICES, MIN_PER_CLASS, ScoresTable, read_scores
from core.foundations.paths import data_root
from core.measurement.bootstrap import RocBand, at_bound_interval, bootstrap_metric, roc_band_bootstrap
from core.measurement.metrics import clopper_pearson, roc_auc, roc_curve, roc_points_kept
from core.measurement.reference_math import lira_unit_scores, logit_confidence_from_loss, rmia_from_log_likelihoods
from core.measurement.slices import SliceResult, slice_metrics
from core.measurement.stats import CONFIDENCE, Estimate, is_zero_width

#: bootstrap resamples of every interval over records (AUC, TPR, advantage, AUC differences) ...
BOOTSTRAP = 1000
#: ... fewer on large files (resamples × records at most this, never below MIN_BOOTSTRAP): each
#: resample ranks every record
BOOTSTRAP_CELLS = 20_000_000
MIN_BOOTSTRAP = 200
#: resamples of the ROC band
ROC_BAND_BOOTSTRAP = 500
#: the FPRs at which TPR is reported
LOW_FPRS = (0.01, 0.001)
#: RMIA's offline scaling a is chosen from this grid on the other half (as the built-in tasks do on the shadows)
RMIA_A_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
#: the attacks, in the order they are reported, with what each does
ATTACKS = {
    "loss": "loss threshold: member if the target model's loss on the record is below a threshold",
    "entropy": "entropy threshold: member if the entropy of softmax(logits) is below a threshold",
    "lira_offline": "offline LiRA: the target's logit-scaled confidence as a z-score against the OUT reference "
                    "models' Gaussian on the same record (variance pooled over records)",
    "lira_online": "online LiRA: log-likelihood ratio of the target's logit-scaled confidence under the IN and the "
                   "OUT reference models' Gaussians on the same record",
    "rmia": "offline RMIA: the share of population records (the other half's non-members) that the record's "
            "likelihood ratio against the references beats",
}
FINDINGS = ("leak", "inconclusive", "below chance")


# ---------------------------------------------------------------------------- results
@dataclass(frozen=True)
class LowFpr:
    """TPR at one low FPR. ``resolved``: the non-members allow at least one false positive at
    this FPR; when not, the number is the TPR at zero false positives, labelled so, with no verdict."""

    fpr: float
    label: str
    estimate: Estimate
    resolved: bool
    verdict: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"fpr": self.fpr, "label": self.label, "resolved": self.resolved, "verdict": self.verdict,
                **self.estimate.to_dict()}


@dataclass(frozen=True)
class CrossFittedEpsilon:
    """ε̂: a lower bound on the ε of any DP guarantee the training could have (module docstring).

    ``lower_bound`` holds with ``confidence``; ``estimate`` is ln(TPR/FPR) on the evaluation half at
    the chosen threshold (None when no false positive there: unbounded); ``tpr``/``fpr`` there;
    ``direction`` ``members flagged`` (TPR vs FPR) or ``non-members passed`` (TNR vs FNR)."""

    lower_bound: float
    estimate: float | None
    tpr: float
    fpr: float
    direction: str
    confidence: float
    method: str

    def to_dict(self) -> dict[str, Any]:
        return {"lower_bound": self.lower_bound, "estimate": self.estimate, "tpr": self.tpr, "fpr": self.fpr,
                "direction": self.direction, "confidence": self.confidence, "method": self.method}


@dataclass(frozen=True)
class AttackScores:
    """One attack on the file's records.

    Attributes:
        name, description: the attack (:data:`ATTACKS`).
        auc: AUC with its BCa bootstrap 95 % interval over records (n = records).
        low_fpr: TPR at each of :data:`LOW_FPRS`.
        advantage: TPR − FPR of the cross-fitted threshold decisions, bootstrap interval.
        thresholds: the thresholds fitted on half 0 and half 1 (each decides the other half), in the
            attack's score units ("higher = member").
        epsilon: ε̂ (:class:`CrossFittedEpsilon`).
        roc_fpr, roc_tpr: the ROC curve on all records
            (the points :func:`core.measurement.metrics.roc_points_kept` keeps).
        roc_band: pointwise bootstrap band of the ROC on a log-spaced FPR grid.
        finding, reason: ``leak`` / ``inconclusive`` / ``below chance`` from the AUC's interval.
        scores: (N,) the per-record scores ("higher = member"; not written to JSON).
    """

    name: str
    description: str
    auc: Estimate
    low_fpr: tuple[LowFpr, ...]
    advantage: Estimate
    thresholds: tuple[float, float]
    epsilon: CrossFittedEpsilon
    roc_fpr: tuple[float, ...]
    roc_tpr: tuple[float, ...]
    roc_band: RocBand
    finding: str
    reason: str
    scores: np.ndarray = field(repr=False, compare=False, default_factory=lambda: np.zeros(0))

    @property
    def balanced_accuracy(self) -> Estimate:
        """½(TPR + TNR) = ½(1 + advantage), with the advantage's interval mapped."""
        a = self.advantage
        half = (lambda v: None if v is None else 0.5 * (1 + v))
        return Estimate(0.5 * (1 + a.mean), half(a.ci_low), half(a.ci_high), a.n, (), a.method, a.confidence, a.note)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "finding": self.finding, "reason": self.reason,
                "auc": self.auc.to_dict(), "tpr_at_low_fpr": [r.to_dict() for r in self.low_fpr],
                "advantage": self.advantage.to_dict(), "balanced_accuracy": self.balanced_accuracy.to_dict(),
                "thresholds": {"fitted_on_half_0": _num(self.thresholds[0]), "fitted_on_half_1": _num(self.thresholds[1])},
                "epsilon": self.epsilon.to_dict(), "roc_fpr": list(self.roc_fpr), "roc_tpr": list(self.roc_tpr),
                "roc_band": self.roc_band.to_dict()}


@dataclass(frozen=True)
class AucDifference:
    """AUC of attack ``a`` minus attack ``b`` on the same records, paired stratified bootstrap
    (percentile) interval; ``verdict`` ``a higher`` / ``b higher`` / ``inconclusive``."""

    a: str
    b: str
    difference: Estimate
    verdict: str

    def to_dict(self) -> dict[str, Any]:
        return {"of": f"{self.a} - {self.b}", "verdict": self.verdict, **self.difference.to_dict()}


@dataclass(frozen=True)
class ScoresResult:
    """Everything ``python -m core score`` writes (:meth:`to_dict`) and a page draws: the typed
    :attr:`attacks`, :attr:`comparisons` and :attr:`slices` read by attribute, :meth:`roc` for a curve."""

    source: str
    n_records: int
    n_members: int
    n_nonmembers: int
    columns: tuple[str, ...]
    n_references: int
    attacks: tuple[AttackScores, ...]
    comparisons: tuple[AucDifference, ...]
    slices: tuple[tuple[str, SliceResult], ...]
    notes: tuple[str, ...]
    method: dict[str, Any]

    def attack(self, name: str) -> AttackScores:
        for a in self.attacks:
            if a.name == name:
                return a
        raise KeyError(f"no attack {name!r} in this result (have: {', '.join(a.name for a in self.attacks)})")

    def roc(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(fpr, tpr) of one attack's ROC, ready to draw (on log axes, clip at 1/(2·non-members))."""
        a = self.attack(name)
        return np.asarray(a.roc_fpr), np.asarray(a.roc_tpr)

    def slice_rows(self) -> list[dict[str, Any]]:
        """One row per (attack, slicing, slice): the JSON's ``slices`` and the page's per-slice table."""
        return [{"attack": attack, **s.to_dict()} for attack, s in self.slices]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "scores", "source": self.source, "n_records": self.n_records, "n_members": self.n_members,
                "n_nonmembers": self.n_nonmembers, "columns": list(self.columns), "n_references": self.n_references,
                "attacks": {a.name: a.to_dict() for a in self.attacks},
                "comparisons": [c.to_dict() for c in self.comparisons],
                "slices": self.slice_rows(), "notes": list(self.notes), "method": dict(self.method)}


def _num(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


# ---------------------------------------------------------------------------- halves and thresholds
def halves(member: np.ndarray, seed: int = 0) -> np.ndarray:
    """(N,) 0/1: each record's half, members and non-members split evenly (seeded permutation)."""
    half = np.zeros(len(member), np.int64)
    rng = np.random.default_rng(seed)
    for group in (np.flatnonzero(member), np.flatnonzero(~member)):
        half[rng.permutation(group)[1::2]] = 1
    return half


def youden_threshold(scores: np.ndarray, member: np.ndarray) -> float:
    """The threshold maximising TPR − FPR on (scores, member): member iff score ≥ t (midway to the
    next lower score, so the decisions on new records do not hang on exact ties)."""
    fpr, tpr, thr = roc_curve(scores, member)
    i = int(np.argmax(tpr - fpr))
    if i == 0:
        return float("inf")
    lower = thr[i + 1] if i + 1 < len(thr) else thr[i] - 1.0
    return float((thr[i] + lower) / 2.0)


def cross_fitted_decisions(scores: np.ndarray, member: np.ndarray, half: np.ndarray
                           ) -> tuple[np.ndarray, tuple[float, float]]:
    """Each record decided by the threshold fitted on the other half; (decisions, (t₀, t₁))."""
    t = tuple(youden_threshold(scores[half == k], member[half == k]) for k in (0, 1))
    decide = np.where(half == 0, scores >= t[1], scores >= t[0])
    return decide, (t[0], t[1])


def _stratified_indices(member: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, N) resampled record indices, members and non-members resampled separately."""
    pos, neg = np.flatnonzero(member), np.flatnonzero(~member)
    return np.concatenate([pos[rng.integers(0, len(pos), (n_boot, len(pos)))],
                           neg[rng.integers(0, len(neg), (n_boot, len(neg)))]], axis=1)


def _percentile(theta: float, values: np.ndarray, n: int, confidence: float, note: str = "") -> Estimate:
    lo, hi = np.quantile(values, [(1 - confidence) / 2, (1 + confidence) / 2])
    return Estimate(float(theta), float(lo), float(hi), int(n), (), "bootstrap-percentile", confidence, note)


def advantage_interval(decide: np.ndarray, member: np.ndarray, n_boot: int = BOOTSTRAP, seed: int = 0,
                       confidence: float = CONFIDENCE) -> Estimate:
    """TPR − FPR of fixed decisions with a stratified percentile bootstrap interval over records."""
    rng = np.random.default_rng(seed)
    n1 = int(member.sum())
    d = decide.astype(np.float64)
    vals = np.empty(n_boot)
    chunk = max(1, 2_000_000 // len(d))
    for start in range(0, n_boot, chunk):
        idx = _stratified_indices(member, min(chunk, n_boot - start), rng)
        vals[start:start + len(idx)] = d[idx[:, :n1]].mean(1) - d[idx[:, n1:]].mean(1)
    theta = float(d[member].mean() - d[~member].mean())
    est = _percentile(theta, vals, len(d), confidence, "threshold fitted on the other half (cross-fitting)")
    half_width = est.half_width
    assert half_width is not None, "a percentile bootstrap interval has both ends"
    exact = at_bound_interval("advantage", theta, n1, len(d) - n1, confidence) if half_width <= 1e-12 else None
    return est if exact is None else replace(est, ci_low=exact[0], ci_high=exact[1], method=exact[2])


def auc_difference(a: np.ndarray, b: np.ndarray, member: np.ndarray, n_boot: int = BOOTSTRAP, seed: int = 0,
                   confidence: float = CONFIDENCE) -> Estimate:
    """AUC(a) − AUC(b) on the same records, both resampled with the same stratified indices."""
    rng = np.random.default_rng(seed)
    n1 = int(member.sum())
    n0 = len(member) - n1
    vals = np.empty(n_boot)
    chunk = max(1, 1_000_000 // len(member))
    for start in range(0, n_boot, chunk):
        idx = _stratified_indices(member, min(chunk, n_boot - start), rng)
        aucs = []
        for s in (a, b):  # Mann–Whitney with mid-ranks (ties one half), as roc_auc
            ranks = sps.rankdata(s[idx], axis=1)
            aucs.append((ranks[:, :n1].sum(1) - n1 * (n1 + 1) / 2) / (n1 * n0))
        vals[start:start + len(idx)] = aucs[0] - aucs[1]
    return _percentile(roc_auc(a, member) - roc_auc(b, member), vals, len(member), confidence)


# ---------------------------------------------------------------------------- ε̂
def _epsilon_per_threshold(tp: np.ndarray, n1: int, fp: np.ndarray, n0: int, confidence: float
                           ) -> tuple[np.ndarray, np.ndarray]:
    """Clopper–Pearson-bounded ε at each threshold, both directions: ln(TPR_low/FPR_high) and
    ln(TNR_low/FNR_high)."""
    out = []
    for hits, n_hits, misses, n_miss in ((tp, n1, fp, n0), (n0 - fp, n0, n1 - tp, n1)):
        lo = clopper_pearson(hits, n_hits, confidence)[0]
        hi = clopper_pearson(misses, n_miss, confidence)[1]
        with np.errstate(divide="ignore", invalid="ignore"):
            out.append(np.where((lo > 0) & (hi > 0), np.log(lo / hi), 0.0))
    return out[0], out[1]


def epsilon_cross_fitted(scores: np.ndarray, member: np.ndarray, half: np.ndarray,
                         confidence: float = CONFIDENCE) -> CrossFittedEpsilon:
    """ε̂ with the threshold chosen on one half and the bound computed on the other (module docstring)."""
    each = 1 - (1 - confidence) / 2  # Bonferroni over the two halves' bounds
    best: CrossFittedEpsilon | None = None
    for k in (0, 1):
        sel, ev = half == k, half != k
        ys, ye = member[sel], member[ev]
        fpr, tpr, thr = roc_curve(scores[sel], ys)
        n1, n0 = int(ys.sum()), int((~ys).sum())
        eps_flag, eps_pass = _epsilon_per_threshold(np.rint(tpr * n1), n1, np.rint(fpr * n0), n0, each)
        i, j = int(np.argmax(eps_flag)), int(np.argmax(eps_pass))
        flagged = eps_flag[i] >= eps_pass[j]
        t = thr[i] if flagged else thr[j]
        d = scores[ev] >= t
        e1, e0 = int(ye.sum()), int((~ye).sum())
        tp, fp = int(d[ye].sum()), int(d[~ye].sum())
        hits, n_hits, misses, n_miss = (tp, e1, fp, e0) if flagged else (e0 - fp, e0, e1 - tp, e1)
        lo = float(clopper_pearson(hits, n_hits, each)[0])
        hi = float(clopper_pearson(misses, n_miss, each)[1])
        bound = math.log(lo / hi) if lo > 0 and hi > 0 and lo > hi else 0.0
        rate_hit, rate_miss = hits / n_hits, misses / n_miss
        estimate = math.log(rate_hit / rate_miss) if rate_hit > 0 and rate_miss > 0 else None
        found = CrossFittedEpsilon(bound, estimate, tp / e1, fp / e0, "members flagged" if flagged else "non-members passed",
                             confidence, "threshold chosen on one half, Clopper–Pearson bound on the other at "
                             f"{100 * each:g} % (Bonferroni over the two halves); the larger bound")
        if best is None or found.lower_bound > best.lower_bound:
            best = found
    assert best is not None
    return best


# ---------------------------------------------------------------------------- the reference attacks
def lira_offline(table: ScoresTable) -> np.ndarray:
    """Offline LiRA scores: every record against its OUT references (IN ones are left out)."""
    phi_t = logit_confidence_from_loss(table.loss)
    phi_refs = logit_confidence_from_loss(table.ref_loss).T
    outs = ~table.ref_in.T
    scores, _ = lira_unit_scores(phi_t, phi_refs, np.zeros_like(outs), outs)
    return scores


def lira_online(table: ScoresTable) -> np.ndarray:
    """Online LiRA scores: IN and OUT references of each record (every record needs both)."""
    phi_t = logit_confidence_from_loss(table.loss)
    phi_refs = logit_confidence_from_loss(table.ref_loss).T
    ins = table.ref_in.T
    scores, _ = lira_unit_scores(phi_t, phi_refs, ins, ~ins)
    return scores


def rmia_cross_fitted(table: ScoresTable, half: np.ndarray, usable: np.ndarray
                      ) -> tuple[np.ndarray, tuple[float, float]]:
    """Offline RMIA on the ``usable`` records (those with an OUT reference), each half scored
    against the other half's non-members with the ``a`` that gave the best AUC on that other half;
    (scores, NaN elsewhere; (a used on half 0, a used on half 1))."""
    lx = -table.loss  # log Pr(x|θ) = log p(label) = −loss
    ref = -table.ref_loss.T
    outs = ~table.ref_in.T
    scores = np.full(table.n_records, np.nan)
    used = []
    for k in (0, 1):
        mine, other = usable & (half == k), usable & (half != k)
        pop = other & ~table.member

        def rmia(rows: np.ndarray, a: float) -> np.ndarray:
            return rmia_from_log_likelihoods(lx[rows], ref[:, rows], lx[pop], ref[:, pop], a, 1.0, outs[:, rows],
                                             outs[:, pop])

        fits = [(roc_auc(rmia(other, a), table.member[other]), a) for a in RMIA_A_GRID]
        a_best = max(fits, key=lambda f: f[0])[1]  # first of equals: the grid's order
        scores[mine] = rmia(mine, a_best)
        used.append(a_best)
    return scores, (used[0], used[1])


# ---------------------------------------------------------------------------- one attack's numbers
def _thin(fpr: np.ndarray, tpr: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The ROC points kept for the report: every corner up to FPR 0.1 and at most 400 evenly spaced ones above
    (:func:`core.measurement.metrics.roc_points_kept`), so the log-log ROC's low-FPR TPR is the curve's own."""
    keep = roc_points_kept(fpr)
    return tuple(round(float(v), 6) for v in fpr[keep]), tuple(round(float(v), 6) for v in tpr[keep])


def finding_of(auc: Estimate) -> tuple[str, str]:
    """``leak`` / ``inconclusive`` / ``below chance`` from the AUC's interval, with the reason."""
    ci = f"95 % CI [{auc.ci_low:.3f}, {auc.ci_high:.3f}], N = {auc.n} records"
    if auc.ci_low is not None and auc.ci_low > 0.5:
        return "leak", f"AUC {auc.mean:.3f} ({ci}) lies above 0.5"
    if auc.ci_high is not None and auc.ci_high < 0.5:
        return "below chance", (f"AUC {auc.mean:.3f} ({ci}) lies below 0.5: the scores rank members lower than "
                                "non-members (is the loss column really −log p(label)?)")
    return "inconclusive", f"AUC {auc.mean:.3f} ({ci}) contains 0.5: no evidence of leakage at this N"


def low_fpr_rows(scores: np.ndarray, member: np.ndarray, n_boot: int, seed: int) -> tuple[LowFpr, ...]:
    n0 = int((~member).sum())
    rows = []
    for f in LOW_FPRS:
        est = bootstrap_metric(scores, member, f"tpr@{f}", n_boot=n_boot, seed=seed)
        if math.floor(f * n0 + 1e-12) == 0:  # 1/n0 > f: not one false positive allowed
            rows.append(LowFpr(f, f"TPR at 0 false positives (FPR < 1/{n0}; {f:.1%} FPR asked)", est, False, None))
            continue
        verdict = "above chance" if est.ci_low is not None and est.ci_low > f else "inconclusive"
        rows.append(LowFpr(f, f"TPR at {f:.1%} FPR", est, True, verdict))
    return tuple(rows)


def attack_scores(name: str, scores: np.ndarray, member: np.ndarray, half: np.ndarray, n_boot: int = BOOTSTRAP,
                  seed: int = 0) -> AttackScores:
    """Every number of one attack whose per-record ``scores`` are "higher = member"."""
    auc = bootstrap_metric(scores, member, "auc", n_boot=n_boot, seed=seed)
    decide, thresholds = cross_fitted_decisions(scores, member, half)
    fpr, tpr, _ = roc_curve(scores, member)
    roc_fpr, roc_tpr = _thin(fpr, tpr)
    finding, reason = finding_of(auc)
    return AttackScores(name, ATTACKS[name], auc, low_fpr_rows(scores, member, n_boot, seed),
                        advantage_interval(decide, member, n_boot, seed), thresholds,
                        epsilon_cross_fitted(scores, member, half), roc_fpr, roc_tpr,
                        roc_band_bootstrap(scores, member, n_boot=min(n_boot, ROC_BAND_BOOTSTRAP), seed=seed),
                        finding, reason, scores)


# ---------------------------------------------------------------------------- the whole file
def attack_inputs(table: ScoresTable, half: np.ndarray
                  ) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], list[str], dict[str, Any]]:
    """({attack: (per-record scores, which records it scores)}, notes on what was left out and why,
    the fitted settings). A reference attack scores the records that have the references it needs
    (offline: an OUT reference; online: an IN and an OUT one); the others are left out and counted."""
    every = np.ones(table.n_records, bool)
    inputs = {"loss": (-table.loss, every)}
    notes: list[str] = []
    fitted: dict[str, Any] = {}
    if table.entropy is not None:
        inputs["entropy"] = (-table.entropy, every)
    k = table.n_references
    if k == 0:
        notes.append("no ref_loss columns: LiRA and RMIA need reference models' losses on the same records")
        return inputs, notes, fitted
    n_out, n_in = (~table.ref_in).sum(1), table.ref_in.sum(1)
    if k < 2 or n_out.max() < 2:
        why = f"only {k} reference model" if k < 2 else "no record has two OUT references"
        notes.append(f"LiRA and RMIA left out: {why} (a variance needs two)")
        return inputs, notes, fitted
    offline = n_out >= 1
    if _enough(table.member[offline], "LiRA and RMIA (offline)", "an OUT reference", notes):
        inputs["lira_offline"] = (lira_offline(table), offline)
        rmia, fitted["rmia_a"] = rmia_cross_fitted(table, half, offline)
        inputs["rmia"] = (rmia, offline)
    online = (n_in >= 1) & (n_out >= 1)
    if table.ref_in_given and _enough(table.member[online], "online LiRA", "an IN and an OUT reference", notes):
        inputs["lira_online"] = (lira_online(table), online)
    return inputs, notes, fitted


def _enough(member: np.ndarray, attack: str, needs: str, notes: list[str]) -> bool:
    """Whether the records an attack can score hold enough members and non-members; notes what
    was left out."""
    n_in, n_out = int(member.sum()), int((~member).sum())
    if min(n_in, n_out) < MIN_PER_CLASS:
        notes.append(f"{attack} left out: {n_in} members and {n_out} non-members have {needs}; at least "
                     f"{MIN_PER_CLASS} of each are needed")
        return False
    return True


def bootstrap_size(n_records: int) -> int:
    """The default number of resamples: :data:`BOOTSTRAP`, fewer above 20,000 records (:data:`BOOTSTRAP_CELLS`)."""
    return int(min(BOOTSTRAP, max(MIN_BOOTSTRAP, BOOTSTRAP_CELLS // max(n_records, 1))))


def score_table(table: ScoresTable, n_boot: int | None = None, seed: int = 0) -> ScoresResult:
    """Every attack, interval, comparison and slice of a checked :class:`ScoresTable` (``n_boot``
    resamples per interval; default :func:`bootstrap_size`)."""
    n_boot = bootstrap_size(table.n_records) if n_boot is None else n_boot
    if n_boot < 100:
        raise ValueError(f"n_boot must be at least 100, got {n_boot}")
    member = table.member
    half = halves(member, seed)
    inputs, notes, fitted = attack_inputs(table, half)
    attacks = []
    for name, (s, rows) in inputs.items():
        attacks.append(attack_scores(name, s[rows], member[rows], half[rows], n_boot, seed))
        if not rows.all():
            notes.append(f"{name}: {int((~rows).sum())} records without the references it needs are left out "
                         f"(N = {int(rows.sum())})")
    comparisons = []
    loss = inputs["loss"][0]
    for name in ("lira_offline", "lira_online", "rmia"):
        if name in inputs:  # on the records both attacks score
            s, rows = inputs[name]
            diff = auc_difference(s[rows], loss[rows], member[rows], n_boot, seed)
            low, high = diff.ci_low, diff.ci_high
            assert low is not None and high is not None, "a percentile bootstrap interval has both ends"
            verdict = ("inconclusive" if is_zero_width(low, high, diff.mean)  # no spread: no finding
                       else f"{name} higher" if low > 0 else "loss higher" if high < 0 else "inconclusive")
            comparisons.append(AucDifference(name, "loss", diff, verdict))
    slicings = []
    if table.slice is not None:
        slicings.append(("slice", table.slice))
    if table.label is not None:
        n_labels = len(set(table.label.tolist()))
        if n_labels <= MAX_SLICES:
            slicings.append(("label", table.label))
        else:
            notes.append(f"no slices by label: {n_labels} classes (at most {MAX_SLICES})")
    slices = tuple((name, sl) for name, (s, rows) in inputs.items() for slicing, labels in slicings
                   for sl in slice_metrics(slicing, labels[rows], s[rows], member[rows], seed=seed))
    n0 = int((~member).sum())
    if n0 < 1 / min(LOW_FPRS):
        notes.append(f"{n0} non-members: TPR at FPR below 1/{n0} is the TPR at zero false positives, labelled so, "
                     "without a verdict")
    method = {"halves": "2, stratified by membership, seeded", "seed": seed, "bootstrap": n_boot,
              "confidence": CONFIDENCE, "auc_interval": "stratified bootstrap over records, BCa",
              "thresholds": "cross-fitted: fitted on one half (max TPR - FPR), applied to the other",
              "epsilon": "threshold chosen on one half, Clopper-Pearson bound on the other (Bonferroni over halves)",
              "loss_from": table.loss_from, **fitted}
    return ScoresResult(table.source, table.n_records, int(member.sum()), n0, tuple(table.columns()),
                        table.n_references, tuple(attacks), tuple(comparisons), slices, tuple(notes), method)


def score_file(path: str | os.PathLike, *, anywhere: bool = False, n_boot: int | None = None,
               seed: int = 0) -> ScoresResult:
    """Read and score a ``.csv``/``.npz`` scores file (:mod:`core.analyses.scores_file`).

    The path must lie under the data root (``$MIA_DATA_ROOT``, else home; links resolved, a link as
    the file itself refused) unless ``anywhere`` (the CLI: a user on the command line may read any
    file they can). Raises :class:`core.analyses.scores_file.ScoresFileError` (one line) on bad input.
    """
    table = read_scores(path, root=None if anywhere else data_root())
    return score_table(table, n_boot, seed)
