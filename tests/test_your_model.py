"""The Your model page and its core pieces: the data preview (`inspect`), uploads kept under the data
root, and the page's four ways driven through AppTest on files the tests write."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core.experiment.data_preview import preview_data
from core.foundations.errors import ConfigError
from core.foundations.user_files import MAX_UPLOADS, UPLOAD_FOLDER, store_upload
from core.tasks import get_task
from core.views.plain import shown_text

ROOT = Path(__file__).resolve().parent.parent
PAGE = "app_pages/6_Your_model.py"


def write_table(path: Path, rows: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["age", "colour", "y"])
        for i in range(rows):
            w.writerow([f"{rng.normal(40, 10):.1f}", ["red", "blue", "green"][i % 3], "yes" if i % 2 else "no"])
    return path


def write_scores(path: Path, n: int = 400, gap: float = 1.5, seed: int = 0) -> Path:
    """Members' losses lower by ``gap`` (a planted leak)."""
    rng = np.random.default_rng(seed)
    member = np.r_[np.ones(n // 2, int), np.zeros(n // 2, int)]
    loss = np.abs(rng.normal(1.0, 0.5, n)) + gap * (1 - member)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["member", "loss"])
        w.writerows(zip(member, (f"{v:.5f}" for v in loss)))
    return path


@pytest.fixture
def data_root(tmp_path, monkeypatch):
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setenv("MIA_DATA_ROOT", str(root))
    return root


# ---------------------------------------------------------------------------- the preview
def test_preview_reports_the_records_and_the_split_a_run_would_make(data_root):
    table = write_table(data_root / "t.csv", 300)
    cfg = get_task("tabular").make_config("ffnn", "quick", {"dataset": "csv", "data_dir": str(table), "label": "y",
                                                            "n_train": 60, "n_eval": 30, "n_shadows": 2})
    p = preview_data(cfg)
    assert p.n_records == 300 and p.victim_pool + p.attacker_pool == 300
    assert (p.members, p.nonmembers, p.shadows, p.shadow_members, p.shadow_nonmembers) == (60, 30, 2, 60, 30)
    assert p.split_problem is None and len(p.example_ids) == 4
    # ids are data rows: the member list of a user's model names records the same way
    assert all(0 <= int(i) < 300 for i in p.example_ids)
    too_big = cfg.with_updates({"n_train": 400})
    assert "n_train + n_eval" in preview_data(too_big).split_problem  # said, not raised: the page shows the data


def test_inspect_writes_the_preview_and_refuses_bad_data_in_one_line(data_root, tmp_path):
    table = write_table(data_root / "t.csv", 200)
    run = [sys.executable, "-m", "core", "inspect", "--task", "tabular", "--set", "dataset=csv",
           "--set", f"data_dir={table}", "--set", "label=y", "--set", "n_train=40", "--set", "n_eval=20"]
    out = subprocess.run(run, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["n_records"] == 200 and got["members"] == 40 and got["nonmembers"] == 20
    bad = subprocess.run(run[:-6] + ["--set", "label=nosuch"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and bad.stderr.count("\n") == 1


# ---------------------------------------------------------------------------- uploads
def test_uploads_are_content_addressed_under_the_data_root_and_capped(data_root):
    first = store_upload(b"7\n8\n", "members")
    assert first.parent == data_root / UPLOAD_FOLDER and first.suffix == ".txt"
    assert store_upload(b"7\n8\n", "members") == first  # the same bytes, the same file
    assert first.read_bytes() == b"7\n8\n"
    assert store_upload(b"9\n", "members") != first
    with pytest.raises(ConfigError, match="empty"):
        store_upload(b"", "members")
    with pytest.raises(ConfigError, match="unknown upload kind"):
        store_upload(b"x", "../../etc/passwd")
    with pytest.raises(ConfigError, match="at most"):
        store_upload(b"x" * (32 * 2**20 + 1), "members")


def test_an_upload_folder_that_is_a_link_is_refused(data_root, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (data_root / UPLOAD_FOLDER).symlink_to(elsewhere)
    with pytest.raises(ConfigError, match="not a folder"):
        store_upload(b"1\n", "members")
    assert not any(elsewhere.iterdir())


def test_the_upload_folder_has_a_cap(data_root, monkeypatch):
    monkeypatch.setattr("core.foundations.user_files.MAX_UPLOADS", 2)
    store_upload(b"1\n", "members")
    store_upload(b"2\n", "members")
    with pytest.raises(ConfigError, match="already holds 2 uploads"):
        store_upload(b"3\n", "members")
    assert MAX_UPLOADS >= 100


# ---------------------------------------------------------------------------- the page
def page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
    at.switch_page(PAGE)
    return at.run()


def test_the_page_scores_a_file_of_scores(data_root):
    write_scores(data_root / "scores.csv")
    at = page()
    at.radio(key="yours:way").set_value("Just the scores").run()
    at.text_input(key="scores:path").set_value(str(data_root / "scores.csv")).run()
    assert not at.exception, at.exception
    assert any("400 records (200 members, 200 non-members)" in s.value for s in at.success)
    rows = at.dataframe[0].value
    auc = rows[rows["attack"] == "loss"].iloc[0]["AUC [95 % CI]"]  # "0.812 [0.771, 0.850]"
    low = float(auc.split("[")[1].split(",")[0])
    assert low > 0.5  # the planted leak, with its interval clear of chance
    # the table is read off the typed result: one cell per number with its interval, the TPRs by their labels
    assert list(rows.columns) == ["attack", "finding", "AUC [95 % CI]", "TPR at 1.0% FPR [95 % CI]",
                                  "TPR at 0 false positives (FPR < 1/200; 0.1% FPR asked) [95 % CI]",
                                  "advantage [95 % CI]", "ε̂ (95 % lower bound)", "N"]
    assert list(rows["N"]) == [400] and list(rows["finding"]) == ["leak"]
    assert not at.error


def test_the_page_says_what_was_found_and_what_does_not_fit(data_root):
    write_table(data_root / "t.csv", 120)
    at = page()
    at.selectbox(key="data:layout").set_value("A CSV table").run()
    at.text_input(key="data:path").set_value(str(data_root / "t.csv")).run()
    at.text_input(key="data:label").set_value("y").run()
    assert not at.exception, at.exception
    assert any("Found:" in s.value for s in at.success)
    assert [m.value for m in at.metric if m.label == "records"] == ["120"]
    # the quick preset wants more rows than 120: said before any training, and no Train button
    assert any("do not fit this data" in e.value for e in at.error)
    assert not [b for b in at.button if b.label.startswith("Train & attack")]


def test_the_page_counts_a_tables_missing_values_per_column(data_root):
    # the preview's free-form facts (DataPreview.info) reach the page: 7 empty age cells are said per column
    path = write_table(data_root / "gaps.csv", 120)
    lines = path.read_text().splitlines()
    lines[1:8] = ["," + line.split(",", 1)[1] for line in lines[1:8]]
    path.write_text("\n".join(lines) + "\n")
    at = page()
    at.selectbox(key="data:layout").set_value("A CSV table").run()
    at.text_input(key="data:path").set_value(str(path)).run()
    at.text_input(key="data:label").set_value("y").run()
    assert not at.exception, at.exception
    assert any(c.value == "Missing values per column: age: 7" for c in at.caption), [c.value for c in at.caption]


def test_the_page_refuses_a_path_outside_the_data_root_in_one_message(data_root, tmp_path):
    outside = write_table(tmp_path / "outside.csv", 50)
    at = page()
    at.selectbox(key="data:layout").set_value("A CSV table").run()
    at.text_input(key="data:path").set_value(str(outside)).run()
    assert not at.exception
    assert len(at.error) == 1 and "data root" in at.error[0].value


def test_the_page_loads_no_code_from_the_browser(data_root):
    at = page()
    at.radio(key="yours:way").set_value("Your architecture").run()
    assert not at.exception
    assert not at.text_input and not at.get("file_uploader")  # no box that could name a plugin file
    assert any("never from this page" in m.value for m in at.markdown)


# ---------------------------------------------------------------------------- member-list ids of named records
def test_a_member_list_names_folder_images_by_path_and_text_pairs_by_line(data_root):
    from PIL import Image

    rng = np.random.default_rng(0)
    for c in ("cat", "dog"):
        (data_root / "imgs" / c).mkdir(parents=True)
        for i in range(12):
            Image.fromarray((rng.random((10, 10, 3)) * 255).astype("uint8")).save(data_root / "imgs" / c / f"{i:02d}.png")
    image = get_task("image")
    cfg = image.make_config("ffnn", "quick", {"dataset": "folder", "data_dir": str(data_root / "imgs"),
                                              "image_size": 8, "n_train": 4, "n_eval": 2, "n_shadows": 1})
    data = image.load(cfg)
    ids = image.record_ids(cfg, data, np.array([0, 13]))
    assert ids == ["cat/00.png", "dog/01.png"]
    assert image.record_indices(cfg, data, ids).tolist() == [0, 13]
    with pytest.raises(ConfigError, match="'cat/99.png'"):
        image.record_indices(cfg, data, ["cat/99.png"])

    (data_root / "txt").mkdir()
    src = [f"a house number {i}" for i in range(40)]
    tgt = [f"ein haus nummer {i}" for i in range(40)]
    src[3] = ""  # an empty side: the pair is dropped, its line number stays unused
    (data_root / "txt" / "train.en").write_text("\n".join(src) + "\n")
    (data_root / "txt" / "train.de").write_text("\n".join(tgt) + "\n")
    text = get_task("translation")
    cfg = text.make_config("ffnn", "quick", {"dataset": "pairs", "data_dir": str(data_root / "txt"), "src_lang": "en",
                                             "tgt_lang": "de", "n_train": 4, "n_eval": 2, "n_shadows": 1})
    data = text.load(cfg)
    first = text.record_ids(cfg, data, np.array([0, 2, 3]))
    assert first == ["1", "3", "5"]  # 1-based line numbers, line 4 (empty source) left out
    assert text.record_indices(cfg, data, first).tolist() == [0, 2, 3]
    with pytest.raises(ConfigError, match="'4'"):
        text.record_indices(cfg, data, ["4"])


# ---------------------------------------------------------------------------- your trained model, on the page
def test_the_page_takes_your_weights_and_member_list_and_refuses_a_mismatch_in_one_message(data_root):
    """Weights for the image task's FFNN (names and shapes right) and a member list: the page shows what was found and
    how the listed members split, with the Train button; weights of the other architecture: one message, no button,
    nothing trained."""
    import torch
    from safetensors.torch import save_file

    from core.experiment.cache import ArtifactCache

    task = get_task("image")
    cfg = task.make_config("ffnn", "quick")
    data = task.load(cfg)
    torch.manual_seed(0)
    save_file({k: v.clone() for k, v in task.build_model(cfg, data).state_dict().items()},
              str(data_root / "cnn.safetensors"))
    rnn = task.make_config("rnn", "quick")
    save_file({k: v.clone() for k, v in task.build_model(rnn, data).state_dict().items()},
              str(data_root / "renet.safetensors"))
    members = [str(i) for i in data.victim_pool[:120]]
    (data_root / "members.txt").write_text("\n".join(members) + "\n")

    at = page()
    at.radio(key="yours:way").set_value("Your trained model").run()
    at.text_input(key="model:weights").set_value(str(data_root / "cnn.safetensors")).run()
    at.text_input(key="model:members").set_value(str(data_root / "members.txt")).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert any("Found:" in s.value for s in at.success)
    # the listed records are the members; non-members come from the unlisted records of the victim's half
    assert [m.value for m in at.metric if m.label == "members / non-members"] == ["120 / 120"]
    assert [b for b in at.button if b.label == "Train & attack FFNN"]

    at.text_input(key="model:weights").set_value(str(data_root / "renet.safetensors")).run()  # the RNN's weights
    assert not at.exception, at.exception
    assert len(at.error) == 1 and "target_weights" in shown_text(at.error[0].value)
    assert not [b for b in at.button if b.label.startswith("Train & attack")]
    assert not any("/model/" in k for k in ArtifactCache().keys())  # nothing was trained or loaded as a victim
