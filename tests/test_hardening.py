"""Hardening: each case a hostile or careless user tried, as a test.

Families: the cache never unpickles (planted rows in the database, in files, pickled keys); cache
entries that pass their checksum but are not what they claim; lazy creation of the cache;
config ranges (non-finite and out-of-range numbers); memory estimated from the config alone;
Multi30K files read with caps; the CLI's one-line errors, --out checks, atomic writes and
Ctrl-C; folders from the browser confined to a data root; inter-process locks.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import pickle
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import fields
from pathlib import Path
from types import SimpleNamespace

import diskcache
import numpy as np
import pytest
import torch

from core.cli import common as cli_common
from core.cli import main as cli
from core.data import multi30k
from core.experiment.cache import ArtifactCache, dict_with, tensor_shapes
from core.experiment.cache_store import SafeDisk
from core.foundations.config import ExperimentConfig, field_range
from core.foundations.errors import (
    CacheCorruptionError,
    ConfigError,
    DatasetNotFoundError,
    LockTimeoutError,
    MIAError,
    OutputPathError,
    ResourceLimitError,
    UnsafeCacheEntryError,
)
from core.foundations.fileio import check_out_path, write_json_atomically
from core.foundations.locks import KeyLock, hold
from core.foundations.memory import cnn_param_count, mlp_agent_param_count
from core.foundations.paths import DATA_ROOT_ENV, data_root, resolve_data_dir
from core.foundations.version import unstamped
from core.measurement.responses import Responses
from core.tasks import get_task
from core.tasks.base import TaskData

ROOT = Path(__file__).resolve().parent.parent


# ============================================================================ 1. the cache never unpickles
class Plant:
    """Unpickling this creates ``marker``: proof that a pickle was executed."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def planted_payload(marker: Path, big: bool = False) -> bytes:
    obj = (Plant(marker), "x" * 40_000) if big else Plant(marker)
    return pickle.dumps(obj)


def plant_row(directory: Path, key, payload: bytes, mode: int = 4, as_file: bool = False, raw: bool = True) -> str | None:
    """Write a Cache row by hand, as an attacker with write access to the folder would."""
    ArtifactCache(directory).put_bytes("honest", b"an honest entry")  # the database exists
    filename, value, size = None, sqlite3.Binary(payload), 0
    if as_file:
        filename = "e0/1f/" + "ab" * 14 + ".val"  # a name of the form diskcache writes
        (directory / "e0" / "1f").mkdir(parents=True, exist_ok=True)
        (directory / filename).write_bytes(payload)
        value, size = None, len(payload)
    con = sqlite3.connect(directory / "cache.db")
    now = time.time()
    con.execute(
        "INSERT OR REPLACE INTO Cache (key, raw, store_time, expire_time, access_time, access_count, tag, size, mode,"
        " filename, value) VALUES (?, ?, ?, NULL, ?, 0, NULL, ?, ?, ?, ?)",
        (key, 1 if raw else 0, now, now, size, mode, filename, value),
    )
    con.commit()
    con.close()
    return filename


def rows(directory: Path, key) -> int:
    con = sqlite3.connect(directory / "cache.db")
    n = con.execute("SELECT COUNT(*) FROM Cache WHERE key = ?", (key,)).fetchone()[0]
    con.close()
    return n


def test_control_the_planted_payload_runs_under_plain_pickle_and_plain_diskcache(tmp_path):
    """The planted rows below are real attacks: plain pickle and plain diskcache execute them."""
    marker = tmp_path / "ran-by-pickle"
    pickle.loads(planted_payload(marker))
    assert marker.exists()
    marker2 = tmp_path / "ran-by-diskcache"
    plant_row(tmp_path / "c", "k", planted_payload(marker2))
    with diskcache.Cache(str(tmp_path / "c")) as plain:
        plain.get("k")
    assert marker2.exists()


@pytest.mark.parametrize("as_file", [False, True], ids=["value-in-database", "value-in-val-file"])
@pytest.mark.parametrize("getter", ["get_bytes", "get_json", "get_tensors", "get_responses"])
def test_planted_pickle_row_is_refused_reported_deleted_and_recomputed(isolated_cache, tmp_path, as_file, getter):
    marker = tmp_path / "PWNED"
    key = "v2/result/abc"
    filename = plant_row(isolated_cache, key, planted_payload(marker, big=as_file), as_file=as_file)
    c = ArtifactCache()
    assert getattr(c, getter)(key) is None
    assert not marker.exists(), "a planted pickle was executed"
    assert c.corrupted == [key]
    assert rows(isolated_cache, key) == 0
    if filename:
        assert not (isolated_cache / filename).exists()
    c.put_json(key, {"recomputed": True})  # the caller recomputes and stores
    assert c.get_json(key) == {"recomputed": True}
    assert not marker.exists()


