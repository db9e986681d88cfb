"""Every attack's AUC per task and architecture over repeats, from run JSONs: each attack's row for the quick
presets with N ≥ 3 repeats and its interval (docs/results.md's attack rows).

    .venv/bin/python bench/attack_rows.py FOLDER_OR_RUN.json [...] [--compare compare.json] [--json OUT.json]

Reads every run JSON given (a folder: its ``*.json`` files that are run summaries, ``python -m core run --out``),
groups them by task and preset, pairs FFNN and RNN by seed (repeat r of both shares a seed, hence a split; a run
whose partner is missing is left out, named on stderr) and
prints, per task and attack (every key of the runs' ``attacks`` that every paired run has), the FFNN and RNN mean
AUC with 95 % Student-t intervals over the repeats, the paired FFNN − RNN difference with its t interval, the
paired t and exact sign-flip p-values, and a verdict column under the one rule of ``python -m core compare``:

* an attack whose AUC ``compare`` judges — LiRA (``lira_auc``), RMIA (``rmia_auc``) and the task's primary
  attack (``attack_auc``) — gets compare's verdict, taken from :func:`core.analyses.repeats.judged_pairs` on
  these same runs (the declared primary metric as it is; a secondary metric Holm-adjusted over compare's
  family), so it cannot differ from what ``compare`` says on the same repeats;
* every other attack is **exploratory**: its difference, interval and p-values are printed, but no verdict
  (the attack is not in compare's declared family; picking the attack with the largest difference after the
  fact would be a selection over the table).

``--compare``: a ``python -m core compare`` JSON (one comparison, or {task: comparison} as the device call writes)
whose verdicts must equal this table's for the attacks compare judges (exit 1 where one differs). Which attack has
the highest mean AUC is printed per architecture: a description of these runs, not a selection made on the
victim's evaluation records for a headline (the headline is compare's declared primary metric).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.analyses.repeats import judged_pairs  # noqa: E402
from core.experiment.results import runs  # noqa: E402
from core.measurement.stats import compare, mean_interval  # noqa: E402

#: an attack's AUC as compare names it (the task's primary attack: ``attack_auc``)
COMPARE_METRIC = {"lira": "lira_auc", "rmia": "rmia_auc"}
AUC_BOUNDS = (0.0, 1.0)


def is_run(d: Any) -> bool:
    return isinstance(d, dict) and {"task", "arch", "attacks", "config", "attack"} <= set(d)


def read_runs(paths: list[str]) -> list[dict[str, Any]]:
    files: list[Path] = []
    for p in map(Path, paths):
        files += sorted(p.glob("*.json")) if p.is_dir() else [p]
    runs = []
    for f in files:
        d = json.loads(f.read_text())
        if is_run(d):
            runs.append(d)
    if not runs:
        raise SystemExit(f"error: no run JSON among {', '.join(paths)}")
    return runs


def group_runs(runs: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, list[dict[str, Any]]]]]:
    """(task, preset label, {arch: runs sorted by seed}) per group; the architectures' seeds must agree."""
    groups: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for s in runs:
        opts = s["config"].get("options") or {}
        label = str(s["config"].get("preset") or s.get("preset"))
        if s["config"].get("dataset") in ("multi30k", "pairs") and opts.get("src_lang") and opts.get("tgt_lang"):
            label += f" {opts['src_lang']}→{opts['tgt_lang']}"
        groups[(s["task"], label)][s["arch"]].append(s)
    out = []
    for (task, label), by_arch in sorted(groups.items()):
        if set(by_arch) != {"ffnn", "rnn"}:
            raise SystemExit(f"error: {task} {label}: runs of both architectures needed, got {sorted(by_arch)}")
        seeds = {a: [r["config"]["seed"] for r in rs] for a, rs in by_arch.items()}
        if any(len(set(v)) != len(v) for v in seeds.values()):
            raise SystemExit(f"error: {task} {label}: two runs of one architecture share a seed ({seeds})")
        both = set(seeds["ffnn"]) & set(seeds["rnn"])
        alone = {a: sorted(set(v) - both) for a, v in seeds.items() if set(v) - both}
        if alone:  # a repeat whose partner did not finish: left out, and said so
            print(f"note: {task} {label}: runs without a partner of the other architecture left out: {alone}",
                  file=sys.stderr)
        if len(both) < 2:
            raise SystemExit(f"error: {task} {label}: fewer than 2 paired repeats ({seeds})")
        out.append((task, label, {a: sorted((r for r in rs if r["config"]["seed"] in both),
                                            key=lambda r: r["config"]["seed"]) for a, rs in sorted(by_arch.items())}))
    return out


