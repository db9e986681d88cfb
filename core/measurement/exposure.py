"""Per-record exposure: which records one model (or one defense setting) exposes that another does not.

Two score tables over *the same* evaluated records — e.g. LiRA's scores under the FFNN and under the
RNN of one preset (same seed, same split, so record i is the same record in both), or one model's
scores without and with a defense — are turned into decisions at a chosen false-positive rate and
compared record by record. Pure numpy/scipy; the wiring on cached runs is :mod:`core.analyses.record_views`.

* **Threshold at an FPR** (:func:`threshold_at_fpr`): from the non-members' scores alone, the
  smallest threshold t such that at most ⌊α·n⌋ of the n non-members score strictly above t
  ("exposed" = score > t). The realised FPR is reported (≤ α; with α·n < 1 it is 0: the threshold
  is the highest non-member score). This is the low-FPR operating point of Carlini et al. (2022,
  "Membership inference attacks from first principles", §3): the records an attacker could name
  with few false alarms.
* **Quadrants** (:func:`quadrants`): exposed by both, only by B ("only RNN"), only by A ("only
  FFNN"), by neither — counted over members (the records whose exposure is a privacy harm) and,
  for reference, over non-members (false alarms). Each count carries its share of the members with a
  Clopper–Pearson 95 % interval over records, and, when several repeats (independently trained pairs)
  are given, the mean and a t interval over repeats.
* **Flips** (:func:`flips`): undefended vs defended decisions of the same attack on the same
  model; members that *stop* being exposed and those that *start* (each side thresholded at its own
  non-members' FPR). Undefended vs itself gives no flips.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Sequence

import numpy as np

from core.foundations.typed_json import Open, omissible
from core.measurement.metrics import clopper_pearson
from core.measurement.stats import mean_interval

#: FPRs offered for exposure decisions (Carlini et al.'s low-FPR regime)
EXPOSURE_FPRS = (0.01, 0.001)
#: quadrant names, in the order (A exposed, B exposed) = (T, T), (F, T), (T, F), (F, F)
QUADRANTS = ("both", "only_b", "only_a", "neither")


def fpr_label(fpr: float, n_nonmembers: int) -> str:
    """How an exposure FPR is named: "FPR 1.0 %" where the non-members resolve it (⌊fpr·n⌋ ≥ 1 false
    positive allowed), else what the threshold is — the highest non-member score — "0 false positives
    (FPR < 1/n; 0.1 % asked)": with 12 non-members FPR 1 % and 0.1 % are the same operating point."""
    if math.floor(fpr * n_nonmembers + 1e-9) >= 1:
        return f"FPR {fpr:.1%}"
    return f"0 false positives (FPR < 1/{n_nonmembers}; {fpr:.1%} asked)"


def _scores(values: Any) -> np.ndarray:
    s = np.asarray(values, np.float64)
    if s.ndim != 1:
        raise ValueError(f"scores must be one-dimensional, got shape {s.shape}")
    if np.isnan(s).any():
        raise ValueError(f"{int(np.isnan(s).sum())} scores are NaN")
    return s


def threshold_at_fpr(non_member_scores: Any, fpr: float) -> float:
    """The threshold t with at most ⌊fpr·n⌋ of the n non-members scoring strictly above it."""
    s = np.sort(_scores(non_member_scores))[::-1]
    if len(s) == 0:
        raise ValueError("a threshold at an FPR needs non-members")
    if not 0 <= fpr < 1:
        raise ValueError(f"fpr must lie in [0, 1), got {fpr}")
    k = int(math.floor(fpr * len(s) + 1e-9))
    return float(s[min(k, len(s) - 1)])


@dataclass(frozen=True)
class Exposure:
    """One score table's decisions at an FPR: ``exposed[i]`` iff score_i > threshold."""

    threshold: float
    fpr_target: float
    fpr_realised: float
    tpr: float
    exposed: tuple[bool, ...]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["exposed"] = list(self.exposed)
        return d


def exposure(scores: Any, membership: Any, fpr: float) -> Exposure:
    """Decisions of one score table at ``fpr`` (threshold from its own non-members)."""
    s = _scores(scores)
    m = np.asarray(membership, bool)
    if len(m) != len(s) or m.all() or not m.any():
        raise ValueError("membership must match the scores and hold members and non-members")
    t = threshold_at_fpr(s[~m], fpr)
    exposed = s > t
    return Exposure(t, float(fpr), float(exposed[~m].mean()), float(exposed[m].mean()), tuple(bool(v) for v in exposed))


@dataclass(frozen=True, kw_only=True)
class QuadrantCount(Open):
    """Members (or non-members) in one quadrant: count, share with its 95 % interval over records. Its JSON is
    read back as this class too (``from_dict``; ``repeats`` None where a layout lacks it)."""

    name: str
    count: int
    n: int
    share: float
    share_low: float
    share_high: float
    #: over repeats (None with one): mean count and a 95 % t interval
    repeats: int | None = omissible(1)
    mean_count: float | None = None
    count_low: float | None = None
    count_high: float | None = None

    _WHAT: ClassVar[str] = "quadrant count"
    _ALL: ClassVar[bool] = True  # every field written, None as null, as asdict wrote it


