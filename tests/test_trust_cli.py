"""Trust cases: the CLI's `--out`, one-line errors, refused input, orphans, the
app's error details. Files and nodes are stand-ins made in a temp folder (never the real /dev)."""
import errno
import importlib.util
import json
import os
import pickle
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy import special

from core.cli import common as cli_common
from core.cli import main as cli
from core.cli import output as cli_output
from core.foundations import fileio
from core.foundations.errors import ConfigError, DatasetNotFoundError, OutputPathError
from core.measurement.metrics import roc_auc
from core.views.plain import shown_text

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--set", "n_train=40", "--set", "n_eval=20", "--set", "epochs=2", "--set", "n_shadows=1",
        "--set", "attack_epochs=1", "--set", "attack_train_epochs=3"]


def stand_ins(folder: Path) -> dict[str, Path]:
    """A regular file, links to it and to nothing, a FIFO, a socket, a folder and a file used as a folder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "precious.txt").write_text("precious\n")
    os.symlink(folder / "precious.txt", folder / "link.json")
    os.symlink(folder / "nothing-here", folder / "dangling.json")
    os.mkfifo(folder / "fifo.json")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(folder / "sock.json"))
    sock.close()
    (folder / "dir").mkdir()
    os.symlink(folder / "dir", folder / "dirlink")
    return {name: folder / name for name in
            ("precious.txt", "link.json", "dangling.json", "fifo.json", "sock.json", "dir", "dirlink")}


# ---------------------------------------------------------------- refused before torch (one process)
_REFUSALS_SCRIPT = r"""
import contextlib, io, json, sys
from core.cli.main import main
out = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse's own errors
            rc = exc.code
    out.append({"argv": argv, "rc": rc, "stderr": err.getvalue(), "torch": "torch" in sys.modules})
