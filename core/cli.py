"""Command-line interface: everything the app shows, produced headless as JSON.

    python -m core run --task image --arch rnn --preset quick [--set key=value ...] [--out result.json]
    python -m core config --task image --arch ffnn --preset quick     # print the resolved config
    python -m core defend --task image --arch rnn --mechanism dirichlet --values 100,10,1,0.1,0.01 --attacker both
    python -m core defend --task image --arch rnn --mechanism dpsgd --values 0.5,1,2,4     # σ grid (retrains)
    python -m core defend --task image --arch rnn --mechanism dpsgd --values 1,3,8 --target-epsilon
    python -m core run --task image --arch rnn --repeats 3      # headline numbers as mean with 95 % CI
    python -m core compare --task image --preset quick --repeats 3 [--out compare.json]  # FFNN vs RNN, paired
    python -m core report --task image --preset quick --out report.html   # the run report of cached runs (HTML)
    python -m core run --plugin examples/plugin_task.py --task demo_sequences --arch ffnn   # a plugin's task
    python -m core score --in scores.csv --out result.json [--report report.html]   # a file of scores, no model
    python -m core inspect --task tabular --set dataset=csv --set data_dir=~/t.csv --set label=y  # what a run reads

Every failure the user can fix prints one line ``error: ...`` on stderr and exits with 2 (bad
arguments, an option given twice, bad config values, missing data, an unwritable ``--out`` or one
that is not a regular file, a full disk); Ctrl-C prints one line and exits with 130, from the
start (the handler is installed before the heavy imports; only the light package import precedes it). The options are parsed and
checked before torch is imported (``import torch`` takes over a second), so refused input
answers at once; the config's values are checked next, still before any work. Reusable pieces
for further subcommands: :class:`OneLineErrorParser`, :class:`Once`, :func:`guarded`,
:func:`parse_sets`, :func:`check_named_sets`, :func:`check_arguments`, and
:func:`core.foundations.fileio.check_out_path` / :func:`core.foundations.fileio.write_json_atomically`.
"""
from __future__ import annotations

import argparse
import errno
import json
import os
import re
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence

from core.defenses import registry as defense_registry  # light: a mechanism's module (and torch) loads on first use
from core.foundations.config import EXECUTORS, MAX_DRAWS, MAX_REPEATS, MAX_SENSITIVITY_PAIRS, parse_values
from core.foundations.environment import check_environment
from core.foundations.errors import ConfigError, MIAError, OutputPathError
from core.foundations.fileio import check_out_path, show_path, write_json_atomically, write_text_atomically
from core.foundations.plugins import PLUGIN_ENV
from core.foundations.task_registry import load_plugin_file
from core.tasks import available_tasks, get_task  # light: a task's module (and torch) loads on first use

#: printed (alone) when a run is interrupted with Ctrl-C
INTERRUPTED = "interrupted; cached models are kept"
#: exit status of an interrupted run (128 + SIGINT, as shells report it)
EXIT_INTERRUPTED = 130
#: exit status of every error the user can fix
EXIT_ERROR = 2


class OneLineErrorParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one ``error: ...`` line (exit 2), like the library's.

    argparse prints its whole usage block before the message; for an unknown ``--task`` that
    buries the one line that matters. ``--help`` still shows the usage.
    """

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"error: {message} (see {self.prog} --help)\n")


class Once(argparse.Action):
    """Store an option's value, refusing a second occurrence: with argparse's default the last of
    ``--task image --task translation`` wins silently, which hides a typo (as with ``--set``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        given = getattr(namespace, "_given", None)
        if given is None:
            given = set()
            setattr(namespace, "_given", given)
        if self.dest in given:
            parser.error(f"{option_string} given twice ({option_string} {getattr(namespace, self.dest)}, "
                         f"{option_string} {values}): give it once")
        given.add(self.dest)
        setattr(namespace, self.dest, values)


def positive_int(text: str) -> int:
    """argparse type: an integer ≥ 1 (``--workers 0`` used to be clamped to 1 silently)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def emit_json(obj: Any) -> None:
    """Print ``obj`` as JSON on stdout and flush, so that a full disk or a closed stdout is reported
    here (one line) rather than as "Exception ignored" when Python exits."""
    try:
        print(json.dumps(obj, indent=2))
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
        reason = f"the disk is full ({exc.strerror})" if full else (exc.strerror or str(exc))
        raise OutputPathError(f"cannot write the JSON to stdout: {reason}") from None


def one_line(exc: BaseException) -> str:
    """The exception's message on one line (newlines would break the one-line contract)."""
    return " ".join(str(exc).split()) or type(exc).__name__


class CtrlC:
    """A Ctrl-C that cannot be lost. Python's default handler raises ``KeyboardInterrupt`` wherever
    the main thread is, and an exception raised inside a finalizer or inside code a library runs
    under a catch-all is dropped ("Exception ignored in …"), so a run could go on after Ctrl-C.
    This handler also remembers it, and every progress report (:meth:`check`) raises it again."""

    pending = False

    @classmethod
    def handler(cls, signum: int, frame: Any) -> None:
        cls.pending = True
        raise KeyboardInterrupt

    @classmethod
    def check(cls) -> None:
        if cls.pending:
            raise KeyboardInterrupt


def guarded(command: Callable[..., int], *args: Any, **kwargs: Any) -> int:
    """Run a CLI command and turn expected failures into an exit status.

    :class:`MIAError` → ``error: <message>`` and 2; Ctrl-C (KeyboardInterrupt) → the one line
    :data:`INTERRUPTED` and 130 (finished cache entries are committed atomically, so nothing
    half-written is left). Anything else is a bug and keeps its traceback.
    """
    previous = None
    # only where Ctrl-C would interrupt anyway: a parent that set SIGINT to be ignored keeps it so
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous = signal.signal(signal.SIGINT, CtrlC.handler)
    try:
        return command(*args, **kwargs)
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `python -m core run ... | head`: the reader left, nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except MIAError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        CtrlC.pending = False
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def parse_sets(pairs: Sequence[str]) -> dict[str, str]:
    """``["k=v", ...]`` → ``{k: v}``; a pair without ``=``, an empty key or a key given twice is a
    :class:`ConfigError` (silently keeping the last of two values hides a typo)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set expects key=value, got {pair!r}")
        if key in out:
            raise ConfigError(f"--set {key} given twice ({key}={out[key]}, {key}={value.strip()}): give each key once")
        out[key] = value.strip()
    return out


#: config keys that name what ``--task``/``--arch``/``--preset`` already chose
NAMED_BY_FLAGS = {"task": "--task", "arch": "--arch", "preset": "--preset"}


def check_named_sets(sets: dict[str, str], args: argparse.Namespace) -> dict[str, str]:
    """``sets`` without keys that repeat ``--task``/``--arch``/``--preset``; a key that
    contradicts its flag (``--task image --set task=translation``) is a :class:`ConfigError`."""
    out = dict(sets)
    for key, flag in NAMED_BY_FLAGS.items():
        if key in out:
            if out[key] != getattr(args, key):
                raise ConfigError(f"--set {key}={out[key]} contradicts {flag} {getattr(args, key)}: choose the {key} with {flag}")
            del out[key]
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog="python -m core",
        description="MIA Explorer: train victims and shadow models, run membership inference attacks, print JSON.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--plugin", dest="plugins", action="append", default=[], metavar="FILE.py",
                       help="load a task plugin file first (repeatable; also $MIA_PLUGINS): its tasks join --task "
                            "(docs/your_data.md, 'Your architecture')")
        p.add_argument("--task", choices=available_tasks(), default="image", action=Once, help="learning task (default: image)")
        p.add_argument("--arch", choices=("ffnn", "rnn"), default="rnn", action=Once, help="ffnn (CNN/Transformer/MLP) or rnn (LSTM-based)")
        p.add_argument("--preset", default="quick", action=Once,
                       help="quick (minutes on 2 CPU cores), paper (the studies' sizes; a GPU recommended), "
                       "cifar_cpu (image, CIFAR-10 in data_dir) or multi30k_cpu (translation, Multi30K in data_dir): "
                       "real data sized for 2 CPU cores; 'python -m core config' shows a preset's fields")
        p.add_argument("--executor", default=os.environ.get("MIA_EXECUTOR", "local"), action=Once, metavar="{local,ensemble,processes,ray}",
                       help="where trainings run: local (this process, default), ensemble (this process; victim and "
                            "shadows trained as one vectorised ensemble where the task supports it: the image CNN), "
                            "processes (a local pool), ray (a local Ray instance, or the cluster at --ray-address); "
                            "results are the same (ensemble: to float tolerance) and cached by this process")
        p.add_argument("--ray-address", default=os.environ.get("MIA_RAY_ADDRESS"), action=Once, help="Ray cluster address (ray executor)")
        p.add_argument("--workers", type=positive_int, default=None, action=Once,
                       help="processes/ray: parallel trainings, at least 1 (default: usable cores)")
        p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                       help="override a config field (repeatable, each key once), e.g. --set epochs=10 "
                            "--set weight_decay=1e-4; 'python -m core config' lists the keys")

    run = sub.add_parser("run", help="run the whole pipeline (cached) and write the result JSON")
    common(run)
    run.add_argument("--out", action=Once, help="write the JSON here (default: stdout); the folder must exist, and "
                                                 "the file, if it exists, must be a regular file (not a link or device)")
    run.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    run.add_argument("--online-lira", type=int, default=0, metavar="N", action=Once,
                     help="also run online LiRA with N extra reference models (2..64), each trained on a random half "
                          "of the victim's evaluation records: a stronger threat model (the attacker holds the "
                          "candidate records and trains on them); its models are cached. Added to the JSON as "
                          "attacks.lira_online")
    run.add_argument("--repeats", type=int, default=None, action=Once, metavar="N",
                     help="run N repeats (1..20; seeds derived from the config's seed, repeat 0 = the config, each "
                          "cached) and add a 'repeats' block: every headline metric's mean, ci_low, ci_high, n and "
                          "per-repeat values (same as --set repeats=N)")
    add_compare_command(sub, common)
    add_score_command(sub)
    add_findings_command(sub)
    cfg = sub.add_parser("config", help="print the resolved config and its hash as JSON")
    common(cfg)
    inspect = sub.add_parser("inspect", help="what the config's data source holds and how a run would split it "
                                             "(records, classes, victim/attacker halves, example record ids): "
                                             "reads the data, trains nothing; JSON as the Your model page shows it")
    common(inspect)
    inspect.add_argument("--out", action=Once, help="write the JSON here (default: stdout)")
    analyze = sub.add_parser("analyze", help="why attacks work: entropy scatter with decision boundaries, "
                                             "vulnerability over training, memorization, overtraining, model mismatch "
                                             "(FFNN and RNN; writes <name>.csv and <name>.html per analysis)")
    common(analyze)
    analyze.add_argument("--analysis", default="scatter,vulnerability", metavar="NAMES", action=Once,
                         help="comma-separated: all or any of scatter, vulnerability, memorization, overtraining, "
                              "mismatch, exposure, budget, audit, slices (default: scatter,vulnerability; "
                              "memorization, overtraining, mismatch and audit train extra models)")
    analyze.add_argument("--canaries", type=int, default=100, metavar="M", action=Once,
                         help="audit: canaries in the one audited training run (default 100)")
    analyze.add_argument("--online-lira", type=int, default=0, metavar="N", action=Once,
                         help="budget: also online LiRA's curve, with N extra IN/OUT reference models (2..64, trained "
                              "once and cached; a stronger threat model, see run --online-lira)")
    analyze.add_argument("--defense", default=None, metavar="MECHANISM:VALUE", action=Once,
                         help="exposure: also the members that stop / start being exposed behind this after-training "
                              "defense, e.g. dirichlet:1 or gpm:0.01 (naive attacker)")
    analyze.add_argument("--archs", default="ffnn,rnn", action=Once, help="architectures to compare (default: ffnn,rnn)")
    analyze.add_argument("--repeats", type=int, default=None, action=Once, metavar="N",
                         help="the analyses that compare FFNN with RNN (final attack accuracy, vulnerability, "
                              "overtraining, memorization) also on repeats 1..N-1 (1..20; seeds derived from the "
                              "config's, each cached): their paired FFNN - RNN difference with its 95 %% interval, "
                              "p-values and the verdict holds / reversed / inconclusive, under 'repeats'")
    analyze.add_argument("--out", required=True, metavar="DIR", action=Once,
                         help="folder for the files (created, with its parents, if missing)")
    analyze.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    report = sub.add_parser("report", help="the run report of cached runs: one self-contained HTML page, the same as "
                                           "the Train & attack page's download (overview, attacks table, ROC curves, "
                                           "examples, configs) with the per-record views (exposure quadrants, the "
                                           "reference budget, slices); reads the cache, never trains")
    common(report)
    report.add_argument("--archs", default=None, action=Once, metavar="ffnn,rnn",
                        help="architectures in the report (default: ffnn,rnn; --arch A reports one, without the "
                             "exposure view, which compares two)")
    report.add_argument("--no-budget", action="store_true",
                        help="leave out the reference budget (it refits LiRA and RMIA on every subset of references)")
    report.add_argument("--out", required=True, metavar="FILE", action=Once,
                        help="the HTML file; its folder must exist, and the file, if it exists, must be a regular file")
    report.add_argument("--quiet", action="store_true", help="no line on stderr")
    defend = sub.add_parser("defend", help="a defense over a grid of values: after training (Dirichlet k, GPM σ) on "
                                           "the cached models of a run, or during training (DP-SGD σ or ε, L2 λ, PPO "
                                           "clip ε), one cached run per value")
    common(defend)
    after, during = defense_registry.names(), defense_registry.training_names()
    defend.add_argument("--mechanism", required=True, action=Once, metavar="{" + ",".join(after + during) + "}",
                        help=f"after training (on the cached models): {', '.join(after)}; during training (one run "
                             f"per value): {', '.join(during)}. dirichlet: outputs x ~ Dir(k·p) (paper 001); gpm: "
                             "weights θ + N(0, σ²I) (paper 000); dpsgd: DP-SGD with noise multiplier σ (Opacus; C and "
                             "δ from --set dp_max_grad_norm=, dp_delta=); l2: L2 coefficient λ on weight matrices; "
                             "clip: PPO clip ε (navigation)")
    defend.add_argument("--values", required=True, action=Once, metavar="V1,V2,...",
                        help="k values (> 0) for dirichlet, σ values (≥ 0) for gpm and dpsgd, ε values (> 0) for dpsgd "
                             "--target-epsilon, λ (≥ 0) for l2, clip ε in (0, 1) for clip, e.g. 100,10,1,0.1,0.01")
    defend.add_argument("--target-epsilon", action="store_true",
                        help="dpsgd: the values are target ε at δ; each σ is found by Opacus' get_noise_multiplier")
    defend.add_argument("--attacker", default="naive", action=Once, metavar="{naive,adaptive,both}",
                        help="naive: attack fitted on undefended shadows; adaptive: refitted on shadows behind the "
                             "same mechanism; both (default: naive)")
    defend.add_argument("--draws", type=int, default=None, action=Once,
                        help="independent draws of the mechanism per value (default: the mechanism's, as on the "
                             "Defenses page: dirichlet 8, gpm 3; numbers are their mean)")
    defend.add_argument("--seed", type=int, default=0, action=Once, help="seed of the mechanism's randomness (default 0)")
    defend.add_argument("--sensitivity-samples", type=int, default=None, metavar="N", action=Once,
                        help="gpm: SensitivitySampler pairs for S and ε (2N trainings, cached; default per task: "
                             "image 10, translation 3, navigation 3; 0 = skip, ε is then null)")
    defend.add_argument("--repeats", type=int, default=None, action=Once, metavar="N",
                        help="dirichlet/gpm: the defense on N repeats of the config (1..20; seeds derived from its "
                             "seed, each cached); every point gets 95 %% intervals over the repeats (of each repeat's "
                             "mean over its draws); with one repeat and --draws ≥ 2 the intervals are over the draws")
    defend.add_argument("--out", action=Once, help="write the JSON here (default: stdout); the folder must exist, and "
                                                    "the file, if it exists, must be a regular file")
    defend.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return parser


def out_folder(text: str, create: bool = True) -> Path:
    """The folder ``analyze --out DIR`` writes into, created (with its parents) if missing, as
    users expect of an output folder (``create=False``: only checked). A path that exists and is
    not a folder — a file, a device, or a symbolic link (even to a folder: the files would land
    where the link points) — is an :class:`OutputPathError`, as is one that cannot be created."""
    if not text or not text.strip() or "\x00" in text:
        raise OutputPathError(f"--out {show_path(text)} is not a valid folder name")
    try:
        folder = Path(text).expanduser().absolute()
    except RuntimeError:  # "~nosuchuser/dir"
        raise OutputPathError(f"cannot write into {show_path(text)}: no such user's home directory") from None
    try:
        if folder.is_symlink():
            raise OutputPathError(f"--out {show_path(text)} is a symbolic link; give a folder (links are not followed)")
        if folder.exists() and not folder.is_dir():
            raise OutputPathError(f"--out {show_path(text)} exists and is not a folder; give a folder (it is created if missing)")
    except OutputPathError:
        raise
    except OSError as exc:  # a name longer than the system allows, …
        raise OutputPathError(f"--out {show_path(text)}: {exc.strerror or exc}") from None
    if not create:
        return folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputPathError(f"cannot create the folder {show_path(text)}: {exc.strerror or exc}") from None
    return folder


def analysis_names(text: str) -> tuple[str, ...]:
    """``--analysis``: ``all`` (returned as ``("all",)``) or comma-separated names; an empty list
    is refused here, unknown names by ``analyze`` before any work (the list of analyses is the registry,
    :mod:`core.analyses.registry`, whose built-in entries load with torch)."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise ConfigError(f"--analysis must be all or a comma-separated list of analyses, got {text!r}")
    return names


def analysis_archs(text: str) -> list[str]:
    """``--archs``: ffnn and/or rnn, comma-separated."""
    archs = [a.strip() for a in text.split(",") if a.strip()]
    if not archs or any(a not in ("ffnn", "rnn") for a in archs):
        raise ConfigError(f"--archs must list ffnn and/or rnn, got {text!r}")
    return archs


def report_archs(args: argparse.Namespace) -> list[str]:
    """``report``'s architectures: ``--arch A`` alone, ``--archs`` (checked), or both by default."""
    if "arch" in getattr(args, "_given", set()):
        if args.archs is not None:
            raise ConfigError("give --arch (one architecture) or --archs (several), not both")
        return [args.arch]
    return analysis_archs("ffnn,rnn" if args.archs is None else args.archs)  # `--archs ''` is refused, not the default


def _report(args: argparse.Namespace, out: Path) -> int:
    """``report``: :func:`core.views.report.run_report` of the cached runs, written atomically to ``out``."""
    from core.views.report import run_report

    task = get_task(args.task)
    sets = check_named_sets(parse_sets(args.sets), args)
    configs = {a: task.make_config(a, args.preset, sets) for a in report_archs(args)}
    page = run_report(configs, budget=not args.no_budget)
    write_text_atomically(out, page)
    if not args.quiet:
        print(f"wrote {show_path(str(out))}", file=sys.stderr)
    return 0


def _analyze(args: argparse.Namespace) -> int:
    from core.analyses import registry as analysis_registry
    from core.analyses.analysis import analyze
    from core.defenses.defender import DefenseSpec
    from core.views.report import write_analyses

    known = analysis_registry.names()  # the registered analyses (core.analyses.registry), built-in ones first
    names = analysis_names(args.analysis)
    if names == ("all",):
        names = known
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"unknown analyses {unknown}; choose from {', '.join(known)} (or all)")
    archs = analysis_archs(args.archs)
    task = get_task(args.task)
    sets = check_named_sets(parse_sets(args.sets), args)
    configs = {a: task.make_config(a, args.preset, sets) for a in archs}
    defense = None
    if args.defense:
        mechanism, sep, value = args.defense.partition(":")
        if not sep:
            raise ConfigError(f"--defense expects MECHANISM:VALUE, e.g. dirichlet:1, got {args.defense!r}")
        defense = (mechanism.strip(), parse_values(value)[0])
        DefenseSpec(*defense).validate()  # an unknown mechanism or a value out of range: before any work
    if args.online_lira and not 2 <= args.online_lira <= 64:
        raise ConfigError(f"--online-lira must be 0 (off) or lie in 2..64, got {args.online_lira}")
    if "audit" in names and args.canaries < 2:
        raise ConfigError(f"--canaries must be at least 2, got {args.canaries}")
    if "exposure" in names and len(archs) != 2:
        raise ConfigError("the exposure analysis compares two architectures: give --archs ffnn,rnn")
    if "budget" in names:  # known from the config: refused before the victims and shadows train
        few = {a: c.n_shadows for a, c in configs.items() if c.n_shadows < 2}
        if few:
            raise ConfigError(f"the reference budget needs at least 2 shadows, got n_shadows = "
                              f"{', '.join(f'{n} ({a})' for a, n in few.items())}: --set n_shadows=2 or more")
    if "audit" in names:
        from core.analyses.record_views import check_canaries

        for cfg in configs.values():  # the pool is known from the data and the splits: no training
            check_canaries(cfg, args.canaries)
    if args.repeats is not None and args.repeats > 1 and len(archs) != 2:
        raise ConfigError("--repeats compares FFNN with RNN over paired repeats: give --archs ffnn,rnn")
    folder = out_folder(args.out)  # after the checks: a refused run creates no folder
    for name in ("analyses.json", *(f"{n}.{ext}" for n in names for ext in ("csv", "html"))):
        check_out_path(folder / name)  # writable, regular files only: before any work
    last = [""]

    def progress(stage: str, fraction: float) -> None:
        CtrlC.check()
        if not args.quiet and (stage != last[0] or fraction >= 1.0):
            print(f"[analyze] {stage}", file=sys.stderr)
            last[0] = stage

    results = analyze(configs, names, progress, canaries=args.canaries, defense=defense, online_lira=args.online_lira,
                      repeats=args.repeats or 1)
    for path in write_analyses(results, folder):
        if not args.quiet:
            print(f"wrote {path}", file=sys.stderr)
    emit_json(results["verdicts"] if "repeats" not in results else
              {"verdicts": results["verdicts"], "repeats": results["repeats"]})
    return 0


