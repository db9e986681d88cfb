"""A victim-only probe of translation settings: one model trained on the victim's ``n_train`` members, its train /
validation BLEU (greedy, ``bleu_sentences`` members / non-members of the victim's half, as the task's utility reports
them), the wall seconds since training began (and those spent training) and the process' CPU seconds — on a shared
machine the CPU seconds are what other jobs inflate least — after chosen epochs.

    OMP_NUM_THREADS=1 .venv/bin/python bench/translation_probe.py ARCHS PRESET EPOCHS_TO_REPORT [--loss-auc] KEY=VALUE ...

ARCHS is ``ffnn``, ``rnn`` or ``ffnn,rnn`` (one after the other, in that order); EPOCHS_TO_REPORT a comma list or
``all``. e.g. ``bench/translation_probe.py ffnn,rnn multi30k_small all data_dir=/data/multi30k``. Used to choose a
preset's sizes and schedule before the full preset (shadows, attacks) is run; nothing is cached, and no attack of
the pipeline runs (``--loss-auc``: after training, the victim-only loss attack's AUC on the preset's evaluation
split, a floor on how saturated its attacks are).
Each report is printed twice: a line for people, then the same as one JSON line (it starts with ``{``) for a script.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy.stats import rankdata

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.cli.common import parse_sets  # noqa: E402
from core.models import count_params  # noqa: E402
from core.tasks import get_task  # noqa: E402


def probe(arch: str, preset: str, report: set[int] | None, sets: dict, loss_auc: bool = False) -> None:
    """Train one victim of ``arch`` and print its BLEU after each epoch in ``report`` (None: every epoch); with
    ``loss_auc``, then the victim-only loss attack's AUC (:func:`print_loss_auc`)."""
    task = get_task("translation")
    cfg = task.make_config(arch, preset, sets)
    t = time.perf_counter()
    data = task.load(cfg)
    torch.manual_seed(cfg.seed)
    model = task.build_model(cfg, data)
    members = np.asarray(data.victim_pool[: cfg.n_train])
    nonmembers = np.asarray(data.victim_pool[cfg.n_train: cfg.n_train + cfg.options.bleu_sentences])
    print(f"{arch} {count_params(model):,} parameters · {data.description} · {len(members):,} members · "
          f"seed {cfg.seed} · load {time.perf_counter() - t:.0f} s", flush=True)
    start, cpu_start = time.perf_counter(), time.process_time()
    bleu_seconds = 0.0

    def on_epoch(epoch: int, m) -> None:
        nonlocal bleu_seconds
        if report is None or epoch in report:
            b = time.perf_counter()
            train_bleu = task.utility(cfg, m, data, members)
            val_bleu = task.utility(cfg, m, data, nonmembers)
            bleu_seconds += time.perf_counter() - b
            total, cpu = time.perf_counter() - start, time.process_time() - cpu_start
            print(f"{arch} epoch {epoch}: BLEU train {train_bleu:.1f} / val {val_bleu:.1f} · {total:.0f} s "
                  f"({total - bleu_seconds:.0f} s training; {cpu:.0f} CPU s in all)", flush=True)
            print(json.dumps({"arch": arch, "preset": preset, "epoch": epoch, "train_bleu": round(train_bleu, 2),
                              "val_bleu": round(val_bleu, 2), "seconds": round(total, 1),
                              "training_seconds": round(total - bleu_seconds, 1), "cpu_seconds": round(cpu, 1)}),
                  flush=True)

    task.train(cfg, model, data, members, on_epoch, lambda f: None)
    if loss_auc:
        print_loss_auc(task, cfg, model, data, arch, preset)


def mean_token_nll(task, model, data, index: np.ndarray) -> np.ndarray:
    """Each record's mean negative log-probability of its reference tokens (incl. <eos>), teacher-forced."""
    out = []
    for logits, lengths, ref in task._teacher_forced(model, data, index):
        nll = -torch.log_softmax(logits, -1).gather(1, ref[:, None])[:, 0].cpu().numpy()
        out.extend(float(part.mean()) for part in np.split(nll, np.cumsum(lengths)[:-1]))
    return np.asarray(out)


def loss_auc_of(member_loss: np.ndarray, nonmember_loss: np.ndarray) -> float:
    """P(a member's loss < a non-member's), ties counted half (the Mann-Whitney U over both sets, average ranks)."""
    ranks = rankdata(np.concatenate([-member_loss, -nonmember_loss]))
    m, k = len(member_loss), len(nonmember_loss)
    return float((ranks[:m].sum() - m * (m + 1) / 2) / (m * k))


def print_loss_auc(task, cfg, model, data, arch: str, preset: str) -> None:
    """The victim-only loss attack: AUC of −(mean token loss) separating ``n_eval`` members from ``n_eval``
    non-members of the victim's half (the split the preset's attacks are evaluated on). It needs no shadow, so it
    is not the preset's primary (shadow-model) attack; on the multi30k_gpu run its loss-threshold AUC was below the
    shadow attack's, so it is a floor on saturation, not a substitute."""
    n = cfg.n_eval
    members = np.asarray(data.victim_pool[:n])
    nonmembers = np.asarray(data.victim_pool[cfg.n_train: cfg.n_train + n])
    t = time.perf_counter()
    lm, ln = mean_token_nll(task, model, data, members), mean_token_nll(task, model, data, nonmembers)
    auc = loss_auc_of(lm, ln)
    print(f"{arch} loss attack (victim only, {len(lm)} + {len(ln)} records): AUC {auc:.3f}; mean token loss members "
          f"{lm.mean():.3f} / non-members {ln.mean():.3f} · {time.perf_counter() - t:.0f} s", flush=True)
    print(json.dumps({"arch": arch, "preset": preset, "loss_auc": round(float(auc), 4), "members": len(lm),
                      "nonmembers": len(ln), "member_loss": round(float(lm.mean()), 4),
                      "nonmember_loss": round(float(ln.mean()), 4)}), flush=True)


def main(argv: list[str]) -> None:
    loss_auc = "--loss-auc" in argv
    argv = [a for a in argv if a != "--loss-auc"]
    archs, preset = argv[0].split(","), argv[1]
    report = None if argv[2] == "all" else {int(e) for e in argv[2].split(",")}
    sets = parse_sets(argv[3:])
    for arch in archs:
        probe(arch, preset, report, sets, loss_auc)


if __name__ == "__main__":
    main(sys.argv[1:])
