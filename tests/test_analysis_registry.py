"""One registry per kind: a toy analysis and a toy job kind registered by a test alone
(``tests/toy_registry.py``) appear end to end — in ``python -m core analyze`` (its JSON, CSV and
HTML), in the HTML export, as a worker job, and in the page's job list."""
import json
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.analyses import analysis
from core.analyses import registry as analysis_registry
from core.analyses.analyses_json import AnalysesResults
from core.foundations.errors import ConfigError
from core.foundations.version import unstamped
from core.jobs import worker
from core.jobs.manager import DONE, JobManager, job_key
from core.tasks import get_task
from core.views.plain import plain_markdown

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, attack_epochs=(), attack_train_epochs=3)


def tiny(arch):
    return get_task("image").make_config(arch, "quick", TINY)


def wait(predicate, timeout=180, every=0.1):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(every)
    raise AssertionError("timed out")


@pytest.fixture
def toys():
    from tests import toy_registry

    toy_registry.register()
    yield toy_registry
    toy_registry.unregister()


def test_the_builtin_analyses_are_registered_in_their_order():
    assert analysis_registry.names() == ("scatter", "vulnerability", "memorization", "overtraining", "mismatch",
                                        "exposure", "budget", "audit", "slices")
    assert analysis_registry.long_names() == ("memorization", "overtraining", "mismatch", "budget", "audit")
    assert analysis_registry.verdict_keys()["runs"] == "rnn_more_vulnerable"  # the runs: a verdict, not a name
    with pytest.raises(ConfigError, match="already registered"):
        analysis_registry.register_analysis(analysis_registry.Analysis("scatter", "again", lambda run: {}))
    with pytest.raises(ConfigError, match="unknown analysis 'nope'"):
        analysis_registry.get_analysis("nope")
    import core.jobs.own_model_audit  # noqa: F401  the Your model page's kind registers where it is defined

    assert set(worker.JOB_KINDS) == {"experiment", "mapview", "sensitivity", "analysis", "adaptive", "defense_grid",
                                     "own_model_audit"}


def test_the_verdicts_take_typed_results_and_the_json_is_read_once_at_the_boundary():
    """Every analysis with a verdict (the runs' aside: summaries) registers the reader of its JSON; the verdicts and
    pairings take ``{arch: typed}`` only (no ``X | dict`` alternative to coerce inside), and ``read_result`` /
    ``laid_out`` turn a job's JSON into the typed result and back, unchanged."""
    import inspect
    import re

    from core.analyses import verdicts
    from core.analyses.analysis_results import Vulnerability

    for entry in analysis_registry.registered():
        if entry.verdict_of is not None or entry.repeat is not None:
            assert entry.reads is not None, entry.name
    mixed = [f"{name}({p.name})" for name, fn in inspect.getmembers(verdicts, inspect.isfunction)
             if fn.__module__ == verdicts.__name__ for p in inspect.signature(fn).parameters.values()
             if re.search(r"\| (dict|Mapping)\b|^dict\[str, dict\[str, Any\]\]$", str(p.annotation))]
    assert mixed == []
    job = {a: {"arch": a, "rows": [{"epoch": 1, "attack_accuracy": 0.5}], "best_val_epoch": 1} for a in ("ffnn", "rnn")}
    typed = analysis_registry.read_result("overtraining", job)
    assert all(isinstance(v, Vulnerability) for v in typed.values())
    assert analysis_registry.laid_out({"overtraining": typed}) == {"overtraining": job}
    assert analysis_registry.read_result("nope", {"x": 1}) == {"x": 1}  # no reader (an unknown name): as given
    assert analysis_registry.read_result("overtraining", typed) == typed  # typed already: kept, not read again


