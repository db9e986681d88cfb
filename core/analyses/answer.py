""""Do RNNs leak more?" answered from the cached runs of one task and preset, never training.

The Home page shows this answer and ``python -m core compare --cached`` prints the same JSON: the one answer of
:mod:`core.analyses.arch_answer` over *every* repeat cached for both architectures (up to the first one either
lacks), so every page gives the same word on the same cache.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, cast

from core.analyses.arch_answer import ANSWER_METRIC
from core.analyses.comparison_results import ComparisonResult
from core.analyses.repeats import MAX_REPEATS, cached_repeat_configs, comparison_configs, comparison_json, repeat_config
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import cached_run
from core.experiment.results import RunSummary
from core.experiment.run_source import RunSource
from core.foundations.config import ExperimentConfig
from core.foundations.typed_json import Typed
from core.measurement.stats import Estimate
from core.tasks import get_task

QUESTION = "Do RNNs leak more?"
#: where answers on real data are (what the quick presets' built-in data cannot stand for)
ELSEWHERE = ("docs/results.md: CIFAR-10 (cifar_cpu), Multi30K (multi30k_cpu) and navigation, each with its "
             "repeats, intervals and verdicts",
             "the Analyses page: why attacks work (entropy, over training, memorization), with verdicts over the "
             "cached repeats")


def data_description(task: str, preset: str) -> str:
    """What the answer rests on, in words: the task, the preset and its data ("built-in 8×8 digits")."""
    t = get_task(task)
    note = (t.preset_notes.get(preset) or "").split(";")[0].strip().rstrip(".")
    return f"{task} task, {preset} preset" + (f": {note}" if note else "")


def answer_sentence(value: str, metric: str, e: Estimate, n: int, reason: str = "") -> str:
    """The headline in words: the verdict word (:data:`core.measurement.stats.FINDING_VERDICTS`) with the
    difference FFNN − RNN ``e``, its interval and N, and why — "(one repeat)" without an interval."""
    d = f"FFNN − RNN {e.mean:+.3f}"
    why = f" ({reason})" if reason else ""
    if n < 2 or e.ci_low is None:
        return f"**{value} (one repeat)** — {metric}: {d}, no interval with N = {n}{why}"
    return f"**{value}** — {metric}: {d} 95 % CI [{e.ci_low:+.3f}, {e.ci_high:+.3f}], N = {n} paired repeats{why}"


@dataclass(frozen=True, kw_only=True)
class Answer(Typed):
    """:func:`cached_answer`'s result (``compare --cached`` writes its ``to_dict``; the Home page reads it):
    N ``repeats`` cached for both architectures, the headline ``metric`` and its ``verdict`` (None with N = 0),
    ``decidable_at`` (the fewest N at which the answer's test can decide; None with N = 0), the ``sentence``, the ``data`` it rests on, where answers on real data are (``elsewhere``), the full
    ``comparison`` (None with N = 0) and each architecture's mean of the metric (``ffnn``, ``rnn``)."""

    question: str
    task: str
    preset: str
    data: str
    elsewhere: tuple[str, ...]
    repeats: int
    metric: str
    verdict: str | None
    sentence: str | None
    comparison: ComparisonResult | None
    ffnn: float | None = None
    rnn: float | None = None
    decidable_at: int | None = None
    #: with imported summaries only: where the repeats read were measured, and whether they mix origins
    origins: tuple[str, ...] | None = None
    mixed: bool | None = None

    _WHAT: ClassVar[str] = "answer"


def cached_answer(task: str = "image", preset: str = "quick", cache: ArtifactCache | None = None,
                  source: RunSource | None = None) -> Answer:
    """The answer to :data:`QUESTION` from the cache: ``repeats`` (N cached for both architectures,
    0 when either lacks repeat 0), ``verdict`` (None with N = 0), ``sentence``, ``data``,
    ``elsewhere`` and the full ``comparison`` (:func:`comparison_json`; None with N = 0). With ``source``
    (:class:`core.experiment.run_source.RunSource`: this cache plus summaries imported from other machines) its
    runs are read instead, under the same config hashes, and ``origins`` names where the repeats were measured
    (``mixed``: more than one machine, torch version or commit)."""
    cache = cache or ArtifactCache()
    configs = comparison_configs(task, preset, 1)
    if source is not None:
        return _answer_from(task, preset, configs, source)
    cached = {a: cached_repeat_configs(c, cache=cache) for a, c in configs.items()}
    return _answer(task, preset, cached, lambda c: cached_run(c, cache))


def _answer_from(task: str, preset: str, configs: dict[str, ExperimentConfig], source: RunSource) -> Answer:
    cached: dict[str, list[ExperimentConfig]] = {}
    for a, c in configs.items():
        cached[a] = []
        for r in range(MAX_REPEATS):
            rc = repeat_config(c, r)
            if source.run(rc)[0] is None:
                break
            cached[a].append(rc)
    answer = _answer(task, preset, cached, lambda c: source.run(c)[0])
    n = answer.repeats
    origins = source.origins_of(c.config_hash for v in cached.values() for c in v[:n])
    return answer.with_json({"origins": origins, "mixed": len(origins) > 1})


def _answer(task: str, preset: str, cached: dict[str, list[ExperimentConfig]],
            run: Callable[[ExperimentConfig], RunSummary | None]) -> Answer:
    n = min(len(v) for v in cached.values())
    out: dict[str, Any] = {"question": QUESTION, "task": task, "preset": preset,
                           "data": data_description(task, preset), "elsewhere": list(ELSEWHERE), "repeats": n,
                           "metric": ANSWER_METRIC, "verdict": None, "sentence": None, "comparison": None}
    if n == 0:
        out.update(sentence="not measured yet: no cached run of both architectures")
        return Answer.from_dict(out)
    runs = {a: [cast(RunSummary, run(c)) for c in v[:n]] for a, v in cached.items()}  # cached: never None
    comp_json = comparison_json(runs["ffnn"], runs["rnn"])
    comp = ComparisonResult.from_dict(comp_json)
    ans = comp.answer
    if ans is None:  # runs without an attack accuracy: no answer, the comparison only
        out.update(comparison=comp_json, sentence="no attack accuracy in the cached runs: no answer")
        return Answer.from_dict(out)
    # a JSON null is read as nan
    means = {a: None if math.isnan(v) else v for a, v in (("ffnn", ans.ffnn.mean), ("rnn", ans.rnn.mean))}
    # written over the placeholders above: a key present keeps its place
    out.update(comparison=comp_json, metric=ans.metric, verdict=ans.verdict, ffnn=means["ffnn"], rnn=means["rnn"],
               sentence=answer_sentence(ans.verdict, ans.label, ans.difference, n, ans.reason),
               decidable_at=ans.decidable_at)
    return Answer.from_dict(out)


def answer_key(task: str, preset: str, cache: ArtifactCache | None = None) -> tuple[str, ...]:
    """The config hashes of every repeat cached for both architectures (what :func:`cached_answer` reads): a memo
    of the answer keyed on it follows every repeat added, not only the first few."""
    configs = comparison_configs(task, preset, 1)
    cached = {a: cached_repeat_configs(c, cache=cache) for a, c in configs.items()}
    n = min(len(v) for v in cached.values())
    return tuple(c.config_hash for a in sorted(cached) for c in cached[a][:n])
