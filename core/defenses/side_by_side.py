"""Several Defenders' points at one spec computed at once, one thread per Defender (issue 32.16).

The Defenses page shows the FFNN's and the RNN's numbers side by side: a slider step to a value not
computed before scored the two architectures' points one after the other, each ~0.15 s of CPU on the
image quick runs. Each Defender is its own object (its models, memo and cache handle), and most of a
point's time is in torch and numpy kernels, which release the GIL, so on two cores the points overlap
(measured idle, σ on the image quick runs: 0.64 s for both in threads vs 0.87 s one after the other,
``bench/defender_step.py --mechanism gpm --side-by-side`` at 057c345; not the time of one). A step the page
abandons (the slider moved again) still finishes its points in these threads: their results are memoised. Each Defender's calls run in order in its own thread, exactly as they would
in one (the same calls, on the same Defender, in the same order: the same numbers —
``tests/test_side_by_side.py``); nothing is shared between the threads but read-only modules.
"""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Hashable, Mapping, Sequence, TypeVar

from core.defenses.spec import DefenseSpec

K = TypeVar("K", bound=Hashable)


def points_side_by_side(defenders: Mapping[K, Any], spec: DefenseSpec, calls: Sequence[Mapping[str, Any]],
                        attacker: str = "naive") -> dict[K, list[Future]]:
    """Per key of ``defenders`` (:class:`core.defenses.defender.Defender`), one future per entry of ``calls``:
    ``defender.point(spec, attacker, **call)``, the calls in order in that Defender's own thread, every
    Defender's thread at once. A call that raises sets its future's exception and the Defender's later calls
    are not run (their futures raise the same error). Returns at once; ``future.result()`` waits.

    The threads belong to this call (no shared pool: one session's step never queues behind another's)
    and end when their calls are done. With one Defender the calls run in a thread all the same."""
    futures: dict[K, list[Future]] = {key: [Future() for _ in calls] for key in defenders}

    def run(defender: Any, out: list[Future]) -> None:
        for i, (call, future) in enumerate(zip(calls, out)):
            try:
                future.set_result(defender.point(spec, attacker, **call))
            except BaseException as exc:  # handed to whoever waits on it, this call's and the later ones'
                for rest in out[i:]:
                    rest.set_exception(exc)
                return

    pool = ThreadPoolExecutor(max_workers=max(1, len(defenders)), thread_name_prefix="defended-point")
    try:
        for key, defender in defenders.items():
            pool.submit(run, defender, futures[key])
    finally:
        pool.shutdown(wait=False)  # the threads finish their calls, then end
    return futures
