"""Tabular classification (a user's own table, or the built-in one): a CSV table with a header, MLP vs LSTM.

Data sources:

* ``breast_cancer`` (built-in default): scikit-learn's bundled Wisconsin diagnostic breast cancer
  table (569 rows, 30 numeric columns, label ``diagnosis``: benign / malignant), read from the
  installed package — no file, no network.
* ``csv``: a CSV file with a header row under the data root (``--set data_dir=FILE.csv --set
  label=COLUMN``; giving ``data_dir`` alone selects ``csv``).

Both go through one encoder (:func:`core.data.csv_table.encode_table`): numeric columns (every non-missing cell a
number) are one feature each, standardised inside each model from its own training records
(:class:`core.models.tabular.Standardize`); text columns are one-hot over their most frequent
values (at most ``max_categories`` features a column, the rest as ``other``); a missing value
(an empty cell, ``NA``, ``N/A``, ``NaN``, ``null``, ``None``, ``?``) is the training mean of a
numeric column plus a ``(missing)`` indicator feature, or its own ``(missing)`` category of a text
column, and is counted per column in the data's description and ``info["missing_values"]``.

A file is not trusted: :mod:`core.data.csv_table` confines, caps and parses it without evaluating anything.
Half of the rows go to the victim, the other half to the attacker (paper 000 §3.2).
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from core.data.csv_table import BUILTIN_LABELS, TabularRecords, builtin_table, encode_table, parse_csv, read_csv_bytes
from core.foundations.config import ExperimentConfig, bounded, check_fields
from core.foundations.device import default_device
from core.foundations.errors import ConfigError, DatasetNotFoundError
from core.foundations.memory import FLOAT_BYTES, attack_training_bytes, responses_bytes, training_state_bytes
from core.models.tabular import (
    Standardize,
    TabularLSTM,
    TabularMLP,
    lstm_param_count,
    match_lstm_hidden,
    mlp_param_count,
)
from core.tasks.base import (
    PRESET_TIMES,
    EpochCallback,
    FractionCallback,
    LogitClassifier,
    RecordView,
    Task,
    TaskData,
    VictimLoader,
    fixed_halves,
)
from core.training.loop import (
    BatchCallback,
    PrivacySettings,
    TrainingRecord,
    autocast_dtype,
    build_optimizer,
    seeded_generator,
    train_epochs,
)

#: the largest relative difference of the two architectures' parameter counts (within 5 %)
MATCH_TOLERANCE = 0.05
#: loaded tables kept in memory per process (the oldest is dropped first)
MAX_TABLES_KEPT = 4


@dataclass(frozen=True)
class TabularOptions:
    """Options of the tabular task (ranges in brackets, checked by :meth:`validate`).

    Attributes:
        label: the label column's name (the built-in table's: ``diagnosis``; empty = that default;
            a CSV needs it named).
        mlp_hidden: width of the MLP's hidden layers; the LSTM's width follows, matched in
            parameters within 5 %. [1, 4096]
        mlp_layers: hidden layers of the MLP. [1, 8]
        token_dim: width of the LSTM's feature tokens. [1, 256]
        max_categories: most one-hot features of one text column, its ``other`` included (the
            most frequent values that occur at least twice; a ``(missing)`` feature comes on top
            where values are missing). [2, 64]
    """

    label: str = ""
    mlp_hidden: int = bounded(64, 1, 4096)
    mlp_layers: int = bounded(2, 1, 8)
    token_dim: int = bounded(8, 1, 256)
    max_categories: int = bounded(16, 2, 64)

    def validate(self) -> None:
        check_fields(self)


# ---------------------------------------------------------------------------- the task
class TabularTask(LogitClassifier, Task):
    name = "tabular"
    utility_metric = "accuracy"
    options_cls = TabularOptions
    label = "Tabular classification (your CSV)"
    record_names = ("row", "rows")
    width_knob = "mlp_hidden"
    privacy_unit = "one row"
    privacy_caveat = (
        "**What DP-SGD protects here.** A private sample is one row. The numeric columns' mean and standard deviation "
        "each model standardises with are computed from its training rows and are not noised: DP-SGD's guarantee "
        "covers the weights, not these statistics, which travel with the model.")
    sensitivity_samples = 5
    #: records are the file's data rows in order (one per row the reader kept), so the base class's
    #: index-based member ids (Task.record_indices) are these row numbers
    record_id_meaning = ("the CSV data row's 0-based number (the header and blank lines not counted; the built-in "
                         "table: scikit-learn's load_breast_cancer order)")
    datasets = ("breast_cancer", "csv")
    real_datasets = ("csv",)
    about = ("A record is one row of a table. Each model answers with its softmax vector over the label's classes; "
             "the reference is the row's label. The MLP reads the encoded row at once; the LSTM reads it as a "
             "sequence of feature tokens, one per feature, and the two are matched in parameters. Numeric columns "
             "are standardised with each model's own training rows; text columns are one-hot over their most "
             "frequent values; missing values are imputed and counted per column in the data description. The "
             "built-in table is scikit-learn's breast cancer data; give your own CSV with data_dir (a file under "
             "the data root) and label (its label column). No study measured tabular data: whether the FFNN or "
             "the RNN leaks more is what the run shown says, with its intervals.")
    presets = {
        # the built-in table: 284 rows per half
        "quick": dict(dataset="breast_cancer", n_train=140, n_eval=140, epochs=60, batch_size=32, lr=1e-3,
                      n_shadows=4, attack_epochs=(10, 30), attack_train_epochs=80, rnn=dict(lr=3e-3)),
        # a user's larger table: 5 shadows as the studies' layout, wider models
        "paper": dict(dataset="csv", n_train=2000, n_eval=1000, epochs=100, batch_size=64, lr=1e-3, n_shadows=5,
                      attack_epochs=(25, 50, 75), attack_train_epochs=80, mlp_hidden=128, token_dim=16,
                      rnn=dict(lr=3e-3)),
    }
    preset_notes = {
        "quick": "built-in breast cancer table (scikit-learn, 569 rows), no file needed; 140 members, 4 shadows, 60 "
                 "epochs; for your CSV add data_dir and label (and lower n_train, n_eval for a table under 560 rows). "
                 f"Measured times: {PRESET_TIMES}.",
        "paper": "your CSV in data_dir with at least 6,000 rows (2,000 members + 1,000 non-members a side); "
                 f"5 shadows, 100 epochs. Measured times: {PRESET_TIMES}.",
    }

    def __init__(self) -> None:
        self._loaded: dict[tuple, TaskData] = {}

    def make_config(self, arch: str, preset: str = "quick", overrides: dict[str, Any] | None = None) -> ExperimentConfig:
        """As :meth:`Task.make_config`; a ``data_dir`` given without a ``dataset`` selects ``csv``
        (``--set data_dir=FILE.csv --set label=COLUMN`` is the whole command)."""
        overrides = dict(overrides or {})
        if str(overrides.get("data_dir", "")).strip() and "dataset" not in overrides:
            overrides["dataset"] = "csv"
        return super().make_config(arch, preset, overrides)

    # ------------------------------------------------------------------ data
    def load(self, cfg: ExperimentConfig) -> TaskData:
        o: TabularOptions = cfg.options
        if cfg.dataset == "csv":
            if not cfg.data_dir.strip():
                raise DatasetNotFoundError("dataset csv needs data_dir: a CSV file with a header row, under the data "
                                           "root, and --set label=COLUMN")
            raw = read_csv_bytes(cfg.data_dir)
            digest = hashlib.sha256(raw).hexdigest()
            key: tuple = (cfg.dataset, cfg.data_dir, o.label, o.max_categories, digest)
            if key in self._loaded:
                return self._loaded[key]
            source = f"CSV file {cfg.data_dir!r}"
            header, columns = parse_csv(raw, source)
            del raw
            label = o.label
            facts: dict[str, Any] = {"file": cfg.data_dir, "sha256": digest}
        elif cfg.dataset in BUILTIN_LABELS:
            if cfg.data_dir.strip():
                raise ConfigError(f"data_dir names a file, but dataset is {cfg.dataset}: set dataset=csv (or leave "
                                  "dataset out) to read it")
            key = (cfg.dataset, "", o.label, o.max_categories, "")
            if key in self._loaded:
                return self._loaded[key]
            source = f"the built-in {cfg.dataset} table"
            header, columns = builtin_table(cfg.dataset)
            label = o.label or BUILTIN_LABELS[cfg.dataset]
            facts = {"source": "scikit-learn"}
        else:
            raise ConfigError(f"unknown tabular dataset {cfg.dataset!r}; choose one of {', '.join(self.datasets)}")
        table = encode_table(header, columns, label, source, o.max_categories)
        rec = table.records
        n = len(rec.labels)
        counts = np.bincount(rec.labels.numpy(), minlength=rec.n_classes)
        numeric = sum(c.kind == "numeric" for c in rec.columns)
        missing_text = (", missing values: " + ", ".join(f"{k} {v:,}" for k, v in list(table.missing.items())[:8])
                        + (" …" if len(table.missing) > 8 else "") if table.missing else ", no missing values")
        dropped_text = f", dropped (no values): {', '.join(table.dropped)}" if table.dropped else ""
        name = "csv" if cfg.dataset == "csv" else cfg.dataset
        description = (f"{name}: {n:,} rows, {len(rec.columns)} feature columns ({numeric} numeric, "
                       f"{len(rec.columns) - numeric} text) → {rec.n_features} features, label {label!r} with "
                       f"{rec.n_classes} classes{missing_text}{dropped_text}")
        info = {"n_records": int(n), "n_features": rec.n_features, "n_classes": rec.n_classes, "label": label,
                "classes": {c: int(k) for c, k in zip(rec.class_names, counts)},
                "columns": {c.name: c.kind for c in rec.columns}, "missing_values": dict(table.missing),
                "dropped_columns": list(table.dropped), **facts}
        data = TaskData(rec, *fixed_halves(n), description, info)
        if len(self._loaded) >= MAX_TABLES_KEPT:  # a server's worker reads one table after another: keep the last few
            self._loaded.pop(next(iter(self._loaded)))
        self._loaded[key] = data
        return data

    # ------------------------------------------------------------------ models
    def _sizes(self, cfg: ExperimentConfig, data: TaskData) -> tuple[int, int, int]:
        """(MLP parameters, the LSTM's width, LSTM parameters), the LSTM matched to the MLP.

        Raises:
            ConfigError: no LSTM width comes within :data:`MATCH_TOLERANCE` of the MLP (a tiny MLP
                on many features: the token tables alone outweigh it).
        """
        o: TabularOptions = cfg.options
        rec: TabularRecords = data.records
        mlp = mlp_param_count(rec.n_features, rec.n_classes, o.mlp_hidden, o.mlp_layers)
        hidden = match_lstm_hidden(mlp, rec.n_features, rec.n_classes, o.token_dim)
        lstm = lstm_param_count(rec.n_features, rec.n_classes, o.token_dim, hidden)
        if abs(lstm - mlp) > MATCH_TOLERANCE * mlp:
            raise ConfigError(f"no LSTM comes within 5 % of the MLP's {mlp:,} parameters on {rec.n_features} features "
                              f"(nearest: {lstm:,} at width {hidden}); raise mlp_hidden or lower token_dim")
        return mlp, hidden, lstm

    def build_model(self, cfg: ExperimentConfig, data: TaskData) -> nn.Module:
        o: TabularOptions = cfg.options
        rec: TabularRecords = data.records
        if cfg.arch == "ffnn":
            return TabularMLP(rec.n_features, rec.n_classes, o.mlp_hidden, o.mlp_layers)
        _, hidden, _ = self._sizes(cfg, data)
        return TabularLSTM(rec.n_features, rec.n_classes, o.token_dim, hidden, dp=cfg.private)

    def memory_estimate(self, cfg: ExperimentConfig, data: TaskData) -> int:
        """Peak bytes from the config and the table's shape (nothing built): weights with gradients and
        Adam state, one batch's activations (the LSTM keeps gates and states of every token; DP-SGD a
        per-sample gradient of every weight), the attack classifiers and the Responses kept.

        Raises:
            ConfigError: the LSTM cannot be matched to the MLP (:meth:`_sizes`).
        """
        o: TabularOptions = cfg.options
        rec: TabularRecords = data.records
        mlp, hidden, lstm = self._sizes(cfg, data)
        params = mlp if cfg.arch == "ffnn" else lstm
        if cfg.arch == "ffnn":
            act = rec.n_features + o.mlp_layers * o.mlp_hidden * 2
        else:
            act = rec.n_features * (3 * o.token_dim + 6 * hidden)
        per_sample = params if cfg.private else 0
        train = training_state_bytes(params) + cfg.batch_size * (act * 2 + per_sample) * FLOAT_BYTES
        attack = attack_training_bytes(cfg, n_features=2 * rec.n_classes + 2, max_steps=1)
        kept = responses_bytes(cfg, steps_per_record=1, floats_per_step=2 * rec.n_classes + 6)
        return int(max(train, attack) + kept)

    # ------------------------------------------------------------------ training
    def train(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, train_index: np.ndarray,
              on_epoch: EpochCallback, on_progress: FractionCallback,
              on_batch: BatchCallback | None = None) -> TrainingRecord:
        """Standardisation statistics from the training rows, then cross-entropy through the shared loop
        (Adam with L2 on weight matrices, seeded batches, DP-SGD when ``cfg.dp`` is on: a sample = one row)."""
        device = default_device()
        rec: TabularRecords = data.records
        x = rec.x[train_index].to(device)
        y = rec.labels[train_index].to(device)
        standardize = model.standardize
        if not isinstance(standardize, Standardize):
            raise TypeError(f"a tabular model begins with Standardize (TabularMLP, TabularLSTM), got {type(model).__name__}")
        standardize.fit(rec.x[train_index], rec.standardised)

        def batch_loss(index: torch.Tensor) -> torch.Tensor:
            idx = index.to(device)
            return F.cross_entropy(model(x[idx]), y[idx])

        return train_epochs(model, len(train_index), batch_loss, epochs=cfg.epochs, batch_size=cfg.batch_size,
                            optimizer=build_optimizer(model, cfg.lr, cfg.weight_decay), generator=seeded_generator(),
                            privacy=PrivacySettings.from_config(cfg), autocast=autocast_dtype(cfg),
                            unit="one row (a training record)",
                            on_batch=on_batch, on_epoch=on_epoch, on_progress=on_progress)

    # ------------------------------------------------------------------ audit canaries
    canary_design = ("mislabeled rows: unused rows of the victim's half, each given a seeded wrong label (uniform "
                     "over the other classes); the model fits one only by memorising it")

    def canary_data(self, cfg: ExperimentConfig, data: TaskData, index: np.ndarray,
                    rng: np.random.Generator) -> TaskData:
        """Mislabeled rows (:meth:`LogitClassifier.mislabeled`), the features kept."""
        rec: TabularRecords = data.records
        labels = self.mislabeled(data, index, rng)
        canaries = TabularRecords(rec.x, labels, rec.class_names, rec.feature_names, rec.standardised, rec.columns)
        return TaskData(canaries, data.victim_pool, data.attacker_pool, data.description, data.info)

    # ------------------------------------------------------------------ one record, for the app
    def describe_record(self, cfg: ExperimentConfig, data: TaskData, index: int, victim: VictimLoader | None = None,
                        role: str = "member") -> RecordView:
        """The row as its columns' values (numbers as read, a text column's category, ``(missing)``;
        the first 24 columns) and its label; with ``victim``, the class it answers and its probability."""
        rec: TabularRecords = data.records
        i = int(index)
        row = rec.x[i]
        lines: list[tuple[str, str]] = []
        for column in rec.columns[:24]:
            if column.kind == "numeric":
                value = float(row[column.features[0]])
                lines.append((column.name, "(missing)" if math.isnan(value) else f"{value:g}"))
            else:
                hot = int(torch.argmax(row[list(column.features)]))
                lines.append((column.name, column.categories[hot]))
        if len(rec.columns) > 24:
            lines.append(("…", f"{len(rec.columns) - 24} more columns"))
        truth = rec.class_names[int(rec.labels[i])]
        lines.append(("label", truth))
        answer = None
        if victim is not None:
            model = victim()
            probs = torch.softmax(self._logits(model, data, np.array([i])).double(), 1)[0]
            k = int(probs.argmax())
            answer = f"{rec.class_names[k]} (p = {float(probs[k]):.3f})"
        return RecordView("text", f"row {i} · label {truth} ({role})", lines=tuple(lines), answer=answer)

    def slice_labels(self, cfg: ExperimentConfig, data: TaskData, records: np.ndarray,
                     summary: dict[str, Any]) -> dict[str, list[str]]:
        """One slice per class; where the table has missing values, also rows with and without them."""
        rec: TabularRecords = data.records
        out = {"class": [f"class {rec.class_names[int(rec.labels[i])]}" for i in records]}
        numeric = rec.standardised.numpy()
        if np.isnan(rec.x.numpy()[:, numeric]).any():
            gaps = np.isnan(rec.x.numpy()[np.asarray(records, np.int64)][:, numeric]).any(1)
            out["missing values"] = ["has missing values" if g else "complete" for g in gaps]
        return out

    # ------------------------------------------------------------------ queries
    @torch.no_grad()
    def _logits(self, model: nn.Module, data: TaskData, index: np.ndarray) -> torch.Tensor:
        device = next(model.parameters()).device
        rec: TabularRecords = data.records
        out = [model(rec.x[index[i: i + 4096]].to(device)).float().cpu() for i in range(0, len(index), 4096)]
        return torch.cat(out) if out else torch.zeros(0, rec.n_classes)
