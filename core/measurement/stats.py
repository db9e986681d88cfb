"""Uncertainty of the explorer's numbers: intervals across repeats, bootstrap over records,
paired FFNN-vs-RNN differences and a three-valued verdict (numpy/scipy only; bottom layer).

Two sources of spread, two intervals:

* **Across repeats** (independent seeds: data split, initialisation, batch order). A metric
  measured on N repeats x₁…x_N gets the Student-t interval
  x̄ ± t_{N−1, 1−α/2} · s/√N  (s the sample standard deviation; exact for normal xᵢ,
  e.g. Wasserman, *All of Statistics*, 2004, §10.4). This is the interval a comparison needs:
  it contains the seed-to-seed variation that one run cannot show.
* **Within one run** (the evaluation records are a sample): a stratified bootstrap over records
  (members and non-members resampled separately, so every resample stays balanced), percentile
  or BCa (Efron, "Better bootstrap confidence intervals", JASA 1987; Efron & Tibshirani, *An
  Introduction to the Bootstrap*, 1993, ch. 14). TPR at a low FPR rests on very few records:
  with n₀ non-members only ⌊FPR·n₀⌋ false positives are allowed (zero at FPR 0.001 and
  n₀ < 1000, where "TPR at 0.1 % FPR" is the TPR at *no* false positive), and its interval is
  correspondingly wide (:func:`low_fpr_note`).

The FFNN-vs-RNN comparison is **paired** by repeat: repeat r of both architectures uses the same
derived seed, hence the same data split, so dᵣ = FFNN_r − RNN_r removes the split's share of
the variance. Its interval is the t interval of the dᵣ; its p-values are the paired t test's and
an exact sign-flip permutation test's (Fisher 1935; Good, *Permutation Tests*, 2000). The effect size
is Cohen's d_z = d̄ / s_d (Lakens, Front. Psychol. 2013).

The verdict about the studies' finding "the RNN leaks more" is three-valued: ``holds`` when the
difference's 95 % interval lies wholly on the expected side of 0 (FFNN − RNN < 0 for a leakage
metric) **and** the exact sign-flip test agrees (p ≤ 1 − confidence), ``reversed`` when both say
the other side, ``inconclusive`` otherwise. The t interval alone is not enough: when every repeat
gives the same difference (a coarse metric: one navigation map moves accuracy by 1/32) its width
is zero and p_t = 0, which is the metric's resolution, not certainty. The sign-flip test needs no
normality, but with N pairs its p cannot go below 2/2^N, so below :func:`min_repeats_for` (6 at
95 %) no verdict can be reached at all and the reason says which N could. ``inconclusive`` also
for N < 2 (no interval) and for a zero-width interval (all differences equal).

Every result is a frozen dataclass with ``to_dict`` / ``from_dict`` (JSON keys ``mean``,
``ci_low``, ``ci_high``, ``n``, ``values``; no NaN: an interval that does not exist is null).
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np
from scipy import stats as sps

from core.foundations.errors import ResultFormatError
from core.foundations.typed_json import INT, NUM, Conv, Open, converts, fail, null

#: the confidence of every interval unless told otherwise
CONFIDENCE = 0.95
#: the three verdicts of a test, in the studies' direction ("the RNN leaks more")
VERDICTS = ("holds", "reversed", "inconclusive")
#: the two words a finding reads where its test is not allowed to decide: the claim's condition fails (utility not
#: matched on train and validation) or nothing could differ (both arms at a ceiling or a floor)
NOT_COMPARABLE, UNINFORMATIVE = "not comparable", "uninformative"
#: every word a finding's verdict can read
FINDING_VERDICTS = VERDICTS + (NOT_COMPARABLE, UNINFORMATIVE)
#: the power a finding's target N is sized for
TARGET_POWER = 0.80
#: repeats up to which the sign-flip test enumerates all 2^N sign patterns (above: Monte Carlo)
EXACT_PERMUTATION_MAX_N = 16
#: Monte Carlo sign flips above EXACT_PERMUTATION_MAX_N
PERMUTATION_DRAWS = 100_000


def _finite_or_none(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else float(x)


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")


# ---------------------------------------------------------------------------- estimates
#: the note of an interval of zero width: every value equal (repeats, or every resample of the records)
ALL_EQUAL = "all values equal: the interval has zero width, which is the metric's resolution, not certainty"


def is_zero_width(low: float | None, high: float | None, mean: float | None = None) -> bool:
    """Whether an interval exists and has zero width (up to float rounding): shown as "no spread", never as
    ``x [x, x]``, and never a finding (:func:`verdict`)."""
    if low is None or high is None:
        return False
    return high - low <= 1e-12 * max(1.0, abs(mean if mean is not None else low))


@dataclass(frozen=True)
class Estimate:
    """A number with its interval.

    Attributes:
        mean: the point estimate (the mean over repeats, or the statistic on all records).
        ci_low, ci_high: the interval's ends (None where no interval exists, e.g. N = 1).
        n: repeats (``method`` ``t``/``single``) or records (bootstrap) behind it.
        values: the per-repeat values (empty for a bootstrap over records).
        method: ``t`` (Student-t across repeats), ``single`` (N = 1: no interval),
            ``bootstrap-percentile`` or ``bootstrap-bca`` (over records).
        confidence: the interval's nominal coverage.
        note: why an interval is missing or wide (few positives, N = 1), else "".
    """

    mean: float
    ci_low: float | None
    ci_high: float | None
    n: int
    values: tuple[float, ...] = ()
    method: str = "t"
    confidence: float = CONFIDENCE
    note: str = ""

    @property
    def half_width(self) -> float | None:
        """Half the interval's width (None without an interval)."""
        if self.ci_low is None or self.ci_high is None:
            return None
        return (self.ci_high - self.ci_low) / 2

    @property
    def sd(self) -> float | None:
        """Sample standard deviation of the per-repeat values (None with fewer than two)."""
        return float(np.std(self.values, ddof=1)) if len(self.values) >= 2 else None

    def excludes(self, value: float = 0.0) -> bool:
        """Whether the interval exists and does not contain ``value``."""
        return self.ci_low is not None and self.ci_high is not None and not self.ci_low <= value <= self.ci_high

    def to_dict(self) -> dict[str, Any]:
        return {"mean": _finite_or_none(self.mean), "ci_low": _finite_or_none(self.ci_low),
                "ci_high": _finite_or_none(self.ci_high), "n": int(self.n), "values": [float(v) for v in self.values],
                "sd": _finite_or_none(self.sd), "method": self.method, "confidence": self.confidence, "note": self.note}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Estimate":
        return cls(mean=float("nan") if d["mean"] is None else float(d["mean"]),
                   ci_low=None if d.get("ci_low") is None else float(d["ci_low"]),
                   ci_high=None if d.get("ci_high") is None else float(d["ci_high"]), n=int(d["n"]),
                   values=tuple(float(v) for v in d.get("values", ())), method=str(d.get("method", "t")),
                   confidence=float(d.get("confidence", CONFIDENCE)), note=str(d.get("note", "")))


