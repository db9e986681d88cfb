"""The attack registry: one registration per attack, read by the pipeline, the CLI's JSON, the attacks
table, the report and the Defenses page.

An :class:`AttackEntry` gives the names, the tasks (and why not the others), what the attacker ``needs``, and
a ``factory``. Two stages:

* ``responses``: an :class:`~core.attacks.shadow_attacks.Attack` fitted on the shadows' Responses at every
  checkpoint (cached under (config hash, epoch, tag, name): a name never changes) and scored on any
  Responses, defended or not. ``factory(training)`` → Attack.
* ``models``: an attack that needs more than the victim's stored answers. ``factory()`` → a
  :class:`ModelAttack`: ``fit(models, cache)`` once (False, with a reason in ``skipped``, when the run cannot
  support it), then ``outcomes(query)`` on a :class:`VictimQuery`, undefended or defended.

Each attack registers itself beside its definition; a plugin's :func:`register` joins every later run
(:func:`unregister` removes it; a built-in is refused). Registration also supplies the display names
(:data:`core.foundations.names.ATTACK_NAMES`, ``ATTACK_SHORT``) unless set there.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, TypeAlias

import numpy as np

from core.foundations.errors import ConfigError
from core.foundations.names import ATTACK_NAMES, ATTACK_SHORT
from core.foundations.registry import Registry
from core.measurement.responses import Responses

#: :class:`core.attacks.shadow_attacks.Attack`, ``AttackOutcome`` and ``AttackTraining`` (not imported: that
#: module imports this one to register its attacks)
Attack: TypeAlias = Any
AttackOutcome: TypeAlias = Any
AttackTraining: TypeAlias = Any

STAGES = ("responses", "models")
#: what the attacker needs: shadow models of the target's recipe; reference models on the attacked
#: records; a pool of known non-members it queries the target on; the predicted labels alone
NEEDS = ("shadows", "references", "non-members", "labels")


class VictimQuery(Protocol):
    """The (possibly defended) victim as a models-stage attack may query it."""

    #: the attacked records (the balanced evaluation set) and their membership
    eval_index: np.ndarray
    membership: np.ndarray

    def eval_responses(self) -> Responses:
        """The victim's answers on :attr:`eval_index`."""

    def respond(self, index: np.ndarray) -> Responses:
        """The victim's answers on any records (e.g. the attacker's non-member pool)."""

    def label_queries(self, index: np.ndarray, n: int) -> np.ndarray:
        """(N, n) whether the predicted label is right on each of n augmented queries of each record."""

    def augmented_confidences(self, index: np.ndarray, n: int) -> np.ndarray:
        """(N, n) LiRA's φ of the true label on each of the same n augmented queries of each record."""


class ModelAttack(Protocol):
    """A fitted models-stage attack: ``fit`` on trained models, then ``outcomes`` on any victim query."""

    #: the result names it produces (one attack, or a family fitted together such as LiRA and RMIA)
    names: tuple[str, ...]
    #: why it did not run on this run (empty when it did)
    skipped: str
    #: seconds ``fit`` took (the run's timings report it)
    fit_s: float

    def fit(self, models: Any, cache: Any) -> bool: ...

    def outcomes(self, query: VictimQuery) -> dict[str, AttackOutcome]: ...


