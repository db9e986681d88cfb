"""Navigation learning curve of one agent (no shadows, no attack): goal-reaching on member maps vs frames.

    .venv/bin/python bench/nav_probe.py --arch ffnn --preset paper [--set frames=1000000 ...] [--json out.json]

Trains the victim of the preset (with overrides) and, after every pipeline epoch, rolls it out once
on each member map and on as many unseen maps: the share of maps whose goal it reaches, the mean
return and the frames seen so far. Used to size the navigation presets' frame budgets.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="ffnn")
    parser.add_argument("--preset", default="paper")
    parser.add_argument("--set", action="append", default=[], help="KEY=VALUE override (repeatable)")
    parser.add_argument("--json")
    args = parser.parse_args()
    import numpy as np

    from core.experiment.roles import make_splits, role_seed, train_model
    from core.tasks import get_task
    from core.tasks.navigation import total_frames, updates_per_epoch

    task = get_task("navigation")
    over = dict(kv.split("=", 1) for kv in args.set)
    cfg = task.make_config(args.arch, args.preset, {**over, "attack_epochs": ""})
    data = task.load(cfg)
    splits = make_splits(cfg, data)
    per_epoch_frames = updates_per_epoch(cfg) * cfg.options.n_envs * cfg.options.frames_per_env
    rows = []
    t0 = time.perf_counter()

    def on_epoch(epoch: int, model) -> None:
        model.eval()
        mem = task.rollouts(cfg, model, data, splits.victim_members)
        uns = task.rollouts(cfg, model, data, splits.victim_nonmembers)
        model.train()
        row = {"epoch": epoch, "frames": epoch * per_epoch_frames, "s": round(time.perf_counter() - t0, 1),
               "member_success": float(np.mean([r.reached for r in mem])),
               "member_return": float(np.mean([r.episode_return for r in mem])),
               "unseen_success": float(np.mean([r.reached for r in uns])),
               "unseen_return": float(np.mean([r.episode_return for r in uns]))}
        rows.append(row)
        print(json.dumps(row), flush=True)

    print(f"{args.arch} {cfg.dataset} n_train={cfg.n_train} frames={total_frames(cfg):,} lr={cfg.lr} {over}", flush=True)
    train_model(task, cfg, data, splits.victim_members, role_seed(cfg, "victim"), on_epoch)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"arch": args.arch, "preset": args.preset, "overrides": over, "rows": rows}, fh)


if __name__ == "__main__":
    main()
