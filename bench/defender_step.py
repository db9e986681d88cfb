"""CPU time of one Defenses slider step on the server: ``Defender.point`` at a value not computed before
(issue 32.16), per task/architecture, without the browser and without trusting wall time on a shared machine.

For each ``--archs`` of ``--task`` (models trained or loaded from ``MIA_CACHE_DIR``), builds one
:class:`core.defenses.defender.Defender` (its construction untimed) and then times, in this process's CPU
seconds (``time.process_time``) and wall seconds, ``point(spec.at(v), "naive", utility=U)`` for every value ``v``
of the mechanism's steps, once with ``utility=False`` (the slider's fast point) and once with ``utility=True`` (the
point with utility, right after: the page's second call, whose attack answers are the fast point's, memoised, so
this is the utility's cost; like the page, without quantile regression where the path's fast point leaves it out). Defended points are neither read from nor written to the cache: every step
computes, and the cache is left as it was. The first ``--warmup`` values are computed and not counted (lazy
model loading, first-call costs).

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 MIA_CACHE_DIR=<cache with the image quick runs> \
        .venv/bin/python bench/defender_step.py [--task image] [--archs ffnn,rnn] [--mechanism dirichlet] [--draws 8] \\
        [--paths new,old] [--profile 30]

``--paths new,batched,old`` times several paths, step by step interleaved in the same run (each value computed by
each, on Defenders of the same models): ``new`` leaves quantile regression off the fast point (the full point
scores it), ``batched`` scores it at the fast point with all draws' refits as one batched fit (the fast point
before that change), ``old`` with one refit per draw (``Defender.batch_quantile_refits = False``; issue 32.16).
``--threads 1,2`` runs every path at each torch thread count too, interleaved step by step (CPU seconds count
every thread's time: compare thread counts by the wall seconds, ``wall_s``).
``--side-by-side`` times the page's step on all ``--archs`` at once: one architecture after the other vs one thread
each (:mod:`core.defenses.side_by_side`), by wall seconds (the threads' CPU is the same work).
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

from core.defenses.defender import Defender  # noqa: E402

from core.defenses.spec import DefenseSpec
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


#: per path: Defender.batch_quantile_refits, and whether the fast point scores quantile regression
PATHS = {"new": (True, False), "batched": (True, True), "old": (False, True)}


def side_by_side(args: argparse.Namespace, task) -> dict:
    """Wall and CPU seconds of the Defenses page's points on a step to a new value, for all ``--archs``: one
    architecture after the other (as before issue 32.16) and one thread per architecture
    (:func:`core.defenses.side_by_side.points_side_by_side`), step by step interleaved, each on its own Defenders.
    On a machine with a free core per architecture the threads' wall is the slower architecture's, not the sum."""
    from core.defenses.side_by_side import points_side_by_side

    calls = [{"utility": False}, {"utility": True, "quantile": False}]
    defenders = {how: {} for how in ("sequential", "threads")}
    for arch in args.archs.split(","):
        models = trained_models(task.make_config(arch, args.preset), cache=NoStore())
        for how in defenders:
            defenders[how][arch] = Defender(models, NoStore())
    spec = DefenseSpec(args.mechanism, STEPS[args.mechanism][0], draws=args.draws).validate()
    wall: dict = {how: [] for how in defenders}
    cpu: dict = {how: [] for how in defenders}
    for i, v in enumerate(STEPS[args.mechanism][: args.values]):
        for how, ds in defenders.items():
            w, c = time.perf_counter(), time.process_time()
            if how == "sequential":
                for d in ds.values():
                    for call in calls:
                        d.point(spec.at(v), "naive", **call)
            else:
                for futures in points_side_by_side(ds, spec.at(v), calls).values():
                    for f in futures:
                        f.result()
            if i >= args.warmup:
                wall[how].append(round(time.perf_counter() - w, 4))
                cpu[how].append(round(time.process_time() - c, 4))
    return {how: {"wall_s": wall[how], "median_wall_s": round(median(wall[how]), 4), "cpu_s": cpu[how],
                  "median_cpu_s": round(median(cpu[how]), 4)} for how in defenders}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="image")
    p.add_argument("--archs", default="ffnn,rnn")
    p.add_argument("--preset", default="quick")
    p.add_argument("--mechanism", default="dirichlet")
    p.add_argument("--draws", type=int, default=8)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--values", type=int, default=len(STEPS["dirichlet"]), help="the first N of the steps' values")
    p.add_argument("--paths", default="new", help="new (no quantile regression at the fast point), batched (batched "
                   "quantile refits at the fast point), old (one refit per draw), comma-separated")
    p.add_argument("--threads", default="1", help="torch thread counts, comma-separated (e.g. 1,2)")
    p.add_argument("--profile", type=int, default=0, metavar="N", help="cProfile one more fast step per path")
    p.add_argument("--side-by-side", action="store_true",
                   help="also time the page's step on every --archs at once: their fast and utility-card points one "
                        "architecture after the other vs core.defenses.side_by_side (one thread each), interleaved")
    args = p.parse_args()
    names = args.paths.split(",")
    if not names or any(x not in PATHS for x in names):
        p.error(f"--paths takes a comma-separated subset of {', '.join(PATHS)}")
    threads = [int(t) for t in args.threads.split(",")]
    paths = [f"{n}@{t}t" if len(threads) > 1 else n for n in names for t in threads]
    path_threads = {f"{n}@{t}t" if len(threads) > 1 else n: t for n in names for t in threads}
    path_name = {f"{n}@{t}t" if len(threads) > 1 else n: n for n in names for t in threads}
    torch.set_num_threads(threads[0])
    task = get_task(args.task)
    out: dict = {"task": args.task, "mechanism": args.mechanism, "draws": args.draws, "paths": paths,
                 "commit": os.popen("git rev-parse --short HEAD").read().strip(),
                 "load_before": os.popen("uptime").read().strip(), "archs": {}}
    for arch in args.archs.split(","):
        cfg = task.make_config(arch, args.preset)
        cache = NoStore()
        models = trained_models(cfg, cache=cache)
        defenders = {}
        for path in paths:
            defenders[path] = Defender(models, cache)
            defenders[path].batch_quantile_refits = PATHS[path_name[path]][0]
        spec = DefenseSpec(args.mechanism, STEPS[args.mechanism][0], draws=args.draws).validate()
        row: dict = {}
        for utility in (False, True):
            cpu: dict = {path: [] for path in paths}
            wall: dict = {path: [] for path in paths}
            timings: dict = {path: {} for path in paths}
            for i, v in enumerate(STEPS[args.mechanism][: args.values]):
                for path in paths:  # interleaved: every path sees the same minute's load
                    torch.set_num_threads(path_threads[path])
                    quantile_at_fast = PATHS[path_name[path]][1]
                    w, c = time.perf_counter(), time.process_time()
                    point = defenders[path].point(spec.at(v), "naive", utility=utility, quantile=quantile_at_fast)
                    dt, dw = time.process_time() - c, time.perf_counter() - w
                    if i >= args.warmup:
                        cpu[path].append(round(dt, 4))
                        wall[path].append(round(dw, 4))
                        for name, sec in point.timings.items():
                            timings[path].setdefault(name, []).append(sec)
            for path in paths:
                row.setdefault(path, {})["with_utility" if utility else "fast"] = {
                    "cpu_s": cpu[path], "median_cpu_s": round(median(cpu[path]), 4),
                    "wall_s": wall[path], "median_wall_s": round(median(wall[path]), 4),
                    "median_wall_timings_s": {k: round(median(x), 4) for k, x in timings[path].items()}}
        if args.profile:
            import cProfile
            import pstats
            for path in paths:
                torch.set_num_threads(path_threads[path])
                prof = cProfile.Profile()
                prof.enable()
                defenders[path].point(spec.at(STEPS[args.mechanism][-1] * 1.37), "naive", utility=False,
                                      quantile=PATHS[path_name[path]][1])
                prof.disable()
                print(f"--- {arch}, {path} path: one fast step", file=sys.stderr)
                pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(args.profile)
        out["archs"][arch] = row
    if args.side_by_side:
        out["side_by_side"] = side_by_side(args, task)
    out["load"] = os.popen("uptime").read().strip()
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
