"""Worker processes: the one machinery under the project's two uses of them.

* The app's job workers: :mod:`core.jobs.manager` starts each (a :class:`WorkerProcess` running
  ``python -m core.jobs.worker``) and keeps it warm for one job after another; a job can be cancelled
  (signals, :mod:`core.jobs.worker`).
* The ``processes`` executor (:mod:`core.experiment.executor`): a pool of spawned processes whose
  results arrive as they finish (:func:`run_pool`).

What both need, implemented once here: a worker's start (:func:`init_worker`: torch threads capped,
so workers side by side do not oversubscribe the machine; the watch that ends it when its parent
dies, :func:`watch_parent`), progress sent to the parent at a bounded rate (:func:`throttled`), and
failures told in one line (:func:`failure_text`) and, for a batch, collected by name while the other
jobs finish (:func:`raise_failures`). A warm worker that must be cancellable mid-job (:class:`WorkerProcess`)
owns a pipe; a pool worker (:func:`run_pool`) runs one function per item and returns its value.
"""
from __future__ import annotations

import multiprocessing
import os
import queue as queue_module
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

import torch

from core.foundations.device import configure_threads
from core.foundations.errors import WorkerFailedError

T = TypeVar("T")

#: the folder that holds core/ (the checkout's root, or site-packages once installed): a worker started by module
#: name (:class:`WorkerProcess`) imports the project from here
ROOT = Path(__file__).resolve().parents[2]

#: how often a worker looks whether its parent is still alive (seconds)
PARENT_POLL_S = 0.5
#: seconds an orphaned worker's SIGTERM handler gets to unwind before the worker ends regardless
PARENT_GONE_GRACE_S = 10.0
#: a worker's progress messages: at most one per this many seconds (and always the last one)
REPORT_EVERY_S = 0.2
#: seconds a fresh :class:`WorkerProcess` gets to import torch and the library and say it is ready
START_TIMEOUT_S = 120.0
#: how often the pool's parent looks for progress messages while no job finishes (seconds)
POOL_POLL_S = 0.25

#: in a worker: where its jobs send messages to the parent (set by :func:`init_worker`)
_OUTBOX: Any = None


def watch_parent(parent: int) -> threading.Thread:
    """End this process soon after ``parent`` is gone (``kill -9`` included).

    A parent killed with ``kill -9`` runs no cleanup: its workers would train on for nobody, holding
    its stdout. A dead parent re-parents the worker, so its parent id changes: poll for that (portable,
    unlike Linux's PR_SET_PDEATHSIG, which also fires when the *thread* that started the worker ends).
    Then SIGTERM to itself: a worker with a handler (the app's) unwinds as on Ctrl-C, releasing its
    locks; one without (a pool worker) ends at once. Whatever is still alive
    :data:`PARENT_GONE_GRACE_S` later exits.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(PARENT_GONE_GRACE_S)
        os._exit(1)

    thread = threading.Thread(target=watch, name="exit-with-parent", daemon=True)
    thread.start()
    return thread


def init_worker(threads: int | None = None, parent: int | None = None, outbox: Any = None) -> None:
    """A worker process's start: torch's thread pool sized to ``threads`` (None or 0: to the usable
    cores, :func:`~core.foundations.device.configure_threads`), :func:`watch_parent` of ``parent``,
    and ``outbox`` (a queue to the parent, or None) kept for :func:`outbox`. A pool's initializer."""
    global _OUTBOX
    if parent is not None:
        watch_parent(parent)
    if threads:
        torch.set_num_threads(max(1, threads))
    else:
        configure_threads()
    _OUTBOX = outbox


def outbox() -> Any:
    """In a worker: the queue to its parent that :func:`init_worker` was given (None outside a pool,
    or when the parent listens to nothing)."""
    return _OUTBOX


def throttled(send: Callable[[T], None], final: Callable[[T], bool],
              every_s: float = REPORT_EVERY_S) -> Callable[[T], None]:
    """``send`` at most every ``every_s`` seconds, and always a message that ``final`` says is the
    last (a rate-limited last one would leave the parent at its previous figure): training loops
    report every batch, far more often than a progress bar needs."""
    # The first message always goes out: monotonic()'s origin is arbitrary (on Linux, the machine's
    # boot), so a clock started at 0 would hold it back on a machine booted less than every_s ago.
    last: list[float | None] = [None]

    def report(message: T) -> None:
        now = time.monotonic()
        previous = last[0]
        if previous is None or final(message) or now - previous >= every_s:
            last[0] = now
            send(message)

    return report


def failure_text(exc: BaseException) -> str:
    """A failure in one line: ``"TypeName: message"`` (``"TypeName"`` when there is no message); a
    pool broken by a worker's death is told as such (its own message says nothing of why)."""
    if type(exc).__name__ == "BrokenProcessPool":
        return "a worker process died (killed, out of memory or crashed) and took the pool with it"
    return f"{type(exc).__name__}: {exc}".strip().rstrip(":")


