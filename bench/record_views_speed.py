"""How long the per-record views take to redraw from cached scores (issue 22, "Speed": a change of
FPR, slice or defense value redraws within 1 s on 2 CPU cores). A benchmark, not a test.

    .venv/bin/python bench/record_views_speed.py [--task image] [--preset quick] [--set key=value ...]
                                                 [--runs 7] [--cache DIR] [--json out.json]

Setup (not timed as a redraw): the FFNN and RNN runs of the preset are trained or loaded from the
cache (``--cache``, default a fresh temporary folder: then they train first), and each
architecture's :class:`core.defenses.defender.Defender` is built once, as the pages keep one per config
(``ui.shared.defender_for``). Then, ``--runs`` times each, what the Analyses page computes when the
user moves a control, without Streamlit's own drawing:

* ``exposure @ new FPR``: read both cached summaries, :func:`core.analyses.record_views.exposure_view` at an
  FPR never computed before (quadrants with the interval over cached repeats), and its figure;
* ``slices (computed)``: read both summaries, :func:`core.analyses.record_views.slices_view` (every slicing of
  the task, bootstrap intervals per slice) and the figure of each slicing: what the page does when it
  first opens the tab (it keeps the view; ``st.cache_data``);
* ``slice change``: the figure of another slicing from that view (a click on "Slice by");
* ``flips @ new k``: a Dirichlet k never computed before (drawn at random, so the defended-point
  cache misses) through each Defender (naive attacker, no utility: the slider's fast path), the
  exposure view with the flips, and its figure.

Prints per view the median, min and max seconds against the 1 s target, and the load average: on a
machine shared with other jobs, label the figures "measured under load".
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: the issue's target for one redraw, in seconds
TARGET_S = 1.0


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="image")
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--set", action="append", default=[], help="key=value override for both architectures")
    parser.add_argument("--runs", type=int, default=7, help="redraws timed per view (the median is reported)")
    parser.add_argument("--cache", help="cache folder with (or for) the runs; default: a fresh temporary one")
    parser.add_argument("--json", help="write the timings to this file")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    os.environ["MIA_CACHE_DIR"] = args.cache or tempfile.mkdtemp(prefix="mia_views_")

    import numpy as np

    from core.views.record_view_figures import exposure_figure, slices_figure
    from core.analyses import record_views
    from core.experiment.cache import ArtifactCache
    from core.cli_common import parse_sets
    from core.defenses.defender import Defender
    from core.defenses.spec import DefenseSpec
    from core.experiment.pipeline import cached_summary, run_experiment, trained_models
    from core.experiment.results import RunSummary
    from core.tasks import get_task

    cache = ArtifactCache(os.environ["MIA_CACHE_DIR"])
    task = get_task(args.task)
    sets = parse_sets(args.set)
    configs = {arch: task.make_config(arch, args.preset, sets).validate() for arch in ("ffnn", "rnn")}
    t0 = time.perf_counter()
    for cfg in configs.values():
        run_experiment(cfg, cache=cache)
    defenders = {a: Defender(trained_models(c, cache=cache), cache) for a, c in configs.items()}
    setup_s = time.perf_counter() - t0

    def summaries():
        return {a: RunSummary.from_dict(cached_summary(c, cache)) for a, c in configs.items()}

    rng = np.random.default_rng(time.time_ns())
    # FPRs the view's defaults (1 %, 0.1 %) do not include; k values from the slider's range, never cached
    new_fprs = [float(f) for f in rng.uniform(0.002, 0.05, args.runs)]
    new_ks = [float(k) for k in 10 ** rng.uniform(-2, 2, args.runs)]

    def exposure(f: float) -> None:
        view = record_views.exposure_view(configs, summaries(), fprs=(f,),
                                          repeats=record_views.cached_repeats(configs, cache))
        exposure_figure(view, str(f))

    def slices() -> dict:
        view = record_views.slices_view(configs, summaries())
        for name in next(iter(view["archs"].values())):
            slices_figure(view, name)
        return view

    sliced = slices()
    slicings = list(next(iter(sliced["archs"].values())))

    def flips(k: float) -> None:
        points = {a: d.point(DefenseSpec("dirichlet", k), "naive", utility=False) for a, d in defenders.items()}
        view = record_views.exposure_view(configs, summaries(), defended=points,
                                          repeats=record_views.cached_repeats(configs, cache))
        exposure_figure(view, "0.01")

    load_before = os.getloadavg()[0]
    times = {
        "exposure @ new FPR": [timed(lambda f=f: exposure(f)) for f in new_fprs],
        "slices (computed)": [timed(slices) for _ in range(args.runs)],
        "slice change": [timed(lambda i=i: slices_figure(sliced, slicings[i % len(slicings)]))
                         for i in range(args.runs)],
        "flips @ new k (Dirichlet)": [timed(lambda k=k: flips(k)) for k in new_ks],
    }
    load_after = os.getloadavg()[0]
    n_records = len(record_views.evaluated_records(configs["ffnn"]))
    cores = os.cpu_count() or 1
    print(f"{args.task} {args.preset}: {n_records} evaluated records, {args.runs} redraws per view "
          f"(setup: runs and defenders {setup_s:.1f} s)")
    print(f"{'view':28s} {'median s':>9s} {'min':>7s} {'max':>7s}   target ≤ {TARGET_S:g} s")
    rows = {}
    for name, ts in times.items():
        med = statistics.median(ts)
        rows[name] = {"median_s": med, "min_s": min(ts), "max_s": max(ts), "runs": len(ts),
                      "within_target": med <= TARGET_S}
        print(f"{name:28s} {med:9.3f} {min(ts):7.3f} {max(ts):7.3f}   {'within' if med <= TARGET_S else 'OVER'}")
    loaded = max(load_before, load_after) > 0.5 * cores
    label = (f"measured under load (load average {load_before:.1f} → {load_after:.1f} on {cores} cores; other jobs "
             "running)" if loaded else f"load average {load_before:.1f} → {load_after:.1f} on {cores} cores")
    print(label)
    if args.json:
        Path(args.json).write_text(json.dumps({"task": args.task, "preset": args.preset, "sets": sets,
                                               "records": n_records, "target_s": TARGET_S, "views": rows,
                                               "fprs": new_fprs, "ks": new_ks, "setup_s": setup_s,
                                               "load": [load_before, load_after], "cores": cores, "label": label},
                                              indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
