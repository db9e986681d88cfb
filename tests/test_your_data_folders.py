"""Your data in folders: the user's images in class folders (``image``, ``dataset=folder``) and parallel text
(``translation``, ``dataset=pairs``): what is read, the record ids, the splits, matched models, every bad
input as one line before training, and a CLI run end to end — on tiny fixtures each test writes."""
from __future__ import annotations

import gzip
import io
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from recompute import assert_attacks_match_records

from core.data.image_folder import list_image_folder, read_image_folder
from core.data.text_pairs import load_text_pairs
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import trained_models
from core.foundations.errors import ConfigError, DatasetNotFoundError
from core.tasks import get_task

ROOT = Path(__file__).resolve().parent.parent
#: a matched tiny pair on 8×8 images: CNN 7,922 vs ReNet 7,586 parameters (colour, 2 classes)
TINY_IMAGE = {"image_size": 8, "cnn_width": 8, "cnn_stages": 2, "cnn_fc": 32, "renet_patch": 4, "renet_layers": 1}


@pytest.fixture
def data_root(tmp_path, monkeypatch) -> Path:
    """The data root of the test: folders outside it are refused."""
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setenv("MIA_DATA_ROOT", str(root))
    return root


def _png(path: Path, size=(10, 12), mode="RGB", seed=0) -> None:
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    shape = (size[1], size[0], 3) if mode == "RGB" else (size[1], size[0])
    Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8)).convert(mode).save(path)


def write_class_folders(folder: Path, per_class: int = 12, classes=("cat", "dog"), grey_every: int = 0) -> Path:
    """``folder/<class>/<k>.png`` of assorted sizes; every ``grey_every``-th image grey (0: none)."""
    for c, name in enumerate(classes):
        for k in range(per_class):
            grey = grey_every and k % grey_every == 0
            _png(folder / name / f"{k:02d}.png", size=(8 + k, 9 + 2 * c), mode="L" if grey else "RGB", seed=100 * c + k)
    return folder


# ---------------------------------------------------------------------------- images in class folders
def test_folder_is_read_with_ids_classes_and_class_by_class_halves(data_root):
    write_class_folders(data_root / "pets", per_class=7, grey_every=3)
    (data_root / "pets" / "notes.txt").write_text("not an image")  # a file directly in DIR: skipped
    (data_root / "pets" / "cat" / "readme.md").write_text("skipped too")
    task = get_task("image")
    cfg = task.make_config("ffnn", "folder_quick", {"data_dir": "pets", **TINY_IMAGE})
    data = task.load(cfg)
    rec = data.records
    assert rec.images.shape == (14, 3, 8, 8)  # mixed grey and colour: one channel count, colour
    assert rec.class_names == ("cat", "dog") and rec.labels.tolist() == [0] * 7 + [1] * 7
    assert rec.record_ids[:2] == ("cat/00.png", "cat/01.png") and rec.record_ids[7] == "dog/00.png"
    assert data.info["converted"] == data.info["grey_images"] == 6 and data.info["skipped_entries"] == 2
    assert "converted to colour" in data.description
    # disjoint halves covering everything, each holding both classes (odd class sizes split 4/3 and 3/4)
    assert not set(data.victim_pool) & set(data.attacker_pool)
    assert len(data.victim_pool) + len(data.attacker_pool) == 14
    for pool in (data.victim_pool, data.attacker_pool):
        assert set(rec.labels[pool].tolist()) == {0, 1} and len(pool) == 7
    assert "cat/00.png, class 'cat'" in task.describe_record(cfg, data, 0).caption


def test_grey_folder_stays_grey_and_channels_can_be_forced(data_root):
    write_class_folders(data_root / "g", per_class=3, grey_every=1)
    listing = list_image_folder("g")
    grey, facts = read_image_folder(listing, 8, 0)
    assert grey.shape == (6, 1, 8, 8) and facts["channels"] == 1 and facts["converted"] == 0
    colour, facts = read_image_folder(listing, 8, 3)
    assert colour.shape == (6, 3, 8, 8) and facts["converted"] == 6
    assert np.allclose(colour[:, 0], grey[:, 0], atol=1 / 255) and np.allclose(colour[:, 0], colour[:, 2])


