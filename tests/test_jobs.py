"""The app's job queue: worker processes, one job per model config shared by every session, queue
order, cancel (cached models kept), progress from the worker to the page, clean shutdown."""
import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from apptest_fields import set_fields
from job_events import record_job_events
from streamlit.testing.v1 import AppTest

from core.defenses.sensitivity import cached_sensitivity
from core.experiment.pipeline import cached_summary
from core.experiment.results import DefendedPoint
from core.jobs.manager import CANCELLED, DONE, JobManager, job_key
from core.tasks import get_task
from core.views.plain import plain_markdown

ROOT = Path(__file__).resolve().parent.parent
PAGE = "app_pages/1_Train_and_attack.py"
TINY = dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, attack_epochs=(), attack_train_epochs=3)


def tiny(arch, **changes):
    return get_task("image").make_config(arch, "quick", {**TINY, **changes})


def wait(predicate, timeout=180, every=0.1):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(every)
    raise AssertionError("timed out")


@pytest.fixture(scope="module")
def manager():
    """One queue (and warm worker) for these tests, as one server has; each test's jobs write to
    that test's own cache folder (a job carries the environment it was submitted with)."""
    m = JobManager(workers=1)
    yield m
    m.shutdown()


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped) is not alive
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


def test_overlapping_selections_train_each_model_once_in_queue_order(manager):
    """Session A asks for FFNN and RNN, session B for RNN alone and then for RNN and FFNN in the
    other order: the same two jobs, trained once each, in the order they were first queued."""
    ffnn, rnn, other = tiny("ffnn"), tiny("rnn"), tiny("ffnn", seed=7)
    a = manager.submit([ffnn, rnn])
    b1 = manager.submit([rnn])
    b2 = manager.submit([rnn, ffnn])
    c = manager.submit([other])
    assert b1.jobs[0] is a.jobs[1] and b2.jobs == [a.jobs[1], a.jobs[0]]
    assert [j.label for j in manager.active()] == [j.label for j in (a.jobs + c.jobs)]
    assert manager.place(c.jobs[0]) in (2, 3)  # behind RNN (and FFNN until it starts)
    wait(lambda: a.done and c.done)
    jobs = a.jobs + c.jobs
    assert [j.state for j in jobs] == [DONE] * 3, [j.error for j in jobs]
    assert jobs[0].started < jobs[1].started < jobs[2].started  # queue order kept
    for job in jobs:
        assert job.summary["models_from_cache"] == {"victim": False, "shadows": 0}  # trained, once
        assert cached_summary(job.config)["config_hash"] == job.config.config_hash
    assert manager.submit([ffnn]).jobs[0] is not a.jobs[0]  # a finished job is never re-attached to


def test_cancel_stops_the_worker_job_and_keeps_cached_models(manager):
    cfg = tiny("rnn", n_shadows=3, epochs=4, n_train=80, n_eval=40)
    group = manager.submit([cfg])
    job = group.jobs[0]
    # the victim is cached once the first shadow starts
    wait(lambda: job.event is not None and job.event.stage.startswith("shadow") or job.done, every=0.02)
    assert job.state == "running", job.error
    pid = job.worker_pid
    t = time.time()
    manager.cancel(job)
    wait(lambda: job.done, timeout=30)
    assert job.state == CANCELLED and time.time() - t < 15
    assert cached_summary(cfg) is None
    # the worker survived the cancel and trains the next job; the victim comes from the cache
    again = manager.submit([cfg]).jobs[0]
    assert again is not job
    wait(lambda: again.done)
    assert again.state == DONE, again.error
    assert again.summary["models_from_cache"]["victim"] is True
    assert again.worker_pid == pid


def test_cancel_a_queued_job_takes_it_off_the_queue(manager):
    first, second = tiny("ffnn", seed=11), tiny("rnn", seed=11)
    group = manager.submit([first, second])
    queued = group.jobs[1]
    manager.cancel(queued)
    assert queued.state == CANCELLED and queued not in manager.active()
    wait(lambda: group.jobs[0].done)
    assert group.jobs[0].state == DONE and cached_summary(second) is None


def test_a_job_error_is_reported_and_can_be_retried(manager):
    cfg = get_task("image").make_config("rnn", "quick", dict(dataset="cifar10", data_dir="/nonexistent"))
    group = manager.submit([cfg])
    wait(lambda: group.done, timeout=120)
    assert "not found" in group.error
    assert manager.submit([cfg]).jobs[0] is not group.jobs[0]