print(json.dumps(out))
"""


def refusal_cases(t: Path, s: dict[str, Path]) -> list[list[str]]:
    long_name = str(t / ("a" * 300 + ".json"))
    long_path = str(t / ("d/" * 3000)) + "r.json"
    run = ["run", "--task", "image"]
    return [
        ["run", "--task", "nosuch"],
        ["run", "--task", "image", "--task", "image"],
        ["run", "--task", "image", "--task", "translation"],
        ["config", "--task", "image", "--task", "navigation"],
        [*run, "--arch", "rnn", "--arch", "ffnn"],
        [*run, "--preset", "quick", "--preset", "paper"],
        [*run, "--executor", "local", "--executor", "ray"],
        [*run, "--executor", "nope"],
        [*run, "--workers", "0"],
        [*run, "--workers", "-1"],
        [*run, "--workers", "x"],
        [*run, "--workers", "1.5"],
        [*run, "--workers", "2", "--workers", "2"],
        [*run, "--ray-address", "a", "--ray-address", "b"],
        [*run, "--set", "epochs=1", "--set", "epochs=2"],
        [*run, "--set", "noequals"],
        [*run, "--set", "task=translation"],
        [*run, "--online-lira", "1"],
        [*run, "--online-lira", "65"],
        [*run, "--online-lira", "2", "--online-lira", "2"],
        [*run, "--out", ""],
        [*run, "--out", "   "],
        [*run, "--out", "~nosuchuser/r.json"],
        [*run, "--out", long_name],
        [*run, "--out", long_path],
        [*run, "--out", str(s["link.json"])],
        [*run, "--out", str(s["dangling.json"])],
        [*run, "--out", str(s["fifo.json"])],
        [*run, "--out", str(s["sock.json"])],
        [*run, "--out", str(s["dir"])],
        [*run, "--out", str(t) + "/"],
        [*run, "--out", str(s["precious.txt"] / "r.json")],
        [*run, "--out", str(t / "missing" / "r.json")],
        [*run, "--out", str(t / "a.json"), "--out", str(t / "b.json")],
        ["defend", "--task", "image", "--mechanism", "dirichlet", "--values", ""],
        ["defend", "--task", "image", "--mechanism", "dirichlet", "--values", "nan"],
        ["defend", "--task", "image", "--mechanism", "dirichlet", "--values", "1,x"],
        ["defend", "--task", "image", "--mechanism", "dirichlet", "--values", "1", "--values", "2"],
        ["defend", "--task", "image", "--mechanism", "dirichlet", "--mechanism", "gpm", "--values", "1"],
        ["defend", "--task", "image", "--mechanism", "gpm", "--values", "1", "--sensitivity-samples", "-1"],
        ["defend", "--task", "image", "--mechanism", "dirichlet", "--values", "1", "--out", str(s["fifo.json"])],
        ["defend", "--task", "image", "--mechanism", "dirichlet", "--values", "1", "--out", ""],
        ["analyze", "--task", "image", "--out", str(s["precious.txt"])],
        ["analyze", "--task", "image", "--out", str(s["dirlink"])],
        ["analyze", "--task", "image", "--out", str(s["fifo.json"])],
        ["analyze", "--task", "image", "--out", "~nosuchuser/reports"],
        ["analyze", "--task", "image", "--out", ""],
        ["analyze", "--task", "image", "--out", str(t / "x"), "--out", str(t / "y")],
        ["analyze", "--task", "image", "--out", str(t / "never"), "--analysis", " , "],
        ["analyze", "--task", "image", "--out", str(t / "never"), "--archs", "cnn"],
    ]


def test_refused_input_is_one_line_exit_2_before_torch_is_imported(tmp_path):
    """Every refusal answers with one `error:` line and exit 2, and none of them imports torch (so
    it answers at once); the stand-in nodes are left as they were and no folder is created."""
    s = stand_ins(tmp_path / "nodes")
    cases = refusal_cases(tmp_path / "nodes", s)
    env = dict(os.environ, MIA_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, "-c", _REFUSALS_SCRIPT, json.dumps(cases)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    results = json.loads(p.stdout)
    assert len(results) == len(cases)
    for r in results:
        assert r["rc"] == 2, r
        assert r["stderr"].startswith("error: ") and r["stderr"].count("\n") == 1, r
        assert len(r["stderr"]) < 400, r  # long paths are shortened in messages
        assert "Traceback" not in r["stderr"] and not r["torch"], r
    assert s["precious.txt"].read_text() == "precious\n" and os.path.islink(s["link.json"])
    assert stat.S_ISFIFO(os.lstat(s["fifo.json"]).st_mode) and stat.S_ISSOCK(os.lstat(s["sock.json"]).st_mode)
    assert not (tmp_path / "nodes" / "never").exists()
    assert not list((tmp_path / "nodes").glob(".mia-out.*"))  # no probe left behind


def test_messages_say_what_is_wrong(tmp_path, capsys):
    s = stand_ins(tmp_path)
    expected = {
        str(s["link.json"]): "symbolic link", str(s["fifo.json"]): "FIFO", str(s["sock.json"]): "socket",
        str(s["dir"]): "folder", "~nosuchuser/r.json": "no such user", str(tmp_path / ("a" * 300)): "longer than",
    }
    for out, words in expected.items():
        with pytest.raises(OutputPathError, match=words):
            fileio.check_out_path(out)
    with pytest.raises(SystemExit):
        cli.main(["run", "--task", "image", "--task", "image"])
    assert "--task given twice" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["run", "--workers", "0"])
    assert "at least 1" in capsys.readouterr().err


def test_a_device_node_is_refused(tmp_path, monkeypatch):
    """A character device at --out (e.g. /dev/stdout, /dev/full): simulated on a stand-in file by
    reporting a character device's mode from lstat (the real /dev is never touched)."""
    target = tmp_path / "stdout"
    target.write_text("node\n")
    real_lstat = os.lstat

    def lstat(path, *a, **k):
        st = real_lstat(path, *a, **k)
        if Path(path) == target:
            return os.stat_result((stat.S_IFCHR | 0o620, *tuple(st)[1:]))
        return st

    monkeypatch.setattr(fileio.os, "lstat", lstat)
    with pytest.raises(OutputPathError, match="a device"):
        fileio.check_out_path(target)
    with pytest.raises(OutputPathError, match="a device"):
        fileio.write_json_atomically(target, {"a": 1})
    assert target.read_text() == "node\n"