@pytest.mark.parametrize("mode,as_file", [(3, False), (3, True), (0, False), (9, False), (4, False)])
def test_only_raw_and_binary_rows_are_read(isolated_cache, tmp_path, mode, as_file):
    """Text, none and unknown modes are not ours either: refused before their bytes are read."""
    plant_row(isolated_cache, "k", planted_payload(tmp_path / "m"), mode=mode, as_file=as_file)
    c = ArtifactCache()
    assert c.get_bytes("k") is None and c.corrupted == ["k"] and not (tmp_path / "m").exists()


def test_safe_disk_refuses_before_reading_any_byte(tmp_path, monkeypatch):
    """fetch raises on the mode alone: neither pickle nor open is ever called. The error is a
    CacheCorruptionError, not an OSError, so diskcache does not swallow it as "key vanished"."""
    assert issubclass(UnsafeCacheEntryError, CacheCorruptionError) and not issubclass(UnsafeCacheEntryError, OSError)
    disk = SafeDisk(str(tmp_path))
    monkeypatch.setattr(pickle, "load", lambda *a, **k: pytest.fail("unpickled"))
    with pytest.raises(UnsafeCacheEntryError):
        disk.fetch(4, None, b"\x80\x04K\x01.", False)
    with pytest.raises(UnsafeCacheEntryError):
        disk.fetch(4, "no/such/file.val", None, False)  # a file row is refused without opening it


def test_pickled_key_rows_are_never_unpickled(isolated_cache, tmp_path):
    marker = tmp_path / "KEY-PWNED"
    plant_row(isolated_cache, planted_payload(marker), b"whatever", mode=1, raw=False)
    c = ArtifactCache()
    c.put_json("a", {"x": 1})
    assert c.get_json("a") == {"x": 1} and "a" in c and c.get_json("missing") is None
    with pytest.raises(UnsafeCacheEntryError):
        list(c._store)  # iterating keys would unpickle it: refused
    c.clear()
    assert not marker.exists()


@pytest.mark.parametrize("bad_key", [b"bytes-key", ("tuple",), 42, None])
def test_only_str_keys(bad_key):
    c = ArtifactCache()
    with pytest.raises(TypeError):
        c.get_bytes(bad_key)
    with pytest.raises(TypeError):
        c.put_bytes(bad_key, b"x")
    with pytest.raises(TypeError):
        c._store.get(bad_key)  # even through diskcache itself


@pytest.mark.parametrize("value", [{"a": 1}, "text", 3, [1, 2]])
def test_only_bytes_values_reach_diskcache(value):
    with pytest.raises(TypeError):
        ArtifactCache()._store.set("k", value)


def test_settings_planted_in_the_database_cannot_steer_the_disk(isolated_cache):
    ArtifactCache().put_bytes("a", b"1")
    con = sqlite3.connect(isolated_cache / "cache.db")
    con.execute("INSERT OR REPLACE INTO Settings VALUES ('disk_pickle_protocol', 5)")
    con.execute("INSERT OR REPLACE INTO Settings VALUES ('disk_evil_option', 1)")
    con.commit()
    con.close()
    c = ArtifactCache()
    assert c.get_bytes("a") == b"1"
    assert c._store.disk.pickle_protocol == 0


def test_garbage_database_is_a_miss_not_a_crash(isolated_cache):
    isolated_cache.mkdir()
    (isolated_cache / "cache.db").write_bytes(b"this is not a database" * 100)
    c = ArtifactCache()
    assert c.get_json("k") is None and c.corrupted == ["k"] and "k" not in c


# ============================================================================ 2. valid checksum, wrong content
RESULT_SCHEMA = dict_with(task=str, arch=str, attack=dict, per_epoch=list)
META_SCHEMA = dict_with(params=int, per_epoch=list, train_s=float)


@pytest.mark.parametrize(
    "stored,schema",
    [
        ([1, 2, 3], RESULT_SCHEMA),
        ({"foo": 1}, META_SCHEMA),
        ({"params": "many", "per_epoch": [], "train_s": 1.0}, META_SCHEMA),
        ({"params": True, "per_epoch": [], "train_s": 1.0}, META_SCHEMA),  # a bool is not an int
        ({"params": 3, "per_epoch": {}, "train_s": 1.0}, META_SCHEMA),
        ("a string", META_SCHEMA),
        (None, META_SCHEMA),
    ],
)
def test_json_with_the_wrong_schema_is_discarded(stored, schema):
    c = ArtifactCache()
    c.put_json("k", stored)
    assert c.get_json("k", validate=schema) is None
    assert c.corrupted == ["k"] and "k" not in c


@pytest.mark.parametrize("validator", [lambda v: False, lambda v: v["missing"], lambda v: 1 / 0])
def test_validator_failing_or_raising_discards(validator):
    c = ArtifactCache()
    c.put_json("k", {"a": 1})
    assert c.get_json("k", validate=validator) is None and c.corrupted == ["k"]


