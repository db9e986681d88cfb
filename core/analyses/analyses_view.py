"""What the Analyses page shows of the analyses that read cached runs only: the entropy scatter (with the most
exposed members), the vulnerability over training, their verdicts, the verdicts over the cached repeats, and
the scatter behind an after-training defense.

:func:`analyses_view` computes it; the page draws it and ``python -m core analyze --cached`` writes it. It never
trains: a run or model not cached raises :class:`NotCachedError`. The long analyses' results, where the caller
has them, join the view (:meth:`AnalysesView.with_results`) and its verdicts."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from core.analyses import verdicts as analysis_verdicts
from core.analyses.analyses_json import AnalysesResults
from core.analyses.analysis import defended_summary, entropy_scatter, most_exposed, point_records, vulnerability
from core.analyses.analysis_results import Scatter
from core.analyses.registry import laid_out
from core.analyses.repeats import cached_repeat_configs, repeat_config
from core.analyses.verdicts import RepeatedVerdicts, RunVerdict
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import cached_summary, load_models
from core.experiment.results import DefendedPoint, RunSummary
from core.foundations.config import ExperimentConfig
from core.foundations.errors import NotCachedError

#: the analyses computed from cached runs and models alone (nothing trains for them)
CACHED = ("scatter", "vulnerability")


def cached_runs(configs: dict[str, ExperimentConfig], cache: ArtifactCache | None = None,
                error: Callable[[str], Exception] = NotCachedError) -> dict[str, RunSummary]:
    """Each architecture's cached summary, typed: the one reading of cached runs that the analyses view and the
    run report (:func:`core.views.report.run_report`) share. A run missing is one line ``error(message)`` naming it
    and the command that computes it (it never trains): :class:`NotCachedError` here, the report's
    :class:`~core.foundations.errors.ConfigError` there."""
    out = {}
    for arch, cfg in configs.items():
        s = cached_summary(cfg, cache)
        if s is None:
            raise error(f"the {arch} run of {cfg.task} ({cfg.preset}, config {cfg.config_hash[:12]}) is not cached: "
                        f"train it first (Train & attack, or python -m core run --task {cfg.task} --arch {arch} "
                        f"--preset {cfg.preset} with the same --set options)")
        out[arch] = RunSummary.from_dict(s)
    return out


def cached_analyses(configs: dict[str, ExperimentConfig], cache: ArtifactCache | None = None) -> dict[str, Any]:
    """The analyses of :data:`CACHED` per architecture, typed, plus the scatter's most exposed members (each with its
    record's data ``index``, so a reader can show the record): ``{"scatter": {arch: Scatter}, "most_exposed":
    {arch: [ExposedMember]}, "vulnerability": {arch: Vulnerability}}``, in analyses.json's key order. Reads the
    cache only."""
    runs = cached_runs(configs, cache)
    out: dict[str, dict[str, Any]] = {"scatter": {}, "most_exposed": {}, "vulnerability": {}}
    for arch, cfg in configs.items():
        models = load_models(cfg, cache)
        out["scatter"][arch] = entropy_scatter(runs[arch])
        eval_index = np.asarray(models.splits.eval_index)
        out["most_exposed"][arch] = [row.with_json({"index": int(eval_index[row.position])})  # its JSON, index last
                                     for row in most_exposed(runs[arch])]
        out["vulnerability"][arch] = vulnerability(models, runs[arch])
    return out


@dataclass
class AnalysesView:
    """The Analyses page's data: ``results`` (analysis name → arch → its data as JSON, the keys of ``analyses.json``:
    what the page draws and writes), ``typed`` (the same, typed where the analysis registers a reader), the verdicts
    computed from ``typed`` (each from its own analysis' data), and ``repeats`` (the paired verdicts over the cached
    repeats, :func:`core.analyses.verdicts.repeated_verdicts`; None with fewer than 2)."""
    task: str
    configs: dict[str, ExperimentConfig]
    summaries: dict[str, RunSummary]
    results: dict[str, dict[str, Any]]
    verdicts: dict[str, RunVerdict] = field(default_factory=dict)
    repeats: RepeatedVerdicts | None = None
    typed: dict[str, Any] = field(default_factory=dict)

    def with_results(self, **more: Any) -> AnalysesView:
        """This view with more analyses' results (a finished worker job's, an audit's: ``{arch: typed}`` where the
        analysis registers a reader, :func:`core.analyses.registry.read_result`) and the verdicts recomputed over
        all of them."""
        typed = {**self.typed, **more}
        return replace(self, results={**self.results, **laid_out(more)}, typed=typed,
                       verdicts=analysis_verdicts.verdicts(typed, self.summaries))

    def as_results(self) -> AnalysesResults:
        """This view as ``analyses.json``, in the one class for it (:class:`AnalysesResults`, what
        :func:`core.analyses.analysis.analyze` returns): ``task``, ``archs``, one key per analysis, ``verdicts``
        and, over cached repeats, ``repeats`` — the view's own order (verdicts after the analyses). The view is the
        page's working state (its configs, the runs' summaries, results a worker job adds); this is what it writes."""
        out: dict[str, Any] = {"task": self.task, "archs": list(self.configs), **self.results, "verdicts": self.verdicts}
        if self.repeats is not None:
            out["repeats"] = self.repeats
        return AnalysesResults.from_dict(out)

    def to_dict(self) -> dict[str, Any]:
        """:meth:`as_results`' JSON (the page's exports and ``analyze --cached``'s ``analyses.json``)."""
        return self.as_results().to_dict()


