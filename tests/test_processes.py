"""The one worker-process machinery (``core.foundations.processes``) under the app's job workers and
the ``processes`` executor: workers end with their parent (``kill -9`` included), a worker's failure is
reported with its job's name after the others finished, thread caps, rate-limited progress."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from core.foundations.errors import WorkerFailedError
from core.foundations.processes import failure_text, raise_failures, run_pool, throttled

ROOT = Path(__file__).resolve().parent.parent

needs_proc = pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")


def _running(pid: int) -> bool:
    """``pid`` exists and is not a zombie (an ended process its new parent has not reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _ends(pid: int, timeout: float = 30.0) -> bool:
    """Wait for the event "process ``pid`` ended" (up to ``timeout`` s, then False)."""
    deadline = time.monotonic() + timeout
    while _running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _ends_by_itself(worker: int) -> None:
    """Assert that the orphaned ``worker`` ends (SIGKILL it if not, so no test leaves it behind)."""
    try:
        assert _ends(worker), f"the orphaned worker {worker} kept running"
    finally:
        if _running(worker):
            os.kill(worker, signal.SIGKILL)


def _orphan(tmp_path: Path, driver: str) -> int:
    """Start ``driver`` (a script that starts one worker, prints its pid and lives on), read the pid,
    then kill the driver with SIGKILL: no cleanup of its own runs, only the worker's watch can help.
    The worker's pid."""
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(driver).format(root=str(ROOT)))
    p = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, ORPHAN_MARK=str(tmp_path / "mark")))
    worker = int(p.stdout.readline())  # the worker is up: its initializer (and the watch) ran
    assert _running(worker)
    os.kill(p.pid, signal.SIGKILL)
    assert p.wait(30) == -signal.SIGKILL
    return worker


POOL_DRIVER = """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from core.foundations.processes import outbox, run_pool

    def hold(_):
        outbox().put(os.getpid())  # "I am up", to the driver's on_message
        while True:
            signal.pause()

    if __name__ == "__main__":
        run_pool(hold, [0], print, workers=1, threads=1, on_message=lambda pid: print(pid, flush=True))
"""


@needs_proc
def test_a_pool_worker_ends_when_its_parent_is_killed(tmp_path):
    _ends_by_itself(_orphan(tmp_path, POOL_DRIVER))


WARM_DRIVER = """
    import signal, sys
    sys.path.insert(0, {root!r})
    from core.foundations.processes import WorkerProcess

    worker = WorkerProcess("tests.orphan_worker")  # returns once the worker said "ready"
    print(worker.pid, flush=True)
    while True:
        signal.pause()
"""


@needs_proc
def test_a_warm_worker_whose_parent_is_killed_unwinds_through_its_sigterm_handler(tmp_path):
    """The app's worker is busy in a job (not reading its pipe) when the server dies: the watch's
    SIGTERM runs its handler — the job unwinds as on Ctrl-C, locks released — and the worker ends."""
    _ends_by_itself(_orphan(tmp_path, WARM_DRIVER))
    assert (tmp_path / "mark").read_text() == "unwound"


def _raise_on_two(x: int) -> int:
    if x == 2:
        raise ArithmeticError("bad item")
    return 2 * x


def _torch_threads(_: int) -> int:
    import torch

    return torch.get_num_threads()


def test_a_failing_job_is_named_and_the_others_are_delivered():
    done = []
    with pytest.raises(WorkerFailedError, match=r"^1 of 3 jobs failed on the pool executor \(two\): "
                                                r"ArithmeticError: bad item\. The 2 that finished are kept") as info:
        run_pool(_raise_on_two, [1, 2, 3], done.append, workers=2, threads=1, names=["one", "two", "three"],
                 where="pool")
    assert sorted(done) == [2, 6]
    assert isinstance(info.value.__cause__, ArithmeticError)  # the worker's exception, pickled back


@pytest.mark.parametrize("threads", [1, 2])
def test_pool_workers_run_with_the_threads_they_are_given(threads):
    got = []
    run_pool(_torch_threads, [0], got.append, workers=1, threads=threads)
    assert got == [threads]


def test_failures_read_in_one_line():
    assert failure_text(ArithmeticError("bad item")) == "ArithmeticError: bad item"
    assert failure_text(ArithmeticError()) == "ArithmeticError"
    from concurrent.futures.process import BrokenProcessPool

    assert failure_text(BrokenProcessPool("A child process terminated abruptly")).startswith("a worker process died")
    raise_failures("pool", [], 3, 3)  # nothing failed: nothing raised
    with pytest.raises(WorkerFailedError, match=r"^9 of 9 jobs failed on the pool executor \(j0, .*, j7 …\)"):
        raise_failures("pool", [(f"j{k}", ValueError("x")) for k in range(9)], 0, 9)


def test_progress_is_rate_limited_and_the_last_message_always_goes_out():
    sent = []
    report = throttled(sent.append, lambda f: f >= 1.0, every_s=3600.0)
    for k in range(10):
        report(k / 10)
    report(1.0)
    assert sent == [0.0, 1.0]  # the first (nothing sent for an hour before it), then only the last
