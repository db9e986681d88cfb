"""The app's long computations: a small queue served by worker processes, shared by every session.

Training in a thread of the Streamlit server would share one interpreter with every page's reruns, so a job
runs in a worker process (:mod:`core.jobs.worker`, the CLI's entry points and thread count) and the server only
moves messages. No page trains or fits in the server process.

* **One job per (cache folder, kind, config hash, parameters)**: the same request from any click order or
  browser tab attaches to the same job. Kinds: :data:`KINDS` (:data:`core.jobs.worker.JOB_KINDS`).
* **A fair queue.** Jobs wait for one of ``MIA_JOB_WORKERS`` slots (default 1); the next job is taken
  round-robin over the owners of queued jobs. A slot keeps its worker warm for ``IDLE_S`` seconds.
* **Owners.** A job belongs to the sessions that submitted it (:attr:`Job.owners`); a second owner attaches
  to it. :class:`SessionJobs` is one owner's view, and its Cancel stops the job only when no owner is left.
  An owner holds at most ``MIA_JOB_QUOTA`` jobs (:class:`JobQuotaError`); a lecturer (``MIA_LECTURERS``)
  sees and cancels every job.
* **Progress** arrives from the worker over a pipe as :class:`~core.foundations.progress.ProgressEvent`.
* **Cancel** stops a running job at its next progress report (a second request, 3 s later, at once);
  what is already cached stays cached, so the same job again resumes from it.
* **Shutdown** (:meth:`JobManager.shutdown`, registered with ``atexit``) cancels everything and ends the
  workers; a worker also ends when the server dies (:func:`core.foundations.processes.watch_parent`).
"""
from __future__ import annotations

import itertools
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence, Union

from core.analyses.repeats import repeat_seed
from core.defenses.registry import get_training, training_names
from core.foundations.config import MAX_REPEATS, ExperimentConfig, config_changes
from core.foundations.device import usable_cores
from core.foundations.environment import check_environment, env_whole_number
from core.foundations.errors import ConfigError, MIAError
from core.foundations.names import ARCH_NAMES
from core.foundations.paths import cache_dir
from core.foundations.processes import WorkerProcess, failure_text
from core.foundations.progress import ProgressEvent
from core.jobs.worker import JOB_ENV, JOB_KINDS, modules_of
from core.tasks import get_task

if TYPE_CHECKING:
    from core.jobs.own_model_audit import AuditRequest

#: what a job computes: an experiment's config, or what keys a job where the queue takes one (an own-model audit's
#: request: its ``config_hash``, ``to_dict``, ``task``, ``arch`` and ``preset`` as a config's)
JobInput = Union[ExperimentConfig, "AuditRequest"]

QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
#: what a job can compute: the job-kind registry (:func:`core.jobs.worker.register_job_kind`)
KINDS = JOB_KINDS
ACTIVE = (QUEUED, RUNNING)

#: a warm worker with nothing to do ends after this many seconds
IDLE_S = 600.0
#: seconds between the polite cancel request, the immediate one and killing the worker
CANCEL_GRACE_S = 3.0
KILL_AFTER_S = 10.0
#: finished jobs remembered (for the sidebar and for error messages)
HISTORY = 50


#: queued or running jobs one owner may hold when ``MIA_JOB_QUOTA`` is not set: room for any one page's
#: largest submission (a sweep's values, repeats of FFNN and RNN), none for a class's worth of them
DEFAULT_QUOTA = 60


class JobQuotaError(ConfigError):
    """A submission that would take an owner past its quota of queued and running jobs (nothing is queued)."""


def default_quota() -> int:
    """Queued and running jobs per owner: ``$MIA_JOB_QUOTA`` if set, else :data:`DEFAULT_QUOTA`."""
    return env_whole_number("MIA_JOB_QUOTA") or DEFAULT_QUOTA


def default_workers() -> int:
    """Training slots: ``$MIA_JOB_WORKERS`` if set, else 1 (a bad value: :class:`ConfigError`, one line)."""
    return env_whole_number("MIA_JOB_WORKERS") or 1


def _env_now() -> dict[str, str]:
    return {name: os.environ.get(name, "") for name in JOB_ENV}


def freeze_params(params: dict[str, Any] | None) -> str:
    """A job's parameters as canonical JSON (sorted keys; part of its key): JSON-able values only."""
    if not params:
        return ""
    try:
        return json.dumps(params, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"job parameters must be plain JSON values: {exc}") from None


