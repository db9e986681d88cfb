"""Issue 32.8: why do LiRA/RMIA's AUCs move under Dir_k the way they do on the image quick runs — the RNN's rise at
k = 10, and fall by ~0.05 at k = 10,000 (almost no noise)? Two suspects, each measured here on the cached runs:

* the logit scaling: LiRA reads φ = log c − log(1 − c) of the true-class confidence c. Dir_k draws from
  Dir(k·((1 − nη)p + η)); for a saturated answer (1 − c far below η) the noisy 1 − c is of the order of the draw's
  own scatter, so φ of near-1 confidences moves by many units even when k is large;
* the naive attacker's undefended references: its references (the shadows' answers) and its threshold are fitted on
  undefended answers, so a shift of the victim's φ under the mechanism is read against the wrong distribution.

For each architecture and k it prints: the undefended AUC; the naive attacker's (references undefended, what the
Defenses page shows); the same with the references passed through the same Dir_k draw (the adaptive attacker's
LiRA/RMIA); the median |Δφ| of members and non-members; and the share of records whose undefended 1 − c lies below
the floor's scale (n − 1)·η. AUC columns: the change from undefended, mean over ``--draws`` draws ± the 95 %
interval's half-width (t, N = draws).

    MIA_CACHE_DIR=<cache with the runs> python bench/dirichlet_reference_attacks.py [--task image] [--preset quick]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.defenses.adaptive_answers import defended_reference_inputs  # noqa: E402
from core.defenses.defender import Defender  # noqa: E402

from core.defenses.spec import DefenseSpec
from core.experiment.pipeline import trained_models  # noqa: E402
from core.experiment.reference_attacks import (fit_reference_attacks, score_reference_attacks,  # noqa: E402
    step_logit_confidence)
from core.tasks import get_task  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="image")
    ap.add_argument("--preset", default="quick")
    ap.add_argument("--k", default="10,100,1000,10000")
    ap.add_argument("--draws", type=int, default=8)
    args = ap.parse_args()
    for arch in ("ffnn", "rnn"):
        cfg = get_task(args.task).make_config(arch, args.preset)
        d = Defender(trained_models(cfg))
        member = np.asarray(d.membership, bool)
        base = {n: d.baseline.attacks[n].auc for n in ("lira", "rmia")}
        phi0 = step_logit_confidence(d.victim_responses)
        gap = 1.0 / (1.0 + np.exp(phi0))  # 1 − c
        n_classes = d.victim_responses.n_classes if hasattr(d.victim_responses, "n_classes") else 10
        floor = (n_classes - 1) * DefenseSpec("dirichlet", 1.0).eta
        print(f"\n{args.task} {args.preset} {arch}: undefended LiRA AUC {base['lira']:.3f}, RMIA {base['rmia']:.3f}; "
              f"undefended φ median members {np.median(phi0[member]):.1f}, non-members {np.median(phi0[~member]):.1f}; "
              f"1 − c below (n−1)η = {floor:.0e}: members {np.mean(gap[member] < floor):.0%}, "
              f"non-members {np.mean(gap[~member] < floor):.0%}")
        print(f"      k | ΔAUC naive LiRA  RMIA       | refs defended LiRA  RMIA       | median |Δφ| members  non-members"
              f"  (N = {args.draws} draws)")
        for k in [float(v) for v in args.k.split(",")]:
            spec = DefenseSpec("dirichlet", k, draws=args.draws).validate()
            naive = {"lira": [], "rmia": []}
            adaptive = {"lira": [], "rmia": []}
            dphi_m, dphi_n = [], []
            for draw in range(args.draws):
                answers = d.victim_answers(spec, draw, False)
                population = d.population_answers(spec, draw)
                out = score_reference_attacks(d.reference_attacks, answers, d.membership, population)
                inputs = defended_reference_inputs(d, spec, draw, answers, population)
                out_ad = score_reference_attacks(fit_reference_attacks(inputs), answers, d.membership)
                for n in naive:
                    naive[n].append(out[n].result.auc - base[n])
                    adaptive[n].append(out_ad[n].result.auc - base[n])
                dphi = np.abs(step_logit_confidence(answers) - phi0)
                dphi_m.append(np.median(dphi[member]))
                dphi_n.append(np.median(dphi[~member]))

            def cell(v: list[float]) -> str:  # mean change over the draws ± the 95 % interval's half-width
                half = stats.t.ppf(0.975, len(v) - 1) * np.std(v, ddof=1) / np.sqrt(len(v)) if len(v) > 1 else np.nan
                return f"{np.mean(v):+.3f}±{half:.3f}"

            print(f"{k:7g} | {cell(naive['lira'])} {cell(naive['rmia'])} | {cell(adaptive['lira'])} "
                  f"{cell(adaptive['rmia'])} | {np.mean(dphi_m):6.2f} {np.mean(dphi_n):6.2f}", flush=True)


if __name__ == "__main__":
    main()
