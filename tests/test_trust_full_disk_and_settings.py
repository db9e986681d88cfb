"""Trust cases: a full disk, a hostile CIFAR batch, a bad MIA_* value or an
unbounded count gets one line before any training, and no setting is silently ignored. Every
hostile file is built here; the full disk is a small tmpfs mounted by the test (root), else a
simulated SQLITE_FULL (the test says which in its skip-free fallback)."""
import json
import os
import pickle
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest

from core.cli import main as cli
from core.data.image_sources import load_cifar10
from core.experiment.cache import ArtifactCache
from core.foundations.environment import VARIABLES, check_environment, env_value
from core.foundations.errors import CacheUnusableError, ConfigError, DatasetNotFoundError
from core.tasks import get_task
from core.tasks.image import ImageTask
from core.views.plain import shown_text

ROOT = Path(__file__).resolve().parent.parent
T = ["--preset", "quick", "--set", "epochs=2", "--set", "n_train=40", "--set", "n_eval=40",
     "--set", "attack_train_epochs=5", "--set", "attack_epochs=1"]
ONE_SHADOW = ["--set", "n_shadows=1"]


@pytest.fixture
def no_training(monkeypatch):
    """Any training at all fails the test: the refusals must come first."""
    def trained(*args, **kwargs):
        raise AssertionError("trained a model before refusing the input")
    monkeypatch.setattr(ImageTask, "train", trained)
    monkeypatch.setattr(ImageTask, "train_ensemble", trained)


def refused(argv: list[str], capsys) -> str:
    rc = cli.main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# ---------------------------------------------------------------- 1. a full disk under the cache
