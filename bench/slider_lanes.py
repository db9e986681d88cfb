"""Wall seconds of a Defenses slider step's points on the server, draw 1 first or not (issue 32 point 16).

For each value of ``--values`` (slider stops not computed before), the page's two calls per architecture (the cards'
fast point, then the utility card's) at ``--draws`` draws, both architectures at once, two ways on Defenders of
their own (own memo, own scratch cache, so neither reads the other's points), interleaved value by value (the order
alternates):

* ``staged``: :meth:`core.defenses.side_by_side.PointLanes.step` — the one-draw calls (without the registry's
  attacks, as the page's: ``FIRST_CALLS``), then the full calls, in one lane per architecture (the page since
  h_slider; not gated: the page's gate waits for its own drawing, which this bench has none of);
* ``full``: :func:`core.defenses.side_by_side.points_side_by_side` — the full calls alone (the page before).

Per step it records, from the step's start, when each future was done (wall, ``perf_counter``: on a loaded machine
what a user waits, not the work) and the process's CPU seconds. Prints one JSON object: every step, the medians
(``cards_s``: the slower architecture's first cards, ``all_s``: its last full call) and ``uptime``'s load before and
after. A benchmark, not a test.

    OMP_NUM_THREADS=1 MIA_CACHE_DIR=<cache with the image quick runs> .venv/bin/python bench/slider_lanes.py \\
        --mechanism dirichlet --draws 8 --values 0.422,0.562,0.75,1.33,1.78,2.37
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import Future, wait
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.defenses.defender import Defender  # noqa: E402
from core.defenses.side_by_side import PointLanes, points_side_by_side  # noqa: E402
from core.defenses.spec import DefenseSpec  # noqa: E402
from core.experiment.cache import ArtifactCache  # noqa: E402
from core.experiment.pipeline import load_models  # noqa: E402
from core.tasks import get_task  # noqa: E402

#: the page's calls per architecture (app_pages/2_Defenses.py)
CALLS = [{"utility": False}, {"utility": True, "quantile": False}]
#: the one-draw calls (the page's draw-1 stand-in leaves the registry's attacks out: its cards show none of them)
FIRST_CALLS = [{**c, "registry": False} for c in CALLS]


def stamps(futures: list[Future], t0: float) -> list[float | None]:
    """Each future's done time after ``t0``, filled in by the future itself (no waiting order skews it)."""
    out: list[float | None] = [None] * len(futures)
    for i, f in enumerate(futures):
        f.add_done_callback(lambda _f, i=i: out.__setitem__(i, round(time.perf_counter() - t0, 3)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="image")
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--mechanism", default="dirichlet")
    parser.add_argument("--draws", type=int, default=8)
    parser.add_argument("--values", default="0.422,0.562,0.75,1.33,1.78,2.37",
                        help="comma-separated values, none computed before (a warm-up value is computed first)")
    parser.add_argument("--warmup", type=float, default=None, help="the warm-up value (default: 5.5 for Dir_k, 0.02)")
    args = parser.parse_args()
    task = get_task(args.task)
    scratch = tempfile.mkdtemp(prefix="slider_lanes.")
    archs = list(task.archs)

    def defenders(tag: str) -> dict[str, Defender]:
        return {a: Defender(load_models(task.make_config(a, args.preset)), ArtifactCache(f"{scratch}/{tag}/{a}"))
                for a in archs}

    ways = {"staged": defenders("staged"), "full": defenders("full")}
    warm = args.warmup if args.warmup is not None else (5.5 if args.mechanism == "dirichlet" else 0.02)
    for ds in ways.values():  # first-call costs (lazy model loading) out of the timed steps
        for d in ds.values():
            d.point(DefenseSpec(args.mechanism, warm, draws=args.draws), "naive", utility=False)
    lanes = PointLanes()
    load_before = os.getloadavg()
    steps = []
    for i, v in enumerate(float(x) for x in args.values.split(",")):
        spec = DefenseSpec(args.mechanism, v, draws=args.draws)
        for way in (("staged", "full") if i % 2 == 0 else ("full", "staged")):
            t0, c0 = time.perf_counter(), time.process_time()
            if way == "staged":
                step = lanes.step(ways[way], spec, CALLS, first_calls=FIRST_CALLS)
                row = {a: {"first": stamps(step.first[a], t0), "full": stamps(step.full[a], t0)} for a in archs}
                futures = [f for fs in step.full.values() for f in fs]
            else:
                out = points_side_by_side(ways[way], spec, CALLS)
                row = {a: {"full": stamps(out[a], t0)} for a in archs}
                futures = [f for fs in out.values() for f in fs]
            wait(futures)
            for f in futures:
                f.result()  # a failed point fails the bench
            time.sleep(0.01)  # the done callbacks have run
            steps.append({"value": v, "way": way, "cpu_s": round(time.process_time() - c0, 3), **row})
    lanes.close()
    summary = {}
    for way in ways:
        rows = [s for s in steps if s["way"] == way]
        summary[way] = {
            "all_s": statistics.median(max(s[a]["full"][-1] for a in archs) for s in rows),
            "cards_s": statistics.median(max(s[a]["first" if way == "staged" else "full"][0] for a in archs)
                                         for s in rows),
            "cpu_s": statistics.median(s["cpu_s"] for s in rows)}
    print(json.dumps({"mechanism": args.mechanism, "draws": args.draws, "medians": summary, "steps": steps,
                      "load_before": load_before, "load_after": os.getloadavg()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
