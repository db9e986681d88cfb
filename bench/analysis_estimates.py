"""Issue 32.13: the Analyses page's long analyses (memorization, overtraining, mismatch) carry a time estimate on
their buttons, scaled from the cached run's own measured timings (core.analyses.analysis.time_estimate). This runs
each of them for real, one architecture at a time, and prints the estimate beside the measured wall time.

    MIA_CACHE_DIR=<a copy of a cache holding the runs> python bench/analysis_estimates.py [--task image] [--preset quick]

The ratios it prints bound core.analyses.analysis.MEASURED_RATIO (the range the page widens its estimate by).
It trains (results are cached: run it on a copy of the cache whose analyses are not computed yet). Report the
machine's load (`uptime`) with the numbers: on a shared machine both sides scale with it.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.analyses import analysis
from core.experiment.pipeline import cached_summary
from core.experiment.results import RunSummary
from core.tasks import get_task


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="image")
    ap.add_argument("--preset", default="quick")
    ap.add_argument("--archs", default="ffnn,rnn")
    ap.add_argument("--analyses", default=",".join(analysis.ESTIMATED))
    args = ap.parse_args()
    print(f"load before: {os.getloadavg()}")
    for arch in args.archs.split(","):
        cfg = get_task(args.task).make_config(arch, args.preset)
        summary = cached_summary(cfg)
        if summary is None:
            raise SystemExit(f"{arch}: no cached run of {args.task} {args.preset}; run `python -m core run` first")
        for name in args.analyses.split(","):
            estimate = analysis.time_estimate(name, RunSummary.from_dict(summary))
            t = time.perf_counter()
            getattr(analysis, name)(cfg)
            took = time.perf_counter() - t
            print(f"{args.task} {args.preset} {arch:4s} {name:12s} estimate {estimate:7.1f} s  measured {took:7.1f} s  "
                  f"ratio {took / estimate:5.2f}  (load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
