"""Bootstrap over records and ROC bands: intervals for metrics read off one set of scores.

* :func:`bootstrap_metric` — a stratified percentile/BCa bootstrap 95 % interval of AUC or TPR at a low
  FPR over the records (members and non-members resampled separately), with a jackknife for BCa;
  :func:`low_fpr_note` says when 1/non-members is coarser than the FPR asked.
* :func:`delong_auc` — the same AUC's interval by DeLong's variance (no resampling: fast enough for a slider step).
* :class:`RocBand` — pointwise 95 % bands of the ROC on a fixed FPR grid (:data:`ROC_GRID`), from a
  bootstrap over records (:func:`roc_band_bootstrap`) or across repeats (:func:`roc_band_repeats`).

numpy/scipy only; the estimates are :class:`core.measurement.stats.Estimate`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
from scipy import stats as sps

from core.foundations.errors import ResultFormatError
from core.foundations.typed_json import INT, NUM, STR, Conv, converts, fail, numbers
from core.measurement.stats import CONFIDENCE, Estimate, _check_confidence


# ---------------------------------------------------------------------------- bootstrap over records
def _auc_rows(scores: np.ndarray, n_pos: int) -> np.ndarray:
    """AUC of each row of ``scores`` whose first ``n_pos`` columns are members (Mann–Whitney U
    with mid-ranks: ties count one half, equal to the trapezoidal ROC area)."""
    ranks = sps.rankdata(scores, axis=-1)
    n_neg = scores.shape[-1] - n_pos
    return (ranks[..., :n_pos].sum(axis=-1) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def _tpr_rows(pos: np.ndarray, neg: np.ndarray, max_fpr: float) -> np.ndarray:
    """TPR at FPR ≤ ``max_fpr`` of each row (same meaning as :func:`core.measurement.metrics.tpr_at_fpr`):
    with k = ⌊max_fpr·n₀⌋ false positives allowed, the best threshold lies just above the
    (k+1)-th highest non-member score, so TPR = share of members scoring above it."""
    n_neg = neg.shape[-1]
    k = int(math.floor(max_fpr * n_neg + 1e-12))
    if k >= n_neg:
        return np.ones(pos.shape[:-1])
    kth = -np.sort(-neg, axis=-1)[..., k]
    return (pos > kth[..., None]).mean(axis=-1)


def _metric_rows(metric: str, pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    if metric == "auc":
        return _auc_rows(np.concatenate([pos, neg], axis=-1), pos.shape[-1])
    if metric.startswith("tpr@"):
        return _tpr_rows(pos, neg, float(metric[4:]))
    raise ValueError(f"unknown metric {metric!r}: use 'auc' or 'tpr@<fpr>'")


def _jackknife(metric: str, pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """Leave-one-record-out values of ``metric`` (for BCa's acceleration), in closed form.

    AUC: with cᵢ = Σⱼ H(sᵢ − sⱼ) (H(0) = ½) the member i's share of the U statistic,
    AUC₋ᵢ = (U − cᵢ)/((n₁−1)n₀); a non-member's analogously. TPR: removing a member removes its
    indicator; removing a non-member moves the threshold to the next non-member score when it
    lay at or above it.
    """
    n1, n0 = len(pos), len(neg)
    if metric == "auc":
        neg_sorted, pos_sorted = np.sort(neg), np.sort(pos)
        c_pos = (np.searchsorted(neg_sorted, pos, "left") + np.searchsorted(neg_sorted, pos, "right")) / 2
        c_neg = n1 - (np.searchsorted(pos_sorted, neg, "left") + np.searchsorted(pos_sorted, neg, "right")) / 2
        u = c_pos.sum()
        out = [(u - c_pos) / ((n1 - 1) * n0) if n1 > 1 else np.full(n1, np.nan),
               (u - c_neg) / (n1 * (n0 - 1)) if n0 > 1 else np.full(n0, np.nan)]
        return np.concatenate(out)
    fpr = float(metric[4:])
    desc = -np.sort(-neg)
    k = int(math.floor(fpr * n0 + 1e-12))
    thr = desc[k] if k < n0 else -np.inf
    above = pos > thr
    loo_pos = (above.sum() - above) / max(n1 - 1, 1)
    k1 = int(math.floor(fpr * (n0 - 1) + 1e-12))
    # rank (descending, first occurrence) of each non-member; removing one at or above the
    # (k1+1)-th position shifts the threshold one place down
    rank = np.searchsorted(-desc, -neg, "left")
    t_keep = desc[k1] if k1 < n0 - 1 else -np.inf
    t_shift = desc[k1 + 1] if k1 + 1 < n0 else -np.inf
    tpr_keep, tpr_shift = (pos > t_keep).mean(), (pos > t_shift).mean()
    loo_neg = np.where(rank <= k1, tpr_shift, tpr_keep)
    return np.concatenate([loo_pos, loo_neg])


def low_fpr_note(n_nonmembers: int, fpr: float) -> str:
    """How many false positives "TPR at ``fpr``" allows with ``n_nonmembers`` non-members, in words."""
    k = int(math.floor(fpr * n_nonmembers + 1e-12))
    if k == 0:
        return (f"TPR at FPR {fpr:g} with {n_nonmembers} non-members allows no false positive: it is the TPR "
                f"at zero false positives (≥ {math.ceil(1 / fpr)} non-members are needed to resolve FPR {fpr:g})")
    return f"TPR at FPR {fpr:g} with {n_nonmembers} non-members rests on the {k} highest-scoring non-member(s)"


def at_bound_interval(metric: str, theta: float, n_members: int, n_nonmembers: int,
                      confidence: float = CONFIDENCE) -> tuple[float, float, str] | None:
    """An exact interval for a rate observed at its bound, where a bootstrap over records has none.

    When every member outranks every non-member (AUC 1), or no member clears the threshold (TPR 0),
    every resample repeats θ̂ and the bootstrap interval is θ̂ itself: zero width, read as certainty
    from 12 + 12 records. Here the observation is instead k = K successes (or 0) in K independent
    trials, and the Clopper–Pearson interval of that count is exact: [(α/2)^(1/K), 1] at 1 and
    [0, 1 − (α/2)^(1/K)] at 0. ``auc``: K = min(m, n) disjoint (member, non-member) pairs, each
    ordered rightly with probability AUC, all K of them so ordered when all m·n pairs are (conservative:
    the other pairs are not independent of these). ``tpr@<fpr>``: K = m members, each above the
    non-members' threshold with probability TPR (given the non-members). ``advantage`` (TPR − FPR of
    fixed decisions) at ±1: every member and no non-member flagged (or the reverse), the bound from both
    proportions' Clopper–Pearson ends at α/4 each (Bonferroni). Returns (low, high, method), or None
    where θ̂ is not at a bound."""
    alpha = 1 - confidence
    if metric == "advantage":
        if abs(abs(theta) - 1) > 1e-12 or min(n_members, n_nonmembers) < 1:
            return None
        low = (alpha / 4) ** (1 / n_members) - (1 - (alpha / 4) ** (1 / n_nonmembers))
        method = (f"Clopper–Pearson at the bound: every one of {n_members} members and none of {n_nonmembers} "
                  f"non-members on one side (each proportion at {1 - alpha / 4:.4g}, Bonferroni)")
        return (low, 1.0, method) if theta > 0 else (-1.0, -low, method)
    if metric == "auc":
        k, what = min(n_members, n_nonmembers), "disjoint (member, non-member) pairs"
    elif metric.startswith("tpr@"):
        k, what = n_members, "members"
    else:
        raise ValueError(f"unknown metric {metric!r}")
    if k < 1 or not (theta <= 1e-12 or theta >= 1 - 1e-12):
        return None
    edge = (alpha / 2) ** (1 / k)
    method = f"Clopper–Pearson at the bound: {'all' if theta > 0.5 else 'none'} of K = {k} {what}"
    return (edge, 1.0, method) if theta > 0.5 else (0.0, 1 - edge, method)


#: said of a zero-width bootstrap interval whose θ̂ is not at a bound: the scores do not vary (a constant attack)
NO_SPREAD = "every resample gives the same value (the scores do not vary): no spread to show, not certainty"


def bootstrap_metric(scores: np.ndarray, membership: np.ndarray, metric: str = "auc", *, n_boot: int = 1000,
                     method: str = "bca", confidence: float = CONFIDENCE, seed: int = 0) -> Estimate:
    """Stratified bootstrap interval of ``metric`` (``auc`` or ``tpr@<fpr>``) over the records.

    Members and non-members are resampled separately with replacement (``n_boot`` times), so each
    resample keeps the evaluation set's balance. ``method``:

    * ``percentile``: the α/2 and 1−α/2 quantiles of the bootstrap values θ*_b.
    * ``bca`` (Efron 1987): the quantiles Φ(z₀ + (z₀+z_q)/(1 − a(z₀+z_q))) for q = α/2, 1−α/2, with
      bias correction z₀ = Φ⁻¹(#{θ*_b < θ̂}/B + ½·#{θ*_b = θ̂}/B) and acceleration
      a = Σ(θ̄₋ − θ₋ᵢ)³ / (6 [Σ(θ̄₋ − θ₋ᵢ)²]^{3/2}) from the leave-one-out (jackknife) values.
      Falls back to the percentile interval when z₀ or a is not finite (every resample on one side
      of θ̂, as for a TPR of 0 at a low FPR), and says so in ``method``.

    ``mean`` is θ̂ on all records (not the bootstrap mean); ``n`` the number of records; ``note``
    states the low-FPR resolution for ``tpr@`` metrics.
    """
    _check_confidence(confidence)
    if method not in ("bca", "percentile"):
        raise ValueError(f"method must be 'bca' or 'percentile', got {method!r}")
    s = np.asarray(scores, np.float64)
    y = np.asarray(membership).astype(bool)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError("scores and membership must be 1-D arrays of the same length")
    if not np.isfinite(s).all():
        raise ValueError("scores must be finite")
    pos, neg = s[y], s[~y]
    if len(pos) == 0 or len(neg) == 0:
        raise ValueError("a bootstrap of an attack metric needs both members and non-members")
    rng = np.random.default_rng(seed)
    theta = float(_metric_rows(metric, pos[None], neg[None])[0])
    boot = np.empty(n_boot)
    chunk = max(1, 2_000_000 // len(s))  # bounded memory for large evaluation sets
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        bp = pos[rng.integers(0, len(pos), (b, len(pos)))]
        bn = neg[rng.integers(0, len(neg), (b, len(neg)))]
        boot[start : start + b] = _metric_rows(metric, bp, bn)
    alpha = 1 - confidence
    qs = np.array([alpha / 2, 1 - alpha / 2])
    used = "bootstrap-percentile"
    if method == "bca":
        below = (boot < theta).mean() + 0.5 * (boot == theta).mean()
        z0 = sps.norm.ppf(below)
        jack = _jackknife(metric, pos, neg)
        d = jack.mean() - jack
        denom = 6 * (d ** 2).sum() ** 1.5
        a = (d ** 3).sum() / denom if denom > 0 else float("nan")
        if np.isfinite(z0) and np.isfinite(a):
            z = sps.norm.ppf(qs)
            qs = sps.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))
            used = "bootstrap-bca"
        else:
            used = "bootstrap-percentile (bca undefined: resamples all on one side)"
    lo, hi = np.quantile(boot, qs)
    note = low_fpr_note(len(neg), float(metric[4:])) if metric.startswith("tpr@") else ""
    if hi - lo <= 1e-12:  # zero width: θ̂ at a bound (an exact interval instead), or scores that do not vary
        exact = at_bound_interval(metric, theta, len(pos), len(neg), confidence)
        if exact is not None:
            lo, hi, used = exact
        else:
            note = "; ".join(x for x in (note, NO_SPREAD) if x)
    return Estimate(theta, float(lo), float(hi), int(len(s)), (), used, confidence, note)


def delong_auc(scores: np.ndarray, membership: np.ndarray, confidence: float = CONFIDENCE) -> Estimate:
    """A one-run AUC with its interval over the records by DeLong's variance (DeLong, DeLong & Clarke-Pearson 1988:
    the members' and non-members' placement values), normal, clipped to [0, 1]: an interval over the records in about a
    millisecond, where :func:`bootstrap_metric` resamples (the Defenses page's slider step and a run's attack table
    read it)."""
    s, y = np.asarray(scores, np.float64), np.asarray(membership, bool)
    pos, neg = s[y], s[~y]
    m, n = len(pos), len(neg)
    order = np.sort(neg)
    below = np.searchsorted(order, pos, "left")
    ties = np.searchsorted(order, pos, "right") - below
    v10 = (below + 0.5 * ties) / n  # per member: the share of non-members it outranks
    order_p = np.sort(pos)
    above = m - np.searchsorted(order_p, neg, "right")
    ties_p = np.searchsorted(order_p, neg, "right") - np.searchsorted(order_p, neg, "left")
    v01 = (above + 0.5 * ties_p) / m  # per non-member: the share of members that outrank it
    auc = float(v10.mean())
    var = (v10.var(ddof=1) / m if m > 1 else 0.0) + (v01.var(ddof=1) / n if n > 1 else 0.0)
    half = float(sps.norm.ppf((1 + confidence) / 2)) * float(np.sqrt(max(var, 0.0)))
    return Estimate(auc, max(0.0, auc - half), min(1.0, auc + half), int(m + n), (), "delong", confidence, "")


# ---------------------------------------------------------------------------- ROC bands
@dataclass(frozen=True)
class RocBand:
    """A ROC curve with a pointwise band of TPR on a fixed FPR grid (vertical averaging,
    Macskassy & Provost 2004; Fawcett, "An introduction to ROC analysis", 2006, §7)."""

    fpr: tuple[float, ...]
    tpr: tuple[float, ...]
    lo: tuple[float, ...]
    hi: tuple[float, ...]
    n: int
    method: str
    confidence: float = CONFIDENCE

    def to_dict(self) -> dict[str, Any]:
        return {"fpr": list(self.fpr), "tpr": list(self.tpr), "lo": list(self.lo), "hi": list(self.hi), "n": self.n,
                "method": self.method, "confidence": self.confidence}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RocBand":
        return cls(tuple(d["fpr"]), tuple(d["tpr"]), tuple(d["lo"]), tuple(d["hi"]), int(d["n"]), str(d["method"]),
                   float(d.get("confidence", CONFIDENCE)))


def roc_band() -> Conv:
    """The converter of a :class:`RocBand` in a typed layout (:mod:`core.foundations.typed_json`): every key of
    :meth:`RocBand.to_dict` checked (``confidence`` may be left out), any other refused, so that the band is
    written back as read. Its JSON Schema stays a plain object, as the layouts' checked-in schemas have it."""
    keys = {"fpr": numbers(), "tpr": numbers(), "lo": numbers(), "hi": numbers(), "n": INT, "method": STR,
            "confidence": NUM}

    def read(v: Any, where: str) -> RocBand:
        if not isinstance(v, dict):
            raise fail(where, "a ROC band object", v)
        for key, conv in keys.items():
            if key in v:
                conv.read(v[key], f"{where}.{key}")
            elif key != "confidence":
                raise ResultFormatError(f"{where} lacks {key!r}")
        unknown = [k for k in v if k not in keys]
        if unknown:
            raise ResultFormatError(f"{where} has unknown key{'s' * (len(unknown) > 1)} "
                                    f"{', '.join(map(repr, unknown))} (written by another version?)")
        return RocBand.from_dict(v)

    return Conv(read, lambda b: b.to_dict(), schema={"type": "object"})


