"""Experiment configuration: one frozen dataclass per experiment, hashed into a cache key.

An experiment is fully described by an :class:`ExperimentConfig` (fields shared by all tasks)
holding a task-specific options dataclass (``options``). Both are frozen, so a config can be
used as a dictionary key and its hash never changes after construction.

The cache key of anything derived from a config is ``sha256(schema version + canonical JSON of
the fields that influence it)``. Fields that only steer the attack (``n_shadows``, the attack
classifier's hyper-parameters) are left out of the key of trained models, so changing them
re-uses the trained victim and shadows.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from .errors import ConfigError

#: Bump when the meaning or layout of anything stored in the cache changes.
CACHE_SCHEMA_VERSION = 2

TASKS = ("image", "translation", "navigation")
ARCHS = ("ffnn", "rnn")

#: Fields that influence only the attack, never the training of victims and shadows.
ATTACK_ONLY_FIELDS = frozenset({"n_shadows", "attack_hidden", "attack_train_epochs", "attack_lr"})
#: Fields that are labels only and never change a number.
LABEL_FIELDS = frozenset({"preset"})


@dataclass(frozen=True)
class ExperimentConfig:
    """Everything that determines one victim-and-attack experiment.

    Attributes:
        task: which task (``image``, ``translation``, ``navigation``).
        arch: ``ffnn`` (feed-forward: CNN / Transformer / MLP) or ``rnn`` (LSTM-based).
        preset: name of the preset the config started from (a label, not hashed).
        dataset: data source of the task (e.g. ``digits`` or ``cifar10`` for images).
        data_dir: local folder of a real dataset in its official layout ("" for built-in data).
        n_train: records each model (victim and every shadow) trains on: the *members*.
        n_eval: members and non-members each in the balanced attack evaluation set.
        epochs: training epochs of victims and shadows (for navigation: PPO update rounds,
            see the task's options).
        batch_size: mini-batch size of the optimiser.
        lr: learning rate of Adam.
        weight_decay: L2 regularisation coefficient (a defense: paper 000, Fig. 7).
        n_shadows: shadow models trained on the attacker's disjoint data (Shokri et al.).
        attack_epochs: checkpoint epochs at which a separate attack is run, with shadows
            taken at the same epoch (paper 000, Fig. 4). The final epoch is always added.
        attack_hidden: hidden width of the attack classifier (MLP or LSTM).
        attack_train_epochs: training epochs of the attack classifier.
        attack_lr: learning rate of the attack classifier.
        seed: seeds data splits, initialisation and training.
        options: task-specific options (a frozen dataclass owned by the task module).
    """

    task: str = "image"
    arch: str = "rnn"
    preset: str = "quick"
    dataset: str = "digits"
    data_dir: str = ""
    n_train: int = 200
    n_eval: int = 200
    epochs: int = 30
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.0
    n_shadows: int = 4
    attack_epochs: tuple[int, ...] = ()
    attack_hidden: int = 64
    attack_train_epochs: int = 80
    attack_lr: float = 1e-3
    seed: int = 0
    options: Any = field(default=None)

    # ------------------------------------------------------------------ validation
    def validate(self) -> "ExperimentConfig":
        """Raise :class:`ConfigError` naming the first invalid field; return self if valid."""
        if self.task not in TASKS:
            raise ConfigError(f"task must be one of {TASKS}, got {self.task!r}")
        if self.arch not in ARCHS:
            raise ConfigError(f"arch must be one of {ARCHS}, got {self.arch!r}")
        positive_ints = ("n_train", "n_eval", "epochs", "batch_size", "attack_hidden", "attack_train_epochs")
        for name in positive_ints:
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.n_shadows, int) or self.n_shadows < 1:
            raise ConfigError(f"n_shadows must be at least 1, got {self.n_shadows!r}")
        for name in ("lr", "attack_lr"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and value > 0):
                raise ConfigError(f"{name} must be a positive number, got {value!r}")
        if not (isinstance(self.weight_decay, (int, float)) and self.weight_decay >= 0):
            raise ConfigError(f"weight_decay must be >= 0, got {self.weight_decay!r}")
        for e in self.attack_epochs:
            if not isinstance(e, int) or not 1 <= e <= self.epochs:
                raise ConfigError(f"attack_epochs must lie in 1..epochs={self.epochs}, got {e!r}")
        if self.options is not None and hasattr(self.options, "validate"):
            self.options.validate()
        return self

    # ------------------------------------------------------------------ derived
    @property
    def checkpoint_epochs(self) -> tuple[int, ...]:
        """Sorted epochs at which models are snapshotted and attacked (final epoch included)."""
        return tuple(sorted(set(self.attack_epochs) | {self.epochs}))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict (options nested under ``options``)."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "options"}
        d["attack_epochs"] = list(self.attack_epochs)
        d["options"] = dataclasses.asdict(self.options) if self.options is not None else {}
        return d

    def stable_hash(self, exclude: frozenset[str] = frozenset()) -> str:
        """Content hash of the config (schema version included), stable across runs and machines.

        Args:
            exclude: field names left out, e.g. :data:`ATTACK_ONLY_FIELDS` for training keys.
        """
        d = self.to_dict()
        for name in LABEL_FIELDS | exclude:
            d.pop(name, None)
        payload = json.dumps({"schema": CACHE_SCHEMA_VERSION, "config": d}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(payload.encode()).hexdigest()[:20]

    @property
    def config_hash(self) -> str:
        """Hash of the whole experiment (the cache key of its result)."""
        return self.stable_hash()

    @property
    def training_hash(self) -> str:
        """Hash of what determines the trained victim and shadows (attack-only fields excluded)."""
        return self.stable_hash(ATTACK_ONLY_FIELDS)

    def with_updates(self, updates: Mapping[str, Any]) -> "ExperimentConfig":
        """Return a copy with ``updates`` applied; keys may name top-level or option fields.

        String values (as typed on the command line) are parsed to the field's type.
        """
        top = {f.name: f for f in fields(self)}
        opt_fields = {f.name: f for f in fields(self.options)} if self.options is not None else {}
        top_updates: dict[str, Any] = {}
        opt_updates: dict[str, Any] = {}
        for key, value in updates.items():
            if key in top and key != "options":
                top_updates[key] = _coerce(key, value, getattr(self, key))
            elif key in opt_fields:
                opt_updates[key] = _coerce(key, value, getattr(self.options, key))
            else:
                known = sorted([k for k in top if k != "options"] + list(opt_fields))
                raise ConfigError(f"unknown config key {key!r}; known keys: {', '.join(known)}")
        new = dataclasses.replace(self, **top_updates)
        if opt_updates:
            new = dataclasses.replace(new, options=dataclasses.replace(self.options, **opt_updates))
        return new


def _coerce(key: str, value: Any, current: Any) -> Any:
    """Parse ``value`` to the type of ``current`` (the field's present value)."""
    if not isinstance(value, str) or isinstance(current, str):
        if isinstance(current, tuple) and isinstance(value, list):
            return tuple(value)
        if isinstance(current, float) and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        return value
    try:
        if isinstance(current, bool):
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if isinstance(current, int):
            return int(value)
        if isinstance(current, float):
            return float(value)
        if isinstance(current, tuple):
            return tuple(int(v) for v in value.replace(" ", "").split(",") if v)
    except ValueError:
        raise ConfigError(f"invalid value for {key}: {value!r} (expected {type(current).__name__})") from None
    return value
