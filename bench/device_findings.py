"""One device call: the translation preset that translates on the GPU, and the Findings
table's F1 runs on the CPU cores the GPU leaves, side by side, within a hard wall-clock budget.

    python3 bench/device_findings.py --multi30k .m30k --out "$OUT" [--budget-s 520] [--gpu-cores 7] [--tiny]

The one command of the device tool, run from the repository root with the device image's Python (it holds torch;
every process it starts uses the same one). Wheels the device image lacks, carried by the caller in ``.whl/`` at
the repository root, are installed into ``/tmp/site`` first and put on the path of every process it starts; a
module the runs need that is still missing is one ``error:`` line, exit 2. Two parts start together:

* **GPU** — ``bench/gpu_check.py --only tests multi30k_gpu "translation paper en→de rnn"`` pinned to the
  last ``--gpu-cores`` cores: the CUDA-relevant tests, then the ``multi30k_gpu`` preset en→de for both
  architectures (victim + 5 shadows side by side in worker processes: training and attack-stage seconds,
  train / validation BLEU, every attack's AUC), then the paper preset's LSTM (its attack stage) when the
  check's own step budget still allows it. Steps that do not fit print "not measured (budget)".
* **CPU** — every other core runs one process at a time (``MIA_DEVICE=cpu``, ``OMP_NUM_THREADS=1``,
  pinned with ``taskset`` on a machine of ≥ 16 cores): ``python -m core run --task T --arch A --preset quick
  --set seed=S`` for repeat r = 0 … ``--repeats``−1 of both architectures, S = ``repeat_seed(0, r)``
  (:mod:`core.analyses.repeats`), all into one shared ``MIA_CACHE_DIR``. Tasks in order translation,
  image, navigation (``--tasks``); the repeats of a task alternate FFNN / RNN so the runs that finish form
  pairs. A run starts only if its expected time (the longest measured run of its kind so far, else a
  default) ends before the CPU deadline; one that does not is "not measured (budget)", one still running
  at the deadline is killed (rc 124).
* Then, from that cache only: ``python -m core compare --task T --preset quick --repeats N`` for each task
  whose 2N runs all succeeded (each repeat's config hash is the one compare builds, so compare trains
  nothing: the cache's entries are counted before and after, and a run it trained would be named in the
  log), and ``python -m core findings --preset quick`` (JSON and Markdown).

Outputs in ``--out`` (at most 8 files): ``session.log`` (this script's lines), ``gpu_check.log``,
``gpu_check.json``, ``times.tsv`` (each CPU run: wall s, rc), ``compare.json`` ({task: compare's JSON}),
``findings.json``, ``findings.md`` and ``cpu_runs.tgz`` (each run's JSON and log, compare's logs).

``--tiny`` shrinks every run to seconds (a few records, one epoch, one shadow) and runs the GPU part on the
CPU: it checks every step's wiring on any machine in a few minutes; nothing it prints is a measurement.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
#: what the runs import; the device image may lack some (their wheels carried in .whl/)
NEEDED = ("torch", "numpy", "scipy", "sklearn", "diskcache", "safetensors", "sacrebleu", "opacus")
#: where carried wheels are installed (never into the image's own Python)
CARRIED_SITE = "/tmp/site"


def use_carried_wheels() -> None:
    """Install the wheels in ``ROOT/.whl/`` (if any) into :data:`CARRIED_SITE`, first on the path of this process and
    of the processes it starts; then exit 2 with one line when a module of :data:`NEEDED` is still missing."""
    wheels = sorted(str(w) for w in (ROOT / ".whl").glob("*.whl"))
    if wheels and subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                                  "--no-compile", "--no-cache-dir", "--upgrade", "--target", CARRIED_SITE,
                                  *wheels]).returncode == 0:
        sys.path.insert(0, CARRIED_SITE)
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [CARRIED_SITE, os.environ.get("PYTHONPATH", "")]))
    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    if missing:
        print(f"error: {sys.executable} cannot import: {' '.join(missing)} (carry their wheels in .whl/)",
              file=sys.stderr)
        raise SystemExit(2)


if __name__ == "__main__":
    use_carried_wheels()  # before the library's first import

from core.analyses.repeats import repeat_seed  # noqa: E402

#: the tasks of F1, in the order their runs are queued (the required ones first)
TASKS = ("translation", "image", "navigation")
#: expected wall seconds of one quick run on one core, before one of its kind has been measured
#: (docs/results.md "Quick presets": CPU s on a loaded 2-core machine, rounded up generously)
DEFAULT_RUN_S = {("translation", "ffnn"): 160, ("translation", "rnn"): 100, ("image", "ffnn"): 45,
                 ("image", "rnn"): 35, ("navigation", "ffnn"): 160, ("navigation", "rnn"): 230}
#: --tiny: every run in seconds (config keys as --set takes them)
TINY_SETS = {
    "image": ["n_train=24", "n_eval=12", "epochs=2", "n_shadows=1", "attack_epochs=1", "attack_train_epochs=2",
              "batch_size=8", "cnn_width=4", "cnn_fc=8"],
    "translation": ["n_pairs_source=200", "n_train=24", "n_eval=12", "epochs=1", "n_shadows=1", "attack_epochs=",
                    "attack_train_epochs=2", "emb=8", "hidden=8", "bleu_sentences=4", "n_examples=1"],
    "navigation": ["n_train=2", "n_eval=2", "epochs=1", "n_shadows=1", "attack_epochs=", "attack_train_epochs=2",
                   "frames=512", "n_envs=4", "frames_per_env=64", "batch_size=64"],
}
#: seconds kept after the CPU runs for compare + findings + packing
AFTER_RUNS_S = 75.0


class Session:
    def __init__(self, out: Path, budget_s: float):
        self.out, self.start, self.budget_s = out, time.monotonic(), budget_s
        self.log_lines: list[str] = []
        self.lock = threading.Lock()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def left(self) -> float:
        return self.budget_s - self.elapsed()

    def say(self, text: str) -> None:
        line = f"[{self.elapsed():5.0f} s] {text}"
        with self.lock:
            print(line, flush=True)
            self.log_lines.append(line)
            (self.out / "session.log").write_text("\n".join(self.log_lines) + "\n")


def pinned(cores: list[int] | None, cmd: list[str]) -> list[str]:
    """``cmd`` under ``taskset -c cores`` when given (a machine with enough cores and taskset)."""
    return ["taskset", "-c", ",".join(map(str, cores)), *cmd] if cores else cmd


def run_bounded(cmd: list[str], seconds: float, log: Path, env: dict[str, str], cwd: Path = ROOT) -> tuple[int, float]:
    """Run ``cmd`` with stdout+stderr into ``log``, killed (its process group) after ``seconds``: (rc, wall s);
    rc 124 when it was killed."""
    t = time.monotonic()
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True)
        try:
            rc = proc.wait(timeout=max(1.0, seconds))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
            rc = 124
    return rc, time.monotonic() - t


def cache_entries(folder: Path) -> int:
    """Entries of the cache (rows of diskcache's database, read-only): a training or a result stored adds some."""
    db = folder / "cache.db"
    if not db.is_file():
        return 0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(con.execute("SELECT COUNT(*) FROM Cache").fetchone()[0])
    finally:
        con.close()


#: the device tool brings back files of at most 16 MiB
MAX_FILE_BYTES = 15 * 2**20


def compact(summary: dict) -> dict:
    """A run's JSON without its bulk (per-record scores, ROC curves, examples): what the tables read."""
    out = {k: v for k, v in summary.items() if k not in ("records", "examples")}
    out["attacks"] = {n: {k: v for k, v in a.items() if k != "roc"} for n, a in summary.get("attacks", {}).items()}
    out["compacted"] = "records, examples and ROC curves left out to fit the device tool's 16 MiB per file"
    return out


def pack(runs: Path, target: Path, s: "Session") -> None:
    """``runs`` as one .tgz; when it exceeds :data:`MAX_FILE_BYTES`, the runs' JSONs are compacted first."""
    with tarfile.open(target, "w:gz") as tar:
        tar.add(runs, arcname="runs")
    if target.stat().st_size <= MAX_FILE_BYTES:
        return
    s.say(f"{target.name}: {target.stat().st_size / 2**20:.1f} MiB, over the limit: the run JSONs compacted")
    for path in runs.glob("*_r*.json"):
        try:
            path.write_text(json.dumps(compact(json.loads(path.read_text()))))
        except (ValueError, OSError) as exc:
            s.say(f"{path.name}: not compacted ({exc})")
    with tarfile.open(target, "w:gz") as tar:
        tar.add(runs, arcname="runs")
    s.say(f"{target.name}: {target.stat().st_size / 2**20:.1f} MiB")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--multi30k", required=True, help="the Multi30K folder (train.en.gz, train.de.gz, …)")
    p.add_argument("--out", required=True, help="folder for the outputs (created)")
    p.add_argument("--budget-s", type=float, default=520.0, help="hard wall-clock budget of the whole call")
    p.add_argument("--gpu-cores", type=int, default=7, help="cores left to the GPU part (the last ones)")
    p.add_argument("--repeats", type=int, default=6, help="repeats per architecture of each task's quick preset")
    p.add_argument("--tasks", default=",".join(TASKS), help="tasks of the CPU runs, in queue order")
    p.add_argument("--no-gpu", action="store_true", help="leave out the GPU part")
    p.add_argument("--tiny", action="store_true", help="tiny sizes everywhere, the GPU part on the CPU (wiring only)")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    m30k = Path(args.multi30k).resolve()
    if not (m30k / "train.en.gz").is_file() or not (m30k / "train.de.gz").is_file():
        print(f"error: --multi30k must name a folder holding train.en.gz and train.de.gz, got {args.multi30k!r}",
              file=sys.stderr)
        return 2
    if args.gpu_cores < 1 or args.repeats < 1 or args.budget_s < 60:
        print("error: --gpu-cores and --repeats must be ≥ 1 and --budget-s ≥ 60", file=sys.stderr)
        return 2
    tasks = [t for t in args.tasks.split(",") if t]
    if any(t not in TASKS for t in tasks):
        print(f"error: --tasks must name tasks among {', '.join(TASKS)}, got {args.tasks!r}", file=sys.stderr)
        return 2
    s = Session(out, args.budget_s)
    work = Path(tempfile.mkdtemp(prefix="device_findings_"))
    runs, cache = work / "runs", work / "cache"
    runs.mkdir()
    py = sys.executable
    allowed = sorted(os.sched_getaffinity(0))  # the cores this process may use (what nproc counts)
    ncores = len(allowed)
    can_pin = bool(shutil.which("taskset")) and ncores >= 16
    n_gpu = 0 if args.no_gpu else args.gpu_cores
    gpu_cores = allowed[ncores - n_gpu:] if can_pin and n_gpu else None
    cpu_cores = allowed[: ncores - n_gpu] if can_pin else None
    n_workers = len(cpu_cores) if cpu_cores else max(1, ncores - (0 if args.no_gpu else 1))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    s.say(f"host {os.uname().nodename} · {ncores} cores · commit {commit or '?'} · python {sys.version.split()[0]} · "
          f"{'TINY (wiring only, nothing here is a measurement)' if args.tiny else 'full'} · budget {args.budget_s:.0f} s")
    s.say(f"GPU part on cores {gpu_cores or 'any'} · {n_workers} CPU workers on cores {cpu_cores or 'any'} · "
          f"cache {cache} · multi30k {m30k}")
    smi = shutil.which("nvidia-smi")
    if smi:
        info = subprocess.run([smi, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True).stdout.strip()
        s.say(f"nvidia-smi: {info}")
    base_env = {**os.environ, "PYTHONUNBUFFERED": "1", "MIA_CACHE_DIR": str(cache)}
    if "navigation" in tasks:
        probe = subprocess.run([py, "-c", "import minigrid, gymnasium"], capture_output=True, text=True, cwd=ROOT)
        if probe.returncode != 0:
            s.say("navigation: not run (minigrid/gymnasium cannot be imported here: "
                  f"{(probe.stderr.strip().splitlines() or ['?'])[-1]})")
            tasks.remove("navigation")

    # ---------------------------------------------------------------- GPU part
    gpu_thread = None
    if not args.no_gpu:
        gpu_limit = args.budget_s - 15.0  # ends (or is killed) before the packing at the end
        check = [py, "bench/gpu_check.py", "--multi30k", str(m30k), "--json", str(out / "gpu_check.json"),
                 "--budget-s", str(round(args.budget_s * 0.74)),
                 "--only", "tests", "multi30k_gpu", "translation paper en→de rnn"]
        if args.tiny:
            check.append("--tiny")
        # the check's own cold caches: MIA_CACHE_DIR is its stray-catcher only, kept apart from the CPU runs'
        gpu_env = {**base_env, "MIA_CACHE_DIR": str(work / "gpu_cache")}

        def gpu_part() -> None:
            s.say("gpu_check: started")
            rc, wall = run_bounded(pinned(gpu_cores, check), gpu_limit - s.elapsed(), out / "gpu_check.log", gpu_env)
            s.say(f"gpu_check: rc {rc} in {wall:.0f} s{' (killed at the budget)' if rc == 124 else ''}")

        gpu_thread = threading.Thread(target=gpu_part, daemon=True)
        gpu_thread.start()

    # ---------------------------------------------------------------- CPU runs
    cpu_deadline = args.budget_s - AFTER_RUNS_S
    queue: list[tuple[str, str, int]] = [(t, a, r) for t in tasks for r in range(args.repeats) for a in ("ffnn", "rnn")]
    measured: dict[tuple[str, str], float] = {}
    results: dict[tuple[str, str, int], tuple[int | None, float]] = {}
    qlock = threading.Lock()
    (out / "times.tsv").write_text("run\tseed\twall_s\trc\tcore\n")

    def worker(slot: int) -> None:
        core = [cpu_cores[slot]] if cpu_cores else None
        while True:
            with qlock:
                if not queue:
                    return
                task, arch, r = queue.pop(0)
                expect = measured.get((task, arch), 30.0 if args.tiny else DEFAULT_RUN_S[(task, arch)])
                if s.elapsed() + expect > cpu_deadline:
                    results[(task, arch, r)] = (None, 0.0)
                    s.say(f"{task} {arch} r{r}: not measured (budget: ~{expect:.0f} s expected, "
                          f"{cpu_deadline - s.elapsed():.0f} s left)")
                    continue
            seed = repeat_seed(0, r)
            name = f"{task}_{arch}_r{r}"
            cmd = [py, "-m", "core", "run", "--task", task, "--arch", arch, "--preset", "quick", "--set", f"seed={seed}",
                   "--executor", "local", "--quiet", "--out", str(runs / f"{name}.json")]
            for kv in (TINY_SETS[task] if args.tiny else []):
                cmd += ["--set", kv]
            env = {**base_env, "MIA_DEVICE": "cpu", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
            rc, wall = run_bounded(pinned(core, cmd), cpu_deadline - s.elapsed(), runs / f"{name}.log", env)
            with qlock:
                results[(task, arch, r)] = (rc, wall)
                if rc == 0:
                    measured[(task, arch)] = max(wall, measured.get((task, arch), 0.0))
                with open(out / "times.tsv", "a") as fh:
                    fh.write(f"{name}\t{seed}\t{wall:.1f}\t{rc}\t{core[0] if core else '-'}\n")
            s.say(f"{name} (seed {seed}): rc {rc} in {wall:.0f} s")

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(n_workers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    s.say("CPU runs done: " + "; ".join(
        f"{t} {sum(1 for (tt, _, _), (rc, _) in results.items() if tt == t and rc == 0)}/{2 * args.repeats} ok"
        for t in tasks))

    # ---------------------------------------------------------------- compare + findings from the cache
    compares: dict[str, object] = {}
    env = {**base_env, "MIA_DEVICE": "cpu", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

    def compare(task: str) -> None:
        complete = all(results.get((task, a, r), (None,))[0] == 0 for a in ("ffnn", "rnn") for r in range(args.repeats))
        if not complete:
            compares[task] = f"not run: not all {2 * args.repeats} runs of {task} quick succeeded (see times.tsv)"
            s.say(f"compare {task}: {compares[task]}")
            return
        target = runs / f"compare_{task}.json"
        cmd = [py, "-m", "core", "compare", "--task", task, "--preset", "quick", "--repeats", str(args.repeats),
               "--executor", "local", "--quiet", "--out", str(target)]
        for kv in (TINY_SETS[task] if args.tiny else []):
            cmd += ["--set", kv]
        rc, wall = run_bounded(cmd, min(60.0, args.budget_s - 20 - s.elapsed()), runs / f"compare_{task}.log", env)
        compares[task] = json.loads(target.read_text()) if rc == 0 and target.is_file() else f"rc {rc} (log in cpu_runs.tgz)"
        s.say(f"compare {task}: rc {rc} in {wall:.0f} s")

    before = cache_entries(cache)
    threads = [threading.Thread(target=compare, args=(t,), daemon=True) for t in tasks]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    after = cache_entries(cache)
    s.say(f"cache entries before / after compare: {before} / {after}"
          f"{' (compare trained nothing)' if after == before else ' (compare ADDED entries: it trained or stored something)'}")
    (out / "compare.json").write_text(json.dumps(compares, indent=1))

    limit = min(90.0, args.budget_s - 12 - s.elapsed())
    if args.tiny:  # the tiny runs differ from the preset per task: one table per task with its own --set
        merged: dict[str, object] = {}
        md_parts = []
        for task in tasks:
            cmd = [py, "-m", "core", "findings", "--task", task, "--preset", "quick",
                   "--out", str(runs / f"findings_{task}.json"), "--markdown", str(runs / f"findings_{task}.md")]
            for kv in TINY_SETS[task]:
                cmd += ["--set", kv]
            rc, wall = run_bounded(cmd, limit, runs / f"findings_{task}.log", env)
            s.say(f"findings {task}: rc {rc} in {wall:.0f} s")
            if rc == 0:
                merged[task] = json.loads((runs / f"findings_{task}.json").read_text())
                md_parts.append((runs / f"findings_{task}.md").read_text())
        (out / "findings.json").write_text(json.dumps(merged, indent=1))
        (out / "findings.md").write_text("\n".join(md_parts))
    else:
        cmd = [py, "-m", "core", "findings", "--preset", "quick", "--out", str(out / "findings.json"),
               "--markdown", str(out / "findings.md")]
        rc, wall = run_bounded(cmd, limit, runs / "findings.log", env)
        s.say(f"findings: rc {rc} in {wall:.0f} s")
    pack(runs, out / "cpu_runs.tgz", s)
    if gpu_thread is not None:
        gpu_thread.join(max(1.0, args.budget_s - 3 - s.elapsed()))
    gpu_json = out / "gpu_check.json"
    if gpu_json.is_file():
        for name, value in json.loads(gpu_json.read_text()).get("steps", {}).items():
            s.say(f"gpu step {name}: {json.dumps(value, default=str)[:600]}")
    s.say(f"done in {s.elapsed():.0f} s (budget {args.budget_s:.0f} s); outputs: "
          + ", ".join(sorted(f.name for f in out.iterdir())))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
