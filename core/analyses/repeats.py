"""Repeats of an experiment and the FFNN-vs-RNN comparison with intervals (above the pipeline).

Repeat r of a config is the config with seed :func:`repeat_seed` (``cfg.seed``, r): repeat 0 *is* the config,
repeat r > 0 a seed derived by numpy's ``SeedSequence([seed, r])`` (a hash: no two repeats of nearby seeds
collide by arithmetic). The seed moves the split, the shadows' draws, initialisation and batch order. Each repeat
is an ordinary cached run, so raising N trains only the new repeats.

Repeat r of the FFNN and of the RNN share the seed, hence the split: their difference is **paired**
(:func:`core.measurement.stats.paired_difference`). Headline metrics (:data:`HEADLINE`) are reported as a mean
with a 95 % Student-t interval across repeats; within one run the primary attack's AUC and TPR at low FPR also
get a stratified bootstrap over the evaluation records (:func:`within_run`).
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from core.analyses.arch_answer import ArchAnswer, arch_answer
from core.defenses.defender import defense_run
from core.defenses.defense_results import DefenseRun
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import cached_run, run_experiment, trained_models
from core.experiment.results import DefendedPoint, RunSummary
from core.foundations.config import MAX_REPEATS, ExperimentConfig
from core.foundations.errors import ConfigError, ResultFormatError
from core.foundations.progress import ProgressCallback, ProgressEvent
from core.measurement.bootstrap import bootstrap_metric, low_fpr_note, roc_band_repeats
from core.measurement.metrics import Resolution, empirical_epsilon, resolution
from core.measurement.stats import (
    Comparison,
    Estimate,
    PairedDifference,
    compare,
    corrected_verdict,
    holm,
    interval_from_moments,
    mean_interval,
)
from core.tasks import get_task

if TYPE_CHECKING:
    from core.experiment.executor import Executor


def repeat_seed(seed: int, r: int) -> int:
    """The seed of repeat ``r`` of a config seeded ``seed``: ``seed`` itself for r = 0, else the
    first 32-bit word of ``SeedSequence([seed, r])`` (in the config's seed range [0, 2**32))."""
    if r < 0:
        raise ValueError("repeat index must be ≥ 0")
    if r == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(r)]).generate_state(1, np.uint32)[0])


def repeat_config(cfg: ExperimentConfig, r: int) -> ExperimentConfig:
    """Repeat ``r`` of ``cfg``: the same config with :func:`repeat_seed`, ``repeats = 1`` and
    ``match_utility`` off (each repeat is one ordinary run; neither field is hashed)."""
    return dataclasses.replace(cfg, seed=repeat_seed(cfg.seed, r), repeats=1, match_utility="off")


def repeat_configs(cfg: ExperimentConfig) -> list[ExperimentConfig]:
    """The ``cfg.repeats`` configs of ``cfg`` (repeat 0 first)."""
    cfg.validate()
    return [repeat_config(cfg, r) for r in range(cfg.repeats)]


# ---------------------------------------------------------------------------- headline metrics
def _attack(name: str | None, key: str, fpr: str | None = None) -> Callable[[RunSummary], float | None]:
    def get(run: RunSummary) -> float | None:
        result = run.attack if name is None else run.attacks.get(name)
        if result is None:
            return None
        value = getattr(result, key) if fpr is None else result.tpr_at_fpr.get(fpr)
        return None if value is None else float(value)
    return get


def _utility(key: str) -> Callable[[RunSummary], float | None]:
    def get(run: RunSummary) -> float | None:
        value = getattr(run.utility, key)
        return None if value is None else float(value)
    return get


def _epsilon_lower_bound(run: RunSummary) -> float | None:
    """The empirical ε lower bound (Jagielski et al.; :func:`core.measurement.metrics.empirical_epsilon`) of the
    primary attack's scores on the evaluation records."""
    records = run.per_record
    scores = records.scores_of(run.primary)
    if scores is None or not records.membership:
        return None
    return float(empirical_epsilon(np.asarray(scores, np.float64), np.asarray(records.membership, bool)).lower_bound)


