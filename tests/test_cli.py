import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--set", "n_train=40", "--set", "n_eval=20", "--set", "epochs=2", "--set", "n_shadows=1",
        "--set", "attack_epochs=1", "--set", "attack_train_epochs=3"]


def cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, capture_output=True, text=True, env=env)


def test_run_writes_the_common_json(tmp_path):
    out = tmp_path / "r.json"
    p = cli("run", "--task", "image", "--arch", "rnn", "--preset", "quick", *TINY, "--out", str(out), "--quiet")
    assert p.returncode == 0, p.stderr
    d = json.loads(out.read_text())
    for key in ("task", "arch", "preset", "config", "config_hash", "params", "utility", "attack", "attacks",
                "per_epoch", "timings", "cache_hit"):
        assert key in d
    assert d["utility"]["metric"] == "accuracy" and 0 <= d["utility"]["val"] <= 1
    assert set(d["attacks"]) >= {"shadow", "loss_threshold", "entropy_threshold"}
    assert set(d["attack"]["tpr_at_fpr"]) == {"0.01", "0.001"}
    assert [r["epoch"] for r in d["per_epoch"]] == [1, 2]
    assert d["per_epoch"][0]["attack_accuracy"] is not None  # checkpoint epoch 1 was attacked
    assert set(d["timings"]) >= {"victim_s", "shadows_s", "attack_s", "total_s"}
    assert d["cache_hit"] is False
    rec = d["records"]
    assert len(rec["membership"]) == len(rec["ape"]) == len(rec["scores"]["shadow"]) == 40
    assert sum(rec["membership"]) == 20
    again = cli("run", "--task", "image", "--arch", "rnn", *TINY, "--quiet")
    assert json.loads(again.stdout)["cache_hit"] is True


def test_progress_goes_to_stderr_with_stage_names():
    p = cli("run", "--task", "image", "--arch", "ffnn", *TINY)
    assert p.returncode == 0
    assert "victim (ffnn)" in p.stderr and "shadow 1/1" in p.stderr
    json.loads(p.stdout)


def test_bad_input_gives_one_line_error_and_exit_2():
    for args in (["--set", "epochs=-3"], ["--set", "bogus=1"], ["--set", "noequals"], ["--preset", "nope"]):
        p = cli("run", "--task", "image", *args)
        assert p.returncode == 2, args
        assert p.stderr.startswith("error: ") and p.stderr.count("\n") == 1, p.stderr


def test_help_documents_the_commands():
    p = cli("--help")
    assert p.returncode == 0 and "run" in p.stdout and "config" in p.stdout
    p = cli("run", "--help")
    assert "--set" in p.stdout and "--out" in p.stdout
