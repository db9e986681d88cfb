"""CPU time of each page's script run: where a page's time goes, measured without the browser
and without trusting wall time on a shared machine.

Each page of the app (``app.py`` + the page, as the server runs them) is opened under Streamlit's
``AppTest`` in this process, against whatever ``MIA_CACHE_DIR`` holds (cache the quick runs first:
``python -m core run --task image --arch ffnn``, then ``rnn``). For each page it records the CPU
seconds (``time.process_time``: every thread of this process, so the server's own work, not the
other jobs on the machine) of

* the first open (cold: the page's imports, cache reads, figure building),
* the later opens (warm: what every visit after the first costs: from Home to the page),
  the speed of a cached Train & attack open (tests/test_app.py checks that such an open queues nothing; how
  fast it is, is this bench's to say),
* with ``--slider``, the Gaussian σ steps on the Defenses page (one slider step = one rerun; each one stop to the
  right, to a value not computed before); ``--slider-mechanism dirichlet`` the Dirichlet k steps instead.

``--profile N`` prints the N functions with the largest cumulative CPU time of one warm open
(cProfile), which is how the costs in docs/performance.md were found.

    OMP_NUM_THREADS=1 MIA_CACHE_DIR=/tmp/cache .venv/bin/python bench/page_cpu.py [--pages ...] [--profile 25]

Prints one JSON object (seconds). A benchmark, not a test.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGES = {"Train & attack": "app_pages/1_Train_and_attack.py", "Defenses": "app_pages/2_Defenses.py",
         "Training defenses": "app_pages/3_Training_defenses.py", "Analyses": "app_pages/4_Analyses.py"}
HOME = "app_pages/0_Home.py"
#: the profiler of the script run being profiled (None: none)
PROFILER: list = [None]


def median(values: list[float]) -> float:
    v = sorted(values)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def timed(fn) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of ``fn()``."""
    c, w = time.process_time(), time.perf_counter()
    fn()
    return round(time.process_time() - c, 3), round(time.perf_counter() - w, 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", default=",".join(PAGES), help="comma-separated page labels")
    parser.add_argument("--visits", type=int, default=4, help="opens per page (the first is cold)")
    parser.add_argument("--slider", action="store_true", help="time slider steps on the Defenses page")
    parser.add_argument("--slider-mechanism", choices=("gpm", "dirichlet"), default="gpm",
                        help="gpm: the Gaussian σ slider (the default); dirichlet: the k slider")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--profile", type=int, default=0, help="print the top N functions of one warm open")
    parser.add_argument("--task", default="image")
    args = parser.parse_args()

    from streamlit.runtime.scriptrunner import script_runner
    from streamlit.testing.v1 import AppTest

    # the script runs in the ScriptRunner's thread: the profiler is switched on inside it
    run_script = script_runner.ScriptRunner._run_script

    def profiled(self, rerun_data):
        if PROFILER[0] is None:
            return run_script(self, rerun_data)
        PROFILER[0].enable()
        try:
            return run_script(self, rerun_data)
        finally:
            PROFILER[0].disable()

    script_runner.ScriptRunner._run_script = profiled

    t_import = time.process_time()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.query_params["task"] = args.task
    home = timed(at.run)
    from ui.shared import preload_page_modules  # the thread the first run started: let it finish, as a user would

    preload_page_modules().join()
    out: dict = {"cache_dir": os.environ.get("MIA_CACHE_DIR"), "startup_cpu_s": round(t_import, 3),
                 "home_first_cpu_wall_s": home, "pages": {}}

    def open_page(path: str) -> tuple[float, float]:
        at.switch_page(HOME)
        at.run()
        at.switch_page(path)
        r = timed(at.run)
        if at.exception:
            raise SystemExit(f"{path}: {at.exception[0].message}")
        return r

    for label in [p.strip() for p in args.pages.split(",") if p.strip()]:
        runs = [open_page(PAGES[label]) for _ in range(args.visits)]
        out["pages"][label] = {"cold_cpu_s": runs[0][0], "cold_wall_s": runs[0][1],
                               "warm_cpu_s": [r[0] for r in runs[1:]], "warm_wall_s": [r[1] for r in runs[1:]],
                               "warm_cpu_median_s": median([r[0] for r in runs[1:]]) if runs[1:] else None}
        if args.profile:
            at.switch_page(HOME)
            at.run()
            at.switch_page(PAGES[label])
            prof = PROFILER[0] = cProfile.Profile()
            at.run()
            PROFILER[0] = None
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(args.profile)
            print(f"==== {label}: one warm open (cumulative CPU) ====", file=sys.stderr)
            print(buf.getvalue(), file=sys.stderr)

    if args.slider:
        at.switch_page(PAGES["Defenses"])
        at.run()
        from core.defenses import registry as defense_registry

        mechanism = args.slider_mechanism
        label = defense_registry.get(mechanism).label
        next(r for r in at.radio if mechanism in r.options or label in r.options).set_value(mechanism).run()
        param = defense_registry.get(mechanism).parameter
        values, key = list(param.slider), f"{param.name}:{args.task}"
        name = {"gpm": "gaussian_sigma", "dirichlet": "dirichlet_k"}[mechanism]
        i = values.index(at.select_slider(key=key).value)
        steps = []
        prof = cProfile.Profile() if args.profile else None
        for k in range(args.steps + (prof is not None)):  # one stop to the right each time: a value not computed before
            i += 1
            at.select_slider(key=key).set_value(values[i])
            if k == args.steps:  # one more step, profiled (not among the timed ones: the profiler slows it)
                PROFILER[0] = prof
                at.run()
                PROFILER[0] = None
            else:
                steps.append(timed(at.run))
        out[f"{name}_step_values"] = values[i - len(steps) - (prof is not None) + 1:i + 1 - (prof is not None)]
        out[f"{name}_step_cpu_s"] = [s[0] for s in steps]
        out[f"{name}_step_wall_s"] = [s[1] for s in steps]
        out[f"{name}_step_cpu_median_s"] = median([s[0] for s in steps])
        if prof is not None:
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(args.profile)
            print(f"==== one {param.symbol} step (cumulative CPU) ====", file=sys.stderr)
            print(buf.getvalue(), file=sys.stderr)
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    out["note"] = (f"CPU time of this process; wall under 1-minute load average {load:.1f} on {cores} cores"
                   + (" (measured under load: other jobs running)" if load > cores else ""))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
