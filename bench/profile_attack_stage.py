"""cProfile of the attack stage alone: models trained first (side by side, not profiled), then
``run_experiment`` on the cached models under cProfile — where the attack stage's time goes.

    .venv/bin/python bench/profile_attack_stage.py TASK PRESET ARCH [key=value ...]
    # e.g. translation paper ffnn data_dir=.m30k src_lang=en tgt_lang=de epochs=2

Prints the training seconds, the run's stage timings, then the 30 functions with the most
cumulative time and the 20 with the most own time (process CPU seconds). Used on the GPU machine (docs/results.md).
"""
import ast
import cProfile
import os
import pstats
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from core.experiment.cache import ArtifactCache  # noqa: E402
from core.experiment.executor import make_executor  # noqa: E402
from core.experiment.pipeline import run_experiment, trained_models  # noqa: E402
from core.tasks import get_task  # noqa: E402


def value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


if __name__ == "__main__":
    if len(sys.argv) < 4:
        raise SystemExit(__doc__.split("\n\n")[1])
    task_name, preset, arch = sys.argv[1:4]
    over = dict(kv.split("=", 1) for kv in sys.argv[4:])
    cfg = get_task(task_name).make_config(arch, preset, {k: value(v) for k, v in over.items()})
    cache = ArtifactCache(tempfile.mkdtemp())
    t = time.perf_counter()
    trained_models(cfg, cache=cache, executor=make_executor("processes"))
    print("train", round(time.perf_counter() - t, 1), flush=True)
    # CPU seconds, not wall: on a shared machine the wall clock mostly measures the other processes
    profile = cProfile.Profile(time.process_time)
    t = time.perf_counter()
    profile.enable()
    summary = run_experiment(cfg, cache=cache).summary
    profile.disable()
    print("run", round(time.perf_counter() - t, 1), summary["timings"], flush=True)
    stats = pstats.Stats(profile)
    stats.sort_stats("cumulative").print_stats(30)
    stats.sort_stats("tottime").print_stats(20)
