"""Progress reporting with stage names and an ETA, independent of any UI."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class ProgressEvent:
    """One progress update.

    Attributes:
        stage: name of the running stage ("victim (rnn)", "shadow 2/4", "attacks", ...).
        stage_fraction: fraction of this stage done (0..1).
        overall_fraction: fraction of the whole job done (0..1), stages weighted by cost.
        elapsed_s: seconds since the job started.
        eta_s: estimated seconds left (None until enough has run to estimate).
    """

    stage: str
    stage_fraction: float
    overall_fraction: float
    elapsed_s: float
    eta_s: float | None


ProgressCallback = Callable[[ProgressEvent], None]


class ProgressTracker:
    """Turns per-stage fractions into overall progress events.

    Stages are declared up-front with relative weights (expected cost); the ETA extrapolates the
    elapsed time by the overall fraction done, which is right when the weights are.
    """

    def __init__(self, stages: list[tuple[str, float]], callback: ProgressCallback | None = None):
        self.stages = stages
        self.total = sum(w for _, w in stages) or 1.0
        self.callback = callback
        self.start = time.perf_counter()
        self._done_weight = 0.0
        self._current: str | None = None
        self._min_interval = 0.1
        self._last_emit = 0.0

    def _weight(self, stage: str) -> float:
        for name, w in self.stages:
            if name == stage:
                return w
        return 0.0

    def update(self, stage: str, fraction: float, force: bool = False) -> None:
        if stage != self._current:
            self._current = stage
            force = True
        now = time.perf_counter()
        if self.callback is None or (not force and now - self._last_emit < self._min_interval):
            return
        self._last_emit = now
        fraction = min(max(fraction, 0.0), 1.0)
        overall = (self._done_weight + self._weight(stage) * fraction) / self.total
        elapsed = now - self.start
        eta = elapsed * (1 - overall) / overall if overall > 0.02 else None
        self.callback(ProgressEvent(stage, fraction, overall, elapsed, eta))

    def finish(self, stage: str) -> None:
        self.update(stage, 1.0, force=True)
        self._done_weight += self._weight(stage)
