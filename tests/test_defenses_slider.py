"""The Defenses page's slider on a value not computed before: draw 1's numbers at once, labelled
"1 of 8 draws — the rest are computing", then, in the same script run, the mean over every draw in their places
(no rerun of the page), without the user doing anything; a full point already in when the page draws is drawn
directly. The lanes' full points are held behind an event where a test needs them not done yet."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import ui.widgets
from core.defenses.defender import Defender
from core.defenses.side_by_side import PointLanes
from core.defenses.spec import DefenseSpec
from core.tasks import get_task
from ui.shared import defender_for

ROOT = Path(__file__).resolve().parent.parent
LABEL = "1 of 8 draws — the rest are computing"
QUANTILE = "Quantile regression is not computed at the slider's point"
NEW_VALUES = (0.422, 0.562, 0.75)  # slider stops off the curve's grid: computed by the step itself


def _accuracy_cards(at: AppTest) -> list[str]:
    return [m.value for m in at.metric if m.label == "attack accuracy"]  # FFNN's, then RNN's


def _expected(spec: DefenseSpec) -> list[str]:
    """The cards' attack accuracies of ``spec``'s point as the page's Defenders hold it (never computed here); the
    page's one-draw point leaves the registry's attacks out (its cards show none of them)."""
    task = get_task("image")
    points = [defender_for(task.make_config(a, "quick")).cached_point(spec, "naive", utility=False, registry=spec.draws > 1)
              for a in ("ffnn", "rnn")]
    assert all(p is not None for p in points)
    return [f"{p.attack.accuracy:.3f}" for p in points]


def _labelled(at: AppTest) -> bool:
    return any(LABEL in i.value for i in at.info)


def _quantile_caption(at: AppTest) -> bool:
    return any(QUANTILE in c.value for c in at.caption)


def _hold_full_points(monkeypatch, value: float) -> threading.Event:
    """The page's full points at ``value`` (more than one draw) wait for the returned event; one-draw points do not."""
    gate = threading.Event()
    point = Defender.point

    def gated(self, spec, *args, **kwargs):
        if spec.value == value and spec.draws > 1 and not gate.wait(timeout=300):
            raise TimeoutError("the test never let the full point through")
        return point(self, spec, *args, **kwargs)

    monkeypatch.setattr(Defender, "point", gated)
    return gate


def _opened(at: AppTest) -> AppTest:
    at.switch_page("app_pages/2_Defenses.py")
    at.run(timeout=120)
    assert not at.exception, at.exception
    return at


@pytest.mark.xdist_group("tiny-image-runs")
def test_a_new_value_shows_draw_one_labelled_with_the_page_around_it(tiny_image_runs, monkeypatch):
    """Stopped where it starts to wait: draw 1's own numbers, the label, and the quantile caption already in its
    place (its spot was once blank while draw 1 waited); then the value is known and shown whole."""
    tiny_image_runs(1)
    value = NEW_VALUES[0]
    gate = _hold_full_points(monkeypatch, value)
    waited: list = []

    def stop_at_the_wait(futures, ticker):
        waited.append(futures)
        st.stop()  # the script run ends here, draw 1 on screen, as when the user moves on during the wait

    monkeypatch.setattr(ui.widgets, "wait_yielding", stop_at_the_wait)
    at = _opened(AppTest.from_file(str(ROOT / "app.py")))
    assert not _labelled(at) and not waited  # the default value's point is cached: shown whole at once
    assert _quantile_caption(at)  # the tiny runs score quantile regression: the slider's point leaves it out
    at.select_slider(key="k:image").set_value(value).run(timeout=120)
    assert not at.exception, at.exception
    assert _labelled(at) and len(waited) == 1
    assert not any(f.done() for f in waited[0])  # held: the page drew draw 1 before any full point was in
    assert _accuracy_cards(at) == _expected(DefenseSpec("dirichlet", value, draws=1))  # draw 1's own numbers
    assert _quantile_caption(at)  # (b): in its place while draw 1 waits, not after the wait
    gate.set()
    for future in waited[0]:
        future.result(timeout=300)  # the event: the lanes computed the full points
    at.run(timeout=120)
    assert not at.exception, at.exception
    assert not _labelled(at) and len(waited) == 1  # known now: shown whole, nothing left to wait for
    assert _accuracy_cards(at) == _expected(DefenseSpec("dirichlet", value, draws=8))
    assert _quantile_caption(at)