def _defend_training(args: argparse.Namespace, config, out, progress) -> int:
    """``defend`` with a training-time mechanism: one cached run per value (:mod:`core.defenses.sweeps`)."""
    from core.defenses.sweeps import check_sweep, sweep

    values = parse_values(args.values)
    check_sweep(config, args.mechanism, values, args.target_epsilon)  # every value before any training
    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    result = sweep(config, args.mechanism, values, target_epsilon=args.target_epsilon, progress=progress,
                   on_point=lambda i, n, p: say(f"[defend] {args.mechanism}: {i}/{n} values"))
    result["utility_cost_comparison"] = cached_utility_cost(args, config, values)
    if out is not None:
        write_json_atomically(out, result)
    else:
        emit_json(result)
    if result.get("unreachable"):  # the points computed are written above; the rest is one line
        missing = result["unreachable"]
        shown_values = ", ".join(f"{u['value']:g}" for u in missing)
        raise ConfigError(f"{len(missing)} of {len(values)} values not computed ({shown_values}), the points computed "
                          f"are written; the first: {missing[0]['error']}")
    return 0


def cached_utility_cost(args: argparse.Namespace, config, values: list[float]) -> dict[str, Any]:
    """The Training defenses page's answer to "does the same ε (λ, clip ε) cost the RNN more utility?"
    (:func:`core.defenses.utility_cost.sweep_utility_cost`) over the sweep's runs cached for both
    architectures — this sweep's, and the other architecture's from its own ``defend --arch`` or the page —
    and their repeats 1, 2, … as far as any is cached (the page's repeats box). Nothing trains here."""
    from core.analyses.repeats import repeat_config
    from core.defenses.sweeps import sweep_runs
    from core.defenses.utility_cost import question, sweep_utility_cost
    from core.experiment.pipeline import cached_summary

    task = get_task(config.task)
    others = [a for a in ("ffnn", "rnn") if a in task.archs and a != config.arch]
    how = (f"from the runs cached for both architectures (this sweep's {config.arch.upper()} runs; "
           + (f"the {others[0].upper()}'s from `python -m core defend --arch {others[0]}` with the same --preset, "
              f"--set and --values, or the Training defenses page" if others else "the task has one architecture")
           + "); repeats 1, 2, … as cached by the page's repeats box; nothing trained for the comparison")
    try:
        bases = {config.arch: config}
        bases.update({a: task.make_config(a, args.preset, check_named_sets(parse_sets(args.sets), args)) for a in others})
        runs = sweep_runs(bases, args.mechanism, values, args.target_epsilon)
    except MIAError as exc:  # the other architecture's config or grid is refused: no comparison, said why
        return {"question": question(args.mechanism, args.target_epsilon), "values": [], "how": how,
                "summary": f"no comparison: {' '.join(str(exc).split())}"}
    summaries = []
    for r in range(MAX_REPEATS):
        cached = {(a, v): cached_summary(repeat_config(c, r)) for a, rs in runs.items() for v, c in rs}
        if r and all(s is None for s in cached.values()):
            break
        summaries.append(cached)
    return {**sweep_utility_cost(runs, summaries, args.mechanism, args.target_epsilon), "how": how}


