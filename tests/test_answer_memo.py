"""The attack stage's shared answers (core.experiment.answer_memo): with its memo the stage builds each
model once and answers each record once across the models-stage attacks; without one every question asks anew.
Both must give the same scores (up to float rounding: a record answered in another batch), and the memo must
actually share (fewer model runs)."""
import shutil

import numpy as np
import pytest

from core.experiment import pipeline, roles
from core.experiment.answer_memo import AnswerMemo, concat_arrays, take_arrays
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import run_experiment, trained_models
from core.tasks import get_task
from core.tasks.image import ImageTask


def test_memo_answers_each_record_once_in_the_order_asked():
    memo, asked = AnswerMemo(), []

    def compute(records):
        asked.append(records.tolist())
        return (records * 10, records.astype(float) / 2)

    first = memo.rows("k", np.array([5, 3, 5]), compute, concat_arrays, take_arrays)
    np.testing.assert_array_equal(first[0], [50, 30, 50])
    got = memo.rows("k", np.array([7, 3, 1, 5]), compute, concat_arrays, take_arrays)
    np.testing.assert_array_equal(got[0], [70, 30, 10, 50])
    np.testing.assert_array_equal(got[1], [3.5, 1.5, 0.5, 2.5])
    assert asked == [[5, 3], [7, 1]]  # only the records not asked before, each once
    assert memo.rows("other", np.array([3]), compute, concat_arrays, take_arrays)[0].tolist() == [30]
    assert asked[-1] == [3]  # another key is another question


def test_a_failed_question_leaves_the_memo_as_it_was():
    memo = AnswerMemo()

    def fail(records):
        raise ValueError("no answers")

    with pytest.raises(ValueError):
        memo.rows("k", np.array([1, 2]), fail, concat_arrays, take_arrays)
    got = memo.rows("k", np.array([2, 1]), lambda r: (r + 1,), concat_arrays, take_arrays)
    assert got[0].tolist() == [3, 2]


def test_the_memo_builds_a_model_once():
    memo, built = AnswerMemo(), []
    for _ in range(3):
        memo.model("victim", lambda: built.append(1) or object())
    assert len(built) == 1


def _count(monkeypatch, owner, name, counter):
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        counter[name] = counter.get(name, 0) + (len(args[4]) if name == "augmented_answers" else 1)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


def test_shared_answers_give_the_sequential_scores_with_fewer_model_runs(tmp_path, monkeypatch):
    """A tiny image run with the stage's memo and without it ("0": every question asks anew), from the same cached
    models: every attack's scores agree, and the memo ran the augmented queries of fewer records and built fewer
    models."""
    cfg = get_task("image").make_config("ffnn", "quick", {"n_train": 60, "n_eval": 40, "epochs": 3, "n_shadows": 3,
                                                          "attack_epochs": (2,), "attack_train_epochs": 3})
    models = trained_models(cfg, cache=ArtifactCache(tmp_path / "models"))
    union = np.unique(np.concatenate([models.shadow_query_index(k) for k in range(cfg.n_shadows)]))
    runs, counts = {}, {}
    for path in ("0", "1"):
        counts[path] = {}
        with monkeypatch.context() as m:
            if path == "0":
                m.setattr(pipeline, "AnswerMemo", lambda: None)  # the stage without its memo
            for name in ("label_queries", "augmented_confidences", "augmented_answers"):
                _count(m, ImageTask, name, counts[path])
            _count(m, roles, "model_from_weights", counts[path])
            folder = tmp_path / f"run{path}"
            shutil.copytree(tmp_path / "models", folder)
            runs[path] = run_experiment(cfg, cache=ArtifactCache(folder))
    old, new = runs["0"], runs["1"]
    assert set(old.scores) == set(new.scores)
    for name in ("label_only", "gap", "lira_augmented", "lira", "rmia", "quantile"):
        assert name in new.scores, sorted(new.scores)
    for name in old.scores:
        np.testing.assert_allclose(new.scores[name], old.scores[name], rtol=1e-5, atol=1e-5, err_msg=name)
        assert new.summary["attacks"][name]["auc"] == pytest.approx(old.summary["attacks"][name]["auc"], abs=1e-6)
        assert new.summary["attacks"][name]["threshold"] == pytest.approx(
            old.summary["attacks"][name]["threshold"], rel=1e-5, abs=1e-6), name
    assert new.summary["shadow_fidelity"] == old.summary["shadow_fidelity"]
    # without the memo each attack asks each model separately; with it both augmented questions of a record
    # are answered with one pass, each record once per model
    assert "augmented_answers" not in counts["0"] and "label_queries" not in counts["1"]
    # (the victim and every shadow on the victim's evaluation records, every shadow on all shadows' query records)
    n_eval = 2 * cfg.n_eval
    assert counts["1"]["augmented_answers"] == n_eval * (1 + cfg.n_shadows) + len(union) * cfg.n_shadows
    assert counts["1"]["model_from_weights"] < counts["0"]["model_from_weights"]
    assert counts["1"]["model_from_weights"] <= 2 + cfg.n_shadows  # each once in the stage; the victim again for the examples
    assert runs["1"].models.memo is None  # dropped after the stage
