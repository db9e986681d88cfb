"""A task plugin — a Python file (``--plugin``, ``$MIA_PLUGINS``) or an installed
package's entry point — joins the registry, runs through the CLI (its worker processes included),
and every bad plugin is refused in one line before any training."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from recompute import assert_attacks_match_records

from core.cli.main import main
from core.foundations.errors import ConfigError
from core.foundations.plugins import PLUGIN_ENV
from core.foundations.task_registry import REGISTRY, available_tasks, get_task, unload_plugins
from core.views.plain import shown_text

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "examples" / "plugin_task.py"
#: the template at sizes that train in seconds
TINY = ["--set", "n_train=60", "--set", "n_eval=40", "--set", "epochs=3", "--set", "n_shadows=1",
        "--set", "attack_epochs=", "--set", "attack_train_epochs=5"]


@pytest.fixture(autouse=True)
def no_plugins(monkeypatch):
    """Each test starts and ends with no plugin loaded and ``$MIA_PLUGINS`` empty (the CLI's
    ``--plugin`` writes to it; monkeypatch puts the old value back)."""
    monkeypatch.setenv(PLUGIN_ENV, "")
    unload_plugins()
    yield
    unload_plugins()


def write(path: Path, body: str) -> Path:
    path.write_text(textwrap.dedent(body))
    return path


#: a minimal task plugin: NAME and ARCHS filled in by the test
MINIMAL = '''
import numpy as np, torch
from torch import nn
from core.tasks import register_task
from core.tasks.base import Task, TaskData

class Tiny(Task):
    name = {name!r}
    archs = {archs!r}
    presets = {{"quick": dict(dataset="x", n_train=4, n_eval=2, epochs=1, n_shadows=1)}}
    datasets = ("x",)
    def load(self, cfg):
        return TaskData(torch.zeros(20, 2), np.arange(10), np.arange(10, 20), "zeros")
    def build_model(self, cfg, data):
        return nn.Linear(2, 2)
    def train(self, cfg, model, data, train_index, on_epoch, on_progress, on_batch=None):
        raise AssertionError("a refused config must never train")
    def utility(self, cfg, model, data, index, output_transform=None):
        return 0.0
    def respond(self, cfg, model, data, index, record_features=True):
        raise AssertionError("never queried")

register_task(Tiny)
'''


def refused(capsys, argv: list[str]) -> str:
    """Run the CLI in this process; it must exit 2 with one ``error:`` line and no traceback."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def cli(args: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k != PLUGIN_ENV}
    full_env.update(env, MIA_CACHE_DIR=str(tmp_path / "cache"), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, env=full_env, capture_output=True,
                          text=True, timeout=600)


# ------------------------------------------------------------------------------- the template, end to end
def test_the_template_runs_through_the_cli_with_plugin_and_its_pool_workers_load_it(tmp_path, monkeypatch):
    """``--plugin`` loads the file before the parser (its task is a --task choice) and hands it to the
    spawned pool workers through $MIA_PLUGINS: they train the victim and the shadow."""
    out = tmp_path / "result.json"
    done = cli(["run", "--plugin", "examples/plugin_task.py", "--task", "demo_sequences", "--arch", "ffnn",
                "--preset", "quick", *TINY, "--executor", "processes", "--workers", "2", "--quiet",
                "--out", str(out)], {}, tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.read_text())
    assert summary["task"] == "demo_sequences" and summary["arch"] == "ffnn"
    assert summary["utility"]["metric"] == "accuracy"
    _recompute_from_the_cache(summary, monkeypatch)


def test_the_template_runs_through_the_environment_variable(tmp_path, monkeypatch):
    out = tmp_path / "result.json"
    done = cli(["run", "--task", "demo_sequences", "--arch", "rnn", "--preset", "quick", *TINY, "--quiet",
                "--out", str(out)], {PLUGIN_ENV: str(TEMPLATE)}, tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.read_text())
    assert summary["task"] == "demo_sequences" and summary["arch"] == "rnn"
    _recompute_from_the_cache(summary, monkeypatch)