def test_valid_entries_pass_their_validators():
    c = ArtifactCache()
    meta = {"params": 3, "per_epoch": [], "train_s": 2}  # JSON writes 2.0 as 2: float accepts int
    c.put_json("m", meta)
    assert c.get_json("m", validate=META_SCHEMA) == meta
    assert c.get_json("m", validate=lambda v: None) == meta and c.corrupted == []


def _weights():
    return {"layer.weight": torch.randn(3, 4), "layer.bias": torch.zeros(3)}


@pytest.mark.parametrize(
    "stored",
    [
        {"other.weight": torch.randn(3, 4), "layer.bias": torch.zeros(3)},  # wrong name
        {"layer.weight": torch.randn(3, 4)},  # missing tensor
        {**_weights(), "extra": torch.zeros(1)},  # unexpected tensor
        {"layer.weight": torch.randn(4, 3), "layer.bias": torch.zeros(3)},  # wrong shape
    ],
    ids=["renamed", "missing", "extra", "reshaped"],
)
def test_weights_with_the_wrong_tensors_are_discarded(stored):
    c = ArtifactCache()
    c.put_tensors("w", stored)
    assert c.get_tensors("w", expected=tensor_shapes(_weights())) is None
    assert c.corrupted == ["w"] and "w" not in c


def test_weights_that_match_load_and_non_finite_weights_can_be_refused():
    c = ArtifactCache()
    w = _weights()
    c.put_tensors("w", w)
    assert set(c.get_tensors("w", expected=tensor_shapes(w))) == set(w)
    w["layer.bias"][0] = float("nan")
    c.put_tensors("nan", w)
    assert c.get_tensors("nan") is not None
    assert c.get_tensors("nan", require_finite=True) is None and c.corrupted == ["nan"]


def test_responses_validate_hook():
    c = ArtifactCache()
    r = Responses.from_probs(torch.softmax(torch.randn(4, 3), 1), [1, 3], torch.tensor([0, 1, 2, 0]))
    c.put_responses("r", r)
    assert c.get_responses("r", validate=lambda x: len(x) == 2) is not None
    assert c.get_responses("r", validate=lambda x: len(x) == 5) is None and c.corrupted == ["r"]


def test_put_json_can_refuse_non_finite_numbers():
    c = ArtifactCache()
    with pytest.raises(ValueError):
        c.put_json("k", {"auc": float("nan")}, allow_nan=False)
    with pytest.raises(ValueError):
        c.put_json("k", {"x": [1.0, float("inf")]}, allow_nan=False)
    assert c.get_json("k") is None


# ============================================================================ 2b. the cache is created lazily
def test_reading_a_missing_cache_creates_nothing(isolated_cache):
    c = ArtifactCache()
    assert c.get_json("k") is None and c.get_tensors("k") is None and c.get_responses("k") is None
    assert "k" not in c and not c.exists
    c.clear()
    c.close()
    assert not isolated_cache.exists()


def test_an_empty_folder_gets_no_database_from_reads(isolated_cache):
    isolated_cache.mkdir()
    assert ArtifactCache().get_bytes("k") is None
    assert list(isolated_cache.iterdir()) == []


def test_the_database_appears_with_the_first_entry(isolated_cache):
    c = ArtifactCache()
    c.put_bytes("k", b"v")
    assert c.exists and (isolated_cache / "cache.db").is_file()
    assert ArtifactCache().get_bytes("k") == b"v"


# ============================================================================ 3. ranges of every field
IMAGE_BAD = [
    ("lr", "inf"), ("lr", "1e309"), ("lr", float("inf")), ("lr", "nan"), ("lr", 0.0), ("lr", 11.0),
    ("weight_decay", "inf"), ("weight_decay", -0.1), ("weight_decay", "nan"),
    ("attack_lr", "-inf"), ("attack_lr", 0),
    ("seed", -1), ("seed", 2**32), ("seed", 2**70), ("seed", "1180591620717411303424"), ("seed", "9" * 5000),
    ("epochs", 10**12), ("epochs", 0), ("epochs", 2.5), ("epochs", True),
    ("n_shadows", 10**9), ("n_shadows", 0), ("n_train", 0), ("n_train", 10**7), ("n_eval", 10**7),
    ("batch_size", 0), ("batch_size", 10**6),
    ("attack_hidden", 100_000), ("attack_hidden", 0), ("attack_train_epochs", 10**6),
    ("renet_patch", 100), ("renet_patch", 0), ("cnn_stages", 20), ("cnn_width", 100_000), ("cnn_width", 12),
    ("cnn_width", 20), ("cnn_fc", 10**6), ("renet_layers", 0), ("renet_layers", 50),
    ("augment", "maybe"), ("data_dir", "a\x00b"), ("preset", "p" * 5000),
    ("attack_epochs", "0"), ("attack_epochs", ",".join(["1"] * 1001)),
]


