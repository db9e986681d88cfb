"""Tiny cached runs that several page tests read, built once per test run and copied into each
test's own cache folder (conftest's ``built_once`` and ``tiny_image_runs`` fixtures).

A test that only reads cached runs (a page rendered on them) gets the same cache content it would
have trained itself, without training it again: the runs are keyed by their config hash, so a copy
is what ``run_experiment`` would have left there."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the image quick preset made tiny (the pages read the quick preset)
TINY_IMAGE = dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, attack_epochs=(1,), attack_train_epochs=3)


def use_tiny_image_preset(monkeypatch: pytest.MonkeyPatch) -> None:
    """The image task's quick preset is :data:`TINY_IMAGE` until the test ends."""
    from core.tasks import get_task

    task = get_task("image")
    monkeypatch.setitem(task.presets, "quick", {**task.presets["quick"], **TINY_IMAGE})


def build_tiny_image_runs(folder: Path, repeats: int, base: Path | None = None) -> None:
    """Into cache ``folder``: ``repeats`` paired FFNN/RNN repeats of the tiny image quick preset
    (``run_comparison``, what the Train & attack page's button runs), then the Defenses page opened
    once on them, which computes and caches the default curve of every repeat (the page's slider
    path: ``Defender.curve`` stores each fast point, and a later page reads it). ``base``: a folder
    built before for fewer repeats, copied first (its runs and points are the first repeats')."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from core.analyses.repeats import comparison_configs, run_comparison

    if base is not None:
        shutil.copytree(base, folder, dirs_exist_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MIA_CACHE_DIR", str(folder))
        use_tiny_image_preset(mp)
        run_comparison(comparison_configs("image", "quick", repeats))
        st.cache_data.clear()  # the page counts a run's cached repeats once per 15 s, by config hash only
        at = AppTest.from_file(str(ROOT / "app.py"))
        at.switch_page("app_pages/2_Defenses.py")
        at.run(timeout=600)
        assert not at.exception, at.exception
        if repeats > 1:
            assert at.number_input(key="repeats:image:quick").value == repeats
        assert any(m.label == "attack accuracy" for m in at.metric)  # the curves were computed
