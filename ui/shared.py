"""Process-wide UI resources shared by every page and browser session of one server, and the
per-config caches that make warm pages fast."""
from __future__ import annotations

import atexit
import importlib
import threading

import streamlit as st

from core.defenses.defender import Defender
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import cached_run, cached_runs, load_models
from core.experiment.results import RunSummary
from core.foundations.config import ExperimentConfig
from core.foundations.paths import cache_dir
from core.jobs.manager import JobInput, JobManager, SessionJobs
from core.jobs.mapview import cached_map_views
from core.tasks.navigation import MapViews
from ui.ownership import RunOwners, UploadLedger, on_user_data
from ui.session import in_session, is_lecturer, session_owner


@st.cache_resource
def server_jobs() -> JobManager:
    """One queue of jobs (trainings, SensitivitySampler, long analyses, adaptive refits) per server
    process: shared by every tab, survives reruns; its worker processes end with the server."""
    manager = JobManager()
    atexit.register(manager.shutdown)
    return manager


def job_manager() -> SessionJobs:
    """The server's job queue as this browser session sees it (:class:`core.jobs.manager.SessionJobs`): its own jobs, or
    every job for a lecturer; outside a session's script run (a test, a thread) the server's whole view. A run on
    user data it submits is recorded as the session's (:func:`run_owners`), so only it (and a lecturer) lists it."""
    owner, lecturer = _viewer()
    return SessionJobs(server_jobs(), owner, lecturer, on_submit=_record_owner)


def _record_owner(configs: list[JobInput], owner: str) -> None:
    private = [c.config_hash for c in configs if on_user_data(c.to_dict())]
    if private:
        run_owners().add(private, owner)


#: what the pages import beyond the Home page (torch-based analyses, scipy.stats via the defenses,
#: scikit-learn's surrogate, pandas via the reports): tens of seconds on a loaded 2-core machine
PAGE_MODULES = ("core.analyses.analysis", "core.defenses.defender", "core.views.defense_figures",
                "core.views.training_defense_figures", "core.views.report", "core.defenses.sweeps",
                "core.experiment.fidelity",
                "ui.results", "sklearn.linear_model", "sklearn.preprocessing", "sklearn.pipeline")


@st.cache_resource
def preload_page_modules() -> threading.Thread:
    """Import the pages' heavy modules once per server, in a background thread started by the first
    script run: by the time a user opens a page after Home, its imports are done (an import the
    page needs sooner waits on the module's import lock instead of importing twice)."""
    def load() -> None:
        for name in PAGE_MODULES:
            try:
                importlib.import_module(name)
            except Exception:  # an optional module missing: the page that needs it reports it
                pass

    thread = threading.Thread(target=load, name="preload-page-modules", daemon=True)
    thread.start()
    return thread


class _NotCached(Exception):
    """Raised inside a cached loader so that "not there yet" is never memoised."""


@st.cache_data(max_entries=64, show_spinner=False)
def _summary(folder: str, config_hash: str, _cfg: ExperimentConfig) -> RunSummary:
    run = cached_run(_cfg)  # checked against core.experiment.results' schema as it left the cache
    if run is None:
        raise _NotCached
    _ = run.per_record  # parsed once, here: the page cache keeps it with the run, so a warm open does not parse it again
    return run


def summary_of(cfg: ExperimentConfig) -> RunSummary | None:
    """The cached summary of ``cfg``, typed (None if not trained yet), read from disk once per
    server and config hash: a warm page does not touch the artifact cache again."""
    try:
        return _summary(str(cache_dir()), cfg.config_hash, cfg)
    except _NotCached:
        return None


@st.cache_data(max_entries=16, show_spinner=False)
def _runs(folder: str, task: str, arch: str, keys: tuple[str, ...]) -> list[RunSummary]:
    return cached_runs(task, arch)


def runs_of(task: str, arch: str) -> list[RunSummary]:
    """The cached runs of ``task`` and ``arch`` this session may list (:meth:`ui.ownership.RunOwners.visible`: the
    built-in data's runs, and the runs on user data it made), typed. :func:`core.experiment.pipeline.cached_runs` is
    read from disk again only when the cache's result keys change (a run was added or removed): a rerun does not
    read and check every cached result (their number grows with use; each costs a checksum, a JSON parse and a
    schema check)."""
    cache = ArtifactCache()
    runs = _runs(str(cache_dir()), task, arch, tuple(cache.keys(cache.key("result", ""))))
    owner, lecturer = _viewer()
    owners = run_owners()
    return [r for r in runs if owners.visible(r.config, r.config_hash, owner, lecturer)]