#: headline metric → (read from a summary, the sign the studies predict for FFNN − RNN:
#: −1 "the RNN leaks more" for leakage metrics, 0 no hypothesis (utility))
HEADLINE: dict[str, tuple[Callable[[RunSummary], float | None], int]] = {
    "attack_accuracy": (_attack(None, "accuracy"), -1),
    "attack_auc": (_attack(None, "auc"), -1),
    "attack_advantage": (_attack(None, "advantage"), -1),
    "tpr_at_1pct_fpr": (_attack(None, "tpr_at_fpr", "0.01"), -1),
    "tpr_at_0.1pct_fpr": (_attack(None, "tpr_at_fpr", "0.001"), -1),
    "lira_auc": (_attack("lira", "auc"), -1),
    "rmia_auc": (_attack("rmia", "auc"), -1),
    "epsilon_lower_bound": (_epsilon_lower_bound, -1),
    "utility_val": (_utility("val"), 0),
    "utility_train": (_utility("train"), 0),
}


#: the range each headline metric can take: intervals across repeats are clipped to it
#: (advantage = max(TPR − FPR) can be negative for a worse-than-chance attack; utilities — accuracy,
#: BLEU, return — are not below 0; ε̂'s lower bound is ≥ 0)
HEADLINE_BOUNDS: dict[str, tuple[float | None, float | None]] = {
    "attack_accuracy": (0.0, 1.0), "attack_auc": (0.0, 1.0), "attack_advantage": (-1.0, 1.0),
    "tpr_at_1pct_fpr": (0.0, 1.0), "tpr_at_0.1pct_fpr": (0.0, 1.0), "lira_auc": (0.0, 1.0), "rmia_auc": (0.0, 1.0),
    "epsilon_lower_bound": (0.0, None), "utility_val": (0.0, None), "utility_train": (0.0, None),
}


#: the range of a utility by its metric (accuracy a share, corpus BLEU 0–100; a return has no upper end)
UTILITY_RANGE: dict[str, tuple[float | None, float | None]] = {"accuracy": (0.0, 1.0), "bleu": (0.0, 100.0)}


def headline_bounds(name: str, summaries: Sequence[RunSummary]) -> tuple[float | None, float | None] | None:
    """:data:`HEADLINE_BOUNDS` of ``name``; a utility's upper end from its metric where every run has the same one
    (so an accuracy's interval never reaches past 1)."""
    if name.startswith("utility_"):
        metrics = {s.utility.metric for s in summaries}
        if len(metrics) == 1 and (metric := metrics.pop()) in UTILITY_RANGE:
            return UTILITY_RANGE[metric]
    return HEADLINE_BOUNDS.get(name)


#: headline metrics whose per-repeat value is a one-sided 95 % bound on that repeat's own model (ε̂): a mean, a t
#: interval or a paired test over bounds is no statement at any level, so they are reported per repeat
#: (:func:`bounds_only`), with no interval and no verdict
BOUND_METRICS = ("epsilon_lower_bound",)
BOUNDS_NOTE = ("each repeat's value is a 95 % lower bound on its own model's ε; shown: the smallest of them, with no "
               "interval (a mean or a t interval of lower bounds is no bound at any level): read them per repeat")


def bounds_only(values: Sequence[float], what: str = "per-repeat lower bounds") -> Estimate:
    """Per-repeat lower bounds as an :class:`Estimate` without an interval: ``mean`` holds the smallest of them
    (labelled by ``method``), ``values`` each repeat's."""
    v = [float(x) for x in values]
    return Estimate(min(v), None, None, len(v), tuple(v), method=f"{what} (the smallest shown)", note=BOUNDS_NOTE)


def headline_values(summaries: Sequence[RunSummary]) -> dict[str, list[float | None]]:
    """Per headline metric, its value in each summary (None where the run has no such number)."""
    return {name: [get(s) for s in summaries] for name, (get, _) in HEADLINE.items()}


def aggregate(summaries: Sequence[RunSummary]) -> dict[str, Estimate]:
    """Mean and 95 % t interval across repeats of every headline metric present in all of them."""
    out = {}
    for name, values in headline_values(summaries).items():
        known = [v for v in values if v is not None]
        if values and len(known) == len(values):
            out[name] = (bounds_only(known) if name in BOUND_METRICS else
                         mean_interval([float(v) for v in known], bounds=headline_bounds(name, summaries)))
    return out


def within_run(summary: RunSummary, n_boot: int = 1000, seed: int = 0) -> dict[str, Estimate]:
    """The primary attack's AUC and TPR at 1 % / 0.1 % FPR in one run with a stratified BCa
    bootstrap over its evaluation records (:func:`core.measurement.bootstrap.bootstrap_metric`)."""
    records = summary.per_record
    scores = records.scores_of(summary.primary)
    if scores is None or not records.membership:
        return {}
    s, y = np.asarray(scores, np.float64), np.asarray(records.membership, bool)
    return {"attack_auc": bootstrap_metric(s, y, "auc", n_boot=n_boot, seed=seed),
            "tpr_at_1pct_fpr": bootstrap_metric(s, y, "tpr@0.01", n_boot=n_boot, seed=seed),
            "tpr_at_0.1pct_fpr": bootstrap_metric(s, y, "tpr@0.001", n_boot=n_boot, seed=seed)}


