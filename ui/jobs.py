"""Background jobs so a page stays responsive while victims and shadows train.

A job runs ``core.pipeline.run_experiment`` for one or more configs in a daemon thread and
records the latest progress event of each; pages poll it (``st.fragment(run_every=...)``).
Jobs are keyed by their configs' hashes, so clicking twice, or opening a second tab with the
same settings, attaches to the running job instead of starting another.
"""
from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from core.config import ExperimentConfig
from core.errors import MIAError
from core.progress import ProgressEvent


@dataclass
class Job:
    key: str
    configs: list[ExperimentConfig]
    started: float = field(default_factory=time.time)
    current: int = 0
    event: ProgressEvent | None = None
    summaries: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    done: bool = False

    @property
    def label(self) -> str:
        cfg = self.configs[min(self.current, len(self.configs) - 1)]
        return f"{cfg.task} · {cfg.arch} ({self.current + 1}/{len(self.configs)})"


class JobManager:
    """Thread-safe registry of running and finished jobs (one per distinct set of configs)."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key_of(configs: list[ExperimentConfig]) -> str:
        return "+".join(c.config_hash for c in configs)

    def get(self, key: str) -> Job | None:
        with self._lock:
            return self._jobs.get(key)

    def submit(self, configs: list[ExperimentConfig]) -> Job:
        """Start a job for ``configs`` unless one is already running or finished without error."""
        key = self.key_of(configs)
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and job.error is None:
                return job
            job = Job(key, configs)
            self._jobs[key] = job
        threading.Thread(target=self._run, args=(job,), daemon=True, name=f"mia-job-{key[:8]}").start()
        return job

    def _run(self, job: Job) -> None:
        from core.pipeline import run_experiment

        try:
            for i, cfg in enumerate(job.configs):
                job.current = i

                def on_progress(ev: ProgressEvent) -> None:
                    job.event = ev

                job.summaries.append(run_experiment(cfg, progress=on_progress).summary)
        except MIAError as exc:
            job.error = str(exc)
        except Exception as exc:  # report, never swallow: the page shows the traceback's last line
            job.error = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
        finally:
            job.done = True

    def forget(self, key: str) -> None:
        with self._lock:
            self._jobs.pop(key, None)


@dataclass
class Background:
    """One deduplicated background computation (a function call) and its outcome."""

    key: str
    label: str
    started: float = field(default_factory=time.time)
    progress: str = ""
    result: Any = None
    error: str | None = None
    done: bool = False


class BackgroundRunner:
    """Runs keyed calls one at a time in a daemon thread; the same key never runs twice.

    For work a page must not wait for (the adaptive attacker refitting on defended shadows, the
    SensitivitySampler): the page submits, polls :meth:`get` and shows the result when done.
    """

    def __init__(self) -> None:
        self._items: dict[str, Background] = {}
        self._lock = threading.Lock()
        self._slot = threading.Semaphore(1)  # one heavy computation at a time on a small machine

    def get(self, key: str) -> Background | None:
        with self._lock:
            return self._items.get(key)

    def submit(self, key: str, label: str, fn, *args, **kwargs) -> Background:
        """Start ``fn(item, *args, **kwargs)`` unless ``key`` is running or finished without error."""
        with self._lock:
            item = self._items.get(key)
            if item is not None and item.error is None:
                return item
            item = self._items[key] = Background(key, label)
        threading.Thread(target=self._run, args=(item, fn, args, kwargs), daemon=True, name=f"mia-bg-{key[:12]}").start()
        return item

    def pending(self) -> list[Background]:
        with self._lock:
            return [b for b in self._items.values() if not b.done]

    def _run(self, item: Background, fn, args, kwargs) -> None:
        try:
            with self._slot:
                item.result = fn(item, *args, **kwargs)
        except MIAError as exc:
            item.error = str(exc)
        except Exception as exc:  # report, never swallow
            item.error = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
        finally:
            item.done = True