def cached_repeat_count(configs: dict[str, ExperimentConfig], cache: ArtifactCache | None = None) -> int:
    """Repeats 0, 1, … cached for every architecture (Train & attack's repeats, ``compare --repeats``)."""
    return min(len(cached_repeat_configs(c, cache=cache)) for c in configs.values())


def analyses_view(configs: dict[str, ExperimentConfig], long_results: dict[str, dict[str, Any]] | None = None,
                  repeats: int = 1, repeat_results: dict[int, dict[str, dict[str, Any]]] | None = None,
                  cache: ArtifactCache | None = None,
                  compute: Callable[[dict[str, ExperimentConfig]], dict[str, Any]] | None = None) -> AnalysesView:
    """The analyses of ``configs`` that read the cache only, joined with ``long_results`` (name → arch → typed result
    of the analyses that trained elsewhere, :func:`core.analyses.registry.read_result`), and the verdicts of all of
    them; with ``repeats`` = N ≥ 2 the verdicts over the N cached paired repeats too (``repeat_results[r]``: the long
    results the caller has for repeat r, typed alike). ``compute`` replaces :func:`cached_analyses` (the page's
    memoized copy; typed alike). A run or model not cached: :class:`NotCachedError`."""
    compute = compute or (lambda c: cached_analyses(c, cache))
    summaries = cached_runs(configs, cache)
    view = AnalysesView(next(iter(configs.values())).task, dict(configs), summaries,
                        {}).with_results(**compute(configs), **(long_results or {}))
    if repeats < 2 or not {"ffnn", "rnn"} <= set(configs):
        return view
    # per repeat: its runs, its cached analyses and the long analyses whose results the caller has for it;
    # repeated_verdicts pairs them by repeat (repeat r of FFNN and RNN on one split)
    per_repeat = [{"runs": summaries, **view.typed}]
    for r in range(1, repeats):
        rc = {a: repeat_config(c, r) for a, c in configs.items()}
        data = compute(rc)
        per_repeat.append({"runs": cached_runs(rc, cache), "scatter": data["scatter"],
                           "vulnerability": data["vulnerability"], **(repeat_results or {}).get(r, {})})
    seeds = [repeat_config(configs["ffnn"], r).seed for r in range(repeats)]
    return replace(view, repeats=analysis_verdicts.repeated_verdicts(per_repeat, seeds))


def defended_scatter(summaries: dict[str, RunSummary], points: dict[str, DefendedPoint]) -> dict[str, Scatter]:
    """The scatter of each architecture's outputs behind a defense (``points``: arch → its
    :class:`core.defenses.defender.DefendedPoint` for the naive attacker): the naive attacker keeps its
    thresholds and boundaries, its scores are on the defended outputs."""
    return {arch: entropy_scatter(defended_summary(summaries[arch], point_records(point)))
            for arch, point in points.items()}