def _defend(args: argparse.Namespace, config, out, progress) -> int:
    from core.defenses.defender import ATTACKERS, DefenseSpec, defend
    from core.experiment.pipeline import trained_models

    if args.mechanism in defense_registry.training_names():
        if args.repeats is not None:
            raise ConfigError(f"--repeats applies to the after-training mechanisms ({', '.join(defense_registry.names())}), "
                              f"not {args.mechanism}")
        return _defend_training(args, config, out, progress)
    if args.mechanism not in defense_registry.names():
        raise ConfigError(f"unknown mechanism {args.mechanism!r}; choose one of "
                          f"{', '.join(defense_registry.names() + defense_registry.training_names())}")
    mechanism = defense_registry.get(args.mechanism)
    if args.target_epsilon:
        with_target = [n for n in defense_registry.training_names() if defense_registry.get_training(n).target]
        raise ConfigError(f"--target-epsilon applies to {', '.join(with_target)} only")
    values = parse_values(args.values)
    if args.draws is None:  # the mechanism's default, the Defenses page's draws box
        args.draws = mechanism.default_draws
    if args.attacker not in ATTACKERS:
        raise ConfigError(f"--attacker must be one of {', '.join(ATTACKERS)}, got {args.attacker!r}")
    for v in values:  # every value checked before any training
        DefenseSpec(args.mechanism, v, draws=args.draws, seed=args.seed).validate()
    n_pairs = args.sensitivity_samples
    if n_pairs is not None and not mechanism.needs_sensitivity:
        needing = [n for n in defense_registry.names() if defense_registry.get(n).needs_sensitivity]
        raise ConfigError(f"--sensitivity-samples applies to {', '.join(needing)} (ε from the sensitivity), "
                          f"not {args.mechanism}")
    if n_pairs is None:
        n_pairs = get_task(config.task).sensitivity_samples if mechanism.needs_sensitivity else 0
    if n_pairs < 0:
        raise ConfigError(f"--sensitivity-samples must be >= 0, got {n_pairs}")
    from core.experiment.executor import make_executor

    executor = make_executor(args.executor, args.workers, args.ray_address)
    if args.repeats is not None:
        return _defend_repeats(args, with_repeats(config, args.repeats), values, n_pairs, out, progress, executor)
    models = trained_models(config, progress=progress, executor=executor)
    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    result = defend(models, args.mechanism, values, args.attacker, args.draws, n_pairs, seed=args.seed,
                    on_point=lambda i, n: say(f"[defend] {args.mechanism}: {i}/{n} values"),
                    on_pair=lambda i, n: say(f"[sensitivity] {i}/{n} pairs"), executor=executor)
    if out is not None:
        write_json_atomically(out, result)
    else:
        emit_json(result)
    return 0