# ---------------------------------------------------------------- the atomic write
@pytest.mark.parametrize("planted", ["link", "fifo", "dangling"])
def test_a_node_planted_during_the_run_is_refused_not_replaced(tmp_path, planted):
    """--out checked at the start; while the run works, a link or a FIFO appears at the target:
    the write refuses it (checked again just before the rename) and leaves it and its target alone."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    target = fileio.check_out_path(tmp_path / "r.json")
    if planted == "link":
        os.symlink(victim, target)
    elif planted == "fifo":
        os.mkfifo(target)
    else:
        os.symlink(tmp_path / "nowhere", target)
    with pytest.raises(OutputPathError, match="only regular files"):
        fileio.write_json_atomically(target, {"a": 1})
    assert victim.read_text() == "keep me\n"
    assert not stat.S_ISREG(os.lstat(target).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["victim.txt", "r.json"])  # no temporary left


def test_a_node_planted_between_the_last_check_and_the_write(tmp_path, monkeypatch):
    """The re-check runs after the bytes are on disk, just before the rename: a link planted while
    the file was being written is still caught."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    target = tmp_path / "r.json"
    real_fsync = os.fsync

    def fsync_then_plant(fd):
        real_fsync(fd)
        os.symlink(victim, target)

    monkeypatch.setattr(fileio.os, "fsync", fsync_then_plant)
    with pytest.raises(OutputPathError, match="symbolic link"):
        fileio.write_json_atomically(target, {"a": 1})
    assert victim.read_text() == "keep me\n" and os.path.islink(target)


