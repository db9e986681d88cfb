"""A task plugin that runs as is: a 2-layer MLP (FFNN) vs a GRU (RNN) on generated sequences.

Copy this file, change the data, the two models and the training, keep the method signatures.
Run it with

    python -m core run --plugin examples/plugin_task.py --task demo_sequences --arch ffnn --preset quick
    MIA_PLUGINS=$PWD/examples/plugin_task.py python -m core compare --task demo_sequences --repeats 2
    MIA_PLUGINS=$PWD/examples/plugin_task.py make app        # the task appears in every page's task list

What each method must return is in docs/your_data.md ("Your architecture").

The problem: a record is a sequence of STEPS vectors of FEATURES numbers; its class (one of
CLASSES) is the prototype the sequence correlates with most, and a fraction ``label_noise`` of the
records get a random class instead. A model can fit those only by memorising them, which is what a
membership-inference attack picks up.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from core.foundations.config import ExperimentConfig, bounded, check_fields
from core.measurement.responses import Responses
from core.tasks import register_task
from core.tasks.base import Task, TaskData
from core.training.loop import PrivacySettings, TrainingRecord, build_optimizer, seeded_generator, train_epochs

STEPS, FEATURES, CLASSES = 12, 4, 3
#: records generated: half for the victim (members and non-members), half for the attacker's shadows
RECORDS = 1600
#: the data never changes between runs (the splits are seeded by the config's seed, not the data)
DATA_SEED = 20240611


@dataclass(frozen=True)
class SequenceOptions:
    """The task's own options (``--set hidden=64``; shown under "Task options" in the app).

    hidden: the MLP's hidden width; the GRU is sized to the MLP's parameter count (the width knob). [4, 512]
    label_noise: fraction of records with a random class (what the models must memorise). [0, 0.9]
    """

    hidden: int = bounded(32, 4, 512)
    label_noise: float = bounded(0.2, 0, 0.9)

    def validate(self) -> None:
        check_fields(self)  # each field inside its bounds, else one ConfigError line


class SequenceMLP(nn.Module):
    """FFNN: the whole sequence flattened, two hidden layers."""

    def __init__(self, hidden: int):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(STEPS * FEATURES, hidden), nn.ReLU(),
                                 nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, CLASSES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, STEPS, FEATURES) -> (B, CLASSES) logits
        return self.net(x)


class SequenceGRU(nn.Module):
    """RNN: a GRU reads the sequence step by step; a linear head on its last state."""

    def __init__(self, hidden: int):
        super().__init__()
        self.gru = nn.GRU(FEATURES, hidden, batch_first=True)
        self.head = nn.Linear(hidden, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, last = self.gru(x)
        return self.head(last[-1])


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def matched_gru_width(mlp_hidden: int) -> int:
    """The GRU width whose parameter count is nearest the MLP's (a fair FFNN-vs-RNN comparison)."""
    target = parameter_count(SequenceMLP(mlp_hidden))
    width, below = 1, parameter_count(SequenceGRU(1))
    while True:  # the count grows with the width: stop at the first width past the target
        above = parameter_count(SequenceGRU(width + 1))
        if above >= target:
            return width + 1 if above - target < target - below else width
        width, below = width + 1, above


