"""cProfile of one translation run (victim + one shadow, no intermediate checkpoints): where the time goes.

    .venv/bin/python bench/profile_translation.py MULTI30K_DIR EPOCHS N_TRAIN ARCH     # e.g. .m30k 1 5000 ffnn

The `paper` preset on Multi30K en→de with EPOCHS, N_TRAIN and one shadow; prints the load time, the run's
stage timings and the 30 functions with the most cumulative time, then the 15 with the most own time.
``DUMP_S`` (default 150): after that many seconds every thread's stack is printed and the run ends
(faulthandler), so a run that hangs on a device with a time limit still says where it was.
Used on the GPU machine on 2026-11-26 (docs/results.md, "GPU check").
"""
import cProfile
import faulthandler
import os
import pstats
import sys
import tempfile
import time

faulthandler.dump_traceback_later(int(os.environ.get("DUMP_S", "150")), exit=True)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from core.experiment.cache import ArtifactCache  # noqa: E402
from core.experiment.pipeline import run_experiment  # noqa: E402
from core.tasks import get_task  # noqa: E402

if len(sys.argv) != 5:
    raise SystemExit(__doc__.split("\n\n")[1])
over = dict(data_dir=sys.argv[1], src_lang="en", tgt_lang="de", epochs=int(sys.argv[2]), n_shadows=1, attack_epochs=(),
            n_train=int(sys.argv[3]))
cfg = get_task("translation").make_config(sys.argv[4], "paper", over)
t = time.perf_counter()
get_task("translation").load(cfg)
print("load", time.perf_counter() - t, flush=True)
profile, t = cProfile.Profile(), time.perf_counter()
profile.enable()
summary = run_experiment(cfg, cache=ArtifactCache(tempfile.mkdtemp())).summary
profile.disable()
print("run", time.perf_counter() - t, summary["timings"], flush=True)
stats = pstats.Stats(profile)
stats.sort_stats("cumulative").print_stats(30)
stats.sort_stats("tottime").print_stats(15)
