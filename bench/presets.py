"""The table a reviewer asks for: every task × architecture × preset that runs here, cold.

    .venv/bin/python bench/presets.py [--tasks image,translation,navigation] [--presets quick]
                                      [--archs ffnn,rnn] [--set TASK:KEY=VALUE ...] [--json out.json]
                                      [--repeats N] [--warm]
    make bench          # = bench/presets.py --tasks image --warm: the image quick preset, cold and warm

Per run (a fresh temporary cache, so every number is a cold run): parameters, wall and CPU time (the
process's CPU seconds over all its threads: a figure that other jobs on the machine do not inflate;
on an otherwise idle 2-core machine the wall time lies between CPU/2 and CPU), train /
validation utility, shadow fidelity (the shadows' mean member-loss gap to the victim at the final
epoch, their validation utility), every attack's AUC, TPR at 1 % and at 0.1 % FPR, and stage timings.
Then per task and preset, the FFNN-vs-RNN comparison: utility gap, the confounding warnings of
core.experiment.fidelity, and the matched-utility view (each architecture at the checkpoint whose validation
utility is closest to the other's final one).

With ``--warm`` each run is opened again at once from its own cache (``bench_warm_s``: what reopening a cached
run costs — nothing trains, the whole result comes from the cache; a warm run that computed anything is an
error).

With ``--repeats N`` (N ≥ 2) every configuration runs N times (repeat r: the seed derived by
core.analyses.repeats; repeat r of FFNN and RNN share a split) and the tables give each number as the mean
with its 95 % Student-t interval over the N repeats, then the paired FFNN − RNN difference per
metric with its interval, p-values and the verdict on "the RNN leaks more" (core.measurement.stats).

This is a benchmark, not a test: it trains every model for real and takes minutes per run.
``--set translation:dataset=multi30k --set translation:data_dir=DIR`` runs a preset on real data.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: attacks shown in the main table (the rest are in the per-run attack lines and the JSON)
MAIN_ATTACKS = ("shadow", "lira", "rmia")


def typed_run(summary: dict):
    """A run summary of this bench read typed (:class:`core.experiment.results.RunSummary`), without the timings
    this bench adds to it (``bench_*``: keys the summary's layout does not have)."""
    from core.experiment.results import RunSummary

    return RunSummary.from_dict({k: v for k, v in summary.items() if not k.startswith("bench_")})


def run_one(task_name: str, arch: str, preset: str, overrides: dict, keep_cache: str | None, repeat: int = 0,
            warm: bool = False) -> dict:
    """One cold run (repeat ``repeat`` of the config) in its own cache folder; returns the summary
    with the wall time added (``warm``: and the time of the same run reopened from that cache)."""
    cache = keep_cache or tempfile.mkdtemp(prefix="mia_bench_")
    os.environ["MIA_CACHE_DIR"] = cache
    try:
        from core.analyses.repeats import repeat_config
        from core.experiment.cache import ArtifactCache
        from core.experiment.pipeline import run_experiment
        from core.tasks import get_task

        cfg = repeat_config(get_task(task_name).make_config(arch, preset, overrides), repeat)
        t, c = time.perf_counter(), time.process_time()
        load = os.getloadavg()[0]
        summary = run_experiment(cfg, cache=ArtifactCache(cache)).summary
        summary["bench_wall_s"] = time.perf_counter() - t
        summary["bench_cpu_s"] = time.process_time() - c  # all threads of this process: robust to other load
        summary["bench_load"] = [load, os.getloadavg()[0]]
        if warm:
            t = time.perf_counter()
            again = run_experiment(cfg, cache=ArtifactCache(cache)).summary
            summary["bench_warm_s"] = time.perf_counter() - t
            if not again.get("cache_hit"):
                raise SystemExit(f"error: {task_name}/{arch}/{preset}: the warm run was not read from the cache")
        return summary
    finally:
        if keep_cache is None:
            shutil.rmtree(cache, ignore_errors=True)


def _f(x, fmt: str = ".3f") -> str:
    return "–" if x is None else format(x, fmt)


def utility_text(s: dict) -> str:
    u = s["utility"]
    fmt = ".1f" if u["metric"] == "bleu" else ".3f"
    name = {"bleu": "BLEU", "accuracy": "acc", "return": "return"}.get(u["metric"], u["metric"])
    return f"{name} {_f(u['train'], fmt)} / {_f(u['val'], fmt)}"


def fidelity_text(s: dict) -> str:
    f = s.get("shadow_fidelity")
    if not f:
        return "–"
    last = f["checkpoints"][-1]
    u = f["utility"].get("shadow_mean", {})
    fmt = ".1f" if f["utility"]["metric"] == "bleu" else ".3f"
    return f"{_f(last['member_loss_gap'], '.0%')} / {_f(last['nonmember_loss_gap'], '.0%')}; val {_f(u.get('val'), fmt)}"


def attack_text(s: dict, name: str) -> str:
    r = s["attacks"].get(name)
    if r is None:
        return "–"
    return f"{r['auc']:.3f} / {r['tpr_at_fpr']['0.01']:.3f} / {r['tpr_at_fpr']['0.001']:.3f}"


def markdown(rows: list[dict]) -> str:
    head = ["task", "arch", "preset", "params", "cold s (wall / CPU)", "utility train / val",
            "shadow fidelity: loss gap m / nm; val",
            *[f"{n} AUC / TPR@1% / TPR@0.1%" for n in MAIN_ATTACKS]]
    warm = any("bench_warm_s" in s for s in rows)
    if warm:
        head.insert(5, "warm s")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in rows:
        data = s.get("data", {})
        task = s["task"] + (f" ({data.get('pair') or data.get('env_id') or s['config']['dataset']})")
        lines.append("| " + " | ".join([
            task, s["arch"].upper(), s["preset"], f"{s['params']:,}",
            f"{s['bench_wall_s']:.0f} / {s.get('bench_cpu_s', float('nan')):.0f}",
            *([_f(s.get("bench_warm_s"), ".2f")] if warm else []), utility_text(s),
            fidelity_text(s), *[attack_text(s, n) for n in MAIN_ATTACKS]]) + " |")
    return "\n".join(lines)


def comparison_text(pair: list[dict]) -> str:
    from core.experiment.fidelity import confounding_warnings, matched_utility, utility_gap

    pair = [typed_run(s) for s in pair]  # the analyses read typed runs
    out = []
    gap = utility_gap(pair)
    if gap:
        out.append(f"utility gap ({gap['archs'][0].upper()} − {gap['archs'][1].upper()}): train {_f(gap['train'], '.3g')}, "
                   f"val {_f(gap['val'], '.3g')}")
    for w in confounding_warnings(pair):
        out.append(f"WARNING {w}")
    view = matched_utility(pair)
    for p in view.pairs if view is not None else ():
        m, r = p.matched, p.reference
        names = sorted(set(m.attacks) & set(r.attacks))
        aucs = ", ".join(f"{n} {m.attacks[n].auc:.3f} vs {r.attacks[n].auc:.3f}" for n in names)
        out.append(f"matched utility: {m.arch.upper()}@{m.epoch} (val {m.utility_val:.3g}) vs "
                   f"{r.arch.upper()}@{r.epoch} (val {r.utility_val:.3g}): AUC {aucs}")
    return "\n".join(out)


#: headline metrics of the repeats table (core.analyses.repeats.HEADLINE names)
REPEAT_COLUMNS = ("utility_val", "attack_accuracy", "attack_auc", "tpr_at_1pct_fpr", "lira_auc", "rmia_auc")


def _ci(e: dict | None) -> str:
    if not e:
        return "–"
    if e["ci_low"] is None:
        return f"{e['mean']:.3f}"
    return f"{e['mean']:.3f} [{e['ci_low']:.3f}, {e['ci_high']:.3f}]"


def repeats_markdown(groups: list[tuple[str, str, dict[str, list[dict]]]]) -> str:
    """Per (task, preset, arch): N and every headline metric as mean [95 % CI] over the repeats;
    then per (task, preset) with both architectures the paired FFNN − RNN differences."""
    from core.analyses.repeats import aggregate, judged_pairs

    groups = [(t, p, {a: [typed_run(s) for s in ss] for a, ss in runs.items()}) for t, p, runs in groups]

    head = ["task", "preset", "arch", "N", *REPEAT_COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for task, preset, runs in groups:
        for arch, summaries in runs.items():
            est = {k: e.to_dict() for k, e in aggregate(summaries).items()}
            lines.append("| " + " | ".join([task, preset, arch.upper(), str(len(summaries)),
                                            *[_ci(est.get(c)) for c in REPEAT_COLUMNS]]) + " |")
    diff_head = ["task", "preset", "metric", "role", "FFNN − RNN [95% CI]", "p (paired t)", "p (sign flip)",
                 "p (sign flip, Holm)", "d_z", "verdict", "N"]
    lines += ["", "| " + " | ".join(diff_head) + " |", "|" + "---|" * len(diff_head)]
    for task, preset, runs in groups:
        if set(runs) != {"ffnn", "rnn"}:
            continue
        # one primary metric carries the verdict; the rest Holm-corrected or without one (core.analyses.repeats)
        _, judged = judged_pairs(runs["ffnn"], runs["rnn"])  # compare's own judgement of these runs
        for name, c in judged.items():
            d, v = c["difference"], c["verdict"]
            word = v["value"] if v else ("(no verdict)" if c["role"] in ("duplicate", "unresolved") else "(no hypothesis)")
            lines.append("| " + " | ".join([
                task, preset, c["label"], c["role"], _ci(d["diff"]), _f(d["p_t"]), _f(d["p_permutation"]),
                _f((c.get("p_holm") or {}).get("p_permutation")), _f(d["effect_size"], ".2f"), word,
                str(d["n"])]) + " |")
    return "\n".join(lines)


def parse_sets(values: list[str]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for v in values:
        scope, _, kv = v.partition(":")
        key, sep, value = kv.partition("=")
        if not sep or not key:
            raise SystemExit(f"--set expects TASK:KEY=VALUE, got {v!r}")
        out.setdefault(scope, {})[key] = value
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="image,translation,navigation")
    parser.add_argument("--presets", default="quick")
    parser.add_argument("--archs", default="ffnn,rnn")
    parser.add_argument("--set", action="append", default=[], help="TASK:KEY=VALUE override (repeatable)")
    parser.add_argument("--json", help="write every summary (and the table) to this file")
    parser.add_argument("--cache", help="use (and keep) this cache folder instead of a fresh one per run")
    parser.add_argument("--repeats", type=int, default=1, help="runs per configuration (1..20; N ≥ 2: means with 95 %% "
                                                               "intervals and paired FFNN − RNN differences)")
    parser.add_argument("--warm", action="store_true", help="also time each run reopened from its cache")
    args = parser.parse_args()
    if not 1 <= args.repeats <= 20:
        raise SystemExit(f"error: --repeats must lie in 1..20, got {args.repeats}")
    sets = parse_sets(args.set)
    import torch

    from core.foundations.device import default_device

    rows = []
    groups = []
    for task in args.tasks.split(","):
        for preset in args.presets.split(","):
            pair = []
            runs: dict[str, list[dict]] = {}
            for rep in range(args.repeats):
                for arch in args.archs.split(","):
                    s = run_one(task, arch, preset, sets.get(task, {}), args.cache, rep, warm=args.warm)
                    runs.setdefault(arch, []).append(s)
                    rows.append(s)
                    if rep == 0:
                        pair.append(s)
                    print(f"{task}/{arch}/{preset} (repeat {rep}, seed {s['config']['seed']}): {s['bench_wall_s']:.0f} s "
                          f"wall, {s['bench_cpu_s']:.0f} s CPU (load {s['bench_load'][0]:.1f}→{s['bench_load'][1]:.1f}), "
                          + (f"warm {s['bench_warm_s']:.2f} s, " if "bench_warm_s" in s else "")
                          + f"{utility_text(s)}; " + ", ".join(
                              f"{n} {a['auc']:.3f}/{a['tpr_at_fpr']['0.01']:.3f}/{a['tpr_at_fpr']['0.001']:.3f}"
                              for n, a in s["attacks"].items()), flush=True)
            if len(pair) == 2:
                print(comparison_text(pair), flush=True)
            groups.append((task, preset, runs))
    print(f"\ndevice={default_device()} torch threads={torch.get_num_threads()} cpus={os.cpu_count()}")
    print(markdown(rows))
    table = markdown(rows)
    if args.repeats > 1:
        table_repeats = repeats_markdown(groups)
        print(f"\nOver {args.repeats} repeats (mean [95 % t interval]):\n" + table_repeats)
        table += "\n\n" + table_repeats
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "table": table}, fh)


if __name__ == "__main__":
    main()
