"""The Your model page's audit as a job of the worker queue (core.jobs.own_model_audit): the worker's JSON is core.audit.audit's
on the same inputs and seed, kept so that it is read back typed with its what-ifs; progress per step; cancel; hostile
parameters refused in one line before anything trains; one session's audit is not another's."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from job_events import record_job_events
from test_user_audit import SmallCNN, digits_folder, fit, sklearn_table, timm_on_digits

from core.analyses.user_audit import utility_estimates, utility_loss_estimate
from core.audit import AuditResult, audit
from core.foundations.errors import ConfigError
from core.foundations.version import unstamped
from core.jobs.manager import CANCELLED, DONE, FAILED, JobManager, SessionJobs
from core.jobs.own_model_audit import KIND, AuditParams, AuditRequest, restored_audit, stored_audit
from core.models.kinds.preprocess import read_preprocess

#: the longest a tiny audit may take in a worker on a loaded machine (a wait that ends on the job's end, not a sleep)
JOB_TIMEOUT_S = 600


@pytest.fixture(scope="module")
def manager():
    """One queue and one warm worker for these tests (each job carries its test's data root and cache folder)."""
    m = JobManager(workers=1, quota=5)
    yield m
    m.shutdown()


def ended(manager: JobManager, job) -> bool:
    """Wait until ``job`` ends: the manager's condition is notified whenever a job leaves a slot or the queue."""
    with manager._cond:
        return manager._cond.wait_for(lambda: job.done, JOB_TIMEOUT_S)


@pytest.fixture
def root(tmp_path, monkeypatch):
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setenv("MIA_DATA_ROOT", str(root))
    return root


def table_params(root) -> AuditParams:
    """The scikit-learn tree exported to ONNX of tests/test_user_audit.py, its table and member list under the root."""
    sklearn_table(root)
    return AuditParams.from_dict({"spec": "onnx:tree.onnx", "weights": None, "data": "t.csv", "members": "members.txt",
                                  "preprocess": (root / "pre.toml").read_text(), "recipe": ""})


def test_the_job_gives_the_audits_json_kept_for_reopening_with_its_what_ifs(root, manager, monkeypatch):
    record_job_events(monkeypatch)
    params = table_params(root)
    assert params.members == str(root / "members.txt") and params.spec == f"onnx:{root / 'tree.onnx'}"
    request = AuditRequest.of(params)
    mine, theirs = SessionJobs(manager, "session:a"), SessionJobs(manager, "session:b")
    job = mine.submit([request], KIND, params.to_dict()).jobs[0]
    assert mine.job(request, KIND, params.to_dict()) is job
    assert theirs.job(request, KIND, params.to_dict()) is None and job not in theirs.active()  # private to its owner
    assert ended(manager, job)
    assert job.state == DONE, job.error
    python = audit(params.spec, params.members, data=params.data, preprocess=read_preprocess(params.preprocess.encode(),
                                                                                            "page.toml"),
                   root=str(root), seed=0)
    assert job.result == json.loads(python.to_json())
    # progress: every step reported, the bar never going back, ending full
    stages = [e.stage for e in job.events]
    assert {"preparing the records", "blind baseline", "answers", "attacks"} <= set(stages)
    fractions = [e.overall_fraction for e in job.events]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)
    # kept: reopening reads it back typed, nothing recomputed, and its what-ifs are the ones of the audit itself
    doc, kept, typed = stored_audit(request)
    assert unstamped(doc) == unstamped(job.result) and json.loads(typed.to_json()) == job.result
    restored = restored_audit(request, doc, kept)
    assert restored.dirichlet(0.1).to_dict() == python.dirichlet(0.1).to_dict()
    # a file changed since: another audit (another key), nothing stored under it yet
    (root / "members.txt").write_text((root / "members.txt").read_text() + "\n")
    assert AuditRequest.of(params).config_hash != request.config_hash and stored_audit(AuditRequest.of(params)) is None


@pytest.mark.parametrize("change, says", [
    ({"data": "/etc"}, "outside the data root"),
    ({"members": "../outside.txt"}, "outside the data root"),
    ({"spec": "onnx:/tmp/elsewhere.onnx"}, "outside the data root"),
    ({"code": "import os"}, "not 'code'"),
    ({"spec": "module:__main__.Net"}, "is not KIND:ARG"),
    ({"preprocess": "[image]\nchannels = 2\n"}, "channels"),
])
def test_hostile_parameters_are_refused_in_one_line_before_anything_trains(root, manager, monkeypatch, change, says):
    record_job_events(monkeypatch)
    params = table_params(root)
    (root.parent / "outside.txt").write_text("r1\n")
    hostile = {**params.to_dict(), **change}
    with pytest.raises(ConfigError, match=says):  # where the page builds them: nothing is queued
        AuditParams.from_dict(hostile)
    request = AuditRequest.of(params)  # a request for the honest inputs, the hostile ones sent with it
    job = manager.submit([request], KIND, hostile).jobs[0]
    assert ended(manager, job)
    assert job.state == FAILED and says in job.error and "\n" not in job.error
    assert job.events == []  # refused before the first step: nothing read, nothing trained
    assert stored_audit(request) is None