def training_event(job):
    """``job``'s last event when it is a training stage that carries an ETA, else None."""
    ev = job.event
    if job.state == "running" and ev is not None and ev.eta_s is not None and ev.stage.startswith(("victim", "shadow")):
        return ev
    return None


def no_gradient_step_here(*args, **kwargs):
    raise AssertionError("a gradient step ran in the server process: training belongs in a worker process")


def test_the_workers_progress_reaches_the_page(monkeypatch):
    """Two browser sessions: A clicks Train & attack; B, with the selection in the other order, does not
    see A's jobs until it asks for the same runs: its click attaches to them (no second job) and it sees the
    worker's stage and ETA in its progress bar.
    Nothing trains in the server (this process, which runs the pages): a backward pass here fails
    the test, while the worker processes train.

    Deterministic: the worker is paused (SIGSTOP) once it reports a training stage with an ETA, and
    B's page is checked against the event the manager held across that very render (the event the
    page read), whatever the machine's speed; the worker then resumes and both pages show results."""
    import torch

    from ui.shared import job_manager

    monkeypatch.setattr(torch.Tensor, "backward", no_gradient_step_here)
    monkeypatch.setattr(torch.autograd, "backward", no_gradient_step_here)
    fields = {"n_train": 60, "n_eval": 30, "epochs": 6, "n_shadows": 2, "attack_epochs": "", "attack_train_epochs": 3}

    def session():
        at = AppTest.from_file(str(ROOT / "app.py"))
        at.switch_page(PAGE)
        at.run(timeout=60)
        set_fields(at, "image:quick", fields)
        return at.run(timeout=60)

    def complete(at):
        return any(s.value == "Overview" for s in at.subheader) and not any("still to come" in c.value for c in at.caption)

    a, b = session(), session()
    [x for x in a.button if x.label == "Train & attack"][0].click()
    a.run(timeout=60)
    b.multiselect[0].set_value(["rnn", "ffnn"]).run(timeout=60)
    assert not b.exception, b.exception
    [button] = [x for x in b.button if x.label.startswith("Train & attack")]  # A's jobs are A's own
    button.click()
    b.run(timeout=60)
    assert not b.exception, b.exception
    assert not [x for x in b.button if x.label.startswith("Train & attack")]  # B waits for them now
    jobs = [j for j in job_manager().active() if j.kind == "experiment"]
    assert sorted(j.config.arch for j in jobs) == ["ffnn", "rnn"]  # attached: no second job
    assert all(len(j.owners) == 2 for j in jobs)

    shown = None
    for job in jobs:  # queue order: the first job, or the second if the first ended between two polls
        wait(lambda: training_event(job) is not None or job.done, every=0.005)
        if job.done:
            continue
        os.kill(job.worker_pid, signal.SIGSTOP)
        try:
            for _ in range(100):  # the worker is paused: the events it had already sent run out
                before = job.event
                b.run(timeout=60)
                assert not b.exception, b.exception
                if job.event is before:
                    break
            assert job.event is before, "the worker kept reporting while paused"
            if training_event(job) is not None:
                shown = (job, before, [p.proto.text for p in b.get("progress")])
                break
        finally:
            os.kill(job.worker_pid, signal.SIGCONT)
    assert shown is not None, "no job was seen in a training stage"
    job, event, texts = shown
    [text] = [t for t in texts if t.startswith(f"{plain_markdown(job.label)} — ")]
    # one progress figure: the stage, then the whole job's fraction, the same as the sidebar's
    assert f"— {event.stage} · {job.fraction:.0%} · " in text, texts
    assert text.endswith(" left"), texts  # an ETA from the worker's measured rate, not "estimating"

    wait(lambda: all(j.done for j in jobs), timeout=300)
    assert [j.state for j in jobs] == [DONE, DONE], [j.error for j in jobs]
    for at in (a, b):
        at.run(timeout=60)
        assert not at.exception, at.exception
        assert complete(at)