def thaw_params(params: str) -> dict[str, Any]:
    """The inverse of :func:`freeze_params`."""
    return json.loads(params) if params else {}


def job_key(config: JobInput, kind: str = "experiment", cache: str | os.PathLike | None = None,
            params: dict[str, Any] | str | None = None) -> str:
    """A job's identity: the cache it writes to, what it computes, the config's hash and the parameters."""
    KINDS.get(kind)  # a kind nobody registered: ConfigError (a ValueError) "unknown job kind 'x'; known: …"
    frozen = params if isinstance(params, str) else freeze_params(params)
    tail = f"|{frozen}" if frozen else ""
    return f"{Path(cache) if cache is not None else cache_dir()}|{kind}|{config.config_hash}{tail}"




def _parameter_symbols() -> dict[str, str]:
    """Config field -> the symbol of the training defense that sets it (``weight_decay`` -> λ,
    ``dp_noise_multiplier`` -> σ, ``clip_eps`` -> the clip's ε), read off each defense's own ``updates``."""
    out: dict[str, str] = {}
    probe = 1.2345
    for name in training_names():
        defense = get_training(name)
        for target in (False, True):
            if target and getattr(defense, "target", None) is None:
                continue
            symbol = defense.parameter_of(target).symbol
            out.update({k: ("target " if target else "") + symbol
                        for k, v in defense.updates(probe, target).items() if v == probe})
    return out


def run_differences(c: ExperimentConfig) -> str:
    """What a run changed from its preset, named as the pages name it: "repeat 3" (the seed of
    core.analyses.repeats.repeat_seed for r = 2, counted from 1), "σ = 1" for a sweep's point, "epochs=4" for any other field; ""
    for the preset as it is. The sidebar tells apart the jobs of one sweep or one set of repeats with it
    (without it every one of them would read "image · RNN (quick)")."""
    try:
        base = get_task(c.task).make_config(c.arch, c.preset)
    except (MIAError, KeyError, ValueError):
        return ""
    changes = config_changes(base, c)
    parts = []
    if "seed" in changes:
        r = next((r for r in range(1, MAX_REPEATS) if repeat_seed(base.seed, r) == c.seed), None)
        # counted from 1 as Train & attack counts them ("repeats 2…N" beside the run itself, repeat 1)
        parts.append(f"repeat {r + 1}" if r is not None else f"seed {c.seed}")
    symbols = _parameter_symbols()
    # DP-SGD's mode switched on: the value it runs at may be the config's default, so not among the changes
    dp = changes.get("dp")
    mode_field = {"sigma": "dp_noise_multiplier", "epsilon": "dp_epsilon"}.get(dp) if isinstance(dp, str) else None
    if mode_field:
        changes.setdefault(mode_field, getattr(c, mode_field))
    for k, v in changes.items():
        if k in ("seed", "repeats", "match_utility", "dp"):  # seed above; repeats/match: not what a job trains
            continue
        parts.append(f"{symbols[k]} = {v:g}" if k in symbols and isinstance(v, (int, float)) else f"{k}={v}")
    return ", ".join(parts)


@dataclass(eq=False)
class Job:
    """One queued, running or finished computation for one config."""

    id: int
    key: str
    config: JobInput
    kind: str = "experiment"
    params: str = ""  # canonical JSON (freeze_params)
    env: dict[str, str] = field(default_factory=_env_now)
    state: str = QUEUED
    submitted: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    event: ProgressEvent | None = None
    event_at: float | None = None
    result: Any = None
    error: str | None = None
    cancel_requested: bool = False
    worker_pid: int | None = None
    #: who submitted it (session or log-in ids, :mod:`ui.session`); empty: the server itself (a test, the CLI)
    owners: set[str] = field(default_factory=set)

    @property
    def label(self) -> str:
        c = self.config
        p = thaw_params(self.params)
        kind = KINDS.find(self.kind)
        what = kind.describe(p) if kind is not None else f" · {self.kind}"
        # what differs from the preset: repeat r, σ, λ, … (an audit's request has no preset to differ from)
        differs = run_differences(c) if isinstance(c, ExperimentConfig) else ""
        return f"{c.task} · {ARCH_NAMES.get(c.arch, c.arch)} ({c.preset}{' · ' + differs if differs else ''}){what}"

    @property
    def active(self) -> bool:
        return self.state in ACTIVE

    @property
    def done(self) -> bool:
        return not self.active

    @property
    def summary(self) -> dict[str, Any] | None:
        return self.result if self.kind == "experiment" and self.state == DONE else None

    @property
    def fraction(self) -> float:
        return 1.0 if self.state == DONE else min(self.event.overall_fraction, 1.0) if self.event else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left, from the worker's last event, aged by the time since it arrived."""
        if self.event is None or self.event.eta_s is None:
            return None
        return max(self.event.eta_s - (time.time() - (self.event_at or time.time())), 0.0)

    @property
    def elapsed_s(self) -> float:
        if self.started is None:
            return 0.0
        return (self.finished or time.time()) - self.started