@pytest.mark.parametrize("key,value", IMAGE_BAD, ids=[f"{k}={str(v)[:20]}" for k, v in IMAGE_BAD])
def test_image_config_out_of_range_is_refused_in_one_line(key, value):
    with pytest.raises(ConfigError) as info:
        get_task("image").make_config("rnn", "quick", {key: value})
    msg = str(info.value)
    assert "\n" not in msg and len(msg) < 300
    assert key in msg or key.split("_")[0] in msg


TRANSLATION_BAD = [
    ("clip", "nan"), ("clip", "inf"), ("clip", 0.0), ("dropout", 1.0), ("dropout", "nan"), ("dropout", -0.1),
    ("emb", 10**6), ("hidden", 0), ("max_len", 10**6), ("tf_heads", 0), ("tf_layers", 100), ("tf_d_model", -8),
    ("tf_d_model", 100), ("captions_seed", -1), ("n_pairs_source", 10**9), ("min_freq", 0), ("src_lang", "xx"),
    ("tgt_lang", "en"), ("n_examples", -1), ("bleu_sentences", 0),
]


@pytest.mark.parametrize("key,value", TRANSLATION_BAD, ids=[f"{k}={v}" for k, v in TRANSLATION_BAD])
def test_translation_config_out_of_range_is_refused(key, value):
    with pytest.raises(ConfigError, match=key.split("_")[0]):
        get_task("translation").make_config("rnn", "quick", {key: value})


NAVIGATION_BAD = [
    ("entropy_coef", "nan"), ("entropy_coef", "inf"), ("entropy_coef", -1.0), ("value_coef", "nan"),
    ("gamma", 1.5), ("gamma", "nan"), ("gae_lambda", -0.5), ("clip_eps", 0.0), ("clip_eps", 1.0),
    ("max_grad_norm", 0.0), ("max_grad_norm", "inf"), ("frames", 10**12), ("n_envs", 10**6),
    ("frames_per_env", 0), ("ppo_epochs", 10**4), ("actor_hidden", 10**6), ("critic_hidden", 0),
    ("recurrence", 3), ("map_pool", 0),
]


@pytest.mark.parametrize("key,value", NAVIGATION_BAD, ids=[f"{k}={v}" for k, v in NAVIGATION_BAD])
def test_navigation_config_out_of_range_is_refused(key, value):
    with pytest.raises(ConfigError, match=key.split("_")[0]):
        get_task("navigation").make_config("rnn", "quick", {key: value})


@pytest.mark.parametrize("key,value", [("seed", 0), ("seed", 2**32 - 1), ("epochs", 10_000), ("n_shadows", 64),
                                       ("lr", 10.0), ("weight_decay", 0.0), ("attack_hidden", 4096), ("cnn_width", 4)])
def test_range_bounds_themselves_are_accepted(key, value):
    cfg = get_task("image").make_config("ffnn", "quick", {key: value})
    assert getattr(cfg, key, getattr(cfg.options, key, None)) == value


@pytest.mark.parametrize("task", ["image", "translation", "navigation", "tabular"])
def test_every_preset_lies_inside_the_ranges(task):
    t = get_task(task)
    for preset in t.presets:
        for arch in ("ffnn", "rnn"):
            t.make_config(arch, preset).validate()


@pytest.mark.parametrize("cls", ["ExperimentConfig", "ImageOptions", "TranslationOptions", "NavigationOptions",
                                 "TabularOptions"])
def test_every_range_is_documented_in_the_docstring(cls):
    from core.tasks.image import ImageOptions
    from core.tasks.navigation import NavigationOptions
    from core.tasks.tabular import TabularOptions
    from core.tasks.translation import TranslationOptions

    klass = {"ExperimentConfig": ExperimentConfig, "ImageOptions": ImageOptions,
             "TranslationOptions": TranslationOptions, "NavigationOptions": NavigationOptions,
             "TabularOptions": TabularOptions}[cls]
    doc = klass.__doc__
    for f in fields(klass):
        rng = field_range(klass, f.name)
        if rng is None:
            continue
        # the field's paragraph under "Attributes:" (it may share one: "gamma, gae_lambda: ...")
        lines = doc.split("Attributes:")[1].splitlines()
        start = next(i for i, ln in enumerate(lines)
                     if re.match(r"^ {8}\S", ln) and f.name in [n.strip() for n in ln.split(":")[0].split(",")])
        block = [lines[start]]
        for ln in lines[start + 1:]:
            if not ln.startswith(" " * 12):
                break
            block.append(ln)
        assert rng.describe() in " ".join(block), (f.name, rng.describe())


def test_cnn_widths_accepted_build_and_refused_ones_would_not():
    from core.models.image import ResidualCNN

    for width, stages in [(1, 4), (2, 3), (4, 2), (8, 3), (24, 2), (6, 1), (3, 2)]:
        get_task("image").make_config("ffnn", "quick", {"cnn_width": width, "cnn_stages": stages})
        ResidualCNN(1, 10, width, stages, 16)
    with pytest.raises(ValueError):
        ResidualCNN(1, 10, 12, 1, 16)  # what the ConfigError prevents


