"""The one answer to "does the RNN leak more than the FFNN?" over paired repeats: the studies' claim (paper 000
§4.3 / Fig. 4: the attack is more accurate against the RNN at matched utility) tested on the primary (Shokri
shadow) attack's accuracy, as the comparison's judgement holds it (:func:`core.analyses.repeats.judged_pairs`).

:func:`arch_answer` is the only place that turns that judgement into a finding's word; every page, report and
the findings table's F1 row read it (:func:`core.analyses.repeats.answer_of`, or the ``answer`` block of
:func:`core.analyses.repeats.comparison_json`). The words, in the order they are decided:

* **uninformative** — both arms at the ceiling: AUC (or accuracy) ≥ :data:`CEILING` on both;
* **not comparable** — the papers compare models of similar training *and* validation utility (000 §4.1), and
  a gap's interval (or, with one repeat, the gap) reaches beyond ± :data:`MATCHED_RELATIVE_GAP` of the larger
  utility on either;
* otherwise the judged verdict: **holds** / **reversed** / **inconclusive** (with its reason, which names
  :func:`core.measurement.stats.decidable_at` where N is below it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from core.measurement.stats import NOT_COMPARABLE, UNINFORMATIVE, Comparison, Estimate, Verdict, decidable_at

#: the metric of the answer: the studies' own (their attack's accuracy: 000 §4.3, 001 §1 and §5.1)
ANSWER_METRIC = "attack_accuracy"
#: the sign the claim predicts for FFNN − RNN
EXPECTED_SIGN = -1
#: train and validation utilities count as matched when the gap's interval lies within this share of the larger one
MATCHED_RELATIVE_GAP = 0.05
#: both arms' attack AUC (or accuracy) at or above this: the attack is at its ceiling, nothing could differ
CEILING = 0.99
#: the test, in words
TEST = ("paired over repeats (same seed, same split): the 95 % t interval of FFNN − RNN and the exact two-sided "
        "sign-flip test must agree, each Holm-adjusted over the comparison's secondary family")


@dataclass(frozen=True)
class UtilityMatch:
    """One utility's gap FFNN − RNN (``which``: train or validation) and whether it counts as matched."""

    which: str
    ffnn: float
    rnn: float
    gap: Estimate
    matched: bool

    def to_dict(self) -> dict[str, Any]:
        return {"which": self.which, "ffnn": self.ffnn, "rnn": self.rnn, "gap": self.gap.to_dict(),
                "matched": self.matched}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "UtilityMatch":
        return cls(str(d["which"]), float(d["ffnn"]), float(d["rnn"]), Estimate.from_dict(d["gap"]),
                   bool(d["matched"]))

    @property
    def unsettled(self) -> bool:
        """Not shown matched, but not shown unmatched either: the gap's interval reaches past the band and also
        into it, so more repeats (a narrower interval) can still settle it either way. A gap whose interval
        lies wholly outside the band, or one repeat's gap outside it, is unmatched as measured."""
        g = self.gap
        if self.matched or g.ci_low is None or g.ci_high is None:
            return False
        band = MATCHED_RELATIVE_GAP * max(abs(self.ffnn), abs(self.rnn), 1e-12)
        return g.ci_low <= band and g.ci_high >= -band

    def text(self) -> str:
        g = self.gap
        ci = f" [{g.ci_low:+.3g}, {g.ci_high:+.3g}]" if g.ci_low is not None and g.ci_high is not None else ""
        word = "matched" if self.matched else (
            "not shown matched (the interval reaches past the band and into it)" if self.unsettled else "NOT matched")
        return f"{self.which} FFNN {self.ffnn:.3g} vs RNN {self.rnn:.3g}, gap {g.mean:+.3g}{ci}: {word}"


def utility_match(c: Comparison, which: str) -> UtilityMatch:
    """The gap of one utility's comparison and whether its interval (the gap itself with one repeat) lies within
    ±:data:`MATCHED_RELATIVE_GAP` of the larger utility."""
    d = c.difference
    f, r = d.a.mean, d.b.mean
    scale = max(abs(f), abs(r), 1e-12)
    ends = [x for x in (d.diff.ci_low, d.diff.ci_high) if x is not None] or [d.diff.mean]
    return UtilityMatch(which, f, r, d.diff, max(abs(x) for x in ends) <= MATCHED_RELATIVE_GAP * scale)


def matching_unsettled(utilities: Sequence[UtilityMatch]) -> bool:
    """Whether an unmatched comparison may still be matched with more repeats: no gap is shown unmatched, and at
    least one is :attr:`UtilityMatch.unsettled`."""
    return not all(u.matched for u in utilities) and all(u.matched or u.unsettled for u in utilities)


