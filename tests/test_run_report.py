"""The one run report (core/views/report.py): ``python -m core report`` on tiny cached runs writes the
same HTML page as the app's download, with the attacks table and the per-record views;
bad input is one ``error:`` line and exit 2; a report never trains."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.analyses import analyses_view
from core.experiment.pipeline import run_experiment
from core.foundations.errors import ConfigError, NotCachedError
from core.tasks import get_task
from core.views import report

ROOT = Path(__file__).resolve().parent.parent
#: two shadows: LiRA and RMIA (and so the exposure view and the reference budget) need two references
TINY = {"n_train": 40, "n_eval": 20, "epochs": 3, "n_shadows": 2, "attack_epochs": "", "attack_train_epochs": 3}
SETS = [a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, capture_output=True, text=True)


def in_process(capsys: pytest.CaptureFixture, *args: str) -> subprocess.CompletedProcess:
    """The same command as :func:`cli`, in this process (``main``, what ``python -m core`` calls): its exit
    status, stdout and stderr, as ``cli`` returns them."""
    from core.cli.main import main

    capsys.readouterr()  # what the test printed before is not the command's
    try:
        rc = main(list(args))
    except SystemExit as exit:  # argparse's own refusals (an option it does not know) exit
        rc = exit.code
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["python", "-m", "core", *args], rc, out, err)


def test_report_cli_writes_the_run_report_with_the_per_record_views(tmp_path, monkeypatch, capsys):
    task = get_task("image")
    configs = {a: task.make_config(a, "quick", TINY) for a in ("ffnn", "rnn")}
    missing = cli("report", "--task", "image", "--preset", "quick", *SETS, "--out", str(tmp_path / "r.html"))
    assert missing.returncode == 2 and missing.stderr.startswith("error: ") and missing.stderr.count("\n") == 1
    assert "not cached" in missing.stderr and "python -m core run" in missing.stderr
    assert not (tmp_path / "r.html").exists()  # refused: nothing written, nothing trained
    for cfg in configs.values():
        run_experiment(cfg)
    # the reports below run in this process (the refusal above started a real one): a report never trains
    monkeypatch.setattr(type(task), "train", lambda *a, **k: pytest.fail("the report trained"))
    out = tmp_path / "report.html"
    p = in_process(capsys, "report", "--task", "image", "--preset", "quick", *SETS, "--out", str(out))
    assert p.returncode == 0, p.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<h2>Attacks</h2>" in page and "Shadow-model classifier" in page and "TPR @ 1% FPR" in page
    assert "<h2>Per-record views</h2>" in page
    assert "Exposure: the same records under FFNN and RNN" in page and "exposed by" in page and "only RNN" in page
    assert "reference budget" in page and "flattens at" in page
    assert "Vulnerability per slice" in page and "class 0" in page
    assert "src=\"http" not in page and "src='http" not in page  # plotly.js inlined once: opens offline
    assert page.count("Plotly.newPlot") >= 8  # the run's figures and the views' figures
    # the app's download calls the same builder on the same summaries: the same sections
    summaries = analyses_view.cached_runs(configs)
    app_page = report.run_report(configs, summaries=summaries)
    for section in ("<h2>Attacks</h2>", "<h2>Per-record views</h2>", "Vulnerability per slice"):
        assert section in app_page
    # one architecture: the views that need two are said to be missing, not silently dropped
    one = tmp_path / "one.html"
    p = in_process(capsys, "report", "--task", "image", "--arch", "rnn", "--preset", "quick", *SETS, "--no-budget", "--out", str(one))
    assert p.returncode == 0, p.stderr
    text = one.read_text()
    assert "Not shown: exposure" in text and "reference budget" not in text and "Vulnerability per slice" in text


def test_a_run_not_cached_is_one_line_in_each_readers_own_class(monkeypatch):
    """The report and the analyses view read cached runs through one function: the
    same line naming the missing run and its command, raised as what each one's callers catch."""
    task = get_task("image")
    configs = {a: task.make_config(a, "quick", TINY) for a in ("ffnn", "rnn")}
    monkeypatch.setattr(type(task), "train", lambda *a, **k: pytest.fail("a reader of cached runs trained"))
    with pytest.raises(ConfigError) as in_report:
        report.run_report(configs)
    with pytest.raises(NotCachedError) as in_view:
        analyses_view.analyses_view(configs)
    assert not isinstance(in_report.value, NotCachedError) and not isinstance(in_view.value, ConfigError)
    assert str(in_report.value) == str(in_view.value)
    cfg = configs["ffnn"]
    assert str(in_view.value) == (f"the ffnn run of image (quick, config {cfg.config_hash[:12]}) is not cached: train it "
                                  "first (Train & attack, or python -m core run --task image --arch ffnn --preset quick "
                                  "with the same --set options)")


def test_report_cli_refuses_bad_input_in_one_line(tmp_path, capsys):
    """Each refusal in this process (``main``), the first one also through a real ``python -m core``."""
    (tmp_path / "folder.html").mkdir()
    cases = (["--arch", "ffnn", "--archs", "ffnn,rnn", "--out", str(tmp_path / "r.html")],
             ["--archs", "ffnn,cnn", "--out", str(tmp_path / "r.html")],
             ["--out", str(tmp_path / "folder.html")],
             ["--out", "/nonexistent-folder/r.html"],
             ["--set", "epochs=-1", "--out", str(tmp_path / "r.html")],
             [])
    for args in cases:
        p = in_process(capsys, "report", "--task", "image", *args)
        assert p.returncode == 2, (args, p.stderr)
        assert p.stderr.startswith("error: ") and p.stderr.count("\n") == 1 and not p.stdout, (p.stdout, p.stderr)
    p = cli("report", "--task", "image", *cases[0])
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("error: ") and p.stderr.count("\n") == 1, p.stderr
