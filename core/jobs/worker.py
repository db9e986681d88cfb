"""The worker process that trains and fits for the app: ``python -m core.jobs.worker FD SERVER_PID``
(started by :mod:`core.jobs.manager`). Job kinds are a registry, :data:`JOB_KINDS` (:func:`register_job_kind`).

It never imports Streamlit. The server talks to it over the inherited socket ``FD`` (a
:class:`multiprocessing.connection.Connection` whose ends only these two processes hold) with pickled tuples:

* server → worker: ``("run", job_id, kind, config, env, params, modules)`` and ``("stop",)``;
* worker → server: ``("ready", pid)``, then per job ``("progress", job_id, ProgressEvent)`` … and one of
  ``("done", job_id, result)``, ``("error", job_id, message)``, ``("cancelled", job_id)``.

``SIGUSR1`` cancels the running job, ``SIGTERM`` ends the worker: a first signal stops the job at its next
progress report (never mid cache write), a second at once; either way it unwinds like Ctrl-C, so locks are
released and cached models stay. The worker runs in its own session and ends when the server process disappears
(:mod:`core.foundations.processes`).
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import os
import signal
import sys
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Callable

from core.foundations.config import MAX_SENSITIVITY_PAIRS
from core.foundations.environment import env_whole_number
from core.foundations.errors import ConfigError
from core.foundations.registry import Registry
from core.tasks import get_task

#: environment variables a job carries from the server (its value at submit time; "" = unset)
JOB_ENV = ("MIA_CACHE_DIR", "MIA_DATA_ROOT", "MIA_DEVICE")
#: niceness added to the worker (``$MIA_WORKER_NICE``, default 0: it trains as fast as the CLI; the
#: server stays responsive anyway, being another process that mostly sleeps)
def niceness() -> int:
    """``$MIA_WORKER_NICE`` (0..19), 0 when unset; a bad value is a ConfigError (the server checks
    every ``MIA_*`` variable before it starts a worker: :func:`core.foundations.environment.check_environment`)."""
    return env_whole_number("MIA_WORKER_NICE") or 0


class JobCancelled(BaseException):
    """Raised in the worker's main thread by SIGUSR1 (cancel the job) or SIGTERM (end)."""


class WorkerExit(JobCancelled):
    pass


_state = {"running": False, "cancel": False, "exit": False}
_SIGNALS = {signal.SIGUSR1, signal.SIGTERM}


def _on_cancel(signum, frame):
    if not _state["running"]:
        return  # a cancel that arrived after its job ended
    if _state["cancel"]:
        raise JobCancelled()
    _state["cancel"] = True


def _on_term(signum, frame):
    if not _state["running"] or _state["exit"]:
        raise WorkerExit()
    _state["exit"] = _state["cancel"] = True


def _checkpoint() -> None:
    """Where a requested cancel takes effect (called with every progress report)."""
    if _state["exit"]:
        raise WorkerExit()
    if _state["cancel"]:
        raise JobCancelled()


