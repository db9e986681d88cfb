"""One vocabulary and one sign convention in what the pages render: the
verdicts read holds / reversed / inconclusive only, never "does not hold", "mixed" or a ✅/❌ mark,
and every difference is FFNN − RNN, never RNN − FFNN. The pages are run (AppTest) on cached tiny runs
with 1 and 2 repeats (built once per test run: tests/shared_runs.py) and their rendered text scanned —
the text a user reads, not the source."""
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.measurement.stats import FINDING_VERDICTS
from ui.nav import page_files

ROOT = Path(__file__).resolve().parent.parent
# the tiny runs are built once and copied into each test's cache: these tests stay on one xdist worker
pytestmark = pytest.mark.xdist_group("tiny-image-runs")
#: what must never be rendered: other verdict words, marks that stand for a verdict, the reversed sign
BANNED = [re.compile(p) for p in (r"does not hold", r"\bmixed\b", "✅", "❌", "❔", "↩️", r"RNN\s*[−-]\s*FFNN", r"not more accurate")]


def rendered_text(at: AppTest) -> str:
    """Everything a user reads on the page: titles, text, notes, metric cards, buttons, table headers and cells."""
    parts = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning", "success", "error", "code"):
        parts += [str(e.value) for e in getattr(at, kind)]
    parts += [f"{m.label} {m.value} {m.help or ''}" for m in at.metric]
    parts += [b.label for b in at.button]
    for d in at.dataframe:
        df = d.value.data if hasattr(d.value, "data") else d.value  # a Styler or a DataFrame
        parts += [str(c) for c in df.columns]
        parts += [str(v) for v in df.to_numpy().ravel() if isinstance(v, str)]
    return "\n".join(parts)


@pytest.fixture(params=[1, 2], ids=["one repeat", "two repeats"])
def cached_quick(tiny_image_runs, request):
    """The image quick preset made tiny, with 1 or 2 paired repeats cached (every page reads the quick preset)."""
    tiny_image_runs(request.param)


@pytest.mark.parametrize("page", page_files())
def test_pages_use_one_vocabulary_and_one_sign(cached_quick, page):
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.switch_page(page)
    at.run(timeout=120)
    assert not at.exception, at.exception
    text = rendered_text(at)
    assert text.strip()
    for pattern in BANNED:
        found = pattern.search(text)
        assert found is None, f"{page} renders {found.group(0)!r}: …{text[max(found.start() - 120, 0):found.end() + 80]}…"
    # a table that carries a verdict column holds the verdict words only
    for d in at.dataframe:
        df = d.value.data if hasattr(d.value, "data") else d.value
        for col in [c for c in df.columns if "verdict" in str(c).lower()]:
            # "—" opens a cell that carries no verdict (not run, or a metric with no test: a duplicate, a rate
            # finer than the data); every other cell starts with one of the verdict words (the three of a paired
            # difference, and the findings' "not comparable" and "uninformative")
            words = {str(v).split(" (")[0] for v in df[col] if isinstance(v, str) and v and not v.startswith("—")}
            assert words <= {*FINDING_VERDICTS, "(no hypothesis)"}, (page, col, words)
    # every difference stated is FFNN − RNN
    for diff in re.findall(r"(\w+)\s*[−-]\s*(\w+)\s*(?:[+-−]\d|\[|:|\(|$)", text):
        if set(diff) == {"FFNN", "RNN"}:
            assert diff == ("FFNN", "RNN"), (page, diff)