def roc_band(summaries: Sequence[RunSummary]) -> dict[str, Any]:
    """The primary attack's mean ROC curve over the repeats with a pointwise t band."""
    curves = []
    for s in summaries:
        a = s.attacks[s.primary]
        curves.append((list(a.roc_fpr or ()), list(a.roc_tpr or ())))
    return roc_band_repeats(curves).to_dict()


# ---------------------------------------------------------------------------- running repeats
class _RepeatProgress:
    """Progress of N runs in sequence as one bar: run i's fraction f maps to (i + f)/N; the ETA
    adds the mean measured duration of the finished runs that computed something (a cached run
    takes no time) for every run still to come, or the running run's own projection before that."""

    def __init__(self, n: int, callback: ProgressCallback | None, label: Callable[[int], str]):
        self.n, self.callback, self.label = n, callback, label
        self.start = time.perf_counter()
        self.durations: list[float] = []
        self.run_start = self.start

    def for_run(self, i: int) -> ProgressCallback | None:
        callback = self.callback
        if callback is None:
            return None
        self.run_start = time.perf_counter()

        def report(ev: ProgressEvent) -> None:
            per_run = (float(np.mean(self.durations)) if self.durations else
                       ((ev.elapsed_s + ev.eta_s) if ev.eta_s is not None else None))
            eta = None if ev.eta_s is None or per_run is None else ev.eta_s + per_run * (self.n - i - 1)
            callback(ProgressEvent(f"{self.label(i)}: {ev.stage}", ev.stage_fraction,
                                        min((i + ev.overall_fraction) / self.n, 1.0),
                                        time.perf_counter() - self.start, eta))
        return report

    def done(self, summary: RunSummary) -> None:
        if not summary.cache_hit:
            self.durations.append(time.perf_counter() - self.run_start)


def run_repeats(cfg: ExperimentConfig, progress: ProgressCallback | None = None, cache: ArtifactCache | None = None,
                executor: "Executor | None" = None) -> list[RunSummary]:
    """The summaries of the ``cfg.repeats`` repeats of ``cfg`` (each run or loaded from the cache), typed
    as they are produced."""
    configs = repeat_configs(cfg)
    cache = cache or ArtifactCache()
    bar = _RepeatProgress(len(configs), progress, lambda i: f"repeat {i + 1}/{len(configs)}")
    out = []
    for i, c in enumerate(configs):
        summary = run_experiment(c, bar.for_run(i), cache, executor).run
        bar.done(summary)
        out.append(summary)
    return out


def repeats_block(summaries: Sequence[RunSummary], n_boot: int = 1000) -> dict[str, Any]:
    """The ``repeats`` block of a run's JSON: per headline metric mean / ci_low / ci_high / n /
    values across repeats, the config hash of each repeat, the primary attack's ROC band over the
    repeats, and repeat 0's bootstrap intervals over records (``within_run``)."""
    return {
        "n": len(summaries),
        "seeds": [s.seed for s in summaries],
        "config_hashes": [s.config_hash for s in summaries],
        "metrics": {k: e.to_dict() for k, e in aggregate(summaries).items()},
        "roc_band": roc_band(summaries),
        "resolution": summary_resolution(summaries[0]).to_dict(),  # the band's 1/n floor: every repeat's set's size
        "within_run": {k: e.to_dict() for k, e in within_run(summaries[0], n_boot).items()},
    }