def resolve_config(args: argparse.Namespace):
    """The validated config named by ``--task``/``--arch``/``--preset``/``--set``."""
    task = get_task(args.task)
    if "arch" not in getattr(args, "_given", set()) and args.arch not in task.archs:
        args.arch = task.archs[0]  # a plugin with one model: without --arch, that model
    config = task.make_config(args.arch, args.preset, check_named_sets(parse_sets(args.sets), args))
    if config.match_utility != "off" and args.command != "config":  # run would train as if it were off
        raise ConfigError(f"match_utility={config.match_utility} applies to compare (FFNN vs RNN at matched utility), "
                          f"not {args.command}: use python -m core compare --match-utility {config.match_utility}")
    return config


def main(argv: Sequence[str] | None = None) -> int:
    return guarded(_main, argv)


def check_arguments(args: argparse.Namespace) -> Path | None:
    """Every check that needs neither torch nor a task module, before they are imported: option
    values, ``--set`` syntax, ``--values``, the executor's name, the ``--out`` file. Returns the
    checked ``--out`` path of ``run``/``defend`` (None: stdout)."""
    check_named_sets(parse_sets(args.sets), args)
    if args.executor not in EXECUTORS:
        raise ConfigError(f"--executor must be one of {', '.join(EXECUTORS)}, got {args.executor!r}")
    if args.command == "run" and args.online_lira and not 2 <= args.online_lira <= 64:
        raise ConfigError(f"--online-lira must be 0 (off) or lie in 2..64, got {args.online_lira}")
    repeats = getattr(args, "repeats", None)
    if repeats is not None and not 1 <= repeats <= MAX_REPEATS:
        raise ConfigError(f"--repeats must lie in 1..{MAX_REPEATS}, got {repeats}")
    if "match_utility" in check_named_sets(parse_sets(args.sets), args) and args.command not in ("compare", "config"):
        raise ConfigError(f"match_utility applies to compare (FFNN vs RNN at matched utility), not {args.command}: "
                          f"use python -m core compare --match-utility")
    if args.command == "defend":
        check_defend_options(args)
    if args.command == "analyze":
        check_analyze_options(args)
        analysis_archs(args.archs)
        out_folder(args.out, create=False)  # created once the config is valid too
        return None
    if args.command == "report":
        report_archs(args)
    out = getattr(args, "out", None)
    # `--out ''` used to mean stdout; an empty name is a mistake (a variable that was not set)
    return check_out_path(out) if out is not None else None  # before any work, not after it