def test_a_regular_file_is_replaced_atomically_and_keeps_its_mode(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    fileio.write_json_atomically(fileio.check_out_path(target), {"a": 1})
    assert json.loads(target.read_text()) == {"a": 1} and stat.S_IMODE(os.stat(target).st_mode) == 0o640
    name = "b" * 250 + ".json"  # 255 bytes: the file system's limit, and the temporary names stay short
    fileio.write_json_atomically(fileio.check_out_path(tmp_path / name), [1])
    assert json.loads((tmp_path / name).read_text()) == [1]


@pytest.mark.parametrize("failing", ["write", "fsync"])
def test_a_full_disk_is_one_line_and_leaves_the_old_file(tmp_path, monkeypatch, failing):
    target = tmp_path / "r.json"
    target.write_text("old\n")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(fileio.os, failing, full)
    with pytest.raises(OutputPathError, match="the disk is full"):
        fileio.write_json_atomically(target, {"a": 1})
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_json_to_a_full_stdout_is_one_line(monkeypatch, capsys):
    class Full:
        def write(self, text):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def flush(self):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(sys, "stdout", Full())
    rc = cli_common.guarded(cli_output.emit_json, {"a": 1})
    err = capsys.readouterr().err
    assert rc == 2 and err == "error: cannot write the JSON to stdout: the disk is full (No space left on device)\n"


# ---------------------------------------------------------------- Ray, data root, CIFAR labels
def test_ray_without_its_client_extra_is_one_line():
    if importlib.util.find_spec("ray") is None or importlib.util.find_spec("grpc") is not None:
        pytest.skip("needs ray installed without its client extra (grpcio)")
    from core.experiment.executor import make_executor

    with pytest.raises(ConfigError, match=r"client extra is not installed"):
        make_executor("ray", address="ray://127.0.0.1:1")


@pytest.mark.parametrize("raised", [ValueError("Invalid address format: x"), ConnectionError("no GCS at x")])
def test_ray_init_failures_are_config_errors(monkeypatch, raised):
    ray = pytest.importorskip("ray")
    from core.experiment.executor import make_executor

    def init(**kwargs):
        raise raised

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    with pytest.raises(ConfigError, match="cannot start the ray executor") as exc:
        make_executor("ray", address="x")
    assert str(raised) in str(exc.value) and "\n" not in str(exc.value)


def test_a_data_root_that_does_not_resolve_is_a_config_error(tmp_path, monkeypatch):
    from core.foundations.paths import data_root, resolve_data_dir

    monkeypatch.setenv("MIA_DATA_ROOT", "~nosuchuser")
    with pytest.raises(ConfigError, match="MIA_DATA_ROOT='~nosuchuser' cannot be resolved"):
        data_root()
    with pytest.raises(ConfigError, match="cannot be resolved"):
        resolve_data_dir("cifar")
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    monkeypatch.setenv("MIA_DATA_ROOT", str(tmp_path / "a"))
    with pytest.raises(ConfigError, match="cannot be resolved"):
        data_root()


def test_train_page_says_so_when_the_data_root_does_not_resolve(monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("MIA_DATA_ROOT", "~nosuchuser")
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.switch_page("app_pages/1_Train_and_attack.py")
    at.run(timeout=60)
    assert not at.exception
    at.selectbox(key="image:quick:dataset").set_value("cifar10").run(timeout=60)
    assert not at.exception
    assert any("MIA_DATA_ROOT='~nosuchuser' cannot be resolved" in shown_text(e.value) for e in at.error)


def write_batches(folder: Path, labels) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {b"labels": labels, b"data": np.zeros((len(labels), 3072), np.uint8)}
        with open(folder / name, "wb") as fh:
            pickle.dump(batch, fh, protocol=2)


@pytest.mark.parametrize("labels, words", [([0, 10], "labels 0..10, expected classes 0..9"),
                                           ([-1, 3], "labels -1..3"),
                                           ([[0, 1], [2, 3]], "expected"),
                                           ([0, 2 ** 70], "malformed")])
def test_cifar_labels_outside_0_to_9_are_refused_in_one_line(tmp_path, labels, words):
    from core.data.image_sources import load_cifar10

    write_batches(tmp_path / "c", labels)
    with pytest.raises(DatasetNotFoundError, match=words) as exc:
        load_cifar10(tmp_path / "c")
    assert "\n" not in str(exc.value)


# ---------------------------------------------------------------- Dirichlet: every k in (0, 1e9]
TINY_K = [1e-30, 1e-37, 1e-38, 1e-100, 1e-250, 1e-300, 5e-324]


@pytest.mark.parametrize("k", TINY_K)
def test_dirichlet_samples_for_tiny_k_are_proper_distributions_drawn_as_the_one_hot_limit(k):
    """As k → 0, Dir(k·p) → e_I with P(I = i) = pᵢ: finite log-probabilities, rows summing to 1,
    one-hot, and the winners' frequencies match p (20,000 draws: 5 standard errors)."""
    from core.defenses.dirichlet import LOG_PROB_FLOOR, sample_probs
    from core.measurement.responses import Responses

    p = np.tile([0.7, 0.2, 0.1], (20000, 1))
    log_x = sample_probs(p, k, 1e-6, np.random.default_rng(0))
    assert np.all(np.isfinite(log_x)) and log_x.min() >= LOG_PROB_FLOOR
    x = np.exp(log_x)
    assert np.allclose(x.sum(1), 1.0, atol=1e-12) and np.all((x == 0) | (x == 1))
    freq = np.bincount(log_x.argmax(1), minlength=3) / len(p)
    assert np.all(np.abs(freq - [0.7, 0.2, 0.1]) < 5 * np.sqrt(0.7 * 0.3 / len(p)))
    r = Responses.from_probs(p[:50], np.ones(50, np.int64), np.zeros(50, np.int64)).with_log_probs(log_x[:50])
    assert np.all(np.isfinite(r.cross_entropy)) and r.cross_entropy.max() <= 1.01e30


def test_dirichlet_keeps_moderate_k_bit_identical():
    """The floor and the smallest sampled k do not touch any k that worked before."""
    from core.defenses import dirichlet

    p = np.random.default_rng(1).dirichlet(np.ones(10), 200)
    for k in (1e9, 100.0, 0.01, 1e-6):
        a = dirichlet.sample_probs(p, k, 1e-6, np.random.default_rng(3))
        g = dirichlet.log_gamma_variates(np.random.default_rng(3), k * dirichlet.floor_probs(p, 1e-6))
        assert np.array_equal(a, g - special.logsumexp(g, axis=-1, keepdims=True))


@pytest.mark.parametrize("k", [1e-100, 5e-324])
def test_dirichlet_tiny_k_in_torch_and_on_top_k_answers(k):
    from core.defenses.dirichlet import defend_responses, torch_output_transform
    from core.measurement.responses import Responses

    logits = torch.randn(30, 5, dtype=torch.float64)
    for dtype in (torch.float32, torch.float64):
        out = torch_output_transform(k, 1e-6, torch.Generator().manual_seed(0))(torch.log_softmax(logits, 1).to(dtype))
        assert out.dtype == dtype and torch.isfinite(out).all()
        assert torch.allclose(out.double().exp().sum(1), torch.ones(30, dtype=torch.float64))
    top_k = Responses.from_logits(torch.randn(40, 500), np.ones(40, np.int64), np.arange(40) % 500)
    assert top_k.probs is None
    defended = defend_responses(top_k, k, 1e-6, np.random.default_rng(0))
    assert np.all(np.isfinite(defended.cross_entropy)) and np.all(np.isfinite(defended.entropy))
    assert np.all(defended.top_probs.sum(1) <= 1.0 + 1e-5)


# ---------------------------------------------------------------- one tiny config, trained once
def test_tiny_config_cache_hit_tiny_k_and_analyze_folder(tmp_path, capsys):
    """A pure cache hit reports this run (models from the cache), `defend` with k = 1e-100 and the
    smallest double works end to end, and `analyze --out` creates its folder with parents."""
    from core.experiment.pipeline import run_experiment
    from core.tasks import get_task

    sets = dict(a.split("=", 1) for a in TINY[1::2])
    cfg = get_task("image").make_config("ffnn", "quick", sets)
    first = run_experiment(cfg).summary
    assert first["cache_hit"] is False and first["models_from_cache"] == {"victim": False, "shadows": 0}
    again = run_experiment(cfg).summary
    assert again["cache_hit"] is True and again["models_from_cache"] == {"victim": True, "shadows": 1}

    out = tmp_path / "d.json"
    assert cli.main(["defend", "--task", "image", "--arch", "ffnn", *TINY, "--mechanism", "dirichlet",
                     "--values", "1e-100,5e-324", "--attacker", "both", "--quiet", "--out", str(out)]) == 0
    d = json.loads(out.read_text())
    assert [pt["value"] for pt in d["points"]] == [1e-100, 5e-324]
    # k → 0: every draw of Dir(k·p) is a vertex, the class c with probability p_c. Every answer is one-hot
    # (entropy 0: the entropy attack, naive or adaptive, is exactly chance); its loss is 0 where the vertex
    # is the label and capped (finite) elsewhere, so the loss attack only sees hit or miss; the utility is
    # the share of draws on the label, whose mean is the undefended victim's mean p_label (8 draws × 20
    # non-members: standard error ≤ 0.04). Both k are the same limit: the same numbers.
    member = np.asarray(first["records"]["membership"], bool)
    p_label = np.exp(-np.asarray(first["records"]["cross_entropy"]))
    tiny, tinier = d["points"]
    for pt in (tiny, tinier):
        assert pt["draws"] == 8 and set(pt["records"]["ape"]) == {0.0} and pt["records"]["membership"] == member.tolist()
        assert pt["attacks"]["entropy_threshold"]["auc"] == pt["adaptive_attacks"]["entropy_threshold"]["auc"] == 0.5
        ce = np.asarray(pt["records"]["cross_entropy"])
        assert np.all(np.isfinite(ce)) and np.all((ce == 0) | (ce > 1e29))
        hit = ce == 0  # draw 0's answers: the loss attack's AUC is the hit rates' difference
        auc = roc_auc(np.asarray(pt["records"]["scores"]["loss_threshold"]), member)
        assert auc == pytest.approx(0.5 + (hit[member].mean() - hit[~member].mean()) / 2)
        assert abs(pt["utility"] - p_label[~member].mean()) < 0.075 and abs(pt["utility_train"] - p_label[member].mean()) < 0.075
    assert {k: v for k, v in tiny.items() if k in ("attacks", "adaptive_attacks", "utility", "records")} == \
        {k: v for k, v in tinier.items() if k in ("attacks", "adaptive_attacks", "utility", "records")}

    folder = tmp_path / "new" / "nested" / "reports"
    capsys.readouterr()
    assert cli.main(["analyze", "--task", "image", *TINY, "--archs", "ffnn", "--analysis", "scatter",
                     "--quiet", "--out", str(folder)]) == 0
    assert {"scatter.csv", "scatter.html", "analyses.json"} <= {p.name for p in folder.iterdir()}
    json.loads(capsys.readouterr().out)


def test_an_unknown_analysis_is_refused_before_any_folder_or_work(tmp_path, capsys):
    folder = tmp_path / "never"
    assert cli.main(["analyze", "--task", "image", "--analysis", "scatter,bogus", "--out", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown analyses ['bogus']") and err.count("\n") == 1
    assert not folder.exists()


# ---------------------------------------------------------------- processes: Ctrl-C, orphans
def _children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                kids.append(int(entry))
    return kids


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")
def test_ctrl_c_while_torch_is_being_imported_is_one_line(tmp_path):
    """SIGINT in the first second (here: while `import torch` runs, seen in /proc/PID/maps): one
    line and exit 130, no traceback."""
    env = dict(os.environ, MIA_CACHE_DIR=str(tmp_path / "cache"), MIA_DEVICE="cpu")
    p = subprocess.Popen([sys.executable, "-m", "core", "run", "--task", "image", "--arch", "ffnn", *TINY],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if "torch" in Path(f"/proc/{p.pid}/maps").read_text():
                break
        except OSError:
            pass
        time.sleep(0.005)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert err == "interrupted; cached models are kept\n", err


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_pool_workers_exit_when_the_driver_is_killed(tmp_path):
    """kill -9 of a driver running `--executor processes`: its pool worker and multiprocessing's
    resource tracker end within a few seconds instead of training on for nobody."""
    env = dict(os.environ, MIA_CACHE_DIR=str(tmp_path / "cache"), MIA_DEVICE="cpu")
    long = [a if a != "epochs=2" else "epochs=5000" for a in TINY]
    p = subprocess.Popen([sys.executable, "-m", "core", "run", "--task", "image", "--arch", "ffnn", *long,
                          "--executor", "processes", "--workers", "1"],
                         cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    kids = []
    try:
        for line in p.stderr:  # a worker reports training progress: it is up, its initializer ran
            if "victim" in line:
                break
        kids = _children(p.pid)
        assert len(kids) >= 2, kids  # the worker and the resource tracker
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_running(k) for k in kids):
            time.sleep(0.2)
        assert not [k for k in kids if _running(k)]
    finally:
        for k in kids:
            if _running(k):
                os.kill(k, signal.SIGKILL)
        if p.poll() is None:
            p.kill()


# ---------------------------------------------------------------- the app's error details
PLANTED = "planted failure in /srv/secret/module.py"


def _fail(*args, **kwargs):
    raise RuntimeError(PLANTED)


def _home_with_an_uncaught_error(monkeypatch) -> list:
    """The Home page run through the entry script with a planted uncaught error: the exception
    elements the browser would receive."""
    from streamlit.testing.v1 import AppTest

    import ui.shared

    monkeypatch.setattr(ui.shared, "summary_of", _fail)  # the Home page reads the demo's cached summary
    at = AppTest.from_file(str(ROOT / "app.py")).run(timeout=60)
    assert at.exception, "the planted error did not reach the page"
    return [e.proto for e in at.exception]


def test_a_served_app_shows_no_tracebacks(monkeypatch):
    """An uncaught error in a page, with the config a served app reads (``streamlit run app.py`` from
    the repository: .streamlit/config.toml): the browser gets Streamlit's generic message — no
    traceback, no exception type, no message (file paths, code). The same error with
    showErrorDetails = full shows all three, so the check can see a leak."""
    from streamlit import config

    before = os.getcwd()
    os.chdir(ROOT)
    try:
        config.get_config_options(force_reparse=True)  # as `streamlit run` from the repository reads it
        served = _home_with_an_uncaught_error(monkeypatch)
        config.set_option("client.showErrorDetails", "full")
        leaky = _home_with_an_uncaught_error(monkeypatch)
    finally:
        os.chdir(before)
        config.get_config_options(force_reparse=True)
    assert any(p.stack_trace for p in leaky) and any(PLANTED in p.message for p in leaky)  # the control leaks
    for proto in served:
        assert not proto.stack_trace and not proto.type, proto
        assert PLANTED not in proto.message and "Traceback" not in proto.message, proto
        assert "redacted" in proto.message, proto