def _recompute_from_the_cache(summary: dict, monkeypatch) -> None:
    """The run's numbers recomputed here, not read back: its utility is the cached victim's accuracy on its
    non-members (argmax of its logits against the labels, the weights the pool workers cached), every
    attack's AUC and accuracy what its stored per-record scores give (tests/recompute.py), the headline
    attack the shadow model's. A utility or an AUC one record off fails."""
    import torch

    from core.experiment.pipeline import trained_models

    monkeypatch.setenv(PLUGIN_ENV, str(TEMPLATE))  # this process loads the template too
    task = get_task("demo_sequences")
    cfg = task.make_config(summary["arch"], "quick", dict(a.split("=", 1) for a in TINY[1::2]))
    assert cfg.config_hash == summary["config_hash"]
    models = trained_models(cfg)  # the CLI's cache (tests/conftest.py gives both this tmp_path's)
    assert models.victim.cache_hit
    index = models.splits.victim_nonmembers
    victim = models.model("victim").eval()
    with torch.no_grad():
        predicted = victim(models.data.records[0][index]).argmax(1)
    accuracy = float((predicted == models.data.records[1][index]).double().mean())
    assert summary["utility"]["val"] == pytest.approx(accuracy, abs=1e-12)
    assert summary["utility"]["val"] + 1 / len(index) != pytest.approx(accuracy, abs=1e-12)
    assert_attacks_match_records(summary["attacks"], summary["records"])
    wrong = {**summary["attacks"]["loss_threshold"]}
    wrong["auc"] += 1 / (wrong["n_members"] * wrong["n_nonmembers"])  # one (member, non-member) pair off
    with pytest.raises(AssertionError):
        assert_attacks_match_records({**summary["attacks"], "loss_threshold": wrong}, summary["records"])
    assert summary["attack"] == {k: v for k, v in summary["attacks"]["shadow"].items() if k not in ("roc_fpr", "roc_tpr")}


def test_the_template_matches_its_two_models_within_five_percent(monkeypatch):
    monkeypatch.setenv(PLUGIN_ENV, str(TEMPLATE))
    task = get_task("demo_sequences")  # an unknown name loads the configured plugins
    data = task.load(task.make_config("ffnn"))
    for hidden in (8, 32, 128):
        sizes = [task.param_count(task.build_model(task.make_config(a, "quick", {"hidden": hidden}), data))
                 for a in ("ffnn", "rnn")]
        assert abs(sizes[0] - sizes[1]) / sizes[0] < 0.05, (hidden, sizes)
    assert len(data.victim_pool) + len(data.attacker_pool) == len(set(data.victim_pool) | set(data.attacker_pool))


# ------------------------------------------------------------------------------- one model only
def test_a_plugin_with_one_model_runs_that_model_and_refuses_the_comparison(tmp_path, capsys):
    solo = write(tmp_path / "solo.py", TEMPLATE.read_text()
                 .replace('name = "demo_sequences"', 'name = "solo_sequences"')
                 .replace('# archs = ("ffnn",)', 'archs = ("ffnn",)'))
    line = refused(capsys, ["run", "--plugin", str(solo), "--task", "solo_sequences", "--arch", "rnn", *TINY])
    assert "provides the ffnn architecture only" in line and "comparison is unavailable" in line
    line = refused(capsys, ["compare", "--plugin", str(solo), "--task", "solo_sequences", "--repeats", "1", *TINY])
    assert "comparison is unavailable" in line
    out = tmp_path / "solo.json"
    assert main(["run", "--plugin", str(solo), "--task", "solo_sequences", *TINY, "--quiet",  # no --arch: ffnn
                 "--out", str(out)]) == 0
    assert json.loads(out.read_text())["arch"] == "ffnn"
    assert main(["analyze", "--plugin", str(solo), "--task", "solo_sequences", "--archs", "ffnn", *TINY, "--quiet",
                 "--analysis", "scatter", "--out", str(tmp_path / "analyses")]) == 0
    assert (tmp_path / "analyses" / "scatter.html").is_file()


