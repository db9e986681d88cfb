"""The registry of defenses (after training, and training-time), after Opacus' accountant registry.

A mechanism is one class in one module under ``core/defenses/``: its name, label, one :class:`Parameter`
(symbol, range, grids, slider default), how it transforms the model's answers (:class:`OutputMechanism`) or its
weights (:class:`WeightMechanism`), and its guarantee. It registers itself with :func:`register`; every reader
asks :func:`get`, and an unknown name is a :class:`~core.foundations.errors.ConfigError`, never a fallback.

This module imports no torch: built-in mechanisms are named as ``module:Class`` and load on first :func:`get`,
so the CLI can list and check names before the heavy imports.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, TypeVar

from core.foundations.errors import ConfigError
from core.foundations.registry import Registry
from core.measurement.studies import StudyTable

if TYPE_CHECKING:  # types only: this module stays light (no torch) for the CLI
    import numpy as np
    import torch
    from torch import nn

    from core.experiment.results import RunSummary
    from core.measurement.responses import Responses


@dataclass(frozen=True)
class Parameter:
    """The one value a mechanism is slid along.

    Attributes:
        name: plain-ASCII name (``k``, ``sigma``) for keys and file names.
        symbol: how it is printed (``k``, ``σ``).
        low, high: the valid range; ``low_open`` excludes ``low`` itself (k > 0), ``high_open`` ``high``.
        log_scale: curves draw the value on a log axis.
        grid: the default grid — the CLI's example, the page's table rows and its "measure" button.
        slider: the page's slider stops; ``slider_default`` the value it starts at.
        curve: the values of the page's curve over the whole range (a cheap mechanism can afford more).
        hint: the slider's label.
    """

    name: str
    symbol: str
    low: float
    high: float
    low_open: bool
    log_scale: bool
    grid: tuple[float, ...]
    slider: tuple[float, ...]
    slider_default: float
    curve: tuple[float, ...]
    hint: str = ""
    high_open: bool = False

    @property
    def interval(self) -> str:
        def num(x: float) -> str:
            return "∞" if math.isinf(x) else f"{x:g}".replace("e+0", "e").replace("e+", "e")

        return f"{'(' if self.low_open else '['}{num(self.low)}, {num(self.high)}{')' if self.high_open or math.isinf(self.high) else ']'}"

    def check(self, value: Any) -> None:
        """Raise :class:`ConfigError` (one line) unless ``value`` is a finite number in range."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"{self.symbol} must be a finite number, got {value!r}")
        if (value <= self.low if self.low_open else value < self.low) or (
                value >= self.high if self.high_open else value > self.high):
            raise ConfigError(f"{self.symbol} must lie in {self.interval}, got {value!r}")


class Mechanism(ABC):
    """A post-training defense: subclass :class:`OutputMechanism` or :class:`WeightMechanism`.

    Methods receive the point's :class:`core.defenses.spec.DefenseSpec` as ``spec`` (typed ``Any`` here:
    the registry sits under the defense facade and does not import it): ``spec.value`` is the
    parameter's value; ``eta``, ``tau``, ``b``, ``delta``, ``seed`` the evaluation's settings.

    Class attributes: ``name`` (the CLI's ``--mechanism``), ``label`` (the page's radio),
    ``short`` (a word: "Dirichlet"), ``help`` (one CLI help sentence), ``parameter``,
    ``default_draws`` (the page's draws box), ``needs_sensitivity`` (its guarantee reads the
    SensitivitySampler's S, so the CLI and the page estimate it).
    """

    name: ClassVar[str]
    label: ClassVar[str]
    short: ClassVar[str]
    help: ClassVar[str] = ""
    parameter: ClassVar[Parameter]
    default_draws: ClassVar[int] = 1
    needs_sensitivity: ClassVar[bool] = False

    @abstractmethod
    def guarantee(self, spec: Any, n_classes: int, sensitivity: Any | None) -> dict[str, Any]:
        """The theoretical guarantee at ``spec``: ``{"epsilon", "delta", "gamma", "privacy_note", …}``
        (``epsilon`` None where the theory gives no number). ``sensitivity`` is the
        :class:`~core.defenses.sensitivity.SensitivityEstimate` when one was estimated."""

    def study_rows(self, task: str, arch: str) -> StudyTable | None:
        """The studies' published table for this mechanism on (task, arch), its rows keyed by value (as
        :func:`core.measurement.studies.dirichlet_rows`); None where the studies report none."""
        return None


