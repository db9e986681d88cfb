"""The CLI's progress (:class:`Progress`): a bar on a terminal, lines otherwise, nothing with ``--quiet``; every
command that reports progress prints through it. Light: tqdm loads with the first bar."""
from __future__ import annotations

import sys
from typing import Any

from core.cli.common import CtrlC


class Progress:
    """The CLI's progress: a bar (tqdm) where stderr is a terminal, plain lines where it is not (CI, a pipe, a
    log file: a bar's carriage returns would fill it with partial lines), nothing with ``--quiet``. Each report
    also checks for a pending Ctrl-C (:meth:`CtrlC.check`). Call it with a
    :class:`core.foundations.progress.ProgressEvent` (``progress(ev)``), or :meth:`stage` with a stage's name and
    fraction; :meth:`say` prints a line without breaking the bar; :meth:`close` ends the bar."""

    def __init__(self, quiet: bool = False, stream: Any = None) -> None:
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self._bar: Any = None
        self._last_stage: str | None = None
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())

    #: the bar's resolution (steps of the whole run)
    STEPS = 1000

    def _update(self, overall: float, text: str) -> None:
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=self.STEPS, file=self.stream, unit="‰", dynamic_ncols=True, leave=True,
                             bar_format="{l_bar}{bar}| {elapsed}<{remaining}")
        self._bar.set_description_str(text, refresh=False)
        self._bar.update(max(0, min(self.STEPS, round(overall * self.STEPS))) - self._bar.n)

    def __call__(self, ev: Any) -> None:
        CtrlC.check()
        if self.quiet:
            return
        if self.tty:
            self._update(ev.overall_fraction, f"{ev.stage}: {ev.stage_fraction:.0%}")
            return
        eta = f", ~{ev.eta_s:.0f}s left" if ev.eta_s is not None else ""
        print(f"[{ev.overall_fraction:6.1%}] {ev.stage}: {ev.stage_fraction:.0%}{eta}", file=self.stream)

    def stage(self, stage: str, fraction: float, prefix: str = "analyze") -> None:
        """A stage and its fraction (``analyze``): the bar follows the fraction; as lines, one per new stage."""
        CtrlC.check()
        if self.quiet:
            return
        if self.tty:
            self._update(fraction, stage)
        elif stage != self._last_stage or fraction >= 1.0:
            print(f"[{prefix}] {stage}", file=self.stream)
        self._last_stage = stage

    def say(self, text: str) -> None:
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.write(text, file=self.stream)
        else:
            print(text, file=self.stream)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
