"""A victim-only probe of translation settings: one model trained on the first N pairs of the victim's
half, its train / validation BLEU (greedy, ``bleu_sentences`` members / non-members) after chosen epochs.

    OMP_NUM_THREADS=1 .venv/bin/python bench/translation_probe.py ARCH PRESET EPOCHS_TO_REPORT KEY=VALUE ...

e.g. ``bench/translation_probe.py ffnn multi30k_gpu 2,4,6 data_dir=/data/multi30k n_train=2000 epochs=6``. Used to
choose a preset's learning-rate schedule on a CPU before a GPU run; nothing is cached, no attack runs.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.cli_common import parse_sets  # noqa: E402
from core.models.translation import count_params  # noqa: E402
from core.tasks import get_task  # noqa: E402


def main(argv: list[str]) -> None:
    arch, preset, report = argv[0], argv[1], {int(e) for e in argv[2].split(",")}
    task = get_task("translation")
    cfg = task.make_config(arch, preset, parse_sets(argv[3:]))
    t = time.perf_counter()
    data = task.load(cfg)
    torch.manual_seed(cfg.seed)
    model = task.build_model(cfg, data)
    members = np.asarray(data.victim_pool[: cfg.n_train])
    nonmembers = np.asarray(data.victim_pool[cfg.n_train: cfg.n_train + cfg.options.bleu_sentences])
    print(f"{arch} {count_params(model):,} parameters · {data.description} · load {time.perf_counter() - t:.0f} s",
          flush=True)
    start = time.perf_counter()

    def on_epoch(epoch: int, m) -> None:
        if epoch in report:
            train_bleu = task.utility(cfg, m, data, members)
            val_bleu = task.utility(cfg, m, data, nonmembers)
            print(f"epoch {epoch}: BLEU train {train_bleu:.1f} / val {val_bleu:.1f} · {time.perf_counter() - start:.0f} s",
                  flush=True)

    task.train(cfg, model, data, members, on_epoch, lambda f: None)


if __name__ == "__main__":
    main(sys.argv[1:])