@pytest.fixture
def small_disk(tmp_path):
    """A 600 KiB tmpfs at tmp_path/disk (a disk that fills); None where mounting is not allowed."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(disk)],
                             capture_output=True).returncode == 0
    yield disk if mounted else None
    if mounted:
        subprocess.run(["umount", "-l", str(disk)], check=True)


def test_a_full_disk_is_one_line_and_nothing_half_written_is_served(small_disk, monkeypatch):
    if small_disk is None:  # no mount permission: SQLite's own error, raised where diskcache commits
        cache = ArtifactCache(Path(os.environ["MIA_CACHE_DIR"]))
        cache.put_bytes("v/kept", b"kept")

        def full(*args, **kwargs):
            raise sqlite3.OperationalError("database or disk is full")
        monkeypatch.setattr(type(cache._store), "set", full)
        with pytest.raises(CacheUnusableError, match="is full"):
            cache.put_bytes("v/lost", b"x" * 100)
        monkeypatch.undo()
        assert cache.get_bytes("v/lost") is None
        return
    cache = ArtifactCache(small_disk / "cache")
    cache.put_bytes("v/kept", b"kept")
    with pytest.raises(CacheUnusableError, match="is full") as exc:
        for i in range(100):  # 40 KiB values (own files) and 8 KiB ones (in the database)
            cache.put_bytes(f"v/{i}", os.urandom(40_000 if i % 2 else 8_000))
    assert "\n" not in str(exc.value) and "MIA_CACHE_DIR" in str(exc.value)
    lost = f"v/{i}"
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)  # space freed
    reopened = ArtifactCache(small_disk / "cache")
    assert reopened.get_bytes(lost) is None  # the write that failed left nothing under its key
    assert reopened.get_bytes("v/kept") == b"kept"
    assert all(len(reopened.get_bytes(f"v/{j}")) in (8_000, 40_000) for j in range(i))
    reopened.put_bytes(lost, b"now")
    assert reopened.get_bytes(lost) == b"now"


def test_a_run_on_a_full_disk_says_so_in_one_line(small_disk, monkeypatch, capsys):
    if small_disk is None:
        pytest.skip("needs a tmpfs mount (root); the cache-level test above simulates SQLITE_FULL instead")
    monkeypatch.setenv("MIA_CACHE_DIR", str(small_disk / "cache"))
    for _ in range(2):  # and again on a rerun, where the first read already meets the full disk
        line = refused(["run", "--task", "image", "--arch", "ffnn", *T, *ONE_SHADOW, "--quiet"], capsys)
        assert "is full" in line


# ---------------------------------------------------------------- 2-4, 13. hostile CIFAR batches
def write_batches(folder: Path, n: int = 4) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(1, 6):
        batch = {b"labels": [int(v) for v in rng.integers(0, 10, n)],
                 b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8)}
        (folder / f"data_batch_{i}").write_bytes(pickle.dumps(batch, protocol=2))


def laughs(levels: int, width: int) -> bytes:
    """A few hundred bytes that expand to width**levels elements: each list holds the previous one
    ``width`` times (pickle writes it once and reads it back from the memo)."""
    data: list = [0]
    for _ in range(levels):
        data = [data] * width
    return pickle.dumps({b"data": data, b"labels": [0]}, protocol=2)


HOSTILE = {
    # a 12-byte file declaring a 1 TiB byte string (BINBYTES8): refused by the scan, nothing allocated
    "1 TiB bytes8": (b"\x80\x04\x8e" + (2**40).to_bytes(8, "little") + b".", "bytes8"),
    "billion laughs as data": (laughs(30, 10), "data is a list"),
    "memo bomb": (laughs(2, 2000), "memo references"),
    "deep marks": (b"\x80\x02" + b"(" * 100 + b"t" * 100 + b".", "nested more than"),
    "zero rows": (pickle.dumps({b"data": np.zeros((0, 3072), np.uint8), b"labels": []}, protocol=4), "no images"),
    "NaN pixels": (pickle.dumps({b"data": np.full((2, 3072), np.nan, np.float32), b"labels": [0, 1]}, protocol=2),
                   "float32"),
    "int64 pixels of 300": (pickle.dumps({b"data": np.full((2, 3072), 300, np.int64), b"labels": [0, 1]}, protocol=2),
                            "int64"),
    "object array": (pickle.dumps({b"data": np.array([None, 1], object), b"labels": [0, 1]}, protocol=2), "object"),
    "float labels": (pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0.0, 1.0]}, protocol=2),
                     "BINFLOAT is not used"),
    "labels fewer than rows": (pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0]}, protocol=2),
                               "1 labels for 2 images"),
    "not a dict": (pickle.dumps([1, 2], protocol=2), "expected a dict"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_cifar_batch_is_one_line_before_anything_is_converted(tmp_path, name):
    payload, words = HOSTILE[name]
    write_batches(tmp_path / "c")
    (tmp_path / "c" / "data_batch_2").write_bytes(payload)
    assert len(payload) < 50_000
    with pytest.raises(DatasetNotFoundError, match=words) as exc:
        load_cifar10(tmp_path / "c")
    assert "\n" not in str(exc.value) and "data_batch_2" in str(exc.value)


def test_a_cifar_batch_over_the_size_cap_or_a_link_is_refused_unread(tmp_path):
    from core.data import image_sources

    write_batches(tmp_path / "c")
    with open(tmp_path / "c" / "data_batch_3", "r+b") as fh:
        fh.truncate(image_sources.MAX_BATCH_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(DatasetNotFoundError, match="bytes; at most"):
        load_cifar10(tmp_path / "c")
    write_batches(tmp_path / "d")
    os.replace(tmp_path / "d" / "data_batch_4", tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", tmp_path / "d" / "data_batch_4")
    with pytest.raises(DatasetNotFoundError, match="links are not followed"):
        load_cifar10(tmp_path / "d")


def test_well_formed_batches_still_load_with_array_or_list_labels(tmp_path):
    write_batches(tmp_path / "c", n=3)
    batch = pickle.loads((tmp_path / "c" / "data_batch_5").read_bytes(), encoding="bytes")
    batch[b"labels"] = np.asarray(batch[b"labels"], np.int32)
    (tmp_path / "c" / "data_batch_5").write_bytes(pickle.dumps(batch, protocol=4))
    x, y = load_cifar10(tmp_path / "c")
    assert x.shape == (15, 3, 32, 32) and x.dtype == np.uint8 and y.dtype == np.int64
    np.testing.assert_array_equal(y[-3:], batch[b"labels"])


# ---------------------------------------------------------------- 5. one rule for every MIA_* variable
@pytest.mark.parametrize("name, value", [("MIA_WORKER_THREADS", "abc"), ("MIA_WORKER_THREADS", "0"),
                                         ("MIA_WORKER_NICE", "x"), ("MIA_WORKER_NICE", "20"),
                                         ("MIA_JOB_WORKERS", "-1"), ("MIA_JOB_WORKERS", "1.5"),
                                         ("MIA_EXECUTOR", "bogus"), ("MIA_DEVICE", "gpu")])
def test_a_bad_mia_value_is_one_line_at_the_cli_start(monkeypatch, capsys, name, value):
    monkeypatch.setenv(name, value)
    line = refused(["config", "--task", "image"], capsys)
    assert name in line


def test_good_and_unset_mia_values_pass_and_parse():
    env = {"MIA_WORKER_THREADS": "3", "MIA_WORKER_NICE": "5", "MIA_JOB_WORKERS": "2", "MIA_EXECUTOR": "processes",
           "MIA_DEVICE": "cuda:1", "MIA_CACHE_DIR": "/tmp/x", "MIA_WORKER_NICE_UNUSED": "?"}
    check_environment(env)
    assert env_value("MIA_WORKER_THREADS", env) == 3 and env_value("MIA_JOB_WORKERS", {}) is None
    assert {v.name for v in VARIABLES} >= {"MIA_WORKER_THREADS", "MIA_WORKER_NICE", "MIA_JOB_WORKERS"}


def test_the_app_says_so_once_and_starts_no_worker(monkeypatch):
    from streamlit.testing.v1 import AppTest

    from core.jobs import manager as jobs

    monkeypatch.setenv("MIA_WORKER_THREADS", "abc")
    with pytest.raises(ConfigError, match="MIA_WORKER_THREADS"):
        jobs._Worker(1)  # the server refuses before it spawns a process that would die at start
    monkeypatch.setenv("MIA_JOB_WORKERS", "many")
    with pytest.raises(ConfigError, match="MIA_JOB_WORKERS"):
        jobs.default_workers()  # no silent fallback to 1
    monkeypatch.delenv("MIA_JOB_WORKERS")
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.run(timeout=60)
    assert not at.exception
    assert len(at.error) == 1 and "MIA_WORKER_THREADS='abc'" in shown_text(at.error[0].value)


# ---------------------------------------------------------------- 6-11, 14. the CLI refuses before training
CASES = {
    "budget with one shadow": (["analyze", *T, *ONE_SHADOW, "--analysis", "budget"], "at least 2 shadows"),
    "scatter,budget with one shadow": (["analyze", *T, *ONE_SHADOW, "--analysis", "scatter,budget"],
                                       "at least 2 shadows"),
    "audit canaries 999999999": (["analyze", *T, "--set", "n_shadows=2", "--analysis", "audit", "--canaries",
                                  "999999999"], "must lie in 2..818"),
    "--canaries with scatter": (["analyze", *T, "--analysis", "scatter", "--canaries", "5"], "--canaries applies"),
    "--online-lira with scatter": (["analyze", *T, "--analysis", "scatter", "--online-lira", "2"],
                                   "--online-lira applies"),
    "--defense with scatter": (["analyze", *T, "--analysis", "scatter", "--defense", "dirichlet:1"],
                               "--defense applies"),
    "--draws with dpsgd": (["defend", *T, "--mechanism", "dpsgd", "--values", "1", "--draws", "3"],
                           "--draws applies"),
    "--attacker with l2": (["defend", *T, "--mechanism", "l2", "--values", "1", "--attacker", "naive"],
                           "--attacker applies"),
    "gpm 10**9 sensitivity pairs": (["defend", *T, "--mechanism", "gpm", "--values", "1", "--sensitivity-samples",
                                     "1000000000"], "0..10000"),
    "--sensitivity-samples with dirichlet": (["defend", *T, "--mechanism", "dirichlet", "--values", "1",
                                              "--sensitivity-samples", "3"], "applies to gpm"),
    "101 values": (["defend", *T, "--mechanism", "dirichlet", "--values", ",".join(["1"] * 101)], "at most 100"),
    "21 draws": (["defend", *T, "--mechanism", "dirichlet", "--values", "1", "--draws", "21"], "1..20"),
    "match_utility set, then --match-utility off": (["compare", *T, "--set", "match_utility=0.9", "--match-utility",
                                                     "off"], "given twice"),
    "--match-utility lower over a set value": (["compare", *T, "--set", "match_utility=0.9", "--match-utility",
                                                "lower"], "given twice"),
    "run with match_utility": (["run", *T, "--set", "match_utility=lower"], "applies to compare"),
    "defend with match_utility": (["defend", *T, "--mechanism", "dirichlet", "--values", "1", "--set",
                                   "match_utility=0.5"], "applies to compare"),
    "report --archs ''": (["report", *T, "--archs", ""], "--archs must list"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_cli_refuses_before_any_training(tmp_path, capsys, no_training, name):
    argv, words = CASES[name]
    out = tmp_path / "out"
    argv = [*argv, "--out", str(out / "r.html" if argv[0] == "report" else out)] if argv[0] in ("analyze", "report") \
        else argv
    assert words in refused(argv, capsys)
    assert not out.exists()  # a refused run leaves no empty folder


@pytest.mark.parametrize("argv, expected", [(["--set", "match_utility=0.9"], "0.9"),
                                            (["--match-utility", "lower"], "lower"), ([], "off")])
def test_compare_keeps_match_utility_given_once(monkeypatch, argv, expected):
    from core.analyses import matching, repeats

    seen = {}

    def capture(configs, **kwargs):
        seen["mode"] = configs["ffnn"].match_utility
        return {}
    monkeypatch.setattr(matching, "run_matched", capture)
    monkeypatch.setattr(repeats, "run_comparison", capture)
    assert cli.main(["compare", *T, "--repeats", "1", *argv]) == 0
    assert seen["mode"] == expected


def test_attack_epochs_spellings_hash_as_one_without_moving_the_normalised_hash():
    task = get_task("image")
    base = dict(epochs=2, n_train=40, n_eval=40, attack_train_epochs=5)
    hashes = {spelling: task.make_config("rnn", "quick", {**base, "attack_epochs": spelling})
              for spelling in ("2,1", "1,2", "1,2,2")}
    assert len({c.config_hash for c in hashes.values()}) == 1
    assert len({c.training_hash for c in hashes.values()}) == 1
    # `python -m core config --task image --preset quick --set epochs=2 --set n_train=40 --set n_eval=40
    #  --set attack_train_epochs=5 --set attack_epochs=1,2` on fecc022 (before the change)
    assert hashes["1,2"].config_hash == "b0977e11b3dc6deff5c5"
    assert hashes["2,1"].to_dict()["attack_epochs"] == [1, 2]


# ---------------------------------------------------------------- 8. a target ε found out of reach later
def test_an_unreachable_target_epsilon_keeps_the_points_computed(tmp_path, capsys, monkeypatch):
    """Opacus' search for σ doubles it from 10 until ε is reached or σ passes its ceiling (10⁶): for an
    unreachable ε that is 17 evaluations of the RDP accountant, each slower as σ grows (~25 s of CPU here).
    The ceiling is lowered to 10³ for this test (7 cheap evaluations): the search fails the same way, and
    what is asserted (the points computed are kept, the value out of reach is named) does not depend on it."""
    import opacus.accountants.utils

    monkeypatch.setattr(opacus.accountants.utils, "MAX_SIGMA", 1e3)
    out = tmp_path / "dp.json"
    line = refused(["defend", "--task", "image", "--arch", "ffnn", *T, *ONE_SHADOW, "--mechanism", "dpsgd",
                    "--target-epsilon", "--values", "8,1e-300", "--quiet", "--out", str(out)], capsys)
    assert "1e-300" in line and "out of reach" in line
    result = json.loads(out.read_text())
    assert [p["value"] for p in result["points"]] == [8.0]
    assert result["unreachable"][0]["value"] == 1e-300
