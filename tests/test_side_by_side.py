"""The Defenses page's architectures computed at once: :class:`core.defenses.side_by_side.PointLanes`
runs each Defender's calls in its own thread, all Defenders at once, and gives the numbers the calls give one after
the other."""
from __future__ import annotations

import threading

import pytest

from core.defenses.defender import Defender
from core.defenses.side_by_side import PointLanes
from core.defenses.spec import DefenseSpec
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import load_models
from core.experiment.results import DefendedPoint
from core.tasks import get_task

CALLS = [{"utility": False}, {"utility": True, "quantile": False}]


def _defenders(scratch) -> dict[str, Defender]:
    """The tiny image runs' FFNN and RNN Defenders, each writing its points to its own scratch cache (so no point is
    read back from another Defender's computation)."""
    task = get_task("image")
    return {arch: Defender(load_models(task.make_config(arch, "quick")), ArtifactCache(scratch / arch))
            for arch in ("ffnn", "rnn")}


def _numbers(point: DefendedPoint) -> dict:
    return {k: v for k, v in point.to_dict().items() if k != "timings"}  # wall seconds differ from run to run


def test_side_by_side_points_equal_the_points_one_after_the_other(tiny_image_runs, tmp_path):
    tiny_image_runs(1)
    sequential, together = _defenders(tmp_path / "sequential"), _defenders(tmp_path / "together")
    lanes = PointLanes()
    try:
        for k in (0.7, 12.0, 3000.0):
            spec = DefenseSpec("dirichlet", k, draws=3)
            futures = lanes.submit(together, spec, CALLS)
            for arch, d in sequential.items():
                expected = [d.point(spec, "naive", **call) for call in CALLS]
                got = [f.result(timeout=300) for f in futures[arch]]
                assert [_numbers(p) for p in got] == [_numbers(p) for p in expected]
                assert got[0].utility is None and got[1].utility is not None  # the fast point, then the card's
    finally:
        lanes.close()


class _Meeting:
    """A stand-in Defender whose every point waits until both stand-ins are inside one at the same time: run one
    after the other, the first would wait in vain (the barrier breaks after its timeout)."""

    def __init__(self, name: str, barrier: threading.Barrier, fail: bool = False, wait_s: float = 60.0):
        self.name, self.barrier, self.fail, self.wait_s, self.calls = name, barrier, fail, wait_s, []

    def point(self, spec, attacker, **call):
        self.calls.append(call)
        self.barrier.wait(timeout=self.wait_s)
        if self.fail:
            raise ValueError(f"{self.name} cannot")
        return {"who": self.name, "value": spec.value, **call}


def test_the_defenders_compute_at_the_same_time_and_in_order():
    barrier = threading.Barrier(2)
    a, b = _Meeting("ffnn", barrier), _Meeting("rnn", barrier)
    spec = DefenseSpec("dirichlet", 5.0)
    lanes = PointLanes()
    try:
        futures = lanes.submit({"ffnn": a, "rnn": b}, spec, CALLS)
        for name, fs in futures.items():
            assert [f.result(timeout=120) for f in fs] == [{"who": name, "value": 5.0, **c} for c in CALLS]
    finally:
        lanes.close()
    assert a.calls == b.calls == CALLS  # each Defender's calls in the page's order


def test_a_failing_defender_fails_its_own_calls_only():
    barrier = threading.Barrier(2)
    good, bad = _Meeting("ffnn", barrier, wait_s=10.0), _Meeting("rnn", barrier, fail=True, wait_s=10.0)
    lanes = PointLanes()
    try:
        futures = lanes.submit({"ffnn": good, "rnn": bad}, DefenseSpec("dirichlet", 5.0), CALLS)
        for f in futures["rnn"]:
            with pytest.raises(ValueError, match="rnn cannot"):
                f.result(timeout=120)
        assert bad.calls == CALLS[:1]  # its later call is not run
        # the good one met a partner for its first call only: its second can only wait alone (no partner is left to
        # come), so the test breaks the barrier rather than sit out its timeout; the call still ran, and failed on its
        # own
        assert futures["ffnn"][0].result(timeout=120)["who"] == "ffnn"
        barrier.abort()
        with pytest.raises(threading.BrokenBarrierError):
            futures["ffnn"][1].result(timeout=120)
        assert good.calls == CALLS
    finally:
        lanes.close()


# ---------------------------------------------------------------------------- the slider's lanes
def test_the_one_draw_point_is_the_full_points_first_draw_and_cached(tiny_image_runs, tmp_path):
    """The Defenses page shows a new value's one-draw point first: it is draw 0 of the full point (a draw's noise is
    seeded by its index, not by the number of draws), so its per-record scores and defended answers are the full
    point's own (ε̂ is the full point's over every draw pooled), and it is a point of its own, cached: another Defender on the cache reads it (cached_point)."""
    tiny_image_runs(1)
    d = _defenders(tmp_path / "a")["rnn"]
    for mechanism, value in (("dirichlet", 0.7), ("gpm", 0.01)):
        full = DefenseSpec(mechanism, value, draws=3)
        one = DefenseSpec(mechanism, value, draws=1)
        assert d.cached_point(one, "naive", utility=False) is None  # nothing known before: never computes
        first, whole = d.point(one, "naive", utility=False), d.point(full, "naive", utility=False)
        assert (first.draws, whole.draws) == (1, 3)
        assert first.records == whole.records and first.records["scores"]
        # ε̂: one bound over every draw pooled (the records split once): draw 0 alone bounds a third of the trials
        assert whole.epsilon_lower_bound_detail.n_bound == 3 * first.epsilon_lower_bound_detail.n_bound
        assert "3 draws pooled" in whole.epsilon_lower_bound_detail.method
        assert first.attack.accuracy_std == 0.0  # one draw: no spread over draws to claim
        again = _defenders(tmp_path / "a")["rnn"].cached_point(one, "naive", utility=False)
        assert again is not None and _numbers(again) == _numbers(first)


