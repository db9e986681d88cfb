"""The Streamlit server computes with one torch thread; its worker processes keep their configured pools."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# torch's intra-op thread count is set process-wide and read per thread (a thread takes the process's count when
# it first computes); the server runs each script run on a new thread, so a fresh thread is what a page computes on
PROBE = """
import os, threading
import torch

def fresh_thread():
    out = []
    t = threading.Thread(target=lambda: out.append(torch.get_num_threads()))
    t.start(); t.join()
    return out[0]

torch.set_num_threads(2)
before = fresh_thread()
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({app!r}).run(timeout=120)
assert not at.exception, [e.message for e in at.exception]
after = fresh_thread()
from core.foundations.processes import init_worker
init_worker(threads=2)  # a worker's initializer still sizes its own pool
print(before, after, torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS"))
"""


def test_the_server_process_computes_with_one_torch_thread(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env["MIA_CACHE_DIR"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", PROBE.format(app=str(ROOT / "app.py"))],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    before, after, worker, omp = out.stdout.split()[-4:]
    # two threads before the app's entry script ran, one after; not through the environment the workers inherit
    assert (before, after, worker, omp) == ("2", "1", "2", "None")
