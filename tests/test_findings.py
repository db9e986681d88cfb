"""Issue 35: the findings table from a tiny cached set of runs — measured cells carry N, the 95 %
interval and the verdict, the rest say "not run" with exactly the runs they need; the CLI writes
JSON + Markdown + HTML without training; the Findings page renders with its queue button."""
import json

import pytest

from core.analyses import findings as findings_mod
from core.analyses.findings import FINDINGS, TARGET_REPEATS, findings_table, missing_jobs, table_json
from core.analyses.repeats import comparison_configs, repeat_config, run_comparison
from core.cli import main
from core.experiment import roles
from core.views.findings_report import findings_markdown, row_cells

TINY = dict(n_train=40, n_eval=20, epochs=2, n_shadows=2, attack_epochs=(1,), attack_train_epochs=3)


@pytest.fixture
def two_repeats():
    """Repeats 0 and 1 of the tiny image comparison, trained and cached (2 shadows: LiRA and RMIA run)."""
    return run_comparison(comparison_configs("image", "quick", 2, TINY))


def _row(table, finding, task="image"):
    return next(r for r in table["rows"] if r["finding"] == finding and r["task"] == task)


def test_table_shows_measured_cells_with_n_and_interval_and_the_rest_not_run(two_repeats, monkeypatch):
    trained = []
    monkeypatch.setattr(roles, "train_role", lambda *a, **k: trained.append(a) or pytest.fail("the table trained"))
    table = findings_table(["image"], "quick", sets=TINY)
    assert trained == []
    assert [r["finding"] for r in table["rows"]] == ["F1", "F1a", "F2", "F4", "F5"]  # F3: no image row in the study
    f1 = _row(table, "F1")
    assert f1["status"] == "measured" and f1["n"] == 2
    comp = two_repeats["metrics"]["attack_accuracy"]
    m = f1["measured"]
    assert m["difference"]["mean"] == pytest.approx(comp["difference"]["diff"]["mean"])
    assert m["difference"]["ci_low"] == pytest.approx(comp["difference"]["diff"]["ci_low"])
    assert m["ffnn"]["n"] == m["rnn"]["n"] == 2
    # two repeats cannot reach a verdict (the sign-flip test needs 6)
    assert m["verdict"]["value"] == "inconclusive" and m["verdict"]["n"] == 2
    assert f1["resolution"]["n_members"] == TINY["n_eval"]
    assert f1["utility_gap"]["gap"]["n"] == 2 and isinstance(f1["utility_gap"]["matched"], bool)
    assert f1["command"].startswith("python -m core compare --task image --preset quick --set n_train=40")
    # the runs missing for N = 6: repeats 2..5 of both architectures, timed from the measured runs
    assert sorted((d["arch"], d["seed"]) for d in f1["missing"]) == sorted(
        (a, repeat_config(c, r).seed) for a, c in comparison_configs("image", "quick", 1, TINY).items()
        for r in range(2, TARGET_REPEATS))
    assert all(d["kind"] == "experiment" and d["expected_s"] > 0 for d in f1["missing"])
    assert "on this machine" in f1["missing_time"]
    f1a = _row(table, "F1a")
    assert f1a["status"] == "measured" and set(f1a["measured"]) == {"lira_auc", "rmia_auc"}
    assert f1a["measured"]["lira_auc"]["difference"]["n"] == 2
    for name in ("F2", "F4", "F5"):
        row = _row(table, name)
        assert row["status"] == "not run" and row["n"] == 0 and row["missing"]
        assert row_cells(row)["verdict"] == "not run"
    # F2 needs memorization jobs only; F4 / F5 the undefended and defended runs of each repeat
    assert {d["kind"] for d in _row(table, "F2")["missing"]} == {"analysis"}
    f4 = _row(table, "F4")["missing"]
    # the DP-SGD point of every repeat and arch; the undefended runs (DP off = the cached runs) of repeats 2..5
    assert len(f4) == 2 * TARGET_REPEATS + 2 * (TARGET_REPEATS - 2)
    assert any(d["config"]["dp"] == "epsilon" for d in f4)
    # the jobs of one row, each once; the whole table's, deduplicated
    assert len(missing_jobs(table, 0)) == len(f1["missing"])
    hashes = [(m.config.config_hash, m.kind) for m in missing_jobs(table)]
    assert len(hashes) == len(set(hashes))
    json.dumps(table_json(table), allow_nan=False)
    md = findings_markdown(table_json(table))
    assert "| F1 | image |" in md and "not run" in md and "N = 2" in md