class SequenceTask(Task):
    """Synthetic sequence classification: a 2-layer MLP vs a GRU of matched parameter counts."""

    name = "demo_sequences"  # lowercase letters, digits, _; must not be a built-in task's name
    label = "Synthetic sequences (plugin template)"
    about = (f"A record is a sequence of {STEPS} steps of {FEATURES} numbers, labelled with one of {CLASSES} "
             "classes (a fraction label_noise at random). The models answer class probabilities; the reference "
             "is the record's class.")
    utility_metric = "accuracy"
    datasets = ("synthetic",)
    options_cls = SequenceOptions
    width_knob = "hidden"
    record_names = ("sequence", "sequences")
    privacy_unit = "one sequence"
    precisions = ("float32",)
    # archs = ("ffnn",)  # a plugin with one model: the comparison is then refused, single runs work
    presets = {
        # victim, 2 shadows, every attack; its measured times: docs/your_data.md, "Your architecture"
        "quick": dict(dataset="synthetic", n_train=300, n_eval=200, epochs=30, batch_size=32, lr=3e-3,
                      n_shadows=2, attack_epochs=(10, 20), attack_train_epochs=60),
    }
    preset_notes = {"quick": "generated data, no data folder; 300 members, 2 shadows, 30 epochs. Measured times: "
                             "docs/your_data.md#your-architecture."}

    def load(self, cfg: ExperimentConfig) -> TaskData:
        """All records, and the two disjoint halves: the victim's and the attacker's (indices)."""
        rng = np.random.default_rng(DATA_SEED)
        prototypes = rng.normal(size=(CLASSES, STEPS, FEATURES))
        x = rng.normal(size=(RECORDS, STEPS, FEATURES))
        y = np.einsum("ntf,ctf->nc", x, prototypes).argmax(1)
        noisy = rng.random(RECORDS) < cfg.options.label_noise
        y[noisy] = rng.integers(0, CLASSES, int(noisy.sum()))
        records = (torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.int64))
        order = rng.permutation(RECORDS)
        return TaskData(records, victim_pool=np.sort(order[: RECORDS // 2]), attacker_pool=np.sort(order[RECORDS // 2:]),
                        description=f"synthetic sequences: {RECORDS:,} records, {STEPS}×{FEATURES}, {CLASSES} classes",
                        info={"noisy_labels": int(noisy.sum())})

    def build_model(self, cfg: ExperimentConfig, data: TaskData) -> nn.Module:
        """A fresh model of ``cfg.arch`` (the pipeline seeds torch before calling)."""
        if cfg.arch == "ffnn":
            return SequenceMLP(cfg.options.hidden)
        return SequenceGRU(matched_gru_width(cfg.options.hidden))

    def train(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, train_index: np.ndarray,
              on_epoch: Callable[[int, nn.Module], None], on_progress: Callable[[float], None],
              on_batch: Callable[[Any], None] | None = None) -> TrainingRecord:
        """Train in place on records ``train_index`` through the library's loop, which brings seeded
        batches, the optimizer, DP-SGD when the config asks for it, and the hooks the pipeline needs
        (checkpoint answers after each epoch, progress)."""
        x, y = data.records[0][train_index], data.records[1][train_index]
        return train_epochs(model, len(train_index), lambda batch: F.cross_entropy(model(x[batch]), y[batch]),
                            epochs=cfg.epochs, batch_size=cfg.batch_size,
                            optimizer=build_optimizer(model, cfg.lr, cfg.weight_decay), generator=seeded_generator(),
                            privacy=PrivacySettings.from_config(cfg), unit=self.privacy_unit,
                            on_batch=on_batch, on_epoch=on_epoch, on_progress=on_progress)

    @torch.no_grad()
    def _logits(self, model: nn.Module, data: TaskData, index: np.ndarray) -> torch.Tensor:
        training = model.training  # also called between epochs (learning curves): leave the mode as found
        model.eval()
        try:
            return model(data.records[0][index]).float()
        finally:
            model.train(training)

    def utility(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                output_transform: Callable[[torch.Tensor], torch.Tensor] | None = None) -> float:
        """Accuracy on records ``index``; behind an output defense (``output_transform`` on the
        log-probabilities) the class is read off the defended distribution."""
        scores = torch.log_softmax(self._logits(model, data, index).double(), 1)
        if output_transform is not None:
            scores = output_transform(scores)
        return float((scores.argmax(1) == data.records[1][index]).double().mean())

    def respond(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                record_features: bool = True) -> Responses:
        """What the attacker sees: one probability vector per record (one step each) and the reference class."""
        return Responses.from_logits(self._logits(model, data, index), np.ones(len(index), np.int64),
                                     data.records[1][index])

    def slice_labels(self, cfg: ExperimentConfig, data: TaskData, records: np.ndarray,
                     summary: dict[str, Any]) -> dict[str, list[str]]:
        """Vulnerability per class (the slices analysis)."""
        return {"class": [f"class {int(c)}" for c in data.records[1][records]]}


register_task(SequenceTask)  # the line that makes it a plugin: without it the file is refused
