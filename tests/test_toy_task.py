"""A fourth task registered in this file alone runs through train & attack, a defense and an analysis:
the tables a task needs (label, width knob, privacy unit, sensitivity samples) are the Task's own."""
from dataclasses import dataclass

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from recompute import assert_attacks_match_records
from torch import nn

from core.analyses import analysis
from core.defenses.defender import Defender
from core.defenses.spec import DefenseSpec
from core.experiment.pipeline import run_experiment, trained_models
from core.foundations.config import ExperimentConfig, bounded, check_fields
from core.foundations.errors import ConfigError
from core.measurement.responses import Responses
from core.tasks import available_tasks, get_task, register_task, unregister_task
from core.tasks.base import Task, TaskData
from core.training.loop import PrivacySettings, build_optimizer, seeded_generator, train_epochs

FEATURES = 6


@dataclass(frozen=True)
class BlobOptions:
    """hidden: width of both models (the width knob). [1, 256]"""

    hidden: int = bounded(16, 1, 256)

    def validate(self) -> None:
        check_fields(self)


class RecurrentBlobs(nn.Module):
    """A GRU reading the features one at a time (a sequence of FEATURES scalars), then a linear head."""

    def __init__(self, hidden: int):
        super().__init__()
        self.gru = nn.GRU(1, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, h = self.gru(x.unsqueeze(-1))
        return self.head(h[-1])


def _mlp(hidden: int) -> nn.Module:
    return nn.Sequential(nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, 2))


def _params(m: nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


class BlobsTask(Task):
    """Two Gaussian blobs in 6 dimensions; an MLP vs a GRU over the features, sizes matched."""

    name = "blobs"
    label = "Synthetic blobs"
    width_knob = "hidden"
    privacy_unit = "one point"
    sensitivity_samples = 1
    options_cls = BlobOptions
    datasets = ("blobs",)
    presets = {"quick": dict(dataset="blobs", n_train=40, n_eval=20, epochs=2, batch_size=16, lr=1e-2, n_shadows=1,
                             attack_epochs=(), attack_train_epochs=3)}

    def load(self, cfg: ExperimentConfig) -> TaskData:
        rng = np.random.default_rng(7)
        y = rng.integers(0, 2, 400)
        x = (rng.normal(size=(400, FEATURES)) + 0.8 * (2 * y[:, None] - 1)).astype(np.float32)
        return TaskData((torch.from_numpy(x), torch.from_numpy(y)), np.arange(0, 200), np.arange(200, 400),
                        "blobs: 400 points, 6 features, 2 classes")

    def build_model(self, cfg: ExperimentConfig, data: TaskData) -> nn.Module:
        mlp = _mlp(cfg.options.hidden)
        if cfg.arch == "ffnn":
            return mlp
        # the GRU's hidden size with the parameter count nearest the MLP's
        hidden = min(range(1, 256), key=lambda h: abs(_params(RecurrentBlobs(h)) - _params(mlp)))
        return RecurrentBlobs(hidden)

    def train(self, cfg, model, data, train_index, on_epoch, on_progress, on_batch=None):
        x, y = data.records[0][train_index], data.records[1][train_index]
        return train_epochs(model, len(train_index), lambda idx: F.cross_entropy(model(x[idx]), y[idx]),
                            epochs=cfg.epochs, batch_size=cfg.batch_size,
                            optimizer=build_optimizer(model, cfg.lr, cfg.weight_decay), generator=seeded_generator(),
                            privacy=PrivacySettings.from_config(cfg), unit=self.privacy_unit,
                            on_batch=on_batch, on_epoch=on_epoch, on_progress=on_progress)

    @torch.no_grad()
    def _logits(self, model, data, index) -> torch.Tensor:
        return model(data.records[0][index]).float()

    def utility(self, cfg, model, data, index, output_transform=None) -> float:
        scores = self._logits(model, data, index)
        if output_transform is not None:
            scores = output_transform(torch.log_softmax(scores.double(), 1))
        return float((scores.argmax(1) == data.records[1][index]).float().mean())

    def respond(self, cfg, model, data, index, record_features=True) -> Responses:
        return Responses.from_logits(self._logits(model, data, index), np.ones(len(index), np.int64),
                                     data.records[1][index])


@pytest.fixture
def blobs():
    register_task(BlobsTask)
    yield get_task("blobs")
    unregister_task("blobs")


def test_a_fourth_task_registered_in_a_test_trains_attacks_defends_and_is_analysed(blobs):
    assert "blobs" in available_tasks()
    ffnn, rnn = (blobs.make_config(a, "quick") for a in ("ffnn", "rnn"))
    data = blobs.load(ffnn)
    sizes = [_params(blobs.build_model(c, data)) for c in (ffnn, rnn)]
    assert abs(sizes[0] - sizes[1]) / sizes[0] < 0.15  # FFNN and RNN of about one size
    # train & attack
    result = run_experiment(ffnn)
    s = result.summary
    assert s["task"] == "blobs" and s["utility"]["metric"] == "accuracy"
    # the blobs lie 3.9 standard deviations apart: two epochs generalise (≥ 90 % on the non-members, no
    # train/validation gap) and leave nothing to infer: every attack stays within 2 standard errors of
    # chance on its 20 + 20 records (±0.18 in AUC), and reports what its stored per-record scores give
    assert s["utility"]["val"] >= 0.9 and s["utility"]["val"] >= s["utility"]["train"] - 0.05
    assert_attacks_match_records(s["attacks"], s["records"])
    assert all(abs(a["auc"] - 0.5) < 0.18 for a in s["attacks"].values()), s["attacks"]
    # defend: Dirichlet points, utility included; Dir(k·p) with a huge k answers p itself: the undefended
    # victim's numbers; k = 1 scatters the two-class answers enough to flip decisions
    defender = Defender(trained_models(ffnn))
    point = defender.point(DefenseSpec("dirichlet", 1.0), "naive", utility=True)
    same = defender.point(DefenseSpec("dirichlet", 1e8), "naive", utility=True)
    assert same.utility == s["utility"]["val"] and same.utility_loss == 0
    for name, a in s["attacks"].items():
        assert same.attacks[name].auc == pytest.approx(a["auc"], abs=0.01)
    point = point.to_dict()  # the JSON the cache stores, checked against its own per-record scores
    assert point["utility"] < s["utility"]["val"] - 0.1 and point["utility_loss"] > 0
    assert_attacks_match_records(point["attacks"], point["records"])
    assert "Lemma 1" in point["privacy_note"] or "vacuous" in point["privacy_note"]
    # analyze: the entropy scatter of both architectures
    out = analysis.analyze({"ffnn": ffnn, "rnn": rnn}, ("scatter",)).to_dict()
    assert out["task"] == "blobs" and set(out["scatter"]) == {"ffnn", "rnn"}
    assert len(out["scatter"]["rnn"]["log10_ape"]) == 2 * rnn.n_eval
    assert "lower_member_entropy" in out["verdicts"]


def test_a_task_name_not_registered_is_refused():
    with pytest.raises(ConfigError, match="task must be one of"):
        ExperimentConfig(task="blobs").validate()
    with pytest.raises(ConfigError, match="unknown task 'blobs'"):
        get_task("blobs")
    with pytest.raises(ValueError):
        unregister_task("image")


def test_a_task_without_canaries_refuses_the_audit_in_one_line(blobs):
    from core.foundations.errors import ConfigError

    with pytest.raises(ConfigError, match="no canaries for the blobs task"):
        blobs.canary_data(None, None, np.zeros(0), np.random.default_rng(0))