# ---------------------------------------------------------------------------- FFNN vs RNN
def compare_summaries(ffnn: Sequence[RunSummary], rnn: Sequence[RunSummary]) -> dict[str, Comparison]:
    """Per headline metric the paired comparison FFNN − RNN by repeat, with the verdict on "the
    RNN leaks more" for leakage metrics (utility: the difference only)."""
    if len(ffnn) != len(rnn):
        raise ValueError(f"paired repeats need as many FFNN as RNN runs ({len(ffnn)} vs {len(rnn)})")
    for f_run, r_run in zip(ffnn, rnn):
        if f_run.seed != r_run.seed:
            raise ValueError("repeat r of both architectures must share its seed (same split)")
    fa, rb = headline_values(ffnn), headline_values(rnn)
    out = {}
    for name, (_, expected) in HEADLINE.items():
        a = [v for v in fa[name] if v is not None]
        b = [v for v in rb[name] if v is not None]
        if a and len(a) == len(fa[name]) and len(b) == len(rb[name]):
            if name in BOUND_METRICS:  # bounds side by side, repeat by repeat: no interval, no test, no verdict
                d = [float(x) - float(y) for x, y in zip(a, b)]
                diff = Estimate(float(np.mean(d)), None, None, len(d), tuple(d),
                                method="differences of per-repeat lower bounds (no interval)", note=BOUNDS_NOTE)
                out[name] = Comparison(name, PairedDifference(bounds_only(a), bounds_only(b), diff, None, None,
                                                              True, None), None)
                continue
            out[name] = compare(name, [float(v) for v in a], [float(v) for v in b], expected,
                                bounds=headline_bounds(name, [*ffnn, *rnn]))
    return out


def comparison_configs(task: str, preset: str, repeats: int, sets: dict[str, Any] | None = None
                       ) -> dict[str, ExperimentConfig]:
    """The FFNN and RNN configs of a comparison (``sets`` applied to both; ``repeats`` set)."""
    t = get_task(task)
    out = {}
    for arch in ("ffnn", "rnn"):
        cfg = t.make_config(arch, preset, dict(sets or {}))
        out[arch] = dataclasses.replace(cfg, repeats=repeats).validate()
    if out["ffnn"].seed != out["rnn"].seed:
        raise ConfigError("the FFNN and RNN configs must share the seed so that repeats are paired")
    return out


def summary_resolution(summary: RunSummary) -> Resolution:
    """A run's evaluation-set resolution (:func:`core.measurement.metrics.resolution`): its ``resolution`` block, or
    from its config's ``n_eval`` for a summary without the block (the balanced set holds n_eval of each)."""
    if summary.resolution is not None:
        return summary.resolution
    n_eval = summary.settings.n_eval
    if n_eval is None:
        raise ResultFormatError("summary has neither a 'resolution' block nor its config's 'n_eval'")
    n = int(n_eval)
    return resolution(n, n)


#: the version of :func:`comparison_json`'s layout. 1: every headline metric with its own uncorrected
#: verdict. 2: the same keys, plus ``primary`` (the one metric carrying the headline
#: verdict), ``secondary`` (the family, Holm-corrected), ``no_verdict`` (exact duplicates and rates finer than
#: the data) and, per metric, ``role``, ``label``, ``p_holm`` (secondary) and ``no_verdict_reason``; a metric
#: without a verdict has ``verdict`` null, as a utility always had.
COMPARISON_SCHEMA = 2

#: "does the RNN leak more" is answered by ONE metric, declared before any number is read: the AUC
#: of the strongest attack class that ran in every repeat of both architectures — LiRA (Carlini et al.,
#: S&P 2022), else RMIA (Zarifzadeh et al., ICML 2024), else the task's primary attack (Shokri's shadow
#: attack). The AUC because it uses every evaluation record and no threshold (accuracy needs one; a TPR
#: at a low FPR rests on the few highest non-members). Which attacks ran is fixed by the config, so the
#: choice never looks at the values; picking whichever metric differs most would make the verdict a
#: maximum over eight tests.
PRIMARY_ORDER = ("lira_auc", "rmia_auc", "attack_auc")
PRIMARY_WHY = {
    "lira_auc": "the strongest attack class that ran (LiRA, else RMIA, else the shadow attack: declared before any "
                "number is read); an AUC uses every evaluation record and no threshold",
    "rmia_auc": "the strongest attack class that ran (LiRA did not; RMIA, else the shadow attack: declared before "
                "any number is read); an AUC uses every evaluation record and no threshold",
    "attack_auc": "neither LiRA nor RMIA ran in every repeat, so the primary attack's AUC (declared before any "
                  "number is read); an AUC uses every evaluation record and no threshold",
}
#: the low FPR each TPR headline metric asks for
TPR_FPR = {"tpr_at_1pct_fpr": 0.01, "tpr_at_0.1pct_fpr": 0.001}
#: a reference attack's AUC metric, for the case where the task's primary attack *is* that attack
_AUC_OF_ATTACK = {"lira": "lira_auc", "rmia": "rmia_auc"}


@dataclasses.dataclass(frozen=True)
class EvaluationFacts:
    """What the comparison's evaluation sets fix before any score is read: the fewest members and
    non-members of the primary attack's evaluation set over every run, whether every set is
    balanced (n members = n non-members) and the task's primary attack in every run (None if they differ)."""

    n_members: int
    n_nonmembers: int
    balanced: bool
    primary_attack: str | None


