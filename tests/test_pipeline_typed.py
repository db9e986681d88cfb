"""run_experiment types its summary from birth: ``result.run`` is a RunSummary, and the JSON it
writes (``result.summary`` = ``run.to_dict()``, the cache's entry, the CLI's output) keeps the layout it had when the
pipeline built a dict — the key orders below are those of a tiny run's JSON written at af87210, before the change
(a None written as null, never left out)."""
from __future__ import annotations

import json

from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import cached_summary, run_experiment
from core.experiment.results import RunSummary
from core.tasks import get_task

TINY = dict(n_train=40, n_eval=20, epochs=3, n_shadows=2, attack_epochs=(2,), attack_train_epochs=3)
#: the layout of that run's JSON at af87210 (the pipeline's own keys; the attacks' numbers are measurement's), plus
#: ``timings.attack_cpu_s`` (the attack stage's own CPU seconds, added with result revision 3)
TOP = ["task", "arch", "preset", "config", "config_hash", "training_hash", "params", "data", "device", "machine", "utility",
       "attack", "attacks", "attacks_by_epoch", "per_epoch", "timings", "cache_hit", "models_from_cache",
       "cache_corrupted", "victim_source", "shadow_fidelity", "attacks_not_run", "resolution", "privacy", "examples",
       "records"]
TIMINGS = ["data_s", "victim_s", "shadows_s", "attack_s", "attack_cpu_s", "total_s", "victim_trained_s", "shadows_trained_s",
           "reference_attacks_s"]


def test_a_run_is_typed_from_birth_and_writes_the_layout_it_wrote_as_a_dict(tmp_path):
    cache = ArtifactCache(tmp_path)
    cfg = get_task("image").make_config("ffnn", "quick", TINY)
    result = run_experiment(cfg, cache=cache)
    run, summary = result.run, result.summary
    assert isinstance(run, RunSummary) and summary == run.to_dict()
    assert list(summary) == TOP and summary["privacy"] is None  # null, not left out
    assert list(summary["utility"]) == ["metric", "train", "val"]
    assert [list(r) for r in summary["per_epoch"]] == [
        ["epoch", "utility_train", "utility_val", "attack_accuracy", "attack_auc"]] * 3
    assert [r.attack_accuracy is not None for r in run.per_epoch] == [False, True, True]  # attacked at 2 and 3
    assert list(summary["records"]) == ["membership", "ape", "cross_entropy", "length", "scores", "boundaries"]
    assert list(summary["timings"])[:len(TIMINGS)] == TIMINGS
    assert list(summary["attack"])[0] == "name" and summary["attack"]["name"] == run.primary
    assert "roc_fpr" not in summary["attack"] and "roc_fpr" in summary["attacks"][run.primary]
    assert list(summary["attacks_by_epoch"]) == ["2", "3"]
    # what the cache stores is that JSON (its values; the store sorts keys); read back it is the same run
    stored = cached_summary(cfg, cache)
    fresh = ("cache_hit", "models_from_cache")  # what the load itself sets
    assert {k: v for k, v in stored.items() if k not in fresh} == \
        json.loads(json.dumps({k: v for k, v in summary.items() if k not in fresh}))
    again = run_experiment(cfg, cache=cache)
    assert isinstance(again.run, RunSummary) and again.run.cache_hit and again.models is None
    assert sorted(again.summary) == sorted(TOP) and again.run.attacks == run.attacks  # the store sorts keys, as before
