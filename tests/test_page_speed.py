"""What keeps a page's rerun cheap: cached runs read from disk once per set of results."""
from core.experiment.cache import ArtifactCache
from core.tasks import get_task
from ui import shared

SMALL = dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, attack_epochs=())


def _fake(cfg) -> dict:
    """A summary of the shape the pipeline caches (whole: core.experiment.results' schema)."""
    attack = {"name": "shadow", "accuracy": 0.5, "advantage": 0.0, "auc": 0.5, "tpr_at_fpr": {}}
    return {"task": cfg.task, "arch": cfg.arch, "config": cfg.to_dict(), "config_hash": cfg.config_hash, "params": 1,
            "utility": {"metric": "accuracy"}, "attack": attack, "attacks": {"shadow": attack}, "per_epoch": [],
            "timings": {}, "records": {}}


def test_runs_of_reads_the_cache_again_only_when_a_result_is_added(monkeypatch):
    reads = []
    real = shared.cached_runs
    monkeypatch.setattr(shared, "cached_runs", lambda task, arch: reads.append((task, arch)) or real(task, arch))
    task = get_task("image")
    cache = ArtifactCache()
    first = task.make_config("ffnn", "quick", SMALL)
    cache.put_json(cache.key("result", first.config_hash), _fake(first))
    assert [s.config_hash for s in shared.runs_of("image", "ffnn")] == [first.config_hash]
    assert [s.config_hash for s in shared.runs_of("image", "ffnn")] == [first.config_hash]
    assert len(reads) == 1  # the rerun: served from memory
    second = task.make_config("ffnn", "quick", dict(SMALL, seed=7))
    cache.put_json(cache.key("result", second.config_hash), _fake(second))
    assert {s.config_hash for s in shared.runs_of("image", "ffnn")} == {first.config_hash, second.config_hash}
    assert len(reads) == 2  # a new result: read again