def evaluation_facts(summaries: Sequence[RunSummary]) -> EvaluationFacts:
    """:class:`EvaluationFacts` of ``summaries`` (every run of both architectures); a run without
    counts is read from its config's ``n_eval`` (the balanced set holds n_eval + n_eval)."""
    sizes = []
    for s in summaries:
        res = summary_resolution(s)
        n_in = s.attack.n_members if s.attack.n_members is not None else res.n_members
        n_out = s.attack.n_nonmembers if s.attack.n_nonmembers is not None else res.n_nonmembers
        sizes.append((int(n_in), int(n_out)))
    names = {s.primary for s in summaries}
    return EvaluationFacts(min(a for a, _ in sizes), min(b for _, b in sizes), all(a == b for a, b in sizes),
                           names.pop() if len(names) == 1 else None)


def unresolved_label(n_nonmembers: int) -> str:
    """The name of a TPR at an FPR below one non-member's step: it is the TPR at no false positive."""
    return f"TPR at 0 false positives (FPR < 1/{n_nonmembers})"


@dataclasses.dataclass(frozen=True)
class MetricRole:
    """A metric's ``role`` (:func:`metric_roles`), ``label`` (None: :data:`METRIC_LABELS`') and why no verdict."""

    role: str
    label: str | None = None
    no_verdict_reason: str | None = None


def metric_roles(comps: Mapping[str, Comparison | None], facts: EvaluationFacts) -> dict[str, MetricRole]:
    """Per compared metric its :class:`MetricRole`: ``role`` and display ``label`` (and ``no_verdict_reason``
    where it gets none):

    * ``primary``: the first of :data:`PRIMARY_ORDER` compared (declared, not chosen by value);
    * ``duplicate``: the same number (or an exact function of it) as another metric in the list —
      advantage = 2·accuracy − 1 on a balanced set (accuracy = (TPR + 1 − FPR)/2 at the same threshold),
      and the primary attack's AUC when that attack is LiRA or RMIA;
    * ``unresolved``: a TPR at an FPR f with fewer than 1/f non-members (⌊f·n⌋ = 0 false positives
      allowed): it is the TPR at zero false positives, labelled so, with no verdict (and TPR @ 1 % and
      @ 0.1 % are then the same number);
    * ``bound``: a per-repeat lower bound (ε̂, :data:`BOUND_METRICS`): no interval, no test, no verdict;
    * ``secondary``: every other leakage metric (Holm-corrected in :func:`judged_comparisons`);
    * ``utility``: no hypothesis (``expected`` = 0), the difference only.
    """
    primary = next((m for m in PRIMARY_ORDER if m in comps), None)
    n0 = facts.n_nonmembers
    out: dict[str, MetricRole] = {}
    for name, c in comps.items():
        role, label, why = "secondary", None, None
        if HEADLINE[name][1] == 0:
            role = "utility"
        elif name in BOUND_METRICS:
            role, why = "bound", BOUNDS_NOTE
        elif name == primary:
            role = "primary"
        elif name == "attack_advantage" and facts.balanced and "attack_accuracy" in comps:
            role = "duplicate"
            why = (f"advantage = 2·accuracy − 1 on a balanced evaluation set ({facts.n_members} + {n0}): "
                   "the same finding as attack accuracy")
        elif name == "attack_auc" and (auc_of_attack := _AUC_OF_ATTACK.get(facts.primary_attack or "")) in comps:
            role = "duplicate"
            why = f"the primary attack is {facts.primary_attack}: the same number as {auc_of_attack}"
        elif name in TPR_FPR and math.floor(TPR_FPR[name] * n0 + 1e-12) == 0:
            role, label = "unresolved", unresolved_label(n0)
            why = low_fpr_note(n0, TPR_FPR[name]) + "; a rate finer than the data gets no verdict"
        out[name] = MetricRole(role, label, why)
    return out