def test_sixteen_bit_and_jpeg_images_are_scaled_not_clipped(data_root):
    folder = data_root / "deep"
    (folder / "a").mkdir(parents=True)
    Image.fromarray(np.full((6, 6), 65535, np.uint16)).save(folder / "a" / "white16.png")
    Image.fromarray(np.full((6, 6), 32768, np.uint16)).save(folder / "a" / "mid16.png")
    (folder / "b").mkdir()
    Image.new("RGB", (20, 10), (255, 255, 255)).save(folder / "b" / "x.jpg", quality=95)
    Image.new("RGB", (10, 20), (0, 0, 0)).save(folder / "b" / "y.JPEG", quality=95)
    x, facts = read_image_folder(list_image_folder("deep"), 4, 1)
    # files sorted by name: mid16, white16, x, y
    assert abs(float(x[0].mean()) - 0.5) < 0.01 and x[1].min() > 0.99  # 32768 → ½, 65535 → 1 (not clipped at 255)
    assert x[2].min() > 0.97 and x[3].max() < 0.03


def test_a_folder_swapped_for_a_link_after_the_listing_is_not_followed(data_root, tmp_path):
    write_class_folders(data_root / "pets", per_class=2)
    listing = list_image_folder("pets")
    write_class_folders(tmp_path / "elsewhere", per_class=2)
    (data_root / "pets" / "cat").rename(data_root / "pets" / "old_cat")
    os.symlink(tmp_path / "elsewhere" / "cat", data_root / "pets" / "cat")  # same names, outside the root
    with pytest.raises(DatasetNotFoundError, match=r"image cat/00.png cannot be opened .*links are not followed"):
        read_image_folder(listing, 8)


def test_parameters_matched_within_5_percent_at_the_chosen_size(data_root):
    """CNN vs ReNet within 5 % at the folder's channels, classes and size; a size the ReNet cannot
    match at that patch is one line before training, naming the option to change."""
    write_class_folders(data_root / "three", per_class=4, classes=("a", "b", "c"), grey_every=1)
    task = get_task("image")
    for overrides in (TINY_IMAGE, {"image_size": 32}):  # tiny grey, and folder_quick's own models
        counts = {}
        for arch in ("ffnn", "rnn"):
            cfg = task.make_config(arch, "folder_quick", {"data_dir": "three", **overrides})
            counts[arch] = task.param_count(task.build_model(cfg, task.load(cfg)))
        assert abs(counts["ffnn"] - counts["rnn"]) <= 0.05 * counts["ffnn"], counts
    cfg = task.make_config("ffnn", "folder_quick", {"data_dir": "three", "image_size": 128})  # 1,024 patches
    with pytest.raises(ConfigError, match="raise renet_patch"):
        task.memory_estimate(cfg, task.load(cfg))
    with pytest.raises(ConfigError, match="does not tile 30×30"):
        task.load(task.make_config("ffnn", "folder_quick", {"data_dir": "three", "image_size": 30}))


def _bomb_png(path: Path, side: int = 50_000) -> None:
    """A valid 1×1 PNG whose header is rewritten to declare side × side pixels (CRC fixed)."""
    buf = io.BytesIO()
    Image.new("L", (1, 1)).save(buf, "PNG")
    raw = bytearray(buf.getvalue())
    ihdr = 8 + 8  # signature, then the IHDR chunk's length and type
    raw[ihdr:ihdr + 8] = struct.pack(">II", side, side)
    raw[ihdr + 13:ihdr + 17] = struct.pack(">I", zlib.crc32(bytes(raw[12:ihdr + 13])))
    path.write_bytes(bytes(raw))


