"""Membership-inference metrics as plain data (after TF Privacy's ``AttackResults``).

Scores are "higher = member". For a balanced evaluation set (as in the studies) random
guessing gives accuracy 0.5, advantage 0 and AUC 0.5.

* accuracy: fraction of correct member/non-member decisions at the attack's threshold.
* membership advantage: Adv = TPR − FPR at that threshold (Yeom et al.; paper 002). An ε-DP
  learner bounds it by e^ε − 1.
* ROC AUC and TPR at a fixed low FPR (Carlini et al.'s recommended low-FPR view).
"""
from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar, Mapping

import numpy as np

from core.foundations.typed_json import Open, omissible

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
    return _tpr_at(fpr, tpr, max_fpr)


def _tpr_at(fpr: np.ndarray, tpr: np.ndarray, max_fpr: float) -> float:
    """:func:`tpr_at_fpr` read off a ROC curve already computed."""
    ok = fpr <= max_fpr + 1e-12
    return float(tpr[ok].max()) if ok.any() else 0.0


def rounded_list(values: np.ndarray, digits: int = 6) -> list[float]:
    """``[round(float(v), digits) for v in values]``, the same floats, vectorised. ``rint(v·10^d) / 10^d`` is
    Python's correctly rounded result wherever v·10^d is not within rounding error of a half (the integer
    is then the decimal rounding's, and both divide it by 10^d to the nearest float); those few values
    (and any non-finite one) go through ``round`` itself."""
    v = np.asarray(values, np.float64).ravel()
    scale = 10.0 ** digits
    with np.errstate(invalid="ignore", over="ignore"):
        y = v * scale
        out = np.rint(y) / scale
        # a tie's neighbourhood: |frac(y) − ½| small; y's own rounding error is ≤ |y|·2⁻⁵³
        doubtful = ~np.isfinite(y) | (np.abs(np.abs(y - np.floor(y)) - 0.5) <= 1e-6 + np.abs(y) * 1e-12)
    result = out.tolist()
    for i in np.flatnonzero(doubtful):
        result[i] = round(float(v[i]), digits)
    return result


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


def utility_loss(defended: float | None, undefended: float | None) -> float | None:
    """L = 1 − M(defended)/M(undefended) (paper 000 Def. 4); None where M(undefended) ≈ 0."""
    if defended is None or undefended is None or abs(undefended) < 1e-9:
        return None
    return 1.0 - defended / undefended


@dataclass
class AttackMetrics:
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
    def from_dict(cls, d: dict) -> "AttackMetrics":
        d = dict(d)
        if d.get("threshold") is None:
            d["threshold"] = float("inf")
        return cls(**d)


def scores_for_json(values) -> list[float]:
    """Per-record scores as stored in a result (``records.scores``, a defended point's records): every
    score the float64 it is (JSON writes the shortest text that reads back the same float; a NaN or ±inf
    stays one, for the caller to refuse or replace). Not rounded: rounding would tie a confident model's
    members with each other and with as confident non-members, so an AUC, a TPR at low FPR or ε̂ computed
    later from the stored scores would not be the one computed in memory."""
    return np.asarray(values, np.float64).ravel().tolist()


def evaluate_attack(name: str, scores: np.ndarray, membership: np.ndarray, threshold: float) -> AttackMetrics:
    """Metrics of an attack whose decision is ``score >= threshold``."""
    scores = np.asarray(scores, dtype=np.float64)
    y = np.asarray(membership).astype(bool)
    decide = scores >= threshold
    tpr = float(decide[y].mean())
    fpr = float(decide[~y].mean())
    fprs, tprs, _ = roc_curve(scores, y)  # once: the low-FPR TPRs are read off the same curve
    keep = roc_points_kept(fprs)
    return AttackMetrics(
        name=name,
        accuracy=float((decide == y).mean()),
        advantage=tpr - fpr,
        auc=float(np.trapezoid(tprs, fprs)),
        tpr_at_fpr={str(f): _tpr_at(fprs, tprs, f) for f in LOW_FPRS},
        threshold=float(threshold),
        n_members=int(y.sum()),
        n_nonmembers=int((~y).sum()),
        roc_fpr=rounded_list(fprs[keep]),
        roc_tpr=rounded_list(tprs[keep]),
    )