class JobGroup:
    """The jobs of a page's selection (one per config), read as one: what pages poll."""

    def __init__(self, configs: list[JobInput], jobs: Sequence[Job | None]):
        self.configs, self.jobs = configs, jobs

    @property
    def done(self) -> bool:
        return all(j is None or j.done for j in self.jobs)

    @property
    def error(self) -> str | None:
        errors = [f"{j.label}: {j.error}" for j in self.jobs if j is not None and j.state == FAILED]
        return "; ".join(errors) or None

    @property
    def running(self) -> Job | None:
        return next((j for j in self.jobs if j is not None and j.state == RUNNING), None)

    @property
    def event(self) -> ProgressEvent | None:
        job = self.running
        return job.event if job else None

    @property
    def label(self) -> str:
        job = self.running or next((j for j in self.jobs if j is not None), None)
        return job.label if job else ""

    @property
    def summaries(self) -> list[dict[str, Any]]:
        return [j.summary for j in self.jobs if j is not None and j.summary is not None]


def worker_threads(slots: int, cores: int | None = None) -> int:
    """Torch threads of each worker process: the usable cores less one, shared by the slots, at least 1. The
    core left over is the server's and the browser's: a worker using every core spins whenever they run."""
    return max(1, ((cores or usable_cores()) - 1) // max(1, slots))


class _Worker(WorkerProcess):
    """One app worker process (:mod:`core.jobs.worker`) and the server's end of its pipe."""

    def __init__(self, threads: int | None = None) -> None:
        check_environment()  # a bad MIA_* value: one message here, not a worker dying at start again and again
        env = {"MIA_WORKER_THREADS": str(threads)} if threads and not os.environ.get("MIA_WORKER_THREADS") else {}
        super().__init__("core.jobs.worker", env)  # run from the folder that holds core/, checkout or installed
        self.idle_since = time.monotonic()  # a warm worker with nothing to do ends after IDLE_S


class JobManager:
    """The server-wide job queue (one per Streamlit server: ``ui.shared.job_manager``)."""

    def __init__(self, workers: int | None = None, quota: int | None = None) -> None:
        self.n_workers = workers or default_workers()
        self.quota = quota or default_quota()
        self._cond = threading.Condition()
        self._ids = itertools.count(1)
        self._jobs: dict[str, Job] = {}  # latest job per key
        self._queue: deque[Job] = deque()
        self._history: deque[Job] = deque(maxlen=HISTORY)
        self._running: list[Job | None] = [None] * self.n_workers
        self._workers: list[_Worker | None] = [None] * self.n_workers
        self._stopping = False
        self._warm_wanted = False
        #: the fair queue's turns: when each owner last had a job started (never: absent, first in line)
        self._turns = itertools.count()
        self._last_turn: dict[str, int] = {}
        self._threads = [threading.Thread(target=self._slot_loop, args=(i,), daemon=True, name=f"mia-slot-{i}")
                         for i in range(self.n_workers)]
        for t in self._threads:
            t.start()

    # ------------------------------------------------------------------ what pages call
    @staticmethod
    def key_of(configs: Iterable[ExperimentConfig]) -> str:
        """A selection's key, independent of its order (kept for pages that poll a selection)."""
        return "+".join(sorted({c.config_hash for c in configs}))

    def submit(self, configs: Iterable[JobInput], kind: str = "experiment",
               params: dict[str, Any] | None = None, owner: str | None = None, capped: bool = True) -> JobGroup:
        """Queue a job of ``kind`` (with ``params``) for each config unless one is queued or running
        already (then attach to it); ``owner`` becomes one of each job's owners, held to :attr:`quota` unless
        not ``capped`` (a lecturer). A config whose last job finished is queued again (resume or retry).

        Raises:
            JobQuotaError: ``owner`` would hold more than :attr:`quota` queued or running jobs (nothing queued).
        """
        configs = list(configs)
        frozen = freeze_params(params)
        jobs = []
        with self._cond:
            if self._stopping:
                raise RuntimeError("the job manager is shut down")
            if owner is not None and capped:
                keys = {job_key(cfg, kind, params=frozen) for cfg in configs}
                held = {j.key for j in self._active_locked() if owner in j.owners}
                wanted = len(held | keys)
                if wanted > self.quota:
                    raise JobQuotaError(
                        f"this would make {wanted} queued or running jobs of yours; a session holds at most "
                        f"{self.quota} (MIA_JOB_QUOTA): cancel some, or wait for them to finish")
            for cfg in configs:
                key = job_key(cfg, kind, params=frozen)
                job = self._jobs.get(key)
                if job is None or not job.active:
                    job = Job(next(self._ids), key, cfg, kind, frozen)
                    self._jobs[key] = job
                    self._queue.append(job)
                if owner is not None:
                    job.owners.add(owner)
                jobs.append(job)
            self._cond.notify_all()
        return JobGroup(configs, jobs)

    def group(self, configs: Iterable[JobInput], kind: str = "experiment",
              params: dict[str, Any] | None = None) -> JobGroup:
        configs = list(configs)
        return JobGroup(configs, [self.job(c, kind, params) for c in configs])

    def job(self, config: JobInput, kind: str = "experiment", params: dict[str, Any] | None = None) -> Job | None:
        """The latest job of ``config`` of ``kind`` with ``params`` (in the current cache folder), or None."""
        with self._cond:
            return self._jobs.get(job_key(config, kind, params=params))

    def get(self, key: str) -> JobGroup | None:
        """The jobs of a selection key from :meth:`key_of` (None if none of its configs has one)."""
        hashes = set(key.split("+"))
        prefix = f"{cache_dir()}|experiment|"
        with self._cond:
            jobs = [j for k, j in self._jobs.items() if k.startswith(prefix) and j.config.config_hash in hashes]
        if not jobs:
            return None
        return JobGroup([j.config for j in jobs], jobs)

    def active(self) -> list[Job]:
        """Running jobs, then queued ones in the order they will start."""
        with self._cond:
            return self._active_locked()

    def _active_locked(self) -> list[Job]:
        return [j for j in self._running if j is not None] + self._fair_order()

    def place(self, job: Job) -> int | None:
        """1 for the next job to start, 2 for the one after, …; None unless queued."""
        with self._cond:
            for i, j in enumerate(self._fair_order()):
                if j is job:
                    return i + 1
        return None

    @staticmethod
    def _turn_of(job: Job, last_turn: dict[str, int]) -> int:
        """When the job's owner that waited longest last had a job started (-1: never; the server's own jobs
        count as one owner)."""
        return min((last_turn.get(o, -1) for o in job.owners), default=last_turn.get("", -1))

    def _pick_locked(self, last_turn: dict[str, int], queue: list[Job]) -> int:
        """The index in ``queue`` of the job to start next: round-robin over owners, submission order within one."""
        return min(range(len(queue)), key=lambda i: (self._turn_of(queue[i], last_turn), i))

    def _fair_order(self) -> list[Job]:
        """The queued jobs in the order the slots will start them (call with the lock held)."""
        queue, turns, order = list(self._queue), dict(self._last_turn), []
        tick = itertools.count(len(self._last_turn) and max(self._last_turn.values()) + 1)
        while queue:
            job = queue.pop(self._pick_locked(turns, queue))
            order.append(job)
            now = next(tick)
            for o in job.owners or {""}:
                turns[o] = now
        return order

    def recent(self, seconds: float = 600.0) -> list[Job]:
        """Jobs that finished in the last ``seconds``, newest first."""
        now = time.time()
        with self._cond:
            return [j for j in reversed(self._history) if j.finished and now - j.finished < seconds]

    def cancel(self, job: Job, owner: str | None = None) -> None:
        """Take a queued job off the queue, or stop a running one (cached models are kept). With ``owner``:
        take that owner off the job, which stops only when no owner is left (another session's wait is kept)."""
        with self._cond:
            if owner is not None:
                job.owners.discard(owner)
                if job.owners:
                    self._cond.notify_all()
                    return
            if job.state == QUEUED:
                try:
                    self._queue.remove(job)
                except ValueError:
                    pass
                self._end(job, CANCELLED)
            elif job.state == RUNNING:
                job.cancel_requested = True
            self._cond.notify_all()

    def prewarm(self) -> None:
        """Start a worker process now if none is up (the next click then trains at once)."""
        with self._cond:
            self._warm_wanted = True
            self._cond.notify_all()

    def worker_pids(self) -> list[int]:
        with self._cond:
            return [w.pid for w in self._workers if w is not None and w.alive()]

    def shutdown(self, timeout: float = 15.0) -> None:
        """Cancel every job, end the workers and the slot threads (idempotent)."""
        with self._cond:
            if self._stopping:
                return
            self._stopping = True
            while self._queue:
                self._end(self._queue.popleft(), CANCELLED)
            for job in self._running:
                if job is not None:
                    job.cancel_requested = True
            self._cond.notify_all()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(deadline - time.monotonic(), 0.1))
        for i, w in enumerate(self._workers):  # a slot thread that did not make it in time
            if w is not None:
                w.kill()
                self._workers[i] = None

    # ------------------------------------------------------------------ the slots
    def _end(self, job: Job, state: str, error: str | None = None) -> None:
        """Mark ``job`` finished (call with the lock held)."""
        job.state, job.error, job.finished = state, error, time.time()
        self._history.append(job)

    def _next(self, slot: int) -> tuple[bool, Job | None]:
        """Wait for work: (False, None) to end the slot, (True, job) to run it, (True, None) to warm up."""
        while True:
            idle: _Worker | None = None
            with self._cond:
                if self._stopping:
                    return False, None
                if self._queue:
                    job = self._queue[self._pick_locked(self._last_turn, list(self._queue))]
                    self._queue.remove(job)
                    now = next(self._turns)
                    for o in job.owners or {""}:
                        self._last_turn[o] = now
                    job.state, job.started = RUNNING, time.time()
                    self._running[slot] = job
                    return True, job
                worker = self._workers[slot]
                if worker is None and self._warm_wanted:
                    self._warm_wanted = False
                    return True, None
                if worker is not None and (not worker.alive() or time.monotonic() - worker.idle_since > IDLE_S):
                    idle, self._workers[slot] = worker, None
                else:
                    self._cond.wait(timeout=5.0)
            if idle is not None:
                idle.stop()

    def _slot_loop(self, slot: int) -> None:
        while True:
            go, job = self._next(slot)
            if not go:
                break
            try:
                worker = self._worker(slot)
                if job is not None:
                    self._serve(slot, worker, job)
            except Exception as exc:  # the worker did not start or died: report it on the job
                traceback.print_exc()
                if job is not None:
                    with self._cond:
                        if job.active:
                            self._end(job, FAILED, failure_text(exc))
            finally:
                with self._cond:
                    self._running[slot] = None
                    self._cond.notify_all()
        last = self._workers[slot]
        if last is not None:
            last.stop()
            self._workers[slot] = None

    def _worker(self, slot: int) -> _Worker:
        worker = self._workers[slot]
        if worker is None or not worker.alive():
            if worker is not None:
                worker.kill()
            self._workers[slot] = None
            worker = _Worker(worker_threads(self.n_workers))
            with self._cond:
                self._workers[slot] = worker
        return worker

    def _serve(self, slot: int, worker: _Worker, job: Job) -> None:
        """Run ``job`` on ``worker`` and follow its messages until it ends."""
        job.worker_pid = worker.pid
        params = thaw_params(job.params)
        try:  # the modules that registered the job's kind (and analysis): from this server's registries
            modules = modules_of(job.kind, params)
        except Exception:  # the worker then reports what it does not know
            traceback.print_exc()
            modules = ()
        worker.conn.send(("run", job.id, job.kind, job.config, job.env, params, modules))
        asked_at, asked_twice = None, False
        while True:
            if job.cancel_requested:
                sig = signal.SIGTERM if self._stopping else signal.SIGUSR1
                now = time.monotonic()
                if asked_at is None:
                    asked_at = now
                    worker.signal(sig)
                elif now - asked_at > KILL_AFTER_S:
                    worker.kill()
                    self._workers[slot] = None
                    with self._cond:
                        self._end(job, CANCELLED)
                    return
                elif not asked_twice and now - asked_at > CANCEL_GRACE_S:
                    worker.signal(sig)  # the second request stops it at once
                    asked_twice = True
            try:
                ready = worker.conn.poll(0.2)
                msg = worker.conn.recv() if ready else None
            except (EOFError, OSError):
                msg = None
                ready = True
            if msg is None:
                if ready or not worker.alive():
                    code = worker.proc.poll()
                    print(f"mia: worker process {worker.pid} ended (exit code {code}) during {job.label}",
                          file=sys.stderr, flush=True)
                    worker.kill()
                    self._workers[slot] = None
                    with self._cond:
                        if job.cancel_requested:
                            self._end(job, CANCELLED)
                        else:
                            self._end(job, FAILED, f"the worker process ended unexpectedly (exit code {code})")
                    return
                continue
            kind, job_id = msg[0], msg[1]
            if job_id != job.id:
                continue
            if kind == "progress":
                job.event, job.event_at = msg[2], time.time()
                continue
            with self._cond:
                if kind == "done":
                    job.result = msg[2]
                    self._end(job, DONE)
                elif kind == "error":
                    self._end(job, FAILED, msg[2])
                else:
                    self._end(job, CANCELLED)
            worker.idle_since = time.monotonic()
            if self._stopping:
                worker.stop()
                self._workers[slot] = None
            return


