"""Executors: the same trainings in this process, in a process pool and on a local Ray instance
give the same models; the driver writes the cache, so a rerun on another executor is a hit."""
import numpy as np
import pytest
import torch

from core.cache import ArtifactCache
from core.errors import ConfigError
from core.executor import make_executor
from core.pipeline import trained_models
from core.tasks import get_task

TINY = dict(n_train=30, n_eval=10, epochs=2, n_shadows=2, attack_epochs=(1,), attack_train_epochs=3)


def _models(tmp_path, name, executor=None):
    cfg = get_task("image").make_config("ffnn", "quick", TINY)
    return trained_models(cfg, cache=ArtifactCache(tmp_path / name), executor=executor)


def _same(a, b):
    for x, y in zip([a.victim, *a.shadows], [b.victim, *b.shadows]):
        assert x.role == y.role
        for k in x.weights:
            assert torch.equal(x.weights[k], y.weights[k]), (x.role, k)
        for e in x.responses:
            np.testing.assert_array_equal(x.responses[e].probs, y.responses[e].probs)


@pytest.mark.parametrize("name", ["processes", "ray"])
def test_executors_train_the_same_models_as_the_local_one(tmp_path, name):
    if name == "ray":
        pytest.importorskip("ray")
    # one thread, as in each worker: the same reduction order, so the same bits
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        local = _models(tmp_path, "local")
    finally:
        torch.set_num_threads(before)
    executor = make_executor(name, workers=2)
    try:
        remote = _models(tmp_path, name, executor)
    finally:
        executor.close()
        if name == "ray":
            import ray

            ray.shutdown()
    _same(local, remote)
    # the driver wrote every model: a local rerun on that cache trains nothing
    again = _models(tmp_path, name)
    assert again.victim.cache_hit and all(s.cache_hit for s in again.shadows)


def test_unknown_executor_is_a_config_error():
    with pytest.raises(ConfigError):
        make_executor("slurm")


def test_sensitivity_pairs_fan_out_on_a_process_pool(tmp_path):
    """SensitivitySampler pairs are independent trainings: on the processes executor they give the
    distances this process gives (one thread each, the same seeds), cached by the driver."""
    from core.defenses.sensitivity import cached_sensitivity, sample_sensitivity

    cfg = get_task("image").make_config("ffnn", "quick", TINY)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        local = sample_sensitivity(cfg, 2, ArtifactCache(tmp_path / "local"))
    finally:
        torch.set_num_threads(before)
    seen = []
    pool = sample_sensitivity(cfg, 2, ArtifactCache(tmp_path / "pool"), on_pair=lambda d, n: seen.append((d, n)),
                              executor=make_executor("processes", workers=2))
    assert pool.distances == local.distances and pool.sensitivity == local.sensitivity > 0
    assert seen[-1] == (2, 2)
    assert cached_sensitivity(cfg, 2, ArtifactCache(tmp_path / "pool")).distances == local.distances
