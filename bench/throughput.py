"""Training throughput: the victim and shadows of a preset trained one by one vs as one vectorised
ensemble (core.training.ensemble), cold, in one run; plus the attack stage.

    .venv/bin/python bench/throughput.py [--tasks image] [--archs ffnn,rnn] [--presets quick] [--repeat 1]

Per task × architecture × preset: the models of one config (victim + shadows), the wall time to
train them sequentially (``local`` executor) and as one ensemble (``ensemble`` executor) — each
in a fresh cache, so both are cold — their ratio, models per second, and the attack stage of the
run (attack fitting and scoring at every checkpoint epoch, LiRA, RMIA), and within it the attack
fitting of all checkpoint epochs one set at a time vs jointly (core.attacks.shadow_attacks.fit_attack_sets). Configs the task cannot
vectorise (DP-SGD, the ReNet's nn.LSTM, PPO, the translation models) print "sequential only".
``--bf16`` adds the sequential training with ``precision=bf16`` (autocast). The device is the one the library picks (a GPU when present). The timings are only comparable
within one run: the machine's load changes between runs.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def timed_models(cfg, executor, folder: str) -> float:
    """Cold wall time of trained_models(cfg) in the fresh cache ``folder``."""
    from core.experiment.cache import ArtifactCache
    from core.experiment.pipeline import trained_models

    t = time.perf_counter()
    trained_models(cfg, cache=ArtifactCache(folder), executor=executor)
    return time.perf_counter() - t


def attack_stage(cfg, folder: str) -> float:
    """Seconds of the attack stage of the run whose models ``folder`` caches."""
    from core.experiment.cache import ArtifactCache
    from core.experiment.pipeline import run_experiment

    return float(run_experiment(cfg, cache=ArtifactCache(folder)).summary["timings"]["attack_s"])


def attack_fitting(cfg, folder: str) -> tuple[float, float]:
    """Seconds to fit the attacks of every checkpoint epoch one set at a time, then all sets
    jointly (core.attacks.shadow_attacks.fit_attack_sets), on the shadows ``folder`` caches."""
    from core.attacks.shadow_attacks import fit_attack_sets, fit_attacks
    from core.experiment.cache import ArtifactCache
    from core.experiment.pipeline import build_attacks, trained_models
    from core.foundations.device import single_thread

    models = trained_models(cfg, cache=ArtifactCache(folder))
    responses = [models.shadow_responses(e) for e in cfg.checkpoint_epochs]
    with single_thread():  # as the pipeline fits them
        t = time.perf_counter()
        for r in responses:
            fit_attacks(build_attacks(models.task, cfg), r, models.shadow_membership)
        one_by_one = time.perf_counter() - t
        t = time.perf_counter()
        fit_attack_sets([build_attacks(models.task, cfg) for _ in responses], responses, models.shadow_membership)
        joint = time.perf_counter() - t
    return one_by_one, joint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="image")
    parser.add_argument("--archs", default="ffnn,rnn")
    parser.add_argument("--presets", default="quick")
    parser.add_argument("--repeat", type=int, default=1, help="alternate sequential/ensemble this many times")
    parser.add_argument("--bf16", action="store_true",
                        help="also time the sequential training with precision=bf16 (image and translation)")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    from core.experiment.executor import make_executor
    from core.foundations.device import configure_threads, default_device
    from core.tasks import get_task

    configure_threads()
    import torch

    import core.training.ensemble  # noqa: F401 — loaded here, outside every timing of the ensemble executor
    from core.tasks import get_task as _get

    for name in args.tasks.split(","):  # each task's modules and data loaders, outside every timing
        _get(name)

    device = default_device()
    print(f"device: {device} · torch threads: {torch.get_num_threads()} · cores: {os.cpu_count()}", flush=True)
    rows = []
    for task_name in args.tasks.split(","):
        task = get_task(task_name)
        for preset in args.presets.split(","):
            for arch in args.archs.split(","):
                cfg = task.make_config(arch, preset)
                seq, ens, folders = [], [], []
                for _ in range(args.repeat):  # alternate, so a change of load hits both
                    folders += [tempfile.mkdtemp(prefix="mia_throughput_"), tempfile.mkdtemp(prefix="mia_throughput_")]
                    seq.append(timed_models(cfg, None, folders[-2]))
                    if task.supports_ensemble(cfg):
                        ens.append(timed_models(cfg, make_executor("ensemble"), folders[-1]))
                n = 1 + cfg.n_shadows
                row = {"task": task_name, "arch": arch, "preset": preset, "models": n, "device": str(device),
                       "sequential_s": min(seq), "ensemble_s": min(ens) if ens else None,
                       "speedup": (min(seq) / min(ens)) if ens else None,
                       "models_per_s_sequential": n / min(seq), "models_per_s_ensemble": (n / min(ens)) if ens else None,
                       "attack_stage_s": attack_stage(cfg, folders[0]), "checkpoint_epochs": len(cfg.checkpoint_epochs)}
                row["attack_fit_one_by_one_s"], row["attack_fit_joint_s"] = attack_fitting(cfg, folders[0])
                if args.bf16 and task_name != "navigation":
                    folders.append(tempfile.mkdtemp(prefix="mia_throughput_"))
                    row["sequential_bf16_s"] = timed_models(cfg.with_updates({"precision": "bf16"}), None, folders[-1])
                for folder in folders:
                    shutil.rmtree(folder, ignore_errors=True)
                rows.append(row)
                ens_text = (f"ensemble {row['ensemble_s']:.1f} s ({row['models_per_s_ensemble']:.2f} models/s) → "
                            f"{row['speedup']:.2f}×" if ens else "ensemble: sequential only (not vectorisable)")
                print(f"{task_name:11} {arch:4} {preset:6} {n} models: sequential {row['sequential_s']:.1f} s "
                      f"({row['models_per_s_sequential']:.2f} models/s), {ens_text}; attack stage "
                      f"{row['attack_stage_s']:.1f} s; attack fitting at {row['checkpoint_epochs']} checkpoint epochs: "
                      f"one set at a time {row['attack_fit_one_by_one_s']:.1f} s, jointly {row['attack_fit_joint_s']:.1f} s → "
                      f"{row['attack_fit_one_by_one_s'] / row['attack_fit_joint_s']:.2f}×"
                      + (f"; sequential in bf16 {row['sequential_bf16_s']:.1f} s" if "sequential_bf16_s" in row else ""),
                      flush=True)
    print_targets(rows, str(device))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


def print_targets(rows: list[dict], device: str) -> None:
    """The training-throughput targets beside what this run measured (a figure this run did not measure says so):
    the ensemble's speedup over one-by-one training on a CPU (quick presets), and on a GPU the translation paper
    preset's training per architecture and its attack stage."""
    print("\ntarget | this run")
    for r in rows:
        if r["preset"] == "quick" and not device.startswith("cuda"):
            got = (f"{r['speedup']:.2f}× ({'met' if r['speedup'] >= 2 else 'not met'})" if r["speedup"]
                   else "no ensemble path for this model")
            print(f"quick, CPU, ≥ 2× vs sequential: {r['task']}/{r['arch']} | {got}")
    paper = [r for r in rows if r["task"] == "translation" and r["preset"] == "paper" and device.startswith("cuda")]
    for r in paper:
        train = r["ensemble_s"] or r["sequential_s"]
        print(f"translation paper, GPU, ≤ 60 s per architecture: {r['arch']} | {train:.1f} s training "
              f"({'met' if train <= 60 else 'not met'})")
        print(f"attack stage, translation paper, GPU, ≤ 10 s: {r['arch']} | {r['attack_stage_s']:.1f} s "
              f"({'met' if r['attack_stage_s'] <= 10 else 'not met'})")
    if not paper:
        print("translation paper on a GPU (≤ 60 s per architecture; attack stage ≤ 10 s) | not measured in this run "
              "(needs a GPU and --tasks translation --presets paper)")


if __name__ == "__main__":
    main()