def attack_rows(task: str, label: str, pair: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The rows of one group: per attack FFNN / RNN mean AUC with intervals, the paired difference, and the verdict
    by compare's rule (module docstring)."""
    ffnn, rnn = pair["ffnn"], pair["rnn"]
    _, judged = judged_pairs(runs(ffnn), runs(rnn))  # the run JSON typed once, where it is read
    primary_attack = {r["attack"]["name"] for r in ffnn + rnn}
    primary_attack = primary_attack.pop() if len(primary_attack) == 1 else None
    names = [n for n in ffnn[0]["attacks"] if all(n in r["attacks"] for r in ffnn + rnn)]
    rows = []
    for name in names:
        a = [float(r["attacks"][name]["auc"]) for r in ffnn]
        b = [float(r["attacks"][name]["auc"]) for r in rnn]
        c = compare(f"{name}_auc", a, b, -1, bounds=AUC_BOUNDS)
        metric = COMPARE_METRIC.get(name) or ("attack_auc" if name == primary_attack else None)
        judged_m = judged.get(metric) if metric else None
        if judged_m is not None:
            role = judged_m["role"]
            verdict = judged_m["verdict"]
            verdict_text = ("— (" + role + ": " + (judged_m.get("no_verdict_reason") or "no verdict") + ")"
                            if verdict is None else f"{verdict['value']} ({role}, as compare's {metric})")
            p_holm = (judged_m.get("p_holm") or {}).get("p_permutation")
        else:
            role, verdict, p_holm = "exploratory", None, None
            verdict_text = "exploratory (no verdict)"
        d = c.difference
        rows.append({"attack": name, "compare_metric": metric, "role": role,
                     "ffnn": mean_interval(a, bounds=AUC_BOUNDS).to_dict(),
                     "rnn": mean_interval(b, bounds=AUC_BOUNDS).to_dict(),
                     "difference": d.diff.to_dict(), "p_t": d.p_t, "p_permutation": d.p_permutation,
                     "p_holm_permutation": p_holm, "verdict": verdict, "verdict_text": verdict_text})
    strongest = {arch: max(rows, key=lambda r: r[arch]["mean"])["attack"] for arch in ("ffnn", "rnn")}
    return {"task": task, "preset": label, "n": len(ffnn), "seeds": [r["config"]["seed"] for r in ffnn],
            "primary_attack": primary_attack, "rows": rows, "strongest_by_mean_auc": strongest,
            "judged": {m: (j["verdict"] or {}).get("value") for m, j in judged.items()}}


def _ci(e: dict[str, Any], signed: bool = False) -> str:
    f = "{:+.3f}" if signed else "{:.3f}"
    if e.get("ci_low") is None:
        return f.format(e["mean"]) + " (no interval)"
    return f"{f.format(e['mean'])} [{f.format(e['ci_low'])}, {f.format(e['ci_high'])}]"


def _p(p: float | None) -> str:
    return "–" if p is None else f"{p:.3g}"


def markdown(groups: list[dict[str, Any]]) -> str:
    lines = ["| task | preset | attack | FFNN AUC [95 % CI] | RNN AUC [95 % CI] | FFNN − RNN [95 % CI] | p (paired t) "
             "| p (sign flip) | verdict | N |", "|---|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for g in groups:
        for r in g["rows"]:
            lines.append(f"| {g['task']} | {g['preset']} | {r['attack']} | {_ci(r['ffnn'])} | {_ci(r['rnn'])} | "
                         f"{_ci(r['difference'], True)} | {_p(r['p_t'])} | {_p(r['p_permutation'])} | "
                         f"{r['verdict_text']} | {g['n']} |")
        s = g["strongest_by_mean_auc"]
        by = {a: next(r for r in g["rows"] if r["attack"] == s[a])[a]["mean"] for a in s}
        notes.append(f"* {g['task']} {g['preset']} (N = {g['n']}, seeds {', '.join(map(str, g['seeds']))}): highest "
                     f"mean AUC — FFNN {s['ffnn']} ({by['ffnn']:.3f}), RNN {s['rnn']} ({by['rnn']:.3f}); "
                     "a description of these runs, not a selection for a headline.")
    return "\n".join(lines + [""] + notes)


def check_compare(groups: list[dict[str, Any]], path: str) -> list[str]:
    """Where ``path``'s compare verdicts differ from the ones judged here (empty: they agree)."""
    data = json.loads(Path(path).read_text())
    comparisons = [data] if "metrics" in data else list(data.values())
    problems = []
    for g in groups:
        found = [c for c in comparisons if c.get("task") == g["task"] and c.get("repeats") == g["n"]]
        if not found:
            problems.append(f"{g['task']} {g['preset']}: no comparison of N = {g['n']} in {path}")
            continue
        theirs = {m: (d.get("verdict") or {}).get("value") for m, d in found[0]["metrics"].items()}
        for m, v in g["judged"].items():
            if theirs.get(m) != v:
                problems.append(f"{g['task']} {m}: compare says {theirs.get(m)}, these runs give {v}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--compare", help="a compare JSON whose verdicts must equal these runs' (exit 1 otherwise)")
    ap.add_argument("--json", help="write the rows as JSON here")
    args = ap.parse_args(argv)
    groups = [attack_rows(t, label, pair) for t, label, pair in group_runs(read_runs(args.paths))]
    print(markdown(groups))
    if args.json:
        Path(args.json).write_text(json.dumps(groups, indent=1, allow_nan=False))
    if args.compare:
        problems = check_compare(groups, args.compare)
        print("\ncompare check: " + ("the verdicts equal compare's (" + args.compare + ")" if not problems
                                      else "DIFFERENT\n" + "\n".join(problems)))
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