SHUTDOWN_SCRIPT = textwrap.dedent("""
    import atexit, signal, sys, time
    sys.path.insert(0, {root!r})
    from core.tasks import get_task
    from core.jobs.manager import JobManager
    m = JobManager(workers=1)
    atexit.register(m.shutdown)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))  # as the Streamlit server stops on SIGTERM
    cfg = get_task("image").make_config("rnn", "quick", dict(n_train=300, n_eval=100, epochs=40, n_shadows=4))
    job = m.submit([cfg]).jobs[0]
    while job.event is None or not job.event.stage.startswith("victim"):
        time.sleep(0.05)
    print(job.worker_pid, flush=True)
    time.sleep(600)
""")


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_server_shutdown_with_a_running_job_ends_the_worker(tmp_path, how):
    """A server stopped (or killed) while its worker trains leaves no process behind."""
    script = tmp_path / "server.py"
    script.write_text(SHUTDOWN_SCRIPT.format(root=str(ROOT)))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=str(ROOT))
    try:
        worker = int(proc.stdout.readline())
        assert alive(worker)
        t = time.time()
        proc.send_signal(getattr(signal, how))
        assert proc.wait(30) in (0, -signal.SIGKILL)
        wait(lambda: not alive(worker), timeout=20)
        assert time.time() - t < 20
    finally:
        if proc.poll() is None:
            proc.kill()


# ---------------------------------------------------------------------------- the long work of the other pages
def stages_until_done(job, timeout=300):
    """Every (stage, overall fraction) the job's worker reported, once the job ended (the job must
    come from a manager patched by ``record_job_events``: every event, not a sample of them)."""
    wait(lambda: job.done, timeout=timeout)
    return {(e.stage, round(e.overall_fraction, 2)) for e in job.events}


def test_job_kinds_and_parameters_make_the_key():
    cfg = tiny("ffnn")
    assert job_key(cfg, "sensitivity", params={"pairs": 2}) != job_key(cfg, "sensitivity", params={"pairs": 3})
    # a config built again and parameters given in another order are the same job; another cache is another job
    assert job_key(tiny("ffnn"), "analysis", params={"name": "mismatch", "pairs": 2}) == \
        job_key(cfg, "analysis", params={"pairs": 2, "name": "mismatch"})
    assert job_key(cfg, cache="/tmp/one") != job_key(cfg, cache="/tmp/two")
    assert job_key(cfg) != job_key(tiny("ffnn", seed=cfg.seed + 1))
    assert job_key(cfg, "analysis", params={"name": "mismatch"}) != job_key(cfg)
    with pytest.raises(ValueError):
        job_key(cfg, "train-in-the-server")


def test_a_sensitivity_job_runs_in_the_worker_with_progress_and_caches_its_pairs(manager, monkeypatch):
    record_job_events(monkeypatch)
    cfg = tiny("ffnn", epochs=1)
    assert cached_sensitivity(cfg, 2) is None
    job = manager.submit([cfg], "sensitivity", {"pairs": 2}).jobs[0]
    assert manager.submit([cfg], "sensitivity", {"pairs": 2}).jobs[0] is job  # the same job for a second tab
    assert manager.job(cfg, "sensitivity", {"pairs": 2}) is job and manager.job(cfg) is None
    seen = stages_until_done(job)
    assert job.state == DONE, job.error
    assert job.worker_pid != os.getpid() and job.worker_pid in manager.worker_pids()
    assert any(stage.startswith("SensitivitySampler") for stage, _ in seen), seen
    assert job.result["n"] == 2 and job.result["sensitivity"] > 0
    est = cached_sensitivity(cfg, 2)  # what the Defenses page reads on its next rerun
    assert est is not None and est.sensitivity == pytest.approx(job.result["sensitivity"])
    assert "SensitivitySampler (n = 2)" in job.label


def test_an_analysis_job_runs_in_the_worker_and_reports_progress(manager, monkeypatch):
    record_job_events(monkeypatch)
    cfg = tiny("rnn", epochs=4, n_train=40, n_eval=20)
    job = manager.submit([cfg], "analysis", {"name": "memorization"}).jobs[0]
    seen = stages_until_done(job)
    assert job.state == DONE, job.error
    assert [b["block"] for b in job.result["blocks"]] == [1, 2, 3, 4]
    fractions = sorted(f for stage, f in seen if stage.startswith("memorization"))
    # the worker reported the analysis' own stage (every event recorded: no sampling to miss it;
    # the tracker rate-limits later ones, so how many depends on speed), and the job ends at 100 %
    assert fractions, seen
    assert job.fraction == 1.0
    bad = manager.submit([cfg], "analysis", {"name": "rm -rf"}).jobs[0]
    wait(lambda: bad.done)
    assert bad.state == "failed" and "unknown analysis" in bad.error


