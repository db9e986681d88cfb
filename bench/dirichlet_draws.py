"""Is the Dirichlet defense's non-monotone utility curve draw noise or a defect? (issue 20)

    .venv/bin/python bench/dirichlet_draws.py [--task translation] [--arch ffnn] [--values 100,10,1,0.1,0.01]
                                              [--draws 8] [--sentences 40,200] [--repeat R]

Trains (or loads) the preset's victim, then decodes its validation (non-member) records under
Dir(k·p̃) with ``--draws`` independent draws per k, each with its own seeded generator, for every
``--sentences`` count (the quick preset scores BLEU on its first 40; more sentences shrink the
spread), and prints per k: the mean utility over draws with its 95 % t interval, the draws' sd
and range, and the undefended utility on the same sentences. A curve whose means are monotone and
whose one-draw values scatter by more than the gaps between neighbouring k is draw noise.
For translation it also prints BLEU's brevity penalty and the hypothesis/reference length
ratio (means over the draws): greedy decoding that stops early is penalised, and noise that
lengthens the translations raises BLEU without better words.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import sacrebleu  # noqa: E402
import torch  # noqa: E402

from core.defenses import dirichlet  # noqa: E402
from core.experiment.pipeline import trained_models  # noqa: E402
from core.analyses.repeats import repeat_config  # noqa: E402
from core.measurement.stats import mean_interval  # noqa: E402
from core.tasks import get_task  # noqa: E402
from core.data.translation_records import detokenize  # noqa: E402


def bleu_detail(task, cfg, model, data, index, transform=None) -> tuple[float, float, float]:
    """(BLEU, brevity penalty, hypothesis/reference length ratio) of the task's utility decoding
    (the same greedy translations and corpus BLEU as ``task.utility``)."""
    index = np.asarray(index)[: cfg.options.bleu_sentences]
    hyps = [detokenize(h) for h in task.translate(cfg, model, data, index, output_transform=transform)]
    b = sacrebleu.corpus_bleu(hyps, [[data.records.reference(i) for i in index]])
    return float(b.score), float(b.bp), float(b.sys_len / max(b.ref_len, 1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="translation")
    p.add_argument("--arch", default="ffnn")
    p.add_argument("--preset", default="quick")
    p.add_argument("--values", default="100,10,1,0.1,0.01")
    p.add_argument("--draws", type=int, default=8)
    p.add_argument("--sentences", default="40,200", help="records decoded per utility value (translation)")
    p.add_argument("--eta", type=float, default=1e-6)
    p.add_argument("--repeat", type=int, default=0, help="repeat r of the preset (core.analyses.repeats.repeat_config; 0 = it)")
    args = p.parse_args()
    torch.set_num_threads(1)
    task = get_task(args.task)
    cfg = repeat_config(task.make_config(args.arch, args.preset), args.repeat)
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
        extra = ""
        if args.task == "translation":
            _, bp, ratio = bleu_detail(task, c, model, models.data, index)
            extra = f" (brevity penalty {bp:.3f}, length ratio {ratio:.3f})"
        print(f"\n{n} sentences: undefended {task.utility_metric} {base:.2f}{extra}", flush=True)
        for k in [float(v) for v in args.values.split(",")]:
            vals, bps, ratios = [], [], []
            for d in range(args.draws):
                gen = torch.Generator().manual_seed(1000 * d + 7)
                transform = dirichlet.torch_output_transform(k, args.eta, gen)
                if args.task == "translation":
                    v, bp, ratio = bleu_detail(task, c, model, models.data, index, transform)
                    bps.append(bp)
                    ratios.append(ratio)
                else:
                    v = task.utility(c, model, models.data, index, transform)
                vals.append(v)
            e = mean_interval(vals)
            lengths = f"  BP {np.mean(bps):.3f} ratio {np.mean(ratios):.3f}" if bps else ""
            print(f"k={k:g}: mean {e.mean:.2f} [{e.ci_low:.2f}, {e.ci_high:.2f}] sd {np.std(vals, ddof=1):.2f} "
                  f"range {min(vals):.2f}..{max(vals):.2f}{lengths}  draws {', '.join(f'{v:.1f}' for v in vals)}",
                  flush=True)


if __name__ == "__main__":
    main()