@pytest.mark.xdist_group("tiny-image-runs")
def test_the_page_puts_every_draw_in_draw_ones_place_in_the_same_run(tiny_image_runs, monkeypatch):
    """With the page's own wait: the run that drew draw 1 ends with the mean over the draws in its place and no label,
    and never reruns the page (the rerun cost a second script run and a second drawing of everything)."""
    tiny_image_runs(1)
    value = NEW_VALUES[1]
    gate = _hold_full_points(monkeypatch, value)
    waited: list = []
    wait = ui.widgets.wait_yielding

    def wait_then_open(futures, ticker):
        waited.append(not any(f.done() for f in futures))  # draw 1 is drawn and no full point is in yet
        gate.set()
        return wait(futures, ticker)

    monkeypatch.setattr(ui.widgets, "wait_yielding", wait_then_open)
    at = _opened(AppTest.from_file(str(ROOT / "app.py")))
    reruns: list = []
    rerun = st.rerun
    monkeypatch.setattr(st, "rerun", lambda *a, **k: (reruns.append(k), rerun(*a, **k)))
    at.select_slider(key="k:image").set_value(value).run(timeout=300)
    assert not at.exception, at.exception
    assert waited == [True] and not reruns
    assert not _labelled(at)
    # replaced in place: one card per architecture, every draw's number (draw 1's would differ: drawn but replaced)
    assert _accuracy_cards(at) == _expected(DefenseSpec("dirichlet", value, draws=8))


@pytest.mark.xdist_group("tiny-image-runs")
def test_a_full_point_in_before_the_page_draws_is_drawn_directly(tiny_image_runs, monkeypatch):
    """No draw-1 stage where every draw's point is in by the time the page draws the cards (here: the step returns
    only once the lanes are done): nothing labelled, nothing waited for, the mean over the draws at once."""
    tiny_image_runs(1)
    value = NEW_VALUES[2]
    step = PointLanes.step

    def settled(self, *args, **kwargs):
        s = step(self, *args, **kwargs)
        assert s.first  # the value was not known: the lanes computed draw 1 first all the same
        for futures in s.full.values():
            for f in futures:
                f.result(timeout=300)
        return s

    waited: list = []
    monkeypatch.setattr(ui.widgets, "wait_yielding", lambda futures, ticker: waited.append(futures))
    at = _opened(AppTest.from_file(str(ROOT / "app.py")))
    monkeypatch.setattr(PointLanes, "step", settled)
    at.select_slider(key="k:image").set_value(value).run(timeout=300)
    assert not at.exception, at.exception
    assert not _labelled(at) and not waited
    assert _accuracy_cards(at) == _expected(DefenseSpec("dirichlet", value, draws=8))


@pytest.mark.xdist_group("tiny-image-runs")
def test_every_card_names_its_number_and_the_guarantee_is_a_caption(tiny_image_runs):
    """Each attack its own cards (never "the larger of LiRA and RMIA"); a TPR finer than one non-member is named the
    TPR at 0 false positives; ε in theory and δ, which a card showed at every value alike, are in a caption; the
    cards' 95 % intervals are on the page beside them."""
    tiny_image_runs(1)
    at = _opened(AppTest.from_file(str(ROOT / "app.py")))
    labels = [m.label for m in at.metric]
    # (the tiny runs have one shadow: no LiRA/RMIA cards here; tests/test_defense_cards.py reads a point that has them)
    assert "TPR @ 0.1 % FPR" not in labels and "δ" not in labels and "ε (theory)" not in labels
    assert labels.count("ε̂ lower bound") == 2
    captions = [c.value for c in at.caption]
    assert sum(c.startswith("95 % intervals — accuracy [") for c in captions) == 2
    assert sum(c.startswith("Guarantee at this value: ") for c in captions) == 2
