"""Home's big numbers are the metric its answer reads (not another attack's number beside an answer about
another metric), for both architectures, each with its 95 % interval."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.analyses.answer import cached_answer

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.xdist_group("tiny-image-runs")
@pytest.mark.parametrize("repeats", [1, 2])
def test_home_shows_the_answers_metric_with_its_interval(tiny_image_runs, repeats):
    tiny_image_runs(repeats)
    answer = cached_answer("image", "quick")
    label = answer.comparison.metrics[answer.metric].label
    at = AppTest.from_file(str(ROOT / "app.py"))
    at.run(timeout=120)
    assert not at.exception, at.exception
    cards = [m for m in at.metric if m.label.startswith(("FFNN ·", "RNN ·"))]
    assert [m.label.split(" · ")[0] for m in cards] == ["FFNN", "RNN"]
    assert all(label in m.label for m in cards)  # the card names the metric the answer reads
    if repeats >= 2:  # the means the answer compares, over the repeats
        for m, arch in zip(cards, ("ffnn", "rnn")):
            assert m.value == f"{getattr(answer, arch):.3f}" and f"mean of {repeats} repeats" in m.label
    captions = [c.value for c in at.caption if c.value.startswith("95 % CI [")]
    assert len(captions) == 2
    assert all(("over N = 2 repeats" in c) if repeats >= 2 else ("records (exact binomial" in c) for c in captions)