def judged_comparisons(comps: dict[str, Comparison], facts: EvaluationFacts) -> dict[str, dict[str, Any]]:
    """The comparison JSON of every metric with its role (:func:`metric_roles`): the primary metric's
    verdict as :func:`core.measurement.stats.compare` gives it; the secondary metrics' p-values
    Holm-adjusted over the secondary family (:func:`core.measurement.stats.holm`, ``p_holm``) and their
    verdict held to them (:func:`core.measurement.stats.corrected_verdict`); duplicates and unresolved
    rates keep their values and difference but no verdict; per-repeat bounds (``bound``) their values per repeat,
    with no interval and no verdict."""
    roles = metric_roles(comps, facts)
    secondary = [m for m, r in roles.items() if r.role == "secondary"]
    adj_t = holm([comps[m].difference.p_t for m in secondary])
    adj_perm = holm([comps[m].difference.p_permutation for m in secondary])
    out = {}
    for name, c in comps.items():
        r = roles[name]
        # the comparison's JSON with the role written after it (update: a key it has keeps its place)
        d = {**c.to_dict(), "role": r.role, "label": r.label or METRIC_LABELS.get(name, name)}
        if r.role in ("duplicate", "unresolved", "bound"):
            d.update(verdict=None, no_verdict_reason=r.no_verdict_reason)
        elif r.role == "secondary" and c.verdict is not None:
            i = secondary.index(name)
            d.update(p_holm={"p_t": adj_t[i], "p_permutation": adj_perm[i], "family": len(secondary)},
                     verdict=corrected_verdict(c.verdict, adj_t[i], adj_perm[i], len(secondary)).to_dict())
        out[name] = d
    return out


#: the headline metrics as the pages name them (a comparison's ``label`` overrides a TPR that the
#: data cannot resolve: :func:`unresolved_label`)
METRIC_LABELS = {"attack_accuracy": "attack accuracy", "attack_auc": "attack AUC",
                 "attack_advantage": "advantage (TPR−FPR)", "tpr_at_1pct_fpr": "TPR @ 1% FPR",
                 "tpr_at_0.1pct_fpr": "TPR @ 0.1% FPR", "lira_auc": "LiRA AUC", "rmia_auc": "RMIA AUC",
                 "epsilon_lower_bound": "ε̂ lower bound",
                 "utility_val": "utility (validation)", "utility_train": "utility (train)"}


def judged_pairs(ffnn: Sequence[RunSummary], rnn: Sequence[RunSummary]
                 ) -> tuple[dict[str, Comparison], dict[str, dict[str, Any]]]:
    """The one FFNN-vs-RNN judgement every reader shares: the raw paired comparisons (:func:`compare_summaries`) and
    the judged metrics (:func:`judged_comparisons`). ``compare``, the Home page's answer and the findings table all
    take a metric's verdict from here, so the same cached repeats give each the same verdict."""
    comps = compare_summaries(ffnn, rnn)
    return comps, judged_comparisons(comps, evaluation_facts(list(ffnn) + list(rnn)))


def comparison_json(ffnn: Sequence[RunSummary], rnn: Sequence[RunSummary]) -> dict[str, Any]:
    """The comparison as JSON: per metric ``ffnn`` and ``rnn`` (mean, ci_low, ci_high, n, values),
    ``difference`` (FFNN − RNN: the same plus p_t, p_permutation, effect_size), ``verdict``, ``role``
    and ``label`` (:func:`judged_comparisons`); ``primary`` (the metric that carries the headline verdict
    and why), ``secondary`` (the Holm family), ``no_verdict`` (metric → why it has none);
    ``resolution`` per architecture (repeat 0's evaluation set: every repeat has one of that size), so
    that a difference of one record's step is read as one record. Layout :data:`COMPARISON_SCHEMA`."""
    first = ffnn[0]
    comps, metrics = judged_pairs(ffnn, rnn)
    answer = arch_answer(comps, metrics)
    primary = next((m for m, d in metrics.items() if d["role"] == "primary"), None)
    secondary = [m for m, d in metrics.items() if d["role"] == "secondary"]
    return {
        "comparison_schema": COMPARISON_SCHEMA,
        "task": first.task, "preset": first.preset, "repeats": len(ffnn),
        "resolution": {"ffnn": summary_resolution(first).to_dict(), "rnn": summary_resolution(rnn[0]).to_dict()},
        "hypothesis": "the RNN leaks more than the FFNN (FFNN − RNN < 0 for every leakage metric)",
        # the primary metric's label is always its usual name (metric_roles relabels unresolved rates only)
        "primary": None if primary is None else {"metric": primary, "label": METRIC_LABELS.get(primary, primary),
                                                 "why": PRIMARY_WHY[primary]},
        "secondary": {"metrics": secondary, "correction": "Holm (1979) over the secondary metrics' p-values"},
        "no_verdict": {m: d["no_verdict_reason"] for m, d in metrics.items() if d.get("no_verdict_reason")},
        "seeds": [s.seed for s in ffnn],
        "config_hashes": {"ffnn": [s.config_hash for s in ffnn], "rnn": [s.config_hash for s in rnn]},
        "utility_metric": first.utility.metric,
        "metrics": metrics,
        "roc_band": {"ffnn": roc_band(ffnn), "rnn": roc_band(rnn)},
        # the one answer to "does the RNN leak more" (core.analyses.arch_answer): every page reads this block
        "answer": None if answer is None else answer.to_dict(),
    }