def _send(conn: Connection, msg: tuple) -> None:
    """Send with the cancel signals held back, so a message is never cut in half."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        conn.send(msg)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _send_progress(conn: Connection, job_id: int, event: Any) -> None:
    _send(conn, ("progress", job_id, event))


def _preload_tasks() -> None:
    """Import every task module (their libraries take seconds to import) before the first job."""
    try:
        from core.tasks import available_tasks, get_task

        for name in available_tasks():
            get_task(name)
    except Exception:  # only a head start; the job imports what it needs anyway
        pass


def _set_env(env: dict[str, str]) -> None:
    for name in JOB_ENV:
        value = env.get(name, "")
        if value:
            os.environ[name] = value
        else:
            os.environ.pop(name, None)


def _one_stage(stage: str, progress):
    """A fraction callback for work that reports ``fraction`` only: one stage of a
    :class:`~core.foundations.progress.ProgressTracker`, so the page gets stage, fraction and a measured-rate ETA
    (and every report is a cancel checkpoint, through ``progress``)."""
    from core.foundations.progress import ProgressTracker

    tracker = ProgressTracker([(stage, 1.0)], progress)
    tracker.update(stage, 0.0, force=True)
    # the last report always goes out (a rate-limited 1.0 would leave the page at its previous figure)
    return lambda fraction: tracker.update(stage, float(fraction), force=float(fraction) >= 1.0)


# ---------------------------------------------------------------------------- the job kinds
@dataclass(frozen=True)
class JobKind:
    """One kind of job: ``run(config, progress, params)`` → the job's result (pickled back to the
    server); ``label(params)`` → what the page's job list adds to the config's name; ``needs(params)``
    → the modules whose import registers what a job of this kind looks up (the ``analysis`` kind: the
    module that registered analysis ``params["name"]``).

    Before a job the worker imports the modules the server names from its own registries (:func:`modules_of`),
    so a kind registered on import is known in every worker; such a module must be importable by name there.
    Only code registers a kind; the server refuses a name it has not registered, so nothing a browser sends
    names code or a module.
    """

    name: str
    run: Callable[[Any, Any, dict[str, Any]], Any]
    label: Callable[[dict[str, Any]], str] | None = None
    needs: Callable[[dict[str, Any]], tuple[str, ...]] | None = None

    def describe(self, params: dict[str, Any]) -> str:
        return self.label(params) if self.label else f" · {self.name}"


#: every job kind, by name (:data:`core.jobs.manager.KINDS` is this registry; an unknown name: ConfigError)
JOB_KINDS: Registry[JobKind] = Registry("job kind")


def register_job_kind(kind: JobKind) -> JobKind:
    """Add a job kind; a name taken by another registration is refused, and so is a function a worker
    could not import (defined in ``__main__``) — each a :class:`ConfigError`."""
    module = getattr(kind.run, "__module__", None)
    if module is None or module == "__main__" != __name__:  # (the worker itself runs as __main__)
        raise ConfigError(f"job kind {kind.name}: its function must live in a module the worker can import")
    return JOB_KINDS.register(kind.name, kind)  # a name another kind holds: ConfigError


def unregister_job_kind(name: str) -> None:
    """Remove a job kind (a test's toy)."""
    JOB_KINDS.unregister(name)


def modules_of(kind: str, params: dict[str, Any]) -> tuple[str, ...]:
    """The modules a worker imports before a job of ``kind`` (the server computes them from its
    registries and sends them with the job): the one that defines the kind's function and its ``needs``."""
    entry = JOB_KINDS.get(kind)
    return tuple(dict.fromkeys((entry.run.__module__, *(entry.needs(params) if entry.needs else ()))))


def _experiment(config: Any, progress, params: dict[str, Any]) -> Any:
    """``run_experiment`` → the summary (and the navigation example maps, from the models in memory)."""
    from core.experiment.pipeline import run_experiment

    result = run_experiment(config, progress=progress)
    if get_task(config.task).map_views and result.models is not None:
        try:  # the crisp example maps, from the models still in memory
            from core.jobs.mapview import compute_map_views

            compute_map_views(config, models=result.models)
        except Exception:  # the summary is what the job is for; the page can redo this
            traceback.print_exc()
    return result.summary


def _mapview(config: Any, progress, params: dict[str, Any]) -> Any:
    """The navigation example maps, from the cached victim (never trained here: a run not cached is
    :class:`~core.foundations.errors.NotCachedError`, the page submits this job only for cached runs)."""
    from core.jobs.mapview import compute_map_views

    return compute_map_views(config)


def _sensitivity(config: Any, progress, params: dict[str, Any]) -> Any:
    """``params["pairs"]`` SensitivitySampler pairs (``sample_sensitivity``, each pair cached as it
    finishes) → the estimate as a dict."""
    from core.defenses.sensitivity import sample_sensitivity

    pairs = params.get("pairs")
    if not isinstance(pairs, int) or isinstance(pairs, bool) or not 1 <= pairs <= MAX_SENSITIVITY_PAIRS:
        raise ConfigError(f"SensitivitySampler pairs must be an integer in 1..{MAX_SENSITIVITY_PAIRS}, got {pairs!r}")
    fraction = _one_stage(f"SensitivitySampler ({config.arch}, {pairs} pairs)", progress)
    return sample_sensitivity(config, pairs, on_pair=lambda done, total: fraction(done / total)).to_dict()


# a kind's parameters arrive as a JSON dict; each built-in kind reads and checks its own into a class below
@dataclass(frozen=True)
class AnalysisParams:
    """An ``analysis`` job's parameters: ``name``, the long analysis to run (:mod:`core.analyses.registry`; only
    looked up there, never imported). The analysis's own ``job`` gets the whole dict: its parameters are its own."""

    name: str

    @classmethod
    def from_dict(cls, params: dict[str, Any]) -> "AnalysisParams":
        """Read and checked: a name no long analysis has here is a :class:`ConfigError` that lists those it knows."""
        from core.analyses import registry as analysis_registry

        name, long = params.get("name"), analysis_registry.long_names()
        if name not in long:
            raise ConfigError(f"unknown analysis job {name!r}; one of {', '.join(long)}")
        return cls(name)


@dataclass(frozen=True)
class DefenseGridParams:
    """A ``defense_grid`` job's parameters: ``spec``, the :class:`~core.defenses.spec.DefenseSpec`'s fields (the
    grid's first value; checked by the spec itself where it is built, :func:`_defense_spec`) and ``values``, the grid."""

    spec: dict[str, Any]
    values: tuple[float, ...]

    @classmethod
    def from_dict(cls, params: dict[str, Any]) -> "DefenseGridParams":
        """Read and checked (:class:`ConfigError`): the spec a dict of DefenseSpec's fields, the values a non-empty
        list of numbers."""
        spec, values = _spec_fields(params.get("spec"), "defense grid"), params.get("values")
        if (not isinstance(values, (list, tuple)) or not values
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)):
            raise ConfigError(f"a defense grid job needs a non-empty list of values, got {values!r}")
        return cls(spec, tuple(float(v) for v in values))


