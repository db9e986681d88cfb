"""Hostile and careless files against the readers of the user's data and models (class folders, CSV,
text pairs, weights, member lists, score files, uploads, the Your model page). One test per case that
failed before its fix (docs/trust_cases.md, the section on these readers); every file is written by the test."""
from __future__ import annotations

import io
import os
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save as safetensors_bytes

from core.analyses.scores_file import ScoresFileError, read_scores
from core.data.image_folder import list_image_folder, read_image_folder
from core.data.text_pairs import load_text_pairs
from core.experiment.user_model import user_weights
from core.foundations.errors import ConfigError, DatasetNotFoundError
from core.foundations.user_files import parse_member_ids, read_user_file, sha256_hex, store_upload, user_file_path
from core.tasks import get_task


@pytest.fixture
def root(tmp_path, monkeypatch):
    folder = tmp_path / "root"
    folder.mkdir()
    monkeypatch.setenv("MIA_DATA_ROOT", str(folder))
    return folder


# ---------------------------------------------------------------------------- member lists
def test_a_member_list_with_a_byte_order_mark_or_any_line_end_gives_the_same_ids():
    want = ("0", "1", "2")
    assert parse_member_ids(b"0\n1\n2\n") == want
    assert parse_member_ids(b"\xef\xbb\xbf0\r\n1\r\n2\r\n") == want  # Windows Notepad: BOM and CRLF
    assert parse_member_ids(b"0\r1\r2\r") == want  # old Mac editors: a lone CR
    assert parse_member_ids(b"0 \r\n\r\n 1\t\n\n2") == want


def test_a_path_component_too_long_for_the_file_system_is_one_line(root):
    with pytest.raises(ConfigError, match="File name too long"):
        read_user_file("b" * 300 + ".txt", "members", 100)


def test_a_data_root_that_is_a_link_takes_paths_through_the_link(tmp_path, monkeypatch):
    real = tmp_path / "real"
    real.mkdir()
    (real / "m.txt").write_text("0\n")
    (real / "inside").mkdir()
    (real / "inside" / "x.txt").write_text("1\n")
    os.symlink(real / "inside", real / "link")
    link = tmp_path / "rootlink"
    os.symlink(real, link)
    monkeypatch.setenv("MIA_DATA_ROOT", str(link))
    assert read_user_file(str(link / "m.txt"), "members", 100) == b"0\n"  # absolute, through the root's link
    assert read_user_file("m.txt", "members", 100) == b"0\n"
    monkeypatch.delenv("MIA_DATA_ROOT")
    monkeypatch.setenv("HOME", str(link))  # a home that is a link (/home -> /data/home)
    assert read_user_file("~/m.txt", "members", 100) == b"0\n"
    # the root's own link only: a link inside the root is still refused, a path outside still outside
    with pytest.raises(ConfigError, match="symbolic link"):
        user_file_path(str(link / "link" / "x.txt"), "members")
    with pytest.raises(ConfigError, match="outside the data root"):
        user_file_path(str(tmp_path / "elsewhere.txt"), "members")


# ---------------------------------------------------------------------------- weights
@pytest.fixture(scope="module")
def tabular_model():
    task = get_task("tabular")
    cfg = task.make_config("ffnn", "quick", {})
    data = task.load(cfg)
    torch.manual_seed(0)
    return task, cfg, data, dict(task.build_model(cfg, data).state_dict())


def load_weights(root: Path, tabular_model, tensors: dict) -> dict:
    task, cfg, data, _ = tabular_model
    payload = safetensors_bytes(tensors)
    (root / "w.safetensors").write_bytes(payload)
    cfg = cfg.with_updates({"target_weights": str(root / "w.safetensors"), "members": "m.txt",
                            "target_weights_sha256": sha256_hex(payload), "members_sha256": "0" * 64})
    return user_weights(task, cfg, data)


def test_weights_infinite_once_cast_to_the_model_dtype_are_refused(root, tabular_model):
    good = tabular_model[3]
    assert len(load_weights(root, tabular_model, {k: v.double() for k, v in good.items()})) == len(good)
    huge = {k: v.double() * 0 + 1e300 for k, v in good.items()}  # finite as float64, inf as float32
    with pytest.raises(ConfigError, match="NaN or infinite values .*float64 values are too large"):
        load_weights(root, tabular_model, huge)


def test_float8_weights_are_cast_not_a_traceback(root, tabular_model):
    good = tabular_model[3]
    out = load_weights(root, tabular_model, {k: v.to(torch.float8_e4m3fn) for k, v in good.items()})
    assert all(t.dtype == torch.float32 for t in out.values())


