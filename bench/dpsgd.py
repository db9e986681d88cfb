"""Benchmark: the cost of DP-SGD.

* ``epochs``: the DP-SGD epoch time over the non-private epoch time, FFNN and RNN of every task's
  quick preset (one victim, σ = 1, C = 1), interleaved (plain, private, plain, private) and the
  faster of each pair kept, since a shared machine's load comes and goes. The RNNs' per-sample
  gradients are the expensive ones.
* ``sweep``: a task's quick DP-SGD sweep (default: image) — σ = 0.5, 1, 2, 4, FFNN and RNN, every
  point a full run (victim, shadows, attacks at every checkpoint) plus the undefended baseline,
  from an empty cache unless ``--cache`` names one — timed, with each point's utility loss,
  attack accuracy and ε (RDP, PRV). ``--arch`` and ``--sigmas`` cut it into pieces that separate
  processes can run side by side on one shared ``--cache`` (the baseline is trained once: the
  pipeline's inter-process lock).

    .venv/bin/python bench/dpsgd.py epochs [--task image|translation|navigation|all] [--json f.json]
    .venv/bin/python bench/dpsgd.py sweep [--task image] [--arch ffnn,rnn] [--sigmas 0.5,1,2,4] [--json f.json]

Target (2 CPU cores): the quick sweep in under 10 minutes.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.experiment.roles import train_model  # noqa: E402
from core.foundations.device import configure_threads, usable_cores  # noqa: E402
from core.tasks import get_task  # noqa: E402

SWEEP_SIGMAS = (0.5, 1.0, 2.0, 4.0)
#: epochs timed per mode (navigation: one epoch = updates_per_epoch PPO updates, rollouts included)
EPOCHS = {"image": 2, "translation": 2, "navigation": 1}


def epoch_seconds(task_name: str, arch: str, dp: str) -> float:
    task = get_task(task_name)
    cfg = task.make_config(arch, "quick", {"epochs": EPOCHS[task_name], "attack_epochs": (), "dp": dp,
                                           "dp_noise_multiplier": 1.0, "dp_max_grad_norm": 1.0})
    data = task.load(cfg)
    records = []
    train_model(task, cfg, data, data.victim_pool[: cfg.n_train], seed=1, on_record=records.append)
    return records[0].seconds / cfg.epochs


def bench_epochs(tasks: list[str]) -> list[dict]:
    rows = []
    for task_name in tasks:
        for arch in ("ffnn", "rnn"):
            times: dict[str, list[float]] = {"off": [], "sigma": []}
            for _ in range(2):
                for dp in ("off", "sigma"):
                    times[dp].append(epoch_seconds(task_name, arch, dp))
            plain, private = min(times["off"]), min(times["sigma"])
            row = {"task": task_name, "arch": arch, "plain_epoch_s": plain, "dp_epoch_s": private,
                   "ratio": private / plain}
            print(f"{task_name:12s} {arch:5s} plain {plain:7.2f} s/epoch   DP-SGD {private:7.2f} s/epoch   "
                  f"ratio {private / plain:5.2f}", flush=True)
            rows.append(row)
    return rows


def bench_sweep(task_name: str = "image", archs: tuple[str, ...] = ("ffnn", "rnn"),
                sigmas: tuple[float, ...] = SWEEP_SIGMAS, cache_dir: str | None = None) -> dict:
    from core.defenses.sweeps import sweep
    from core.experiment.cache import ArtifactCache

    task = get_task(task_name)
    cache = ArtifactCache(Path(cache_dir) if cache_dir else Path(tempfile.mkdtemp(prefix="dpsweep-")))
    out: dict = {"task": task_name, "sigmas": list(sigmas), "archs": {}}
    start = time.perf_counter()
    for arch in archs:
        t = time.perf_counter()
        result = sweep(task.make_config(arch, "quick"), "dpsgd", list(sigmas), cache=cache,
                       on_point=lambda i, n, p: print(f"  {arch} point {i}/{n} done at {time.perf_counter() - start:.0f} s",
                                                      flush=True))
        out["archs"][arch] = {
            "seconds": time.perf_counter() - t,
            "baseline": {"utility": result.baseline.utility, "attack": result.baseline.attack.accuracy},
            "points": [{"sigma": p.value, "epsilon_rdp": p.dpsgd.epsilon_by("rdp"),
                        "epsilon_prv": p.dpsgd.epsilon_by("prv"), "utility": p.utility,
                        "utility_loss": p.utility_loss, "attack": p.attack.accuracy,
                        "auc": p.attack.auc, "trained_s": p.timings["trained_s"]} for p in result.points],
        }
        for p in out["archs"][arch]["points"]:
            print(f"{task_name} {arch:5s} σ={p['sigma']:<4g} ε RDP {p['epsilon_rdp']:7.2f} PRV {p['epsilon_prv']:7.2f}  "
                  f"utility {p['utility']:.3f} (loss {p['utility_loss']:+.1%})  attack {p['attack']:.3f}", flush=True)
    out["seconds"] = time.perf_counter() - start
    print(f"{task_name} quick DP sweep ({len(sigmas)} σ × {', '.join(archs)}, baselines included): {out['seconds']:.0f} s "
          f"on {usable_cores()} usable CPU cores, {torch.get_num_threads()} torch threads", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("epochs", "sweep"))
    parser.add_argument("--task", default="all", choices=("image", "translation", "navigation", "all"))
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--arch", default="ffnn,rnn", help="sweep: architectures (comma-separated)")
    parser.add_argument("--sigmas", default=",".join(f"{s:g}" for s in SWEEP_SIGMAS), help="sweep: σ values")
    parser.add_argument("--cache", help="sweep: cache folder (default: a fresh temporary one)")
    args = parser.parse_args()
    configure_threads()
    if args.what == "epochs":
        result: object = bench_epochs(["image", "translation", "navigation"] if args.task == "all" else [args.task])
    else:
        result = bench_sweep("image" if args.task == "all" else args.task, tuple(args.arch.split(",")),
                             tuple(float(v) for v in args.sigmas.split(",")), args.cache)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
