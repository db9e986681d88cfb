"""Is the Dirichlet defense's non-monotone utility curve draw noise or a defect? (issue 20)

    .venv/bin/python bench/dirichlet_draws.py [--task translation] [--arch ffnn] [--values 100,10,1,0.1,0.01]
                                              [--draws 8] [--sentences 40,200]

Trains (or loads) the preset's victim, then decodes its validation (non-member) records under
Dir(k·p̃) with ``--draws`` independent draws per k, each with its own seeded generator, for every
``--sentences`` count (the quick preset scores BLEU on its first 40; more sentences shrink the
spread), and prints per k: the mean utility over draws with its 95 % t interval, the draws' sd
and range, and the undefended utility on the same sentences. A curve whose means are monotone and
whose one-draw values scatter by more than the gaps between neighbouring k is draw noise.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from core.defenses import dirichlet  # noqa: E402
from core.pipeline import trained_models  # noqa: E402
from core.stats import mean_interval  # noqa: E402
from core.tasks import get_task  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="translation")
    p.add_argument("--arch", default="ffnn")
    p.add_argument("--preset", default="quick")
    p.add_argument("--values", default="100,10,1,0.1,0.01")
    p.add_argument("--draws", type=int, default=8)
    p.add_argument("--sentences", default="40,200", help="records decoded per utility value (translation)")
    p.add_argument("--eta", type=float, default=1e-6)
    args = p.parse_args()
    torch.set_num_threads(1)
    task = get_task(args.task)
    cfg = task.make_config(args.arch, args.preset)
    t = time.perf_counter()
    models = trained_models(cfg)
    print(f"models ready in {time.perf_counter() - t:.0f} s (config {cfg.config_hash})", flush=True)
    model = models.model("victim")
    index = models.splits.victim_nonmembers
    for n in [int(v) for v in args.sentences.split(",")]:
        c = cfg
        if hasattr(cfg.options, "bleu_sentences"):
            c = dataclasses.replace(cfg, options=dataclasses.replace(cfg.options, bleu_sentences=n))
        base = task.utility(c, model, models.data, index)
        print(f"\n{n} sentences: undefended {task.utility_metric} {base:.2f}", flush=True)
        for k in [float(v) for v in args.values.split(",")]:
            vals = []
            for d in range(args.draws):
                gen = torch.Generator().manual_seed(1000 * d + 7)
                vals.append(task.utility(c, model, models.data, index,
                                         dirichlet.torch_output_transform(k, args.eta, gen)))
            e = mean_interval(vals)
            print(f"k={k:g}: mean {e.mean:.2f} [{e.ci_low:.2f}, {e.ci_high:.2f}] sd {np.std(vals, ddof=1):.2f} "
                  f"range {min(vals):.2f}..{max(vals):.2f}  draws {', '.join(f'{v:.1f}' for v in vals)}", flush=True)


if __name__ == "__main__":
    main()