converts(RocBand, roc_band())  # a layout's field annotated RocBand reads and writes a band


#: FPR grid of ROC bands: log-spaced at low FPR (where the studies look), linear above
ROC_GRID = tuple(float(v) for v in np.unique(np.r_[0.0, np.geomspace(1e-3, 0.1, 12), np.linspace(0.1, 1, 19)]))


def _tpr_on_grid(fpr: np.ndarray, tpr: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The highest TPR with FPR ≤ g for each grid value g (step interpolation of a ROC curve)."""
    fpr, tpr = np.asarray(fpr, np.float64), np.asarray(tpr, np.float64)
    best = np.maximum.accumulate(tpr[np.argsort(fpr, kind="stable")])
    idx = np.searchsorted(np.sort(fpr), grid + 1e-12, "right") - 1
    return np.where(idx >= 0, best[np.clip(idx, 0, None)], 0.0)


def roc_band_bootstrap(scores: np.ndarray, membership: np.ndarray, *, n_boot: int = 500,
                       confidence: float = CONFIDENCE, seed: int = 0,
                       grid: Sequence[float] = ROC_GRID) -> RocBand:
    """Pointwise percentile band of the ROC curve by a stratified bootstrap over records.

    At each grid FPR g, the TPR of a resample is the share of its members above its
    (⌊g·n₀⌋+1)-th highest non-member (:func:`_tpr_rows`); the band is the α/2 and 1−α/2
    quantiles of those TPRs, the curve the TPR on all records.
    """
    _check_confidence(confidence)
    s = np.asarray(scores, np.float64)
    y = np.asarray(membership).astype(bool)
    pos, neg = s[y], s[~y]
    if len(pos) == 0 or len(neg) == 0:
        raise ValueError("a ROC band needs both members and non-members")
    rng = np.random.default_rng(seed)
    bp = pos[rng.integers(0, len(pos), (n_boot, len(pos)))]
    bn = -np.sort(-neg[rng.integers(0, len(neg), (n_boot, len(neg)))], axis=1)
    neg_desc = -np.sort(-neg)
    g = np.asarray(grid, np.float64)
    tpr = np.empty(len(g))
    lo, hi = np.empty(len(g)), np.empty(len(g))
    alpha = 1 - confidence
    for j, f in enumerate(g):
        k = int(math.floor(f * len(neg) + 1e-12))
        if k >= len(neg):
            tpr[j] = lo[j] = hi[j] = 1.0
            continue
        tpr[j] = (pos > neg_desc[k]).mean()
        vals = (bp > bn[:, k : k + 1]).mean(axis=1)
        lo[j], hi[j] = np.quantile(vals, [alpha / 2, 1 - alpha / 2])
    return RocBand(tuple(g.tolist()), tuple(tpr.tolist()), tuple(lo.tolist()), tuple(hi.tolist()), int(len(s)),
                   "bootstrap-percentile", confidence)


def roc_band_repeats(curves: Sequence[tuple[Sequence[float], Sequence[float]]], *, confidence: float = CONFIDENCE,
                     grid: Sequence[float] = ROC_GRID) -> RocBand:
    """Mean ROC curve of N repeats with a pointwise Student-t band (clipped to [0, 1]).

    Each repeat's curve (fpr, tpr) is read on the grid by step interpolation (the highest TPR at
    FPR ≤ g); the band at g is the t interval of those N TPRs (no band with N = 1).
    """
    if not curves:
        raise ValueError("a ROC band needs at least one curve")
    g = np.asarray(grid, np.float64)
    rows = np.array([_tpr_on_grid(np.asarray(f), np.asarray(t), g) for f, t in curves])
    mean = rows.mean(axis=0)
    if len(rows) < 2:
        return RocBand(tuple(g.tolist()), tuple(mean.tolist()), tuple(mean.tolist()), tuple(mean.tolist()), 1, "single",
                       confidence)
    half = sps.t.ppf(0.5 + confidence / 2, len(rows) - 1) * rows.std(axis=0, ddof=1) / math.sqrt(len(rows))
    return RocBand(tuple(g.tolist()), tuple(mean.tolist()), tuple(np.clip(mean - half, 0, 1).tolist()),
                   tuple(np.clip(mean + half, 0, 1).tolist()), len(rows), "t", confidence)