def given(args: argparse.Namespace) -> set[str]:
    """The options given on the command line (recorded by :class:`Once`), by their ``dest``."""
    return set(getattr(args, "_given", set()))


def check_defend_options(args: argparse.Namespace) -> None:
    """``defend``'s options before torch: ``--values`` (at most MAX_VALUES), the counts' caps (the
    app's: draws 1..MAX_DRAWS, SensitivitySampler pairs 0..MAX_SENSITIVITY_PAIRS), and no option
    that the chosen mechanism would ignore (``--draws`` with dpsgd used to vanish)."""
    parse_values(args.values)
    if args.sensitivity_samples is not None and not 0 <= args.sensitivity_samples <= MAX_SENSITIVITY_PAIRS:
        raise ConfigError(f"--sensitivity-samples must lie in 0..{MAX_SENSITIVITY_PAIRS} (each pair trains 2 models), "
                          f"got {args.sensitivity_samples}")
    if args.draws is not None and not 1 <= args.draws <= MAX_DRAWS:
        raise ConfigError(f"--draws must lie in 1..{MAX_DRAWS}, got {args.draws}")
    if args.mechanism in defense_registry.training_names():
        unused = sorted(f"--{d.replace('_', '-')}" for d in given(args) & {"draws", "attacker", "seed", "sensitivity_samples"})
        if unused:
            raise ConfigError(f"{', '.join(unused)} {'applies' if len(unused) == 1 else 'apply'} to the after-training "
                              f"mechanisms ({', '.join(defense_registry.names())}), not {args.mechanism} (it retrains "
                              "with the defense: the attacker is adaptive, one run per value)")


#: analyze's options and the analyses they belong to (given with none of them, an option would vanish)
ANALYSIS_OPTIONS = {"canaries": ("audit",), "online_lira": ("budget",), "defense": ("exposure",)}


def check_analyze_options(args: argparse.Namespace) -> None:
    """``analyze``'s names, archs and folder before torch, and no option for an analysis not asked for."""
    names = analysis_names(args.analysis)
    analysis_archs(args.archs)
    if names != ("all",):
        for dest, owners in ANALYSIS_OPTIONS.items():
            if dest in given(args) and not set(owners) & set(names):
                raise ConfigError(f"--{dest.replace('_', '-')} applies to the {' or '.join(owners)} analysis, which "
                                  f"--analysis {args.analysis} does not include")
    if args.canaries < 2:
        raise ConfigError(f"--canaries must be at least 2, got {args.canaries}")
    if args.online_lira and not 2 <= args.online_lira <= 64:
        raise ConfigError(f"--online-lira must be 0 (off) or lie in 2..64, got {args.online_lira}")


def load_cli_plugins(argv: Sequence[str]) -> None:
    """Load the ``--plugin`` files of ``argv`` before the parser is built (their tasks are choices of
    ``--task``), and add them to ``$MIA_PLUGINS`` so that the processes this run starts (a pool's
    workers) load them too. A bad file: one line (:func:`core.foundations.task_registry.load_plugin_file`)."""
    pre = OneLineErrorParser(prog="python -m core", add_help=False)
    pre.add_argument("--plugin", dest="plugins", action="append", default=[])
    files = pre.parse_known_args(argv)[0].plugins
    listed = [p for p in os.environ.get(PLUGIN_ENV, "").split(os.pathsep) if p]
    for path in files:
        load_plugin_file(path)
        absolute = os.path.abspath(os.path.expanduser(path))
        if absolute not in listed:
            listed.append(absolute)
    if files:
        os.environ[PLUGIN_ENV] = os.pathsep.join(listed)


