"""Progress events (stage-weighted bar, measured-rate ETA) and the background job API the pages use."""
import time

import pytest
from job_events import record_job_events

from core.foundations.progress import ProgressTracker
from core.jobs.manager import JobManager
from core.tasks import get_task


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


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_eta_follows_the_measured_rate_not_the_declared_weights():
    """The victim is declared twice as costly as a shadow but takes as long: once a shadow has run,
    the other shadows are expected to take what it took, and the ETA does not drift."""
    clock, events = Clock(), []
    stages = [("data", 0.2), ("victim (rnn)", 2.0), ("shadow 1/3", 1.0), ("shadow 2/3", 1.0), ("shadow 3/3", 1.0)]
    tracker = ProgressTracker(stages, events.append, clock=clock)
    tracker.update("data", 0.0)
    tracker.finish("data")  # instant (e.g. cached): not a rate
    for name in [n for n, _ in stages[1:]]:
        for k in range(1, 11):  # every model takes 100 s, in 10 steps
            clock.t += 10.0
            tracker.update(name, k / 10, force=True)
        tracker.finish(name)
    by_time = {round(e.elapsed_s): e.eta_s for e in events if e.eta_s is not None}
    # half-way through the victim: its own rate, and the shadows at the victim's rate per weight
    assert by_time[50] == pytest.approx(50 + 3 * 50, rel=0.05)
    # half-way through shadow 2: 50 s of it, then shadow 3 at shadow 1's measured 100 s
    assert by_time[250] == pytest.approx(150, rel=0.05)
    assert by_time[350] == pytest.approx(50, rel=0.05)
    assert events[-1].eta_s == 0.0


def test_while_the_first_shadow_runs_the_others_are_expected_to_take_as_long():
    """Declared weights 2:1, measured 100 s : 200 s — no jump when the first shadow ends."""
    clock, events = Clock(), []
    stages = [("victim (rnn)", 2.0), ("shadow 1/3", 1.0), ("shadow 2/3", 1.0), ("shadow 3/3", 1.0)]
    tracker = ProgressTracker(stages, events.append, clock=clock)
    for name, seconds in [(n, 100.0 if n.startswith("victim") else 200.0) for n, _ in stages]:
        for k in range(1, 11):
            clock.t += seconds / 10
            tracker.update(name, k / 10, force=True)
        tracker.finish(name)
    eta = {round(e.elapsed_s): e.eta_s for e in events}
    assert eta[280] == pytest.approx(20 + 2 * 200, rel=0.05)  # shadow 1 at 90 %
    assert eta[300] == pytest.approx(400, rel=0.01)  # shadow 1 done: no jump
    assert eta[400] == pytest.approx(300, rel=0.01)


def test_a_cached_stage_does_not_make_the_rest_look_free():
    clock, events = Clock(), []
    tracker = ProgressTracker([("victim (ffnn)", 2.0), ("shadow 1/1", 1.0), ("attacks", 0.3)], events.append, clock=clock)
    tracker.update("victim (ffnn)", 1.0)  # loaded from the cache: no intermediate fraction
    tracker.finish("victim (ffnn)")
    clock.t += 20
    tracker.update("shadow 1/1", 0.5, force=True)
    assert events[-1].eta_s == pytest.approx(20 + 0.3 * 40, rel=0.05)  # own rate, 40 s per unit of weight


@pytest.fixture
def manager():
    m = JobManager(workers=1)
    yield m
    m.shutdown()


def test_job_runs_in_a_worker_reports_stages_and_is_not_started_twice(manager, monkeypatch):
    record_job_events(monkeypatch)  # every event the worker sent, not a sample of them
    task = get_task("image")
    cfg = task.make_config("ffnn", "quick", dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, attack_epochs=(),
                                                  attack_train_epochs=3))
    group = manager.submit([cfg])
    assert manager.submit([cfg]).jobs[0] is group.jobs[0]  # same config: attach, don't start another
    assert manager.get(manager.key_of([cfg])).jobs[0] is group.jobs[0]
    deadline = time.time() + 180
    while not group.done and time.time() < deadline:
        time.sleep(0.02)
    assert group.done and group.error is None
    stages = [e.stage for e in group.jobs[0].events]
    assert group.summaries[0]["config_hash"] == cfg.config_hash
    # the worker reported its training stages in order, the victim before the shadow
    assert "victim (ffnn)" in stages and "shadow 1/1" in stages, stages
    assert stages.index("victim (ffnn)") < stages.index("shadow 1/1"), stages
    assert group.jobs[0].worker_pid in manager.worker_pids()  # the worker stays warm for the next job