@dataclass(frozen=True)
class ArchAnswer:
    """The answer over N paired repeats: the ``metric`` and its ``family`` (the Holm family it is judged in),
    ``decidable_at`` (the fewest N at which that test can decide), ``n``, the ``verdict`` word and its ``reason``,
    FFNN, RNN and FFNN − RNN, the Holm-adjusted sign-flip ``p_holm``, the utility gaps (``utilities``: train and
    validation, where measured) with ``matched`` (None: neither measured) and ``ceiling`` (why nothing could
    differ, or None)."""

    metric: str
    label: str
    expected_sign: int
    family: tuple[str, ...]
    test: str
    decidable_at: int
    n: int
    verdict: str
    reason: str
    ffnn: Estimate
    rnn: Estimate
    difference: Estimate
    p_holm: float | None
    utilities: tuple[UtilityMatch, ...]
    matched: bool | None
    ceiling: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "label": self.label, "expected_sign": self.expected_sign,
                "family": list(self.family), "test": self.test, "decidable_at": self.decidable_at, "n": self.n,
                "verdict": self.verdict, "reason": self.reason, "ffnn": self.ffnn.to_dict(),
                "rnn": self.rnn.to_dict(), "difference": self.difference.to_dict(), "p_holm": self.p_holm,
                "utilities": [u.to_dict() for u in self.utilities], "matched": self.matched, "ceiling": self.ceiling}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ArchAnswer":
        return cls(str(d["metric"]), str(d["label"]), int(d["expected_sign"]), tuple(d["family"]), str(d["test"]),
                   int(d["decidable_at"]), int(d["n"]), str(d["verdict"]), str(d["reason"]),
                   Estimate.from_dict(d["ffnn"]), Estimate.from_dict(d["rnn"]), Estimate.from_dict(d["difference"]),
                   d.get("p_holm"), tuple(UtilityMatch.from_dict(u) for u in d.get("utilities", ())),
                   d.get("matched"), d.get("ceiling"))

    def sentence(self) -> str:
        """The answer in one line: the word, the metric, FFNN − RNN with its interval and N, and why."""
        e = self.difference
        ci = (f" 95 % CI [{e.ci_low:+.3f}, {e.ci_high:+.3f}]" if e.ci_low is not None and e.ci_high is not None
              else " (no interval)")
        return (f"**{self.verdict}** — {self.label}: FFNN − RNN {e.mean:+.3f}{ci}, N = {self.n} paired repeat"
                f"{'s' * (self.n != 1)} ({self.reason})")

    def as_verdict(self) -> Verdict:
        """The answer as a :class:`Verdict` (its word and reason), for readers of paired comparisons."""
        e = self.difference
        return Verdict(value=self.verdict, expected=self.expected_sign, effect=e.mean, ci_low=e.ci_low,
                       ci_high=e.ci_high, n=self.n, reason=self.reason)


def _at_ceiling(comps: Mapping[str, Comparison]) -> str | None:
    """Why both arms sit at the attack's ceiling (AUC or accuracy ≥ :data:`CEILING` in both), or None."""
    for name, what in (("attack_auc", "attack AUC"), (ANSWER_METRIC, "attack accuracy")):
        c = comps.get(name)
        if c is None:
            continue
        a, b = c.difference.a.mean, c.difference.b.mean
        if math.isfinite(a) and math.isfinite(b) and min(a, b) >= CEILING:
            return (f"both arms at the ceiling: {what} FFNN {a:.3f}, RNN {b:.3f} (≥ {CEILING:g}), so no difference "
                    "between the architectures could show")
    return None


def arch_answer(comps: Mapping[str, Comparison], judged: Mapping[str, Mapping[str, Any]]) -> ArchAnswer | None:
    """The answer from one judgement (:func:`core.analyses.repeats.judged_pairs`' raw comparisons ``comps`` and
    judged metrics ``judged``); None where the runs have no attack accuracy."""
    j = judged.get(ANSWER_METRIC)
    if j is None:
        return None
    c = Comparison.from_dict(j)
    role = j.get("role")
    family = tuple(m for m, d in judged.items() if d.get("role") == "secondary") if role == "secondary" \
        else (ANSWER_METRIC,)
    floor = decidable_at(max(1, len(family)))
    n = c.difference.n
    utilities = tuple(utility_match(comps[name], which) for name, which in
                      (("utility_train", "train"), ("utility_val", "validation")) if name in comps)
    matched = None if not utilities else all(u.matched for u in utilities)
    ceiling = _at_ceiling(comps)
    p_holm = (j.get("p_holm") or {}).get("p_permutation") if role == "secondary" else c.difference.p_permutation
    if ceiling is not None:
        word, reason = UNINFORMATIVE, ceiling
    elif matched is False:
        word = NOT_COMPARABLE
        reason = ("the claim is about models of matched utility (paper 000 §4.1: train and validation); here "
                  + "; ".join(u.text() for u in utilities) + f" (±{MATCHED_RELATIVE_GAP:.0%} of the larger)")
        if matching_unsettled(utilities):
            reason += f"; at N = {n} the matching is not settled yet: more repeats narrow the gaps' intervals"
    else:
        v = c.verdict
        word, reason = ("inconclusive", "no verdict") if v is None else (v.value, v.reason)
        if n < floor:
            reason = (f"N = {n} cannot decide: in a Holm family of {len(family)} the sign-flip test decides from "
                      f"N = {floor}" + (f" ({reason})" if v is not None else ""))
        if matched is None:
            reason += "; utility matching not checked (no train or validation utility in the runs)"
        elif len(utilities) == 1:
            reason += f"; only the {utilities[0].which} utility was measured (matched there)"
    label = str(j.get("label") or "attack accuracy")
    return ArchAnswer(ANSWER_METRIC, label, EXPECTED_SIGN, family, TEST, floor, n, word, reason,
                      c.difference.a, c.difference.b, c.difference.diff, p_holm, utilities, matched, ceiling)