def test_task_cannot_be_changed_by_an_update():
    cfg = get_task("image").make_config("rnn", "quick")
    with pytest.raises(ConfigError, match="task cannot be changed"):
        cfg.with_updates({"task": "translation"})
    assert cfg.with_updates({"task": "image"}) == cfg


def test_unknown_device_is_a_config_error(monkeypatch):
    from core.foundations.device import default_device, usable_cores

    monkeypatch.setenv("MIA_DEVICE", "tpu")
    with pytest.raises(ConfigError, match="MIA_DEVICE"):
        default_device()
    monkeypatch.setenv("MIA_DEVICE", "cpu")
    assert default_device().type == "cpu"
    assert 1 <= usable_cores() <= (os.cpu_count() or 1)


def test_widgets_show_the_ranges():
    from core.tasks.navigation import NavigationOptions
    from ui.widgets import with_range

    assert "[0, 2**32)" in with_range("Seeds.", ExperimentConfig, "seed")
    assert with_range(None, NavigationOptions, "entropy_coef") == "Allowed: [0, 10]."
    assert with_range("x", ExperimentConfig, "task") == "x"


# ============================================================================ 3b. memory from the config alone
@pytest.fixture(scope="module")
def digits():
    task = get_task("image")
    return task, task.load(task.make_config("rnn", "quick"))


@pytest.mark.parametrize("width,stages,fc", [(16, 2, 64), (8, 3, 32), (4, 1, 16), (32, 3, 256)])
def test_cnn_param_count_closed_form(width, stages, fc):
    from core.models import count_params
    from core.models.image import ResidualCNN

    for c, n in [(1, 10), (3, 10)]:
        assert cnn_param_count(c, n, width, stages, fc) == count_params(ResidualCNN(c, n, width, stages, fc))


@pytest.mark.parametrize("actor,critic", [(74, 64), (8, 300)])
def test_mlp_agent_param_count_closed_form(actor, critic):
    from core.models.navigation import MLPAgent, count_params

    assert mlp_agent_param_count(actor, critic) == count_params(MLPAgent(49, 7, actor, critic))


@pytest.mark.parametrize("arch", ["ffnn", "rnn"])
def test_image_estimate_builds_nothing(digits, arch, monkeypatch):
    task, data = digits
    monkeypatch.setattr(type(task), "build_model", lambda *a: pytest.fail("memory_estimate built the model"))
    small = task.memory_estimate(task.make_config(arch, "quick"), data)
    assert 0 < small < 2**30
    t = time.perf_counter()
    huge = task.memory_estimate(task.make_config(arch, "quick", {"cnn_width": 512, "cnn_stages": 6}), data)
    assert time.perf_counter() - t < 2.0
    if arch == "ffnn":
        assert huge > 64 * 2**30  # refused by the pipeline's check, before anything is allocated


def test_attack_network_is_part_of_the_estimate(digits):
    task, data = digits
    base = task.make_config("ffnn", "quick")
    big = task.make_config("ffnn", "quick", {"attack_hidden": 4096, "n_shadows": 64, "n_eval": 100_000})
    assert task.memory_estimate(big, data) > task.memory_estimate(base, data) + 2**30


def test_renet_patch_that_does_not_tile_the_images_is_a_config_error(digits):
    task, data = digits
    with pytest.raises(ConfigError, match="renet_patch=3 does not tile 8×8 images"):
        task.memory_estimate(task.make_config("rnn", "quick", {"renet_patch": 3}), data)
    task.memory_estimate(task.make_config("ffnn", "quick", {"renet_patch": 3}), data)  # the CNN does not care


@pytest.mark.parametrize("arch", ["ffnn", "rnn"])
def test_navigation_and_translation_estimates_build_nothing(arch, monkeypatch):
    nav = get_task("navigation")
    monkeypatch.setattr(type(nav), "build_model", lambda *a: pytest.fail("built"))
    data = TaskData(None, np.arange(4), np.arange(4, 8), "", {"max_steps": 40})
    cfg = nav.make_config(arch, "quick")
    assert 0 < nav.memory_estimate(cfg, data) < 2**30
    assert nav.memory_estimate(nav.make_config(arch, "quick", {"actor_hidden": 4096, "attack_hidden": 4096,
                                                               "n_eval": 100_000}), data) > 2**30
    tr = get_task("translation")
    monkeypatch.setattr(type(tr), "build_model", lambda *a: pytest.fail("built"))
    vocab = SimpleNamespace(src_vocab=[0] * 5000, tgt_vocab=[0] * 5000)
    tdata = TaskData(vocab, np.arange(4), np.arange(4, 8), "", {})
    assert 0 < tr.memory_estimate(tr.make_config(arch, "quick"), tdata) < 2**31
    assert tr.memory_estimate(tr.make_config(arch, "quick", {"hidden": 4096, "emb": 4096}), tdata) > 2**30


