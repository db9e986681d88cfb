"""GPU check: the steps and figures that need a GPU, in one run sized for one GPU within 9 minutes.

    .venv/bin/python bench/gpu_check.py --multi30k DIR [--json out.json] [--budget-s 540]
    .venv/bin/python bench/gpu_check.py --tiny --multi30k DIR     # the same steps on the CPU, tiny sizes

A GPU is lent to these machines only now and then; this script is kept ready so that whenever one is at
hand a single command measures every figure that needs a GPU, each beside its target. Steps, in order:

1. the device: torch and CUDA versions, the GPU's name, whether it has bfloat16;
2. the CUDA-relevant tests (pytest: the vectorised ensemble, bf16 autocast, joint attacks, the device
   choice) — ``--tiny`` only collects them (a test suite inside a test would be slow and recursive);
2b. translation ``multi30k_gpu`` on Multi30K en→de (the preset that translates), Transformer and
   LSTM, cold, victim + 5 shadows side by side in worker processes: training and attack-stage seconds,
   train / validation BLEU (the bar: validation ≥ 20 for both) and every attack's AUC (the bar: ≤ 0.95);
3. image ``quick``, FFNN and RNN, cold: victim + shadows trained one by one and as one ensemble (the
   ensemble speedup, target ≥ 2×), then the attack stage;
4. translation ``paper`` on Multi30K en→de, Transformer and LSTM, cold, the six models of each side
   by side in worker processes (``processes`` executor): training time of victim + shadows per
   architecture (target ≤ 60 s on one H100/H200), each model's own seconds, the attack stage
   (target ≤ 10 s; every learned attack classifier fitted as one batched ensemble,
   ``core.attacks.attack_ensemble``), train / validation BLEU. Before the smaller steps: it is the figure
   only a GPU can give (its measured times: docs/results.md, "GPU check");
5. translation ``quick``, both architectures, cold (training and attack stage);
6. bf16: the image quick trainings again with ``precision=bf16`` (README "Precision": meant for GPUs);
7. bf16: the translation paper trainings again with ``precision=bf16``.

Each step runs in a fresh temporary cache (cold). Once ``--budget-s`` seconds have passed, the steps
left print "not measured (budget)" instead of running, so the run ends in time and says what it did
not measure. The last lines are one table: figure | this run | target | source (what kind of target
it is: a preset's, the GPU throughput's, the README's, or a figure this check reports without one).

``--tiny`` forces the CPU (``MIA_DEVICE=cpu``) and shrinks every config (a few records, one epoch, one
shadow) and each worker-process step's pool to one worker (a spawned worker's start, not its tiny training,
was most of a dry run's time): it checks that every step and figure is wired, in seconds, and measures
nothing worth reading. ``tests/test_real_presets.py`` runs it.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import core.training.ensemble  # noqa: E402, F401 — loaded here, outside every timing of the ensemble executor
from core.experiment.cache import ArtifactCache  # noqa: E402
from core.experiment.executor import make_executor  # noqa: E402
from core.experiment.pipeline import run_experiment, trained_models  # noqa: E402
from core.foundations.device import configure_threads, default_device  # noqa: E402
from core.foundations.errors import MIAError  # noqa: E402
from core.tasks import get_task  # noqa: E402

#: the CUDA-relevant tests: code paths that place tensors on the device the library picks
CUDA_TESTS = ["tests/test_ensemble.py", "tests/test_joint_attacks.py", "tests/test_attack_ensemble.py",
              "tests/test_training.py::test_bf16_autocast_trains_in_lower_precision_and_answers_in_float"]

#: tiny overrides per (task, preset): every step's wiring in seconds on a CPU
TINY = {
    ("image", "quick"): dict(n_train=24, n_eval=12, epochs=2, n_shadows=1, attack_epochs=(1,), attack_train_epochs=2,
                             batch_size=8, cnn_width=4, cnn_fc=8),
    ("translation", "quick"): dict(n_pairs_source=200, n_train=24, n_eval=12, epochs=1, n_shadows=1, attack_epochs=(),
                                   attack_train_epochs=2, emb=8, hidden=8, bleu_sentences=4, n_examples=1),
    ("translation", "paper"): dict(n_train=24, n_eval=12, epochs=2, n_shadows=1, attack_epochs=(1,), attack_train_epochs=2,
                                   emb=8, hidden=8, bleu_sentences=4, n_examples=1, batch_size=8),
    ("translation", "multi30k_gpu"): dict(n_train=24, n_eval=12, epochs=2, n_shadows=1, attack_train_epochs=2,
                                          emb=8, hidden=8, bleu_sentences=4, n_examples=1, batch_size=8,
                                          warmup_steps=2),
}


class Budget:
    """Wall-clock budget of the whole check: steps after it ran out are reported, not run."""

    def __init__(self, seconds: float):
        self.start, self.seconds = time.perf_counter(), seconds

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def left(self) -> bool:
        return self.elapsed < self.seconds


def say(text: str) -> None:
    print(text, flush=True)


def device_report() -> dict[str, Any]:
    """Torch, CUDA, the device the library picks, the GPU's name and bfloat16 support."""
    device = default_device()
    info: dict[str, Any] = {"torch": torch.__version__, "python": platform.python_version(), "device": str(device),
                            "cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available()}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
        info["bf16"] = bool(torch.cuda.is_bf16_supported())
        info["gpu_memory_gib"] = round(torch.cuda.get_device_properties(device).total_memory / 2**30, 1)
    return info


def run_tests(tiny: bool, device: str, timeout_s: float = 180.0) -> dict[str, Any]:
    """pytest on :data:`CUDA_TESTS` on ``device`` (``tiny``: collection only); returns exit code
    and its last line. ``MIA_DEVICE`` is passed on because tests/conftest.py defaults it to the CPU."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *CUDA_TESTS]
    if tiny:
        cmd.append("--collect-only")
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s,
                              env={**os.environ, "MIA_DEVICE": device})
    except subprocess.TimeoutExpired:
        return {"rc": 124, "last_line": f"timed out after {timeout_s:.0f} s", "seconds": time.perf_counter() - t,
                "collect_only": tiny, "device": device}
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    failed = [ln for ln in proc.stdout.splitlines() if ln.startswith(("FAILED", "ERROR"))]
    return {"rc": proc.returncode, "last_line": lines[-1] if lines else proc.stderr.strip()[-200:],
            "failed": failed[:20], "seconds": time.perf_counter() - t, "collect_only": tiny, "device": device}


def make_config(task_name: str, arch: str, preset: str, tiny: bool, extra: dict[str, Any]):
    overrides = dict(TINY[(task_name, preset)]) if tiny else {}
    overrides.update(extra)
    return get_task(task_name).make_config(arch, preset, overrides)


def progress_printer(name: str, every_s: float = 20.0) -> Callable[[Any], None]:
    """A progress callback printing one line at most every ``every_s`` seconds: a step cut short
    by a device's time limit still says how far it got and what its ETA was."""
    last = [time.perf_counter()]

    def show(event) -> None:
        if time.perf_counter() - last[0] >= every_s:
            last[0] = time.perf_counter()
            eta = "?" if event.eta_s is None else f"{event.eta_s:.0f} s"
            say(f"  [{name}] {event.elapsed_s:.0f} s · {event.overall_fraction:.0%} · {event.stage} · ETA {eta}")
    return show


def cold_run(cfg, executor_name: str | None = None, name: str = "", workers: int | None = None) -> dict[str, Any]:
    """Victim + shadows trained cold in a fresh cache (``executor_name``: None = one by one), then
    the attack stage on those models (``workers``: the executor's, None = one per core); seconds of both, each
    model's own training seconds
    (``model_train_s``: concurrent models share the device, so their sum exceeds the wall time)
    and the run's utility."""

    get_task(cfg.task).load(cfg)  # the data source once, outside every timing (tasks keep it loaded)
    folder = tempfile.mkdtemp(prefix="mia_gpu_check_")
    try:
        cache = ArtifactCache(folder)
        executor = make_executor(executor_name, workers) if executor_name else None
        t = time.perf_counter()
        trained = trained_models(cfg, cache=cache, executor=executor, progress=progress_printer(name or cfg.task))
        train_s = time.perf_counter() - t
        summary = run_experiment(cfg, cache=cache).summary
        return {"train_s": train_s, "attack_s": float(summary["timings"]["attack_s"]), "models": 1 + cfg.n_shadows,
                "executor": executor_name or "local",
                "model_train_s": [round(m.train_s, 1) for m in [trained.victim, *trained.shadows]],
                "utility": summary["utility"], "auc": {n: r["auc"] for n, r in summary["attacks"].items()}}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def cold_training(cfg, executor_name: str | None = None, workers: int | None = None) -> float:
    """Seconds to train victim + shadows cold (fresh cache), without the attacks."""

    get_task(cfg.task).load(cfg)
    folder = tempfile.mkdtemp(prefix="mia_gpu_check_")
    try:
        t = time.perf_counter()
        trained_models(cfg, cache=ArtifactCache(folder),
                       executor=make_executor(executor_name, workers) if executor_name else None)
        return time.perf_counter() - t
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def translation_figures(label: str, r: dict[str, Any], expected: dict[str, tuple[str, str]]) -> list[tuple[str, str, str, str]]:
    """The four figures of a translation run's step ``r`` (:func:`cold_run` on worker processes) as rows
    (figure, this run, target, source): training of victim + shadows, each model's own training, the attack
    stage, BLEU; ``expected`` gives each row's (target, source) under ``train``, ``side``, ``attack``, ``bleu``."""
    return [(f"{label}: victim + {r['models'] - 1} shadows, training (s), {r['executor']} executor",
             f"{r['train_s']:.1f}", *expected["train"]),
            (f"{label}: each model's own training (s), side by side", " / ".join(f"{x:.0f}" for x in r["model_train_s"]),
             *expected["side"]),
            (f"{label}: attack stage (s)", f"{r['attack_s']:.1f}", *expected["attack"]),
            (f"{label}: BLEU train / val", f"{r['utility']['train']:.1f} / {r['utility']['val']:.1f}", *expected["bleu"])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--multi30k", default=os.environ.get("MIA_MULTI30K", ""),
                        help="folder with Multi30K's train.en.gz and train.de.gz (translation paper)")
    parser.add_argument("--tiny", "--dry-run", action="store_true", dest="tiny",
                        help="the same steps on the CPU with tiny sizes (checks the wiring; measures nothing)")
    parser.add_argument("--budget-s", type=float, default=540.0, help="stop starting steps after this many seconds")
    parser.add_argument("--skip-tests", action="store_true", help="leave out step 2 (pytest)")
    parser.add_argument("--only", nargs="+", metavar="TEXT", default=None,
                        help="run only the steps whose name contains one of these texts (the device step always "
                             "runs), e.g. --only tests 'bf16 translation paper rnn': a short call on a GPU lent "
                             "for a few minutes measures what an earlier call left out")
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args(argv)
    if args.tiny:
        os.environ["MIA_DEVICE"] = "cpu"
    if not args.multi30k or not Path(args.multi30k).is_dir():
        print(f"error: --multi30k must name the Multi30K folder (train.en.gz, train.de.gz), got {args.multi30k!r}",
              file=sys.stderr)
        return 2
    own_cache = None
    if "MIA_CACHE_DIR" not in os.environ:  # every step has its own cold cache; this one only catches strays
        own_cache = tempfile.mkdtemp(prefix="mia_gpu_check_cache_")
        os.environ["MIA_CACHE_DIR"] = own_cache
    try:
        return check(args)
    finally:
        if own_cache:
            shutil.rmtree(own_cache, ignore_errors=True)


def check(args: argparse.Namespace) -> int:
    """The steps of :func:`main`, in order; returns the exit code (1 when the tests failed)."""
    configure_threads()
    budget = Budget(args.budget_s)
    out: dict[str, Any] = {"tiny": args.tiny, "steps": {}}
    figures: list[tuple[str, str, str, str]] = []  # (figure, this run, target, source)

    def step(name: str, fn: Callable[[], Any]) -> Any:
        if args.only and name != "device" and not any(text in name for text in args.only):
            out["steps"][name] = "not run (--only)"
            return None
        if not budget.left():
            say(f"[{name}] not measured (budget of {args.budget_s:.0f} s spent)")
            out["steps"][name] = "not measured (budget)"
            return None
        t = time.perf_counter()
        try:
            value = fn()
        except MIAError as exc:  # a refusal (e.g. no bfloat16 kernel on this CPU) is this step's answer, not a crash
            value = f"refused: {exc}"
        out["steps"][name] = value
        say(f"[{name}] {time.perf_counter() - t:.1f} s · {json.dumps(value, default=str)}")
        if args.json:  # after every step: a run cut short (a device's time limit) keeps what it measured
            Path(args.json).write_text(json.dumps(out, indent=1, default=str))
        return value

    dev = step("device", device_report)
    on_gpu = bool(dev and dev["device"].startswith("cuda"))
    if not on_gpu and not args.tiny:
        say("warning: no GPU: the figures below are CPU figures (use --tiny for a quick wiring check)")
    tests = None if args.skip_tests else step("tests", lambda: run_tests(args.tiny, dev["device"] if dev else "cpu"))
    if tests is not None:
        figures.append(("CUDA-relevant tests", f"rc {tests['rc']}: {tests['last_line']}", "rc 0", "GPU check"))

    workers = 1 if args.tiny else None  # a worker-process step's pool: one worker per core on the device
    m30k = {"dataset": "multi30k", "data_dir": args.multi30k, "src_lang": "en", "tgt_lang": "de"}
    image, paper, quick, translates = {}, {}, {}, {}
    # the preset that translates, first after the tests: the figure this check exists for
    for arch in ("ffnn", "rnn"):
        cfg = make_config("translation", arch, "multi30k_gpu", args.tiny, m30k)
        translates[arch] = step(f"translation multi30k_gpu en→de {arch}",
                                lambda cfg=cfg, arch=arch: cold_run(cfg, "processes", f"multi30k_gpu {arch}", workers))
        if translates[arch]:
            r = translates[arch]
            figures += translation_figures(f"translation multi30k_gpu {arch}", r, {
                "train": ("≤ ~180 s", "translation preset target"), "side": ("–", "GPU check"),
                "attack": ("–", "GPU check"), "bleu": ("val ≥ 20", "translation preset target")})
            figures.append((f"translation multi30k_gpu {arch}: AUC per attack",
                            ", ".join(f"{n} {a:.3f}" if isinstance(a, float) else f"{n} {a}"
                                      for n, a in r["auc"].items()), "≤ 0.95", "translation preset target"))
    for arch in ("ffnn", "rnn"):
        cfg = make_config("image", arch, "quick", args.tiny, {})
        image[arch] = step(f"image quick {arch}", lambda cfg=cfg: {
            **cold_run(cfg), "ensemble_train_s": cold_training(cfg, "ensemble")})
        if image[arch]:
            r = image[arch]
            figures.append((f"image quick {arch}: victim + {r['models'] - 1} shadows, training (s)", f"{r['train_s']:.1f}",
                            "–", "GPU check"))
            figures.append((f"image quick {arch}: ensemble speedup", f"{r['train_s'] / r['ensemble_train_s']:.2f}×", "≥ 2×",
                            "GPU throughput target"))
            figures.append((f"image quick {arch}: attack stage (s)", f"{r['attack_s']:.1f}", "–", "README"))
    # the study-size run next, before the smaller figures: it is the one only a GPU can give. Its
    # models train side by side in worker processes: one such model leaves an H100 mostly idle (each
    # step is a few hundred small kernels, bound by the CPU that queues them), so six CPU cores
    # queueing for six models keep it busier than one core queueing for one model after another
    paper_executor = "processes"
    for arch in ("ffnn", "rnn"):
        cfg = make_config("translation", arch, "paper", args.tiny, m30k)
        paper[arch] = step(f"translation paper en→de {arch}",
                           lambda cfg=cfg, arch=arch: cold_run(cfg, paper_executor, f"paper {arch}", workers))
        if paper[arch]:
            figures += translation_figures(f"translation paper {arch}", paper[arch], {
                "train": ("≤ 60 s", "GPU throughput target"), "side": ("–", "GPU check"),
                "attack": ("≤ 10 s", "GPU throughput target"), "bleu": ("–", "GPU check")})
    for arch in ("ffnn", "rnn"):
        cfg = make_config("translation", arch, "quick", args.tiny, {})
        quick[arch] = step(f"translation quick {arch}", lambda cfg=cfg: cold_run(cfg))
        if quick[arch]:
            r = quick[arch]
            figures.append((f"translation quick {arch}: training / attack stage (s)",
                            f"{r['train_s']:.1f} / {r['attack_s']:.1f}", "–", "README"))

    def bf16_steps(task_name: str, preset: str, extra: dict[str, Any], ref: dict[str, Any],
                   executor_name: str | None = None) -> None:
        for arch in ("ffnn", "rnn"):
            cfg = make_config(task_name, arch, preset, args.tiny, {**extra, "precision": "bf16"})
            got = step(f"bf16 {task_name} {preset} {arch}",
                       lambda cfg=cfg: {"train_s": cold_training(cfg, executor_name, workers)})
            if isinstance(got, dict) and ref.get(arch):
                figures.append((f"bf16 {task_name} {preset} {arch}: training (s) bf16 vs float32",
                                f"{got['train_s']:.1f} vs {ref[arch]['train_s']:.1f}", "faster on a GPU", "README"))

    bf16_steps("image", "quick", {}, image)
    bf16_steps("translation", "paper", m30k, paper, paper_executor)
    out["figures"] = [dict(zip(("figure", "this run", "target", "source"), f)) for f in figures]
    out["elapsed_s"] = budget.elapsed
    say(f"\ndevice: {dev['device'] if dev else '?'}{' (' + dev['gpu'] + ')' if dev and dev.get('gpu') else ''}"
        f"{' · TINY dry run: nothing here is a measurement' if args.tiny else ''} · total {budget.elapsed:.0f} s "
        f"(budget {args.budget_s:.0f} s)")
    say("| figure | this run | target | source |\n|---|---|---|---|")
    for f in figures:
        say("| " + " | ".join(f) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 1 if tests is not None and tests["rc"] != 0 else 0


if __name__ == "__main__":
    raise SystemExit(main())
