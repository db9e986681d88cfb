"""Benchmark: one config's victim and shadows trained by each executor, cold cache each time.

    .venv/bin/python bench/executor.py [--task image] [--preset quick] [--executors local,processes,ray]
                                        [--workers N] [--set key=value ...]

Prints wall time per executor and whether the models equal the local ones (same weights →
same numbers). On a 2-core machine the pool cannot beat the local run by much; the figure that
matters is on a many-core machine or a Ray cluster.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from core.cli.common import parse_sets  # noqa: E402
from core.experiment.cache import ArtifactCache  # noqa: E402
from core.experiment.executor import make_executor  # noqa: E402
from core.experiment.pipeline import trained_models  # noqa: E402
from core.foundations.device import default_device, usable_cores  # noqa: E402
from core.tasks import get_task  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="image")
    parser.add_argument("--arch", default="ffnn")
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--executors", default="local,processes")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--set", dest="sets", action="append", default=[])
    args = parser.parse_args()
    cfg = get_task(args.task).make_config(args.arch, args.preset, parse_sets(args.sets))
    print(f"{args.task}/{args.arch}/{args.preset}: victim + {cfg.n_shadows} shadows; device {default_device()}; "
          f"{usable_cores()} usable cores")
    reference = None
    for name in args.executors.split(","):
        with tempfile.TemporaryDirectory() as folder:
            executor = make_executor(name, args.workers, os.environ.get("MIA_RAY_ADDRESS"))
            t = time.perf_counter()
            models = trained_models(cfg, cache=ArtifactCache(folder), executor=executor)
            seconds = time.perf_counter() - t
            weights = [m.weights for m in (models.victim, *models.shadows)]
            if reference is None:
                reference = weights
            same = all(torch.allclose(a[k], b[k], atol=1e-5) for a, b in zip(reference, weights) for k in a)
            print(f"{name:<10} {seconds:8.1f} s   models equal the first executor's (atol 1e-5): {same}")
            if name == "ray":
                import ray

                ray.shutdown()


if __name__ == "__main__":
    main()