def test_more_repeats_narrow_the_row_without_retraining(two_repeats, monkeypatch):
    configs = comparison_configs("image", "quick", 3, TINY)
    trained = []
    real = roles.train_role

    def counting(task, cfg, *a, **k):
        trained.append(cfg.seed)
        return real(task, cfg, *a, **k)

    monkeypatch.setattr(roles, "train_role", counting)
    run_comparison(configs)  # what the page's button queues: the missing repeat only
    assert set(trained) == {repeat_config(configs["ffnn"], 2).seed}
    row = _row(findings_table(["image"], "quick", sets=TINY), "F1")
    assert row["n"] == 3 and row["measured"]["difference"]["n"] == 3


def test_cli_writes_json_markdown_and_html_without_training(two_repeats, tmp_path, monkeypatch):
    monkeypatch.setattr(roles, "train_role", lambda *a, **k: pytest.fail("findings trained"))
    out, md, page = tmp_path / "f.json", tmp_path / "f.md", tmp_path / "f.html"
    sets = [x for k, v in TINY.items() for x in ("--set", f"{k}={','.join(map(str, v)) if isinstance(v, tuple) else v}")]
    assert main(["findings", "--task", "image", *sets, "--out", str(out), "--markdown", str(md),
                 "--html", str(page)]) == 0
    data = json.loads(out.read_text())
    assert data == json.loads(json.dumps(data))
    f1 = next(r for r in data["rows"] if r["finding"] == "F1")
    assert f1["n"] == 2 and f1["measured"]["verdict"]["value"] == "inconclusive"
    assert "| F1 | image |" in md.read_text() and "F1a" in md.read_text()
    assert "<table" in page.read_text() and "not run" in page.read_text()


def test_cli_refuses_bad_arguments_before_work(tmp_path, capsys):
    assert main(["findings", "--preset", "nope"]) == 2
    assert "unknown preset" in capsys.readouterr().err
    same = str(tmp_path / "x")
    assert main(["findings", "--out", same, "--markdown", same]) == 2
    with pytest.raises(SystemExit) as stop:
        main(["findings", "--task", "nosuch"])
    assert stop.value.code == 2


def test_every_finding_applies_to_a_task_with_a_source():
    assert set(FINDINGS) == {"F1", "F1a", "F2", "F3", "F4", "F5"}
    for f in FINDINGS.values():
        assert f.tasks and set(f.tasks) <= set(findings_mod.TASKS) and f.source.where


class _Recorder:
    """A stand-in job manager that records what the page queues (no worker process starts)."""

    def __init__(self):
        self.submitted = []

    def submit(self, configs, kind="experiment", params=None):
        self.submitted.append((kind, params, [c.config_hash for c in configs]))

    def active(self):
        return []

    def recent(self, seconds):
        return []


def test_page_renders_the_table_and_its_button_queues_exactly_the_missing_runs(two_repeats, monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    import ui.shared
    from core.tasks import get_task

    task = get_task("image")  # the page reads the quick preset: make it the tiny one the runs used
    monkeypatch.setattr(type(task), "presets", {**task.presets, "quick": {**task.presets["quick"], **TINY}})
    recorder = _Recorder()
    monkeypatch.setattr(ui.shared, "job_manager", lambda: recorder)
    root = Path(__file__).resolve().parent.parent
    at = AppTest.from_file(str(root / "app_pages/5_Findings.py"))
    at.session_state["findings:tasks"] = ["image"]
    at.run(timeout=120)
    assert not at.exception, at.exception
    frame = at.dataframe[0].value
    f1 = frame[frame["finding"] == "F1"].iloc[0]
    assert "N = 2" in f1["measured here (95 % CI, N)"] and "[" in f1["measured here (95 % CI, N)"]
    assert f1["verdict"].startswith("inconclusive")
    assert (frame[frame["finding"] == "F4"]["verdict"] == "not run").all()
    buttons = [b for b in at.button if b.label.startswith("Queue these")]
    assert buttons and any(b.label.startswith("Queue every missing run") for b in at.button)
    buttons[0].click().run(timeout=120)  # F1 image: repeats 2..5 of both architectures
    assert not at.exception, at.exception
    table = findings_table(["image"], "quick", sets=TINY)
    expected = sorted(d["config_hash"] for d in _row(table, "F1")["missing"])
    assert [(k, p) for k, p, _ in recorder.submitted] == [("experiment", None)]
    assert sorted(recorder.submitted[0][2]) == expected