def _analysis_module(params: dict[str, Any]) -> tuple[str, ...]:
    """The module that registered the analysis ``params["name"]`` (that of its ``job``), if registered."""
    from core.analyses import registry as analysis_registry

    try:
        name = AnalysisParams.from_dict(params).name
    except ConfigError:  # not registered here: nothing to import (the job itself says why it cannot run)
        return ()
    return (analysis_registry.get_analysis(name).job.__module__,)


def _analysis_label(params: dict[str, Any]) -> str:
    try:
        return f" · {AnalysisParams.from_dict(params).name} analysis"
    except ConfigError:
        return " · analysis"


def _analysis(config: Any, progress, params: dict[str, Any]) -> Any:
    """One long analysis of one architecture: the registered analysis ``params["name"]``
    (:mod:`core.analyses.registry`, ``long``) through its ``job`` → its data. The name is only looked
    up in the registry, never imported."""
    from core.analyses import registry as analysis_registry

    entry = analysis_registry.get_analysis(AnalysisParams.from_dict(params).name)
    assert entry.job is not None  # a long analysis has one (the registry refuses it without)
    return entry.job(config, lambda stage: _one_stage(stage, progress), params)


def _spec_fields(fields: Any, kind: str) -> dict[str, Any]:
    """``fields`` when it is a dict of :class:`~core.defenses.spec.DefenseSpec`'s fields, else a ConfigError."""
    from core.defenses.spec import DefenseSpec

    if not isinstance(fields, dict) or not set(fields) <= {f.name for f in dataclasses.fields(DefenseSpec)}:
        raise ConfigError(f"an {kind} job needs a DefenseSpec as a dict, got {fields!r}")
    return fields


def _defense_spec(fields: dict[str, Any]):
    """The :class:`~core.defenses.spec.DefenseSpec` of a job's spec fields (:func:`_spec_fields`), validated."""
    from core.defenses.spec import DefenseSpec

    return DefenseSpec(**fields).validate()


def _defense_grid(config: Any, progress, params: dict[str, Any]) -> Any:
    """``Defender.full_points(spec, params["values"])`` on the cached models of ``config`` (never trained here:
    :func:`core.experiment.pipeline.load_models`) → how many points were measured. Each full point (utility
    included) is cached on disk as it finishes, where the Defenses page reads it; a cancel keeps those done."""
    from core.defenses.defender import Defender
    from core.experiment.pipeline import load_models

    grid = DefenseGridParams.from_dict(params)
    spec = _defense_spec(grid.spec)
    fraction = _one_stage(f"defense grid ({config.arch}, {spec.mechanism}, {len(grid.values)} values)", progress)
    points = Defender(load_models(config)).full_points(spec, list(grid.values),
                                                       on_point=lambda i, n: fraction(i / n))
    return len(points)


def _defense_grid_label(p: dict[str, Any]) -> str:
    try:
        grid = DefenseGridParams.from_dict(p)
    except ConfigError:  # a job that cannot run (it fails with the reason)
        return " · defense grid"
    if "mechanism" not in grid.spec:
        return " · defense grid"
    return f" · defense grid ({grid.spec['mechanism']}, {len(grid.values)} values)"