def timm_model(root):
    """timm's ``test_resnet`` fitted on the digits' members (as in tests/test_user_audit.py), saved under the root."""
    paths, images, labels, members = digits_folder(root / "digits")
    timm_on_digits(images, labels, members, root / "timm.safetensors")
    pre = 'num_classes = 3\n[image]\nchannels = 3\nmean = [0.5, 0.5, 0.5]\nstd = [0.25, 0.25, 0.25]\n'
    return AuditParams.from_dict({"spec": "timm:test_resnet", "weights": "timm.safetensors", "data": "digits",
                                  "members": "members.txt", "preprocess": pre,
                                  "recipe": 'optimizer = "adam"\nlr = 0.003\nepochs = 100\nbatch_size = 20\n'
                                            'references = 4\n'})


def test_cancel_stops_the_audit_at_its_next_step_and_keeps_nothing(root, manager, monkeypatch):
    """Cancelled as the first reference model starts training (from the event's arrival: no timing), the worker stops
    at its next report: no later step, nothing stored, and the worker serves the next job."""
    import core.jobs.manager

    params = timm_model(root)
    request = AuditRequest.of(params)

    class CancelAtFirstReference(core.jobs.manager.Job):
        def __setattr__(self, name, value):
            super().__setattr__(name, value)
            if name == "event" and value is not None:
                self.__dict__.setdefault("reported", []).append(value.stage)
                if value.stage.startswith("reference") and not self.cancel_requested:
                    manager.cancel(self)

    monkeypatch.setattr(core.jobs.manager, "Job", CancelAtFirstReference)
    job = manager.submit([request], KIND, params.to_dict()).jobs[0]
    assert ended(manager, job)
    assert job.state == CANCELLED, job.error
    seen = job.__dict__["reported"]
    assert seen[0] == "preparing the records" and "reference 1/4" in seen
    assert not {"reference 4/4", "blind baseline", "answers", "attacks"} & set(seen)
    assert stored_audit(request) is None


def test_progress_reports_each_reference_by_epoch_and_a_failing_report_stops_the_audit(tmp_path):
    """In-process: the audit's own progress events (what the worker forwards), and a report that raises — the
    worker's cancel — ends the audit there: the stages after it never start."""
    data = tmp_path / "digits"
    paths, images, labels, members = digits_folder(data)
    x = torch.as_tensor(images[:, None].astype(np.float32) / np.float32(16.0))
    net = fit(SmallCNN(), x[members], labels[members], steps=60)
    recipe = {"optimizer": "adam", "lr": 1e-2, "epochs": 3, "batch_size": 40, "references": 2}
    pre = {"image": {"channels": 1, "scale": 16}}
    events = []
    result = audit(net, str(tmp_path / "members.txt"), data=str(data), preprocess=pre, recipe=recipe, factory=SmallCNN,
                   n_boot=100, on_progress=events.append)
    stages = list(dict.fromkeys(e.stage for e in events))
    assert stages == ["preparing the records", "reference 1/2", "reference 2/2", "blind baseline", "answers", "attacks"]
    first = [e.stage_fraction for e in events if e.stage == "reference 1/2"]
    assert first[0] == 0.0 and first[-1] == 1.0 and len(first) >= 2  # per epoch, then done
    assert [e.overall_fraction for e in events] == sorted(e.overall_fraction for e in events)
    assert any(e.eta_s is not None for e in events)

    class Stop(Exception):
        pass

    def stop_at_second_reference(event):
        if event.stage == "reference 2/2":
            raise Stop
    with pytest.raises(Stop):
        audit(net, str(tmp_path / "members.txt"), data=str(data), preprocess=pre, recipe=recipe, factory=SmallCNN,
              n_boot=100, on_progress=stop_at_second_reference)
    # the what-if's utility: both accuracies with intervals, the loss with a paired interval over the non-members
    strong = result.dirichlet(0.01)
    before, after = utility_estimates(result), utility_estimates(strong)
    assert before["nonmember_accuracy"].mean == pytest.approx(result.utility["nonmember_accuracy"])
    assert after["nonmember_accuracy"].ci_low <= after["nonmember_accuracy"].mean <= after["nonmember_accuracy"].ci_high
    loss = utility_loss_estimate(result, strong)
    assert loss.mean == pytest.approx(strong.defense["utility_loss"]) and loss.ci_low <= loss.mean <= loss.ci_high
    # every attack that ran is scored again on the defended answers: those reading the answers' values move; the
    # label-only ones move only where a label changes (this model is confident); the blind baseline never queries it
    assert [a.name for a in strong.attacks] == [a.name for a in result.attacks]
    moved = {a.name for a in strong.attacks if a.auc.mean != result.attack(a.name).auc.mean}
    assert {"loss", "entropy", "lira_offline", "rmia", "quantile"} <= moved and "blind" not in moved


def test_a_stored_audit_reads_back_to_the_json_it_was_written_from(root):
    params = table_params(root)
    result = audit(params.spec, params.members, data=params.data,
                   preprocess=read_preprocess(params.preprocess.encode(), "page.toml"), root=str(root), n_boot=100)
    doc, kept = json.loads(json.dumps(json.loads(result.to_json()), sort_keys=True)), result.kept_arrays()  # as kept
    typed = AuditResult.from_dict(doc, kept)
    assert typed.to_dict() == result.to_dict() and typed.state is None
    assert [a.scores.tolist() for a in typed.attacks] == [a.scores.tolist() for a in result.attacks]
    with pytest.raises(ConfigError, match="holds no model"):
        typed.dirichlet(1.0)
    broken = {**doc, "roles": {**doc["roles"], "members": 3}}
    from core.foundations.errors import ResultFormatError
    with pytest.raises(ResultFormatError, match="cannot be read back"):
        AuditResult.from_dict(broken, kept)
