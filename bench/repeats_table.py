"""The repeats tables of docs/results.md from run JSONs (``python -m core run ... --out RUN.json``).

    .venv/bin/python bench/repeats_table.py RUN.json [RUN.json ...]

Runs are grouped by task, preset and (translation) language pair, then by architecture; within a group
the runs of both architectures are paired by seed (repeat r of FFNN and RNN share a seed, hence a split).
Prints bench/presets.py's tables: every headline metric as mean [95 % t interval] per architecture, then the
paired FFNN − RNN differences with p-values and the three-valued verdicts.
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from presets import repeats_markdown  # noqa: E402


def group_runs(summaries: list[dict]) -> list[tuple[str, str, dict[str, list[dict]]]]:
    """(task, preset label, {arch: summaries sorted by seed}) per group; pairs checked by seed."""
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


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__.split("\n\n")[1])
    print(repeats_markdown(group_runs([json.loads(Path(p).read_text()) for p in sys.argv[1:]])))