def answer_of(ffnn: Sequence[RunSummary], rnn: Sequence[RunSummary]) -> ArchAnswer | None:
    """The one FFNN-vs-RNN answer over these paired repeats (:func:`core.analyses.arch_answer.arch_answer` of
    :func:`judged_pairs`), which every page and the findings table's F1 row say."""
    comps, judged = judged_pairs(ffnn, rnn)
    return arch_answer(comps, judged)


def run_comparison(configs: dict[str, ExperimentConfig], progress: ProgressCallback | None = None,
                   cache: ArtifactCache | None = None, executor: "Executor | None" = None) -> dict[str, Any]:
    """Run (or load) every repeat of the FFNN and the RNN config, repeat by repeat (so that a
    stopped comparison keeps whole pairs), and return :func:`comparison_json`."""
    cache = cache or ArtifactCache()
    n = configs["ffnn"].repeats
    if configs["rnn"].repeats != n:
        raise ConfigError("both architectures need the same number of repeats")
    per = {a: repeat_configs(c) for a, c in configs.items()}
    bar = _RepeatProgress(2 * n, progress, lambda i: f"repeat {i // 2 + 1}/{n} {('FFNN', 'RNN')[i % 2]}")
    runs: dict[str, list[RunSummary]] = {"ffnn": [], "rnn": []}
    for r in range(n):
        for j, arch in enumerate(("ffnn", "rnn")):
            summary = run_experiment(per[arch][r], bar.for_run(2 * r + j), cache, executor).run
            bar.done(summary)
            runs[arch].append(summary)
    return comparison_json(runs["ffnn"], runs["rnn"])


# ---------------------------------------------------------------------------- defenses over repeats × draws
#: the metrics of a defense point that get an interval (curve bands, ``defend --repeats``) and their ranges
#: (intervals are clipped to them); utility loss 1 − u/u₀ is at most 1 (u ≥ 0)
BANDED_BOUNDS: dict[str, tuple[float | None, float | None]] = {
    "attack_accuracy": (0.0, 1.0), "attack_auc": (0.0, 1.0), "lira_auc": (0.0, 1.0), "rmia_auc": (0.0, 1.0),
    "utility": (0.0, None), "utility_loss": (None, 1.0)}


def _point_metrics(point: DefendedPoint) -> dict[str, tuple[float | None, float | None]]:
    """(mean, sd) over draws of a point's banded metrics (:data:`BANDED_BOUNDS`; sd None where it has none)."""
    a, refs = point.attack, {n: point.attacks.get(n) for n in ("lira", "rmia")}
    return {"attack_accuracy": (a.accuracy, a.accuracy_std), "attack_auc": (a.auc, a.auc_std),
            **{f"{n}_auc": (None, None) if r is None else (r.auc, r.auc_std) for n, r in refs.items()},
            "utility": (point.utility, point.utility_std), "utility_loss": (point.utility_loss, None)}


def defense_intervals(per_repeat: Sequence[DefendedPoint], draws: int,
                      baseline_utility: float | None = None) -> dict[str, dict[str, Any]]:
    """Intervals of one defense value's metrics (:data:`BANDED_BOUNDS`) over repeats × draws, as a point's
    ``intervals`` JSON.

    With N ≥ 2 repeats: the t interval over the repeats of each repeat's mean over its draws (the draws of one repeat
    share its models, so they are not independent replicates). With one repeat: the t interval over the draws (draw
    noise only); the utility loss L = 1 − u/u₀ is linear in u for the repeat's fixed u₀ (``baseline_utility``), so its
    interval is the utility's mapped through L (Def. 4 of paper 000); with one draw there is none (``ci_low`` None).
    Metrics missing in any repeat are left out.
    """
    out: dict[str, Estimate] = {}
    u: Estimate | None = None  # the utility's interval over draws, which the loss's is mapped from
    rows = [_point_metrics(p) for p in per_repeat]
    for name in rows[0]:
        means = [m for r in rows if (m := r[name][0]) is not None]
        if len(means) < len(rows):
            continue
        if len(rows) >= 2:
            e = mean_interval([float(m) for m in means], bounds=BANDED_BOUNDS.get(name))
            out[name] = dataclasses.replace(e, method=f"t over {len(rows)} repeats (each the mean of {draws} draws)")
            continue
        sd = rows[0][name][1]
        if name == "utility_loss" and u is not None and baseline_utility and abs(baseline_utility) > 1e-9:
            lo = None if u.ci_high is None else 1.0 - u.ci_high / baseline_utility
            hi = None if u.ci_low is None else 1.0 - u.ci_low / baseline_utility
            # no per-draw values (so sd None)
            out[name] = dataclasses.replace(u, mean=float(means[0]), ci_low=lo, ci_high=hi, values=(),
                                            method=f"t over {draws} draws (through L = 1 − u/u₀)")
            continue
        if sd is None:
            continue
        out[name] = interval_from_moments(float(means[0]), float(sd), draws, method=f"t over {draws} draws",
                                          note="one repeat: draw noise only", bounds=BANDED_BOUNDS.get(name))
        u = out[name] if name == "utility" else u
    return {name: e.to_dict() for name, e in out.items()}