def test_a_step_shows_the_first_draw_then_the_full_point(tiny_image_runs, tmp_path):
    """PointLanes.step: a value not known gives the one-draw calls' points and then the full calls' points, each
    the very point Defender.point gives; a value known gives its points at once and computes nothing."""
    tiny_image_runs(1)
    lanes = PointLanes()
    try:
        sequential, stepped = _defenders(tmp_path / "sequential"), _defenders(tmp_path / "stepped")
        spec = DefenseSpec("dirichlet", 12.0, draws=3)
        step = lanes.step(stepped, spec, CALLS)
        assert set(step.first) == set(step.full) == {"ffnn", "rnn"}
        for arch, d in sequential.items():
            first = [f.result(timeout=300) for f in step.first[arch]]
            full = [f.result(timeout=300) for f in step.full[arch]]
            assert [_numbers(p) for p in first] == [_numbers(d.point(DefenseSpec("dirichlet", 12.0, draws=1),
                                                                     "naive", **c)) for c in CALLS]
            assert [_numbers(p) for p in full] == [_numbers(d.point(spec, "naive", **c)) for c in CALLS]
        assert step.complete and not step.pending()
        again = lanes.step(stepped, spec, CALLS)  # the rerun that shows the full point: known, nothing queued
        assert not again.first and again.complete
        assert [_numbers(f.result(timeout=0)) for f in again.full["rnn"]] == [_numbers(f.result()) for f in step.full["rnn"]]
        one = lanes.step(stepped, DefenseSpec("dirichlet", 5.0, draws=1), CALLS)  # one draw: nothing to show first
        assert not one.first and one.full["rnn"][1].result(timeout=300).utility is not None
    finally:
        lanes.close()


class _Gate:
    """A stand-in Defender that knows no point and computes each one only when its gate opens."""

    def __init__(self) -> None:
        self.gate, self.started, self.calls = threading.Event(), threading.Event(), []

    def cached_point(self, spec, attacker, **call):
        return None

    def point(self, spec, attacker, **call):
        self.calls.append((spec.value, spec.draws, call))
        self.started.set()
        if not self.gate.wait(timeout=120):
            raise TimeoutError("the test never opened the gate")
        return (spec.value, spec.draws)


def test_a_new_step_cancels_the_abandoned_steps_calls_not_started():
    """The user moved on while the lane computes the first value's first draw: that value's other calls are never run
    (cancelled), the one under way finishes, and the new value's calls all run."""
    d = _Gate()
    lanes = PointLanes()
    try:
        old = lanes.step({"rnn": d}, DefenseSpec("dirichlet", 5.0, draws=8), CALLS)
        assert d.started.wait(timeout=120)  # the lane is inside the old value's first call
        new = lanes.step({"rnn": d}, DefenseSpec("dirichlet", 7.5, draws=8), CALLS)
        d.gate.set()
        assert [f.result(timeout=120) for f in new.first["rnn"] + new.full["rnn"]] == [(7.5, 1)] * 2 + [(7.5, 8)] * 2
        assert old.first["rnn"][0].result(timeout=120) == (5.0, 1)  # under way when the step came: finished
        assert all(f.cancelled() for f in old.first["rnn"][1:] + old.full["rnn"])
        assert [(v, n) for v, n, _ in d.calls] == [(5.0, 1)] + [(7.5, 1)] * 2 + [(7.5, 8)] * 2
    finally:
        lanes.close()


def test_a_step_shows_draw_one_only_while_the_full_point_is_not_in():
    """Step.shown: the one-draw futures while the cards' full point is out (the gate holds every point), the full ones
    once it is in — a full point in by the time the page draws needs no draw-1 stand-in."""
    d = _Gate()
    lanes = PointLanes()
    try:
        step = lanes.step({"rnn": d}, DefenseSpec("dirichlet", 5.0, draws=8), CALLS)
        futures, one_draw = step.shown("rnn")
        assert one_draw and futures is step.first["rnn"]
        d.gate.set()
        assert [f.result(timeout=120) for f in step.full["rnn"]] == [(5.0, 8)] * 2
        futures, one_draw = step.shown("rnn")
        assert not one_draw and futures is step.full["rnn"]
        single = lanes.step({"rnn": d}, DefenseSpec("dirichlet", 5.0, draws=1), CALLS)  # one draw: no stage before
        assert single.shown("rnn") == (single.full["rnn"], False)
    finally:
        lanes.close()
