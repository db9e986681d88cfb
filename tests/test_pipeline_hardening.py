"""Hardening, pipeline side: one training per model across processes, diverged training caches
nothing, metrics refuse NaN, cache entries that are not what they claim are recomputed, and
the corruption report describes this run only."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import run_experiment
from core.foundations.errors import TrainingDivergedError
from core.measurement.metrics import evaluate_attack, roc_auc
from core.tasks import get_task
from core.tasks.image import ImageTask

ROOT = Path(__file__).resolve().parent.parent
TINY = dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, attack_epochs=(1,), attack_train_epochs=3)


def test_two_processes_train_each_model_once(tmp_path):
    """Two identical cold CLI runs on one cache: the lock makes the second wait, then load."""
    env = dict(os.environ, MIA_CACHE_DIR=str(tmp_path / "cache"), MIA_DEVICE="cpu")
    args = [sys.executable, "-m", "core", "run", "--task", "image", "--arch", "ffnn", "--quiet",
            *[f"--set={k}={','.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in TINY.items()]]
    procs = [subprocess.Popen([*args, "--out", str(tmp_path / f"r{i}.json")], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    results = [json.loads((tmp_path / f"r{i}.json").read_text()) for i in range(2)]
    trained = [not r.get("cache_hit") and not r["models_from_cache"]["victim"] for r in results]
    assert sum(trained) == 1, [r.get("models_from_cache") for r in results]  # exactly one trained the victim
    shadows_trained = sum(0 if r.get("cache_hit") else TINY["n_shadows"] - r["models_from_cache"]["shadows"]
                          for r in results)
    assert shadows_trained == TINY["n_shadows"]
    assert results[0]["attack"]["auc"] == results[1]["attack"]["auc"]


def test_diverged_training_stops_with_a_clear_error_and_caches_nothing(monkeypatch):
    original = ImageTask.train

    def poisoned(self, cfg, model, data, train_index, on_epoch, on_progress):
        def on_epoch_nan(epoch, m):
            with torch.no_grad():
                next(m.parameters()).fill_(float("nan"))  # what lr=1e6 does a few steps later
            on_epoch(epoch, m)
        original(self, cfg, model, data, train_index, on_epoch_nan, on_progress)

    monkeypatch.setattr(ImageTask, "train", poisoned)
    cfg = get_task("image").make_config("rnn", "quick", TINY)
    with pytest.raises(TrainingDivergedError, match="diverged at epoch 1.*lower lr"):
        run_experiment(cfg)
    cache = ArtifactCache()
    assert [k for k in cache.keys() if "/model/" in k or "/result/" in k] == []


@pytest.mark.parametrize("scores", [[0.1, float("nan"), 0.3, 0.4], [float("nan")] * 4])
def test_metrics_refuse_nan_scores(scores):
    y = np.array([1, 1, 0, 0], bool)
    with pytest.raises(ValueError, match="NaN"):
        roc_auc(np.array(scores), y)
    with pytest.raises(ValueError, match="NaN"):
        evaluate_attack("x", np.array(scores), y, 0.5)


@pytest.mark.parametrize("part", ["result", "meta", "weights"])
def test_checksum_valid_but_wrong_entries_are_recomputed_and_reported_for_this_run_only(part):
    cfg = get_task("image").make_config("ffnn", "quick", TINY)
    first = run_experiment(cfg).summary
    cache = ArtifactCache()
    digest = cfg.training_hash
    key = {"result": cache.key("result", cfg.config_hash), "meta": cache.key("model", digest, "victim", "meta"),
           "weights": cache.key("model", digest, "victim", "weights")}[part]
    if part == "result":
        cache.put_json(key, [1, 2, 3])
    elif part == "meta":
        cache.put_json(key, {"foo": 1})
        cache.discard(cache.key("result", cfg.config_hash), "test: force a recompute from the models")
    else:
        cache.put_tensors(key, {"wrong": torch.zeros(3)})
        cache.discard(cache.key("result", cfg.config_hash), "test: force a recompute from the models")
    again = run_experiment(cfg, cache=ArtifactCache()).summary
    assert key in again["cache_corrupted"]
    assert again["attack"]["auc"] == first["attack"]["auc"]  # recomputed to the same numbers
    third = run_experiment(cfg, cache=ArtifactCache()).summary
    assert third["cache_hit"] and third["cache_corrupted"] == []  # the report is per run, not stored
