"""How long the captions corpus (core.data.corpus) takes to generate: the speed target that used to be a
test's timing assertion (tests/test_corpus.py, "3,000 captions in under 3 s"). A benchmark, not a test.

    .venv/bin/python bench/corpus_speed.py [--n 3000] [--runs 5]

Prints one JSON object: the CPU and wall seconds of each run (``time.process_time`` / ``perf_counter``),
their medians, the target and the load average (on a shared machine, label the figures "measured under load").
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: the target for ``--n`` 3,000 captions, in seconds
TARGET_S = 3.0


def main(argv=None) -> dict:
    from core.data.corpus import generate_captions

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    cpu, wall = [], []
    for seed in range(args.runs):
        c0, w0 = time.process_time(), time.perf_counter()
        generate_captions(args.n, seed=seed)
        cpu.append(round(time.process_time() - c0, 4))
        wall.append(round(time.perf_counter() - w0, 4))
    out = {"n": args.n, "cpu_s": cpu, "wall_s": wall, "median_cpu_s": statistics.median(cpu),
           "median_wall_s": statistics.median(wall), "target_s": TARGET_S,
           "meets_target": statistics.median(cpu) < TARGET_S, "loadavg": os.getloadavg()}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
