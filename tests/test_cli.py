import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from recompute import assert_attacks_match_records, recomputed

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--set", "n_train=40", "--set", "n_eval=20", "--set", "epochs=2", "--set", "n_shadows=1",
        "--set", "attack_epochs=1", "--set", "attack_train_epochs=3"]


def _val_accuracy(d):
    """Accuracy of the cached victim of run ``d`` on its non-members: argmax of its logits against the label."""
    from core.experiment.cache import ArtifactCache
    from core.experiment.pipeline import trained_models
    from core.tasks import get_task

    task = get_task(d["task"])
    cfg = task.make_config(d["arch"], d["preset"], dict(a.split("=", 1) for a in TINY[1::2]))
    assert cfg.config_hash == d["config_hash"]
    models = trained_models(cfg, cache=ArtifactCache())
    assert models.victim.cache_hit  # loaded, not trained again
    index = models.splits.victim_nonmembers
    with torch.no_grad():
        logits = models.model("victim")(models.data.records.images[index])
    return float((logits.argmax(1) == models.data.records.labels[index]).double().mean())


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
    # the utility is the final victim's accuracy on its non-members, recomputed here from the cached weights
    assert d["utility"]["metric"] == "accuracy" and d["utility"]["val"] == pytest.approx(_val_accuracy(d), abs=1e-6)
    assert d["utility"]["val"] == d["per_epoch"][-1]["utility_val"]
    # every attack's AUC and accuracy are what its stored per-record scores give
    assert_attacks_match_records(d["attacks"], rec := d["records"])
    assert d["attack"] == {k: v for k, v in d["attacks"]["shadow"].items() if k not in ("roc_fpr", "roc_tpr")}
    assert set(d["attacks"]) >= {"shadow", "loss_threshold", "entropy_threshold"}
    assert set(d["attack"]["tpr_at_fpr"]) == {"0.01", "0.001"}
    assert [r["epoch"] for r in d["per_epoch"]] == [1, 2]
    assert d["per_epoch"][0]["attack_accuracy"] is not None  # checkpoint epoch 1 was attacked
    assert set(d["timings"]) >= {"victim_s", "shadows_s", "attack_s", "total_s"}
    assert d["cache_hit"] is False
    assert len(rec["membership"]) == len(rec["ape"]) == len(rec["scores"]["shadow"]) == 40
    assert sum(rec["membership"]) == 20
    again = cli("run", "--task", "image", "--arch", "rnn", *TINY, "--quiet")
    cached = json.loads(again.stdout)
    assert cached["cache_hit"] is True and cached["attacks"] == d["attacks"] and cached["records"] == d["records"]


def test_online_lira_from_the_command_line(tmp_path):
    bad = cli("run", "--task", "image", "--arch", "ffnn", *TINY, "--online-lira", "1", "--quiet")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--online-lira" in bad.stderr
    sets = [a if a != "n_shadows=1" else "n_shadows=2" for a in TINY]
    p = cli("run", "--task", "image", "--arch", "ffnn", *sets, "--online-lira", "2", "--quiet")
    assert p.returncode == 0, p.stderr
    online = json.loads(p.stdout)["attacks"]["lira_online"]
    assert online["threat_model"] == "online" and online["reference_models"] == 2
    # its AUC and accuracy are those of its per-record scores, stored beside the other attacks' (its own:
    # not the offline LiRA's over the same shadows)
    records = json.loads(p.stdout)["records"]
    recomputed(online, records["scores"]["lira_online"], records["membership"])
    assert records["scores"]["lira_online"] != records["scores"]["lira"]
    # LiRA with augmented queries against the same online references (the pipeline ran before they existed)
    summary = json.loads(p.stdout)
    augmented = summary["attacks"]["lira_augmented_online"]
    assert augmented["threat_model"] == "online" and "lira_augmented_online" not in summary.get("attacks_not_run", {})
    recomputed(augmented, records["scores"]["lira_augmented_online"], records["membership"])
    assert records["scores"]["lira_augmented_online"] != records["scores"]["lira_online"]


def test_progress_goes_to_stderr_with_stage_names():
    p = cli("run", "--task", "image", "--arch", "ffnn", *TINY)
    assert p.returncode == 0
    assert "victim (ffnn)" in p.stderr and "shadow 1/1" in p.stderr
    json.loads(p.stdout)


def test_bad_input_gives_one_line_error_and_exit_2():
    for args in (["--set", "epochs=-3"], ["--set", "bogus=1"], ["--set", "noequals"], ["--preset", "nope"],
                 ["--arch", "cnn"], ["--set", "epochs=3", "--set", "epochs=4"], ["--set", "task=translation"],
                 ["--out", "/nonexistent-folder/r.json"]):
        p = cli("run", "--task", "image", *args)
        assert p.returncode == 2, args
        assert p.stderr.startswith("error: ") and p.stderr.count("\n") == 1, p.stderr


