"""Executors: the same trainings in this process, in a process pool and on a local Ray instance
give the same models; the driver writes the cache, so a rerun on another executor is a hit."""
import os
import time

import numpy as np
import pytest
import torch

from core.experiment.cache import ArtifactCache
from core.experiment.executor import ProcessExecutor, make_executor
from core.experiment.pipeline import trained_models
from core.experiment.roles import train_job
from core.foundations.errors import ConfigError, WorkerFailedError
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


# ---------------------------------------------------------------------------- failures
def _crash_on_three(x: int) -> int:
    """Runs in a spawned worker: item 3 kills its process (as the OOM killer would)."""
    if x == 3:
        time.sleep(0.3)
        os._exit(7)
    return 2 * x


def _raise_on_two(x: int) -> int:
    if x == 2:
        raise ArithmeticError("bad item")
    return 2 * x


def _crash_on_shadow_1(job):
    if job.role == "shadow_1":
        time.sleep(0.3)
        os._exit(7)
    return train_job(job)


class _CrashingPool(ProcessExecutor):
    """A pool whose worker dies on the second shadow's training."""

    def map(self, jobs, on_done, on_progress=None):
        self._run(_crash_on_shadow_1, jobs, [job.role for job in jobs], on_done, on_progress)


def test_a_dead_worker_is_reported_and_what_finished_is_kept():
    done = []
    with pytest.raises(WorkerFailedError, match=r"2 of 4 jobs failed on the processes executor \(item 2, item 3\): a worker "
                                                r"process died.*The 2 that finished are kept"):
        ProcessExecutor(workers=1).run_many(_crash_on_three, [1, 2, 3, 4], done.append)
    assert sorted(done) == [2, 4]


def test_a_failing_job_does_not_stop_the_others():
    done = []
    with pytest.raises(WorkerFailedError, match=r"1 of 3 jobs failed .*\(item 1\): ArithmeticError: bad item"):
        ProcessExecutor(workers=2).run_many(_raise_on_two, [1, 2, 3], done.append)
    assert sorted(done) == [2, 6]


def test_progress_moves_while_workers_train(tmp_path):
    """The pool's workers report their trainings' fractions: the bar moves inside a model, not only
    when one arrives, and never backwards."""
    cfg = get_task("image").make_config("ffnn", "quick", dict(TINY, epochs=6, n_train=120))
    events = []
    trained_models(cfg, progress=events.append, cache=ArtifactCache(tmp_path / "c"), executor=ProcessExecutor(workers=2))
    inside = [e for e in events if 0 < e.stage_fraction < 1 and e.stage != "data"]
    assert inside, [(e.stage, e.stage_fraction) for e in events]
    overall = [e.overall_fraction for e in events]
    assert overall == sorted(overall) and overall[-1] == 1.0


def test_a_crash_mid_config_keeps_the_cached_models_and_progress_moved(tmp_path):
    cfg = get_task("image").make_config("ffnn", "quick", TINY)
    events = []
    with pytest.raises(WorkerFailedError, match=r"shadow_1"):
        trained_models(cfg, progress=events.append, cache=ArtifactCache(tmp_path / "c"), executor=_CrashingPool(workers=1))
    # of data 0.2 + victim 2 + shadows 1 + 1: the data, the victim and the first shadow are done; the second never came
    assert max(e.overall_fraction for e in events) == pytest.approx(3.2 / 4.2)
    again = trained_models(cfg, cache=ArtifactCache(tmp_path / "c"))  # local rerun: only the missing shadow trains
    assert again.victim.cache_hit and again.shadows[0].cache_hit and not again.shadows[1].cache_hit