class OutputMechanism(Mechanism):
    """A mechanism on the answers: the trained model is untouched, each output is replaced."""

    @abstractmethod
    def transform(self, responses: Responses, spec: Any, rng: np.random.Generator) -> Responses:
        """``responses`` passed through the mechanism (every step independently)."""

    @abstractmethod
    def torch_transform(self, spec: Any, generator: torch.Generator) -> Callable[[torch.Tensor], torch.Tensor]:
        """The same map on (B, m) log-probabilities inside a model's decoding or rollout loop
        (utility and output-dependent record features are measured through it)."""


class WeightMechanism(Mechanism):
    """A mechanism on the weights: the model itself changes, then answers as usual."""

    @abstractmethod
    def prepare(self, model: nn.Module, seed: int) -> Any:
        """What does not depend on the value (e.g. the GPM's noise direction z), kept by the
        Defender per (role, seed, draw) so every value of a curve moves along the same draw."""

    @abstractmethod
    def perturb(self, model: nn.Module, weights: dict[str, torch.Tensor], prepared: Any,
                spec: Any) -> nn.Module:
        """A copy of ``model`` (never ``model`` itself: the Defender keeps it for every value) with
        weights derived from ``weights`` at ``spec.value``."""


#: the built-in mechanisms: name -> "module:Class" (loaded on first use)
BUILTIN: dict[str, str] = {
    "dirichlet": "core.defenses.dirichlet:DirichletMechanism",
    "gpm": "core.defenses.gpm:GaussianPrivacyModule",
}


#: the two kinds of defense a registry holds: a post-training mechanism, a training-time defense
_Defense = TypeVar("_Defense", "Mechanism", "TrainingDefense")


def _lazy(builtin: dict[str, str]) -> dict[str, str]:
    """name -> the module whose import registers the built-in class."""
    return {name: where.split(":")[0] for name, where in builtin.items()}


def _register(registry: Registry[_Defense], builtin: dict[str, str], cls: type[_Defense], base: tuple[type, ...],
              taken_elsewhere: tuple[str, ...] = ()) -> type[_Defense]:
    """Register an instance of ``cls`` in ``registry`` under ``cls.name``: a class of the wrong
    kind, a built-in name claimed by another class or a name taken by the other kind of defense is
    refused; the same class again replaces its instance (its module was imported again)."""
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise TypeError(f"{cls!r} is not a {' or '.join(b.__name__ for b in base)}")
    where = f"{cls.__module__}:{cls.__qualname__}"
    if cls.name in builtin and builtin[cls.name] != where:
        raise ValueError(f"{registry.kind} {cls.name!r} is a built-in one ({builtin[cls.name]})")
    if cls.name in taken_elsewhere:
        raise ValueError(f"{cls.name!r} already names another kind of defense")
    known = registry.find(cls.name)
    same = known is not None and f"{type(known).__module__}:{type(known).__qualname__}" == where
    registry.register(cls.name, cls(), replace=same)  # another class under a taken name: ConfigError
    return cls


#: the mechanisms by name; the built-in ones are listed before their modules load (their module
#: registers the class on the first get), so the CLI checks ``--mechanism`` before torch loads
_MECHANISMS: Registry[Mechanism] = Registry("mechanism", lazy=_lazy(BUILTIN))
_MECHANISMS.seal()


def register(cls: type[Mechanism]) -> type[Mechanism]:
    """Register a mechanism class (usable as a decorator); another class under a taken name is an error."""
    return _register(_MECHANISMS, BUILTIN, cls, (OutputMechanism, WeightMechanism))


def unregister(name: str) -> None:
    """Remove a registered (not built-in) mechanism: tests register toy ones."""
    _MECHANISMS.unregister(name)


def names() -> tuple[str, ...]:
    """The mechanisms' names, built-in first, then in registration order (imports nothing)."""
    return _MECHANISMS.names()