def estimate() -> Conv:
    """The converter of an :class:`Estimate` in a typed layout (:mod:`core.foundations.typed_json`): mean, ci_low,
    ci_high, n, values, sd, method, confidence, note; the fields every reader needs checked, one line naming one."""
    def read(v: Any, where: str) -> Estimate:
        if not isinstance(v, dict):
            raise fail(where, "an interval object", v)
        for key, conv in (("mean", null(NUM)), ("n", INT)):
            if key not in v:
                raise ResultFormatError(f"{where} lacks {key!r}")
            conv.read(v[key], f"{where}.{key}")
        for key in ("ci_low", "ci_high"):
            if key in v:
                null(NUM).read(v[key], f"{where}.{key}")
        return Estimate.from_dict(v)

    return Conv(read, lambda e: e.to_dict(), schema={
        "type": "object", "description": "an estimate with its 95 % interval over n values",
        "properties": {"mean": {"type": ["number", "null"]}, "n": {"type": "integer"},
                       "ci_low": {"type": ["number", "null"]}, "ci_high": {"type": ["number", "null"]}},
        "required": ["mean", "n"]})


converts(Estimate, estimate())  # a layout's field annotated Estimate reads and writes an interval


def mean_interval(values: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE,
                  bounds: tuple[float | None, float | None] | None = None) -> Estimate:
    """Mean of per-repeat values with the Student-t interval x̄ ± t_{N−1,1−α/2}·s/√N.

    With N = 1 there is no interval (``ci_low = ci_high = None``, method ``single``). Values must
    be finite (a missing metric is left out by the caller, which then reports the smaller N).
    ``bounds`` (low, high; None = unbounded) is the metric's range, e.g. (0, 1) for an AUC: the
    interval is intersected with it (the true mean lies in the range, so coverage is kept) and the
    note says so — an AUC of "0.998 [0.991, 1.004]" names values no AUC can take.
    """
    _check_confidence(confidence)
    x = np.asarray(values, np.float64).ravel()
    if x.size == 0:
        raise ValueError("an interval needs at least one value")
    if not np.isfinite(x).all():
        raise ValueError("values must be finite")
    mean = float(x.mean())
    if x.size == 1:
        return Estimate(mean, None, None, 1, (float(x[0]),), "single", confidence,
                        "one repeat: no interval (run with --repeats ≥ 2)")
    half = float(sps.t.ppf(0.5 + confidence / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    low, high, note = _clipped(mean - half, mean + half, bounds)
    if x.max() == x.min():  # a zero-width t interval: the metric's resolution (1/n records), not certainty
        note = "; ".join(v for v in (note, f"{ALL_EQUAL} (N = {x.size})") if v)
    return Estimate(mean, low, high, int(x.size), tuple(float(v) for v in x), "t", confidence, note)


def interval_from_moments(mean: float, sd: float, n: int, confidence: float = CONFIDENCE, method: str = "t",
                          note: str = "", bounds: tuple[float | None, float | None] | None = None) -> Estimate:
    """The Student-t interval mean ± t_{n−1,1−α/2}·sd/√n from summary statistics (e.g. a defense
    point's mean and sd over its n draws); no interval with n < 2; ``bounds`` as in
    :func:`mean_interval`."""
    _check_confidence(confidence)
    if n < 2:
        return Estimate(float(mean), None, None, int(n), (), "single", confidence, note or "one value: no interval")
    half = float(sps.t.ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n))
    low, high, clip_note = _clipped(float(mean) - half, float(mean) + half, bounds)
    return Estimate(float(mean), low, high, int(n), (), method, confidence, "; ".join(x for x in (note, clip_note) if x))


def _clipped(low: float, high: float, bounds: tuple[float | None, float | None] | None) -> tuple[float, float, str]:
    """(low, high) intersected with a metric's range ``bounds`` (None: unbounded), and a note
    saying so when it cut: the true mean lies in the range, so coverage is kept."""
    lo_bound, hi_bound = bounds if bounds is not None else (None, None)
    cut_low = lo_bound is not None and low < lo_bound
    cut_high = hi_bound is not None and high > hi_bound
    if lo_bound is not None and cut_low:
        low = float(lo_bound)
    if hi_bound is not None and cut_high:
        high = float(hi_bound)
    if cut_low and cut_high:
        return low, high, f"interval clipped to the metric's range [{lo_bound:g}, {hi_bound:g}]"
    if cut_low or cut_high:
        return low, high, f"interval clipped to the metric's range at {lo_bound if cut_low else hi_bound:g}"
    return low, high, ""


# ---------------------------------------------------------------------------- paired difference and verdict
def sign_flip_pvalue(differences: Sequence[float] | np.ndarray, *, seed: int = 0) -> tuple[float, bool]:
    """Two-sided p-value of H₀ "the paired differences are symmetric about 0" by sign flips.

    Under H₀ each dᵣ is as likely as −dᵣ, so the statistic |Σ εᵣdᵣ| over the 2^N sign patterns ε
    is the null distribution of |Σ dᵣ|; p = #{patterns with |Σ εd| ≥ |Σ d|} / 2^N (the observed
    pattern included, so p ≥ 2/2^N when d ≠ 0). Exact up to :data:`EXACT_PERMUTATION_MAX_N`
    repeats, else :data:`PERMUTATION_DRAWS` random patterns (p = (1 + hits)/(1 + draws)).

    Returns (p, exact).
    """
    d = np.asarray(differences, np.float64)
    if d.size == 0:
        raise ValueError("no differences")
    observed = abs(d.sum())
    tol = 1e-12 * max(1.0, np.abs(d).sum())
    if d.size <= EXACT_PERMUTATION_MAX_N:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
        return float((np.abs(signs @ d) >= observed - tol).mean()), True
    rng = np.random.default_rng(seed)
    signs = rng.choice((1.0, -1.0), size=(PERMUTATION_DRAWS, d.size))
    hits = int((np.abs(signs @ d) >= observed - tol).sum())
    return (1 + hits) / (1 + PERMUTATION_DRAWS), False


@dataclass(frozen=True)
class PairedDifference:
    """A − B paired by repeat (here A = FFNN, B = RNN): per-architecture estimates, the
    difference's t interval, the paired t test's and the sign-flip test's two-sided p-values,
    and Cohen's d_z = d̄/s_d (None when undefined: N < 2 or all differences equal)."""

    a: Estimate
    b: Estimate
    diff: Estimate
    p_t: float | None
    p_permutation: float | None
    permutation_exact: bool
    effect_size: float | None

    @property
    def n(self) -> int:
        return self.diff.n

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a.to_dict(), "b": self.b.to_dict(), "diff": self.diff.to_dict(),
                "p_t": _finite_or_none(self.p_t), "p_permutation": _finite_or_none(self.p_permutation),
                "permutation_exact": self.permutation_exact, "effect_size": _finite_or_none(self.effect_size),
                "n": self.n}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "PairedDifference":
        return cls(Estimate.from_dict(d["a"]), Estimate.from_dict(d["b"]), Estimate.from_dict(d["diff"]),
                   d.get("p_t"), d.get("p_permutation"), bool(d.get("permutation_exact", True)), d.get("effect_size"))