def _bad_folder(case: str, root: Path, outside: Path) -> str:
    """A folder with one defect; returns data_dir as typed."""
    folder = root / case
    if case == "empty":
        folder.mkdir()
        return case
    if case == "outside":
        write_class_folders(outside / "pets", per_class=2)
        return str(outside / "pets")
    if case == "dotdot":
        write_class_folders(outside / "pets2", per_class=2)
        return f"../{outside.name}/pets2"
    write_class_folders(folder, per_class=3)
    if case == "truncated":
        full = (folder / "cat" / "01.png").read_bytes()
        (folder / "cat" / "01.png").write_bytes(full[: len(full) // 2])
    elif case == "not_an_image":
        (folder / "dog" / "02.png").write_bytes(b"hello, not a PNG at all" * 10)
    elif case == "gif":
        Image.new("L", (4, 4)).save(folder / "dog" / "03.png", format="GIF")
    elif case == "bomb":  # 10⁸ pixels: past our cap (4·10⁷), under Pillow's refusal (1.8·10⁸)
        _bomb_png(folder / "dog" / "bomb.png", 10_000)
    elif case == "huge_bomb":  # 2.5·10⁹ pixels: Pillow itself refuses it while opening
        _bomb_png(folder / "dog" / "bomb.png", 50_000)
    elif case == "one_class":
        for f in (folder / "dog").iterdir():
            f.unlink()
        (folder / "dog").rmdir()
    elif case == "small_class":
        _png(folder / "bird" / "only.png")
    elif case == "link_out":
        _png(outside / "secret.png")
        os.symlink(outside / "secret.png", folder / "cat" / "secret.png")
    elif case == "dir_link_out":
        write_class_folders(outside / "more", per_class=2, classes=("eel",))
        os.symlink(outside / "more" / "eel", folder / "eel")
    return case


#: (case of :func:`_bad_folder`, the error, what it says)
BAD_FOLDERS = [
    ("empty", DatasetNotFoundError, "holds no PNG or JPEG image"),
    ("outside", ConfigError, "lies outside the data root"),
    ("dotdot", ConfigError, "lies outside the data root"),
    ("truncated", DatasetNotFoundError, r"cat/01.png is unreadable or truncated"),
    ("not_an_image", DatasetNotFoundError, r"dog/02.png is unreadable or truncated"),
    ("gif", DatasetNotFoundError, r"dog/03.png is GIF, not a PNG or JPEG"),
    ("bomb", DatasetNotFoundError, r"dog/bomb.png declares 10,000 × 10,000 pixels.*decompression bomb"),
    ("huge_bomb", DatasetNotFoundError, r"dog/bomb.png is a decompression bomb"),
    ("one_class", DatasetNotFoundError, r"images of one class only \('cat'\)"),
    ("small_class", DatasetNotFoundError, r"fewer than 2 images.*'bird' \(1\)"),
    ("link_out", DatasetNotFoundError, r"cat/secret.png is a symbolic link"),
    ("dir_link_out", DatasetNotFoundError, r"eel is a symbolic link"),
]


def _cli(*args: str, root: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "MIA_DATA_ROOT": str(root), "MIA_CACHE_DIR": str(cache), "MIA_DEVICE": "cpu",
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, capture_output=True, text=True, env=env)


TINY_RUN = ["--set", "n_train=8", "--set", "n_eval=4", "--set", "epochs=2", "--set", "attack_epochs=1",
            "--set", "n_shadows=1", "--set", "attack_train_epochs=3", "--quiet"]


def _sets(args: list[str]) -> dict[str, str]:
    """``--set k=v`` pairs of a command line as a dict (other arguments left out)."""
    return dict(v.split("=", 1) for k, v in zip(args, args[1:]) if k == "--set")


def test_cli_runs_an_image_folder_end_to_end_and_refuses_a_bad_one(data_root, tmp_path):
    write_class_folders(data_root / "pets", per_class=12, grey_every=2)  # halves of 12: 8 members + 4 others
    sets = [x for k, v in TINY_IMAGE.items() for x in ("--set", f"{k}={v}")]
    out = tmp_path / "r.json"
    p = _cli("run", "--task", "image", "--arch", "rnn", "--preset", "folder_quick", "--set", "data_dir=pets", *sets,
             *TINY_RUN, "--out", str(out), root=data_root, cache=tmp_path / "cache")
    assert p.returncode == 0, p.stderr
    d = json.loads(out.read_text())
    assert d["config"]["dataset"] == "folder" and d["config"]["options"]["image_size"] == 8
    assert len(d["records"]["membership"]) == 8  # 4 members + 4 non-members scored
    assert_attacks_match_records(d["attacks"], d["records"])  # every AUC and accuracy: from the stored scores
    # the utility: the cached victim's accuracy on its 4 non-members, recomputed here (one image off moves it 0.25)
    cfg = get_task("image").make_config("rnn", "folder_quick", {"data_dir": "pets", **TINY_IMAGE, **_sets(TINY_RUN)})
    assert cfg.config_hash == d["config_hash"]
    models = trained_models(cfg, cache=ArtifactCache(tmp_path / "cache"))
    assert models.victim.cache_hit
    index = models.splits.victim_nonmembers
    with torch.no_grad():
        logits = models.model("victim").eval()(models.data.records.images[index])
    right = (logits.argmax(1) == models.data.records.labels[index]).double().mean()
    assert d["utility"]["val"] == pytest.approx(float(right), abs=1e-6) and len(index) == 4
    (data_root / "empty").mkdir()
    bad = _cli("run", "--task", "image", "--preset", "folder_quick", "--set", "data_dir=empty", *sets, *TINY_RUN,
               root=data_root, cache=tmp_path / "cache2")
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and bad.stderr.count("\n") == 1, bad.stderr
    assert "holds no PNG or JPEG image" in bad.stderr and not (tmp_path / "cache2" / "cache.db").exists()


# ---------------------------------------------------------------------------- parallel text
EN = ["a man rides a horse .", "two dogs play .", "a woman reads .", "kids run on the beach .", "a boy swims ."]
DE = ["ein mann reitet ein pferd .", "zwei hunde spielen .", "eine frau liest .", "kinder laufen am strand .",
      "ein junge schwimmt ."]


def write_pairs(folder: Path, name: str = "train", n: int = 40, src: str = "en", tgt: str = "de",
                gz: bool = False, blank_at: int | None = None) -> Path:
    """``name.src`` / ``name.tgt`` of ``n`` lines varied by a number; line ``blank_at`` (1-based) empty on the target."""
    folder.mkdir(parents=True, exist_ok=True)
    for lang, lines in ((src, EN), (tgt, DE)):
        rows = [f"{lines[i % len(lines)]} {i}" for i in range(n)]
        if blank_at and lang == tgt:
            rows[blank_at - 1] = ""
        text = "\n".join(rows) + "\n"
        if gz:
            with gzip.open(folder / f"{name}.{lang}.gz", "wt", encoding="utf-8") as fh:
                fh.write(text)
        else:
            (folder / f"{name}.{lang}").write_text(text, encoding="utf-8")
    return folder


def test_train_pair_is_the_source_and_record_ids_are_line_numbers(data_root):
    folder = write_pairs(data_root / "m", "train", n=30, gz=True, blank_at=4)
    write_pairs(folder, "val", n=5)
    write_pairs(folder, "test_2016_flickr", n=5, gz=True)
    text = load_text_pairs("m", "en", "de")
    assert text.name == "train" and text.files == ("train.en.gz", "train.de.gz")
    assert text.names == ("test_2016_flickr", "train", "val") and text.dropped_empty == 1
    assert text.line_numbers[:4] == [1, 2, 3, 5] and len(text.pairs) == 29
    assert text.pairs[3] == (f"{EN[4]} 4", f"{DE[4]} 4")  # line 5
    assert load_text_pairs("m", "en", "de", pair_name="val").pairs[0] == (f"{EN[0]} 0", f"{DE[0]} 0")
    task = get_task("translation")
    cfg = task.make_config("rnn", "pairs_cpu", {"data_dir": "m", "n_train": 8, "n_eval": 4})
    data = task.load(cfg)
    assert data.records.record_ids[:4] == [1, 2, 3, 5] and "29 line pairs of train.en.gz" in data.description
    assert task.describe_record(cfg, data, 3).caption.startswith("line 5")


def test_the_only_pair_is_used_under_any_name_and_any_language_code(data_root):
    write_pairs(data_root / "corpus", "europarl-v7", n=12, src="pt_BR", tgt="xx")
    text = load_text_pairs("corpus", "pt_BR", "xx")
    assert text.name == "europarl-v7" and len(text.pairs) == 12
    task = get_task("translation")
    cfg = task.make_config("ffnn", "pairs_cpu", {"data_dir": "corpus", "src_lang": "pt_BR", "tgt_lang": "xx"})
    assert cfg.options.src_lang == "pt_BR"
    with pytest.raises(ConfigError, match="must be one of"):  # Multi30K and the captions keep their four languages
        task.make_config("ffnn", "multi30k_cpu", {"src_lang": "xx"})


def test_adding_the_new_fields_keeps_every_existing_presets_hashes():
    """The hashes every image and translation preset had before the fields of the user's own data
    (image_size, channels, pair_name) existed: cached runs stay valid."""
    before = {
        ("image", "quick", "ffnn"): ("a6cedffe0d0d8a88e051", "94a12b11673859f46f6e"),
        ("image", "quick", "rnn"): ("5138b927c106302a6c88", "f2d5065eb5aa917a4d3e"),
        ("image", "cifar_cpu", "ffnn"): ("465a981b39cbbbbd15be", "89cd6d1a0a5cf7bdfa5d"),
        ("image", "cifar_cpu", "rnn"): ("052d1b20234663650107", "3d495535696aceff8df0"),
        ("image", "paper", "rnn"): ("e3319c8a72438384b965", "09c9d8d5cc07f9ceb4b9"),
        ("translation", "quick", "ffnn"): ("9b83ee45660ef4bc7e5c", "961d5268c21b656a4787"),
        ("translation", "quick", "rnn"): ("0faa66153b15a70a67b1", "8b52ae9ea360f3dc826b"),
        ("translation", "multi30k_cpu", "ffnn"): ("18032ecd1b69e4bc003c", "0a29f41d419f2f8511a0"),
        ("translation", "multi30k_cpu", "rnn"): ("2196d259d405281eb0ff", "59b1e7a100b434810702"),
        ("translation", "paper", "ffnn"): ("b6331f6c0e7d39ab3950", "320bbaaadb5f44dd375a"),
    }
    for (task, preset, arch), hashes in before.items():
        cfg = get_task(task).make_config(arch, preset)
        assert (cfg.config_hash, cfg.training_hash) == hashes, (task, preset, arch)
    quick = get_task("image").make_config("rnn", "quick")
    assert get_task("image").make_config("rnn", "quick", {"image_size": 16}).config_hash != quick.config_hash
    m30k = get_task("translation").make_config("rnn", "multi30k_cpu")
    assert get_task("translation").make_config("rnn", "multi30k_cpu", {"pair_name": "val"}).config_hash != m30k.config_hash


def _bad_pairs(case: str, root: Path, outside: Path) -> str:
    folder = root / case
    if case == "outside":
        write_pairs(outside / "t")
        return str(outside / "t")
    if case == "no_folder":
        return case
    write_pairs(folder)
    if case == "line_counts":
        (folder / "train.de").write_text("\n".join(DE * 7) + "\n")
    elif case == "nul":
        (folder / "train.de").write_bytes(b"ein mann\x00\x01\x02\n" * 40)
    elif case == "not_utf8":
        (folder / "train.en").write_bytes(bytes(range(128, 256)) * 4 + b"\n")
    elif case == "empty":
        (folder / "train.de").write_text("")
    elif case == "blank":
        (folder / "train.de").write_text("\n\n  \n")
    elif case == "missing_language":
        (folder / "train.de").unlink()
    elif case == "several_pairs":
        (folder / "train.en").rename(folder / "a.en")
        (folder / "train.de").rename(folder / "a.de")
        write_pairs(folder, "b")
    elif case == "bad_gzip":
        (folder / "train.de").unlink()
        (folder / "train.de.gz").write_bytes(b"\x1f\x8b\x08\x00 definitely not deflate data")
    elif case == "link_out":
        (folder / "train.de").unlink()
        write_pairs(outside / "src")
        os.symlink(outside / "src" / "train.de", folder / "train.de")
    return case


#: (case of :func:`_bad_pairs`, the error, what it says)
BAD_PAIRS = [
    ("outside", ConfigError, "lies outside the data root"),
    ("no_folder", DatasetNotFoundError, "text folder 'no_folder' not found"),
    ("line_counts", DatasetNotFoundError, r"train.en \(40 lines\) and train.de \(35 lines\).*different line counts"),
    ("nul", DatasetNotFoundError, r"train.de has binary content \(a NUL byte at line 1\)"),
    ("not_utf8", DatasetNotFoundError, r"train.en has binary content at line 1 \(not UTF-8\)"),
    ("empty", DatasetNotFoundError, r"train.de is empty"),
    ("blank", DatasetNotFoundError, r"train.de is empty"),
    ("missing_language", DatasetNotFoundError, r"no file for language 'de'.*languages found: en"),
    ("several_pairs", DatasetNotFoundError, r"2 en/de pairs \(a, b\) and none named 'train'.*pair_name"),
    ("bad_gzip", DatasetNotFoundError, r"train.de.gz is unreadable"),
    ("link_out", DatasetNotFoundError, r"train.de is a symbolic link"),
]
#: each layout's maker of bad cases, its task, preset and options
BAD_DATA = {"image folder": (_bad_folder, "image", "folder_quick", TINY_IMAGE),
            "text pairs": (_bad_pairs, "translation", "pairs_cpu", {})}


@pytest.mark.parametrize("layout, case, error, message",
                         [("image folder", *c) for c in BAD_FOLDERS] + [("text pairs", *c) for c in BAD_PAIRS])
def test_bad_image_folders_and_text_pairs_are_one_line_before_training(layout, case, error, message, data_root,
                                                                       tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    make_bad, task_name, preset, options = BAD_DATA[layout]
    data_dir = make_bad(case, data_root, outside)
    task = get_task(task_name)
    cfg = task.make_config("ffnn", preset, {"data_dir": data_dir, **options})
    with pytest.raises(error, match=message) as info:
        task.load(cfg)
    assert "\n" not in str(info.value)


def test_cli_runs_parallel_text_end_to_end(data_root, tmp_path):
    write_pairs(data_root / "texts", "train", n=60, src="en", tgt="de")
    out = tmp_path / "t.json"
    p = _cli("run", "--task", "translation", "--arch", "ffnn", "--preset", "pairs_cpu", "--set", "data_dir=texts",
             "--set", "emb=16", "--set", "hidden=16", "--set", "bleu_sentences=4", "--set", "n_examples=1", *TINY_RUN,
             "--out", str(out), root=data_root, cache=tmp_path / "cache")
    assert p.returncode == 0, p.stderr
    d = json.loads(out.read_text())
    assert d["config"]["dataset"] == "pairs" and d["utility"]["metric"] == "bleu"
    assert len(d["records"]["membership"]) == 8
    assert_attacks_match_records(d["attacks"], d["records"])  # every AUC and accuracy: from the stored scores
    assert d["utility"]["val"] == d["per_epoch"][-1]["utility_val"]
    missing = _cli("run", "--task", "translation", "--preset", "pairs_cpu", "--set", "data_dir=texts",
                   "--set", "tgt_lang=fr", *TINY_RUN, root=data_root, cache=tmp_path / "cache2")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert "no file for language 'fr'" in missing.stderr


@pytest.mark.parametrize("task, updates, message", [
    ("image", {"channels": 2}, "channels must be 0"),
    ("image", {"image_size": 3}, r"image_size must be an integer in \[4, 256\]"),
    ("translation", {"src_lang": "../etc"}, "language code of 1–32 letters"),
    ("translation", {"pair_name": "a/b"}, "pair_name must be a file stem"),
])
def test_the_new_options_are_checked_with_the_config(task, updates, message):
    preset = "folder_quick" if task == "image" else "pairs_cpu"
    with pytest.raises(ConfigError, match=message):
        get_task(task).make_config("ffnn", preset, updates)


def test_multi30k_layout_read_as_pairs_gives_the_multi30k_records(data_root):
    """Multi30K's raw layout is one case of ``pairs``: the same records, vocabularies and halves, so the
    same config but for ``dataset`` trains the same models."""
    folder = write_pairs(data_root / "m30k", "train", n=50, gz=True, blank_at=7)
    write_pairs(folder, "val", n=6, gz=True)
    task = get_task("translation")
    pairs = task.load(task.make_config("ffnn", "pairs_cpu", {"data_dir": "m30k"}))
    m30k = task.load(task.make_config("ffnn", "multi30k_cpu", {"data_dir": str(folder)}))
    a, b = pairs.records, m30k.records
    assert (a.src_text, a.tgt_text, a.src_vocab.itos, a.tgt_vocab.itos) == (b.src_text, b.tgt_text, b.src_vocab.itos,
                                                                           b.tgt_vocab.itos)
    assert (pairs.victim_pool == m30k.victim_pool).all() and (pairs.attacker_pool == m30k.attacker_pool).all()
    assert len(a.src_text) == 49 and 7 not in a.record_ids and b.record_ids is None
