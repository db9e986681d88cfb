"""A toy analysis and a toy job kind, registered by tests alone (one registry per kind).

Imported as ``tests.toy_registry`` both here and in the app's worker process: the server names this
module with each toy job (:func:`core.jobs.worker.modules_of`), the worker imports it, and its import
registers the toys there too. :func:`register` / :func:`unregister` for the test process."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from core.analyses.registry import Analysis, AnalysisRun, register_analysis, unregister_analysis
from core.analyses.verdicts import RunVerdict
from core.foundations.progress import ProgressTracker
from core.jobs.worker import JobKind, register_job_kind, unregister_job_kind

FIGURE_TITLE = "toy analysis figure"


def toy_of(arch: str, accuracy: float) -> dict[str, Any]:
    return {"arch": arch, "rows": [{"step": i, "value": round(accuracy * i, 6)} for i in (1, 2, 3)]}


def toy_run(run: AnalysisRun) -> dict[str, Any]:
    run.say("toy", 0.0)
    return run.per_arch(lambda cfg, summary: toy_of(cfg.arch, summary.attack.accuracy))


def toy_verdict(data: dict[str, Any]) -> RunVerdict:
    d = data["ffnn"]["rows"][0]["value"] - data["rnn"]["rows"][0]["value"]
    return RunVerdict("inconclusive", f"toy difference {d:+.3f}", d)


def toy_table(data: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame([{"arch": arch, **r} for arch, v in data.items() for r in v["rows"]])


def toy_figure(data: dict[str, Any]) -> go.Figure:
    fig = go.Figure([go.Scatter(x=[r["step"] for r in v["rows"]], y=[r["value"] for r in v["rows"]], name=arch)
                     for arch, v in data.items()])
    return fig.update_layout(title=FIGURE_TITLE)


def toy_job(cfg, stage, params: dict[str, Any]) -> dict[str, Any]:
    fraction = stage(f"toy ({cfg.arch})")
    fraction(0.5)
    return toy_of(cfg.arch, float(params.get("accuracy", 0.5)))


def toy_kind(config, progress, params: dict[str, Any]) -> dict[str, Any]:
    """Waits (reporting progress) until the file ``params["gate"]`` exists, so a test sees it run."""
    tracker = ProgressTracker([("toy waiting", 1.0)], progress)
    tracker.update("toy waiting", 0.0, force=True)
    gate = Path(params["gate"])
    deadline = time.time() + 120
    while not gate.exists() and time.time() < deadline:
        tracker.update("toy waiting", 0.5, force=True)
        time.sleep(0.1)
    return {"arch": config.arch, "echo": params.get("echo"), "gate_seen": gate.exists()}


TOY_ANALYSIS = Analysis("toy", "Toy", toy_run, verdict="toy_verdict", verdict_of=toy_verdict, long=True, job=toy_job,
                        table=toy_table, figure=toy_figure)
TOY_KIND = JobKind("toy", toy_kind, lambda p: " · toy job")


def register() -> None:
    register_analysis(TOY_ANALYSIS)
    register_job_kind(TOY_KIND)


def unregister() -> None:
    unregister_analysis("toy")
    unregister_job_kind("toy")


register()
