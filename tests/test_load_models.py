"""Pages never train: :func:`core.experiment.pipeline.load_models` reads the cache or says "not cached"."""
import pytest

from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import load_models, trained_models
from core.foundations.errors import MIAError, NotCachedError
from core.tasks import get_task

TINY = dict(n_train=30, n_eval=10, epochs=2, n_shadows=1, attack_epochs=())


def no_training(monkeypatch):
    task = get_task("image")

    def refuse(*args, **kwargs):
        raise AssertionError("load_models trained a model")

    monkeypatch.setattr(type(task), "train", refuse)


def test_load_models_says_not_cached_and_never_trains(monkeypatch):
    cfg = get_task("image").make_config("ffnn", "quick", TINY)
    trained = trained_models(cfg)  # the real training, before it is forbidden
    no_training(monkeypatch)
    loaded = load_models(cfg)
    assert loaded.victim.cache_hit and [s.cache_hit for s in loaded.shadows] == [True]
    assert list(loaded.splits.eval_index) == list(trained.splits.eval_index)
    assert all((loaded.victim.weights[k] == v).all() for k, v in trained.victim.weights.items())

    other = get_task("image").make_config("rnn", "quick", TINY)  # never trained
    with pytest.raises(NotCachedError) as err:
        load_models(other)
    assert isinstance(err.value, MIAError) and "not cached" in str(err.value) and "\n" not in str(err.value)

    # a model whose weights are gone (its meta kept) is not cached either: named, not retrained
    cache = ArtifactCache()
    cache.discard(cache.key("model", cfg.training_hash, "shadow_0", "weights"), "removed by the test")
    with pytest.raises(NotCachedError, match="shadow 0"):
        load_models(cfg)
