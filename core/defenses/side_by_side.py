"""The Defenses page's slider step: several Defenders' points at one spec, one lasting thread per Defender.

Most of a point's time is in torch and numpy kernels, which release the GIL, so the FFNN's and the RNN's points
overlap. Each Defender's calls run in order in its own thread (a *lane*, :func:`_run_in_order`), exactly as they
would in one; nothing is shared between the threads but read-only modules.

:meth:`PointLanes.step` answers a value whose point is known (:meth:`Defender.cached_point`) at once, any other
first by its **one-draw** point (a real point under its own key, whose draw is draw 0 of the full point), then the
full point in the same lane. A new step cancels the calls of earlier steps that no lane has started.
:meth:`Step.shown` picks what to draw: the full point if it is in, else the one-draw point. The one-draw calls
leave the registry's attacks out (``first_calls``) so the first numbers come sooner.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Hashable, Mapping, Protocol, Sequence, TypedDict, TypeVar

from core.defenses.spec import DefenseSpec

if TYPE_CHECKING:
    from core.experiment.results import DefendedPoint

K = TypeVar("K", bound=Hashable)


class PointCall(TypedDict, total=False):
    """The keyword arguments of one :meth:`Defender.point` call (and :meth:`Defender.cached_point`)."""

    utility: bool
    quantile: bool | None
    registry: bool


class PointSource(Protocol):
    """What a lane calls: a :class:`~core.defenses.defender.Defender`, or a wrapper with its two calls (the app's
    lock-holding shared Defender)."""

    def point(self, spec: DefenseSpec, attacker: str = "naive", utility: bool = True,
              quantile: bool | None = None, registry: bool = True) -> DefendedPoint: ...

    def cached_point(self, spec: DefenseSpec, attacker: str = "naive", utility: bool = True,
                     quantile: bool | None = None, registry: bool = True, disk: bool = True) -> DefendedPoint | None: ...


def _run_in_order(defender: PointSource, spec: DefenseSpec, attacker: str, calls: Sequence[PointCall],
                  out: list[Future]) -> None:
    """``defender.point(spec, attacker, **call)`` for each call into its future, in order: a cancelled future's
    call is skipped; a call that raises fails its future and the later ones (they are not run)."""
    for i, (call, future) in enumerate(zip(calls, out)):
        if not future.set_running_or_notify_cancel():
            continue  # cancelled before its turn: an abandoned step's call
        try:
            future.set_result(defender.point(spec, attacker, **call))
        except BaseException as exc:  # handed to whoever waits on it, this call's and the later ones'
            future.set_exception(exc)
            for rest in out[i + 1:]:
                if rest.set_running_or_notify_cancel():
                    rest.set_exception(exc)
            return


@dataclass
class Step(Generic[K]):
    """One slider step's points (:meth:`PointLanes.step`): per key the futures of the calls at ``spec`` (``full``)
    and, where that point was not known yet and ``spec.draws`` > 1, of the one-draw calls (``first``: the same calls,
    or the step's ``first_calls``, at one draw; computed before ``full`` in the same lane)."""

    spec: DefenseSpec
    full: dict[K, list[Future]]
    first: dict[K, list[Future]] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Every full point is in (or its call failed or was cancelled)."""
        return all(f.done() for fs in self.full.values() for f in fs)

    def pending(self) -> list[Future]:
        """The full points' futures not done yet (what a page waits on before it shows them)."""
        return [f for fs in self.full.values() for f in fs if not f.done()]

    def shown(self, key: K) -> tuple[list[Future], bool]:
        """What the page draws now for ``key``: the full points' futures where there is no one-draw stage or the
        first full point is in already, else the one-draw futures; and whether they are the one-draw ones."""
        first = self.first.get(key)
        if first is None or self.full[key][0].done():
            return self.full[key], False
        return first, True


class PointLanes:
    """Per key one lasting thread that runs its Defender's calls in order (a *lane*), every lane at once: one
    object per user session (no session queues behind another's). :meth:`step` is the Defenses page's slider
    step; :meth:`close` ends the threads (they also end once the object is collected)."""

    def __init__(self) -> None:
        self._lanes: dict[Hashable, ThreadPoolExecutor] = {}
        self._issued: list[Future] = []
        self._lock = threading.Lock()

    def submit(self, defenders: Mapping[K, PointSource], spec: DefenseSpec, calls: Sequence[PointCall],
               attacker: str = "naive") -> dict[K, list[Future]]:
        """Per key of ``defenders`` one future per call, ``defender.point(spec, attacker, **call)`` run in order in
        that key's lane after what the lane holds already; returns at once."""
        out: dict[K, list[Future]] = {}
        with self._lock:
            for key, defender in defenders.items():
                out[key] = [Future() for _ in calls]
                lane = self._lanes.get(key)
                if lane is None:
                    lane = self._lanes[key] = ThreadPoolExecutor(1, thread_name_prefix=f"defended-point-{key}")
                lane.submit(_run_in_order, defender, spec, attacker, list(calls), out[key])
                self._issued.extend(out[key])
        return out

    def cancel_queued(self) -> int:
        """Cancel every call submitted before that no lane has started; returns how many were cancelled."""
        with self._lock:
            issued, self._issued = self._issued, []
        return sum(f.cancel() for f in issued)

    def step(self, defenders: Mapping[K, PointSource], spec: DefenseSpec, calls: Sequence[PointCall],
             attacker: str = "naive", first_calls: Sequence[PointCall] | None = None) -> Step[K]:
        """A slider step to ``spec``: earlier steps' calls not started are cancelled; per key, the calls' points
        if every one is known (:meth:`Defender.cached_point`: resolved futures), else the calls queued in the key's
        lane, preceded by the one-draw calls where the first call's point is unknown and ``spec.draws`` > 1.
        ``first_calls``: the one-draw calls, one per call (default: the same calls)."""
        self.cancel_queued()
        full: dict[K, list[Future]] = {}
        first: dict[K, list[Future]] = {}
        for key, defender in defenders.items():
            try:
                known = [defender.cached_point(spec, attacker, **call) for call in calls]
            except Exception:  # noqa: BLE001 — e.g. a spec the Defender refuses: its calls raise it in their futures
                known = [None] * len(calls)
            if all(p is not None for p in known):
                full[key] = [_resolved(p) for p in known]
                continue
            if spec.draws > 1 and known[0] is None:  # the first call's point (the page's cards) computed: draw 1 first
                first.update(self.submit({key: defender}, replace(spec, draws=1), first_calls or calls, attacker))
            full.update(self.submit({key: defender}, spec, calls, attacker))
        return Step(spec, full, first)

    def close(self) -> None:
        """Cancel what was not started and end the lanes' threads once their calls under way are done."""
        self.cancel_queued()
        with self._lock:
            lanes, self._lanes = self._lanes, {}
        for lane in lanes.values():
            lane.shutdown(wait=False, cancel_futures=True)


def _resolved(value: Any) -> Future:
    f: Future = Future()
    f.set_result(value)
    return f
