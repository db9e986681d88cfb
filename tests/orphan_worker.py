"""A worker for ``tests/test_processes.py``: ``python -m tests.orphan_worker FD PARENT_PID``, started by
:class:`core.foundations.processes.WorkerProcess`. It starts as the app's worker does (:func:`init_worker`
with its parent), says it is ready, then works on without reading its pipe — as a worker in the middle
of a job does, so only the parent watch can end it. Its SIGTERM handler writes ``$ORPHAN_MARK`` before
it exits: the unwinding the app's worker does, which the test looks for."""
from __future__ import annotations

import os
import signal
import sys
from multiprocessing.connection import Connection
from pathlib import Path

from core.foundations.processes import init_worker


def _unwind(signum, frame) -> None:
    Path(os.environ["ORPHAN_MARK"]).write_text("unwound")
    sys.exit(0)


def main(argv: list[str]) -> None:
    conn = Connection(int(argv[0]))
    signal.signal(signal.SIGTERM, _unwind)
    init_worker(1, int(argv[1]))
    conn.send(("ready", os.getpid()))
    while True:  # a job that never reports: each signal wakes it, SIGTERM's handler ends it
        signal.pause()


if __name__ == "__main__":
    main(sys.argv[1:])