def defense_curve_bands(curves: Sequence[Sequence[DefendedPoint]], draws: int,
                        baseline_utilities: Sequence[float | None] | None = None) -> list[DefendedPoint]:
    """A defense curve with a 95 % band: ``curves[r]`` are repeat r's points, ``draws`` the draws
    per point. Returns, per value present in every repeat (in repeat 0's order), repeat 0's point with ``intervals``
    (:func:`defense_intervals`) and ``band`` = ``{"repeats": N, "draws": D, "over": "repeats" | "draws" | None}``
    (None: one repeat and one draw, no interval).
    """
    if not curves:
        return []
    by_value = [{float(p.value): p for p in c} for c in curves]
    values = [v for v in by_value[0] if all(v in b for b in by_value[1:])]
    n = len(curves)
    over = "repeats" if n >= 2 else ("draws" if draws >= 2 else None)
    base0 = baseline_utilities[0] if baseline_utilities else None
    out = []
    for v in values:
        per = [b[v] for b in by_value]
        # repeat 0's JSON with intervals and band added: same keys, same order
        out.append(per[0].with_json({"intervals": defense_intervals(per, draws, base0 if n == 1 else None),
                                     "band": {"repeats": n, "draws": int(draws), "over": over}}))
    return out


def cached_repeat_configs(cfg: ExperimentConfig, limit: int = MAX_REPEATS, cache: ArtifactCache | None = None
                          ) -> list[ExperimentConfig]:
    """Repeats 0, 1, … of ``cfg`` whose runs are cached, up to the first missing one (at most
    ``limit``): the repeats a page can band over without training anything."""
    cache = cache or ArtifactCache()
    out = []
    for r in range(limit):
        c = repeat_config(cfg, r)
        if cached_run(c, cache) is None:
            break
        out.append(c)
    return out


def defend_repeats(cfg: ExperimentConfig, mechanism: str, values: Sequence[float], attacker: str = "naive",
                   draws: int = 1, sensitivity_samples: int = 0, seed: int = 0, cache: ArtifactCache | None = None,
                   progress: ProgressCallback | None = None, executor: "Executor | None" = None,
                   on_point: Callable[[int, int], None] | None = None) -> DefenseRun:
    """:func:`core.defenses.defender.defense_run` on every repeat of ``cfg`` (an after-training mechanism): repeat
    0's run, each point with ``intervals`` (:func:`defense_intervals`), a ``repeats`` block (``defend --repeats``)."""
    cache = cache or ArtifactCache()
    configs = repeat_configs(cfg)
    bar = _RepeatProgress(len(configs), progress, lambda i: f"repeat {i + 1}/{len(configs)}")
    results: list[DefenseRun] = []
    for i, c in enumerate(configs):
        models = trained_models(c, progress=bar.for_run(i), cache=cache, executor=executor)
        results.append(defense_run(models, mechanism, list(values), attacker, draws, sensitivity_samples, cache,
                                   seed=seed, on_point=on_point))
    utilities = [r.baseline.utility for r in results]
    known_utilities = [u for u in utilities if u is not None]
    return results[0].with_json({
        "points": [p.to_dict() for p in defense_curve_bands([r.points for r in results], draws, utilities)],
        "repeats": {"n": len(results), "seeds": [c.seed for c in configs],
                    "config_hashes": [r.config_hash for r in results],
                    "baseline_utility": mean_interval([float(u) for u in known_utilities]).to_dict()
                    if len(known_utilities) == len(utilities) else None}})
