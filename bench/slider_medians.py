"""Slider step medians from ``bench/app_browser.py --slider`` outputs, with 95 % bootstrap intervals (issue 32.16).

Each argument is ``LABEL=GLOB``: the JSON files one side wrote (e.g. one per round). Per mechanism found in them
and per time (``first_numbers_s``: key press → first numbers on screen; ``step_s``: → every draw's), it prints each
side's median over all its steps with a 95 % interval (bootstrap of the median, ``--resamples`` resamples, seeded),
and, for every side after the first, the change of the median against the first side with its interval. A
benchmark reader, not a test.

    .venv/bin/python bench/slider_medians.py b847bd5='docs/bench_runs/2026-11-27-slider/*-b847bd5-*.json' \\
        829495b='docs/bench_runs/2026-11-27-slider/*-829495b-*.json'
"""
from __future__ import annotations

import argparse
import glob
import json

import numpy as np

TIMES = ("first_numbers_s", "step_s")


def steps(pattern: str) -> dict[tuple[str, str], np.ndarray]:
    """(mechanism key, time) → every step's seconds in the files matching ``pattern``."""
    out: dict[tuple[str, str], list[float]] = {}
    for path in sorted(glob.glob(pattern)):
        with open(path) as fh:
            run = json.load(fh)
        key = run["slider"]["key"]
        for time in TIMES:
            out.setdefault((key, time), []).extend(x for x in run.get(f"{key}_{time}") or [] if x is not None)
    return {k: np.asarray(v, float) for k, v in out.items()}


def median_interval(rng: np.random.Generator, values: np.ndarray, resamples: int) -> tuple[float, float]:
    meds = np.median(rng.choice(values, (resamples, len(values))), axis=1)
    return tuple(np.percentile(meds, [2.5, 97.5]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sides", nargs="+", metavar="LABEL=GLOB")
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    sides = [s.split("=", 1) for s in args.sides]
    data = {label: steps(pattern) for label, pattern in sides}
    rng = np.random.default_rng(args.seed)
    first = sides[0][0]
    for key in sorted({k for d in data.values() for k in d}):
        for label, _ in sides:
            v = data[label].get(key)
            if v is None or not len(v):
                continue
            lo, hi = median_interval(rng, v, args.resamples)
            line = f"{key[0]:15s} {key[1]:16s} {label:10s} N {len(v):3d}  median {np.median(v):.3f} [{lo:.3f}, {hi:.3f}]"
            base = data[first].get(key)
            if label != first and base is not None and len(base):
                diffs = (np.median(rng.choice(v, (args.resamples, len(v))), axis=1)
                         - np.median(rng.choice(base, (args.resamples, len(base))), axis=1))
                d_lo, d_hi = np.percentile(diffs, [2.5, 97.5])
                line += f"  change vs {first} {np.median(v) - np.median(base):+.3f} [{d_lo:+.3f}, {d_hi:+.3f}]"
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