@dataclass(frozen=True)
class AttackEntry:
    """One registered attack (see the module docstring)."""

    name: str
    label: str
    short: str
    needs: str
    stage: str
    factory: Callable[..., Any]
    #: the tasks it runs on (None: every task but those in ``not_for``)
    tasks: tuple[str, ...] | None = None
    #: (task, why it does not run there)
    not_for: tuple[tuple[str, str], ...] = ()
    #: the result names it adds to a summary (default: its name)
    outputs: tuple[str, ...] = ()
    #: how the Defender scores it: ``registry`` (through a defended :class:`VictimQuery`),
    #: ``reference`` (its own naive and adaptive path for LiRA/RMIA), ``none`` (not under defenses)
    under_defenses: str = "registry"
    #: the paper it implements
    cite: str = ""
    #: responses stage: why it cannot run on a run's Responses (None when it can), e.g. a per-step
    #: statistic missing from Responses cached before it was kept; the run lists it in ``attacks_not_run``
    requires: Callable[[Responses], str | None] | None = None

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"attack {self.name}: stage must be one of {STAGES}, got {self.stage!r}")
        if self.needs not in NEEDS:
            raise ValueError(f"attack {self.name}: needs must be one of {NEEDS}, got {self.needs!r}")

    @property
    def names(self) -> tuple[str, ...]:
        return self.outputs or (self.name,)

    def why_not(self, task: str) -> str | None:
        """None when the attack runs on ``task``, else the reason it does not."""
        reasons = dict(self.not_for)
        if task in reasons:
            return reasons[task]
        if self.tasks is not None and task not in self.tasks:
            return f"runs on the {', '.join(self.tasks)} task{'s' if len(self.tasks) > 1 else ''} only"
        return None

    def applies_to(self, task: str) -> bool:
        return self.why_not(task) is None


_REGISTRY: Registry[AttackEntry] = Registry("attack")


def register(entry: AttackEntry) -> AttackEntry:
    """Add ``entry`` (a name or result name already taken is a ConfigError: names key cached fits)."""
    # a result name may not clash either: both key cached fits and the summary's attacks
    taken = {n: e.name for e in _REGISTRY.values() for n in e.names}
    clash = [n for n in (entry.name, *entry.names) if n in taken]
    if clash:
        raise ConfigError(f"attack name {clash[0]!r} is taken (by {taken[clash[0]]!r})")
    _REGISTRY.register(entry.name, entry)
    for n in entry.names:
        ATTACK_NAMES.setdefault(n, entry.label if n == entry.name else n)
        ATTACK_SHORT.setdefault(n, entry.short if n == entry.name else n)
    return entry


def unregister(name: str) -> None:
    """Remove a registration (a test's toy attack); display names set by it are removed too."""
    entry = _REGISTRY.unregister(name)  # a built-in (sealed by core.attacks): ValueError
    if entry is not None:
        for n in entry.names:
            if ATTACK_NAMES.get(n) in (entry.label, n):
                ATTACK_NAMES.pop(n, None)
            if ATTACK_SHORT.get(n) in (entry.short, n):
                ATTACK_SHORT.pop(n, None)


def entries(task: str | None = None, stage: str | None = None) -> list[AttackEntry]:
    """Registered attacks in registration order, those running on ``task`` and of ``stage``."""
    return [e for e in _REGISTRY.values()
            if (task is None or e.applies_to(task)) and (stage is None or e.stage == stage)]


def get(name: str) -> AttackEntry:
    """The registration of ``name``; an unknown name: ConfigError "unknown attack 'x'; known: …"."""
    return _REGISTRY.get(name)


def responses_attacks(task: str, training: AttackTraining, responses: Responses | None = None) -> list[Attack]:
    """Fresh (unfitted) responses-stage attacks of ``task``, in registration order; with ``responses``,
    those that can run on them only (:func:`unavailable`)."""
    skip = unavailable(task, responses) if responses is not None else {}
    return [e.factory(training) for e in entries(task, "responses") if e.name not in skip]


def unavailable(task: str, responses: Responses) -> dict[str, str]:
    """{attack: why not} for the responses-stage attacks of ``task`` that cannot run on ``responses``."""
    out = {}
    for e in entries(task, "responses"):
        why = e.requires(responses) if e.requires is not None else None
        if why:
            out[e.name] = why
    return out


def seal_builtins() -> None:
    """Mark every attack registered so far as built-in (:func:`unregister` refuses them); called by
    the modules that import the built-in attacks, after importing them."""
    _REGISTRY.seal()