def _adaptive(config: Any, progress, params: dict[str, Any]) -> Any:
    """``Defender.point(DefenseSpec(**params["spec"]), "both")`` → the point (cached on disk), on the cached
    models of ``config`` (never trained here: :func:`core.experiment.pipeline.load_models`; the adaptive
    attacker refits attacks on the shadows' defended answers, it does not train models)."""
    from core.defenses.defender import Defender
    from core.experiment.pipeline import load_models

    spec = _defense_spec(_spec_fields(params.get("spec"), "adaptive"))
    fraction = _one_stage(f"adaptive attacker ({config.arch}, {spec.mechanism} {spec.value:g})", progress)
    point = Defender(load_models(config)).point(spec, "both", utility=True)
    fraction(1.0)
    return point


def _adaptive_label(p: dict[str, Any]) -> str:
    spec = p.get("spec")
    if isinstance(spec, dict) and {"mechanism", "value"} <= set(spec):
        return " · adaptive attacker ({mechanism} {value:g})".format(**spec)
    return " · adaptive attacker"


register_job_kind(JobKind("experiment", _experiment, lambda p: ""))
register_job_kind(JobKind("mapview", _mapview, lambda p: " · example maps"))
register_job_kind(JobKind("sensitivity", _sensitivity, lambda p: f" · SensitivitySampler (n = {p.get('pairs')})"))
register_job_kind(JobKind("analysis", _analysis, _analysis_label, _analysis_module))
register_job_kind(JobKind("adaptive", _adaptive, _adaptive_label))
register_job_kind(JobKind("defense_grid", _defense_grid, _defense_grid_label))


def run_job(kind: str, config: Any, progress, params: dict[str, Any] | None = None,
            modules: tuple[str, ...] = ()) -> Any:
    """What a job of ``kind`` computes (the same entry points the CLI uses): its registered function,
    after importing ``modules`` (:func:`modules_of`, sent by the server), which register kinds and
    analyses this worker did not know."""
    for module in modules:
        importlib.import_module(module)
    return JOB_KINDS.get(kind).run(config, progress, params or {})  # unknown: "unknown job kind 'x'; known: …"


def serve(conn: Connection, parent: int) -> None:
    from core.foundations.errors import MIAError
    from core.foundations.processes import failure_text, init_worker, throttled

    signal.signal(signal.SIGUSR1, _on_cancel)
    signal.signal(signal.SIGTERM, _on_term)  # also what ends an orphan here: it unwinds like Ctrl-C
    # MIA_WORKER_THREADS (checked by the server before it starts us), else the usable cores
    init_worker(env_whole_number("MIA_WORKER_THREADS") or 0, parent)
    import core.experiment.pipeline  # noqa: F401  (preloaded: the first job starts warm)

    _preload_tasks()  # pages start a worker before the click (JobManager.prewarm), so this is free
    _send(conn, ("ready", os.getpid()))
    while True:
        try:
            msg = conn.recv()  # idle: SIGTERM ends the worker here, SIGUSR1 is ignored
        except (EOFError, OSError):
            return
        if msg[0] == "stop":
            return
        _, job_id, kind, config, env, *rest = msg
        params = rest[0] if rest else {}
        modules = tuple(rest[1]) if len(rest) > 1 else ()
        _set_env(env)
        send = throttled(functools.partial(_send_progress, conn, job_id), lambda ev: ev.stage_fraction >= 1.0)

        def progress(ev, send=send):
            _checkpoint()
            send(ev)

        _state.update(running=True, cancel=False)
        try:
            try:
                result = run_job(kind, config, progress, params, modules)
                _checkpoint()
            except MIAError as exc:
                reply = ("error", job_id, str(exc))
            except JobCancelled:
                raise
            except Exception as exc:  # report, never swallow: the page shows it, the log has the traceback
                traceback.print_exc()
                reply = ("error", job_id, failure_text(exc))
            else:
                reply = ("done", job_id, result)
            _finish(conn, reply)
        except JobCancelled as exc:
            _finish(conn, ("cancelled", job_id))
            if isinstance(exc, WorkerExit):
                return


def _finish(conn: Connection, reply: tuple) -> None:
    """Send a job's outcome and go idle, with no signal in between."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        _state.update(running=False, cancel=False)
        conn.send(reply)
    except (OSError, EOFError):
        pass
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def main(argv: list[str]) -> int:
    fd, parent = int(argv[0]), int(argv[1])
    if niceness():
        try:
            os.nice(niceness())
        except OSError:
            pass
    conn = Connection(fd)
    try:
        serve(conn, parent)
    except JobCancelled:
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    # one module, one registry: a module that registers a job kind imports core.jobs.worker, which is this one
    sys.modules.setdefault("core.jobs.worker", sys.modules["__main__"])
    sys.exit(main(sys.argv[1:]))