def test_the_views_take_typed_results_only_and_every_builtin_reads_its_json():
    """The Analyses page's text, tables and figures take the typed results (no ``X | Mapping`` alternative coerced
    inside); every built-in analysis registers its reader, so the registry hands its builders typed data, and a
    per-record view (one view over both architectures, ``whole``) is read and written back whole."""
    import inspect
    import re

    from core.analyses.analysis_results import ExposureView, SlicesView
    from core.views import analyses_text, analysis_figures, analysis_tables, record_view_figures

    mixed = [f"{module.__name__}.{name}({p.name})" for module in (analyses_text, analysis_figures, analysis_tables,
                                                                 record_view_figures)
             for name, fn in inspect.getmembers(module, inspect.isfunction) if fn.__module__ == module.__name__
             for p in inspect.signature(fn).parameters.values()
             if re.search(r"\| (dict|Mapping)\b|Mapping\[str, Any\]\]|dict\[str, dict\[str, Any\]\]", str(p.annotation))]
    assert mixed == []
    assert [a.name for a in analysis_registry.registered() if a.reads is None] == []
    exposure = {"attack": "lira", "archs": ["ffnn", "rnn"], "records": [7], "membership": [True],
                "scores": {"ffnn": [0.1], "rnn": [0.2]}, "cross_entropy": {"ffnn": [1.0], "rnn": [1.0]},
                "ape": {"ffnn": [0.1], "rnn": [0.1]}, "quadrants": {}, "fpr_labels": {"0.01": "1 %"}}
    sliced = {"attack": "lira", "min_records": 30, "archs": {"ffnn": {"class": []}}}
    typed = analysis_registry.read_results({"exposure": exposure, "slices": sliced, "task": "image"})
    assert isinstance(typed["exposure"], ExposureView) and isinstance(typed["slices"], SlicesView)
    assert typed["task"] == "image"  # not an analysis: as it is
    assert analysis_registry.laid_out(typed) == {"exposure": exposure, "slices": sliced, "task": "image"}


def test_a_toy_analysis_appears_in_the_cli_its_files_and_the_html_export(toys, tmp_path, capsys, monkeypatch):
    from core.cli.main import main
    from core.views.report import html_report

    monkeypatch.setattr("core.foundations.device.configure_threads", lambda: 1)
    assert analysis_registry.names()[-1] == "toy"
    sets = [f"--set={k}={','.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in TINY.items()]
    out = tmp_path / "a"
    assert main(["analyze", "--task", "image", *sets, "--analysis", "toy", "--out", str(out), "--quiet"]) == 0
    printed = unstamped(json.loads(capsys.readouterr().out))
    assert printed["toy_verdict"]["text"].startswith("toy difference")  # its verdict, from its data
    assert set(printed) == {"rnn_more_vulnerable", "toy_verdict"}
    results = json.loads((out / "analyses.json").read_text())
    assert set(results["toy"]) == {"ffnn", "rnn"} and len(results["toy"]["ffnn"]["rows"]) == 3
    assert sorted(p.name for p in out.iterdir()) == ["analyses.json", "toy.csv", "toy.html"]
    assert (out / "toy.csv").read_text().splitlines()[0] == "arch,step,value"
    assert toys.FIGURE_TITLE in (out / "toy.html").read_text()
    page = html_report(AnalysesResults.from_dict(results), {}, "t")
    assert toys.FIGURE_TITLE in page and "toy verdict" in page
    # an unknown name is refused before any work, the registry's names listed
    with pytest.raises(ConfigError, match="unknown analyses.*toy"):
        analysis.analyze({"ffnn": tiny("ffnn")}, ("nope",))
    toys.unregister()
    assert "toy" not in analysis_registry.names()
    assert main(["analyze", "--task", "image", *sets, "--analysis", "toy", "--out", str(tmp_path / "b"),
                 "--quiet"]) == 2  # gone with its registration


def test_a_toy_long_analysis_and_a_toy_job_kind_run_in_the_worker_and_reach_the_job_list(toys, tmp_path):
    from ui.shared import job_manager

    cfg = tiny("ffnn")
    manager = JobManager(workers=1)
    try:
        job = manager.submit([cfg], "analysis", {"name": "toy", "accuracy": 0.25}).jobs[0]
        wait(lambda: job.done)
        assert job.state == DONE, job.error
        assert job.result == toys.toy_of("ffnn", 0.25) and "toy analysis" in job.label
        assert job.worker_pid in manager.worker_pids()
    finally:
        manager.shutdown()
    # a kind nobody registered is refused at submit, before any worker sees it
    with pytest.raises(ValueError, match="unknown job kind"):
        job_key(cfg, "toy-unregistered")
    # the toy kind through the server's queue (a worker that may predate the registration) to the sidebar
    gate = tmp_path / "gate"
    job = job_manager().submit([cfg], "toy", {"gate": str(gate), "echo": "hi"}).jobs[0]
    assert job.label.endswith(" · toy job")
    wait(lambda: job.event is not None and job.event.stage == "toy waiting" or job.done)
    assert job.state == "running", job.error
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.run(timeout=120)
    assert not at.exception, at.exception
    shown = [p.proto.text for p in at.get("progress")] + [c.value for c in at.sidebar.caption]
    assert any(plain_markdown(job.label) in t for t in shown), shown  # the label as text
    assert any(t.startswith("toy waiting") for t in shown), shown
    gate.touch()
    wait(lambda: job.done)
    assert job.state == DONE, job.error
    assert job.result == {"arch": "ffnn", "echo": "hi", "gate_seen": True}
