"""A class on one server: each session lists and cancels its own jobs only (a lecturer, set in the server's
configuration, every job), a per-session quota, and a queue that takes sessions in turn. No worker runs here:
the slots of these managers never start a job, so every order is the queue's own."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.jobs.manager import CANCELLED, QUEUED, RUNNING, JobManager, JobQuotaError, SessionJobs
from core.tasks import get_task

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, attack_epochs=(), attack_train_epochs=3)


class IdleSlots(JobManager):
    """A queue whose slots never take a job on their own (the test takes them with ``_next``)."""

    def _slot_loop(self, slot: int) -> None:
        return None


def cfg(seed: int, arch: str = "ffnn"):
    return get_task("image").make_config(arch, "quick", {**TINY, "seed": seed})


def start_next(m: JobManager):
    """What a slot does when it is free: take the next job (and, for the test, free the slot again)."""
    go, job = m._next(0)
    assert go and job is not None
    m._running[0] = None
    return job


def test_the_queue_takes_sessions_in_turn_and_keeps_each_sessions_order():
    m = IdleSlots(workers=1, quota=50)
    sweep = [cfg(s) for s in range(1, 5)]
    a = m.submit(sweep, owner="session:a").jobs          # one student's sweep: four jobs first
    b = m.submit([cfg(10)], owner="session:b").jobs
    c = m.submit([cfg(20), cfg(21)], owner="session:c").jobs
    expected = [a[0], b[0], c[0], a[1], c[1], a[2], a[3]]
    assert m.active() == expected
    assert [m.place(j) for j in expected] == list(range(1, 8))
    started = [start_next(m) for _ in range(3)]
    assert started == expected[:3] and all(j.state == RUNNING for j in started)
    late = m.submit([cfg(30)], owner="session:d").jobs[0]  # a newcomer waits one turn, not behind the sweep
    assert m.active() == [late, a[1], c[1], a[2], a[3]]


def test_each_session_lists_and_cancels_its_own_jobs_only_and_a_shared_job_runs_while_anyone_waits():
    m = IdleSlots(workers=1, quota=50)
    alice, bob = SessionJobs(m, "session:alice"), SessionJobs(m, "session:bob")
    mine = alice.submit([cfg(1)]).jobs[0]
    theirs = bob.submit([cfg(2)]).jobs[0]
    assert alice.active() == [mine] and bob.active() == [theirs]
    assert alice.job(cfg(2)) is None and bob.job(cfg(1)) is None  # another session's job is not found either
    alice.cancel(theirs)  # not alice's: nothing happens
    assert theirs.state == QUEUED and bob.active() == [theirs]
    shared = bob.submit([cfg(1)]).jobs[0]  # the same config: bob attaches to alice's job (computed once)
    assert shared is mine and mine.owners == {"session:alice", "session:bob"}
    alice.cancel(mine)  # alice leaves; bob still waits for it
    assert mine.state == QUEUED and alice.active() == [] and mine in bob.active()
    bob.cancel(mine)
    assert mine.state == CANCELLED and bob.active() == [theirs]
    server_own = m.submit([cfg(3)]).jobs[0]  # e.g. a course's pre-warm: listed to everyone, cancelled by nobody
    assert server_own in alice.active()
    alice.cancel(server_own)
    assert server_own.state == QUEUED


def test_a_lecturer_sees_and_cancels_every_job():
    m = IdleSlots(workers=1, quota=50)
    alice, lecturer = SessionJobs(m, "session:alice"), SessionJobs(m, "user:prof", lecturer=True)
    job = alice.submit([cfg(1)]).jobs[0]
    assert lecturer.active() == [job] and lecturer.job(cfg(1)) is job
    lecturer.cancel(job)
    assert job.state == CANCELLED and alice.active() == []


def test_a_session_past_its_quota_gets_one_line_and_nothing_is_queued():
    m = IdleSlots(workers=1, quota=3)
    a = SessionJobs(m, "session:a")
    a.submit([cfg(1), cfg(2)])
    with pytest.raises(JobQuotaError, match=r"4 queued or running jobs of yours; a session holds at most 3 \(MIA_JOB_QUOTA\)"):
        a.submit([cfg(3), cfg(4)])
    assert len(m.active()) == 2
    a.submit([cfg(1), cfg(3)])  # attaching to its own job costs nothing: 3 in all
    SessionJobs(m, "session:b").submit([cfg(5), cfg(6), cfg(7)])  # another session's quota is its own
    assert len(m.active()) == 6
    SessionJobs(m, "user:prof", lecturer=True).submit([cfg(s) for s in range(10, 15)])  # a lecturer is not capped


def test_two_browser_sessions_see_only_their_own_jobs_in_the_sidebar(monkeypatch):
    import ui.shared

    m = IdleSlots(workers=1, quota=50)
    monkeypatch.setattr(ui.shared, "server_jobs", lambda: m)
    job = m.submit([cfg(1)], owner="session:aaa").jobs[0]
    sessions = {}
    for sid in ("aaa", "bbb"):
        at = AppTest.from_file(str(ROOT / "app.py"))
        at.session_state["_mia_session_id"] = sid
        at.run(timeout=120)
        assert not at.exception, at.exception
        sessions[sid] = " ".join(c.value for c in at.sidebar.caption) + " ".join(x.value for x in at.sidebar.markdown)
    assert "Your jobs" in sessions["aaa"] and "queued" in sessions["aaa"]
    assert "Your jobs" not in sessions["bbb"] and "queued" not in sessions["bbb"]
    assert job.state == QUEUED


def test_the_lecturer_role_comes_from_the_servers_configuration(monkeypatch):
    from core.foundations.environment import check_environment
    from core.foundations.errors import ConfigError

    check_environment({"MIA_LECTURERS": "prof,ta2", "MIA_USER_HEADER": "X-Forwarded-User", "MIA_JOB_QUOTA": "6"})
    for bad in ({"MIA_LECTURERS": " , "}, {"MIA_USER_HEADER": "X Forwarded: User"}, {"MIA_JOB_QUOTA": "0"}):
        with pytest.raises(ConfigError, match="is not valid"):
            check_environment(bad)
    monkeypatch.delenv("MIA_USER_HEADER", raising=False)
    monkeypatch.setenv("MIA_LECTURERS", "prof")
    from ui.session import is_lecturer, login_name
    assert login_name() is None and not is_lecturer()  # no proxy header configured: nobody is a lecturer
