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
import math
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Mapping

from core.foundations.errors import ConfigError
from core.foundations.task_registry import available_tasks, get_task

#: Bump when the meaning or layout of anything stored in the cache changes.
CACHE_SCHEMA_VERSION = 4

ARCHS = ("ffnn", "rnn")

#: Fields that influence only the attack, never the training of victims and shadows.
ATTACK_ONLY_FIELDS = frozenset({"n_shadows", "attack_hidden", "attack_train_epochs", "attack_lr"})
#: Fields that are labels only and never change a number.
LABEL_FIELDS = frozenset({"preset"})
#: Fields that say how a config is orchestrated above the pipeline (core.analyses.repeats: how often it is
#: run; core.analyses.matching: where training stops), never what one run computes: left out of every hash.
REPEAT_FIELDS = frozenset({"repeats", "match_utility"})
#: Most repeats of one config (each is a full victim + shadows run)
MAX_REPEATS = 20
#: Most checkpoint epochs one config may list in ``attack_epochs``.
MAX_ATTACK_EPOCHS = 1000
#: Caps shared by the CLI and the app: values in one ``--values`` list or a page's grid, independent
#: draws of an after-training mechanism, SensitivitySampler pairs (2 trainings each).
MAX_VALUES = 100
MAX_DRAWS = 20
MAX_SENSITIVITY_PAIRS = 10_000
#: DP-SGD modes: off, a given noise multiplier σ, or a target ε (σ then found by Opacus)
DP_MODES = ("off", "sigma", "epsilon")
#: Opacus accountants a target ε may be calibrated with (RDP and PRV ε are both always reported)
DP_ACCOUNTANTS = ("rdp", "prv")
#: DP-SGD parameters: while ``dp`` is off they change nothing and are left out of the hashes
DP_FIELDS = frozenset({"dp_noise_multiplier", "dp_max_grad_norm", "dp_delta", "dp_epsilon", "dp_accountant"})
#: Where independent trainings run (core.experiment.executor): this process, one vectorised ensemble, a local
#: process pool, Ray (named here so that the CLI can check ``--executor`` without importing them)
EXECUTORS = ("local", "ensemble", "processes", "ray")
#: Training precisions: float32, or bfloat16 autocast of the training forward passes
PRECISIONS = ("float32", "bf16")


# ---------------------------------------------------------------------------- field ranges
@dataclass(frozen=True)
class Range:
    """The documented range of a numeric config field, checked by :func:`check_fields`: a careless or
    hostile value (``lr=inf``, ``n_shadows=10**9``) is refused in one line before anything is allocated.

    Attributes:
        lo, hi: the bounds.
        lo_open, hi_open: whether a bound itself is excluded.
        integer: the field holds an int (else a finite float; ints are accepted for floats).
        hi_text: how ``hi`` is written in messages and docs (e.g. ``"2**32"``).
    """

    lo: float
    hi: float
    lo_open: bool = False
    hi_open: bool = False
    integer: bool = False
    hi_text: str = ""

    def describe(self) -> str:
        """The range in interval notation, e.g. ``[1, 10000]``, ``(0, 10]``, ``[0, 2**32)``."""
        hi = self.hi_text or _num(self.hi)
        return f"{'(' if self.lo_open else '['}{_num(self.lo)}, {hi}{')' if self.hi_open else ']'}"

    def contains(self, value: Any) -> bool:
        """Whether ``value`` has the right type and lies in the range (NaN and ±inf never do)."""
        if isinstance(value, bool):
            return False
        if self.integer:
            if not isinstance(value, int):
                return False
        elif not isinstance(value, (int, float)) or not math.isfinite(value):
            return False
        above = value > self.lo if self.lo_open else value >= self.lo
        below = value < self.hi if self.hi_open else value <= self.hi
        return above and below

    def check(self, name: str, value: Any) -> None:
        """Raise :class:`ConfigError` with a one-line message unless ``value`` is in range."""
        if self.contains(value):
            return
        if self.integer:
            kind = "a positive integer" if (self.lo == 1 and not self.lo_open) else "an integer"
        else:
            kind = "a positive number" if (self.lo == 0 and self.lo_open) else "a finite number"
        raise ConfigError(f"{name} must be {kind} in {self.describe()}, got {shown(value)}")


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters: messages echo what was typed, but a
    5,000-digit number must not turn a one-line error into a page."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 5] + "…" + text[-4:]