@dataclass(frozen=True)
class Quadrants:
    """Exposure of the same records under A and B (e.g. FFNN and RNN) at one FPR."""

    label_a: str
    label_b: str
    fpr: float
    a: Exposure
    b: Exposure
    members: tuple[QuadrantCount, ...]
    non_members: tuple[QuadrantCount, ...]
    #: per record: "both", "only_b", "only_a" or "neither"
    quadrant: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"label_a": self.label_a, "label_b": self.label_b, "fpr": self.fpr, "a": self.a.to_dict(),
                "b": self.b.to_dict(), "members": [q.to_dict() for q in self.members],
                "non_members": [q.to_dict() for q in self.non_members], "quadrant": list(self.quadrant)}

    def count(self, name: str, members: bool = True) -> int:
        return next(q.count for q in (self.members if members else self.non_members) if q.name == name)


def _quadrant_of(ea: np.ndarray, eb: np.ndarray) -> np.ndarray:
    out = np.full(len(ea), "neither", dtype=object)
    out[ea & eb] = "both"
    out[~ea & eb] = "only_b"
    out[ea & ~eb] = "only_a"
    return out


def _count_interval(values: np.ndarray, n: int) -> tuple[float, float, float]:
    """Mean count over repeats with its 95 % t interval (:func:`core.measurement.stats.mean_interval`), kept
    within [0, n]: a count cannot leave them, however wide the interval of three repeats is."""
    est = mean_interval(values, bounds=(0.0, float(n)))
    low = est.mean if est.ci_low is None else est.ci_low
    high = est.mean if est.ci_high is None else est.ci_high
    return est.mean, low, high


def quadrants(scores_a: Any, scores_b: Any, membership: Any, fpr: float = 0.01, label_a: str = "ffnn",
              label_b: str = "rnn", repeats: Sequence[tuple[Any, Any, Any]] = ()) -> Quadrants:
    """The four quadrants of exposure at ``fpr`` (see the module docstring).

    Args:
        scores_a, scores_b: per-record scores ("higher = member") of the same records under A and B.
        membership: per-record membership (the same records, so the same membership).
        repeats: further ``(scores_a, scores_b, membership)`` triples of independent repeats; the
            counts then also carry their mean and a 95 % t interval over all repeats (this one included).
    """
    m = np.asarray(membership, bool)
    sa, sb = _scores(scores_a), _scores(scores_b)
    if not len(sa) == len(sb) == len(m):
        raise ValueError(f"score tables of {len(sa)} and {len(sb)} records for {len(m)} memberships: "
                         "the two tables must cover the same records")
    ea, eb = exposure(sa, m, fpr), exposure(sb, m, fpr)
    quad = _quadrant_of(np.asarray(ea.exposed), np.asarray(eb.exposed))
    per_repeat = [quad]
    rep_members = [m]
    for ra, rb, rm in repeats:
        rm = np.asarray(rm, bool)
        xa, xb = exposure(ra, rm, fpr), exposure(rb, rm, fpr)
        per_repeat.append(_quadrant_of(np.asarray(xa.exposed), np.asarray(xb.exposed)))
        rep_members.append(rm)

    def counts(which: bool) -> tuple[QuadrantCount, ...]:
        sel = m if which else ~m
        n = int(sel.sum())
        out = []
        for name in QUADRANTS:
            c = int((quad[sel] == name).sum())
            lo, hi = clopper_pearson(c, n)
            extra: dict[str, Any] = {}
            if len(per_repeat) > 1:
                values = np.array([(q[mm if which else ~mm] == name).sum() for q, mm in zip(per_repeat, rep_members)],
                                  np.float64)
                mean, low, high = _count_interval(values, n)
                extra = dict(repeats=len(values), mean_count=mean, count_low=low, count_high=high)
            out.append(QuadrantCount(name=name, count=c, n=n, share=c / n if n else 0.0, share_low=float(lo),
                                     share_high=float(hi), **extra))
        return tuple(out)

    return Quadrants(label_a, label_b, float(fpr), ea, eb, counts(True), counts(False), tuple(str(q) for q in quad))


@dataclass(frozen=True)
class Flips:
    """Members whose exposure changes between an undefended and a defended score table."""

    fpr: float
    undefended: Exposure
    defended: Exposure
    #: positions (in the evaluated records) of members exposed before and not after, and the reverse
    stopped: tuple[int, ...]
    started: tuple[int, ...]
    kept: int
    n_members: int

    def to_dict(self) -> dict[str, Any]:
        return {"fpr": self.fpr, "undefended": self.undefended.to_dict(), "defended": self.defended.to_dict(),
                "stopped": list(self.stopped), "started": list(self.started), "n_stopped": len(self.stopped),
                "n_started": len(self.started), "kept": self.kept, "n_members": self.n_members}


def flips(undefended: Any, defended: Any, membership: Any, fpr: float = 0.01) -> Flips:
    """Members that stop / start being exposed at ``fpr`` when a defense is applied (each table
    thresholded on its own non-members, as an attacker calibrating on the defended outputs would)."""
    m = np.asarray(membership, bool)
    before, after = exposure(undefended, m, fpr), exposure(defended, m, fpr)
    eb, ea = np.asarray(before.exposed), np.asarray(after.exposed)
    stopped = np.nonzero(m & eb & ~ea)[0]
    started = np.nonzero(m & ~eb & ea)[0]
    return Flips(float(fpr), before, after, tuple(int(i) for i in stopped), tuple(int(i) for i in started),
                 int((m & eb & ea).sum()), int(m.sum()))