def _main(argv: Sequence[str] | None) -> int:
    check_environment()  # a bad MIA_* value: one line before anything else
    load_cli_plugins(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.command == "score":  # no task, no config, no torch
        return _score(args)
    if args.command == "findings":
        return _findings(args)
    out = check_arguments(args)  # torch is not imported yet: refused input answers at once
    if args.command == "compare":
        return _compare(args, out)
    config = resolve_config(args)
    if args.command == "config":
        emit_json({"config": config.to_dict(), "config_hash": config.config_hash})
        return 0
    if args.command == "inspect":
        from core.experiment.data_preview import preview_data

        preview = preview_data(config).to_dict()
        if out is None:
            emit_json(preview)
        else:
            write_json_atomically(out, preview)
        return 0

    from core.foundations.device import configure_threads

    configure_threads()  # several runs at once must not each start one thread per host core
    if args.command == "analyze":  # --out is a folder here
        return _analyze(args)
    if args.command == "report":
        return _report(args, out)

    from core.experiment.pipeline import run_experiment

    def progress(ev) -> None:
        CtrlC.check()
        if args.quiet:
            return
        eta = f", ~{ev.eta_s:.0f}s left" if ev.eta_s is not None else ""
        print(f"[{ev.overall_fraction:6.1%}] {ev.stage}: {ev.stage_fraction:.0%}{eta}", file=sys.stderr)

    if args.command == "defend":
        return _defend(args, config, out, progress)
    from core.experiment.executor import make_executor

    executor = make_executor(args.executor, args.workers, args.ray_address)
    config = with_repeats(config, args.repeats)
    if args.repeats is not None or config.repeats > 1:
        return _run_repeats(args, config, out, progress, executor)
    result = run_experiment(config, progress=progress, executor=executor)
    if args.online_lira:
        from core.experiment.pipeline import trained_models
        from core.experiment.reference_attacks import LIRA_ONLINE, online_lira

        if not args.quiet:
            print(f"[online LiRA] {args.online_lira} reference models (trained once, cached)", file=sys.stderr)
        outcome = online_lira(trained_models(config), n_models=args.online_lira)
        result.summary["attacks"][LIRA_ONLINE] = {**outcome.result.to_dict(), "threat_model": "online",
                                                  "reference_models": args.online_lira}
        # its per-record scores beside the others' (as core.experiment.pipeline.record_signals rounds them)
        result.summary["records"]["scores"][LIRA_ONLINE] = [round(float(v), 6) for v in outcome.scores]
    if out is not None:
        write_json_atomically(out, result.summary)
    else:
        emit_json(result.summary)
    return 0


# ---------------------------------------------------------------------------- repeats and compare
def with_repeats(config, repeats: int | None):
    """``config`` with ``repeats`` (from ``--repeats``) set and checked against its range."""
    if repeats is None:
        return config
    return config.with_updates({"repeats": repeats}).validate()


def _run_repeats(args: argparse.Namespace, config, out, progress, executor) -> int:
    """``run --repeats N``: repeat 0's summary plus a ``repeats`` block (:func:`core.analyses.repeats.repeats_block`)."""
    from core.analyses.repeats import repeats_block, run_repeats

    if args.online_lira:
        raise ConfigError("--online-lira runs on one run; leave out --repeats (or run it on repeat 0 alone)")
    summaries = run_repeats(config, progress=progress, executor=executor)
    summary = dict(summaries[0], repeats=repeats_block(summaries))
    if out is not None:
        write_json_atomically(out, summary)
    else:
        emit_json(summary)
    return 0


def add_compare_command(sub: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    """The ``compare`` subcommand: FFNN vs RNN over N paired repeats."""
    p = sub.add_parser("compare", help="FFNN vs RNN over N paired repeats (same seed, same split): per headline "
                                       "metric both means with 95 %% CIs, the paired difference FFNN − RNN with its "
                                       "CI, paired t and sign-flip p-values, and the verdict on 'the RNN leaks more' "
                                       "(holds / reversed / inconclusive)")
    common(p)
    p.add_argument("--repeats", type=int, default=3, action=Once, metavar="N", help="paired repeats, 1..20 (default 3)")
    p.add_argument("--match-utility", default="off", action=Once, metavar="{off,lower,NUMBER}",
                   help="compare at matched utility by construction: each architecture (victim and shadows) "
                        "trains until its victim's validation utility first reaches the target (NUMBER, or lower: "
                        "the lower of the two final utilities), then stops; the JSON gives each one's stopping "
                        "epoch and the comparison there (default: off)")
    p.add_argument("--out", action=Once, help="write the JSON here (default: stdout); the folder must exist, and the "
                                             "file, if it exists, must be a regular file")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--cached", action="store_true",
                   help="train nothing: answer 'Do RNNs leak more?' from the repeats cached for both architectures "
                        "(the Home page's answer: the verdict with its interval and N, or 'inconclusive (one "
                        "repeat)'; --repeats is ignored)")


def add_score_command(sub: Any) -> None:
    """The ``score`` subcommand: membership inference from a file of per-record scores (issue 33)."""
    p = sub.add_parser("score", help="membership inference from a file of per-record scores, no model: loss/entropy "
                                     "thresholds (cross-fitted), LiRA and RMIA with reference losses, ROC, AUC, TPR at "
                                     "low FPR, ε̂, slices, all with 95 %% intervals (docs/your_data.md)")
    p.add_argument("--in", dest="inp", required=True, action=Once, metavar="FILE.csv|FILE.npz",
                   help="one row per record: member (0/1), loss or logit_0…, label, ref_loss_<k>, ref_in_<k>, slice "
                        "(docs/your_data.md, 'Just the scores'); a regular file, not a link")
    p.add_argument("--out", action=Once, help="write the JSON here (default: stdout); the folder must exist, and the "
                                             "file, if it exists, must be a regular file")
    p.add_argument("--report", action=Once, metavar="FILE.html", help="also write the HTML report here")
    p.add_argument("--bootstrap", type=positive_int, default=None, action=Once, metavar="N",
                   help="resamples per interval, 100..10000 (default 1000, fewer above 20,000 records, at least 200)")
    p.add_argument("--seed", type=int, default=0, action=Once, help="seed of the halves and the bootstrap (default 0)")


def _score(args: argparse.Namespace) -> int:
    """``score``: :func:`core.analyses.scores.score_file` → JSON (and the HTML report)."""
    if args.bootstrap is not None and not 100 <= args.bootstrap <= 10_000:
        raise ConfigError(f"--bootstrap must lie in 100..10000, got {args.bootstrap}")
    out = check_out_path(args.out) if args.out is not None else None
    report = check_out_path(args.report) if args.report is not None else None
    if out is not None and report is not None and out == report:
        raise ConfigError("--out and --report name the same file")
    from core.analyses.scores import score_file  # after the checks: refused arguments answer at once
    from core.views.scores_report import scores_report_html
    result = score_file(args.inp, anywhere=True, n_boot=args.bootstrap, seed=args.seed)
    if report is not None:
        write_text_atomically(report, scores_report_html(result))
    if out is not None:
        write_json_atomically(out, result.to_dict())
    else:
        emit_json(result.to_dict())
def add_findings_command(sub: Any) -> None:
    """The ``findings`` subcommand: the studies' findings beside this machine's cached runs (never trains)."""
    p = sub.add_parser("findings", help="the studies' findings (F1–F5 and the attacker's view) per task beside what "
                                        "this machine measured, from the cache only (never trains): N, 95 %% "
                                        "interval, verdict, utility gap, command; 'not run' with the runs needed")
    p.add_argument("--task", choices=available_tasks(), default=None, action=Once,
                   help="one task (default: image, translation and navigation)")
    p.add_argument("--preset", default="quick", action=Once,
                   help="the presets whose cached runs are read: a name, names separated by commas "
                        "(quick,cifar_cpu,multi30k_cpu), or all (default quick)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="config fields changed from the preset, as the runs were made (repeatable, each key once)")
    p.add_argument("--out", action=Once, help="write the JSON here (default: stdout)")
    p.add_argument("--markdown", action=Once, metavar="FILE.md",
                   help="also write the table as Markdown; a FILE holding <!-- findings:begin --> … "
                        "<!-- findings:end --> (docs/results.md) gets only that block replaced")
    p.add_argument("--html", action=Once, metavar="FILE.html", help="also write the table as one HTML page")


def _findings(args: argparse.Namespace) -> int:
    """``findings``: :func:`core.analyses.findings.findings_table`; every output path checked before torch loads."""
    if not re.fullmatch(r"[A-Za-z0-9_]{1,64}(,[A-Za-z0-9_]{1,64}){0,15}", args.preset):
        raise ConfigError(f"--preset must be preset names separated by commas, got {args.preset!r}")
    paths = {name: check_out_path(getattr(args, name)) if getattr(args, name) is not None else None
             for name in ("out", "markdown", "html")}
    sets = parse_sets(args.sets)
    given_paths = [str(p.resolve()) for p in paths.values() if p is not None]
    if len(set(given_paths)) != len(given_paths):
        raise ConfigError("--out, --markdown and --html must name different files")
    from core.analyses.findings import findings_table, table_json
    from core.views.findings_report import findings_html, markdown_into

    table = findings_table((args.task,) if args.task else None, args.preset, sets=sets)
    data = table_json(table)
    if paths["markdown"] is not None:
        md = paths["markdown"]
        existing = md.read_text(encoding="utf-8") if md.is_file() else None
        write_text_atomically(md, markdown_into(existing, data, args.markdown))
    if paths["html"] is not None:
        write_text_atomically(paths["html"], findings_html(data))
    if paths["out"] is not None:
        write_json_atomically(paths["out"], data)
    else:
        emit_json(data)
    return 0


def _compare(args: argparse.Namespace, out: Path | None) -> int:
    """``compare``: :func:`core.analyses.repeats.run_comparison` (``out`` checked by :func:`check_arguments`)."""
    from core.foundations.device import configure_threads
    from core.experiment.executor import make_executor
    from core.analyses.repeats import comparison_configs, run_comparison

    if args.arch != "rnn":  # --arch comes with the common flags; compare always runs both
        raise ConfigError("compare runs both architectures; leave out --arch")
    sets = check_named_sets(parse_sets(args.sets), args)
    if "repeats" in sets:
        raise ConfigError("give the number of repeats with --repeats, not --set repeats=")
    if "match_utility" in sets and "match_utility" in given(args):  # one would silently override the other
        raise ConfigError(f"match_utility given twice (--set match_utility={sets['match_utility']}, --match-utility "
                          f"{args.match_utility}): give it once")
    if "match_utility" in given(args):
        sets["match_utility"] = args.match_utility
    if args.cached:  # what the Home page shows: read the cache, never train
        from core.analyses.answer import cached_answer

        if sets:
            raise ConfigError("--cached answers for a preset as it is: leave out --set")
        result = cached_answer(args.task, args.preset)
        if out is not None:
            write_json_atomically(out, result)
        else:
            emit_json(result)
        return 0
    configs = comparison_configs(args.task, args.preset, args.repeats, sets)
    configure_threads()

    def progress(ev) -> None:
        CtrlC.check()
        if not args.quiet:
            eta = f", ~{ev.eta_s:.0f}s left" if ev.eta_s is not None else ""
            print(f"[{ev.overall_fraction:6.1%}] {ev.stage}: {ev.stage_fraction:.0%}{eta}", file=sys.stderr)

    executor = make_executor(args.executor, args.workers, args.ray_address)
    if configs["ffnn"].match_utility != "off":
        from core.analyses.matching import run_matched

        result = run_matched(configs, progress=progress, executor=executor)
    else:
        result = run_comparison(configs, progress=progress, executor=executor)
    if out is not None:
        write_json_atomically(out, result)
    else:
        emit_json(result)
    return 0


def _defend_repeats(args: argparse.Namespace, config, values, n_pairs: int, out, progress, executor) -> int:
    """``defend --repeats N``: :func:`core.analyses.repeats.defend_repeats` (intervals per point)."""
    from core.analyses.repeats import defend_repeats

    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    result = defend_repeats(config, args.mechanism, values, args.attacker, args.draws, n_pairs, seed=args.seed,
                            progress=progress, executor=executor,
                            on_point=lambda i, n: say(f"[defend] {args.mechanism}: {i}/{n} values"))
    if out is not None:
        write_json_atomically(out, result)
    else:
        print(json.dumps(result, indent=2))
    return 0
