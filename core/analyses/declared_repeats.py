"""Repeats declared before a preset's runs are made: N sized for a stated power at a stated effect.

A findings row that reads "inconclusive" at its target N may simply be underpowered; adding repeats until an
interval excludes 0 would be optional stopping. So for a preset that can decide a finding the number of paired
repeats is fixed in advance here, from the spread measured on earlier repeats and the effect the N is meant to
detect, with the rationale beside it. The findings table can read a row's declaration with :func:`declared_for`.

The N is the smallest with at least ``power`` probability that the paired two-sided t-test rejects at level
``alpha / family`` when the true paired difference is ``effect`` and the paired differences' standard deviation is
``sd`` (:func:`power_at`: the noncentral t distribution, noncentrality effect/sd·√N). ``family`` is the number of
secondary metrics the row's verdict is Holm-adjusted over: Holm's first step tests the smallest p-value at
alpha / family, so sizing for it covers the worst case (a metric judged alone: family 1). The verdict also needs the
exact sign-flip test; its power at these N is not computed here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scipy import stats as sps


def power_at(n: int, sd: float, effect: float, alpha: float = 0.05) -> float:
    """The probability that the two-sided paired t-test at level ``alpha`` rejects with ``n`` pairs when the true
    mean difference is ``effect`` and the differences' standard deviation ``sd`` (``n`` ≥ 2, ``sd`` > 0)."""
    if n < 2 or sd <= 0:
        raise ValueError("power_at needs n ≥ 2 and sd > 0")
    df = n - 1
    crit = float(sps.t.ppf(1 - alpha / 2, df))
    nc = abs(effect) / sd * math.sqrt(n)
    return float(sps.nct.sf(crit, df, nc) + sps.nct.cdf(-crit, df, nc))


def repeats_for_power(sd: float, effect: float, power: float = 0.8, alpha: float = 0.05, floor: int = 2,
                      cap: int = 10_000) -> int | None:
    """The fewest N ≥ ``floor`` with :func:`power_at` ≥ ``power``; None when even ``cap`` pairs fall short."""
    for n in range(max(2, floor), cap + 1):
        if power_at(n, sd, effect, alpha) >= power:
            return n
    return None


@dataclass(frozen=True)
class DeclaredRepeats:
    """A preset's declared number of paired repeats for one finding, and what it is sized for."""

    finding: str
    task: str
    preset: str
    metric: str
    repeats: int
    effect: float
    sd: float
    power: float
    alpha: float
    family: int
    rationale: str

    def achieved_power(self) -> float:
        return power_at(self.repeats, self.sd, self.effect, self.alpha / self.family)

    def to_dict(self) -> dict[str, Any]:
        return {"finding": self.finding, "task": self.task, "preset": self.preset, "metric": self.metric,
                "repeats": self.repeats, "effect": self.effect, "sd": self.sd, "power": self.power,
                "alpha": self.alpha, "family": self.family, "rationale": self.rationale}


DECLARED: tuple[DeclaredRepeats, ...] = (
    DeclaredRepeats(
        finding="F1", task="image", preset="cifar_cpu", metric="attack_accuracy", repeats=16, effect=0.034, sd=0.034,
        power=0.8, alpha=0.05, family=6,
        rationale=("The study prints no number for image (paper 000 Fig. 4 is a curve), so N is sized for the "
                   "difference measured at this preset over its first 6 repeats: shadow attack accuracy FFNN − RNN "
                   "−0.034 with the paired differences' sd 0.034 (docs/results.md, findings block). The row's "
                   "verdict on attack accuracy is Holm-adjusted over the 6 secondary metrics (LiRA AUC is the "
                   "primary), so the test is sized at 0.05 / 6: 80 % power needs N = 16 (judged alone, at 0.05: "
                   "N = 10). Fixed before the runs: the row is reported at N = 16 whatever it says.")),
)


def declared_for(finding: str, task: str, preset: str) -> DeclaredRepeats | None:
    """The declaration for a findings row, or None where none was made."""
    return next((d for d in DECLARED if (d.finding, d.task, d.preset) == (finding, task, preset)), None)
