"""A victim-only probe of translation settings: one model trained on the victim's ``n_train`` members, its train /
validation BLEU (greedy, ``bleu_sentences`` members / non-members of the victim's half, as the task's utility reports
them), the wall seconds since training began (and those spent training) and the process' CPU seconds — on a shared
machine the CPU seconds are what other jobs inflate least — after chosen epochs.

    OMP_NUM_THREADS=1 .venv/bin/python bench/translation_probe.py ARCHS PRESET EPOCHS_TO_REPORT KEY=VALUE ...

ARCHS is ``ffnn``, ``rnn`` or ``ffnn,rnn`` (one after the other, in that order); EPOCHS_TO_REPORT a comma list or
``all``. e.g. ``bench/translation_probe.py ffnn,rnn multi30k_small all data_dir=/data/multi30k``. Used to choose a
preset's sizes and schedule before the full preset (shadows, attacks) is run; nothing is cached, no attack runs.
Each report is printed twice: a line for people, then the same as one JSON line (it starts with ``{``) for a script.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.cli_common import parse_sets  # noqa: E402
from core.models.translation import count_params  # noqa: E402
from core.tasks import get_task  # noqa: E402


def probe(arch: str, preset: str, report: set[int] | None, sets: dict) -> None:
    """Train one victim of ``arch`` and print its BLEU after each epoch in ``report`` (None: every epoch)."""
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


def main(argv: list[str]) -> None:
    archs, preset = argv[0].split(","), argv[1]
    report = None if argv[2] == "all" else {int(e) for e in argv[2].split(",")}
    sets = parse_sets(argv[3:])
    for arch in archs:
        probe(arch, preset, report, sets)


if __name__ == "__main__":
    main(sys.argv[1:])