def get(name: str) -> Mechanism:
    """The mechanism called ``name`` (its module imported on first use); :class:`ConfigError`
    (one line) for an unknown name."""
    return _MECHANISMS.get(name)


def all_mechanisms() -> tuple[Mechanism, ...]:
    return tuple(_MECHANISMS.values())


# ---------------------------------------------------------------------------- during training
class TrainingDefense(ABC):
    """A defense that changes how victims and shadows train: every value is its own experiment
    (:mod:`core.defenses.sweeps` runs them). One class in one module under ``core/defenses/``.

    Class attributes: ``name`` (the CLI's ``--mechanism``), ``label`` (the page's radio),
    ``parameter`` (the swept value), ``target`` (an alternative value to sweep instead, DP-SGD's
    target ε; None where there is none), ``tasks`` (the tasks it exists for; None: every task),
    ``accounted`` (its runs carry a privacy accountant's record: the page's ε views).
    """

    name: ClassVar[str]
    label: ClassVar[str]
    parameter: ClassVar[Parameter]
    target: ClassVar[Parameter | None] = None
    tasks: ClassVar[tuple[str, ...] | None] = None
    accounted: ClassVar[bool] = False

    def applies_to(self, task: str) -> bool:
        return self.tasks is None or task in self.tasks

    def parameter_of(self, target_epsilon: bool = False) -> Parameter:
        """The swept parameter (``target_epsilon``: the target one; ConfigError where there is none)."""
        if not target_epsilon:
            return self.parameter
        if self.target is None:
            raise ConfigError(f"--target-epsilon applies to {', '.join(n for n in _TRAINING.names() if _TRAINING.get(n).target)}"
                              f" only, not {self.name}")
        return self.target

    @abstractmethod
    def updates(self, value: float, target_epsilon: bool = False, max_grad_norm: float | None = None,
                delta: float | None = None) -> dict[str, Any]:
        """The config fields of one point (``ExperimentConfig.with_updates``)."""

    def baseline_updates(self) -> dict[str, Any]:
        """The fields of the undefended run the utility loss is measured against ({}: the config as it is)."""
        return {}

    def guarantee(self, run: "RunSummary") -> dict[str, Any]:
        """``epsilon``, ``delta``, ``gamma``, ``privacy_note`` (and any block of its own) of one point's run
        (:class:`core.experiment.results.RunSummary`), as JSON values of the point's layout."""
        return {"epsilon": None, "delta": None, "gamma": None,
                "privacy_note": f"{self.parameter.symbol} is a regulariser: no formal privacy guarantee"}

    def spec_extra(self, config: Any) -> dict[str, Any]:
        """What a sweep's ``spec`` records besides the values (DP-SGD: C, δ, the accountant)."""
        return {}


#: the built-in training-time defenses: name -> "module:Class" (loaded on first use)
TRAINING_BUILTIN: dict[str, str] = {
    "dpsgd": "core.defenses.dpsgd_sweep:DPSGDDefense",
    "l2": "core.defenses.l2:L2Defense",
    "clip": "core.defenses.ppo_clip:PPOClipDefense",
}
_TRAINING: Registry[TrainingDefense] = Registry("training defense", lazy=_lazy(TRAINING_BUILTIN))
_TRAINING.seal()


def register_training(cls: type[TrainingDefense]) -> type[TrainingDefense]:
    """Register a training-time defense class (usable as a decorator)."""
    return _register(_TRAINING, TRAINING_BUILTIN, cls, (TrainingDefense,), taken_elsewhere=_MECHANISMS.names())


def unregister_training(name: str) -> None:
    """Remove a registered (not built-in) training-time defense."""
    _TRAINING.unregister(name)


def training_names(task: str | None = None) -> tuple[str, ...]:
    """The training-time defenses' names (imports nothing unless ``task`` asks which apply to it)."""
    if task is None:
        return _TRAINING.names()
    return tuple(n for n in _TRAINING.names() if _TRAINING.get(n).applies_to(task))


def get_training(name: str) -> TrainingDefense:
    """The training-time defense called ``name``; :class:`ConfigError` (one line) for an unknown name."""
    return _TRAINING.get(name)