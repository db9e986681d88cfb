"""One toy of each extension kind — task, attack, defense, analysis (with its view builders), job kind —
added through registration alone, as docs/architecture.md's "Adding …" tells a user to: a definition and
its one registration call, no edit to a built-in table. All five then run together through the real
pipeline on a tiny preset, and are removed again.

If a kind needed more than its registration (a name added to a built-in tuple, a builder named by a
string in another layer), the toy would be missing from the results below and the test fails."""
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
import torch
from test_toy_task import BlobsTask  # the toy task: one class, registered below with register_task alone

from core.analyses import analysis
from core.analyses import registry as analysis_registry
from core.analyses.registry import Analysis, AnalysisRun, figure_builder, register_analysis, table_builder
from core.attacks import registry as attack_registry
from core.attacks.registry import AttackEntry
from core.attacks.shadow_attacks import ThresholdAttack
from core.defenses import registry as defense_registry
from core.defenses.defender import Defender
from core.defenses.registry import OutputMechanism, Parameter
from core.defenses.spec import DefenseSpec
from core.experiment.pipeline import run_experiment, trained_models
from core.jobs.manager import KINDS
from core.jobs.worker import JobKind, register_job_kind, run_job, unregister_job_kind
from core.measurement.responses import Responses
from core.tasks import available_tasks, get_task, register_task, unregister_task
from core.views.analysis_tables import tables
from core.views.report import figures_of


# ---------------------------------------------------------------------------- a toy attack: one registration
def toy_attack_entry() -> AttackEntry:
    return AttackEntry("ext_margin", "Toy margin threshold", "toy margin", "shadows", "responses",
                       lambda training: ThresholdAttack("ext_margin", "ape"), cite="a test")


# ---------------------------------------------------------------------------- a toy defense: one class + register
class Flatten(OutputMechanism):
    """Answers mixed with the uniform distribution: (1 − w)·p + w/K (no formal guarantee)."""

    name = "ext_flatten"
    label = "Flatten (outputs)"
    short = "Flatten"
    parameter = Parameter(name="w", symbol="w", low=0.0, high=1.0, low_open=False, log_scale=False,
                          grid=(0.0, 0.5), slider=(0.0, 0.5), slider_default=0.5, curve=(0.0, 0.5))

    def transform(self, responses: Responses, spec: Any, rng: np.random.Generator) -> Responses:
        p = responses.probs
        return responses.with_log_probs(np.log((1 - spec.value) * p + spec.value / p.shape[-1]))

    def torch_transform(self, spec: Any, generator: torch.Generator):
        def transform(log_probs: torch.Tensor) -> torch.Tensor:
            k = log_probs.shape[-1]
            return torch.log((1 - spec.value) * log_probs.exp() + spec.value / k)
        return transform

    def guarantee(self, spec: Any, n_classes: int, sensitivity: Any | None) -> dict[str, Any]:
        return {"epsilon": None, "delta": None, "gamma": None, "privacy_note": "flatten: no formal guarantee"}


# ---------------------------------------------------------------------------- a toy analysis and its views
def toy_analysis_run(run: AnalysisRun) -> dict[str, Any]:
    run.say("ext_mean_ape", 0.0)
    return run.per_arch(lambda cfg, summary: {"attack_accuracy": summary.attack.accuracy})


TOY_ANALYSIS = Analysis("ext_mean_ape", "Toy attack accuracy", toy_analysis_run)


