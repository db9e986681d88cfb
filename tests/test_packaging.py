"""Installing it like any tool: the version, the import that a user's own ``core/`` cannot shadow, ``--config``
files read back to the same hash, the envelope every written JSON carries, the checked-in JSON Schemas, and the
CLI's progress (a bar on a terminal, lines otherwise)."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest
from shared_runs import use_tiny_image_preset

from core.cli.main import main
from core.cli.progress import Progress
from core.foundations.errors import ResultFormatError
from core.foundations.version import SCHEMAS, VERSION, schema_of, stamped

ROOT = Path(__file__).resolve().parent.parent


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_version_is_one_string_in_pyproject_the_cli_and_the_changelog(capsys):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["name"] == "mia-explorer"
    assert project["tool"]["hatch"]["version"]["path"] == "core/foundations/version.py"
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"mia-explorer {VERSION}"
    assert f"## {VERSION}" in (ROOT / "CHANGELOG.md").read_text()
    assert "Apache License" in (ROOT / "LICENSE").read_text()


def test_a_core_folder_in_the_working_directory_does_not_shadow_the_library(tmp_path):
    """``python -m mia_explorer`` (what the console command runs) and ``import mia_explorer`` from a folder that
    holds its own ``core/`` package load the library; a plain ``import core`` there gets the user's folder."""
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "__init__.py").write_text("raise ImportError('the user core folder was imported')\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    version = subprocess.run([sys.executable, "-m", "mia_explorer", "--version"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"mia-explorer {VERSION}"
    probe = "import mia_explorer, core; print(core.__file__)"
    bound = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=120)
    assert bound.returncode == 0, bound.stderr
    assert Path(bound.stdout.strip()) == ROOT / "core" / "__init__.py"
    shadowed = subprocess.run([sys.executable, "-c", "import core"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
    assert "the user core folder was imported" in shadowed.stderr  # what mia_explorer protects from
    late = subprocess.run([sys.executable, "-c", "import core, mia_explorer"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert late.returncode != 0 and "the user core folder was imported" in late.stderr


def test_the_app_command_serves_the_shipped_app_in_its_own_folder(tmp_path, monkeypatch):
    from mia_explorer.cli import app_command, app_root

    root = app_root()
    assert (root / "app.py").is_file() and (root / ".streamlit" / "config.toml").is_file()
    assert tomllib.loads((root / ".streamlit" / "config.toml").read_text())["server"]["address"] == "127.0.0.1"
    monkeypatch.chdir(tmp_path)
    command, env = app_command(root, ["--server.port", "8600"],
                               {"MIA_CACHE_DIR": "rel/cache", "MIA_PLUGINS": f"a.py{os.pathsep}/x/b.py"})
    assert command[1:6] == ["-P", "-m", "streamlit", "run", str(root / "app.py")] and command[-2:] == ["--server.port", "8600"]
    assert env["MIA_CACHE_DIR"] == str(tmp_path / "rel" / "cache")  # the server runs in the app's folder
    assert env["MIA_PLUGINS"] == f"{tmp_path / 'a.py'}{os.pathsep}/x/b.py"


@pytest.mark.parametrize("suffix", [".toml", ".yaml", ".json"])
def test_config_out_is_read_back_by_config_to_the_same_hash(tmp_path, capsys, suffix):
    path = tmp_path / f"c{suffix}"
    rc, _, err = run_cli(capsys, "config", "--task", "translation", "--arch", "ffnn", "--preset", "quick",
                         "--set", "epochs=3", "--set", "lr=0.0003", "--set", "attack_epochs=2,1", "--out", str(path))
    assert rc == 0, err
    rc, out, err = run_cli(capsys, "config", "--task", "translation", "--arch", "ffnn", "--set", "epochs=3",
                           "--set", "lr=0.0003", "--set", "attack_epochs=1,2")
    expected = json.loads(out)
    rc, out, err = run_cli(capsys, "config", "--config", str(path))
    assert rc == 0, err
    read = json.loads(out)
    assert read["config_hash"] == expected["config_hash"] and read["config"] == expected["config"]
    assert read["schema"] == schema_of("config") and read["mia_explorer_version"] == VERSION
    rc, out, _ = run_cli(capsys, "config", "--config", str(path), "--set", "epochs=4")  # --set wins over the file
    assert rc == 0 and json.loads(out)["config"]["epochs"] == 4
    rc, _, err = run_cli(capsys, "config", "--config", str(path), "--task", "image")
    assert rc == 2 and err.startswith("error: --task image contradicts the config file's task = translation")


def test_a_config_file_with_an_unknown_key_or_bad_syntax_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('task = "image"\nepochs = 3\nepoch = 4\n')
    rc, out, err = run_cli(capsys, "run", "--config", str(bad))
    assert rc == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: unknown config key 'epoch'")
    broken = tmp_path / "broken.yaml"
    broken.write_text("epochs: [3\n")
    rc, _, err = run_cli(capsys, "run", "--config", str(broken))
    assert rc == 2 and err.count("\n") == 1 and "is not valid YAML" in err
    other = tmp_path / "c.ini"
    other.write_text("[x]\n")
    rc, _, err = run_cli(capsys, "run", "--config", str(other))
    assert rc == 2 and "must end in .toml, .yaml, .yml, .json" in err
    rc, _, err = run_cli(capsys, "config", "--out", str(tmp_path / "c.cfg"))
    assert rc == 2 and "must end in" in err and not (tmp_path / "c.cfg").exists()


def test_every_example_config_makes_a_valid_config(capsys):
    examples = sorted((ROOT / "examples").glob("*.toml")) + sorted((ROOT / "examples").glob("*.yaml"))
    tasks = set()
    for path in examples:
        rc, out, err = run_cli(capsys, "config", "--config", str(path))
        assert rc == 0, (path, err)
        tasks.add(json.loads(out)["config"]["task"])
    assert tasks >= {"image", "translation", "navigation", "tabular"}


def test_a_run_from_a_config_file_writes_its_schema_and_the_same_hash(tmp_path, capsys, monkeypatch):
    use_tiny_image_preset(monkeypatch)
    config = tmp_path / "c.toml"
    assert run_cli(capsys, "config", "--task", "image", "--arch", "ffnn", "--out", str(config))[0] == 0
    hash_ = tomllib.loads(config.read_text())["config_hash"]
    out = tmp_path / "r.json"
    rc, _, err = run_cli(capsys, "run", "--config", str(config), "--quiet", "--out", str(out))
    assert rc == 0, err
    result = json.loads(out.read_text())
    assert result["config_hash"] == hash_
    assert list(result)[:2] == ["schema", "mia_explorer_version"] and result["schema"] == schema_of("run")
    jsonschema.Draft202012Validator(json.loads((ROOT / "docs/schemas/run.schema.json").read_text())).validate(result)
    from core.experiment.results import RunSummary

    run = RunSummary.from_dict(result)  # a reader of the cache reads the CLI's file too
    assert run.config_hash == hash_ and "schema" not in run.to_dict()
    newer = {**result, "schema": {"name": "mia-explorer/run", "version": SCHEMAS["run"] + 1}}
    with pytest.raises(ResultFormatError, match="reads up to version"):
        RunSummary.from_dict(newer)


def test_the_checked_in_json_schemas_are_the_generated_ones():
    from core.analyses.json_schemas import LAYOUTS, schema, schema_text

    for name in LAYOUTS:
        checked_in = ROOT / "docs" / "schemas" / f"{name}.schema.json"
        assert checked_in.read_text() == schema_text(name), (
            f"{checked_in} is stale: python -m core.analyses.json_schemas docs/schemas")
        jsonschema.Draft202012Validator.check_schema(schema(name))


def test_stamping_is_idempotent_and_refuses_a_layouts_own_schema_key():
    once = stamped({"a": 1}, "run")
    assert once == {"schema": schema_of("run"), "mia_explorer_version": VERSION, "a": 1}
    assert stamped(once, "compare") == {**once, "schema": schema_of("compare")}
    with pytest.raises(ValueError, match="key 'schema' of its own"):
        stamped({"schema": 3}, "run")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_a_bar_on_a_terminal_lines_otherwise_and_nothing_when_quiet():
    from core.foundations.progress import ProgressEvent

    events = [ProgressEvent(stage="train victim", stage_fraction=f, overall_fraction=f / 2, elapsed_s=0.0,
                            eta_s=None)
              for f in (0.25, 0.5, 1.0)]
    term, plain, quiet = Terminal(), io.StringIO(), io.StringIO()
    for stream, is_quiet in ((term, False), (plain, False), (quiet, True)):
        progress = Progress(is_quiet, stream)
        for ev in events:
            progress(ev)
        progress.say("done")
        progress.close()
    assert "\r" in term.getvalue() and "train victim" in term.getvalue() and "done" in term.getvalue()
    assert plain.getvalue().splitlines() == ["[ 12.5%] train victim: 25%", "[ 25.0%] train victim: 50%",
                                             "[ 50.0%] train victim: 100%", "done"]
    assert quiet.getvalue() == ""
