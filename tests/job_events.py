"""Every progress event a job received, for tests of processes that report progress.

The page (and ``Job``) keeps only the worker's last event; a test that samples it may miss a stage
the worker passed between two samples. ``record_job_events`` makes the manager create jobs that
also keep each event it hands them, so a test asserts on what the worker reported, not on what a
poll happened to see."""
import pytest

import core.jobs.manager
from core.foundations.progress import ProgressEvent


class RecordingJob(core.jobs.manager.Job):
    """A ``Job`` that keeps every event assigned to it, in order, in ``reported``."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "event" and value is not None:
            self.__dict__.setdefault("reported", []).append(value)
        super().__setattr__(name, value)

    @property
    def events(self) -> list[ProgressEvent]:
        return list(self.__dict__.get("reported", []))


def record_job_events(monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs submitted from now on (in this test) record every event."""
    monkeypatch.setattr(core.jobs.manager, "Job", RecordingJob)
