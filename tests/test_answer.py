""""Do RNNs leak more?" answered from the cache: core's answer, the CLI's
``compare --cached`` and the Home page say the same thing — the one-repeat difference as
"inconclusive (one repeat)" with the button that adds repeats, then the verdict with its interval and N."""
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.analyses.answer import QUESTION, cached_answer
from core.analyses.repeats import comparison_json, repeat_config
from core.cli.main import main
from core.experiment.pipeline import run_experiment
from core.experiment.results import RunSummary
from core.measurement.stats import FINDING_VERDICTS
from core.tasks import get_task

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, attack_epochs=(1,), attack_train_epochs=3)


@pytest.fixture
def tiny_quick(monkeypatch):
    """The image quick preset made tiny (the answer and the Home page build their configs from it)."""
    task = get_task("image")
    monkeypatch.setattr(type(task), "presets", {**task.presets, "quick": {**task.presets["quick"], **TINY}})
    return [task.make_config(a, "quick") for a in ("ffnn", "rnn")]


def home():
    at = AppTest.from_file(str(ROOT / "app.py")).run(timeout=60)
    assert not at.exception, at.exception
    return at, " ".join(m.value for m in at.markdown)


def test_answer_follows_the_cached_repeats_on_core_cli_and_home(tiny_quick, tmp_path):
    assert cached_answer().repeats == 0 and cached_answer().verdict is None  # nothing measured: no answer
    runs = {c.arch: [RunSummary.from_dict(run_experiment(c).summary)] for c in tiny_quick}
    one = cached_answer().to_dict()
    # the headline is the one answer (core.analyses.arch_answer) the comparison carries: the studies' metric
    first = comparison_json(runs["ffnn"], runs["rnn"])
    word = first["answer"]["verdict"]
    assert one["question"] == QUESTION and one["repeats"] == 1 and one["verdict"] == word
    assert word in ("inconclusive", "not comparable", "uninformative")  # one repeat never holds or reverses
    assert one["metric"] == first["answer"]["metric"] == "attack_accuracy"
    diff = first["metrics"]["attack_accuracy"]["difference"]["diff"]["mean"]
    assert f"{word} (one repeat)" in one["sentence"] and f"{diff:+.3f}" in one["sentence"]
    assert "8×8 digits" in one["data"] and "quick" in one["data"]
    at, text = home()
    assert QUESTION in text and f"{word} (one repeat)" in text and f"{diff:+.3f}" in text
    # the button offers the N at which the answer can decide (its Holm family's floor), not a fixed two more
    floor = first["answer"]["decidable_at"]
    assert one["decidable_at"] == floor and floor >= 6
    assert any(b.label.startswith(f"➕ Run to N = {floor} repeats") for b in at.button)
    assert any("one repeat" in m.label for m in at.metric)
    assert any("docs/results.md" in c.value for c in at.caption)  # where the real-data answers are

    # a second paired repeat of one architecture only: still one pair, still no interval
    run_experiment(repeat_config(tiny_quick[0], 1))
    assert cached_answer().repeats == 1
    run_experiment(repeat_config(tiny_quick[1], 1))
    for c in tiny_quick:
        runs[c.arch].append(RunSummary.from_dict(run_experiment(repeat_config(c, 1)).summary))
    two = cached_answer().to_dict()
    comparison = comparison_json(runs["ffnn"], runs["rnn"])
    expected = comparison["answer"]
    assert two["repeats"] == 2 and two["verdict"] == expected["verdict"] and two["verdict"] in FINDING_VERDICTS
    ci = expected["difference"]
    assert f"[{ci['ci_low']:+.3f}, {ci['ci_high']:+.3f}]" in two["sentence"] and "N = 2" in two["sentence"]

    out = tmp_path / "answer.json"  # the CLI prints the same answer, training nothing
    assert main(["compare", "--cached", "--quiet", "--out", str(out)]) == 0
    printed = json.loads(out.read_text())
    assert {k: printed[k] for k in ("repeats", "verdict", "sentence")} == {k: two[k] for k in ("repeats", "verdict", "sentence")}

    at, text = home()
    assert two["sentence"] in text and "(one repeat)" not in text
    # the cards say they are the mean over the repeats, beside the verdict they feed
    labels = [m.label for m in at.metric]
    assert labels and all("mean of 2 repeats" in label for label in labels)
    means = {m.label.split(" · ")[0]: m.value for m in at.metric}
    accuracy = comparison["metrics"]["attack_accuracy"]  # the cards: attack accuracy, as they say
    assert means["FFNN"] == f"{accuracy['ffnn']['mean']:.3f}" and means["RNN"] == f"{accuracy['rnn']['mean']:.3f}"
