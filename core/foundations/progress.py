"""Progress reporting with stage names and an ETA from the measured rate, independent of any UI."""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class ProgressEvent:
    """One progress update.

    Attributes:
        stage: name of the running stage ("victim (rnn)", "shadow 2/4", "attacks", ...).
        stage_fraction: fraction of this stage done (0..1).
        overall_fraction: fraction of the whole job done (0..1), stages weighted by expected cost.
        elapsed_s: seconds since the job started.
        eta_s: estimated seconds left (None until enough has run to estimate).
    """

    stage: str
    stage_fraction: float
    overall_fraction: float
    elapsed_s: float
    eta_s: float | None


ProgressCallback = Callable[[ProgressEvent], None]


def stage_kind(stage: str) -> str:
    """Stages of one kind take about as long as each other: ``"shadow 2/4"`` → ``"shadow"``."""
    return re.split(r"[\s(]", stage.strip(), maxsplit=1)[0]


class ProgressTracker:
    """Turns per-stage fractions into overall progress events with a measured-rate ETA.

    Stages are declared up-front with relative weights (expected cost). The progress bar
    (``overall_fraction``) follows the weights; the ETA does not trust them, it extrapolates
    what was measured:

    * the running stage: its own elapsed time over its fraction done, blended (by that fraction)
      with the duration expected before it started — so the first noisy percent does not swing it;
    * a later stage: the measured duration of a finished stage of the same kind (``shadow 2/4``
      takes what ``shadow 1/4`` took) or, while the first of its kind runs, that one's projection;
      else the measured seconds per unit of weight of every finished stage (or, before any
      finished, of the running stage's projection).

    Stages that finish without ever reporting an intermediate fraction (loaded from the cache)
    are left out of the measured rates, so a cached victim does not make the shadows look free.
    """

    #: the running stage's own projection is used once it has run this long (s) or this far
    MIN_STAGE_S = 0.5
    MIN_STAGE_FRACTION = 0.02

    def __init__(self, stages: list[tuple[str, float]], callback: ProgressCallback | None = None,
                 clock: Callable[[], float] = time.perf_counter):
        self.stages = stages
        self.total = sum(w for _, w in stages) or 1.0
        self.callback = callback
        self.clock = clock
        self.start = clock()
        self._done_weight = 0.0
        self._current: str | None = None
        self._stage_start = self.start
        self._boundary: float | None = self.start  # when the last stage finished: the next one starts then
        self._moved = False  # the running stage reported an intermediate fraction (it really computes)
        self._finished: set[str] = set()
        self._measured: dict[str, tuple[float, float]] = {}  # finished working stage -> (weight, seconds)
        self._min_interval = 0.1
        self._last_emit = float("-inf")
        self._parallel_start: float | None = None  # first report of stages running side by side
        self._parallel_done0 = 0.0
        self._overall = 0.0  # the bar's last figure: never reported lower (sums taken in another order differ in the last bit)

    def _weight(self, stage: str) -> float:
        for name, w in self.stages:
            if name == stage:
                return w
        return 0.0

    def _seconds_per_weight(self) -> float | None:
        weight = sum(w for w, _ in self._measured.values())
        seconds = sum(s for _, s in self._measured.values())
        return seconds / weight if weight > 0 else None

    def _expected(self, stage: str, fallback_spw: float | None, running: tuple[str, float] | None = None) -> float | None:
        """Expected duration of a stage that has not run, from what was measured: finished stages of
        its kind, else the running stage of its kind (``running`` = (name, projected total)), else
        seconds per unit of weight."""
        w = self._weight(stage)
        same = [(mw, s) for name, (mw, s) in self._measured.items() if stage_kind(name) == stage_kind(stage)]
        if same and sum(mw for mw, _ in same) > 0:
            return w * sum(s for _, s in same) / sum(mw for mw, _ in same)
        if running is not None and stage_kind(running[0]) == stage_kind(stage) and self._weight(running[0]) > 0:
            return w * running[1] / self._weight(running[0])
        spw = self._seconds_per_weight()
        spw = spw if spw is not None else fallback_spw
        return None if spw is None else w * spw

    def _eta(self, stage: str, fraction: float, now: float) -> float | None:
        if fraction >= 1.0 and all(name in self._finished or name == stage for name, _ in self.stages):
            return 0.0
        in_stage = now - self._stage_start
        projected = None  # the running stage's total duration, from its own rate
        if self._moved and fraction >= self.MIN_STAGE_FRACTION and in_stage >= self.MIN_STAGE_S:
            projected = in_stage / fraction
        w = self._weight(stage)
        own_spw = projected / w if projected is not None and w > 0 else None
        prior = self._expected(stage, None)
        total: float | None
        if projected is not None and prior is not None:
            total = fraction * projected + (1 - fraction) * max(prior, in_stage)
        else:
            total = projected if projected is not None else prior
        if total is None:
            return None
        left = max(total - in_stage, 0.0)
        for name, _ in self.stages:
            if name == stage or name in self._finished:
                continue
            expected = self._expected(name, own_spw, (stage, total) if projected is not None else None)
            if expected is None:
                return None
            left += expected
        return left

    def update(self, stage: str, fraction: float, force: bool = False) -> None:
        if stage in self._finished:  # e.g. a model a worker trained, reported again as it loads
            return
        now = self.clock()
        if stage != self._current:
            self._begin(stage, now)
            force = True
        fraction = min(max(fraction, 0.0), 1.0)
        if 0.0 < fraction < 1.0:
            self._moved = True
        if self.callback is None or (not force and now - self._last_emit < self._min_interval):
            return
        self._last_emit = now
        overall = self._overall = max(self._overall, min((self._done_weight + self._weight(stage) * fraction) / self.total, 1.0))
        self.callback(ProgressEvent(stage, fraction, overall, now - self.start, self._eta(stage, fraction, now)))

    def _begin(self, stage: str, now: float) -> None:
        """A new stage: it began when the previous one finished (its first report comes later)."""
        self._current, self._moved = stage, False
        self._stage_start = self._boundary if self._boundary is not None else now
        self._boundary = None

    def finish(self, stage: str) -> None:
        if stage in self._finished:  # e.g. a model a worker trained, then loaded from the cache
            return
        now = self.clock()
        if stage != self._current:
            self._begin(stage, now)
        if self._moved:
            self._measured[stage] = (self._weight(stage), now - self._stage_start)
        self.update(stage, 1.0, force=True)
        self._finished.add(stage)
        self._done_weight += self._weight(stage)
        self._boundary = now

    # ------------------------------------------------------------------ stages running side by side
    def update_parallel(self, running: dict[str, float], force: bool = False, finished: str | None = None) -> None:
        """Progress of stages that run at the same time (trainings on worker processes):
        ``running`` maps each unfinished running stage to its fraction. The bar counts every
        running stage's share; the ETA divides the weight still to do (every unfinished stage) by
        the weight per second done since the first parallel report."""
        now = self.clock()
        if self._parallel_start is None:
            self._parallel_start, self._parallel_done0 = now, self._done_weight
        if self.callback is None or (not force and now - self._last_emit < self._min_interval):
            return
        self._last_emit = now
        names = [name for name, _ in self.stages if name in running] or sorted(running)
        moving = sum(self._weight(s) * min(max(f, 0.0), 1.0) for s, f in running.items())
        done = self._done_weight + moving
        overall = self._overall = max(self._overall, min(done / self.total, 1.0))
        elapsed = now - (self._parallel_start or now)
        rate = (done - self._parallel_done0) / elapsed if elapsed >= self.MIN_STAGE_S else 0.0
        left = sum(w for name, w in self.stages if name not in self._finished) - moving
        eta = max(left, 0.0) / rate if rate > 0 else None
        if names:
            label = names[0] if len(names) == 1 else f"{names[0]} + {len(names) - 1} more"
            fraction = sum(running.values()) / len(running)
        else:  # between reports: the stage that just finished, else the next one starting
            label, fraction = (finished, 1.0) if finished else ("next model", 0.0)
        self.callback(ProgressEvent(label, fraction, overall, now - self.start, eta))

    def finish_parallel(self, stage: str, running: dict[str, float]) -> None:
        """``stage`` (one of several running side by side) is done; report the others. Its duration
        is not a measured rate: it shared the machine with the others."""
        if stage in self._finished:
            return
        self._finished.add(stage)
        self._done_weight += self._weight(stage)
        running.pop(stage, None)
        self.update_parallel(running, force=True, finished=stage)