# ------------------------------------------------------------------------------- bad plugins: one line each
def test_a_missing_plugin_file_is_refused(tmp_path, capsys):
    line = refused(capsys, ["config", "--plugin", str(tmp_path / "nowhere.py"), "--task", "image"])
    assert "nowhere.py does not exist" in line


def test_a_plugin_that_is_a_symbolic_link_is_refused(tmp_path, capsys):
    real = write(tmp_path / "real.py", MINIMAL.format(name="linked", archs=("ffnn", "rnn")))
    (tmp_path / "link.py").symlink_to(real)
    line = refused(capsys, ["config", "--plugin", str(tmp_path / "link.py"), "--task", "image"])
    assert "link.py is a symbolic link" in line
    assert "linked" not in available_tasks()  # nothing of it was executed


def test_a_plugin_that_is_not_a_python_file_is_refused(tmp_path, capsys):
    text = write(tmp_path / "task.txt", MINIMAL.format(name="texty", archs=("ffnn", "rnn")))
    assert "not a Python file" in refused(capsys, ["config", "--plugin", str(text), "--task", "image"])
    assert "is not a regular file" in refused(capsys, ["config", "--plugin", str(tmp_path), "--task", "image"])


def test_a_plugin_that_raises_at_import_is_one_line_naming_the_file_and_the_exception(tmp_path, capsys):
    broken = write(tmp_path / "broken.py", """
        import math
        RATE = 1 / 0
    """)
    line = refused(capsys, ["run", "--plugin", str(broken), "--task", "image"])
    assert str(broken) in line and "ZeroDivisionError: division by zero" in line
    syntax = write(tmp_path / "syntax.py", "def (:\n")
    assert "SyntaxError" in refused(capsys, ["run", "--plugin", str(syntax), "--task", "image"])
    exits = write(tmp_path / "exits.py", "import sys\nsys.exit(3)\n")
    assert "SystemExit: 3" in refused(capsys, ["run", "--plugin", str(exits), "--task", "image"])


def test_a_plugin_that_registers_no_task_is_refused(tmp_path, capsys):
    silent = write(tmp_path / "silent.py", MINIMAL.format(name="silent", archs=("ffnn", "rnn"))
                   .replace("register_task(Tiny)", ""))
    line = refused(capsys, ["config", "--plugin", str(silent), "--task", "image"])
    assert "silent.py registers no task" in line and "register_task" in line


def test_a_plugin_named_like_a_built_in_task_or_another_plugin_is_refused(tmp_path, capsys):
    image = write(tmp_path / "image_again.py", MINIMAL.format(name="image", archs=("ffnn", "rnn")))
    line = refused(capsys, ["config", "--plugin", str(image), "--task", "image"])
    assert "'image' is already taken (a built-in task" in line and "image_again.py" in line
    assert REGISTRY["image"] == "core.tasks.image:ImageTask"
    first = write(tmp_path / "first.py", MINIMAL.format(name="twin", archs=("ffnn", "rnn")))
    second = write(tmp_path / "second.py", MINIMAL.format(name="twin", archs=("ffnn", "rnn")))
    line = refused(capsys, ["config", "--plugin", str(first), "--plugin", str(second), "--task", "twin"])
    assert "second.py" in line and f"'twin' is already taken (by plugin {first})" in line


def test_a_plugin_with_a_bad_name_or_architecture_list_is_refused(tmp_path, capsys):
    spaced = write(tmp_path / "spaced.py", MINIMAL.format(name="my task", archs=("ffnn", "rnn")))
    assert "lowercase letters, digits and _" in refused(capsys, ["config", "--plugin", str(spaced), "--task", "image"])
    cnn = write(tmp_path / "cnn.py", MINIMAL.format(name="cnnonly", archs=("cnn",)))
    assert "archs must be" in refused(capsys, ["config", "--plugin", str(cnn), "--task", "image"])


