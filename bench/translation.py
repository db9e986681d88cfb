"""Benchmark the translation task's quick preset: both architectures, cold then warm.

    .venv/bin/python bench/translation.py [--preset quick] [--set key=value ...]

Cold = a fresh, empty MIA_CACHE_DIR (data generation, victim, shadows, attacks); warm = the same
command again (the result comes from the cache). Each run is a separate ``python -m core run``
process, as a user would start it. Prints one table row per architecture.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(arch: str, preset: str, sets: list[str], cache: str, out: str) -> float:
    cmd = [sys.executable, "-m", "core", "run", "--task", "translation", "--arch", arch, "--preset", preset,
           "--quiet", "--out", out]
    for s in sets:
        cmd += ["--set", s]
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env={**os.environ, "MIA_CACHE_DIR": cache}, check=True,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--set", dest="sets", action="append", default=[])
    parser.add_argument("--archs", default="rnn,ffnn")
    args = parser.parse_args()
    header = (f"{'arch':5} {'cold s':>7} {'warm s':>7} {'params':>9} {'BLEU tr':>8} {'BLEU val':>8}  "
              + "  ".join(f"{n + ' auc/acc':>19}" for n in ("shadow(PVMIA)", "prmia", "bleu_feature")))
    rows = []
    with tempfile.TemporaryDirectory(prefix="mia-bench-") as tmp:
        for arch in args.archs.split(","):
            cache, out = os.path.join(tmp, f"cache-{arch}"), os.path.join(tmp, f"{arch}.json")
            cold = run(arch, args.preset, args.sets, cache, out)
            warm = run(arch, args.preset, args.sets, cache, out)
            d = json.loads(Path(out).read_text())
            att = d["attacks"]
            cells = "  ".join(f"{att[n]['auc']:>9.3f}/{att[n]['accuracy']:<9.3f}" for n in ("shadow", "prmia", "bleu_feature"))
            rows.append(f"{arch:5} {cold:7.1f} {warm:7.1f} {d['params']:9,d} {d['utility']['train']:8.1f} "
                        f"{d['utility']['val']:8.1f}  {cells}")
            print(rows[-1], file=sys.stderr, flush=True)
    print(f"translation, preset {args.preset}{' ' + ' '.join(args.sets) if args.sets else ''}")
    print(header)
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