# ---------------------------------------------------------------------------- score files
def npz_declaring(shape: tuple, payload: bytes = b"\0" * 64, compress: int = zipfile.ZIP_STORED) -> bytes:
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": shape})
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compress) as z:
        z.writestr("member.npy", header.getvalue() + payload)
        z.writestr("loss.npy", header.getvalue() + payload)
    return out.getvalue()


@pytest.mark.parametrize("shape", [(2**40,), (10**9,), (300_000,), (100, 2**40)])
def test_an_npz_header_declaring_a_huge_array_is_refused_before_allocating(tmp_path, shape):
    path = tmp_path / "s.npz"
    path.write_bytes(npz_declaring(shape))
    with pytest.raises(ScoresFileError, match=r"declares shape .* at most 200,000 records"):
        read_scores(path)


def test_an_npz_declaring_more_than_its_entry_holds_is_refused(tmp_path):
    path = tmp_path / "s.npz"
    path.write_bytes(npz_declaring((1000,), b"\0" * 800))  # 8,000 bytes declared, 800 held
    with pytest.raises(ScoresFileError, match="the entry holds"):
        read_scores(path)
    # a well-formed npz is still read
    good = io.BytesIO()
    np.savez(good, member=np.r_[np.ones(20), np.zeros(20)], loss=np.linspace(0, 1, 40))
    path.write_bytes(good.getvalue())
    assert read_scores(path).n_records == 40


# ---------------------------------------------------------------------------- text pairs, images, uploads
def test_a_byte_order_mark_is_no_part_of_the_first_sentence(root):
    (root / "p").mkdir()
    (root / "p" / "train.en").write_bytes(b"\xef\xbb\xbfhello\r\nworld\n")
    (root / "p" / "train.de").write_bytes(b"\xef\xbb\xbfhallo\nwelt\n")
    assert load_text_pairs("p", "en", "de").pairs == [("hello", "hallo"), ("world", "welt")]


def test_a_file_that_is_no_image_is_said_without_a_memory_address(root):
    from PIL import Image

    for c in ("a", "b"):
        (root / "imgs" / c).mkdir(parents=True)
        for i in range(2):
            Image.new("RGB", (8, 8)).save(root / "imgs" / c / f"{i}.png")
    (root / "imgs" / "a" / "junk.png").write_bytes(b"<html>not an image</html>")
    with pytest.raises(DatasetNotFoundError) as info:
        read_image_folder(list_image_folder("imgs"), 8)
    assert "a/junk.png is unreadable or truncated (not an image Pillow can identify" in str(info.value)
    assert "0x" not in str(info.value)


def test_the_same_upload_from_many_sessions_at_once_is_kept_for_each(tmp_path, monkeypatch):
    payload = os.urandom(2**20)
    kept, failed = [], []
    # every session holds its temporary file at once: each waits for the others before its rename
    # (a session that could not open its temporary file never arrives, and the wait times out)
    arrived = threading.Barrier(8)
    rename = os.replace

    def replace_together(src, dst):
        try:
            arrived.wait(timeout=5)
        except threading.BrokenBarrierError:
            pass
        rename(src, dst)

    monkeypatch.setattr(os, "replace", replace_together)

    def upload() -> None:
        try:
            kept.append(store_upload(payload, "weights", tmp_path))
        except Exception as exc:  # noqa: BLE001 - what failed is the assertion's message
            failed.append(repr(exc))

    threads = [threading.Thread(target=upload) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failed, failed
    assert len(set(kept)) == 1 and kept[0].read_bytes() == payload
    assert [p.name for p in kept[0].parent.iterdir()] == [kept[0].name]  # no temporary file left


# ---------------------------------------------------------------------------- the page
def test_the_preview_shows_a_users_text_as_text_not_markdown(root):
    from streamlit.testing.v1 import AppTest

    from core.views.plain import plain_markdown

    # a protocol-relative image link (a browser would fetch it from elsewhere), math and bold: shown as text,
    # never rendered; nothing here reaches the network
    hostile = "![x](//evil.example/p.png) $x$ **b**"
    lines = ["label,note,age"] + [f"{i % 2},\"{hostile}\",{20 + i}" for i in range(600)]
    (root / "t.csv").write_text("\n".join(lines) + "\n")
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app_pages/6_Your_model.py"),
                           default_timeout=120).run()
    at.selectbox(key="data:layout").set_value("A CSV table").run()
    at.text_input(key="data:path").set_value(str(root / "t.csv")).run()
    at.text_input(key="data:label").set_value("label").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    shown = " ".join(m.value for m in at.markdown)
    assert plain_markdown(hostile) in shown, shown[:500]
    assert "![x](//evil" not in shown and "$x$" not in shown
    assert plain_markdown("a_b*c\nd") == "a\\_b\\*c d"
