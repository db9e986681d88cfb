"""Cold and warm timings of a task's quick preset, both architectures, printed as a table.

    .venv/bin/python bench/pipeline.py [--task image] [--preset quick]

Cold = empty cache (a fresh temporary MIA_CACHE_DIR): data, victim, shadows and attacks.
Warm = the same configs again: the whole result comes from the cache.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="image")
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--archs", default="ffnn,rnn")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MIA_CACHE_DIR"] = tmp
        import torch

        from core.foundations.device import default_device
        from core.experiment.pipeline import run_experiment
        from core.tasks import get_task

        task = get_task(args.task)
        rows = []
        for arch in args.archs.split(","):
            cfg = task.make_config(arch, args.preset)
            t = time.perf_counter()
            cold = run_experiment(cfg).summary
            cold_s = time.perf_counter() - t
            t = time.perf_counter()
            warm = run_experiment(cfg).summary
            warm_s = time.perf_counter() - t
            assert warm["cache_hit"]
            rows.append((arch, cold["params"], cold_s, warm_s, cold["utility"]["train"], cold["utility"]["val"],
                         cold["attack"]["accuracy"], cold["attack"]["auc"], cold["timings"]))
        print(f"task={args.task} preset={args.preset} device={default_device()} torch threads={torch.get_num_threads()}")
        metric = cold["utility"]["metric"]
        head = f"{'arch':<5} {'params':>8} {'cold s':>7} {'warm s':>7} {metric + ' tr':>9} {metric + ' val':>9} {'atk acc':>8} {'atk AUC':>8}  stages (victim/shadows/attack s)"
        print(head)
        print("-" * len(head))
        for arch, params, cold_s, warm_s, ut, uv, acc, auc, tm in rows:
            print(f"{arch:<5} {params:>8,} {cold_s:>7.1f} {warm_s:>7.2f} {ut:>9.3f} {uv:>9.3f} {acc:>8.3f} {auc:>8.3f}  "
                  f"{tm['victim_s']:.1f}/{tm['shadows_s']:.1f}/{tm['attack_s']:.1f}")


if __name__ == "__main__":
    main()