def paired_difference(a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE,
                      bounds: tuple[float | None, float | None] | None = None) -> PairedDifference:
    """The paired difference dᵣ = aᵣ − bᵣ over repeats r (same seed → same split).

    Interval: d̄ ± t_{N−1,1−α/2}·s_d/√N. Paired t test: T = d̄/(s_d/√N) with N−1 degrees of
    freedom (p two-sided; 1 if all dᵣ = 0, 0 if they are equal and non-zero). Sign-flip test:
    :func:`sign_flip_pvalue`. With N = 1 there is neither interval nor p-value. ``bounds``: the
    metric's range, to which A's and B's own intervals are clipped (not the difference's).
    """
    x, y = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"paired values need the same number of repeats, got {x.size} and {y.size}")
    d = x - y
    diff = mean_interval(d, confidence)
    if d.size < 2:
        return PairedDifference(mean_interval(x, confidence, bounds), mean_interval(y, confidence, bounds), diff,
                                None, None, True, None)
    sd = float(d.std(ddof=1))
    if sd == 0:
        p_t = 1.0 if diff.mean == 0 else 0.0
        effect = None
    else:
        p_t = float(2 * sps.t.sf(abs(diff.mean) / (sd / math.sqrt(d.size)), d.size - 1))
        effect = diff.mean / sd
    p_perm, exact = sign_flip_pvalue(d)
    return PairedDifference(mean_interval(x, confidence, bounds), mean_interval(y, confidence, bounds), diff, p_t, p_perm,
                            exact, effect)


