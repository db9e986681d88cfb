"""The Defenses page's architectures computed at once (issue 32.16): :func:`core.defenses.side_by_side.points_side_by_side`
runs each Defender's calls in its own thread, all Defenders at once, and gives the numbers the calls give one after
the other."""
from __future__ import annotations

import threading

import pytest

from core.defenses.defender import Defender
from core.defenses.side_by_side import points_side_by_side
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
    for k in (0.7, 12.0, 3000.0):
        spec = DefenseSpec("dirichlet", k, draws=3)
        futures = points_side_by_side(together, spec, CALLS)
        for arch, d in sequential.items():
            expected = [d.point(spec, "naive", **call) for call in CALLS]
            got = [f.result(timeout=300) for f in futures[arch]]
            assert [_numbers(p) for p in got] == [_numbers(p) for p in expected]
            assert got[0].utility is None and got[1].utility is not None  # the fast point, then the card's


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
    futures = points_side_by_side({"ffnn": a, "rnn": b}, spec, CALLS)
    for name, fs in futures.items():
        assert [f.result(timeout=120) for f in fs] == [{"who": name, "value": 5.0, **c} for c in CALLS]
    assert a.calls == b.calls == CALLS  # each Defender's calls in the page's order


def test_a_failing_defender_fails_its_own_calls_only():
    barrier = threading.Barrier(2)
    good, bad = _Meeting("ffnn", barrier, wait_s=10.0), _Meeting("rnn", barrier, fail=True, wait_s=10.0)
    futures = points_side_by_side({"ffnn": good, "rnn": bad}, DefenseSpec("dirichlet", 5.0), CALLS)
    for f in futures["rnn"]:
        with pytest.raises(ValueError, match="rnn cannot"):
            f.result(timeout=120)
    assert bad.calls == CALLS[:1]  # its later call is not run
    # the good one met a partner for its first call only: its second waits alone, and the barrier gives up on it
    assert futures["ffnn"][0].result(timeout=120)["who"] == "ffnn"
    with pytest.raises(threading.BrokenBarrierError):
        futures["ffnn"][1].result(timeout=120)
