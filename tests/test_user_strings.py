"""A user's strings are data: markup and HTML planted in each layout's names and contents (image class folders and
file names, a CSV's column names and cells, parallel text's lines and file names) reach every page element and the
run report escaped — no image fetched from a URL the data chose, no link, no HTML, no LaTeX, no coloured text — and
every Plotly figure the page draws and the report writes (Plotly draws a subset of HTML in a figure's text) escaped for
Plotly: no tag the data opened, each name shown as it was typed."""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import plotly.graph_objects as go
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
#: what Plotly draws as markup in a figure's text: bold, a line break, a link (a CSV's class; "/" is no file name)
PLOTLY = "<b>bold</b><br><a href='http:host'>link</a> &amp;"
#: what must never appear in Markdown a page draws, nor unescaped in the report's HTML
RAW = ("![x](", "<img", "**bold**", "$x^2$", ":red[", "[link](")
#: the tags Plotly.js reads in a figure's text (its svg_text_utils: TAG_STYLES and <br>), as it splits them
PLOTLY_TAGS = ("br", "sup", "sub", "b", "i", "em", "a", "span", "s", "u")
#: Plotly.js's named entities (svg_text_utils: entityToUnicode); numeric ones are read too
PLOTLY_ENTITIES = {"mu": "μ", "amp": "&", "lt": "<", "gt": ">", "nbsp": "\xa0", "times": "×", "plusmn": "±", "deg": "°"}


def plotly_text(text: str) -> tuple[list[str], str]:
    """What Plotly.js makes of a text of a figure (svg_text_utils.convertToTspans): the tags it reads as markup and
    the characters it shows (each piece between tags with its entities read back, in one pass)."""
    tags, shown = [], []
    for part in re.split(r"(<[^<>]*>)", text):
        m = re.match(r"<(/?)([^ >]*)(\s+(.*))?>", part, re.I)
        if m and m.group(2).lower() in PLOTLY_TAGS:
            tags.append(part)
            continue

        def entity(e: re.Match) -> str:
            name = e.group(1)
            if name.startswith("#"):
                return chr(int(name[2:], 16) if name[1] == "x" else int(name[1:]))
            return PLOTLY_ENTITIES.get(name, e.group(0))
        shown.append(re.sub(r"&(#\d+|#x[\da-fA-F]+|[a-z]+);", entity, part))
    return tags, "".join(shown)


def figure_strings(value: Any) -> Iterator[str]:
    """Every string in a figure's JSON (its traces' names, values and hover texts, its layout's titles, tick
    labels and annotations)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from figure_strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from figure_strings(v)
    elif isinstance(value, np.ndarray) and value.dtype.kind in "OUS":
        yield from figure_strings(value.tolist())


def assert_figures_plain(figures: list[dict]) -> str:
    """No figure holds a user's markup unescaped: none of the planted fragments as it was typed, and no tag Plotly
    reads made of them. Returns every figure's text as Plotly shows it (joined), for the caller to find the names."""
    shown = []
    for fig in figures:
        for text in figure_strings(fig):
            for raw in ("<img", "<b>bold", "<a href='http:host'"):
                assert raw not in text, (raw, text)
            tags, seen = plotly_text(text)
            assert not any("http:host" in t or t == "<b>" for t in tags), (tags, text)  # the builders' own: <br>, <extra>
            shown.append(seen)
    return "\n".join(shown)


def page_figures(at: AppTest) -> list[dict]:
    """The JSON of every Plotly chart the page drew."""
    return [json.loads(e.proto.spec) for e in at.get("plotly_chart")]


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
            w.writerow(["" if i % 9 == 0 else f"{rng.normal():.2f}", HOSTILE[i % 3], (IMAGE, HTML, PLOTLY)[i % 3]])
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
    assert_figures_plain(page_figures(at))
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
    assert_figures_plain(page_figures(at))
    assert any(s.value == "Overview" for s in at.subheader), [e.value for e in at.error]
    written: list[dict] = []  # every figure the report writes, as its JSON
    to_html = go.Figure.to_html
    monkeypatch.setattr(go.Figure, "to_html", lambda fig, *a, **k: written.append(fig.to_plotly_json()) or to_html(fig, *a, **k))
    html_text = report.run_report({"ffnn": cfg})
    assert written
    drawn = assert_figures_plain(written)
    if layout == "csv":  # the per-slice figure names the table's classes: as the user typed them
        assert f"class {HTML}" in drawn and f"class {PLOTLY}" in drawn, drawn
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


def test_the_plotly_escaping_leaves_no_tag_and_shows_the_text_as_typed():
    from core.views.plain import plain_plotly

    for text in HOSTILE + (PLOTLY, "a & b &lt; c &#60;b&#62;", "<span style='color:red'>x</span>", "<sup>2</sup>"):
        tags, shown = plotly_text(plain_plotly(text))
        assert not tags and shown == text, (text, tags, shown)
    assert plotly_text(PLOTLY)[0] == ["<b>", "</b>", "<br>", "<a href='http:host'>", "</a>"]  # unescaped: markup


def test_the_slices_figure_draws_a_users_slice_names_as_text():
    from core.analyses.analysis_results import SlicesView
    from core.views.record_view_figures import slices_figure

    names = [f"class {n}" for n in (HTML, PLOTLY, "a & b")]
    rows = [{"slice": n, "n_members": 5, "n_non_members": 5, "too_small": True, "auc": 0.5, "auc_low": 0.4,
             "auc_high": 0.6} for n in names]
    view = {"attack": "lira", "min_records": 10, "archs": {"ffnn": {"class": rows}}}
    drawn = assert_figures_plain([slices_figure(SlicesView.from_dict(view), "class").to_plotly_json()])
    assert all(n in drawn for n in names), drawn


def test_a_csv_the_explorer_writes_runs_no_formula():
    import pandas as pd

    from core.views.plain import csv_text

    frame = pd.DataFrame({"=cmd|' /C calc'!A0": ["=HYPERLINK(\"x\")", "@SUM(A1)", "-0.5", "plain"], "n": [1, -2, 3, 4]})
    lines = csv_text(frame).splitlines()
    assert lines == ["'=cmd|' /C calc'!A0,n", "\"'=HYPERLINK(\"\"x\"\")\",1", "'@SUM(A1),-2", "-0.5,3", "plain,4"]