@dataclass(frozen=True, kw_only=True)
class Verdict(Open):
    """The three-valued verdict on a paired difference, and its JSON wherever one is written (a comparison's metric,
    a finding, a utility-cost row), read back by ``from_dict`` as this class (open: a key it does not type is kept).

    Attributes:
        value: ``holds`` / ``reversed`` / ``inconclusive`` (a finding's: also ``not comparable`` / ``uninformative``).
        expected: the sign the hypothesis predicts for A − B (−1: A below B, e.g. FFNN − RNN of a
            leakage metric when "the RNN leaks more"; +1 the other way).
        effect: d̄ (in the metric's units), ci_low/ci_high its interval, effect_size Cohen's d_z (None: undefined).
        n: repeats; reason: one line saying why.
    """

    value: str
    expected: int
    effect: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    effect_size: float | None = None
    n: int
    reason: str

    _WHAT: ClassVar[str] = "verdict"
    _ALL: ClassVar[bool] = True  # built here, every key is written, an undefined number as null

    def __post_init__(self) -> None:
        for k in ("effect", "ci_low", "ci_high", "effect_size"):  # no NaN in the JSON: a number that does not exist
            v = getattr(self, k)
            if isinstance(v, float) and not math.isfinite(v):
                object.__setattr__(self, k, None)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str | None = None, name: str | None = None) -> "Verdict":
        v = super().from_dict(d, where, name)
        if v.value not in FINDING_VERDICTS:
            raise ResultFormatError(f"{where or cls._WHAT}.value must be one of {', '.join(FINDING_VERDICTS)}, "
                                    f"got {v.value!r}")
        return v


