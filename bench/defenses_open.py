"""Benchmark: the Defenses page's first open from a warm cache, and a slider step's first numbers, as the page's
server thread computes them — on cached models only (it never trains: run `python -m core compare --task TASK
--preset PRESET --repeats N` first).

*First open* (a fresh process: a new server's first visit, the cache warm from earlier sessions): per architecture
and cached repeat, the Defender (`ui.shared.defender_for`: the cached models, the fitted attacks and the cached
set-up), then what the page draws at the slider's default value: the cards' point and the utility card's point
(`Defender.cached_point`, else computed, one draw first as the page does), the curve over the mechanism's curve grid and
the table's rows (`Defender.curve`, `Defender.table_rows`). Opened once to warm the disk cache (skipped with
`--no-warm`), then `--opens` times in fresh processes.

*Slider first numbers*: `--steps` steps to values not computed before (a fresh mechanism seed per run), each the
page's draw-1 stand-in for every architecture: the cards' point and the utility card's point of one draw without
the registry's attacks (`registry=False`, as `app_pages/2_Defenses.py` asks).

Prints one JSON object: every time, the median and a 95 % interval of the median (bootstrap over the steps, or
over the opens), and whether the machine was loaded (a 1-minute load average above the cores: the numbers are
then upper bounds). Targets: first open ≤ 5 s, a step's first numbers ≤ 0.15 s median, on 2 idle cores.

    .venv/bin/python bench/defenses_open.py [--task image] [--preset quick] [--mechanism dirichlet] [--opens 5]
        [--steps 12] [--draws 8]

A benchmark, not a test: timings depend on the machine's load.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OPEN_TARGET_S, STEP_TARGET_S = 5.0, 0.15


def median_interval(values: list[float], seed: int = 0) -> dict:
    """The median with a 95 % percentile-bootstrap interval over the values (2,000 resamples)."""
    v = np.asarray(values, float)
    if len(v) < 2:
        return {"median": float(v[0]) if len(v) else None, "low": None, "high": None, "n": int(len(v))}
    boot = np.median(v[np.random.default_rng(seed).integers(0, len(v), (2000, len(v)))], axis=1)
    lo, hi = np.quantile(boot, [0.025, 0.975])
    return {"median": float(np.median(v)), "low": float(lo), "high": float(hi), "n": int(len(v))}


def load_note() -> dict:
    load = os.getloadavg()[0]
    cores = os.cpu_count() or 1
    return {"load_1min": load, "cores": cores, "measured_under_load": load > cores}


def one_open(task_name: str, preset: str, mechanism: str, draws: int) -> dict:
    """What the page's server thread computes on its first open, in this (fresh) process; seconds per part."""
    t0 = time.perf_counter()
    from core.analyses.repeats import cached_repeat_configs
    from core.defenses import registry as defense_registry
    from core.defenses.defender import Defender
    from core.defenses.spec import DefenseSpec
    from core.experiment.pipeline import load_models
    from core.tasks import get_task
    imports = time.perf_counter() - t0
    task = get_task(task_name)
    param = defense_registry.get(mechanism).parameter
    t = time.perf_counter()
    defenders: dict[str, list[Defender]] = {}
    for arch in task.archs:
        configs = cached_repeat_configs(task.make_config(arch, preset))
        if not configs:
            raise SystemExit(f"error: {task_name} {arch} {preset} is not cached: run `python -m core compare` first")
        defenders[arch] = [Defender(load_models(c)) for c in configs]
    setup = time.perf_counter() - t
    spec = DefenseSpec(mechanism, float(param.slider_default), draws=draws)
    t = time.perf_counter()
    for ds in defenders.values():
        d = ds[0]
        for call in ({"utility": False}, {"utility": True, "quantile": False}):
            if d.cached_point(spec, "naive", **call) is None:
                d.point(spec, "naive", **call)
    point = time.perf_counter() - t
    t = time.perf_counter()
    for ds in defenders.values():
        for d in ds:
            d.curve(spec, [*param.curve, spec.value])
        ds[0].table_rows(spec, list(param.grid))
    curves = time.perf_counter() - t
    return {"imports_s": imports, "defenders_s": setup, "point_s": point, "curves_s": curves,
            "page_s": setup + point + curves, "repeats": min(len(ds) for ds in defenders.values())}


def steps(task_name: str, preset: str, mechanism: str, n: int) -> list[float]:
    """Seconds to the first numbers (draw 1's cards and utility, every architecture) of ``n`` new values."""
    from core.defenses import registry as defense_registry
    from core.defenses.defender import Defender
    from core.defenses.spec import DefenseSpec
    from core.experiment.pipeline import load_models
    from core.tasks import get_task
    task = get_task(task_name)
    param = defense_registry.get(mechanism).parameter
    defenders = [Defender(load_models(task.make_config(a, preset))) for a in task.archs]
    lo, hi = float(min(param.slider)), float(max(param.slider))
    rng = np.random.default_rng(0)
    values = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
    fresh = int(time.time()) % 2**31  # a new seed: no step is read from the cache
    out = []
    for v in values:
        spec = DefenseSpec(mechanism, float(f"{v:.6g}"), draws=1, seed=fresh)
        t = time.perf_counter()
        for d in defenders:  # the page's lanes run the architectures at once; here one after the other: an upper bound
            d.point(spec, "naive", utility=False, registry=False)
            d.point(spec, "naive", utility=True, quantile=False, registry=False)
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="image")
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--mechanism", default="dirichlet", choices=["dirichlet", "gpm"])
    parser.add_argument("--opens", type=int, default=5)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--draws", type=int, default=8)
    parser.add_argument("--no-warm", action="store_true", help="do not open once first to warm the disk cache")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # one fresh process: one first open
        print(json.dumps(one_open(args.task, args.preset, args.mechanism, args.draws)))
        return
    cmd = [sys.executable, __file__, "--child", "--task", args.task, "--preset", args.preset,
           "--mechanism", args.mechanism, "--draws", str(args.draws)]

    def run_child() -> dict:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "child failed")
        return json.loads(done.stdout.strip().splitlines()[-1])

    before = load_note()
    warm = None if args.no_warm else run_child()
    opens = [run_child() for _ in range(args.opens)]
    step_s = steps(args.task, args.preset, args.mechanism, args.steps)
    page = median_interval([o["page_s"] for o in opens])
    step = median_interval(step_s)
    print(json.dumps({
        "task": args.task, "preset": args.preset, "mechanism": args.mechanism, "draws": args.draws,
        "warming_open": warm, "opens": opens, "first_open_s": page, "step_first_numbers_s": step,
        "targets": {"first_open_s": OPEN_TARGET_S, "step_first_numbers_s": STEP_TARGET_S},
        "met": {"first_open": page["median"] is not None and page["median"] <= OPEN_TARGET_S,
                "step": step["median"] is not None and step["median"] <= STEP_TARGET_S},
        "load_before": before, "load_after": load_note()}, indent=2))


if __name__ == "__main__":
    main()