def _viewer() -> tuple[str | None, bool]:
    """(this session's owner id, whether it is a lecturer); (None, True) outside a session's script run."""
    if not in_session():
        return None, True
    return session_owner(), is_lecturer()


@st.cache_resource(max_entries=8)
def _run_owners(folder: str) -> RunOwners:
    return RunOwners(folder)


def run_owners() -> RunOwners:
    """Who made which run on user data, for the current cache folder (:class:`ui.ownership.RunOwners`)."""
    return _run_owners(str(cache_dir()))


@st.cache_resource
def upload_ledger() -> UploadLedger:
    """Which uploads each session of the server made (:class:`ui.ownership.UploadLedger`)."""
    return UploadLedger()


@st.cache_data(max_entries=64, show_spinner=False)
def _map_views(folder: str, config_hash: str, _cfg: ExperimentConfig) -> MapViews:
    views = cached_map_views(_cfg)
    if views is None:
        raise _NotCached
    return views


def map_views_of(cfg: ExperimentConfig) -> MapViews | None:
    """The navigation map views of ``cfg`` (see :mod:`core.jobs.mapview`), or None."""
    try:
        return _map_views(str(cache_dir()), cfg.config_hash, cfg)
    except _NotCached:
        return None


#: the Defender's calls that read whole memo entries only (see :class:`SharedDefender`): no lock
_LOCK_FREE = frozenset({"cached_point"})


class SharedDefender:
    """A :class:`~core.defenses.defender.Defender` that every browser session of the server uses at once: each of its
    calls holds the Defender's lock, so two sessions' slider steps never interleave inside it (its memos, the one
    value's noisy models it keeps, its forward-pass store) — one waits for the other's call, whose point is then
    memoised for both: cached points shared, in-flight work finished, never two sessions' values mixed.

    ``cached_point`` (the lookup the page's script thread makes before queuing a step's calls) takes no lock: it reads
    the memo and the cache, whose entries are put in whole (a complete point under its key, one dict assignment),
    and stores nothing but such an entry; so a known point is shown at once even while another session's call
    computes. Plain attributes (``baseline``, ``cfg``, …: set once when the Defender is built) are read as they are."""

    def __init__(self, defender: Defender) -> None:
        object.__setattr__(self, "_defender", defender)
        object.__setattr__(self, "_lock", threading.RLock())

    def __getattr__(self, name: str):
        value = getattr(self._defender, name)
        if not callable(value) or isinstance(value, type):
            return value
        if name in _LOCK_FREE:
            return value
        lock = self._lock

        def locked(*args, **kwargs):
            with lock:
                return value(*args, **kwargs)
        return locked

    def __setattr__(self, name: str, value) -> None:
        with self._lock:
            setattr(self._defender, name, value)

    @property
    def lock(self) -> threading.RLock:
        return self._lock


@st.cache_resource(max_entries=6, show_spinner="Loading the cached models…")
def _defender(folder: str, config_hash: str, _cfg: ExperimentConfig) -> SharedDefender:
    return SharedDefender(Defender(load_models(_cfg)))


def defender_for(cfg: ExperimentConfig) -> SharedDefender:
    """One :class:`core.defenses.defender.Defender` per trained config and cache folder (behind its lock,
    :class:`SharedDefender`: every session of the server steps it at once), shared by the pages
    (the Defenses page's slider and the Analyses page's scatter under defense reuse its memo). Its models come
    from :func:`core.experiment.pipeline.load_models`: a run not cached raises
    :class:`~core.foundations.errors.NotCachedError` (a page never trains; an error is not memoised)."""
    return _defender(str(cache_dir()), cfg.config_hash, cfg)


#: the defense value last chosen on the Defenses page, per (task, mechanism): a plain session key
#: (widget keys are dropped when their page is left), read by the Analyses page as its default
def defense_value_key(task: str, mechanism: str) -> str:
    return f"defense-value:{task}:{mechanism}"
