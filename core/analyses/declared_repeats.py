"""Repeats declared before a preset's runs are made: N sized for a stated power at a stated effect.

Adding repeats until an interval excludes 0 would be optional stopping, so for a preset that can decide a finding
the number of paired repeats is fixed in advance, from the spread measured on earlier repeats and the effect the N
is meant to detect (:func:`core.measurement.stats.repeats_for_power`: the paired t-test's power by the noncentral t,
at level ``alpha / family``, Holm's first step over the row's secondary metrics), with the rationale beside it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
