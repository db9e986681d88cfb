"""Benchmark: how fast the Defenses page answers a slider move, on the quick presets' cached models.

For each task and architecture: 20 moves to values not seen before (log-uniform k in [0.01, 10⁴]
for the Dirichlet mechanism, σ in [10⁻⁴, 0.3] for the GPM), naive attacker, one draw. Two figures
per move, as the page computes them: "attack + ε" (the slider's fast point) and "utility" (the
full point after it). p50 / p95 in milliseconds, and their ratio to one undefended query pass
(the victim answering its evaluation set once). Models are trained first if not cached.

    .venv/bin/python bench/defenses.py [--task image|translation|navigation|all] [--moves 20]

Targets (p95 on 2 CPU cores): Dirichlet attack+ε ≤ 150 ms every task; utility image ≤ 150 ms,
translation ≤ 1.5 s, navigation ≤ 3 s; GPM ≤ 1 s image and translation, ≤ 3 s navigation.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.defenses.defender import Defender  # noqa: E402
from core.defenses.spec import DefenseSpec
from core.experiment.pipeline import trained_models  # noqa: E402
from core.tasks import get_task  # noqa: E402

TARGETS_MS = {
    ("dirichlet", "attack"): {"image": 150, "translation": 150, "navigation": 150},
    ("dirichlet", "utility"): {"image": 150, "translation": 1500, "navigation": 3000},
    ("gpm", "attack"): {"image": 1000, "translation": 1000, "navigation": 3000},
    ("gpm", "utility"): {"image": 1000, "translation": 1000, "navigation": 3000},
}


def percentiles(ms: list[float]) -> tuple[float, float]:
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def bench(task_name: str, arch: str, moves: int) -> list[dict]:
    task = get_task(task_name)
    cfg = task.make_config(arch, "quick")
    t = time.perf_counter()
    models = trained_models(cfg)
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    defender = Defender(models)
    setup_s = time.perf_counter() - t
    model = models.model("victim")
    t = time.perf_counter()
    task.respond(cfg, model, models.data, models.splits.eval_index)
    query_ms = (time.perf_counter() - t) * 1000
    rng = np.random.default_rng(0)
    # a fresh mechanism seed per run: every spec is new, so no point comes from the disk cache
    fresh = int(time.time()) % 2**31
    rows = []
    for mechanism, values in (("dirichlet", 10 ** rng.uniform(-2, 4, moves)), ("gpm", 10 ** rng.uniform(-4, np.log10(0.3), moves))):
        fast, full = [], []
        for v in values:
            spec = DefenseSpec(mechanism, float(f"{v:.6g}"), seed=fresh)
            t = time.perf_counter()
            defender.point(spec, "naive", utility=False)
            fast.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            defender.point(spec, "naive", utility=True)
            full.append((time.perf_counter() - t) * 1000)
        for part, ms in (("attack", fast), ("utility", full)):
            p50, p95 = percentiles(ms)
            target = TARGETS_MS[(mechanism, part)][task_name]
            rows.append({"task": task_name, "arch": arch, "mechanism": mechanism, "part": part, "p50_ms": p50,
                         "p95_ms": p95, "target_ms": target, "met": p95 <= target, "query_pass_ms": query_ms,
                         "p50_over_query_pass": p50 / query_ms, "models_load_s": load_s, "defender_setup_s": setup_s})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="all", choices=["all", "image", "translation", "navigation"])
    parser.add_argument("--moves", type=int, default=20)
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    tasks = ["image", "translation", "navigation"] if args.task == "all" else [args.task]
    rows = []
    for task_name in tasks:
        for arch in ("ffnn", "rnn"):
            rows += bench(task_name, arch, args.moves)
    print(f"{'task':<12}{'arch':<6}{'mechanism':<10}{'part':<9}{'p50 ms':>9}{'p95 ms':>9}{'target':>8}  met  "
          f"{'query ms':>9}{'p50/query':>10}")
    for r in rows:
        print(f"{r['task']:<12}{r['arch']:<6}{r['mechanism']:<10}{r['part']:<9}{r['p50_ms']:9.0f}{r['p95_ms']:9.0f}"
              f"{r['target_ms']:8d}  {'yes' if r['met'] else 'NO ':<4}{r['query_pass_ms']:9.0f}{r['p50_over_query_pass']:10.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