def toy_table(data: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame([{"arch": arch, **row} for arch, row in data.items()])


def toy_figure(data: dict[str, Any]) -> go.Figure:
    return go.Figure([go.Bar(x=list(data), y=[row["attack_accuracy"] for row in data.values()])])


# ---------------------------------------------------------------------------- a toy job kind
def toy_job(config, progress, params: dict[str, Any]) -> dict[str, Any]:
    """Reads the run of ``config`` through the real pipeline (cached by then) and answers its toy attack."""
    summary = run_experiment(config).summary
    return {"arch": config.arch, "ext_margin": summary["attacks"]["ext_margin"]["accuracy"]}


TOY_KIND = JobKind("ext_job", toy_job, lambda p: " · toy job")


@pytest.fixture
def toys():
    register_task(BlobsTask)
    attack_registry.register(toy_attack_entry())
    defense_registry.register(Flatten)
    register_analysis(TOY_ANALYSIS)
    table_builder("ext_mean_ape")(toy_table)
    figure_builder("ext_mean_ape")(toy_figure)
    register_job_kind(TOY_KIND)
    try:
        yield get_task("blobs")
    finally:
        unregister_job_kind("ext_job")
        analysis_registry.unregister_views("ext_mean_ape")
        analysis_registry.unregister_analysis("ext_mean_ape")
        defense_registry.unregister("ext_flatten")
        attack_registry.unregister("ext_margin")
        unregister_task("blobs")


def test_a_toy_of_each_kind_runs_through_the_pipeline_by_registration_alone(toys):
    # every registry lists its toy where the CLI and the pages look
    assert "blobs" in available_tasks()
    assert "ext_margin" in [e.name for e in attack_registry.entries("blobs")]
    assert "ext_flatten" in defense_registry.names()
    assert "ext_mean_ape" in analysis_registry.names()
    assert "ext_job" in KINDS
    ffnn, rnn = (toys.make_config(arch, "quick") for arch in ("ffnn", "rnn"))

    # task + attack: train & attack, the toy attack scored beside the built-in ones
    summary = run_experiment(ffnn).summary
    assert summary["task"] == "blobs"
    assert "ext_margin" in summary["attacks"] and "shadow" in summary["attacks"]
    assert 0.0 <= summary["attacks"]["ext_margin"]["accuracy"] <= 1.0
    assert "ext_margin" in [e.name for e in attack_registry.entries("blobs")]

    # defense: a point of the toy mechanism, the toy attack scored on its defended answers; w = 0 answers p
    defender = Defender(trained_models(ffnn))
    same = defender.point(DefenseSpec("ext_flatten", 0.0), "naive")
    assert same.attacks["ext_margin"].auc == pytest.approx(summary["attacks"]["ext_margin"]["auc"], abs=1e-6)
    flat = defender.point(DefenseSpec("ext_flatten", 0.5), "naive", utility=True)
    assert "ext_margin" in flat.attacks and flat.to_dict()["privacy_note"] == "flatten: no formal guarantee"

    # analysis: run by analyze, drawn by the builders its views registered
    results = analysis.analyze({"ffnn": ffnn, "rnn": rnn}, ("ext_mean_ape",)).to_dict()
    assert set(results["ext_mean_ape"]) == {"ffnn", "rnn"}
    assert results["ext_mean_ape"]["ffnn"]["attack_accuracy"] == summary["attack"]["accuracy"]
    assert list(tables(results)["ext_mean_ape"]["arch"]) == ["ffnn", "rnn"]
    assert isinstance(figures_of(results)["ext_mean_ape"], go.Figure)

    # job kind: dispatched by the worker's registry like a built-in kind
    events = []
    out = run_job("ext_job", ffnn, events.append, {})
    assert out == {"arch": "ffnn", "ext_margin": summary["attacks"]["ext_margin"]["accuracy"]}


def test_nothing_of_the_toys_is_left_behind():
    """Runs after the fixture's teardown: unregistering removes each toy from every registry."""
    assert "blobs" not in available_tasks()
    assert "ext_margin" not in [e.name for e in attack_registry.entries()]
    assert "ext_flatten" not in defense_registry.names()
    assert "ext_mean_ape" not in analysis_registry.names()
    assert "ext_job" not in KINDS
    assert analysis_registry.table_of(TOY_ANALYSIS) is None and analysis_registry.figure_of(TOY_ANALYSIS) is None
