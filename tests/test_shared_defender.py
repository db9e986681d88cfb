"""The Defenses page's Defender is one per trained config for every browser session of the server
(``ui.shared.defender_for``): two sessions stepping it at once never mix their values, lose a call under way or
evict each other's work. Threads meet on events, never on time."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from core.defenses.defender import Defender
from core.defenses.side_by_side import PointLanes
from core.defenses.spec import DefenseSpec
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import load_models
from core.tasks import get_task
from ui.shared import SharedDefender


class _WatchedLock:
    """An RLock that says (``contended``) when a caller has to wait for it."""

    def __init__(self) -> None:
        self.inner, self.contended = threading.RLock(), threading.Event()

    def acquire(self, blocking: bool = True) -> bool:
        if self.inner.acquire(blocking=False):
            return True
        if not blocking:
            return False
        self.contended.set()
        return self.inner.acquire()

    def release(self) -> None:
        self.inner.release()

    __enter__ = acquire

    def __exit__(self, *exc) -> None:
        self.release()


class _Slow:
    """A stand-in Defender whose point holds until ``go`` is set, counting how many calls are inside at once."""

    def __init__(self) -> None:
        self.inside, self.most, self.entered, self.go, self.order = 0, 0, threading.Event(), threading.Event(), []
        self.baseline = "undefended"

    def point(self, spec, attacker="naive", **call):
        self.inside += 1
        self.most = max(self.most, self.inside)
        self.order.append(spec.value)
        self.entered.set()
        self.go.wait(timeout=60)
        self.inside -= 1
        return ("point", spec.value)

    def cached_point(self, spec, attacker="naive", **call):
        return ("known", spec.value) if spec.value == 1.0 else None


def test_a_second_sessions_call_waits_for_the_first_and_a_lookup_never_waits():
    slow = _Slow()
    shared = SharedDefender(slow)
    lock = _WatchedLock()
    object.__setattr__(shared, "_lock", lock)
    assert shared.baseline == "undefended"  # plain attributes are read as they are
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(shared.point, DefenseSpec("dirichlet", 1.0))
        assert slow.entered.wait(timeout=60)
        second = pool.submit(shared.point, DefenseSpec("dirichlet", 2.0))
        assert lock.contended.wait(timeout=60)  # the second session's call waits for the lock…
        # …while a lookup answers at once, under nobody's lock
        assert shared.cached_point(DefenseSpec("dirichlet", 1.0)) == ("known", 1.0)
        assert shared.cached_point(DefenseSpec("dirichlet", 2.0)) is None
        slow.go.set()
        assert first.result(timeout=60) == ("point", 1.0) and second.result(timeout=60) == ("point", 2.0)
    assert slow.most == 1 and slow.order == [1.0, 2.0]  # one call inside at a time, in the order they came


def _numbers(point) -> dict:
    return {k: v for k, v in point.to_dict().items() if k != "timings"}


def test_two_sessions_stepping_one_defender_get_a_single_sessions_numbers(tiny_image_runs, tmp_path):
    """Two sessions (a lane each, as the page has) step the same shared Defender through interleaved values of a
    weight mechanism (whose noisy models the Defender keeps for one value only) and an output one, all at once;
    every point equals the one a Defender of its own computes, one call after the other."""
    tiny_image_runs(1)
    cfg = get_task("image").make_config("ffnn", "quick")
    shared = SharedDefender(Defender(load_models(cfg), ArtifactCache(tmp_path / "shared")))
    alone = Defender(load_models(cfg), ArtifactCache(tmp_path / "alone"))
    values = {"a": [("gpm", 0.05), ("dirichlet", 2.0)], "b": [("gpm", 0.2), ("gpm", 0.1)]}
    calls = [{"utility": False}, {"utility": True, "quantile": False}]
    start = threading.Barrier(2)
    got: dict[str, list] = {}

    def session(name: str) -> None:
        lanes = PointLanes()
        start.wait(timeout=60)
        futures = [lanes.submit({"ffnn": shared}, DefenseSpec(m, v, draws=2), calls)["ffnn"] for m, v in values[name]]
        got[name] = [[f.result(timeout=600) for f in fs] for fs in futures]
        lanes.close()

    threads = [threading.Thread(target=session, args=(n,)) for n in values]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=900)
    for name, specs in values.items():
        for (mechanism, value), points in zip(specs, got[name]):
            expected = [alone.point(DefenseSpec(mechanism, value, draws=2), "naive", **c) for c in calls]
            assert [p.value for p in points] == [value, value]
            assert [_numbers(p) for p in points] == [_numbers(p) for p in expected], (name, mechanism, value)
