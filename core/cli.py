"""Command-line interface: everything the app shows, produced headless as JSON.

    python -m core run --task image --arch rnn --preset quick [--set key=value ...] [--out result.json]
    python -m core config --task image --arch ffnn --preset quick     # print the resolved config
    python -m core defend --task image --arch rnn --mechanism dirichlet --values 100,10,1,0.1,0.01 --attacker both

Every failure the user can fix prints one line ``error: ...`` on stderr and exits with 2 (bad
arguments, bad config values, missing data, an unwritable ``--out``); Ctrl-C prints one line
and exits with 130. Reusable pieces for further subcommands: :class:`OneLineErrorParser`,
:func:`guarded`, :func:`parse_sets`, :func:`check_named_sets`, and
:func:`core.fileio.check_out_path` / :func:`core.fileio.write_json_atomically`.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Callable, NoReturn, Sequence

from .errors import ConfigError, MIAError
from .fileio import check_out_path, write_json_atomically
from .tasks import available_tasks, get_task

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


def one_line(exc: BaseException) -> str:
    """The exception's message on one line (newlines would break the one-line contract)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def guarded(command: Callable[..., int], *args: Any, **kwargs: Any) -> int:
    """Run a CLI command and turn expected failures into an exit status.

    :class:`MIAError` → ``error: <message>`` and 2; Ctrl-C (KeyboardInterrupt) → the one line
    :data:`INTERRUPTED` and 130 (finished cache entries are committed atomically, so nothing
    half-written is left). Anything else is a bug and keeps its traceback.
    """
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
        p.add_argument("--task", choices=available_tasks(), default="image", help="learning task (default: image)")
        p.add_argument("--arch", choices=("ffnn", "rnn"), default="rnn", help="ffnn (CNN/Transformer/MLP) or rnn (LSTM-based)")
        p.add_argument("--preset", default="quick", help="quick (minutes on 2 CPU cores) or paper (the studies' sizes)")
        p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                       help="override a config field (repeatable, each key once), e.g. --set epochs=10 "
                            "--set weight_decay=1e-4; 'python -m core config' lists the keys")

    run = sub.add_parser("run", help="run the whole pipeline (cached) and write the result JSON")
    common(run)
    run.add_argument("--out", help="write the JSON here (default: stdout); the folder must exist")
    run.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    cfg = sub.add_parser("config", help="print the resolved config and its hash as JSON")
    common(cfg)
    defend = sub.add_parser("defend", help="a defense after training (Dirichlet k or GPM σ) over a grid of values, "
                                           "on the cached models of a run (trains them first if needed)")
    common(defend)
    defend.add_argument("--mechanism", required=True, metavar="{dirichlet,gpm}",
                        help="dirichlet: outputs x ~ Dir(k·p) (paper 001); gpm: weights θ + N(0, σ²I) (paper 000)")
    defend.add_argument("--values", required=True, metavar="V1,V2,...",
                        help="k values (> 0) for dirichlet, σ values (≥ 0) for gpm, e.g. 100,10,1,0.1,0.01")
    defend.add_argument("--attacker", default="naive", metavar="{naive,adaptive,both}",
                        help="naive: attack fitted on undefended shadows; adaptive: refitted on shadows behind the "
                             "same mechanism; both (default: naive)")
    defend.add_argument("--draws", type=int, default=1, help="independent draws of the mechanism per value (default 1)")
    defend.add_argument("--seed", type=int, default=0, help="seed of the mechanism's randomness (default 0)")
    defend.add_argument("--sensitivity-samples", type=int, default=None, metavar="N",
                        help="gpm: SensitivitySampler pairs for S and ε (2N trainings, cached; default per task: "
                             "image 10, translation 3, navigation 3; 0 = skip, ε is then null)")
    defend.add_argument("--out", help="write the JSON here (default: stdout); the folder must exist")
    defend.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return parser


def parse_values(text: str) -> list[float]:
    """``"100,10,1"`` → ``[100.0, 10.0, 1.0]``; anything that is not a finite number is a ConfigError."""
    values = []
    for part in text.split(","):
        part = part.strip()
        try:
            v = float(part)
        except ValueError:
            raise ConfigError(f"--values expects comma-separated numbers, got {part!r}") from None
        if v != v or v in (float("inf"), float("-inf")):
            raise ConfigError(f"--values must be finite numbers, got {part!r}")
        values.append(v)
    if not values:
        raise ConfigError("--values is empty")
    return values


def _defend(args: argparse.Namespace, config, out, progress) -> int:
    from .defenses import ATTACKERS, DEFAULT_SENSITIVITY_SAMPLES, DefenseSpec, defend
    from .pipeline import trained_models

    values = parse_values(args.values)
    if args.attacker not in ATTACKERS:
        raise ConfigError(f"--attacker must be one of {', '.join(ATTACKERS)}, got {args.attacker!r}")
    for v in values:  # every value checked before any training
        DefenseSpec(args.mechanism, v, draws=args.draws, seed=args.seed).validate()
    n_pairs = args.sensitivity_samples
    if n_pairs is None:
        n_pairs = DEFAULT_SENSITIVITY_SAMPLES.get(config.task, 5) if args.mechanism == "gpm" else 0
    if n_pairs < 0:
        raise ConfigError(f"--sensitivity-samples must be >= 0, got {n_pairs}")
    models = trained_models(config, progress=progress)
    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    result = defend(models, args.mechanism, values, args.attacker, args.draws, n_pairs, seed=args.seed,
                    on_point=lambda i, n: say(f"[defend] {args.mechanism}: {i}/{n} values"),
                    on_pair=lambda i, n: say(f"[sensitivity] {i}/{n} pairs"))
    if out is not None:
        write_json_atomically(out, result)
    else:
        print(json.dumps(result, indent=2))
    return 0


def resolve_config(args: argparse.Namespace):
    """The validated config named by ``--task``/``--arch``/``--preset``/``--set``."""
    task = get_task(args.task)
    return task.make_config(args.arch, args.preset, check_named_sets(parse_sets(args.sets), args))


def main(argv: Sequence[str] | None = None) -> int:
    return guarded(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    config = resolve_config(args)
    if args.command == "config":
        print(json.dumps({"config": config.to_dict(), "config_hash": config.config_hash}, indent=2))
        return 0

    out = check_out_path(args.out) if args.out else None  # before any work, not after it
    from .device import configure_threads

    configure_threads()  # several runs at once must not each start one thread per host core

    from .pipeline import run_experiment

    def progress(ev) -> None:
        eta = f", ~{ev.eta_s:.0f}s left" if ev.eta_s is not None else ""
        print(f"[{ev.overall_fraction:6.1%}] {ev.stage}: {ev.stage_fraction:.0%}{eta}", file=sys.stderr)

    if args.command == "defend":
        return _defend(args, config, out, None if args.quiet else progress)
    result = run_experiment(config, progress=None if args.quiet else progress)
    if out is not None:
        write_json_atomically(out, result.summary)
    else:
        print(json.dumps(result.summary, indent=2))
    return 0