#: the steps of :class:`Resolution`, each one record's worth of a metric
_STEPS = ("tpr_step", "fpr_step", "accuracy_step")


@dataclass(frozen=True, kw_only=True)
class Resolution(Open):
    """The smallest step each metric of one evaluation set can take (:func:`resolution` builds it): the evaluation
    members and non-members, and the TPR, FPR and accuracy one record is worth. The one layout of the
    ``resolution`` block wherever it is written — a summary's (``RunSummary.resolution``), a repeats block's, each
    architecture's in a comparison, a finding's — read by ``from_dict`` and written back by ``to_dict`` exactly as
    read (open: a key this version does not type is kept in ``extra``)."""

    n_members: int
    n_nonmembers: int
    #: left out of a hand-made block, computed from the counts as it is read (:meth:`from_dict`)
    tpr_step: float | None = omissible()
    fpr_step: float | None = omissible()
    accuracy_step: float | None = omissible()

    _WHAT: ClassVar[str] = "resolution"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str | None = None, name: str | None = None) -> "Resolution":
        """The block checked and read; a block with the counts alone (a hand-made one) gets its steps computed from
        them, as :func:`resolution` would — on the attributes only: ``to_dict`` still writes the keys read."""
        read = super().from_dict(d, where, name)
        missing = {k: getattr(resolution(read.n_members, read.n_nonmembers), k)
                   for k in _STEPS if getattr(read, k) is None}
        return replace(read, **missing) if missing else read


def resolution(n_members: int, n_nonmembers: int) -> Resolution:
    """The smallest step each metric of one evaluation set can take: one member moves the TPR by
    1/n_members, one non-member the FPR by 1/n_nonmembers, one record the accuracy by 1/(total)
    (1.0 where a side is empty); ``to_dict()`` is the block the summaries carry.

    On small evaluation sets (navigation's 16 + 16 maps: one map = 0.0625 of TPR) two architectures
    whose TPRs differ by one step differ by one record, not by their architecture; the step is
    shown beside the numbers so that it is read before them.
    """
    n_members, n_nonmembers = int(n_members), int(n_nonmembers)
    return Resolution(n_members=n_members, n_nonmembers=n_nonmembers,
                      tpr_step=1.0 / n_members if n_members else 1.0,
                      fpr_step=1.0 / n_nonmembers if n_nonmembers else 1.0,
                      accuracy_step=1.0 / (n_members + n_nonmembers) if n_members + n_nonmembers else 1.0)


#: up to this FPR a stored ROC curve keeps every corner (the highest TPR at each FPR): the low-FPR
#: view and the ROC bands over repeats (core.measurement.bootstrap.ROC_GRID's log part) read the curve there
LOW_FPR_REGION = 0.1


def roc_points_kept(fpr: np.ndarray) -> np.ndarray:
    """Indices of the points of a ROC curve (FPR non-decreasing) to store: every corner — the last
    point at each FPR value, where the TPR is highest — up to :data:`LOW_FPR_REGION`, so the TPR
    read at any low FPR is the curve's own (an evenly thinned curve dropped corners and understated
    it); above, at most _MAX_ROC_POINTS evenly spaced points (ends kept)."""
    fpr = np.asarray(fpr, np.float64)
    n = len(fpr)
    if n <= _MAX_ROC_POINTS:
        return np.arange(n)
    corners = np.flatnonzero(np.r_[fpr[1:] != fpr[:-1], True] & (fpr <= LOW_FPR_REGION + 1e-12))
    return np.unique(np.r_[0, corners, np.linspace(0, n - 1, _MAX_ROC_POINTS).astype(int), n - 1])


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


