"""Time to results for each "your data" layout: the first run (empty cache) and a warm reopen.

    .venv/bin/python bench/your_data.py                       # generated fixtures, tiny sizes: minutes on 2 cores
    .venv/bin/python bench/your_data.py --folder DIR --pairs DIR --csv FILE --preset-sizes   # your own data, presets

Each layout runs the CLI as a user would (`python -m core run --task … --arch …`, a fresh `MIA_CACHE_DIR`), once
cold and once warm (the same command again: the result comes from the cache), and the Your model page's preview
(`python -m core inspect`). Without paths it writes its own small fixtures under a temporary data root: class
folders of generated PNGs, a CSV table, parallel text. It prints one row per layout and architecture: records,
utility, the strongest attack's AUC, cold and warm wall time.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
#: tiny sizes for generated fixtures (the presets' sizes with --preset-sizes)
TINY = ["--set", "n_train=60", "--set", "n_eval=30", "--set", "n_shadows=2", "--set", "epochs=4",
        "--set", "attack_epochs=", "--set", "attack_train_epochs=20"]


def write_fixtures(root: Path) -> dict[str, Path]:
    from PIL import Image

    rng = np.random.default_rng(0)
    folder = root / "images"
    for c in range(3):
        (folder / f"class_{c}").mkdir(parents=True)
        for i in range(80):
            pixels = rng.normal(60 + 60 * c, 40, (16, 16, 3)).clip(0, 255).astype("uint8")
            Image.fromarray(pixels).save(folder / f"class_{c}" / f"{i:03d}.png")
    table = root / "table.csv"
    with table.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["age", "dose", "site", "outcome"])
        for i in range(600):
            age, dose = rng.normal(50, 10), rng.normal(5, 2)
            w.writerow([f"{age:.0f}", f"{dose:.2f}", ["a", "b", "c"][i % 3],
                        "yes" if age / 10 + dose + rng.normal(0, 2) > 10 else "no"])
    pairs = root / "text"
    pairs.mkdir()
    words = ["red", "blue", "dog", "cat", "runs", "sits", "big", "small", "the", "a"]
    src, tgt = [], []
    for i in range(400):
        s = [words[j] for j in rng.integers(0, len(words), 6)]
        src.append(" ".join(s))
        tgt.append(" ".join(w[::-1] for w in reversed(s)))
    (pairs / "train.en").write_text("\n".join(src) + "\n")
    (pairs / "train.xx").write_text("\n".join(tgt) + "\n")
    return {"folder": folder, "csv": table, "pairs": pairs}


def run(args: list[str], env: dict[str, str]) -> tuple[float, dict]:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "core", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"error: {' '.join(args)}: {out.stderr.strip()}")
    return wall, json.loads(out.stdout) if out.stdout.strip() else {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, help="class folders of images (default: generated)")
    parser.add_argument("--csv", type=Path, help="a CSV table (default: generated); --label names its label column")
    parser.add_argument("--label", default="outcome")
    parser.add_argument("--pairs", type=Path, help="a folder of parallel text (default: generated, en → xx)")
    parser.add_argument("--src", default="en")
    parser.add_argument("--tgt", default="xx")
    parser.add_argument("--preset-sizes", action="store_true", help="the layouts' presets as they are (no tiny sizes)")
    parser.add_argument("--archs", default="ffnn,rnn")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        root.mkdir()
        made = write_fixtures(root)
        folder, table, pairs = args.folder or made["folder"], args.csv or made["csv"], args.pairs or made["pairs"]
        data_root = os.path.commonpath([str(p.resolve()) for p in (folder, table, pairs)] + [str(root)])
        env = {**os.environ, "MIA_CACHE_DIR": str(Path(tmp) / "cache"), "MIA_DATA_ROOT": data_root}
        sizes = [] if args.preset_sizes else TINY
        layouts = {
            "class folders": ["--task", "image", "--preset", "folder_quick", "--set", f"data_dir={folder}",
                              "--set", "image_size=16" if not args.preset_sizes else "image_size=32"],
            "CSV table": ["--task", "tabular", "--set", "dataset=csv", "--set", f"data_dir={table}",
                          "--set", f"label={args.label}"],
            "parallel text": ["--task", "translation", "--preset", "pairs_cpu", "--set", f"data_dir={pairs}",
                              "--set", f"src_lang={args.src}", "--set", f"tgt_lang={args.tgt}"],
        }
        print(f"{'layout':15} {'arch':5} {'records':>8} {'inspect s':>9} {'utility':>8} {'best AUC':>9} "
              f"{'cold s':>7} {'warm s':>7}")
        for name, layout in layouts.items():
            inspect_s, preview = run(["inspect", *layout, *sizes], env)
            for arch in args.archs.split(","):
                cold, summary = run(["run", *layout, "--arch", arch, *sizes, "--quiet"], env)
                warm, again = run(["run", *layout, "--arch", arch, *sizes, "--quiet"], env)
                assert again["attacks"] == summary["attacks"], "a warm reopen must serve the same result"
                best = max((a["auc"], n) for n, a in summary["attacks"].items())
                print(f"{name:15} {arch:5} {preview['n_records']:>8,} {inspect_s:>9.1f} "
                      f"{summary['utility']['val']:>8.3f} {best[0]:>9.3f} {cold:>7.1f} {warm:>7.1f}   ({best[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
