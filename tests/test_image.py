import pickle

import numpy as np
import pytest
import torch

from core.attacks.shadow_attacks import (
    AttackTraining,
    ShadowModelAttack,
    entropy_threshold_attack,
    fit_attacks,
    loss_threshold_attack,
    score_attacks,
)
from core.data.image_sources import load_cifar10
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import run_experiment
from core.experiment.roles import make_splits, train_or_load
from core.foundations.errors import DatasetNotFoundError
from core.measurement.responses import Responses
from core.models import count_params
from core.models.image import ReNet, renet_param_count
from core.tasks import get_task

TINY = dict(n_train=100, n_eval=100, epochs=40, n_shadows=3, attack_epochs=(), attack_train_epochs=60)


def write_cifar_fixture(folder, per_batch=20, seed=0):
    """Batches in the official 'python version' layout: pickled dicts with bytes keys."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {
            b"batch_label": name.encode(),
            b"labels": [int(v) for v in rng.integers(0, 10, per_batch)],
            b"data": rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8),
            b"filenames": [f"img_{i}.png".encode() for i in range(per_batch)],
        }
        with open(folder / name, "wb") as fh:
            pickle.dump(batch, fh, protocol=2)
    with open(folder / "batches.meta", "wb") as fh:
        pickle.dump({b"label_names": [b"airplane"] * 10, b"num_vis": 3072}, fh)


def test_cifar10_loader_reads_official_layout(tmp_path):
    write_cifar_fixture(tmp_path / "cifar-10-batches-py")
    x, y = load_cifar10(tmp_path / "cifar-10-batches-py")
    assert x.shape == (100, 3, 32, 32) and x.dtype == np.uint8 and y.shape == (100,)
    # row-major channel planes: the first 1024 bytes are the red plane
    with open(tmp_path / "cifar-10-batches-py" / "data_batch_1", "rb") as fh:
        raw = pickle.load(fh, encoding="bytes")[b"data"][0]
    np.testing.assert_array_equal(x[0, 0].ravel(), raw[:1024])


def test_cifar10_task_end_to_end_on_fixture(tmp_path):
    write_cifar_fixture(tmp_path / "c", per_batch=40)
    cfg = get_task("image").make_config("ffnn", "quick", dict(dataset="cifar10", data_dir=str(tmp_path / "c"),
                                        n_train=20, n_eval=10, epochs=2, n_shadows=1, attack_epochs=(),
                                        attack_train_epochs=2, cnn_width=4))
    s = run_experiment(cfg).summary
    assert s["data"]["image_shape"] == [3, 32, 32] and s["data"]["n_records"] == 200
    # what one evaluation record is worth, beside the numbers: 10 members, 10 non-members
    assert s["resolution"] == {"n_members": 10, "n_nonmembers": 10, "tpr_step": 0.1, "fpr_step": 0.1,
                               "accuracy_step": 0.05}


def test_cifar10_missing_folder_and_files(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="not found"):
        load_cifar10(tmp_path / "absent")
    (tmp_path / "partial").mkdir()
    with pytest.raises(DatasetNotFoundError, match="data_batch_1"):
        load_cifar10(tmp_path / "partial")
    cfg = get_task("image").make_config("rnn", "quick", dict(dataset="cifar10"))
    with pytest.raises(DatasetNotFoundError, match="needs data_dir"):
        run_experiment(cfg)


def test_cifar10_loader_refuses_code_in_pickles(tmp_path):
    write_cifar_fixture(tmp_path / "c")
    with open(tmp_path / "c" / "data_batch_3", "wb") as fh:
        pickle.dump({b"data": __import__("os").getcwd}, fh)  # a callable: must not be resolved
    with pytest.raises(DatasetNotFoundError, match="malformed"):
        load_cifar10(tmp_path / "c")


@pytest.mark.parametrize("shape,patch,layers", [((1, 8, 8), 2, 1), ((3, 32, 32), 2, 2), ((3, 32, 32), 4, 1)])
def test_renet_param_formula(shape, patch, layers):
    c, h, w = shape
    model = ReNet(c, h, w, 10, hidden=12, fc=40, patch=patch, layers=layers)
    assert count_params(model) == renet_param_count(c, h, w, 10, 12, 40, patch, layers)
    assert model(torch.randn(2, c, h, w)).shape == (2, 10)


@pytest.mark.parametrize("preset", ["quick", "paper"])
def test_architectures_have_matched_parameter_counts(preset):
    task = get_task("image")
    cfg = task.make_config("ffnn", preset)
    # build on a fake data source of the preset's image shape (no need for the real CIFAR-10)
    from core.tasks.base import TaskData
    from core.tasks.image import ImageRecords

    shape = (1, 8, 8) if cfg.dataset == "digits" else (3, 32, 32)
    data = TaskData(ImageRecords(torch.zeros(2, *shape), torch.zeros(2, dtype=torch.long), 10), np.arange(1), np.arange(1), "fake")
    n_ffnn = count_params(task.build_model(cfg, data))
    n_rnn = count_params(task.build_model(task.make_config("rnn", preset), data))
    assert abs(n_ffnn - n_rnn) / n_ffnn < 0.05


def test_overfit_victim_is_attacked_above_chance():
    cfg = get_task("image").make_config("ffnn", "quick", TINY)
    s = run_experiment(cfg).summary
    assert s["utility"]["train"] - s["utility"]["val"] > 0.05  # it did overfit
    assert s["attack"]["accuracy"] > 0.6 and s["attack"]["auc"] > 0.65
    assert s["attacks"]["loss_threshold"]["auc"] > 0.65
    # a second run is a cache hit with the same numbers
    again = run_experiment(cfg).summary
    assert again["cache_hit"] and again["attack"]["auc"] == s["attack"]["auc"]


def test_victim_that_never_saw_the_members_is_not_attacked():
    """Shadows and attack as usual, but the 'victim' trained on other records of its half."""
    task = get_task("image")
    cfg = task.make_config("ffnn", "quick", TINY)
    data = task.load(cfg)
    splits = make_splits(cfg, data)
    cache = ArtifactCache()
    used = set(splits.victim_members) | set(splits.victim_nonmembers)
    unseen = np.array([i for i in np.random.default_rng(0).permutation(data.victim_pool) if i not in used][: cfg.n_train])
    blind = train_or_load(task, cfg, data, "victim", unseen, splits.eval_index, cache)
    shadows = []
    for i in range(cfg.n_shadows):
        query = np.concatenate([splits.shadow_in[i][: cfg.n_eval], splits.shadow_out[i]])
        shadows.append(train_or_load(task, cfg, data, f"shadow_{i}", splits.shadow_in[i], query, cache).responses[cfg.epochs])
    membership = np.concatenate([np.r_[np.ones(cfg.n_eval, bool), np.zeros(cfg.n_eval, bool)]] * cfg.n_shadows)
    attacks = [ShadowModelAttack(AttackTraining(epochs=60)), loss_threshold_attack(), entropy_threshold_attack()]
    out = score_attacks(fit_attacks(attacks, Responses.concat(shadows), membership),
                        blind.responses[cfg.epochs], splits.eval_membership)
    for name, o in out.items():
        assert abs(o.result.auc - 0.5) < 0.1, name
        assert abs(o.result.accuracy - 0.5) < 0.1, name


def test_same_config_same_numbers():
    cfg = get_task("image").make_config("rnn", "quick", dict(TINY, epochs=3, n_shadows=1, attack_train_epochs=5))
    a = run_experiment(cfg).summary
    ArtifactCache().clear()
    b = run_experiment(cfg).summary
    assert not b["cache_hit"]
    assert a["utility"] == b["utility"] and a["attack"]["auc"] == b["attack"]["auc"]


def test_config_that_cannot_fit_in_memory_is_refused():
    from core.foundations.errors import ResourceLimitError

    cfg = get_task("image").make_config("ffnn", "quick", dict(cnn_width=512, cnn_stages=6))
    with pytest.raises(ResourceLimitError, match="GiB"):
        run_experiment(cfg)
    # and the quick preset's estimate is far below this machine's memory
    task = get_task("image")
    q = task.make_config("rnn", "quick")
    assert task.memory_estimate(q, task.load(q)) < 2**28
