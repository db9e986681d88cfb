"""Task.describe_record: each task says what one of its records is (data, no Streamlit), so the
Analyses page draws any task's record by the view's kind alone; and the app draws each kind."""
from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core.tasks import get_task
from core.tasks.base import RECORD_KINDS, Task

TINY = {
    "image": {"n_train": 40, "n_eval": 20, "n_shadows": 1},
    "translation": {"n_train": 24, "n_eval": 8, "n_shadows": 1},
    "navigation": {"n_train": 2, "n_eval": 2, "n_shadows": 1, "frames": 2048},
}


def _setup(name: str, arch: str = "rnn"):
    task = get_task(name)
    cfg = task.make_config(arch, "quick", TINY[name])
    return task, cfg, task.load(cfg)


def _no_victim():
    raise AssertionError("the task loaded a victim it does not show")


def test_image_record_is_the_image_in_unit_range_and_its_label():
    task, cfg, data = _setup("image")
    i = int(data.victim_pool[3])
    view = task.describe_record(cfg, data, i, _no_victim, "non-member")
    assert view.kind == "image" and view.answer is None
    assert view.image.ndim in (2, 3) and view.image.min() == 0.0 and view.image.max() == pytest.approx(1.0)
    assert f"label {int(data.records.labels[i])}" in view.caption and "non-member" in view.caption
    slices = task.slice_labels(cfg, data, data.victim_pool[:10], {})
    assert slices["class"] == [f"class {int(data.records.labels[j])}" for j in data.victim_pool[:10]]


def test_translation_record_is_the_pair_and_the_victims_translation():
    task, cfg, data = _setup("translation")
    i = int(data.victim_pool[0])
    bare = task.describe_record(cfg, data, i)
    assert bare.kind == "text" and bare.answer is None
    assert dict(bare.lines) == {"source": data.records.src_text[i], "reference": data.records.tgt_text[i]}
    model = task.build_model(cfg, data)  # untrained: the view needs an answer, not a good one
    said = task.describe_record(cfg, data, i, lambda: model)
    assert isinstance(said.answer, str) and said.lines == bare.lines


def test_navigation_record_is_the_map_with_the_victims_path():
    task, cfg, data = _setup("navigation")
    i = int(data.victim_pool[1])
    assert task.describe_record(cfg, data, i).answer is None  # no victim: no path to draw
    model = task.build_model(cfg, data)
    view = task.describe_record(cfg, data, i, lambda: model, "non-member")
    m = view.answer
    assert view.kind == "map" and m.role == "non-member" and m.seed == int(data.records.seeds[i])
    cells = np.asarray(m.cells)
    assert m.path[0] == m.start and cells[m.start[1], m.start[0]] != 2  # starts off the walls
    assert len(m.path) >= 1 and m.steps >= 1


def test_the_default_view_of_a_new_task_needs_nothing_task_specific():
    task, cfg, data = _setup("image")
    view = Task.describe_record(task, cfg, data, 5, _no_victim)  # what a task without its own gets
    assert view.kind in RECORD_KINDS and view.lines == (("record", "#5"),)


def _draw_every_kind() -> None:
    import numpy as np

    from core.tasks.base import RecordView
    from core.tasks.navigation import MapView
    from ui.examples import show_record

    show_record({"ffnn": RecordView("image", "label 3 (member)", image=np.zeros((8, 8)))}, key="img", note="score 1")
    show_record({"ffnn": RecordView("text", "pair 1", lines=(("source", "a b"), ("reference", "c d")), answer="c"),
                 "rnn": RecordView("text", "pair 1", lines=(("source", "a b"), ("reference", "c d")), answer="d")},
                key="txt")
    cells = [[2, 2, 2], [2, 1, 8], [2, 2, 2]]
    m = MapView.from_dict({"role": "member", "seed": 7, "cells": cells, "door_open": [[0] * 3] * 3, "start": [1, 1],
                           "start_dir": 0, "goal": [2, 1], "path": [[1, 1], [2, 1]], "steps": 1, "return": 0.9,
                           "reached_goal": True})
    show_record({"rnn": RecordView("map", "map seed 7 (member)", answer=m)}, key="map")


def test_the_app_draws_each_kind_of_record():
    at = AppTest.from_function(_draw_every_kind).run(timeout=60)
    assert not at.exception, at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "source: a b" in text and "FFNN victim: c" in text and "RNN victim: d" in text
    assert any("map seed 7" in c.value for c in at.caption)
