"""One view of a run: the Train & attack page and the HTML run report draw the sections of
:func:`core.views.run_view.run_view`, so both show the same section headings in the same order, and a
section registered once appears in both."""
from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core.experiment.pipeline import run_experiment
from core.experiment.results import RunSummary
from core.tasks import get_task
from core.views import report, run_view

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, attack_epochs=(), attack_train_epochs=3)


@pytest.fixture
def tiny_runs(monkeypatch):
    """FFNN and RNN of the image task's quick preset shrunk to TINY, trained and cached (the page's
    default form then names these very configs: it loads them from the cache)."""
    task = get_task("image")
    monkeypatch.setitem(task.presets, "quick", {**task.presets["quick"], **TINY})
    configs = [task.make_config(a, "quick") for a in ("ffnn", "rnn")]
    return configs, [RunSummary.from_dict(run_experiment(c).summary) for c in configs]


def report_headings(page: str) -> list[str]:
    return [html.unescape(re.sub(r"<[^>]+>", "", h)) for h in re.findall(r"<h2[^>]*>(.*?)</h2>", page)]


def _walk(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def page_headings(at: AppTest) -> list[str]:
    """The section headings the page shows, in the page's order: sub-headers outside tabs and expanders,
    tab labels and expander labels (the results' sections; the form above them has none of these)."""
    out = []

    def visit(node, inside: bool) -> None:
        kind = getattr(node, "type", None)
        if kind == "tab":
            out.append(node.label)
            return  # the section's own heading repeats the label inside its tab
        if kind == "expander":
            out.append(node.label)
            return
        if kind == "subheader" and not inside:
            out.append(node.value)
        for child in getattr(node, "children", {}).values():
            visit(child, inside)

    visit(at.main, False)
    return out


def open_train_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.switch_page("app_pages/1_Train_and_attack.py")
    at.run(timeout=120)
    assert not at.exception, at.exception
    return at


def test_page_and_report_show_the_same_sections_in_the_same_order(tiny_runs):
    configs, summaries = tiny_runs
    sections = run_view.run_view(run_view.RunInputs(summaries, configs))
    ids = [s.id for s in sections]
    assert ids == ["overview", "over_training", "attacks", "strongest", "per_record", "configuration", "reproduce"]
    headings = [s.heading for s in sections]

    page = report.run_report_html(summaries, configs, {})
    assert report_headings(page) == headings

    at = open_train_page()
    shown = page_headings(at)
    assert shown[shown.index("Overview"):] == headings, shown
    # the open tab draws its section; the report holds the same blocks' words
    at.session_state["train:results_tab"] = "Strongest attacks & why"
    at.run(timeout=120)
    assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "**The strongest attacks**" in text and "The strongest attacks</b>" in page
    assert "Why attacks work" in " ".join(c.value for c in at.caption) and "Why attacks work" in page


def test_a_section_registered_once_appears_in_both_renderers(tiny_runs):
    configs, summaries = tiny_runs

    def toy(run: run_view.RunInputs) -> run_view.Section:
        n = sum(len(s.per_record.membership) for s in run.summaries)
        return run_view.Section("toy", "Toy section", lambda: [
            run_view.Text(f"**Toy** over {n} evaluated records"),
            run_view.Table(pd.DataFrame({"arch": [s.arch for s in run.summaries], "n": [n, n]}))], tab=True)

    run_view.register_section("toy", toy, before="per_record")
    try:
        page = report.run_report_html(summaries, configs, {})
        headings = report_headings(page)
        assert headings.index("Toy section") == headings.index("Per-record views") - 1
        assert "<b>Toy</b> over 80 evaluated records" in page
        at = open_train_page()
        shown = page_headings(at)
        assert shown[shown.index("Overview"):] == headings, shown
        at.session_state["train:results_tab"] = "Toy section"
        at.run(timeout=120)
        assert not at.exception, at.exception
        assert "**Toy** over 80 evaluated records" in [m.value for m in at.markdown]
        assert any(s.value == "Toy section" for s in at.subheader)
    finally:
        run_view.unregister_section("toy")
    assert "toy" not in [i for i, _ in run_view.SECTIONS]
    assert "Toy section" not in report.run_report_html(summaries, configs, {})


def test_markdown_of_a_section_is_escaped_html_in_the_report():
    assert report.markdown_html("**a** <b>x</b> `c` *i*  \nnext") == \
        "<b>a</b> &lt;b&gt;x&lt;/b&gt; <code>c</code> <i>i</i><br>next"
    assert report.markdown_html("2 * 3 * 4") == "2 * 3 * 4"  # a lone star is no emphasis
