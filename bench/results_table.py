"""docs/results.md's tables, from run JSONs: one trained model's record-sampling intervals, or the repeats' intervals.

    .venv/bin/python bench/results_table.py RUN.json [RUN.json ...] [--resamples 2000]   # bench/presets.py's JSON
    .venv/bin/python bench/results_table.py --repeats RUN.json [RUN.json ...]  # python -m core run --out RUN.json

Without ``--repeats`` (files written by ``bench/presets.py --json``): per run (one architecture, one seed): utility
train / validation, shadow fidelity, wall and CPU seconds, and per attack the AUC with its 95 % bootstrap interval
over the evaluation records (members and non-members resampled separately, N = their sum), TPR at 1 % FPR and the
resolution (one member = 1/n_members of TPR). Then per task, preset and pair of runs (FFNN, RNN) the AUC difference
FFNN − RNN with its 95 % interval (the two bootstraps are independent), "inconclusive" where it holds 0. That
interval is the record-sampling uncertainty of one trained model, not the seed-to-seed spread: repeats (other
seeds) widen it.

With ``--repeats`` (run summaries, one per file): the runs are grouped by task, preset and (translation) language
pair, then by architecture; within a group the runs of both architectures are paired by seed (repeat r of FFNN and
RNN share a seed, hence a split). Prints bench/presets.py's repeats tables: every headline metric as mean [95 % t
interval] per architecture, then the paired FFNN − RNN differences with p-values and the three-valued verdicts.
"""
from __future__ import annotations

import argparse
import json
import sys
import zlib
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.measurement.metrics import roc_auc  # noqa: E402


def bootstrap_auc(scores: np.ndarray, membership: np.ndarray, resamples: int, seed: int | list[int] = 0) -> np.ndarray:
    """AUCs of ``resamples`` stratified bootstrap resamples of the evaluation records."""
    rng = np.random.default_rng(seed)
    members, others = np.flatnonzero(membership), np.flatnonzero(~membership)
    out = np.empty(resamples)
    for b in range(resamples):
        idx = np.concatenate([rng.choice(members, len(members)), rng.choice(others, len(others))])
        out[b] = roc_auc(scores[idx], membership[idx])
    return out


def run_seed(summary: dict, attack: str) -> list[int]:
    """The bootstrap's seed of one run's attack: its own (task, preset, arch, seed, attack), so the
    FFNN's and the RNN's resamples are independent draws (one shared seed drew the same record
    indices for both, which the difference's interval then treated as independent)."""
    return [zlib.crc32(f"{summary['task']}|{summary['preset']}|{summary['arch']}|{attack}".encode()),
            int(summary["config"]["seed"])]


def run_rows(summary: dict, resamples: int) -> tuple[dict, dict[str, np.ndarray]]:
    rec = summary["records"]
    membership = np.asarray(rec["membership"], bool)
    boots = {}
    attacks = {}
    for name, r in summary["attacks"].items():
        scores = np.asarray(rec["scores"][name], np.float64)
        boots[name] = bootstrap_auc(scores, membership, resamples, seed=run_seed(summary, name))
        lo, hi = np.percentile(boots[name], [2.5, 97.5])
        attacks[name] = {"auc": r["auc"], "lo": lo, "hi": hi, "tpr1": r["tpr_at_fpr"]["0.01"], "acc": r["accuracy"]}
    return {"attacks": attacks, "n": int(membership.size), "n_members": int(membership.sum())}, boots


def fmt_utility(s: dict) -> str:
    u = s["utility"]
    f = ".1f" if u["metric"] == "bleu" else ".3f"
    return f"{format(u['train'], f)} / {format(u['val'], f)}"


def fidelity(s: dict) -> str:
    f = s.get("shadow_fidelity") or {}
    if not f:
        return "–"
    last = f["checkpoints"][-1]
    u = f["utility"].get("shadow_mean", {})
    fmt = ".1f" if f["utility"]["metric"] == "bleu" else ".3f"
    gap = lambda v: "–" if v is None else f"{v:.0%}"  # noqa: E731
    return (f"loss gap {gap(last['member_loss_gap'])} / {gap(last['nonmember_loss_gap'])}; shadows "
            f"{format(u.get('train', float('nan')), fmt)} / {format(u.get('val', float('nan')), fmt)}")


