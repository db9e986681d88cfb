"""A user's strings are data: markup and HTML planted in each layout's names and contents (image class folders and
file names, a CSV's column names and cells, parallel text's lines and file names) reach every page element and the
run report escaped — no image fetched from a URL the data chose, no link, no HTML, no LaTeX, no coloured text."""
from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from core.experiment.pipeline import run_experiment
from core.foundations.paths import resolve_data_dir
from core.tasks import get_task
from core.views import report
from core.views.plain import plain_markdown, shown_text

ROOT = Path(__file__).resolve().parent.parent
PAGE = "app_pages/6_Your_model.py"
TINY = {"n_train": 16, "n_eval": 8, "epochs": 1, "n_shadows": 1, "attack_epochs": (), "attack_train_epochs": 2}
#: what a user's file may hold (no "/": some of them are file and folder names)
IMAGE = "![x](http:desc.png)"
HTML = "<img src=x onerror=alert(1)>"
HOSTILE = (IMAGE, HTML, "**bold** $x^2$ :red[red] [link](javascript:alert(1)) a@b.co")
#: what must never appear in Markdown a page draws, nor unescaped in the report's HTML
RAW = ("![x](", "<img", "**bold**", "$x^2$", ":red[", "[link](")


def texts(at: AppTest) -> list[str]:
    """Every piece of Markdown the page drew (text elements, labels, progress texts, metric labels, expanders)."""
    out = []
    for kind in ("markdown", "caption", "success", "info", "warning", "error", "title", "header", "subheader",
                 "exception", "latex", "code"):
        out += [getattr(e, "value", "") or "" for e in at.get(kind)]
    out += [m.label for m in at.metric] + [e.label for e in at.expander] + [b.label for b in at.button]
    out += [p.proto.text for p in at.get("progress")]
    out += [img.caption for e in at.get("imgs") for img in e.proto.imgs]  # image captions are Markdown too
    return [str(t) for t in out]


def assert_no_markup(at: AppTest) -> None:
    assert not at.exception, at.exception
    for text in texts(at):
        for raw in RAW:  # the fragment as markup: its first character not backslash-escaped
            assert not re.search(r"(?<!\\)" + re.escape(raw), text), (raw, text)


@pytest.fixture
def root(tmp_path, monkeypatch):
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setenv("MIA_DATA_ROOT", str(root))
    st.cache_data.clear()
    return root


def write_csv(root: Path) -> tuple[str, dict]:
    rng = np.random.default_rng(0)
    path = root / "t.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow([IMAGE, HTML, "y"])
        for i in range(80):
            w.writerow(["" if i % 9 == 0 else f"{rng.normal():.2f}", HOSTILE[i % 3], HOSTILE[i % 2]])
    return "A CSV table", {"data:path": str(path), "data:label": "y"}


def write_images(root: Path) -> tuple[str, dict]:
    from PIL import Image

    rng = np.random.default_rng(0)
    for name in (IMAGE, HTML):
        folder = root / "imgs" / name
        folder.mkdir(parents=True)
        for i in range(36):
            Image.fromarray((rng.random((8, 8, 3)) * 255).astype("uint8")).save(folder / f"$x^2$ :red[{i}].png")
    return "Images in class folders", {"data:path": str(root / "imgs"), "data:size": 8}


def write_pairs(root: Path) -> tuple[str, dict]:
    folder = root / "txt"
    folder.mkdir()
    src = [f"{(IMAGE, HTML)[i % 2]} house {i}" for i in range(100)]  # short enough for the preset's 20 tokens
    tgt = [f"{(HTML, IMAGE)[i % 2]} haus {i}" for i in range(100)]
    (folder / f"{IMAGE}.en").write_text("\n".join(src) + "\n")
    (folder / f"{IMAGE}.de").write_text("\n".join(tgt) + "\n")
    return "Parallel text", {"data:path": str(folder)}


LAYOUTS = {"csv": ("tabular", "quick", write_csv), "folder": ("image", "folder_quick", write_images),
           "pairs": ("translation", "pairs_cpu", write_pairs)}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_markup_in_a_users_data_reaches_the_page_and_the_report_as_text(layout, root, isolated_cache, monkeypatch):
    task_name, preset, write = LAYOUTS[layout]
    task = get_task(task_name)
    monkeypatch.setitem(task.presets, preset, {**task.presets[preset], **TINY})  # what the page builds: tiny
    label, fields = write(root)
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.switch_page(PAGE)
    at.run(timeout=60)
    at.selectbox(key="data:layout").set_value(label).run(timeout=60)
    for key, value in fields.items():
        widget = at.number_input(key=key) if key == "data:size" else at.text_input(key=key)
        widget.set_value(value).run(timeout=60)
    assert_no_markup(at)
    assert any("Found" in s.value for s in at.success), [e.value for e in at.error]
    shown = " ".join(shown_text(t) for t in texts(at))
    if layout != "folder":  # the preview names a table's columns and shows text records (an image folder: counts)
        assert IMAGE in shown or HTML in shown  # the user's names are there, as text

    # the results drawn on the page (the data description among them) and the run report: the FFNN the page's
    # button would train (its config as the page builds it), trained here
    extra = {"csv": {"label": "y"}, "folder": {"image_size": 8}, "pairs": {"src_lang": "en", "tgt_lang": "de"}}[layout]
    cfg = task.make_config("ffnn", preset, {"dataset": layout, "data_dir": str(resolve_data_dir(fields["data:path"])),
                                            **extra})
    summary = run_experiment(cfg).summary
    st.cache_data.clear()
    at.run(timeout=120)
    assert_no_markup(at)
    assert any(s.value == "Overview" for s in at.subheader), [e.value for e in at.error]
    html_text = report.run_report({"ffnn": cfg})
    assert "<img src=x" not in html_text and "<b>bold" not in html_text
    if HTML in str(summary.get("data")):  # the data description names the user's classes or columns
        assert "&lt;img src=x onerror=alert(1)&gt;" in html_text


def test_the_escaping_helper_leaves_no_markup_and_the_report_reads_it_back():
    for text in HOSTILE + ("\\*not bold\\*", "\ue02a parked"):
        escaped = plain_markdown(text)
        for raw in RAW:
            assert not re.search(r"(?<!\\)" + re.escape(raw), escaped)
        assert shown_text(escaped) == " ".join(text.split()).replace("\ue02a", "\ufffd")
        html_text = report.markdown_html(f"**Data:** {escaped}")
        assert html_text.startswith("<b>Data:</b> ") and "<img" not in html_text and "<i>" not in html_text


def test_a_csv_the_explorer_writes_runs_no_formula():
    import pandas as pd

    from core.views.plain import csv_text

    frame = pd.DataFrame({"=cmd|' /C calc'!A0": ["=HYPERLINK(\"x\")", "@SUM(A1)", "-0.5", "plain"], "n": [1, -2, 3, 4]})
    lines = csv_text(frame).splitlines()
    assert lines == ["'=cmd|' /C calc'!A0,n", "\"'=HYPERLINK(\"\"x\"\")\",1", "'@SUM(A1),-2", "-0.5,3", "plain,4"]
