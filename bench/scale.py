"""Independent trainings fanned out: the SensitivitySampler's n pairs (2n trainings) on the local,
processes and Ray executors, cold, in one run.

    .venv/bin/python bench/scale.py [--task image] [--arch ffnn] [--preset quick] [--pairs 20]
                                    [--executors local,processes,ray] [--workers N]

Each executor starts from an empty cache, so every pair trains. Printed: wall time, pairs per
minute, speedup over ``local``, and whether the distances equal the local ones (the same seeds
give the same models; threads per worker may change the last bits, so "max |Δ|" is shown too).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="image")
    parser.add_argument("--arch", default="ffnn")
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--executors", default="local,processes,ray")
    parser.add_argument("--workers", type=int, default=None, help="processes/ray workers (default: usable cores)")
    args = parser.parse_args()
    from core.experiment.cache import ArtifactCache
    from core.defenses.sensitivity import sample_sensitivity
    from core.foundations.device import configure_threads, usable_cores
    from core.experiment.executor import make_executor
    from core.tasks import get_task

    configure_threads()
    cfg = get_task(args.task).make_config(args.arch, args.preset)
    print(f"{args.task}/{args.arch}/{args.preset}: {args.pairs} pairs = {2 * args.pairs} trainings · "
          f"{usable_cores()} usable cores", flush=True)
    base = None
    for name in args.executors.split(","):
        folder = tempfile.mkdtemp(prefix="mia_scale_")
        executor = None
        try:
            executor = None if name == "local" else make_executor(name, workers=args.workers)
            t = time.perf_counter()
            est = sample_sensitivity(cfg, args.pairs, ArtifactCache(folder), executor=executor)
            wall = time.perf_counter() - t
        except Exception as exc:  # e.g. ray missing: say so and go on with the others
            print(f"{name:10} skipped: {exc}", flush=True)
            continue
        finally:
            if executor is not None:
                executor.close()
            shutil.rmtree(folder, ignore_errors=True)
        if base is None and name == "local":
            base = (wall, est.distances)
        speedup = f"{base[0] / wall:.2f}×" if base else "—"
        delta = f"{max(abs(a - b) for a, b in zip(est.distances, base[1])):.2e}" if base else "—"
        print(f"{name:10} {wall:7.1f} s  {60 * args.pairs / wall:6.1f} pairs/min  speedup {speedup}  "
              f"S = {est.sensitivity:.4g}  max |Δ distance| vs local {delta}", flush=True)


if __name__ == "__main__":
    main()