def _num(x: float) -> str:
    """A bound as written in docs: ints with no decimals, floats in short form."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def bounded(default: Any, lo: float, hi: float, *, lo_open: bool = False, hi_open: bool = False,
            hi_text: str = "") -> Any:
    """A dataclass field whose value must lie in a :class:`Range` (int if ``default`` is an int)."""
    integer = isinstance(default, int) and not isinstance(default, bool)
    return field(default=default, metadata={"range": Range(lo, hi, lo_open, hi_open, integer, hi_text)})


def field_range(obj: Any, name: str) -> Range | None:
    """The :class:`Range` of field ``name`` of a config dataclass (class or instance), if it has one."""
    for f in fields(obj):
        if f.name == name:
            return f.metadata.get("range")
    return None


#: longest string accepted in a free-text field (labels, dataset names, folder paths)
MAX_TEXT = 4096


def check_fields(obj: Any) -> None:
    """Check every field of a config dataclass: ranged numbers against their :class:`Range`,
    booleans and strings by type (strings: at most :data:`MAX_TEXT` characters, no NUL byte,
    which the OS would refuse in a path with a traceback)."""
    for f in fields(obj):
        value = getattr(obj, f.name)
        rng = f.metadata.get("range")
        if rng is not None:
            rng.check(f.name, value)
        elif isinstance(f.default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"{f.name} must be true or false, got {shown(value)}")
        elif isinstance(f.default, str):
            if not isinstance(value, str):
                raise ConfigError(f"{f.name} must be a string, got {shown(value)}")
            if len(value) > MAX_TEXT or "\x00" in value:
                raise ConfigError(f"{f.name} must be at most {MAX_TEXT} characters without NUL bytes")



@dataclass(frozen=True)
class ExperimentConfig:
    """Everything that determines one victim-and-attack experiment.

    Every numeric field has a range (in brackets below: sanity bounds, not recommendations),
    checked by :meth:`validate` before anything is loaded; floats must be finite.

    Attributes:
        task: which task (``image``, ``translation``, ``navigation``).
        arch: ``ffnn`` (feed-forward: CNN / Transformer / MLP) or ``rnn`` (LSTM-based).
        preset: name of the preset the config started from (a label, not hashed).
        dataset: data source of the task (e.g. ``digits`` or ``cifar10`` for images).
        data_dir: local folder of a real dataset in its official layout ("" for built-in data).
        n_train: records each model (victim and every shadow) trains on: the *members*.
            [1, 1000000]; the data source must also hold them (checked when it is loaded).
        n_eval: members and non-members each in the balanced attack evaluation set. [1, 1000000]
        epochs: training epochs of victims and shadows (for navigation: PPO update rounds,
            see the task's options). [1, 10000]
        batch_size: mini-batch size of the optimiser. [1, 65536]
        lr: learning rate of Adam. (0, 10]
        weight_decay: L2 regularisation coefficient (a defense: paper 000, Fig. 7). [0, 10]
        n_shadows: shadow models trained on the attacker's disjoint data (Shokri et al.). [1, 64]
        attack_epochs: checkpoint epochs at which a separate attack is run, with shadows
            taken at the same epoch (paper 000, Fig. 4). The final epoch is always added.
            Each in [1, epochs]; at most 1000 of them.
        attack_hidden: hidden width of the attack classifier (MLP or LSTM). [1, 4096]
        attack_train_epochs: training epochs of the attack classifier. [1, 10000]
        attack_lr: learning rate of the attack classifier. (0, 10]
        seed: seeds data splits, initialisation and training. [0, 2**32)
        repeats: independent repeats of the experiment (core.analyses.repeats): repeat 0 is this config,
            repeat r > 0 the same config with a seed derived from ``seed`` and r (other splits,
            initialisation and batch order), each cached as an ordinary run; numbers are then
            reported as a mean with a 95 % interval over the repeats. Not hashed. [1, 20]
        match_utility: ``off`` (default), a number, or ``lower``: compare at matched utility by
            construction (core.analyses.matching): each architecture's victim and shadows train until the
            victim's validation utility first reaches the target (the number, or the lower of the
            two architectures' final validation utilities), then stop. Not hashed: the stopped
            runs are ordinary configs with fewer epochs.
        dp: DP-SGD (paper 000 eq. 7–8, Opacus) for victims and shadows alike: ``off``,
            ``sigma`` (noise multiplier ``dp_noise_multiplier``) or ``epsilon`` (the noise
            multiplier reaching ``dp_epsilon`` at ``dp_delta`` after all steps, found by Opacus'
            ``get_noise_multiplier`` with ``dp_accountant``).
        dp_noise_multiplier: σ, the Gaussian noise's standard deviation in units of the clip
            norm C. [0, 1000]; 0 clips without noise (no privacy).
        dp_max_grad_norm: C, each record's gradient is clipped to this L2 norm. (0, 1000000]
        dp_delta: δ of the reported (ε, δ) (the study's 1e-4). (0, 1)
        dp_epsilon: target ε of ``dp=epsilon``. (0, 1000000]
        dp_accountant: accountant calibrating σ to the target ε: ``rdp`` or ``prv``.
        precision: ``float32``, or ``bf16``: the training forward passes (and the loss) run
            under ``torch.autocast`` in bfloat16 (for GPUs with bfloat16 tensor cores; a CPU without
            a bfloat16 kernel for a layer refuses it in one line at the first step). Parameters,
            optimizer state, gradients and everything measured after training stay float32/float64.
            Image and translation only, not with DP-SGD. A training field (float32 is not hashed).
        target_weights, members: your trained model as the victim
            (:mod:`core.foundations.user_files`, docs/your_data.md): a safetensors file of its weights
            and a text file of the records it trained on (one record id a line), under the data root.
            The victim is then loaded, not trained; the shadows train with this config's recipe.
        target_weights_sha256, members_sha256: the sha256 of those files' bytes, filled in when the
            config is made (:func:`core.foundations.user_files.bind_user_files`): they, not the paths,
            enter the hashes.
        options: task-specific options (a frozen dataclass owned by the task module).

    The DP fields that change nothing in a config (all of them while ``dp`` is off; the target
    ε while σ is given, σ while ε is the target) are left out of its hashes, and δ is left out
    of the *training* hash while σ is given: it changes the reported ε, not the training.
    """

    task: str = "image"
    arch: str = "rnn"
    preset: str = "quick"
    dataset: str = "digits"
    data_dir: str = ""
    n_train: int = bounded(200, 1, 1_000_000)
    n_eval: int = bounded(200, 1, 1_000_000)
    epochs: int = bounded(30, 1, 10_000)
    batch_size: int = bounded(32, 1, 65_536)
    lr: float = bounded(1e-3, 0, 10, lo_open=True)
    weight_decay: float = bounded(0.0, 0, 10)
    n_shadows: int = bounded(4, 1, 64)
    attack_epochs: tuple[int, ...] = ()
    attack_hidden: int = bounded(64, 1, 4096)
    attack_train_epochs: int = bounded(80, 1, 10_000)
    attack_lr: float = bounded(1e-3, 0, 10, lo_open=True)
    seed: int = bounded(0, 0, 2**32, hi_open=True, hi_text="2**32")
    repeats: int = bounded(1, 1, MAX_REPEATS)
    match_utility: str = "off"
    dp: str = "off"
    dp_noise_multiplier: float = bounded(1.0, 0, 1000)
    dp_max_grad_norm: float = bounded(1.0, 0, 1_000_000, lo_open=True)
    dp_delta: float = bounded(1e-4, 0, 1, lo_open=True, hi_open=True)
    dp_epsilon: float = bounded(8.0, 0, 1_000_000, lo_open=True)
    dp_accountant: str = "rdp"
    precision: str = "float32"
    target_weights: str = ""
    members: str = ""
    target_weights_sha256: str = ""
    members_sha256: str = ""
    options: Any = field(default=None)

    #: fields with a fixed set of values (forms offer them as a choice)
    FIELD_CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"precision": PRECISIONS}

    # ------------------------------------------------------------------ validation
    def validate(self) -> "ExperimentConfig":
        """Raise :class:`ConfigError` naming the first invalid field; return self if valid (no data read)."""
        if self.task not in available_tasks():  # the task registry (light: no task module is imported)
            raise ConfigError(f"task must be one of {tuple(available_tasks())}, got {shown(self.task)}")
        if self.arch not in ARCHS:
            raise ConfigError(f"arch must be one of {ARCHS}, got {shown(self.arch)}")
        provided = tuple(getattr(get_task(self.task), "archs", ARCHS))
        if self.arch not in provided:  # a plugin with one model: say so rather than fail inside training
            raise ConfigError(f"task {self.task} provides the {' and '.join(provided)} architecture only, not "
                              f"{self.arch}: the FFNN-vs-RNN comparison is unavailable for it; use arch={provided[0]}")
        check_fields(self)
        if self.dp not in DP_MODES:
            raise ConfigError(f"dp must be one of {', '.join(DP_MODES)}, got {shown(self.dp)}")
        if self.dp_accountant not in DP_ACCOUNTANTS:
            raise ConfigError(f"dp_accountant must be one of {', '.join(DP_ACCOUNTANTS)}, got {shown(self.dp_accountant)}")
        if self.match_utility not in ("off", "lower"):
            try:
                target = float(self.match_utility)
            except ValueError:
                target = float("nan")
            if not math.isfinite(target):
                raise ConfigError(f"match_utility must be off, lower or a finite number, got {shown(self.match_utility)}")
        if self.precision not in PRECISIONS:
            raise ConfigError(f"precision must be one of {', '.join(PRECISIONS)}, got {shown(self.precision)}")
        if self.precision not in get_task(self.task).precisions:  # the task's training loop says which
            raise ConfigError(f"precision={self.precision} does not apply to {self.task}: it trains in "
                              f"{', '.join(get_task(self.task).precisions)} only")
        if self.precision != "float32" and self.private:
            raise ConfigError("precision=bf16 cannot be combined with DP-SGD: per-sample gradients are clipped in float32")
        if not isinstance(self.attack_epochs, tuple):
            raise ConfigError(f"attack_epochs must be a tuple of epochs, got {shown(self.attack_epochs)}")
        if len(self.attack_epochs) > MAX_ATTACK_EPOCHS:
            raise ConfigError(f"attack_epochs lists {len(self.attack_epochs)} epochs; at most {MAX_ATTACK_EPOCHS}")
        for e in self.attack_epochs:
            if isinstance(e, bool) or not isinstance(e, int) or not 1 <= e <= self.epochs:
                raise ConfigError(f"attack_epochs must lie in 1..epochs={self.epochs}, got {shown(e)}")
        self._validate_user_model()
        if self.options is not None and hasattr(self.options, "validate"):
            self.options.validate()
        if hasattr(self.options, "validate_for_dataset"):  # option checks that depend on the data source
            self.options.validate_for_dataset(self.dataset)
        return self

    def _validate_user_model(self) -> None:
        """A user's model as the victim (``target_weights``): both files bound to their content, and
        nothing asked of the victim's training, which happened elsewhere."""
        for path_field, digest_field in (("target_weights", "target_weights_sha256"), ("members", "members_sha256")):
            path, digest = getattr(self, path_field), getattr(self, digest_field)
            if digest and (len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest)):
                raise ConfigError(f"{digest_field} must be 64 lower-case hex digits, got {shown(digest)}")
            if digest and not path:
                raise ConfigError(f"{digest_field} is set but {path_field} names no file")
            if path and not digest:
                raise ConfigError(f"{path_field} is not bound to its content yet: make the config with the task's "
                                  f"make_config (it reads the file and records its sha256)")
        if bool(self.target_weights) != bool(self.members):
            raise ConfigError("target_weights and members go together: the weights of your trained model and the list "
                              "of the records it trained on")
        if self.target_weights:
            if self.private:
                raise ConfigError("dp applies to models the explorer trains; the victim of target_weights is loaded "
                                  "(train it with DP-SGD yourself), so leave dp off")
            if self.attack_epochs:
                raise ConfigError("attack_epochs must be empty with target_weights: a loaded model has its final "
                                  "weights only, no checkpoints")

    # ------------------------------------------------------------------ derived
    @property
    def checkpoint_epochs(self) -> tuple[int, ...]:
        """Sorted epochs at which models are snapshotted and attacked (final epoch included)."""
        return tuple(sorted(set(self.attack_epochs) | {self.epochs}))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable dict (options nested under ``options``)."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "options"}
        # sorted and unique: "2,1", "1,2" and "1,2,2" checkpoint the same epochs, so they must hash
        # (and cache) as one config; an already sorted, unique spelling is unchanged, as is its hash
        epochs = self.attack_epochs
        ints = isinstance(epochs, tuple) and all(type(e) is int for e in epochs)
        d["attack_epochs"] = sorted(set(epochs)) if ints else list(epochs)  # anything else: validate() refuses it
        d["options"] = self.option_values()
        return d

    def option_values(self) -> dict[str, Any]:
        """The task options as a plain dict ({} without options): :meth:`to_dict`'s ``options``."""
        return dataclasses.asdict(self.options) if self.options is not None else {}

    @property
    def private(self) -> bool:
        """Whether victims and shadows train with DP-SGD."""
        return self.dp != "off"

    def inert_fields(self, training: bool = False) -> frozenset[str]:
        """Fields that change nothing in this config (``training``: nothing in the trained models):
        DP fields while unused, and the default precision; left out of its hashes so that setting
        them never retrains or reruns anything."""
        # the default precision stays out of the hashes, so configs older than the field keep theirs
        precision = {"precision"} if self.precision == "float32" else set()
        if self.dp == "off":
            return DP_FIELDS | precision
        unused = precision | ({"dp_epsilon", "dp_accountant"} if self.dp == "sigma" else {"dp_noise_multiplier"})
        if training and self.dp == "sigma":
            unused.add("dp_delta")  # σ given: δ only changes the ε reported from the recorded steps
        return frozenset(unused)

    def stable_hash(self, exclude: frozenset[str] = frozenset()) -> str:
        """Content hash of the config (schema version included), stable across runs and machines.

        Args:
            exclude: field names left out, e.g. :data:`ATTACK_ONLY_FIELDS` for training keys
                (:meth:`inert_fields` are always left out).
        """
        # to_dict with the options as hashed (read off the typed options, not out of the dict)
        d = {**self.to_dict(), "options": self._hashed_options()}
        for name in LABEL_FIELDS | REPEAT_FIELDS | exclude | self.inert_fields():
            d.pop(name, None)
        # a user's model: its files' content is hashed, not where they lay; unused, the fields stay out
        if self.target_weights and not self.target_weights_sha256 or self.members and not self.members_sha256:
            raise ConfigError("target_weights / members are not bound to their content: make the config with the "
                              "task's make_config")
        for name in ("target_weights", "members"):
            d.pop(name, None)
        for name in ("target_weights_sha256", "members_sha256"):
            if not d.get(name):
                d.pop(name, None)
        payload = json.dumps({"schema": CACHE_SCHEMA_VERSION, "config": d}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(payload.encode()).hexdigest()[:20]

    def _hashed_options(self) -> dict[str, Any]:
        """:meth:`option_values` less the options' ``OMIT_AT_DEFAULT`` fields while at their default, so that
        adding an option never moves an existing hash."""
        values = self.option_values()
        defaults = {f.name: f.default for f in fields(self.options)} if self.options is not None else {}
        omitted = {name for name in getattr(self.options, "OMIT_AT_DEFAULT", ())
                   if name in values and values[name] == defaults.get(name)}
        return {k: v for k, v in values.items() if k not in omitted}

    @property
    def config_hash(self) -> str:
        """Hash of the whole experiment (the cache key of its result)."""
        return self.stable_hash()

    @property
    def training_hash(self) -> str:
        """Hash of what determines the trained victim and shadows (attack-only fields excluded)."""
        return self.stable_hash(ATTACK_ONLY_FIELDS | self.inert_fields(training=True))

    def with_updates(self, updates: Mapping[str, Any]) -> "ExperimentConfig":
        """Return a copy with ``updates`` applied; keys may name top-level or option fields.

        String values (as typed on the command line) are parsed to the field's type.
        """
        top = {f.name: f for f in fields(self)}
        opt_fields = {f.name: f for f in fields(self.options)} if self.options is not None else {}
        top_updates: dict[str, Any] = {}
        opt_updates: dict[str, Any] = {}
        for key, value in updates.items():
            if key == "task" and value != self.task and self.options is not None:
                raise ConfigError(
                    f"task cannot be changed to {shown(value)} by an update: this config's options belong to task "
                    f"{self.task!r}; start from that task instead"
                )
            if key in top and key != "options":
                top_updates[key] = _coerce(key, value, getattr(self, key))
            elif key in opt_fields:
                opt_updates[key] = _coerce(key, value, getattr(self.options, key))
            else:
                known = sorted([k for k in top if k != "options"] + list(opt_fields))
                raise ConfigError(f"unknown config key {shown(key)}; known keys: {', '.join(known)}")
        for path_field, digest_field in (("target_weights", "target_weights_sha256"), ("members", "members_sha256")):
            if path_field in top_updates and top_updates[path_field] != getattr(self, path_field) \
                    and digest_field not in top_updates:
                top_updates[digest_field] = ""  # another file: its content is read again (Task.make_config)
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
        raise ConfigError(f"invalid value for {key}: {shown(value)} (expected {type(current).__name__})") from None
    return value


def parse_values(text: str, what: str = "--values") -> list[float]:
    """``"100,10,1"`` → ``[100.0, 10.0, 1.0]``: the CLI's ``--values`` and the pages' grids. Anything
    that is not a finite number, or an empty list, is a one-line ConfigError naming ``what``."""
    values = []
    for part in str(text).split(","):
        part = part.strip()
        try:
            v = float(part)
        except ValueError:
            raise ConfigError(f"{what} expects comma-separated numbers, got {part!r}") from None
        if not math.isfinite(v):
            raise ConfigError(f"{what} must be finite numbers, got {part!r}")
        values.append(v)
    if not values:
        raise ConfigError(f"{what} is empty")
    if len(values) > MAX_VALUES:
        raise ConfigError(f"{what} lists {len(values)} values; at most {MAX_VALUES}")
    return values


def config_changes(base: ExperimentConfig, other: ExperimentConfig) -> dict[str, Any]:
    """The fields (task options flattened in) where ``other`` differs from ``base`` (the preset label
    left out), as :meth:`ExperimentConfig.to_dict` writes them: what a run changed from its preset, for the
    pages' labels and the sweep JSON."""
    a, b = base.to_dict(), other.to_dict()
    changed = {k: v for k, v in b.items() if k not in ("options", "preset") and a.get(k) != v}
    base_options = base.option_values()
    changed.update({k: v for k, v in other.option_values().items() if base_options.get(k) != v})
    return changed
