"""The Home page's big numbers: the metric its answer reads (:func:`core.analyses.answer.cached_answer`'s ``metric``:
the studies' own, the shadow attack's accuracy, as :mod:`core.analyses.arch_answer` judges it), for both architectures, each with its 95 %
interval — over the cached repeats where there are two or more, else a stratified bootstrap over the run's
evaluation records — so the numbers above the answer are the numbers the answer is about. numpy only."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from core.analyses.answer import Answer
from core.experiment.results import RunSummary
from core.foundations.names import ARCH_NAMES
from core.measurement.bootstrap import bootstrap_metric
from core.measurement.metrics import clopper_pearson
from core.measurement.stats import Estimate

#: the comparison's AUC metrics and the attack whose per-record scores they are (None: the run's primary attack)
METRIC_ATTACK = {"lira_auc": "lira", "rmia_auc": "rmia", "attack_auc": None}


@dataclass(frozen=True)
class HeadlineCard:
    """One architecture's big number: its ``label`` (what it is), ``value`` and ``interval`` (words: the 95 %
    interval and what it is over)."""

    arch: str
    label: str
    value: str
    interval: str


def _accuracy_interval(summary: RunSummary) -> Estimate | None:
    """The primary attack's accuracy at its threshold on the balanced evaluation records, with its exact
    (Clopper–Pearson) 95 % interval over those records (None: the run does not say how many there were)."""
    res = summary.resolution
    if res is None or summary.attack is None or not math.isfinite(summary.attack.accuracy):
        return None
    n = int(res.n_members + res.n_nonmembers)
    if n <= 0:
        return None
    acc = float(summary.attack.accuracy)
    lo, hi = clopper_pearson(int(round(acc * n)), n)
    return Estimate(acc, float(lo), float(hi), n, method="clopper-pearson")


def _record_interval(summary: RunSummary, metric: str) -> Estimate | None:
    """A one-run metric's 95 % interval over the run's evaluation records: an AUC's BCa bootstrap, the attack
    accuracy's Clopper–Pearson interval (None: the run stores no per-record scores)."""
    if metric == "attack_accuracy":
        return _accuracy_interval(summary)
    if metric not in METRIC_ATTACK:
        return None
    attack = METRIC_ATTACK[metric] or summary.primary
    scores = summary.per_record.scores_of(attack) if summary.records else None
    membership = summary.per_record.membership if summary.records else None
    if scores is None or not membership or any(s is None for s in scores):
        return None
    s, y = np.asarray(scores, np.float64), np.asarray(membership, bool)
    if not np.isfinite(s).all() or y.all() or not y.any():
        return None
    return bootstrap_metric(s, y, "auc", n_boot=1000)


def headline_cards(answer: Answer, summaries: dict[str, RunSummary]) -> list[HeadlineCard]:
    """Per architecture of ``summaries`` (repeat 1 of each) the answer's metric with its interval."""
    comp = answer.comparison
    metric = answer.metric
    m = comp.metrics.get(metric) if comp is not None else None
    label = (m.label if m is not None and m.label else metric)
    out = []
    for arch, summary in summaries.items():
        e = Estimate.from_dict(cast("dict[str, Any]", m.estimate(arch))) if m is not None and m.estimate(arch) else None
        if answer.repeats >= 2 and e is not None and e.ci_low is not None and math.isfinite(e.mean):
            out.append(HeadlineCard(arch, f"{ARCH_NAMES[arch]} · {label}, mean of {answer.repeats} repeats",
                                    f"{e.mean:.3f}",
                                    f"95 % CI [{e.ci_low:.3f}, {e.ci_high:.3f}] over N = {answer.repeats} repeats"))
            continue
        one = _record_interval(summary, metric)
        if one is not None:
            out.append(HeadlineCard(arch, f"{ARCH_NAMES[arch]} · {label}, one repeat", f"{one.mean:.3f}",
                                    f"95 % CI [{one.ci_low:.3f}, {one.ci_high:.3f}] over its {one.n} records "
                                    f"({'exact binomial' if metric == 'attack_accuracy' else 'bootstrap'}; a second "
                                    "seed may move it more)"))
        elif e is not None and math.isfinite(e.mean):
            out.append(HeadlineCard(arch, f"{ARCH_NAMES[arch]} · {label}, one repeat", f"{e.mean:.3f}",
                                    "no interval: the run stores no per-record scores"))
    return out
