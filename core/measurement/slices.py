"""Vulnerability per slice of the evaluated records (the model of TF Privacy's ``SlicingSpec``).

A *slicing* assigns every evaluated record one slice label (its class; its source-length bucket;
the frequency bucket of its rarest word …). :func:`slice_metrics` evaluates one attack's scores
within each slice: AUC and TPR at 1 % FPR with seeded bootstrap 95 % intervals (records resampled
within the slice, members and non-members separately so each resample keeps both), and marks
slices with fewer than ``min_records`` members or non-members as too small to read. A slice with
fewer than 100 non-members cannot resolve FPR 1 % (not one false positive is allowed): its "TPR at
1 % FPR" is the TPR at zero false positives, and ``tpr_resolved`` / ``tpr_note`` say so. The slices
of one slicing partition the records. :func:`quantile_buckets` cuts a numeric feature into buckets
of about equal size. Pure numpy/scipy.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np
from scipy import stats

from core.measurement.bootstrap import at_bound_interval, low_fpr_note
from core.measurement.metrics import roc_auc, tpr_at_fpr

#: a slice with fewer members or non-members than this is marked too small
MIN_SLICE_RECORDS = 20
BOOTSTRAP = 200
#: the low FPR of the per-slice TPR
FPR_1PCT = 0.01


@dataclass(frozen=True)
class SliceResult:
    slicing: str
    slice: str
    n_members: int
    n_non_members: int
    too_small: bool
    auc: float | None
    auc_low: float | None
    auc_high: float | None
    tpr_at_1pct: float | None
    tpr_low: float | None
    tpr_high: float | None
    #: whether the slice's non-members resolve FPR 1 % (≥ 100 of them, so ⌊0.01·n⌋ ≥ 1 false positive is
    #: allowed); when not, ``tpr_at_1pct`` is the TPR at zero false positives and ``tpr_note`` says so
    tpr_resolved: bool = True
    tpr_note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def quantile_buckets(values: Any, n_buckets: int = 3, unit: str = "") -> list[str]:
    """Each value's bucket label ``"lo–hi unit"`` from quantile edges (ties kept in one bucket)."""
    v = np.asarray(values, np.float64)
    edges = np.unique(np.quantile(v, np.linspace(0, 1, n_buckets + 1)))
    if len(edges) < 2:
        return [f"{v[0]:g}{unit}"] * len(v) if len(v) else []
    which = np.clip(np.searchsorted(edges, v, side="right") - 1, 0, len(edges) - 2)
    labels = []
    for i in range(len(edges) - 1):
        lo, hi = edges[i], edges[i + 1]
        closing = "]" if i == len(edges) - 2 else ")"
        labels.append(f"[{lo:g}, {hi:g}{closing}{unit}")
    return [labels[w] for w in which]


def _bootstrap(scores: np.ndarray, y: np.ndarray, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """AUC and TPR at 1 % FPR of ``n`` stratified resamples, all at once; each equals
    :func:`core.measurement.metrics.roc_auc` / :func:`core.measurement.metrics.tpr_at_fpr` of its resample:

    * AUC = the Mann–Whitney statistic, P[member > non-member] + ½·P[tie], from average ranks
      (the trapezoidal area under the ROC with tied scores in one step is exactly this);
    * TPR at FPR ≤ f: with K = ⌊f·n₋⌋ false positives allowed, the best threshold lies just above the
      (K+1)-th highest non-member score v, so TPR = #(members > v) / n₊ (1 when K ≥ n₋).
    """
    mem, non = np.nonzero(y)[0], np.nonzero(~y)[0]
    n_m, n_n = len(mem), len(non)
    draws = [(rng.choice(mem, n_m), rng.choice(non, n_n)) for _ in range(n)]  # the draw order of one loop
    sm = scores[np.stack([d[0] for d in draws])]  # (n, n_m)
    sn = scores[np.stack([d[1] for d in draws])]  # (n, n_n)
    ranks = stats.rankdata(np.concatenate([sm, sn], 1), method="average", axis=1)
    aucs = (ranks[:, :n_m].sum(1) - n_m * (n_m + 1) / 2) / (n_m * n_n)
    k = int(np.floor((FPR_1PCT + 1e-12) * n_n))
    if k >= n_n:
        tprs = np.ones(n)
    else:
        v = -np.sort(-sn, 1)[:, k]
        tprs = (sm > v[:, None]).sum(1) / n_m
    return aucs, tprs


def slice_metrics(slicing: str, labels: Sequence[Any], scores: Any, membership: Any,
                  min_records: int = MIN_SLICE_RECORDS, bootstrap: int = BOOTSTRAP, seed: int = 0) -> list[SliceResult]:
    """One attack's numbers within every slice of ``labels`` (module docstring), slices sorted by label."""
    s = np.asarray(scores, np.float64)
    y = np.asarray(membership, bool)
    lab = np.asarray([str(v) for v in labels], dtype=object)
    if not len(s) == len(y) == len(lab):
        raise ValueError("one slice label, score and membership per record")
    out = []
    for i, name in enumerate(sorted(set(lab), key=_natural)):
        sel = (lab == name) & np.isfinite(s)
        ys, ss = y[sel], s[sel]
        n_m, n_n = int(ys.sum()), int((~ys).sum())
        small = min(n_m, n_n) < min_records
        if n_m == 0 or n_n == 0:
            out.append(SliceResult(slicing, name, n_m, n_n, True, None, None, None, None, None, None))
            continue
        auc, tpr = roc_auc(ss, ys), tpr_at_fpr(ss, ys, FPR_1PCT)
        aucs, tprs = _bootstrap(ss, ys, np.random.default_rng([seed, i]), bootstrap)
        resolved = np.floor((FPR_1PCT + 1e-12) * n_n) >= 1  # the same k as _bootstrap's
        auc_ci = _interval("auc", auc, aucs, n_m, n_n)
        tpr_ci = _interval(f"tpr@{FPR_1PCT}", tpr, tprs, n_m, n_n)
        out.append(SliceResult(slicing, name, n_m, n_n, small, auc, *auc_ci, tpr, *tpr_ci, bool(resolved),
                               "" if resolved else f"TPR at 0 false positives (FPR < 1/{n_n}): "
                               + low_fpr_note(n_n, FPR_1PCT)))
    return out


def _interval(metric: str, theta: float, boot: np.ndarray, n_m: int, n_n: int) -> tuple[float, float]:
    """The 2.5–97.5 percentiles of the resamples; where they coincide because θ̂ lies at a bound (AUC 1, TPR 0
    of a slice's few records), the exact Clopper–Pearson interval of
    :func:`core.measurement.bootstrap.at_bound_interval` instead of a zero-width one."""
    lo, hi = float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))
    if hi - lo <= 1e-12 and (exact := at_bound_interval(metric, theta, n_m, n_n)) is not None:
        return exact[0], exact[1]
    return lo, hi


def _natural(label: str) -> tuple:
    """Sort "[2, 5)" before "[10, 12]" and "class 2" before "class 10"."""
    parts = re.split(r"(-?\d+(?:\.\d+)?)", label)
    return tuple((0, float(p)) if re.fullmatch(r"-?\d+(?:\.\d+)?", p) else (1, p) for p in parts if p)