def test_a_bad_file_in_the_environment_variable_is_one_line_for_every_command(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(PLUGIN_ENV, str(tmp_path / "gone.py"))
    assert "gone.py does not exist" in refused(capsys, ["config", "--task", "image"])


def test_the_environment_variable_is_read_lazily_and_lists_several_files(tmp_path, monkeypatch):
    a = write(tmp_path / "a.py", MINIMAL.format(name="alpha", archs=("ffnn",)))
    b = write(tmp_path / "b.py", MINIMAL.format(name="beta", archs=("rnn",)))
    assert "alpha" not in available_tasks()
    monkeypatch.setenv(PLUGIN_ENV, os.pathsep.join([str(a), "", str(b)]))
    assert get_task("beta").archs == ("rnn",)  # an unknown name loads the configured plugins
    assert {"alpha", "beta"} <= set(available_tasks())
    with pytest.raises(ConfigError, match="provides the rnn architecture only"):
        get_task("beta").make_config("ffnn")
    unload_plugins()
    monkeypatch.setenv(PLUGIN_ENV, "")
    assert "alpha" not in available_tasks()


def test_cli_plugin_is_handed_to_child_processes_through_the_environment(tmp_path):
    a = write(tmp_path / "a.py", MINIMAL.format(name="handed", archs=("ffnn", "rnn")))
    assert main(["config", "--plugin", str(a), "--task", "handed", "--arch", "ffnn"]) == 0
    assert os.environ[PLUGIN_ENV].split(os.pathsep) == [str(a)]


# ------------------------------------------------------------------------------- installed packages
def test_an_installed_entry_point_registers_its_task_and_a_broken_one_is_one_line(tmp_path, monkeypatch):
    """A package installed with ``[project.entry-points."mia_explorer.tasks"]``: its dist-info on
    the path is what ``pip install`` leaves."""
    write(tmp_path / "ep_tasks.py", MINIMAL.format(name="from_entry", archs=("ffnn", "rnn"))
          .replace("register_task(Tiny)", ""))
    info = tmp_path / "ep_demo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-demo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[mia_explorer.tasks]\nfrom_entry = ep_tasks:Tiny\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "from_entry" in available_tasks()
    assert get_task("from_entry").make_config("ffnn").task == "from_entry"
    unload_plugins()
    (info / "entry_points.txt").write_text("[mia_explorer.tasks]\nbroken = ep_missing_module:Task\n")
    with pytest.raises(ConfigError, match=r"entry point broken = ep_missing_module:Task .*ModuleNotFoundError"):
        available_tasks()


# ------------------------------------------------------------------------------- the app
def test_the_app_lists_a_plugin_task_and_says_when_its_comparison_is_unavailable(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    solo = write(tmp_path / "solo.py", MINIMAL.format(name="solo", archs=("ffnn",)))
    monkeypatch.setenv(PLUGIN_ENV, str(solo))  # the server's own environment
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("app_pages/1_Train_and_attack.py")
    at.run()
    assert not at.exception and "solo" in at.selectbox(key="train:task").options
    at.selectbox(key="train:task").set_value("solo").run()
    assert not at.exception
    assert at.multiselect[0].value == ["ffnn"] and len(at.multiselect[0].options) == 1  # no RNN offered
    assert any("comparison is unavailable" in c.value for c in at.caption)
    at.switch_page("app_pages/4_Analyses.py")
    at.query_params["task"] = "solo"
    at.run()
    assert not at.exception
    assert any("analyses compare FFNN with RNN, so they are unavailable" in i.value for i in at.info)


def test_the_app_reports_a_broken_plugin_in_one_message(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    broken = write(tmp_path / "broken.py", "raise RuntimeError('no GPU here')\n")
    monkeypatch.setenv(PLUGIN_ENV, str(broken))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception
    assert len(at.error) == 1 and "broken.py raised RuntimeError: no GPU here" in shown_text(at.error[0].value)


def test_dp_sgd_on_a_plugin_layer_opacus_cannot_clip_is_one_line(tmp_path, capsys):
    """The template's GRU is a plain nn.GRU: DP-SGD (per-sample gradients) refuses it in one line."""
    line = refused(capsys, ["run", "--plugin", str(TEMPLATE), "--task", "demo_sequences", "--arch", "rnn", *TINY,
                            "--set", "dp=sigma", "--quiet"])
    assert "DP-SGD cannot train this model" in line and "nn.GRU" in line
