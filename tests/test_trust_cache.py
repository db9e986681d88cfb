"""Trust cases, the cache and locks: a planted cache row or lock file can no
longer delete, overwrite or read without bound a file outside the cache; a misplaced entry is
never served; an unusable cache fails before any training, with one line.

Every case runs on a real diskcache folder (rows planted by hand, as an attacker with write
access to the folder would); links and FIFOs are made in temp folders (never real /dev nodes).
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from core.experiment import pipeline, roles
from core.experiment.cache import ArtifactCache
from core.foundations.errors import CacheUnusableError, LockFileError
from core.foundations.locks import KeyLock, hold
from core.tasks import get_task

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, attack_epochs=(1,), attack_train_epochs=3)


def plant(directory: Path, key: str, *, mode: int, filename: str | None, value: bytes | None = None,
          size: int = 0) -> None:
    """Insert a Cache row by hand (the database exists first)."""
    ArtifactCache(directory).put_bytes("honest", b"an honest entry")
    con = sqlite3.connect(directory / "cache.db")
    now = time.time()
    con.execute(
        "INSERT OR REPLACE INTO Cache (key, raw, store_time, expire_time, access_time, access_count, tag, size, mode,"
        " filename, value) VALUES (?, 1, ?, NULL, ?, 0, NULL, ?, ?, ?, ?)",
        (key, now, now, size, mode, filename, None if value is None else sqlite3.Binary(value)),
    )
    con.commit()
    con.close()


# ============================================================================ 1. files outside the cache
@pytest.mark.parametrize("name", ["absolute", "dotdot", "dotdot-val-shaped", "inside-but-foreign"])
def test_a_row_naming_a_file_outside_the_cache_neither_deletes_nor_reads_it(isolated_cache, tmp_path, name):
    precious_dir = tmp_path / "precious"
    precious_dir.mkdir()
    precious = precious_dir / "precious.txt"
    precious.write_text("do not delete")
    filename = {
        "absolute": str(precious),
        "dotdot": os.path.relpath(precious, isolated_cache),
        "dotdot-val-shaped": "../precious/precious.txt",
        "inside-but-foreign": "notes.txt",
    }[name]
    if name == "inside-but-foreign":
        isolated_cache.mkdir()
        (isolated_cache / "notes.txt").write_text("a user's file inside the folder")
    plant(isolated_cache, "v2/result/x", mode=2, filename=filename, size=13)
    c = ArtifactCache()
    assert c.get_bytes("v2/result/x") is None
    assert c.corrupted == ["v2/result/x"]
    assert precious.read_text() == "do not delete" and precious_dir.is_dir()
    if name == "inside-but-foreign":
        assert (isolated_cache / "notes.txt").exists()
    # the row itself is gone: the next read is a plain miss
    c2 = ArtifactCache()
    assert c2.get_bytes("v2/result/x") is None and c2.corrupted == []


def test_a_row_pointing_at_dev_zero_is_refused_without_reading(isolated_cache):
    plant(isolated_cache, "v2/result/z", mode=2, filename="/dev/zero", size=10)
    t = time.perf_counter()
    c = ArtifactCache()
    assert c.get_bytes("v2/result/z") is None and c.corrupted == ["v2/result/z"]
    assert time.perf_counter() - t < 5
    assert Path("/dev/zero").exists()


def test_value_files_that_are_links_fifos_or_huge_are_refused(isolated_cache, tmp_path, monkeypatch):
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"secret" * 10)
    name = "ab/cd/" + "0" * 28 + ".val"
    plant(isolated_cache, "k-link", mode=2, filename=name, size=60)
    (isolated_cache / "ab" / "cd").mkdir(parents=True)
    (isolated_cache / name).symlink_to(outside)
    c = ArtifactCache()
    assert c.get_bytes("k-link") is None and c.corrupted == ["k-link"]
    assert outside.read_bytes() == b"secret" * 10  # neither read into a result nor deleted

    # the folder on the way is a link (to a folder holding a file of the right name)
    elsewhere = tmp_path / "elsewhere" / "ef"
    elsewhere.mkdir(parents=True)
    (elsewhere / ("1" * 28 + ".val")).write_bytes(b"x" * 50)
    (isolated_cache / "12").mkdir()
    (isolated_cache / "12" / "ef").symlink_to(elsewhere)
    plant(isolated_cache, "k-dirlink", mode=2, filename="12/ef/" + "1" * 28 + ".val", size=50)
    c = ArtifactCache()
    assert c.get_bytes("k-dirlink") is None
    assert (elsewhere / ("1" * 28 + ".val")).exists() and elsewhere.is_dir()

    fifo = "fe/ed/" + "2" * 28 + ".val"
    (isolated_cache / "fe" / "ed").mkdir(parents=True)
    os.mkfifo(isolated_cache / fifo)
    plant(isolated_cache, "k-fifo", mode=2, filename=fifo, size=1)
    assert ArtifactCache().get_bytes("k-fifo") is None  # returns: a FIFO is never opened for a blocking read

    monkeypatch.setattr("core.experiment.cache_store.MAX_VALUE_BYTES", 1000)
    c = ArtifactCache()
    c.put_bytes("big", os.urandom(40_000))  # > 32 KiB: its own value file
    assert c.get_bytes("big") is None and c.corrupted == ["big"]


def test_a_value_file_of_ours_is_still_deleted_with_its_emptied_folders(isolated_cache):
    c = ArtifactCache()
    c.put_bytes("big", os.urandom(40_000))
    files = [p for p in isolated_cache.rglob("*.val")]
    assert len(files) == 1
    c.discard("big", "test")
    assert not files[0].exists() and not files[0].parent.exists()
    assert isolated_cache.is_dir() and (isolated_cache / "cache.db").is_file()


def test_writes_refuse_a_planted_link_in_the_value_folders(isolated_cache, tmp_path, monkeypatch):
    target = tmp_path / "target"
    target.mkdir()
    ArtifactCache().put_bytes("small", b"x")
    monkeypatch.setattr("os.urandom", lambda n: bytes.fromhex("aa" * n))  # the next value file: aa/aa/...
    (isolated_cache / "aa").symlink_to(target)
    with pytest.raises(CacheUnusableError, match="not a plain folder"):
        ArtifactCache().put_bytes("big", b"y" * 40_000)
    assert list(target.iterdir()) == []


# ============================================================================ 2. lock files
def test_a_lock_file_planted_as_a_link_never_overwrites_its_target(tmp_path):
    target = tmp_path / "victim.txt"
    target.write_text("important")
    locks = tmp_path / "locks"
    lock = KeyLock("model-x", directory=locks)
    locks.mkdir()
    lock.path.symlink_to(target)
    with pytest.raises(LockFileError, match="symbolic link"):
        lock.acquire(timeout=0)
    assert target.read_text() == "important"
    # dangling link: not created through either
    lock.path.unlink()
    lock.path.symlink_to(tmp_path / "new-file")
    with pytest.raises(LockFileError):
        lock.acquire(timeout=0)
    assert not (tmp_path / "new-file").exists()


def test_a_lock_folder_that_is_a_link_or_a_fifo_lock_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "locks").symlink_to(real)
    with pytest.raises(LockFileError, match="lock folder"):
        with hold("k", timeout=0, directory=tmp_path / "locks"):
            pass
    assert list(real.iterdir()) == []
    locks = tmp_path / "locks2"
    lock = KeyLock("k", directory=locks)
    locks.mkdir()
    os.mkfifo(lock.path)
    with pytest.raises(LockFileError, match="not a regular file"):
        lock.acquire(timeout=0)
    assert lock.holder() is None  # and reading the holder does not block on the FIFO


def test_a_plain_lock_still_excludes_and_records_its_holder(tmp_path):
    with hold("k", directory=tmp_path) as lock:
        assert lock.holder()["pid"] == os.getpid()
        with pytest.raises(Exception):
            KeyLock("k", directory=tmp_path).acquire(timeout=0)


# ============================================================================ 4. a misplaced entry is never served
def _raw_value(directory: Path, key: str) -> tuple:
    con = sqlite3.connect(directory / "cache.db")
    row = con.execute("SELECT mode, filename, value, size FROM Cache WHERE key = ?", (key,)).fetchone()
    con.close()
    return row


def _copy_row(directory: Path, src: str, dst: str) -> None:
    mode, filename, value, size = _raw_value(directory, src)
    con = sqlite3.connect(directory / "cache.db")
    now = time.time()
    con.execute("DELETE FROM Cache WHERE key = ?", (dst,))
    con.execute(
        "INSERT INTO Cache (key, raw, store_time, expire_time, access_time, access_count, tag, size, mode, filename,"
        " value) VALUES (?, 1, ?, NULL, ?, 0, NULL, ?, ?, ?, ?)", (dst, now, now, size, mode, filename, value))
    con.commit()
    con.close()


@pytest.mark.parametrize("big", [False, True], ids=["in-database", "in-value-file"])
def test_an_intact_entry_copied_to_another_key_is_not_served(isolated_cache, big):
    c = ArtifactCache()
    c.put_bytes("v2/result/seed1", b"1" * (40_000 if big else 10))
    c.put_bytes("v2/result/seed0", b"0" * (40_000 if big else 10))
    _copy_row(isolated_cache, "v2/result/seed1", "v2/result/seed0")
    c = ArtifactCache()
    assert c.get_bytes("v2/result/seed0") is None and c.corrupted == ["v2/result/seed0"]
    assert c.get_bytes("v2/result/seed1") == b"1" * (40_000 if big else 10)


def test_a_summary_claiming_another_config_is_not_served(isolated_cache):
    task = get_task("image")
    cfg0 = task.make_config("ffnn", "quick", dict(TINY, seed=0))
    cfg1 = task.make_config("ffnn", "quick", dict(TINY, seed=1))
    attack = {"name": "shadow", "accuracy": 0.5, "advantage": 0.0, "auc": 0.5, "tpr_at_fpr": {}}
    summary = {"task": "image", "arch": "ffnn", "config": cfg1.to_dict(), "config_hash": cfg1.config_hash, "params": 1,
               "utility": {"metric": "accuracy"}, "attack": attack, "attacks": {"shadow": attack}, "per_epoch": [],
               "timings": {}, "records": {}}  # whole (core.experiment.results' schema): refused for its hash alone
    c = ArtifactCache()
    c.put_json(c.key("result", cfg0.config_hash), summary)  # a correct checksum under the wrong key
    assert pipeline.cached_summary(cfg0, c) is None
    assert c.corrupted == [c.key("result", cfg0.config_hash)]
    c.put_json(c.key("result", cfg1.config_hash), summary)
    assert pipeline.cached_summary(cfg1, c)["config_hash"] == cfg1.config_hash
    assert [s.config_hash for s in pipeline.cached_runs("image", cache=c)] == [cfg1.config_hash]
    rnn = dict(summary, arch="rnn")
    c.put_json(c.key("result", cfg1.config_hash), rnn)
    assert pipeline.cached_summary(cfg1, c) is None  # an RNN result under an FFNN config's key


def test_swapped_victim_and_shadow_entries_retrain_instead_of_scoring_the_wrong_model(isolated_cache):
    cfg = get_task("image").make_config("ffnn", "quick", TINY)
    first = pipeline.run_experiment(cfg).summary
    c = ArtifactCache()
    for part in ("weights", "meta", "responses/1", "responses/2"):
        a, b = (c.key("model", cfg.training_hash, role, *part.split("/")) for role in ("victim", "shadow_0"))
        _copy_row(isolated_cache, a, a + "#tmp")
        _copy_row(isolated_cache, b, a)
        _copy_row(isolated_cache, a + "#tmp", b)
    con = sqlite3.connect(isolated_cache / "cache.db")
    con.execute("DELETE FROM Cache WHERE key LIKE ?", (c.key("result", "") + "%",))
    con.execute("DELETE FROM Cache WHERE key LIKE ?", (c.key("attack", "") + "%",))
    con.commit()
    con.close()
    again = pipeline.run_experiment(cfg).summary
    assert again["models_from_cache"]["victim"] is False  # swapped: retrained, not served
    assert again["attack"]["auc"] == pytest.approx(first["attack"]["auc"])
    assert any("victim" in k for k in again["cache_corrupted"])


# ============================================================================ 5. Responses checked against the config
def test_responses_of_another_size_are_discarded_not_indexed(isolated_cache):
    cfg = get_task("image").make_config("ffnn", "quick", TINY)
    pipeline.trained_models(cfg)
    task = get_task("image")
    data = task.load(cfg)
    splits = roles.make_splits(cfg, data)
    c = ArtifactCache()
    key = c.key("model", cfg.training_hash, "victim", "responses", 1)
    r = c.get_responses(key)
    c.put_responses(key, r.subset(np.arange(len(r) // 2)))  # another config's answers (n_eval 10, not 20)
    assert roles.load_trained(task, cfg, data, "victim", c, len(splits.eval_index)) is None
    assert key in c.corrupted


# ============================================================================ 6. an unusable cache fails first, in one line
def test_a_garbage_database_fails_before_any_training(isolated_cache, monkeypatch):
    isolated_cache.mkdir()
    (isolated_cache / "cache.db").write_bytes(b"this is not a database" * 100)
    monkeypatch.setattr(pipeline, "train_or_load", lambda *a, **k: pytest.fail("trained on an unusable cache"))
    cfg = get_task("image").make_config("ffnn", "quick", TINY)
    with pytest.raises(CacheUnusableError, match="unreadable"):
        pipeline.run_experiment(cfg)


def test_a_truncated_database_fails_before_any_training(isolated_cache):
    c = ArtifactCache()
    for i in range(300):
        c.put_bytes(f"k{i}", os.urandom(3000))
    c.close()
    db = isolated_cache / "cache.db"
    for side in ("cache.db-wal", "cache.db-shm"):
        (isolated_cache / side).unlink(missing_ok=True)
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 3])
    with pytest.raises(CacheUnusableError):
        ArtifactCache().check_usable()


def test_a_file_as_the_cache_folder_or_an_impossible_path_is_one_error(tmp_path, monkeypatch):
    f = tmp_path / "afile"
    f.write_text("x")
    with pytest.raises(CacheUnusableError, match="not a folder"):
        ArtifactCache(f).check_usable()
    with pytest.raises(CacheUnusableError, match="cannot be created"):
        ArtifactCache(f / "sub").check_usable(write=True)
    ArtifactCache(tmp_path / "new" / "deeper").check_usable(write=True)  # creatable: fine, and not created
    assert not (tmp_path / "new").exists()


def test_a_pickled_key_does_not_hide_the_other_runs(isolated_cache):
    c = ArtifactCache()
    c.put_bytes("v2/result/aaa", b"1")
    con = sqlite3.connect(isolated_cache / "cache.db")
    now = time.time()
    con.execute(
        "INSERT INTO Cache (key, raw, store_time, expire_time, access_time, access_count, tag, size, mode, filename,"
        " value) VALUES (?, 0, ?, NULL, ?, 0, NULL, 0, 1, NULL, ?)",
        (sqlite3.Binary(b"\x80\x04\x95pickled-key"), now, now, sqlite3.Binary(b"x")))
    con.commit()
    con.close()
    c.put_bytes("v2/result/bbb", b"2")
    assert ArtifactCache().keys("v2/result/") == ["v2/result/aaa", "v2/result/bbb"]


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists(),
                    reason="needs root to run a child as an unprivileged user")
def test_a_read_only_cache_serves_reads_and_refuses_writes_up_front(tmp_path):
    """As an unprivileged user (root ignores permission bits): a warm read-only cache is read
    without "discarding" anything; a write check fails with one clear line."""
    _skip_unless_nobody_can_import_the_checkout()
    base = Path(tempfile.mkdtemp(prefix="mia-ro-"))  # pytest's tmp folders are private to root
    os.chmod(base, 0o755)
    try:
        _read_only_case(base / "ro")
    finally:
        shutil.rmtree(base)


def _skip_unless_nobody_can_import_the_checkout() -> None:
    """The child runs as an unprivileged user: a checkout (or its venv) under a private folder, such as
    a clone in root's home or under ``mktemp -d``, is out of that user's reach, and the test cannot apply."""
    probe = ("import sys; sys.path.insert(0, %r)\nimport core.experiment.cache\n") % str(ROOT)
    out = subprocess.run(NOBODY + [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "MIA_DEVICE": "cpu"})
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"the unprivileged user cannot import the checkout at {ROOT} ({last})")


def _read_only_case(folder: Path) -> None:
    c = ArtifactCache(folder)
    c.put_json("small", {"x": 1})
    c.put_bytes("big", b"y" * 40_000)
    c.close()
    subprocess.run(["chmod", "-R", "a+rX,a-w", str(folder)], check=True)
    script = (
        "import sys; sys.path.insert(0, %r)\n"
        "from core.experiment.cache import ArtifactCache\n"
        "from core.foundations.errors import CacheUnusableError\n"
        "c = ArtifactCache(%r)\n"
        "c.check_usable()\n"
        "print(c.get_json('small'), len(c.get_bytes('big')), c.corrupted, c.read_only, c.keys())\n"
        "try:\n    c.check_usable(write=True)\nexcept CacheUnusableError as e:\n    print('refused:', e)\n"
        "try:\n    c.put_json('new', 1)\nexcept CacheUnusableError as e:\n    print('put refused')\n"
    ) % (str(ROOT), str(folder))
    out = subprocess.run(NOBODY + [sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "MIA_DEVICE": "cpu"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "{'x': 1} 40000 [] True ['small', 'big']"
    assert lines[1].startswith("refused:") and "read-only" in lines[1]
    assert lines[2] == "put refused"
    assert "discarding" not in out.stderr
    # and a folder the user may not enter: one line, not a traceback
    script2 = ("import sys; sys.path.insert(0, %r)\nfrom core.experiment.cache import ArtifactCache\n"
               "from core.foundations.errors import CacheUnusableError\n"
               "try:\n    ArtifactCache('/root/x/cache').check_usable(write=True)\n"
               "except CacheUnusableError as e:\n    print('refused')\n") % str(ROOT)
    out = subprocess.run(NOBODY + [sys.executable, "-c", script2], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "refused", out.stderr


def test_cli_reports_an_unusable_cache_in_one_line(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    out = subprocess.run(
        [sys.executable, "-m", "core", "run", "--task", "image", "--arch", "ffnn", "--preset", "quick"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "MIA_CACHE_DIR": str(f), "MIA_DEVICE": "cpu"})
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and out.stderr.startswith("error:") and "not a folder" in out.stderr