@functools.lru_cache(maxsize=64)
def _clopper_pearson_table(n: int, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`clopper_pearson` of every count 0…n out of n, kept (read-only): ε̂ asks for the same few n
    (a split half's members and non-members) on every attack and draw."""
    lo, hi = clopper_pearson(np.arange(n + 1), n, confidence)
    lo.setflags(write=False)
    hi.setflags(write=False)
    return lo, hi


#: what ε̂ (:func:`empirical_epsilon`) is, for the help text beside it wherever a page shows it
EPSILON_HAT_HELP = ("A 95 % lower bound on ε (at δ = 0): the attack's threshold is chosen on a random half of the "
                    "evaluation records and ln(TPR/FPR), with Clopper–Pearson bounds, is read on the other half — one "
                    "test, so the 95 % holds (a threshold picked on the records it bounds overstates). Training that "
                    "is ε-DP with a smaller ε would contradict it; it is not the training's ε, whose accountant value "
                    "is an upper bound.")


def _split_halves(membership: np.ndarray, seed: int) -> np.ndarray:
    """A stratified random half of the records (True: the threshold-selection half): members and
    non-members are each shuffled and cut in two, so both halves keep the set's balance."""
    rng = np.random.default_rng(seed)
    select = np.zeros(len(membership), bool)
    for group in (np.flatnonzero(membership), np.flatnonzero(~membership)):
        select[rng.permutation(group)[: len(group) // 2]] = True
    return select


@dataclass(frozen=True, kw_only=True)
class EpsilonBound(Open):
    """:func:`empirical_epsilon`'s result, and its JSON block wherever one is stored (a defense baseline's and a
    training-time point's ``epsilon_lower_bound``, an after-training point's ``epsilon_lower_bound_detail``): the
    ``lower_bound`` on ε (0 when nothing is significant), the plain ``estimate`` ln(TPR/FPR) on the bounding half
    (None: no false positive there, ∞), its ``tpr`` and ``fpr`` there, the chosen ``threshold`` and ``direction``
    (None when none was chosen), the records of the bounding half (``n_bound``) and the ``method``.

    Only ``lower_bound`` is required, so a block written before the others were still reads; built
    in code it writes every field, null ones as null (the dict :func:`empirical_epsilon` always returned)."""

    lower_bound: float
    estimate: float | None = None
    tpr: float | None = None
    fpr: float | None = None
    threshold: float | None = None
    direction: str | None = None
    n_bound: int | None = None
    method: str | None = None

    _WHAT: ClassVar[str] = "epsilon_lower_bound"
    _ALL: ClassVar[bool] = True


def empirical_epsilon(scores: np.ndarray, membership: np.ndarray, confidence: float = 0.95,
                      seed: int = 0) -> EpsilonBound:
    """A lower bound on ε from one attack's scores, holding with probability ≥ ``confidence``
    (after Jagielski et al. 2020; Nasr et al. 2021).

    Any ε-DP mechanism forces TPR ≤ e^ε·FPR (and TNR ≤ e^ε·FNR) at every fixed threshold, so
    ε ≥ ln(TPR/FPR). What the number is, exactly: the records are split at random into two
    stratified halves (``seed``). On the first half the threshold and direction (members flagged
    above it, or non-members passed below it) with the largest Clopper–Pearson-bounded ratio are
    chosen; on the second half, with that threshold now fixed, ε̂ = ln(CP-lower(TPR) / CP-upper(FPR))
    at one-sided level (1+confidence)/2 each, so that both hold together with probability ≥
    ``confidence`` (Bonferroni). Because the threshold was not chosen on the records that bound
    it, this is a single test and the bound is a valid ``confidence`` lower bound on the ε of the
    mechanism that produced these scores (for i.i.d. records; a model's ε for its *training* set
    needs canaries, :mod:`core.measurement.audit`). The price of honesty: half the records bound it,
    so it is looser than a bound read off the best threshold of all records, which overstates.

    Returns an :class:`EpsilonBound`: the bound (0 when nothing is significant), the plain ln(TPR/FPR) on the
    second half (None when it has no false positive: ∞), its TPR and FPR there, the chosen threshold and
    direction, and the records of the bounding half.
    """
    return empirical_epsilon_rows(np.asarray(scores, np.float64)[None], membership, confidence, seed)[0]


def _cp_ratio_bound(hits: np.ndarray, n_hits: int | np.ndarray, misses: np.ndarray, n_miss: int | np.ndarray,
                    confidence: float) -> np.ndarray:
    """ln(CP-lower(hits/n_hits) / CP-upper(misses/n_miss)), 0 where not positive. A two-sided CP
    interval at ``confidence`` has each side at (1+confidence)/2: by the union bound the two
    bounds hold together with probability ≥ confidence."""
    hits, misses = np.asarray(hits, np.int64), np.asarray(misses, np.int64)
    n_hits, n_miss = np.broadcast_to(n_hits, hits.shape), np.broadcast_to(n_miss, misses.shape)
    lo, hi = np.empty(hits.shape), np.empty(misses.shape)
    # counts are integers ≤ n: the beta quantiles once per possible count, then looked up
    for n in np.unique(n_hits):
        at = n_hits == n
        lo[at] = _clopper_pearson_table(int(n), float(confidence))[0][hits[at]]
    for n in np.unique(n_miss):
        at = n_miss == n
        hi[at] = _clopper_pearson_table(int(n), float(confidence))[1][misses[at]]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((lo > hi) & (hi > 0), np.log(lo / hi), 0.0)


def _score_rows(scores: np.ndarray, membership: np.ndarray, rows: str) -> tuple[np.ndarray, np.ndarray]:
    """``scores`` as a (rows, records) float array and ``membership`` as bools, checked: one flag per record, no NaN."""
    s = np.asarray(scores, np.float64)
    y = np.asarray(membership).astype(bool)
    if s.ndim != 2 or s.shape[1] != y.size:
        raise ValueError(f"scores must have shape ({rows}, records) with one membership flag per record")
    if np.isnan(s).any():
        raise ValueError("attack scores are NaN (did the model diverge?)")
    return s, y


def empirical_epsilon_rows(scores: np.ndarray, membership: np.ndarray, confidence: float = 0.95,
                           seed: int = 0) -> list[EpsilonBound]:
    """:func:`empirical_epsilon` of each row of ``scores`` (shape (T, n), one membership vector
    for all rows, one split for all rows), vectorised over the rows: what a simulation of many
    trials of one mechanism needs."""
    s, y = _score_rows(scores, membership, "trials")
    select = _split_halves(y, seed)
    return _bound_on_halves(s[:, select], y[select], s[:, ~select], y[~select], confidence,
                            "threshold chosen on a random half, bounded on the other")


def pooled_empirical_epsilon(scores: np.ndarray, membership: np.ndarray, confidence: float = 0.95,
                             seed: int = 0) -> EpsilonBound:
    """One ``confidence`` lower bound on ε from several independent draws of a randomised mechanism on the same
    records (``scores`` shape (draws, records)): :func:`empirical_epsilon` with every (draw, record) a trial.

    The records are split into the two halves once (the same for every draw), so no record bounds what it helped
    choose; the threshold is chosen on the selection half's trials of every draw pooled, and the bound read off the
    bounding half's trials of every draw pooled (``n_bound`` = draws × its records). Given the records, the draws
    are independent, so each count is a sum of independent Bernoulli trials, whose spread a binomial of the same
    mean bounds: the Clopper–Pearson bounds stay valid and the bound holds with probability ≥ ``confidence`` over
    the mechanism's draws *on these records* (conditional on them: a record that is always flagged counts once per
    draw). One bound, unlike the mean of per-draw bounds, which is no bound at any stated level; over new records
    the one-draw :func:`empirical_epsilon` is the bound that treats records as the sample."""
    s, y = _score_rows(scores, membership, "draws")
    select = _split_halves(y, seed)
    draws = s.shape[0]
    return _bound_on_halves(s[:, select].reshape(1, -1), np.tile(y[select], draws), s[:, ~select].reshape(1, -1),
                            np.tile(y[~select], draws), confidence,
                            f"threshold chosen on a random half of the records, bounded on the other; {draws} "
                            "draws pooled")[0]


def _bound_on_halves(sel: np.ndarray, ys: np.ndarray, bound: np.ndarray, yb: np.ndarray, confidence: float,
                     method: str) -> list[EpsilonBound]:
    """:func:`empirical_epsilon_rows` on halves already split: ``sel`` (rows × trials) and its membership ``ys``
    choose each row's threshold, ``bound`` and ``yb`` bound it."""
    s = sel
    empty = EpsilonBound(lower_bound=0.0, estimate=0.0, tpr=0.0, fpr=0.0, threshold=None, direction=None,
                         n_bound=int(len(yb)), method=method)  # frozen: shared safely
    if min(ys.sum(), (~ys).sum(), yb.sum(), (~yb).sum()) == 0:
        return [empty] * len(s)  # a half without members or non-members: nothing to bound
    # selection half: every distinct threshold of each row (flag scores ≥ it), as roc_curve's points
    order = np.argsort(-sel, axis=1, kind="mergesort")
    sorted_scores = np.take_along_axis(sel, order, 1)
    tp = np.cumsum(ys[order], axis=1)
    fp = np.arange(1, sel.shape[1] + 1) - tp
    last_of_tie = np.c_[sorted_scores[:, 1:] != sorted_scores[:, :-1], np.ones((len(s), 1), bool)]
    n_pos, n_neg = int(ys.sum()), int((~ys).sum())
    directions = ("members above", "non-members below")
    eps = np.stack([_cp_ratio_bound(tp, n_pos, fp, n_neg, confidence),  # members flagged vs non-members flagged
                    _cp_ratio_bound(n_neg - fp, n_neg, n_pos - tp, n_pos, confidence)])  # non-members passed
    eps = np.where(last_of_tie[None], eps, 0.0)  # a threshold inside a tied block is no threshold
    flat = eps.transpose(1, 0, 2).reshape(len(s), -1)
    best = flat.argmax(axis=1)
    which, idx = np.divmod(best, sel.shape[1])
    chosen = flat[np.arange(len(s)), best] > 0
    threshold = sorted_scores[np.arange(len(s)), idx]
    # bounding half: the chosen threshold, now fixed, counted once
    flagged = bound >= threshold[:, None]
    member_b = yb[None]
    tp_b, fp_b = (flagged & member_b).sum(1), (flagged & ~member_b).sum(1)
    nb_pos, nb_neg = int(yb.sum()), int((~yb).sum())
    above = which == 0
    hits = np.where(above, tp_b, nb_neg - fp_b)
    misses = np.where(above, fp_b, nb_pos - tp_b)
    n_hits = np.where(above, nb_pos, nb_neg)
    n_miss = np.where(above, nb_neg, nb_pos)
    lower = np.where(chosen, _cp_ratio_bound(hits, n_hits, misses, n_miss, confidence), 0.0)
    out = []
    for r in range(len(s)):
        if not chosen[r]:
            out.append(empty)
            continue
        rate_hit, rate_miss = hits[r] / n_hits[r], misses[r] / n_miss[r]
        estimate = (float(np.log(rate_hit / rate_miss)) if rate_miss > 0 and rate_hit > 0 else
                    (None if rate_hit > 0 else 0.0))  # None: no false positive, ln(TPR/0) = ∞
        out.append(replace(empty, lower_bound=float(lower[r]), estimate=estimate, tpr=float(tp_b[r] / nb_pos),
                           fpr=float(fp_b[r] / nb_neg), threshold=float(threshold[r]),
                           direction=directions[int(which[r])]))
    return out
