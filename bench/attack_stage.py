"""The attack stage fitted one attack at a time (MIA_ATTACK_BATCHED=0) vs as one batched fit, side by side.

    .venv/bin/python bench/attack_stage.py [--tasks image,translation,navigation] [--preset quick]
        [--arch ffnn] [--set key=value ...] [--repeat 1] [--models-cache DIR] [--executor ensemble] [--json FILE]
    # on a GPU, translation paper (the issue-34 target: <= 10 s):
    .venv/bin/python bench/attack_stage.py --tasks translation --preset paper --arch rnn --executor processes \
        --set data_dir=.m30k --set src_lang=en --set tgt_lang=de --no-fit

Per task: the victim and shadows of the config are trained once (or loaded: ``--models-cache``,
default a folder under the temporary directory that later runs reuse), then the run's whole
attack stage (``run_experiment``'s ``timings.attack_s``: every attack fitted at every checkpoint
epoch and scored, the models-stage attacks, the shadow fidelity) is timed with
``MIA_ATTACK_BATCHED=0`` (old: one attack at a time, :func:`core.attacks.shadow_attacks.fit_attack_sets`
with ``batched=False``) and ``=1`` (new: :mod:`core.attacks.attack_ensemble`), each in a fresh
copy of the models' cache (no fitted attack or result cached), alternating the order over
``--repeat`` rounds after one untimed warm-up stage (torch's lazy imports on first use would
otherwise land in whichever path ran first). Then the learned attacks' fit alone (``fit_attack_sets``
over every checkpoint epoch, both paths; ``--no-fit`` leaves it out): the part of the stage the batched
fit changes. Prints each time, the old/new ratios, and every attack's AUC on both paths (they agree up
to float rounding). Wall times are comparable only within one
run: the machine's load changes between runs (print ``uptime`` beside them); the CPU seconds, printed
beside them, move much less under load.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PATHS = {"old": "0", "new": "1"}


def value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def stage(cfg, models_cache: str, path: str) -> tuple[float, float, float, dict[str, float]]:
    """(attack_s, CPU seconds of the whole run, CPU seconds of the attack stage alone, {attack: AUC}) of
    one run of ``cfg`` on a fresh copy of ``models_cache`` through ``path``. The run's CPU time is the
    attack stage's plus loading the cached models, the examples and the summary (the same for both
    paths); the stage's own (``timings.attack_cpu_s``) is what the paths differ in. Unlike the wall time
    they barely move when other processes share the cores."""
    from core.experiment.cache import ArtifactCache
    from core.experiment.pipeline import run_experiment

    folder = tempfile.mkdtemp(prefix="attack_stage_")
    try:
        shutil.copytree(models_cache, folder, dirs_exist_ok=True)
        os.environ["MIA_ATTACK_BATCHED"] = PATHS[path]
        cpu = time.process_time()
        summary = run_experiment(cfg, cache=ArtifactCache(folder)).summary
        cpu = time.process_time() - cpu
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return (float(summary["timings"]["attack_s"]), cpu, float(summary["timings"]["attack_cpu_s"]),
            {n: float(r["auc"]) for n, r in summary["attacks"].items()})


def fitting(cfg, models_cache: str, path: str) -> tuple[float, float]:
    """(wall, CPU) seconds of the fit alone (every checkpoint epoch's attacks, as the pipeline fits them) through ``path``."""
    from core.attacks.shadow_attacks import fit_attack_sets
    from core.experiment.cache import ArtifactCache
    from core.experiment.pipeline import build_attacks, trained_models
    from core.foundations.device import single_thread

    models = trained_models(cfg, cache=ArtifactCache(models_cache))
    responses = [models.shadow_responses(e) for e in cfg.checkpoint_epochs]
    sets = [build_attacks(models.task, cfg) for _ in responses]
    with single_thread():
        t, cpu = time.perf_counter(), time.process_time()
        fit_attack_sets(sets, responses, models.shadow_membership, batched=path == "new")
        return time.perf_counter() - t, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="image,translation,navigation")
    parser.add_argument("--preset", default="quick")
    parser.add_argument("--arch", default="ffnn")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config overrides (every task)")
    parser.add_argument("--repeat", type=int, default=1, help="timed rounds of old and new (order alternates)")
    parser.add_argument("--models-cache", default=os.path.join(tempfile.gettempdir(), "mia_attack_stage_models"))
    parser.add_argument("--executor", default="ensemble", help="how the models are trained when not cached "
                        "(e.g. processes for translation paper on a GPU, as gpu_check trains it)")
    parser.add_argument("--no-fit", action="store_true", help="leave out the fit-alone timing")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    overrides = {}
    for item in args.set:
        if "=" not in item:
            parser.error(f"--set wants KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        overrides[k] = value(v)
    from core.experiment.cache import ArtifactCache
    from core.experiment.executor import make_executor
    from core.experiment.pipeline import trained_models
    from core.foundations.device import configure_threads, default_device
    from core.tasks import get_task

    threads = configure_threads()
    print(f"device {default_device()}, {threads} thread(s); load {os.getloadavg()}", flush=True)
    rows = []
    for task in args.tasks.split(","):
        cfg = get_task(task).make_config(args.arch, args.preset, overrides)
        t = time.perf_counter()
        trained_models(cfg, cache=ArtifactCache(args.models_cache), executor=make_executor(args.executor))
        print(f"{task} {args.preset} {args.arch}: models ready in {time.perf_counter() - t:.1f} s", flush=True)
        stage(cfg, args.models_cache, "new")  # warm-up, untimed
        times: dict[str, list[float]] = {"old": [], "new": []}
        cpus: dict[str, list[float]] = {"old": [], "new": []}
        stage_cpus: dict[str, list[float]] = {"old": [], "new": []}
        aucs: dict[str, dict[str, float]] = {}
        for r in range(args.repeat):
            for path in (("old", "new") if r % 2 == 0 else ("new", "old")):
                seconds, cpu, stage_cpu, aucs[path] = stage(cfg, args.models_cache, path)
                times[path].append(seconds)
                cpus[path].append(cpu)
                stage_cpus[path].append(stage_cpu)
                print(f"  {path}: attack stage {seconds:.2f} s wall, {stage_cpu:.2f} CPU s; run {cpu:.2f} CPU s "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
        fits: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
        for r in range(0 if args.no_fit else args.repeat):
            for path in (("old", "new") if r % 2 == 0 else ("new", "old")):
                fits[path].append(fitting(cfg, args.models_cache, path))
                print(f"  {path}: the learned attacks' fit alone {fits[path][-1][0]:.2f} s wall, "
                      f"{fits[path][-1][1]:.2f} CPU s (load {os.getloadavg()[0]:.1f})", flush=True)
        old, new = min(times["old"]), min(times["new"])
        old_cpu, new_cpu = min(cpus["old"]), min(cpus["new"])
        old_stage, new_stage = min(stage_cpus["old"]), min(stage_cpus["new"])
        diff = max(abs(aucs["old"][n] - aucs["new"][n]) for n in aucs["old"])
        print(f"{task} {args.preset} {args.arch}: attack stage old {old:.2f} s, new {new:.2f} s, "
              f"old/new {old / new:.2f}x (best of {args.repeat}); the run's CPU time old {old_cpu:.2f} s, "
              f"new {new_cpu:.2f} s, old/new {old_cpu / new_cpu:.2f}x; the stage's CPU time old {old_stage:.2f} s, "
              f"new {new_stage:.2f} s, old/new {old_stage / new_stage:.2f}x", flush=True)
        if fits["old"]:
            fo, fn = min(f[0] for f in fits["old"]), min(f[0] for f in fits["new"])
            co, cn = min(f[1] for f in fits["old"]), min(f[1] for f in fits["new"])
            print(f"{task} {args.preset} {args.arch}: fit alone old {fo:.2f} s, new {fn:.2f} s, old/new {fo / fn:.2f}x; "
                  f"CPU old {co:.2f} s, new {cn:.2f} s, old/new {co / cn:.2f}x", flush=True)
        for n in aucs["old"]:
            print(f"    {n:<22} AUC old {aucs['old'][n]:.4f}  new {aucs['new'][n]:.4f}", flush=True)
        print(f"    largest AUC difference {diff:.4f}", flush=True)
        rows.append({"task": task, "preset": args.preset, "arch": args.arch, "old_s": times["old"], "new_s": times["new"],
                     "ratio": old / new, "old_cpu_s": cpus["old"], "new_cpu_s": cpus["new"],
                     "cpu_ratio": old_cpu / new_cpu, "old_stage_cpu_s": stage_cpus["old"],
                     "new_stage_cpu_s": stage_cpus["new"], "stage_cpu_ratio": old_stage / new_stage, "fit_old_s": fits["old"], "fit_new_s": fits["new"], "auc": aucs,
                     "max_auc_diff": diff})
    os.environ.pop("MIA_ATTACK_BATCHED", None)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