def test_help_documents_the_commands():
    p = cli("--help")
    assert p.returncode == 0 and "run" in p.stdout and "config" in p.stdout
    p = cli("run", "--help")
    assert "--set" in p.stdout and "--out" in p.stdout


def test_ctrl_c_prints_one_line_and_exits_130(tmp_path):
    """A real SIGINT while the victim trains: no traceback, one line, exit status 130."""
    env = dict(os.environ, MIA_CACHE_DIR=str(tmp_path / "cache"), MIA_DEVICE="cpu")
    long = [a if a != "epochs=2" else "epochs=5000" for a in TINY]
    # SIGINT as a terminal leaves it (a CI that runs in the background may start us with it ignored)
    p = subprocess.Popen([sys.executable, "-m", "core", "run", "--task", "image", "--arch", "ffnn", *long],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = []
    for line in p.stderr:  # wait until training has started
        lines.append(line)
        if "victim" in line:
            break
    p.send_signal(signal.SIGINT)
    _, rest = p.communicate(timeout=60)
    err = "".join(lines) + rest
    assert p.returncode == 130, err
    assert err.endswith("interrupted; cached models are kept\n") and "Traceback" not in err, err


def test_a_ctrl_c_swallowed_by_library_code_still_stops_the_run_at_the_next_progress_report(capsys):
    from core.cli.common import CtrlC, guarded

    reached = []

    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (a CI may ignore it)

    def command() -> int:
        assert signal.getsignal(signal.SIGINT) == CtrlC.handler
        try:
            CtrlC.handler(signal.SIGINT, None)  # what the signal does, wherever Python is …
        except KeyboardInterrupt:
            pass  # … and a catch-all (or a finalizer) drops it
        CtrlC.check()  # the next progress report
        reached.append("went on")
        return 0

    try:
        assert guarded(command) == 130 and not reached
        assert capsys.readouterr().err == "interrupted; cached models are kept\n"
        assert CtrlC.pending is False and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)


def test_defend_writes_the_documented_json(tmp_path):
    out = tmp_path / "d.json"
    p = cli("defend", "--task", "image", "--arch", "ffnn", *TINY, "--mechanism", "dirichlet", "--values", "100,0.01",
            "--attacker", "both", "--out", str(out), "--quiet")
    assert p.returncode == 0, p.stderr
    d = json.loads(out.read_text())
    assert (d["task"], d["arch"], d["mechanism"], d["attacker"]) == ("image", "ffnn", "dirichlet", "both")
    assert {"accuracy", "auc"} <= set(d["baseline"]["attack"]) and "utility" in d["baseline"]
    assert [pt["value"] for pt in d["points"]] == [100.0, 0.01]
    assert d["spec"]["draws"] == 8  # no --draws: the mechanism's default, as on the Defenses page
    for pt in d["points"]:
        for key in ("attack", "adaptive_attack", "utility", "utility_loss", "epsilon", "delta", "gamma",
                    "epsilon_lower_bound", "timings"):
            assert key in pt, key
        assert {"accuracy", "advantage", "auc", "tpr_at_fpr"} <= set(pt["attack"])
        assert pt["adaptive_attack"] is not None


def test_defend_gpm_reports_epsilon_from_the_sensitivity_sampler(tmp_path):
    p = cli("defend", "--task", "image", "--arch", "rnn", *TINY, "--mechanism", "gpm", "--values", "0,0.01",
            "--sensitivity-samples", "2", "--draws", "1", "--quiet")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["sensitivity"]["n"] == 2 and d["sensitivity"]["sensitivity"] > 0
    zero, noisy = d["points"]
    assert zero["epsilon"] is None and noisy["epsilon"] > 0 and noisy["gamma"] > 0  # σ = 0: ε = ∞ (null)
    assert zero["attack"]["accuracy"] == d["baseline"]["attack"]["accuracy"]


def test_defend_refuses_bad_values_in_one_line(capsys):
    """Each refusal checked in this process (``main``, what ``python -m core`` calls: exit status 2, one
    ``error:`` line on stderr, nothing on stdout); the first one also through a real ``python -m core``, for
    the process's own exit status and stderr (an import-time warning or traceback would show there)."""
    from core.cli.main import main

    cases = (["--mechanism", "dirichlet", "--values", "0"], ["--mechanism", "gpm", "--values", "-1"],
             ["--mechanism", "dirichlet", "--values", "nan"], ["--mechanism", "laplace", "--values", "1"],
             ["--mechanism", "gpm", "--values", "0.1", "--attacker", "smart"])
    for args in cases:
        try:
            rc = main(["defend", "--task", "image", *args])
        except SystemExit as exit:  # argparse's own refusals (a choice it does not know) exit
            rc = exit.code
        out, err = capsys.readouterr()
        assert rc == 2, args
        assert err.startswith("error: ") and err.count("\n") == 1 and not out, (out, err)
    p = cli("defend", "--task", "image", *cases[0])
    assert p.returncode == 2
    assert p.stderr.startswith("error: ") and p.stderr.count("\n") == 1, p.stderr