def group_runs(summaries: list[dict]) -> list[tuple[str, str, dict[str, list[dict]]]]:
    """``--repeats``: (task, preset label, {arch: summaries sorted by seed}) per group; pairs checked by seed."""
    groups: dict[tuple[str, str], dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for s in summaries:
        opts = s["config"].get("options", {})
        label = s["config"]["preset"]
        if s["task"] == "translation":
            label += f" {opts.get('src_lang')}→{opts.get('tgt_lang')}"
        groups[(s["task"], label)][s["arch"]].append(s)
    out = []
    for (task, label), runs in groups.items():
        seeds = {arch: sorted(r["config"]["seed"] for r in rs) for arch, rs in runs.items()}
        if len({tuple(v) for v in seeds.values()}) > 1:
            raise SystemExit(f"error: {task} {label}: the architectures' seeds differ ({seeds}); repeats pair by seed")
        out.append((task, label, {arch: sorted(rs, key=lambda r: r["config"]["seed"]) for arch, rs in sorted(runs.items())}))
    return out


def repeats_tables(paths: list[str]) -> str:
    """``--repeats``: bench/presets.py's repeats tables (Markdown) of the run summaries at ``paths``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from presets import repeats_markdown  # beside this file; loads the library only when called

    return repeats_markdown(group_runs([json.loads(Path(p).read_text()) for p in paths]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--repeats", action="store_true",
                        help="the runs are run summaries (python -m core run --out): the repeats tables")
    args = parser.parse_args()
    if args.repeats:
        print(repeats_tables(args.runs))
        return
    groups: dict[tuple, dict[str, tuple[dict, dict]]] = defaultdict(dict)
    print("| run | params | wall / CPU s | utility train / val | shadow fidelity (m / nm; shadows train / val) |")
    print("|---|---|---|---|---|")
    attack_lines = []
    for path in args.runs:
        for s in json.loads(Path(path).read_text())["rows"]:
            data = s.get("data", {})
            label = f"{s['task']} {s['preset']} {data.get('pair', s['config']['dataset'])} {s['arch'].upper()} seed {s['config']['seed']}"
            row, boots = run_rows(s, args.resamples)
            groups[(s["task"], s["preset"], data.get("pair", s["config"]["dataset"]), "seed", s["config"]["seed"])][s["arch"]] = (row, boots)
            print(f"| {label} | {s['params']:,} | {s['bench_wall_s']:.0f} / {s['bench_cpu_s']:.0f} | {fmt_utility(s)} | "
                  f"{fidelity(s)} |")
            res = 1 / row["n_members"]
            cells = ", ".join(f"{n} {a['auc']:.3f} [{a['lo']:.3f}, {a['hi']:.3f}] (TPR@1% {a['tpr1']:.3f})"
                              for n, a in row["attacks"].items())
            attack_lines.append(f"* {label} — N = {row['n']} records (one member = {res:.3g} of TPR): {cells}")
    print("\nAUC [95 % bootstrap interval over the evaluation records]:\n")
    print("\n".join(attack_lines))
    print("\nFFNN − RNN, AUC difference [95 % interval]:\n")
    for key, archs in groups.items():
        if {"ffnn", "rnn"} <= set(archs):
            (_, bf), (_, br) = archs["ffnn"], archs["rnn"]
            cells = []
            for name in sorted(set(bf) & set(br)):
                d = bf[name] - br[name]
                lo, hi = np.percentile(d, [2.5, 97.5])
                verdict = "inconclusive" if lo <= 0 <= hi else ("FFNN leaks more" if lo > 0 else "RNN leaks more")
                cells.append(f"{name} {np.mean(d):+.3f} [{lo:+.3f}, {hi:+.3f}] {verdict}")
            print(f"* {' '.join(map(str, key))}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