def raise_failures(where: str, failures: Sequence[tuple[str, BaseException]], finished: int, total: int) -> None:
    """One :class:`~core.foundations.errors.WorkerFailedError` for the jobs of a batch that failed (if
    any), naming them, the first cause, and how many finished (those were delivered already)."""
    if not failures:
        return
    names = ", ".join(name for name, _ in failures[:8]) + (" …" if len(failures) > 8 else "")
    first = failures[0][1]
    raise WorkerFailedError(
        f"{len(failures)} of {total} jobs failed on the {where} executor ({names}): {failure_text(first)}. "
        f"The {finished} that finished are kept (cached); a rerun does only the rest.") from first


def run_pool(function: Callable[[Any], Any], items: Sequence[Any], on_done: Callable[[Any], None], *,
             workers: int, threads: int, names: Sequence[str] | None = None,
             on_message: Callable[[Any], None] | None = None, where: str = "processes") -> None:
    """``on_done(function(item))`` for every item, on a pool of ``workers`` spawned processes (each
    started by :func:`init_worker` with ``threads`` torch threads and this process as the parent it
    ends with), delivered as the jobs finish (in submission order among those finishing together:
    reproducible reports). While the jobs run, what they put on :func:`outbox` reaches ``on_message``
    here (no queue at all without one).

    A job that raises, or a worker that dies, loses none of the others: the pool is drained, then one
    :class:`~core.foundations.errors.WorkerFailedError` names what failed (``names``, default
    ``item k``). A dead worker breaks the whole pool, so every job still pending fails with it.
    ``function`` must be a module-level function and the items plain data: they travel by pickle.
    """
    if not items:
        return
    names = list(names) if names is not None else [f"item {k}" for k in range(len(items))]
    failures: list[tuple[str, BaseException]] = []
    finished = 0
    ctx = multiprocessing.get_context("spawn")  # no forked torch/diskcache state in the workers
    messages = ctx.Queue() if on_message is not None else None  # handed to the workers as they start

    def drain() -> None:
        if messages is None or on_message is None:  # no queue without a receiver
            return
        while True:
            try:
                message = messages.get_nowait()
            except queue_module.Empty:
                return
            on_message(message)

    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=init_worker,
                             initargs=(threads, os.getpid(), messages)) as pool:
        futures = {pool.submit(function, item): name for item, name in zip(items, names)}
        order = {future: k for k, future in enumerate(futures)}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=POOL_POLL_S, return_when=FIRST_COMPLETED)
            drain()
            for future in sorted(done, key=order.__getitem__):
                try:
                    result = future.result()
                except Exception as exc:  # noqa: BLE001 - reported below, after the others are kept
                    failures.append((futures[future], exc))
                    continue
                on_done(result)
                finished += 1
    if messages is not None:
        messages.close()
    raise_failures(where, failures, finished, len(items))


class WorkerProcess:
    """A long-lived worker: ``python -m MODULE FD PARENT_PID`` (a fresh interpreter, as spawn gives),
    with this process's end of a socket pair as :attr:`conn` (a
    :class:`~multiprocessing.connection.Connection`; the worker's end is the inherited ``FD``).

    The worker calls :func:`init_worker` with ``PARENT_PID`` and must first send ``("ready", pid)``;
    this waits for it (:data:`START_TIMEOUT_S`), so a worker that cannot start is a ``RuntimeError``
    here, not a job lost later. It runs in its own session: Ctrl-C in the parent's terminal reaches
    the parent only, which then ends its workers (:meth:`stop`). ``env`` is added to this process's
    environment, with the repository on ``PYTHONPATH``.
    """

    def __init__(self, module: str, env: dict[str, str] | None = None) -> None:
        mine, theirs = socket.socketpair()
        # ``module`` lies under the folder that holds core/ (the checkout, or site-packages once installed)
        path = [str(ROOT), os.environ.get("PYTHONPATH", "")]
        full = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join(filter(None, path))}
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", module, str(theirs.fileno()), str(os.getpid())],
                pass_fds=(theirs.fileno(),), cwd=str(ROOT), start_new_session=True, env=full,
            )
        finally:
            theirs.close()
        self.conn = Connection(mine.detach())
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.conn.poll(0.2):  # torch and core import before "ready"
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"the worker process did not start (exit code {self.proc.returncode})")
        msg = self.conn.recv()
        if msg[0] != "ready":
            self.kill()
            raise RuntimeError(f"unexpected first message from the worker: {msg[0]!r}")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the worker if it still runs (how a job is cancelled)."""
        if self.alive():
            try:
                self.proc.send_signal(sig)
            except ProcessLookupError:
                pass

    def stop(self, timeout: float = 5.0) -> None:
        """End the worker: politely (``("stop",)``), then SIGTERM (twice), then SIGKILL."""
        try:
            self.conn.send(("stop",))
        except (OSError, EOFError):
            pass
        for sig in (None, signal.SIGTERM, signal.SIGTERM):
            if sig is not None:
                self.signal(sig)
            try:
                self.proc.wait(timeout)
                break
            except subprocess.TimeoutExpired:
                continue
        self.kill()

    def kill(self) -> None:
        """SIGKILL the worker (if alive), reap it and close the pipe."""
        if self.alive():
            self.proc.kill()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        try:
            self.conn.close()
        except OSError:
            pass
