""""Do RNNs leak more?" answered from the cached runs of one task and preset, never training.

The Home page asks the question and shows this answer; ``python -m core compare --cached`` prints the
same JSON. The answer is the paired FFNN − RNN comparison (:func:`core.analyses.repeats.comparison_json`)
over the repeats that are cached for *both* architectures (repeat 0, 1, … up to the first one either
lacks), so it never claims more than was measured: with one repeat the difference and "inconclusive
(one repeat)", with N ≥ 2 the verdict of :func:`core.measurement.stats.verdict` with its interval and N.
"""
from __future__ import annotations

from typing import Any

from core.analyses.repeats import cached_repeat_configs, comparison_configs, comparison_json
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import cached_summary
from core.experiment.results import RunSummary
from core.tasks import get_task

QUESTION = "Do RNNs leak more?"
#: the metric the answer's headline reads when the comparison declares no primary metric: the studies' own
#: (Shokri's shadow-model attack accuracy, papers 000 and 001). Otherwise the headline is the comparison's
#: primary metric (:data:`core.analyses.repeats.PRIMARY_ORDER`: LiRA AUC where LiRA ran, else RMIA, else the
#: shadow attack's AUC — declared before any number is read), as on every other page; the other leakage
#: metrics' verdicts are in ``comparison``
HEADLINE_METRIC = "attack_accuracy"
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


def answer_sentence(value: str, metric: str, diff: dict[str, Any], n: int) -> str:
    """The headline in words: the verdict (holds / reversed / inconclusive, the only three) with the
    difference FFNN − RNN, its interval and N — or "inconclusive (one repeat)" without an interval."""
    d = f"FFNN − RNN {diff['mean']:+.3f}"
    if n < 2 or diff.get("ci_low") is None:
        return f"**inconclusive (one repeat)** — {metric}: {d}, no interval with N = {n}"
    return (f"**{value}** — {metric}: {d} 95 % CI [{diff['ci_low']:+.3f}, {diff['ci_high']:+.3f}], "
            f"N = {n} paired repeats")


def cached_answer(task: str = "image", preset: str = "quick", cache: ArtifactCache | None = None) -> dict[str, Any]:
    """The answer to :data:`QUESTION` from the cache: ``repeats`` (N cached for both architectures,
    0 when either lacks repeat 0), ``verdict`` (None with N = 0), ``sentence``, ``data``,
    ``elsewhere`` and the full ``comparison`` (:func:`comparison_json`; None with N = 0)."""
    cache = cache or ArtifactCache()
    configs = comparison_configs(task, preset, 1)
    cached = {a: cached_repeat_configs(c, cache=cache) for a, c in configs.items()}
    n = min(len(v) for v in cached.values())
    out: dict[str, Any] = {"question": QUESTION, "task": task, "preset": preset,
                           "data": data_description(task, preset), "elsewhere": list(ELSEWHERE), "repeats": n,
                           "metric": HEADLINE_METRIC, "verdict": None, "sentence": None, "comparison": None}
    if n == 0:
        out["sentence"] = "not measured yet: no cached run of both architectures"
        return out
    runs = {a: [RunSummary.from_dict(cached_summary(c, cache)) for c in v[:n]] for a, v in cached.items()}
    comp = comparison_json(runs["ffnn"], runs["rnn"])
    metric = (comp.get("primary") or {}).get("metric") or HEADLINE_METRIC
    m = comp["metrics"][metric]
    value = m["verdict"]["value"] if n >= 2 and m.get("verdict") else "inconclusive"
    out.update(comparison=comp, metric=metric, verdict=value, ffnn=m["ffnn"]["mean"], rnn=m["rnn"]["mean"],
               sentence=answer_sentence(value, m.get("label", metric), m["difference"]["diff"], n))
    return out
