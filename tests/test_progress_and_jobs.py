import time

from core.progress import ProgressTracker
from core.tasks import get_task
from ui.jobs import JobManager


def test_progress_is_weighted_by_stage_and_monotone():
    events = []
    tracker = ProgressTracker([("a", 1.0), ("b", 3.0)], events.append)
    tracker.update("a", 0.5, force=True)
    tracker.finish("a")
    tracker.update("b", 0.5, force=True)
    tracker.finish("b")
    overall = [e.overall_fraction for e in events]
    assert overall == sorted(overall)
    assert abs(events[0].overall_fraction - 0.125) < 1e-9  # half of a stage worth 1/4
    assert abs(events[2].overall_fraction - 0.625) < 1e-9  # a done (1/4) + half of b (3/8)
    assert events[-1].overall_fraction == 1.0 and events[-1].stage == "b"
    assert events[-1].eta_s is not None and events[-1].eta_s < 1e-6


def test_job_runs_in_background_reports_stages_and_is_not_started_twice():
    task = get_task("image")
    cfg = task.make_config("ffnn", "quick", dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, attack_epochs=(),
                                                  attack_train_epochs=3))
    manager = JobManager()
    job = manager.submit([cfg])
    assert manager.submit([cfg]) is job  # same configs: attach, don't start another
    deadline = time.time() + 120
    stages = set()
    while not job.done and time.time() < deadline:
        if job.event is not None:
            stages.add(job.event.stage)
        time.sleep(0.05)
    assert job.done and job.error is None
    assert job.summaries[0]["config_hash"] == cfg.config_hash
    assert stages  # progress was visible while it ran


def test_job_error_is_reported_not_swallowed():
    cfg = get_task("image").make_config("rnn", "quick", dict(dataset="cifar10", data_dir="/nonexistent"))
    manager = JobManager()
    job = manager.submit([cfg])
    deadline = time.time() + 30
    while not job.done and time.time() < deadline:
        time.sleep(0.05)
    assert job.done and "not found" in job.error
    assert manager.submit([cfg]) is not job  # a failed job can be retried
