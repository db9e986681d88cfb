"""Several Defenders' points at one spec computed at once, one thread per Defender.

The Defenses page shows the FFNN's and the RNN's numbers side by side: scored one after the other, a
slider step to a value not computed before would wait for the two architectures' points in turn. Each
Defender is its own object (its models, memo and cache handle), and most of a point's time is in torch
and numpy kernels, which release the GIL, so on two cores the points overlap: both in threads take less
wall time than one after the other, though more than one alone (docs/performance.md).
:func:`points_side_by_side` is one such step with threads of its own (every draw at once); the
page uses :class:`PointLanes` below. Either way each Defender's calls run in order in its own thread (one
loop, :func:`_run_in_order`), exactly as they would
in one (the same calls, on the same Defender, in the same order: the same numbers —
``tests/test_side_by_side.py``); nothing is shared between the threads but read-only modules.

:class:`PointLanes` serves a slider that must not wait for every draw: per Defender one
lasting thread (a *lane*) runs its calls in order; :meth:`PointLanes.step` answers a value whose point is known
(memoised or stored: :meth:`Defender.ready`) at once, and any other first by its **one-draw** point
(``spec`` with ``draws=1``: a real point under its own key, cached like any other; its draw is draw 0 of the
full point, since a draw's noise is seeded by (seed, draw, role) and not by the number of draws — so its
per-record scores and ε̂ detail equal the full point's, ``tests/test_side_by_side.py``), then the full point
in the same lane. A new step cancels the calls of earlier steps that no lane has started (an abandoned value's
remaining points are skipped; a call under way finishes, memoised). :meth:`Step.shown` picks what to draw first:
the full point where it is in by the time the page draws (no stand-in to replace), else the one-draw point.

A *gated* step (``step(..., gated=True)``, the page's) holds its full calls until :meth:`Step.release`: the page
releases once it has drawn draw 1's numbers, so the full point's CPU does not compete with drawing them (in the
script thread, which needs the GIL, and in the browser on the same cores). Its effect alone on when σ's first
numbers appear is small and inconclusive against an ungated page (docs/performance.md). A later step opens every
earlier gate (after cancelling the calls behind them); a gate the page never releases (it stopped before: another
page, an error) opens by itself after :data:`GATE_TIMEOUT_S`.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Hashable, Mapping, Sequence, TypeVar

from core.defenses.spec import DefenseSpec

K = TypeVar("K", bound=Hashable)

#: the longest a gated step's full calls wait for the page's :meth:`Step.release` (a page that stopped before it)
GATE_TIMEOUT_S = 10.0


def points_side_by_side(defenders: Mapping[K, Any], spec: DefenseSpec, calls: Sequence[Mapping[str, Any]],
                        attacker: str = "naive") -> dict[K, list[Future]]:
    """Per key of ``defenders`` (:class:`core.defenses.defender.Defender`), one future per entry of ``calls``:
    ``defender.point(spec, attacker, **call)``, the calls in order in that Defender's own thread, every
    Defender's thread at once. A call that raises sets its future's exception and the Defender's later calls
    are not run (their futures raise the same error). Returns at once; ``future.result()`` waits.

    The threads belong to this call (no shared pool: one session's step never queues behind another's)
    and end when their calls are done. With one Defender the calls run in a thread all the same."""
    futures: dict[K, list[Future]] = {key: [Future() for _ in calls] for key in defenders}
    pool = ThreadPoolExecutor(max_workers=max(1, len(defenders)), thread_name_prefix="defended-point")
    try:
        for key, defender in defenders.items():
            pool.submit(_run_in_order, defender, spec, attacker, list(calls), futures[key])
    finally:
        pool.shutdown(wait=False)  # the threads finish their calls, then end
    return futures


def _run_in_order(defender: Any, spec: DefenseSpec, attacker: str, calls: Sequence[Mapping[str, Any]],
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
    #: a gated step's gate (:meth:`release` opens it); None: the full calls follow the one-draw calls directly
    gate: threading.Event | None = None

    def release(self) -> None:
        """Let a gated step's full calls start (the page has drawn draw 1's numbers); nothing for another step."""
        if self.gate is not None:
            self.gate.set()

    @property
    def complete(self) -> bool:
        """Every full point is in (or its call failed or was cancelled)."""
        return all(f.done() for fs in self.full.values() for f in fs)

    def pending(self) -> list[Future]:
        """The full points' futures not done yet (what a page waits on before it shows them)."""
        return [f for fs in self.full.values() for f in fs if not f.done()]

    def shown(self, key: K) -> tuple[list[Future], bool]:
        """What the page draws now for ``key``, decided once (the lane goes on meanwhile): the full points' futures
        where there is no one-draw stage or the first full point (the cards') is in already — computed before the
        page got to draw, e.g. a cheap Dir_k point: no draw-1 stand-in to draw and then replace — else the
        one-draw futures; and whether they are the one-draw ones (the page labels those as draw 1's alone)."""
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
        self._gates: list[threading.Event] = []  # the gated steps' gates not opened by a later step yet
        self._lock = threading.Lock()

    def submit(self, defenders: Mapping[K, Any], spec: DefenseSpec, calls: Sequence[Mapping[str, Any]],
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
        """Cancel every call submitted before that no lane has started, then open the earlier steps' gates (what
        waited behind them is cancelled: the lanes go on to what comes next); returns how many were cancelled."""
        with self._lock:
            issued, self._issued = self._issued, []
            gates, self._gates = self._gates, []
        cancelled = sum(f.cancel() for f in issued)
        for gate in gates:
            gate.set()
        return cancelled

    def step(self, defenders: Mapping[K, Any], spec: DefenseSpec, calls: Sequence[Mapping[str, Any]],
             attacker: str = "naive", gated: bool = False,
             first_calls: Sequence[Mapping[str, Any]] | None = None) -> Step[K]:
        """A slider step to ``spec``: earlier steps' calls not started are cancelled; per key, the calls'
        points if every one is known (:meth:`Defender.ready`: resolved futures, nothing computed), else the calls
        at ``spec`` queued in the key's lane, preceded by the one-draw calls where the first call's point
        is not known and ``spec.draws`` > 1 (a known first point — the cards' — needs no stand-in: only the later
        calls compute, e.g. the utility of a point read from the cache). ``gated``: the full calls that follow
        one-draw calls wait for :meth:`Step.release` (see the module docstring). ``first_calls``: the one-draw
        calls, one per call (default: the same calls; the page's leave out what its draw-1 cards do not show)."""
        self.cancel_queued()
        full: dict[K, list[Future]] = {}
        first: dict[K, list[Future]] = {}
        gate = threading.Event() if gated else None
        for key, defender in defenders.items():
            try:
                known = [defender.ready(spec, attacker, **call) for call in calls]
            except Exception:  # noqa: BLE001 — e.g. a spec the Defender refuses: its calls raise it in their futures
                known = [None] * len(calls)
            if all(p is not None for p in known):
                full[key] = [_resolved(p) for p in known]
                continue
            if spec.draws > 1 and known[0] is None:  # the first call's point (the page's cards) computed: draw 1 first
                first.update(self.submit({key: defender}, replace(spec, draws=1), first_calls or calls, attacker))
                if gate is not None:
                    with self._lock:
                        self._lanes[key].submit(gate.wait, GATE_TIMEOUT_S)
            full.update(self.submit({key: defender}, spec, calls, attacker))
        if gate is not None and first:
            with self._lock:
                self._gates.append(gate)
        return Step(spec, full, first, gate if first else None)

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
