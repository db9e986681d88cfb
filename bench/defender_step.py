"""CPU time of one Defenses slider step on the server: ``Defender.point`` at a value not computed before
(issue 32.16), per task/architecture, without the browser and without trusting wall time on a shared machine.

For each ``--archs`` of ``--task`` (models trained or loaded from ``MIA_CACHE_DIR``), builds one
:class:`core.defenses.defender.Defender` (its construction untimed) and then times, in this process's CPU
seconds (``time.process_time``), ``point(spec.at(v), "naive", utility=U)`` for every value ``v`` of the
mechanism's steps, once with ``utility=False`` (the slider's fast point) and once with ``utility=True`` (the
point with utility, right after: the page's second call, whose attack answers are the fast point's, memoised, so
this is the utility's cost). Defended points are neither read from nor written to the cache: every step
computes, and the cache is left as it was. The first ``--warmup`` values are computed and not counted (lazy
model loading, first-call costs).

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 MIA_CACHE_DIR=<cache with the image quick runs> \
        .venv/bin/python bench/defender_step.py [--task image] [--archs ffnn,rnn] [--mechanism dirichlet] [--draws 8] \\
        [--paths new,old] [--profile 30]

``--paths new,old`` times the old path too, step by step interleaved with the new one in the same run (each
value computed by both, on two Defenders of the same models): ``old`` refits the quantile attack's regressor once
per draw (``Defender.batch_quantile_refits = False``), ``new`` refits all draws as one batched fit (issue 32.16).
``--profile N`` prints the N functions with the most cumulative time of one fast step per path (cProfile, after
the timed steps; to stderr).

Prints one JSON object: per architecture, path and utility flag, every step's CPU seconds, the median, and the
point's own ``timings`` (wall) medians; with ``uptime``'s load average before and after. A benchmark, not a test.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from core.defenses.defender import Defender, DefenseSpec  # noqa: E402
from core.experiment.cache import ArtifactCache  # noqa: E402
from core.experiment.pipeline import trained_models  # noqa: E402
from core.tasks import get_task  # noqa: E402

#: values of a slider's steps (none of them the page's defaults, so none is precomputed)
STEPS = {"dirichlet": [3.7, 5.1, 7.3, 11.9, 17.3, 29.1, 41.7, 63.5, 97.1],
         "gpm": [0.0011, 0.0017, 0.0023, 0.0031, 0.0043, 0.0059, 0.0071, 0.0089, 0.0113]}


def median(v: list[float]) -> float:
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


class NoStore(ArtifactCache):
    """The cache, but defended points are neither read nor written (every step computes)."""

    def get_json(self, key, *a, **kw):
        return None if "/defended" in str(key) else super().get_json(key, *a, **kw)

    def put_json(self, key, *a, **kw):
        if "/defended" in str(key):
            return None
        return super().put_json(key, *a, **kw)


PATHS = {"new": True, "old": False}  # Defender.batch_quantile_refits per path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="image")
    p.add_argument("--archs", default="ffnn,rnn")
    p.add_argument("--preset", default="quick")
    p.add_argument("--mechanism", default="dirichlet")
    p.add_argument("--draws", type=int, default=8)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--paths", default="new", help="new (batched quantile refits), old (one refit per draw), or both")
    p.add_argument("--profile", type=int, default=0, metavar="N", help="cProfile one more fast step per path")
    args = p.parse_args()
    paths = args.paths.split(",")
    if not paths or any(x not in PATHS for x in paths):
        p.error(f"--paths takes a comma-separated subset of {', '.join(PATHS)}")
    torch.set_num_threads(1)
    task = get_task(args.task)
    out: dict = {"task": args.task, "mechanism": args.mechanism, "draws": args.draws, "paths": paths,
                 "load_before": os.popen("uptime").read().strip(), "archs": {}}
    for arch in args.archs.split(","):
        cfg = task.make_config(arch, args.preset)
        cache = NoStore()
        models = trained_models(cfg, cache=cache)
        defenders = {}
        for path in paths:
            defenders[path] = Defender(models, cache)
            defenders[path].batch_quantile_refits = PATHS[path]
        spec = DefenseSpec(args.mechanism, STEPS[args.mechanism][0], draws=args.draws).validate()
        row: dict = {}
        for utility in (False, True):
            cpu: dict = {path: [] for path in paths}
            timings: dict = {path: {} for path in paths}
            for i, v in enumerate(STEPS[args.mechanism]):
                for path in paths:  # interleaved: both paths see the same minute's load
                    c = time.process_time()
                    point = defenders[path].point(spec.at(v), "naive", utility=utility)
                    dt = time.process_time() - c
                    if i >= args.warmup:
                        cpu[path].append(round(dt, 4))
                        for name, sec in point["timings"].items():
                            timings[path].setdefault(name, []).append(sec)
            for path in paths:
                row.setdefault(path, {})["with_utility" if utility else "fast"] = {
                    "cpu_s": cpu[path], "median_cpu_s": round(median(cpu[path]), 4),
                    "median_wall_timings_s": {k: round(median(x), 4) for k, x in timings[path].items()}}
        if args.profile:
            import cProfile
            import pstats
            for path in paths:
                prof = cProfile.Profile()
                prof.enable()
                defenders[path].point(spec.at(STEPS[args.mechanism][-1] * 1.37), "naive", utility=False)
                prof.disable()
                print(f"--- {arch}, {path} path: one fast step", file=sys.stderr)
                pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(args.profile)
        out["archs"][arch] = row
    out["load"] = os.popen("uptime").read().strip()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
