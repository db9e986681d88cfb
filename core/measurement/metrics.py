"""Membership-inference metrics as plain data (after TF Privacy's ``AttackResults``).

Scores are "higher = member". For a balanced evaluation set (as in the studies) random
guessing gives accuracy 0.5, advantage 0 and AUC 0.5.

* accuracy: fraction of correct member/non-member decisions at the attack's threshold.
* membership advantage: Adv = TPR − FPR at that threshold (Yeom et al.; paper 002). An ε-DP
  learner bounds it by e^ε − 1.
* ROC AUC and TPR at a fixed low FPR (Carlini et al.'s recommended low-FPR view).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

#: FPR levels at which TPR is reported.
LOW_FPRS = (0.01, 0.001)
_MAX_ROC_POINTS = 400


def roc_curve(scores: np.ndarray, membership: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC curve over all distinct thresholds, highest threshold first.

    Returns (fpr, tpr, thresholds); the first point is (0, 0) with threshold +inf, as in
    scikit-learn's ``roc_curve(drop_intermediate=False)``.
    """
    scores = np.asarray(scores, dtype=np.float64)
    y = np.asarray(membership).astype(bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError("ROC needs both members and non-members")
    if np.isnan(scores).any():
        # NaN has no place in a ranking: sorting would put it anywhere and report a made-up AUC
        raise ValueError(f"{int(np.isnan(scores).sum())} attack scores are NaN (did the model diverge?)")
    order = np.argsort(-scores, kind="mergesort")
    s, y = scores[order], y[order]
    last_of_run = np.r_[np.nonzero(np.diff(s))[0], len(s) - 1]  # last index of each tied block
    tps = np.cumsum(y)[last_of_run]
    fps = (last_of_run + 1) - tps
    tpr = np.r_[0.0, tps / n_pos]
    fpr = np.r_[0.0, fps / n_neg]
    thresholds = np.r_[np.inf, s[last_of_run]]
    return fpr, tpr, thresholds


def roc_auc(scores: np.ndarray, membership: np.ndarray) -> float:
    """Area under the ROC curve (trapezoidal rule; ties count one half)."""
    fpr, tpr, _ = roc_curve(scores, membership)
    return float(np.trapezoid(tpr, fpr))


def tpr_at_fpr(scores: np.ndarray, membership: np.ndarray, max_fpr: float) -> float:
    """Largest TPR reachable by a threshold whose FPR is at most ``max_fpr``."""
    fpr, tpr, _ = roc_curve(scores, membership)
    ok = fpr <= max_fpr + 1e-12
    return float(tpr[ok].max()) if ok.any() else 0.0


def best_threshold(scores: np.ndarray, membership: np.ndarray) -> float:
    """Threshold maximising accuracy on (scores, membership): predict member iff score >= t.

    Used to calibrate threshold attacks on the attacker's shadow data.
    """
    fpr, tpr, thr = roc_curve(scores, membership)
    y = np.asarray(membership).astype(bool)
    n_pos, n_neg = y.sum(), (~y).sum()
    acc = (tpr * n_pos + (1 - fpr) * n_neg) / (n_pos + n_neg)
    i = int(np.argmax(acc))
    if i == 0:
        return float("inf")
    # midway between this threshold and the next lower score keeps decisions stable
    lower = thr[i + 1] if i + 1 < len(thr) else thr[i] - 1.0
    return float((thr[i] + lower) / 2.0)


@dataclass
class AttackResult:
    """Outcome of one attack on one balanced evaluation set."""

    name: str
    accuracy: float
    advantage: float
    auc: float
    tpr_at_fpr: dict[str, float]
    threshold: float
    n_members: int
    n_nonmembers: int
    roc_fpr: list[float] = field(default_factory=list)
    roc_tpr: list[float] = field(default_factory=list)
    #: threshold attacks: {"signal", "threshold" (in the signal's units), "member_if"}; else None
    boundary: dict | None = None

    def to_dict(self, include_roc: bool = True) -> dict:
        d = asdict(self)
        if not include_roc:
            d.pop("roc_fpr")
            d.pop("roc_tpr")
        if not np.isfinite(d["threshold"]):
            d["threshold"] = None
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "AttackResult":
        d = dict(d)
        if d.get("threshold") is None:
            d["threshold"] = float("inf")
        return cls(**d)


def evaluate_attack(name: str, scores: np.ndarray, membership: np.ndarray, threshold: float) -> AttackResult:
    """Metrics of an attack whose decision is ``score >= threshold``."""
    scores = np.asarray(scores, dtype=np.float64)
    y = np.asarray(membership).astype(bool)
    decide = scores >= threshold
    tpr = float(decide[y].mean())
    fpr = float(decide[~y].mean())
    fprs, tprs, _ = roc_curve(scores, y)
    keep = _thin(len(fprs))
    return AttackResult(
        name=name,
        accuracy=float((decide == y).mean()),
        advantage=tpr - fpr,
        auc=float(np.trapezoid(tprs, fprs)),
        tpr_at_fpr={str(f): tpr_at_fpr(scores, y, f) for f in LOW_FPRS},
        threshold=float(threshold),
        n_members=int(y.sum()),
        n_nonmembers=int((~y).sum()),
        roc_fpr=[round(float(v), 6) for v in fprs[keep]],
        roc_tpr=[round(float(v), 6) for v in tprs[keep]],
    )


def resolution(n_members: int, n_nonmembers: int) -> dict[str, float | int]:
    """The smallest step each metric of one evaluation set can take: one member moves the TPR by
    1/n_members, one non-member the FPR by 1/n_nonmembers, one record the accuracy by 1/(total).

    On small evaluation sets (navigation's 16 + 16 maps: one map = 0.0625 of TPR) two architectures
    whose TPRs differ by one step differ by one record, not by their architecture; the step is
    shown beside the numbers so that it is read before them.
    """
    return {
        "n_members": int(n_members),
        "n_nonmembers": int(n_nonmembers),
        "tpr_step": 1.0 / n_members if n_members else 1.0,
        "fpr_step": 1.0 / n_nonmembers if n_nonmembers else 1.0,
        "accuracy_step": 1.0 / (n_members + n_nonmembers) if n_members + n_nonmembers else 1.0,
    }


def _thin(n: int) -> np.ndarray:
    """Indices of at most _MAX_ROC_POINTS points of an n-point curve (ends kept)."""
    if n <= _MAX_ROC_POINTS:
        return np.arange(n)
    return np.unique(np.r_[np.linspace(0, n - 1, _MAX_ROC_POINTS).astype(int), n - 1])


def clopper_pearson(successes: np.ndarray | int, trials: np.ndarray | int,
                    confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper–Pearson) two-sided confidence interval of binomial proportions (vectorised)."""
    from scipy import stats

    x = np.asarray(successes, np.float64)
    n = np.asarray(trials, np.float64)
    alpha = 1 - confidence
    with np.errstate(invalid="ignore"):
        lo = np.where(x > 0, stats.beta.ppf(alpha / 2, np.maximum(x, 1e-12), n - x + 1), 0.0)
        hi = np.where(x < n, stats.beta.ppf(1 - alpha / 2, x + 1, np.maximum(n - x, 1e-12)), 1.0)
    return lo, hi


def empirical_epsilon(scores: np.ndarray, membership: np.ndarray, confidence: float = 0.95) -> dict[str, float | None]:
    """An empirical lower bound on ε from one attack's decisions (after Jagielski et al. 2020).

    Any ε-DP mechanism forces TPR ≤ e^ε·FPR (and TNR ≤ e^ε·FNR) at every threshold, so
    ε ≥ ln(TPR/FPR). With finite samples, TPR and FPR are replaced by their Clopper–Pearson
    bounds (TPR's lower, FPR's upper) at ``confidence``, which makes the bound hold with that
    confidence per threshold; the best threshold over the ROC curve is reported (the choice of
    threshold is itself made on these records, so read it as an audit figure, not a proof).

    Returns ``{"lower_bound", "estimate", "tpr", "fpr"}``: the CP-bounded ε at the best threshold
    (0 when nothing is significant) and the plain ln(TPR/FPR) there (None when that is infinite).
    """
    fpr, tpr, _ = roc_curve(scores, membership)
    y = np.asarray(membership).astype(bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    tp, fp = np.rint(tpr * n_pos), np.rint(fpr * n_neg)
    best = {"lower_bound": 0.0, "estimate": 0.0, "tpr": 0.0, "fpr": 0.0}
    # both directions: members flagged vs non-members flagged, and non-members passed vs members passed
    for hits, n_hits, misses, n_miss in ((tp, n_pos, fp, n_neg), (n_neg - fp, n_neg, n_pos - tp, n_pos)):
        lo = clopper_pearson(hits, n_hits, confidence)[0]
        hi = clopper_pearson(misses, n_miss, confidence)[1]
        with np.errstate(divide="ignore", invalid="ignore"):
            eps = np.where((lo > 0) & (hi > 0), np.log(lo / hi), 0.0)
        i = int(np.argmax(eps))
        if eps[i] > best["lower_bound"]:
            rate_miss = misses[i] / n_miss
            est = float(np.log((hits[i] / n_hits) / rate_miss)) if rate_miss > 0 else None  # no false positives: ∞
            best = {"lower_bound": float(eps[i]), "estimate": est, "tpr": float(tpr[i]), "fpr": float(fpr[i])}
    return best