def test_resource_limit_error_is_a_mia_error():
    assert issubclass(ResourceLimitError, MIAError)


# ============================================================================ 4. Multi30K read with caps
def write_pair(folder: Path, en: bytes, de: bytes, gz: bool = True) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for lang, data in (("en", en), ("de", de)):
        if gz:
            (folder / f"train.{lang}.gz").write_bytes(gzip.compress(data, compresslevel=1))
        else:
            (folder / f"train.{lang}").write_bytes(data)


@pytest.mark.parametrize("gz", [True, False], ids=["gzipped", "plain"])
def test_multi30k_file_beyond_the_byte_cap(tmp_path, monkeypatch, gz):
    monkeypatch.setattr(multi30k, "MAX_FILE_BYTES", 2**20)
    bomb = b"a man rides a horse .\n" * 100_000  # 2.2 MB of text, a few KB gzipped
    write_pair(tmp_path, bomb, bomb, gz=gz)
    with pytest.raises(DatasetNotFoundError, match="MAX_FILE_BYTES"):
        multi30k.load_multi30k(tmp_path, "en", "de")


def test_multi30k_newline_bomb_hits_the_line_cap(tmp_path):
    write_pair(tmp_path, b"\n" * (multi30k.MAX_LINES + 10), b"x\n")
    with pytest.raises(DatasetNotFoundError, match="MAX_LINES"):
        multi30k.load_multi30k(tmp_path, "en", "de")


def test_multi30k_gzip_bomb_without_newlines_stops_at_the_first_line(tmp_path):
    (tmp_path / "train.en.gz").write_bytes(gzip.compress(b"\0" * (80 * 2**20), compresslevel=1))  # 80 MB -> 80 KB
    (tmp_path / "train.de.gz").write_bytes(gzip.compress(b"x\n"))
    with pytest.raises(DatasetNotFoundError, match="MAX_LINE_BYTES"):
        multi30k.load_multi30k(tmp_path, "en", "de")


def test_multi30k_not_utf8_is_a_clear_error(tmp_path):
    write_pair(tmp_path, b"\xff\xfe bad\n", b"ok\n")
    with pytest.raises(DatasetNotFoundError, match="unreadable"):
        multi30k.load_multi30k(tmp_path, "en", "de")


def test_multi30k_real_sized_files_still_load(tmp_path):
    en = "".join(f"a man number {i} rides a horse .\n" for i in range(3000)).encode()
    de = "".join(f"ein mann nummer {i} reitet ein pferd .\n" for i in range(3000)).encode()
    write_pair(tmp_path, en, de)
    pairs = multi30k.load_multi30k(tmp_path, "en", "de")
    assert len(pairs) == 3000 and pairs[7] == ("a man number 7 rides a horse .", "ein mann nummer 7 reitet ein pferd .")


def _serve(monkeypatch, body: bytes):
    monkeypatch.setattr(multi30k.urllib.request, "urlopen", lambda url, timeout: io.BytesIO(body))


def test_download_of_a_bomb_saves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(multi30k, "MAX_FILE_BYTES", 2**20)
    _serve(monkeypatch, gzip.compress(b"spam spam spam\n" * 200_000, compresslevel=1))
    with pytest.raises(multi30k.DownloadError, match="broken"):
        multi30k.download_multi30k(tmp_path / "m", ("en", "de"))
    assert list((tmp_path / "m").iterdir()) == []


def test_download_larger_than_the_cap_saves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(multi30k, "MAX_DOWNLOAD_BYTES", 1000)
    _serve(monkeypatch, os.urandom(5000))
    with pytest.raises(multi30k.DownloadError, match="more than"):
        multi30k.download_multi30k(tmp_path / "m", ("en", "de"))
    assert list((tmp_path / "m").iterdir()) == []


# ============================================================================ 7. folders from the browser
@pytest.fixture
def root(tmp_path, monkeypatch):
    r = tmp_path / "data-root"
    (r / "multi30k").mkdir(parents=True)
    monkeypatch.setenv(DATA_ROOT_ENV, str(r))
    return r.resolve()


@pytest.mark.parametrize("typed", ["{root}/multi30k", "multi30k", "./multi30k/../multi30k", "{root}", "new/folder"])
def test_folders_under_the_root_are_accepted(root, typed):
    resolved = resolve_data_dir(typed.format(root=root))
    assert resolved.is_relative_to(root) and resolved.is_absolute()


@pytest.mark.parametrize("typed", ["/etc", "{root}/../outside", "../outside", "{root}/multi30k/../../..", "/", "~root-nope/x",
                                   "", "   ", "a\x00b", "x" * 5000, "{root}/escape-link"])
def test_folders_outside_the_root_or_malformed_are_refused(root, typed, tmp_path):
    (root / "escape-link").symlink_to(tmp_path, target_is_directory=True)  # a symlink pointing outside
    with pytest.raises(ConfigError):
        resolve_data_dir(typed.format(root=root))


