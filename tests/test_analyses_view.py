"""Pages only draw: the Analyses page's scatter, vulnerability and verdicts are one core call,
:func:`core.analyses.analyses_view.analyses_view`, that reads cached runs and models only (never trains);
``python -m core analyze --cached`` writes the same data as JSON."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.analyses import analyses_view, analysis
from core.analyses.analyses_json import AnalysesResults
from core.analyses.analysis_results import Vulnerability
from core.experiment.pipeline import load_models, run_experiment
from core.experiment.results import RunSummary
from core.foundations.errors import NotCachedError
from core.foundations.version import unstamped
from core.tasks import get_task

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(n_train=40, n_eval=20, epochs=3, n_shadows=1, attack_epochs=(2,), attack_train_epochs=3)
SETS = [a for k, v in {**TINY, "attack_epochs": "2"}.items() for a in ("--set", f"{k}={v}")]


def no_training(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("the analyses view trained a model")

    monkeypatch.setattr(type(get_task("image")), "train", refuse)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "core", "analyze", "--task", "image", "--preset", "quick", *SETS,
                           "--cached", "--quiet", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def analyze(capsys: pytest.CaptureFixture, *args: str) -> subprocess.CompletedProcess:
    """The same command as :func:`cli`, in this process (``main``, what ``python -m core`` calls): its exit
    status, stdout and stderr, as ``cli`` returns them."""
    from core.cli.main import main

    capsys.readouterr()  # what the test printed before is not the command's
    rc = main(["analyze", "--task", "image", "--preset", "quick", *SETS, "--cached", "--quiet", *args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["python", "-m", "core", "analyze", *args], rc, out, err)


def test_the_view_reads_the_cache_only_and_the_cli_writes_it(tmp_path, monkeypatch, capsys):
    task = get_task("image")
    configs = {a: task.make_config(a, "quick", TINY) for a in ("ffnn", "rnn")}
    # nothing cached: one error line, nothing trained, no folder written
    with pytest.raises(NotCachedError, match="not cached"):
        analyses_view.analyses_view(configs)
    p = cli("--out", str(tmp_path / "none"))
    assert p.returncode == 2 and p.stderr.startswith("error: ") and p.stderr.count("\n") == 1, p.stderr
    assert "not cached" in p.stderr and not (tmp_path / "none").exists()

    summaries = {a: run_experiment(c).summary for a, c in configs.items()}
    no_training(monkeypatch)
    view = analyses_view.analyses_view(configs)
    data = view.to_dict()
    assert {"scatter", "most_exposed", "vulnerability", "verdicts"} <= set(data) and "repeats" not in data
    typed = view.as_results()  # analyses.json's one class: verdicts typed, the analyses under their names
    assert isinstance(typed, AnalysesResults) and typed.to_dict() == data and typed.task == "image"
    assert set(typed.verdicts) == set(view.verdicts) and list(typed.analyses) == list(view.results)
    assert set(view.verdicts) == {"rnn_more_vulnerable", "lower_member_entropy", "rnn_more_vulnerable_over_training"}
    # the same numbers as the analyses themselves on the same runs
    assert data["scatter"]["rnn"]["attacks"]["shadow"]["accuracy"] == \
        analysis.entropy_scatter(RunSummary.from_dict(summaries["rnn"])).attacks["shadow"].accuracy
    for arch, rows in data["most_exposed"].items():  # each most exposed member names its record's data index
        evaluated = list(load_models(configs[arch]).splits.eval_index)
        assert rows and [r["index"] for r in rows] == [int(evaluated[r["position"]]) for r in rows]
        assert all(view.summaries[arch].per_record.membership[r["position"]] for r in rows)
    assert [r["epoch"] for r in data["vulnerability"]["ffnn"]["rows"]] == [1, 2, 3]

    # a long analysis' result joins the view with its own verdict
    over = {a: Vulnerability.from_dict({
        "arch": a, "rows": [{"epoch": 1, "utility_val": 0.5, "utility_train": 0.5, "attack_accuracy": 0.5},
                            {"epoch": 3, "utility_val": 0.4, "utility_train": 0.9, "attack_accuracy": x}],
        "best_val_epoch": 1}) for a, x in (("ffnn", 0.9), ("rnn", 0.6))}
    more = view.with_results(overtraining=over)
    assert "overtraining_raises_ffnn_more" in more.verdicts and "overtraining_raises_ffnn_more" not in view.verdicts

    out = tmp_path / "out"
    # in this process, so the command runs under no_training too (a real process is started above)
    p = analyze(capsys, "--out", str(out))
    assert p.returncode == 0, p.stderr
    written = json.loads((out / "analyses.json").read_text())
    assert unstamped(json.loads(p.stdout)) == written["verdicts"] == json.loads(json.dumps({k: v.to_dict() for k, v in view.verdicts.items()}))
    assert written["scatter"] == json.loads(json.dumps(data["scatter"]))
    assert (out / "scatter.csv").stat().st_size > 0 and (out / "vulnerability.html").is_file()
    # analyses that train are refused with --cached, before any work
    p = analyze(capsys, "--analysis", "overtraining", "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and "train models" in p.stderr and not (tmp_path / "o").exists()
    p = analyze(capsys, "--repeats", "2", "--out", str(tmp_path / "r"))
    assert p.returncode == 2 and "only 1 repeat" in p.stderr


def test_the_analyses_page_draws_the_view(monkeypatch):
    """The page shows the verdicts of the one core call, for the runs the page names (the quick preset)."""
    task = get_task("image")
    monkeypatch.setitem(task.presets, "quick", {**task.presets["quick"], **TINY})
    configs = {a: task.make_config(a, "quick") for a in ("ffnn", "rnn")}
    for cfg in configs.values():
        run_experiment(cfg)
    no_training(monkeypatch)
    view = analyses_view.analyses_view(configs)
    at = AppTest.from_file(str(ROOT / "app_pages" / "4_Analyses.py"))
    at.run(timeout=120)
    assert not at.exception, at.exception
    shown = [m.value for m in at.markdown if m.value.startswith("**This run:**")]
    assert shown == [f"**This run:** {view.verdicts['lower_member_entropy'].value} — "
                     f"{view.verdicts['lower_member_entropy'].text}"]
    at.session_state["analyses:tab"] = "Over training"
    at.run(timeout=120)
    assert not at.exception, at.exception
    shown = [m.value for m in at.markdown if m.value.startswith("**This run:**")]
    assert shown == [f"**This run:** {view.verdicts['rnn_more_vulnerable_over_training'].value} — "
                     f"{view.verdicts['rnn_more_vulnerable_over_training'].text}"]