def min_repeats_for(confidence: float = CONFIDENCE) -> int:
    """The fewest pairs N with which the two-sided exact sign-flip test can reach ``confidence``:
    its smallest p-value is 2/2^N (all differences on one side), so N = ⌈log₂(2/α)⌉ (6 at 95 %)."""
    _check_confidence(confidence)
    return max(1, math.ceil(math.log2(2 / (1 - confidence)) - 1e-12))


def verdict(diff: PairedDifference, expected: int = -1) -> Verdict:
    """``holds`` if the difference's t interval lies wholly on the ``expected`` side of 0 and the
    exact sign-flip test rejects "no difference" at the same level, ``reversed`` if both say the
    other side, else ``inconclusive`` — always with N < 2, with a zero-width interval (all N
    differences equal: the interval reflects the metric's resolution, not certainty) and with
    N < :func:`min_repeats_for` (the sign-flip test cannot reach the confidence: the reason says
    which N can)."""
    if expected not in (-1, 1):
        raise ValueError("expected must be -1 or +1")
    e = diff.diff
    n = e.n
    pct = round(100 * e.confidence)
    alpha = 1 - e.confidence
    n_min = min_repeats_for(e.confidence)

    def judged(value: str, why: str) -> Verdict:
        return Verdict(value=value, expected=expected, effect=e.mean, ci_low=e.ci_low, ci_high=e.ci_high,
                       effect_size=diff.effect_size, n=n, reason=why)

    if e.ci_low is None or e.ci_high is None:
        return Verdict(value="inconclusive", expected=expected, effect=e.mean, n=n, reason=(
            f"N = {n}: no interval; run ≥ {n_min} repeats (a sign-flip test reaches {pct} % from N = {n_min})"))
    ci = f"{pct} % CI [{e.ci_low:+.3f}, {e.ci_high:+.3f}], N = {n}"
    p_perm = diff.p_permutation
    side = int(np.sign(e.mean))
    if e.ci_high - e.ci_low <= 1e-12 * max(1.0, abs(e.mean)):  # equal up to float rounding
        why = (f"difference {e.mean:+.3f} in all N = {n} repeats: a zero-width interval is the metric's "
               f"resolution, not certainty")
        if n < n_min:
            why += f"; N = {n} cannot reach {pct} % with a sign test; {n_min} can"
        return judged("inconclusive", why)
    if not e.excludes(0.0):
        return judged("inconclusive", f"difference {e.mean:+.3f} ({ci}) contains 0")
    if n < n_min:
        return judged("inconclusive", f"difference {e.mean:+.3f} ({ci}) excludes 0, but N = {n} cannot reach {pct} % "
                      f"with a sign test; {n_min} can (its p is at least 2/2^{n} = {2 / 2 ** n:.3g})")
    if p_perm is None or p_perm > alpha:
        return judged("inconclusive", f"difference {e.mean:+.3f} ({ci}) excludes 0, but the sign-flip test does not "
                      f"agree (p = {p_perm:.3g} > {alpha:g})")
    agrees = f"sign-flip p = {p_perm:.3g}"
    if side == expected:
        value, why = "holds", f"difference {e.mean:+.3f} ({ci}; {agrees}) excludes 0 in the expected direction"
    else:
        value, why = "reversed", f"difference {e.mean:+.3f} ({ci}; {agrees}) excludes 0 against the expected direction"
    return judged(value, why)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (Holm, "A simple sequentially rejective multiple test
    procedure", Scand. J. Statist. 1979): with the m p-values sorted p₍₁₎ ≤ … ≤ p₍ₘ₎, the adjusted
    p₍ᵢ₎ = max over j ≤ i of min(1, (m − j + 1)·p₍ⱼ₎). Rejecting where the adjusted p ≤ α keeps the
    chance of any false rejection in the family ≤ α under any dependence between the tests (the
    leakage metrics of one comparison are strongly dependent). ``None`` (no test) stays None and
    does not count in m."""
    have = [(float(p), i) for i, p in enumerate(pvalues) if p is not None]
    out: list[float | None] = [None] * len(pvalues)
    m = len(have)
    running = 0.0
    for rank, (p, i) in enumerate(sorted(have)):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def corrected_verdict(v: Verdict, p_t: float | None, p_permutation: float | None, family: int,
                      confidence: float = CONFIDENCE) -> Verdict:
    """``v`` (from :func:`verdict`) within a family of ``family`` tests, given its Holm-adjusted
    p-values (:func:`holm`): a ``holds`` / ``reversed`` stays only if both the adjusted paired-t and
    the adjusted sign-flip p are ≤ 1 − confidence, else it reads ``inconclusive`` and says why (the
    uncorrected interval alone would carry the family's multiplicity)."""
    if v.value == "inconclusive":
        return v
    alpha = 1 - confidence
    worst = max((p for p in (p_t, p_permutation) if p is not None), default=None)
    if worst is not None and worst <= alpha:
        return dataclasses.replace(v, reason=f"{v.reason}; Holm-adjusted p ≤ {worst:.3g} over {family} secondary metrics")
    shown = "—" if worst is None else f"{worst:.3g}"
    return dataclasses.replace(v, value="inconclusive", reason=(
        f"{v.reason}, but not after Holm's correction over {family} secondary metrics (adjusted p = {shown} > {alpha:g})"))


@dataclass(frozen=True)
class Comparison:
    """One metric compared between two architectures: the paired difference and, when the
    metric has a hypothesis (``expected`` ≠ 0), its verdict."""

    metric: str
    difference: PairedDifference
    verdict: Verdict | None = None
    labels: tuple[str, str] = ("ffnn", "rnn")

    def to_dict(self) -> dict[str, Any]:
        a, b = self.labels
        return {"metric": self.metric, a: self.difference.a.to_dict(), b: self.difference.b.to_dict(),
                "difference": {"of": f"{a} - {b}", **self.difference.to_dict()},
                "verdict": self.verdict.to_dict() if self.verdict else None}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Comparison":
        a, b = str(d["difference"]["of"]).split(" - ")
        return cls(str(d["metric"]), PairedDifference.from_dict(d["difference"]),
                   Verdict.from_dict(d["verdict"]) if d.get("verdict") else None, (a, b))


def compare(metric: str, a: Sequence[float], b: Sequence[float], expected: int = 0,
            labels: tuple[str, str] = ("ffnn", "rnn"), confidence: float = CONFIDENCE,
            bounds: tuple[float | None, float | None] | None = None) -> Comparison:
    """The paired comparison of ``metric`` (A = ``a``, B = ``b`` by repeat) and, with
    ``expected`` = ±1, its verdict; ``bounds``: the metric's range (see :func:`mean_interval`)."""
    diff = paired_difference(a, b, confidence, bounds)
    return Comparison(metric, diff, verdict(diff, expected) if expected else None, labels)


# ---------------------------------------------------------------------------- the N a test can decide at
def decidable_at(family: int = 1, confidence: float = CONFIDENCE) -> int:
    """The smallest N at which the paired test of :func:`verdict` can decide at all for a metric in a Holm family
    of ``family`` tests: the exact sign-flip p is at least 2/2^N, and Holm multiplies the smallest p of the family
    by ``family`` (the best position a metric can take), so N = ⌈log₂(2·family/α)⌉ (6 alone, 8 in a family of 5)."""
    _check_confidence(confidence)
    if family < 1:
        raise ValueError("a family holds at least one test")
    return max(1, math.ceil(math.log2(2 * family / (1 - confidence)) - 1e-12))


def power_paired(effect: float, sd: float, n: int, family: int = 1, confidence: float = CONFIDENCE) -> float:
    """The power of :func:`verdict` at N = ``n`` against a true mean difference ``effect`` with per-repeat spread
    ``sd``, in a Holm family of ``family`` (Bonferroni's α/family: Holm's first step, the conservative one): the
    two-sided paired t test by the noncentral t distribution, 0 below :func:`decidable_at` (where the sign-flip test
    cannot reject). For normal differences above that floor the sign-flip test's power is close to the t test's."""
    if n < decidable_at(family, confidence) or n < 2:
        return 0.0
    if sd <= 0:
        return 1.0 if effect != 0 else 0.0
    alpha = (1 - confidence) / family
    crit = float(sps.t.ppf(1 - alpha / 2, n - 1))
    nc = abs(float(effect)) / sd * math.sqrt(n)
    # the far tail (a difference of the wrong sign past −crit) is below 1e-300 for a large nc, where scipy says nan
    far = float(sps.nct.cdf(-crit, n - 1, nc))
    return min(1.0, float(sps.nct.sf(crit, n - 1, nc)) + (far if math.isfinite(far) else 0.0))


def repeats_for_power(effect: float, sd: float | None, family: int = 1, power: float = TARGET_POWER,
                      confidence: float = CONFIDENCE, cap: int = 100_000) -> int | None:
    """The fewest N ≥ :func:`decidable_at` with :func:`power_paired` ≥ ``power`` (None beyond ``cap``, for a zero
    effect or an unknown spread)."""
    floor = decidable_at(family, confidence)
    if sd is None or not math.isfinite(sd) or not math.isfinite(effect) or effect == 0:
        return None
    def enough(k: int) -> bool:
        return power_paired(effect, sd, k, family, confidence) >= power

    if enough(floor):
        return floor
    lo, hi = floor, floor * 2
    while not enough(hi):  # doubling first: the noncentral t is unreliable far beyond the N that suffices
        lo, hi = hi, hi * 2
        if hi > cap:
            return None
    while hi - lo > 1:  # enough(hi), not enough(lo)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi


@dataclass(frozen=True)
class Equivalence:
    """Two one-sided t tests (TOST; Schuirmann, J. Pharmacokin. Biopharm. 1987) of "the mean lies within
    [``low``, ``high``]": ``p`` the larger one-sided p; ``equivalent`` when p ≤ α (the (1 − 2α) interval
    ``ci_low``, ``ci_high`` lies within the margin); ``outside`` when the ordinary (1 − α) interval lies wholly
    outside the margin."""

    mean: float
    low: float
    high: float
    ci_low: float | None
    ci_high: float | None
    p: float | None
    equivalent: bool
    outside: bool
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {"mean": _finite_or_none(self.mean), "low": self.low, "high": self.high,
                "ci_low": _finite_or_none(self.ci_low), "ci_high": _finite_or_none(self.ci_high),
                "p": _finite_or_none(self.p), "equivalent": self.equivalent, "outside": self.outside, "n": self.n}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Equivalence":
        return cls(float("nan") if d["mean"] is None else float(d["mean"]), float(d["low"]), float(d["high"]),
                   d.get("ci_low"), d.get("ci_high"), d.get("p"), bool(d["equivalent"]), bool(d["outside"]),
                   int(d["n"]))


def tost(values: Sequence[float], low: float, high: float, confidence: float = CONFIDENCE) -> Equivalence:
    """TOST of the mean of ``values`` against the margin [``low``, ``high``] at level α = 1 − ``confidence``; with
    N < 2 or every value equal nothing is shown (a zero spread is the metric's resolution, not certainty)."""
    x = np.asarray(values, np.float64).ravel()
    mean = float(x.mean()) if x.size else float("nan")
    if x.size < 2 or x.max() == x.min():
        return Equivalence(mean, low, high, None, None, None, False, False, int(x.size))
    alpha = 1 - confidence
    se = float(x.std(ddof=1) / math.sqrt(x.size))
    df = x.size - 1
    p = max(float(sps.t.sf((mean - low) / se, df)), float(sps.t.sf((high - mean) / se, df)))
    half90 = float(sps.t.ppf(1 - alpha, df)) * se
    half95 = float(sps.t.ppf(1 - alpha / 2, df)) * se
    outside = mean - half95 > high or mean + half95 < low
    return Equivalence(mean, low, high, mean - half90, mean + half90, p, p <= alpha, outside, int(x.size))


def power_tost(distance: float, sd: float, n: int, width: float, confidence: float = CONFIDENCE) -> float:
    """The power of :func:`tost` at N = ``n`` where the true mean lies ``distance`` inside the nearer edge of a
    margin of full ``width``, per-value spread ``sd`` (both one-sided tests by the noncentral t)."""
    if n < 2 or distance <= 0:
        return 0.0
    if sd <= 0:
        return 1.0
    df, se = n - 1, sd / math.sqrt(n)
    crit = float(sps.t.ppf(confidence, df))
    near = float(sps.nct.sf(crit, df, distance / se))
    far = float(sps.nct.sf(crit, df, (width - distance) / se))
    near, far = (1.0 if not math.isfinite(v) else v for v in (near, far))
    return max(0.0, near + far - 1.0)


def repeats_for_tost(distance: float, sd: float | None, width: float, power: float = TARGET_POWER,
                     confidence: float = CONFIDENCE, cap: int = 10_000) -> int | None:
    """The fewest N ≥ 2 with :func:`power_tost` ≥ ``power`` (None beyond ``cap``, outside the margin, or with an
    unknown spread)."""
    if sd is None or not math.isfinite(sd) or distance <= 0:
        return None
    for n in range(2, cap + 1):
        if power_tost(distance, sd, n, width, confidence) >= power:
            return n
    return None