def test_stages_side_by_side_count_once_and_never_go_back():
    """Workers' trainings reported in parallel, then the same stages reported again as they load
    from the cache: the bar adds each stage's weight once and only moves forward."""
    clock, events = Clock(), []
    stages = [("data", 1.0), ("victim (ffnn)", 2.0), ("shadow 1/2", 1.0), ("shadow 2/2", 1.0), ("attacks", 1.0)]
    tracker = ProgressTracker(stages, events.append, clock=clock)
    tracker.finish("data")
    running = {}
    for f in (0.25, 0.5, 0.75):
        clock.t += 1.0
        running.update({"victim (ffnn)": f, "shadow 1/2": f})
        tracker.update_parallel(running)
    assert events[-1].stage == "victim (ffnn) + 1 more"
    assert events[-1].overall_fraction == pytest.approx((1 + 0.75 * 3) / 6)
    assert events[-1].eta_s is not None and events[-1].eta_s > 0
    for stage in ("victim (ffnn)", "shadow 1/2"):
        clock.t += 1.0
        tracker.finish_parallel(stage, running)
    clock.t += 1.0
    running["shadow 2/2"] = 0.5
    tracker.update_parallel(running)
    clock.t += 1.0
    tracker.finish_parallel("shadow 2/2", running)
    assert events[-1].overall_fraction == pytest.approx(5 / 6) and events[-1].stage == "shadow 2/2"
    # loading the trained models reports their stages again: nothing moves
    before = len(events)
    for stage in ("data", "victim (ffnn)", "shadow 1/2", "shadow 2/2"):
        clock.t += 1.0
        tracker.update(stage, 1.0, force=True)
        tracker.finish(stage)
    assert len(events) == before
    clock.t += 1.0
    tracker.finish("attacks")
    overall = [e.overall_fraction for e in events]
    assert overall == sorted(overall) and overall[-1] == pytest.approx(1.0)


def test_a_jobs_label_names_what_differs_from_its_preset():
    """The sidebar once named every repeat and sweep point "image · RNN (quick)". Repeats are counted
    from 1, as Train & attack counts them: repeat_config(cfg, 2) is "repeat 3"."""
    from core.analyses.repeats import repeat_config
    from core.defenses.sweeps import point_config
    from core.jobs.manager import Job
    from core.tasks import get_task

    cfg = get_task("image").make_config("rnn", "quick")
    labels = {Job(1, "k", c).label for c in (
        cfg, repeat_config(cfg, 2), point_config(cfg, "dpsgd", 2.0), point_config(cfg, "dpsgd", 1.0),
        point_config(cfg, "dpsgd", 8.0, target_epsilon=True), point_config(cfg, "l2", 1e-3),
        cfg.with_updates({"epochs": 4}))}
    assert labels == {"image · RNN (quick)", "image · RNN (quick · repeat 3)", "image · RNN (quick · σ = 2)",
                      "image · RNN (quick · σ = 1)", "image · RNN (quick · target ε = 8)",
                      "image · RNN (quick · λ = 0.001)", "image · RNN (quick · epochs=4)"}


def test_one_progress_figure_for_a_job_the_whole_jobs_fraction():
    """The panel once printed the running stage's own fraction ("71 %") beside a bar and a sidebar
    at the whole job's ("18 %"); every line now reads the job's fraction."""
    from core.foundations.progress import ProgressEvent
    from core.jobs.manager import RUNNING, Job
    from core.tasks import get_task
    from ui.nav import job_line

    job = Job(1, "k", get_task("image").make_config("rnn", "quick"), state=RUNNING)
    job.event = ProgressEvent(stage="shadow 2/4", stage_fraction=0.71, overall_fraction=0.18, elapsed_s=30.0, eta_s=120.0)
    job.event_at = time.time()
    line = job_line(job)
    assert job.fraction == 0.18 and "18%" in line and "71" not in line and line.startswith("shadow 2/4")


def test_the_bar_never_moves_back_when_side_by_side_fractions_arrive_in_another_order():
    """The same fractions of stages running side by side, reported in another order, sum in another order: the
    bar keeps its figure instead of stepping back in the last bit (seen on the processes executor)."""
    events = []
    tracker = ProgressTracker([("data", 0.3), ("victim", 2.0), ("shadow 1/2", 1.0), ("shadow 2/2", 1.0)], events.append,
                              clock=lambda: 0.0)
    tracker.finish("data")
    fractions = {"victim": 0.5414124727934966, "shadow 1/2": 0.9391491627785106, "shadow 2/2": 0.38120423768821243}
    tracker.update_parallel(fractions, force=True)
    tracker.update_parallel(dict(reversed(fractions.items())), force=True)
    overall = [e.overall_fraction for e in events]
    assert len(overall) == 3 and overall == sorted(overall)