class SessionJobs:
    """One owner's view of the server's :class:`JobManager` (what every page gets from ``ui.shared.job_manager``):
    the same calls, but only the owner's jobs are listed or found, a submission makes the owner one of the
    jobs' owners (its quota applies), and Cancel takes the owner off a job (:meth:`JobManager.cancel`). A
    lecturer's view (``lecturer=True``) lists every job and its Cancel stops the job for everybody; the view
    of ``owner=None`` (the server itself: a test, a script outside a browser session) is a lecturer's."""

    def __init__(self, manager: JobManager, owner: str | None, lecturer: bool = False,
                 on_submit: Callable[[list[JobInput], str], None] | None = None) -> None:
        self.manager, self.owner, self.lecturer = manager, owner, lecturer or owner is None
        self._on_submit = on_submit  # told each owned submission (ui.shared records runs on user data as the owner's)

    @property
    def n_workers(self) -> int:
        return self.manager.n_workers

    @property
    def quota(self) -> int:
        return self.manager.quota

    key_of = staticmethod(JobManager.key_of)

    def sees(self, job: Job | None) -> bool:
        """Whether this view lists ``job``: a lecturer every job, an owner the jobs it owns and the server's own
        (submitted outside any session, e.g. a course's pre-warm: nobody's private work)."""
        return job is not None and (self.lecturer or not job.owners or self.owner in job.owners)

    def may_cancel(self, job: Job | None) -> bool:
        """Whether this view's Cancel acts on ``job``: a lecturer's on every job, an owner's on its own."""
        return job is not None and (self.lecturer or self.owner in job.owners)

    def submit(self, configs: Iterable[JobInput], kind: str = "experiment",
               params: dict[str, Any] | None = None) -> JobGroup:
        """:meth:`JobManager.submit` as this owner (a lecturer's submissions are owned and counted too, but not capped)."""
        configs = list(configs)
        group = self.manager.submit(configs, kind, params, owner=self.owner, capped=not self.lecturer)
        if self.owner is not None and self._on_submit is not None:
            self._on_submit(configs, self.owner)
        return group

    def job(self, config: JobInput, kind: str = "experiment", params: dict[str, Any] | None = None) -> Job | None:
        job = self.manager.job(config, kind, params)
        return job if self.sees(job) else None

    def group(self, configs: Iterable[JobInput], kind: str = "experiment",
              params: dict[str, Any] | None = None) -> JobGroup:
        configs = list(configs)
        return JobGroup(configs, [self.job(c, kind, params) for c in configs])

    def get(self, key: str) -> JobGroup | None:
        group = self.manager.get(key)
        if group is None:
            return None
        jobs = [j for j in group.jobs if j is not None and self.sees(j)]
        return JobGroup([j.config for j in jobs], jobs) if jobs else None

    def active(self) -> list[Job]:
        return [j for j in self.manager.active() if self.sees(j)]

    def place(self, job: Job) -> int | None:
        """The job's place in the whole server's queue (other sessions' jobs ahead of it count)."""
        return self.manager.place(job)

    def recent(self, seconds: float = 600.0) -> list[Job]:
        return [j for j in self.manager.recent(seconds) if self.sees(j)]

    def cancel(self, job: Job) -> None:
        """A lecturer stops the job for everybody; an owner leaves it (it stops when no owner is left); another
        session's job (or the server's own, for a non-lecturer) is left alone."""
        if not self.may_cancel(job):
            return
        self.manager.cancel(job, owner=None if self.lecturer else self.owner)

    def prewarm(self) -> None:
        self.manager.prewarm()

    def worker_pids(self) -> list[int]:
        return self.manager.worker_pids()