def test_default_root_is_the_home_directory(monkeypatch, tmp_path):
    monkeypatch.delenv(DATA_ROOT_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert data_root() == tmp_path.resolve()
    assert resolve_data_dir("~/cifar") == tmp_path.resolve() / "cifar"
    with pytest.raises(ConfigError, match="MIA_DATA_ROOT"):
        resolve_data_dir("/etc")


def test_download_outside_the_root_writes_nothing(root, tmp_path, monkeypatch):
    _serve(monkeypatch, gzip.compress(b"x\n"))
    with pytest.raises(ConfigError, match="outside the data root"):
        multi30k.download_multi30k(tmp_path / "elsewhere", ("en", "de"), root=root)
    assert not (tmp_path / "elsewhere").exists()
    fetched = multi30k.download_multi30k(root / "multi30k", ("en", "de"), root=root)
    assert len(fetched) == 6


def test_the_page_refuses_a_folder_outside_the_data_root(root):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"))
    at.switch_page("app_pages/1_Train_and_attack.py")
    at.run(timeout=60)
    at.selectbox[0].set_value("translation").run(timeout=60)
    at.selectbox(key="translation:quick:dataset").set_value("multi30k").run(timeout=60)
    at.text_input(key="translation:quick:data_dir").set_value("/etc").run(timeout=60)
    assert not at.exception
    assert any("outside the data root" in e.value for e in at.error)
    assert not any(b.label.startswith("Download") or b.label == "Train & attack" for b in at.button)


# ============================================================================ 4 + 6. the CLI
def run_main(args, capsys):
    try:
        rc = cli.main(args)
    except SystemExit as exc:  # argparse errors exit from inside parse_args
        rc = exc.code
    err = capsys.readouterr().err
    return rc, err


@pytest.fixture
def no_pipeline(monkeypatch):
    """Any run that gets as far as the pipeline fails the test: errors must come before it."""
    import core.experiment.pipeline

    monkeypatch.setattr(core.experiment.pipeline, "run_experiment", lambda *a, **k: pytest.fail("reached the pipeline"))


CLI_BAD = [
    ["run", "--task", "audio"],
    ["run", "--arch", "cnn"],
    ["config", "--task", "nope"],
    ["run", "--set", "epochs=3", "--set", "epochs=4"],
    ["run", "--set", "lr=1e-3", "--set", " lr =1e-2"],
    ["run", "--task", "image", "--set", "task=translation"],
    ["run", "--arch", "rnn", "--set", "arch=ffnn"],
    ["run", "--preset", "quick", "--set", "preset=paper"],
    ["run", "--set", "=3"],
    ["run", "--set", "lr=inf"],
    ["run", "--set", "seed=-1"],
    ["run", "--set", "options=1"],
    ["run", "--out", "/nonexistent-folder/r.json"],
    ["run", "--out", "/proc/r.json"],
    ["run", "--out", "{tmp}"],
    ["run", "--out", "{tmp}/file.txt/r.json"],
    ["run", "--bogus-flag"],
    ["frobnicate"],
    [],
]


@pytest.mark.parametrize("args", CLI_BAD, ids=[" ".join(a) or "no-command" for a in CLI_BAD])
def test_cli_bad_input_is_one_error_line_and_exit_2(args, capsys, tmp_path, no_pipeline):
    (tmp_path / "file.txt").write_text("x")
    rc, err = run_main([a.format(tmp=tmp_path) for a in args], capsys)
    assert rc == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err


def test_cli_same_value_in_set_and_flag_is_fine(capsys):
    assert cli.main(["config", "--task", "image", "--set", "task=image", "--set", "arch=rnn"]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["task"] == "image"


def test_cli_writes_out_atomically_after_the_run(tmp_path, capsys, monkeypatch):
    import core.experiment.pipeline

    out = tmp_path / "r.json"
    out.write_text("old")
    monkeypatch.setattr(core.experiment.pipeline, "run_experiment", lambda cfg, progress=None, **kw: SimpleNamespace(summary={"ok": 1}))
    assert cli.main(["run", "--quiet", "--out", str(out)]) == 0
    assert unstamped(json.loads(out.read_text())) == {"ok": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_cli_interrupt_is_one_line_and_exit_130(capsys, monkeypatch):
    import core.experiment.pipeline

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(core.experiment.pipeline, "run_experiment", interrupted)
    rc, err = run_main(["run", "--quiet"], capsys)
    assert rc == 130 and err == "interrupted; cached models are kept\n"


def test_cli_error_messages_with_newlines_stay_on_one_line(capsys, monkeypatch):
    import core.experiment.pipeline

    def fails(*a, **k):
        raise DatasetNotFoundError("first line\nsecond line")

    monkeypatch.setattr(core.experiment.pipeline, "run_experiment", fails)
    rc, err = run_main(["run", "--quiet"], capsys)
    assert rc == 2 and err == "error: first line second line\n"


def test_guarded_is_reusable_for_new_subcommands(capsys):
    assert cli_common.guarded(lambda: 0) == 0
    assert cli_common.guarded(lambda: (_ for _ in ()).throw(ConfigError("bad"))) == 2
    assert capsys.readouterr().err == "error: bad\n"


def test_write_json_atomically_keeps_the_old_file_when_the_write_fails(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    target.write_text('{"old": true}')
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    with pytest.raises(OutputPathError, match="No space left"):
        write_json_atomically(target, {"new": True})
    assert json.loads(target.read_text()) == {"old": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_write_json_atomically_gives_a_readable_file(tmp_path):
    write_json_atomically(tmp_path / "r.json", {"a": [1, 2]})
    assert json.loads((tmp_path / "r.json").read_text()) == {"a": [1, 2]}
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("bad", ["", "a\x00b"])
def test_check_out_path_refuses_malformed_names(bad):
    with pytest.raises(OutputPathError):
        check_out_path(bad)


def test_check_out_path_accepts_a_writable_place_and_leaves_nothing(tmp_path):
    assert check_out_path(tmp_path / "r.json") == (tmp_path / "r.json").absolute()
    assert list(tmp_path.iterdir()) == []


# ============================================================================ 5 (module only). inter-process locks
LOCK_SCRIPT = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {root!r})
    from core.foundations.locks import KeyLock
    lock = KeyLock("train/abc/victim", {dir!r})
    lock.acquire()
    print("acquired", time.time(), flush=True)
    mode = sys.argv[1]
    if mode == "crash":
        import os, signal
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(float(sys.argv[2]))
    print("releasing", time.time(), flush=True)
    lock.release()
    """
)


def _locker(tmp_path: Path, mode: str, hold_s: float = 0.0) -> subprocess.Popen:
    script = tmp_path / "locker.py"
    script.write_text(LOCK_SCRIPT.format(root=str(ROOT), dir=str(tmp_path / "locks")))
    p = subprocess.Popen([sys.executable, str(script), mode, str(hold_s)], stdout=subprocess.PIPE, text=True)
    return p


def test_two_processes_take_turns(tmp_path):
    a = _locker(tmp_path, "hold", 1.0)
    assert a.stdout.readline().startswith("acquired")
    b = _locker(tmp_path, "hold", 0.0)
    a_release = float(a.stdout.readline().split()[1])
    b_acquired = float(b.stdout.readline().split()[1])
    assert b_acquired >= a_release
    assert a.wait(10) == 0 and b.wait(10) == 0


def test_a_crashed_holder_does_not_block(tmp_path):
    a = _locker(tmp_path, "crash")
    assert a.stdout.readline().startswith("acquired")
    assert a.wait(10) == -signal.SIGKILL
    t = time.perf_counter()
    with hold("train/abc/victim", timeout=5, directory=tmp_path / "locks"):
        assert time.perf_counter() - t < 1.0


def test_a_stuck_holder_times_out_with_its_pid(tmp_path):
    a = _locker(tmp_path, "hold", 30.0)
    try:
        assert a.stdout.readline().startswith("acquired")
        with pytest.raises(LockTimeoutError, match=f"process {a.pid}"):
            KeyLock("train/abc/victim", tmp_path / "locks").acquire(timeout=0.3)
    finally:
        a.kill()
        a.wait(10)


def test_threads_exclude_each_other_and_keys_are_independent(tmp_path):
    order = []
    first = KeyLock("k", tmp_path)
    first.acquire()

    def other() -> None:
        with hold("k", directory=tmp_path):
            order.append("second")

    t = threading.Thread(target=other)
    t.start()
    with hold("another key", timeout=0, directory=tmp_path):
        pass  # a different key is free
    time.sleep(0.2)
    order.append("first releases")
    first.release()
    t.join(5)
    assert order == ["first releases", "second"]
    with pytest.raises(RuntimeError):
        lock = KeyLock("k", tmp_path)
        lock.acquire()
        lock.acquire()


def test_float32_on_a_gpu_is_not_tf32():
    """precision float32 must mean float32 on a GPU too (cuDNN convolutions default to TF32)."""
    import torch

    import core.foundations.device  # noqa: F401  (importing it sets the TF32 flags under test)

    assert torch.backends.cudnn.allow_tf32 is False and torch.backends.cuda.matmul.allow_tf32 is False


def test_configure_threads_keeps_an_explicit_omp_num_threads(monkeypatch):
    import torch

    from core.foundations.device import configure_threads, usable_cores

    before = torch.get_num_threads()
    try:
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        assert configure_threads() == 1 and torch.get_num_threads() == 1
        monkeypatch.setenv("OMP_NUM_THREADS", "999")  # more than the machine has: the cores win
        assert configure_threads() == usable_cores()
        monkeypatch.setenv("OMP_NUM_THREADS", "lots")  # not a number: ignored
        assert configure_threads() == usable_cores()
    finally:
        torch.set_num_threads(before)
