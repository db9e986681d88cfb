"""The Defenses page's slider on a value not computed before (issue 32 point 16): draw 1's numbers at once, labelled
"1 of 8 draws — the rest are computing", then the full point in their place without the user doing anything."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import ui.widgets
from core.defenses.spec import DefenseSpec
from core.tasks import get_task
from ui.shared import defender_for

ROOT = Path(__file__).resolve().parent.parent
LABEL = "1 of 8 draws — the rest are computing"
NEW_VALUES = (0.422, 0.562)  # slider stops off the curve's grid: computed by the step itself


def _accuracy_cards(at: AppTest) -> list[str]:
    return [m.value for m in at.metric if m.label == "attack accuracy"]  # FFNN's, then RNN's


def _expected(spec: DefenseSpec) -> list[str]:
    """The cards' attack accuracies of ``spec``'s point as the page's Defenders hold it (never computed here)."""
    task = get_task("image")
    points = [defender_for(task.make_config(a, "quick")).ready(spec, "naive", utility=False) for a in ("ffnn", "rnn")]
    assert all(p is not None for p in points)
    return [f"{p.attack.accuracy:.3f}" for p in points]


def _labelled(at: AppTest) -> bool:
    return any(LABEL in i.value for i in at.info)


@pytest.mark.xdist_group("tiny-image-runs")
def test_a_new_value_shows_draw_one_labelled_then_the_full_point(tiny_image_runs, monkeypatch):
    tiny_image_runs(1)
    waited = []
    # the page's run ends with draw 1 on screen instead of waiting; the test reruns it once the lanes are done
    monkeypatch.setattr(ui.widgets, "rerun_when_done", lambda futures: waited.append(futures))
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.switch_page("app_pages/2_Defenses.py")
    at.run(timeout=120)
    assert not at.exception, at.exception
    assert not _labelled(at) and not waited  # the default value's point is cached: shown whole at once
    value = NEW_VALUES[0]
    at.select_slider(key="k:image").set_value(value).run(timeout=120)
    assert not at.exception, at.exception
    assert _labelled(at) and len(waited) == 1
    assert _accuracy_cards(at) == _expected(DefenseSpec("dirichlet", value, draws=1))  # draw 1's own numbers
    for future in waited[0]:
        future.result(timeout=300)  # the event: the lanes computed the full points
    at.run(timeout=120)
    assert not at.exception, at.exception
    assert not _labelled(at) and len(waited) == 1  # known now: shown whole, nothing left to wait for
    assert _accuracy_cards(at) == _expected(DefenseSpec("dirichlet", value, draws=8))


@pytest.mark.xdist_group("tiny-image-runs")
def test_the_page_replaces_draw_one_by_itself(tiny_image_runs):
    """With the page's own wait: one script run ends with the full point shown and no label left."""
    tiny_image_runs(1)
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.switch_page("app_pages/2_Defenses.py")
    at.run(timeout=120)
    value = NEW_VALUES[1]
    at.select_slider(key="k:image").set_value(value).run(timeout=300)
    assert not at.exception, at.exception
    assert not _labelled(at)
    assert _accuracy_cards(at) == _expected(DefenseSpec("dirichlet", value, draws=8))