def test_an_analysis_job_can_be_cancelled_and_the_worker_serves_the_next_job(manager):
    cfg = tiny("rnn", n_train=200, n_eval=100, epochs=10, n_shadows=2)
    job = manager.submit([cfg], "analysis", {"name": "overtraining"}).jobs[0]
    wait(lambda: job.done or (job.event is not None and 0 < job.event.overall_fraction < 0.5), every=0.02)
    assert job.state == "running", job.error
    pid, t = job.worker_pid, time.time()
    manager.cancel(job)
    wait(lambda: job.done, timeout=30)
    assert job.state == CANCELLED and time.time() - t < 15
    after = manager.submit([tiny("ffnn", epochs=1)], "sensitivity", {"pairs": 1}).jobs[0]
    wait(lambda: after.done)
    assert after.state == DONE and after.worker_pid == pid  # the worker survived the cancel


def test_an_adaptive_job_caches_the_point_the_defenses_page_reads(manager):
    from core.defenses.defender import Defender
    from core.defenses.spec import DefenseSpec
    from core.experiment.pipeline import run_experiment, trained_models

    cfg = tiny("ffnn")
    run_experiment(cfg)
    spec = DefenseSpec("dirichlet", 1.0)
    job = manager.submit([cfg], "adaptive", {"spec": dataclasses.asdict(spec)}).jobs[0]
    wait(lambda: job.done)
    assert job.state == DONE, job.error
    assert "adaptive attacker (dirichlet 1)" in job.label
    point = Defender(trained_models(cfg)).cached_point(spec, "both")
    assert point is not None
    assert point.adaptive_attack.accuracy == DefendedPoint.coerce(job.result).adaptive_attack.accuracy


def test_defenses_page_runs_the_sensitivity_sampler_and_the_adaptive_attacker_as_worker_jobs(monkeypatch):
    """The GPM's SensitivitySampler and the adaptive attacker: the page submits worker jobs, says
    they run, and shows their results on a rerun once they are done (nothing trains in the page)."""
    from core.experiment.pipeline import run_experiment

    task = get_task("image")
    monkeypatch.setitem(task.presets, "quick", {**task.presets["quick"], **TINY, "rnn": {"lr": 1e-2}})
    monkeypatch.setattr(task, "sensitivity_samples", 1)
    run_experiment(task.make_config("ffnn", "quick"))
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.switch_page("app_pages/2_Defenses.py")
    at.run(timeout=60)
    at.multiselect[0].set_value(["ffnn"])
    at.radio[0].set_value("gpm").run(timeout=120)
    assert not at.exception, at.exception
    def theory_epsilon_shown() -> bool:  # the guarantee's caption names ε once S is known
        return any("ε (theory) =" in c.value for c in at.caption)

    assert not theory_epsilon_shown()
    [button] = [b for b in at.button if b.label.startswith("Estimate the sensitivity of FFNN")]
    button.click().run(timeout=120)
    assert not at.exception, at.exception

    def rerun_until(done, timeout=240):
        deadline = time.time() + timeout
        while time.time() < deadline:
            at.run(timeout=120)
            assert not at.exception, at.exception
            if done():
                return
            time.sleep(1.0)
        raise AssertionError("timed out")

    rerun_until(theory_epsilon_shown)
    assert not [b for b in at.button if b.label.startswith("Estimate the sensitivity")]
    at.toggle[0].set_value(True).run(timeout=120)
    assert any("adaptive attacker" in c.value for c in at.caption)  # queued or running in a worker
    rerun_until(lambda: any(m.label == "adaptive attack accuracy" for m in at.metric))
    from ui.shared import job_manager

    kinds = {j.kind: j for j in job_manager().recent() if j.config.arch == "ffnn" and j.state == DONE}
    assert {"sensitivity", "adaptive"} <= set(kinds)  # both ran as worker jobs of the server's queue
    assert kinds["sensitivity"].worker_pid != os.getpid() and kinds["adaptive"].worker_pid != os.getpid()


def test_worker_threads_leave_a_core_to_the_app():
    """The worker's torch threads: the usable cores less the one the server and browser use, shared
    by the slots, never 0 (a 2-thread worker on 2 cores spun against them: docs/performance.md)."""
    from core.jobs.manager import worker_threads

    assert worker_threads(1, cores=2) == 1 and worker_threads(1, cores=1) == 1
    assert worker_threads(1, cores=16) == 15 and worker_threads(2, cores=16) == 7 and worker_threads(4, cores=2) == 1
