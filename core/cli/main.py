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
    python -m core audit --model torchvision:resnet18 --weights m.safetensors --data DIR --members m.txt  # your model
    python -m core inspect --task tabular --set dataset=csv --set data_dir=~/t.csv --set label=y  # what a run reads

Every failure the user can fix prints one line ``error: ...`` on stderr and exits with 2; Ctrl-C prints one
line and exits with 130 from the start. The options and then the config's values are checked before torch is
imported, so refused input answers at once. The subcommands live beside it in :mod:`core.cli`.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from core.cli.analyze import (
    add_findings_command,
    add_score_command,
    analysis_archs,
    analyze_command,
    check_analyze_options,
    findings_command,
    report_archs,
    report_command,
    score_command,
)
from core.cli.audit import add_audit_command, audit_command
from core.cli.common import Once, OneLineErrorParser, check_named_sets, guarded, parse_sets, positive_int
from core.cli.compare import add_compare_command, compare_command
from core.cli.config_file import apply_config_file, config_format, write_config
from core.cli.defend import check_defend_options, defend_command
from core.cli.output import out_folder, out_path, write_result
from core.cli.progress import Progress
from core.cli.run import run_command
from core.defenses import registry as defense_registry  # light: a mechanism's module (and torch) loads on first use
from core.foundations.config import EXECUTORS, MAX_REPEATS
from core.foundations.environment import check_environment
from core.foundations.errors import ConfigError
from core.foundations.plugins import PLUGIN_ENV
from core.foundations.task_registry import load_plugin_file
from core.foundations.version import DISTRIBUTION, VERSION
from core.tasks import available_tasks, get_task  # light: a task's module (and torch) loads on first use


def build_parser(prog: str = "python -m core", epilog: str | None = None) -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        prog=prog, epilog=epilog,
        description="MIA Explorer: train victims and shadow models, run membership inference attacks, print JSON.",
    )
    parser.add_argument("--version", action="version", version=f"{DISTRIBUTION} {VERSION}")
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
        p.add_argument("--config", action=Once, metavar="FILE",
                       help="read the config fields from a TOML, YAML or JSON file (by its suffix; 'config --out "
                            "FILE' writes one, examples/ holds one per task); --task/--arch/--preset and --set win "
                            "over it, an unknown key is refused")

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
                     help="run N repeats (1..20; seeds derived from the config's seed; repeat 1 = the config itself, each "
                          "cached) and add a 'repeats' block: every headline metric's mean, ci_low, ci_high, n and "
                          "per-repeat values (same as --set repeats=N)")
    add_compare_command(sub, common)
    add_score_command(sub)
    add_audit_command(sub)
    add_findings_command(sub)
    cfg = sub.add_parser("config", help="print the resolved config and its hash as JSON (or write it to --out)")
    common(cfg)
    cfg.add_argument("--out", action=Once, metavar="FILE",
                     help="write it to FILE as TOML, YAML or JSON (by the suffix: .toml, .yaml/.yml, .json), which "
                          "'--config FILE' reads back to the same config_hash")
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
    analyze.add_argument("--cached", action="store_true",
                         help="read the cached runs and models only, never train (what the Analyses page shows): "
                              "scatter and vulnerability, with their verdicts and, where repeats are cached, the "
                              "verdicts over every cached repeat (or over --repeats N of them); a run not cached is "
                              "one error line")
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


def main(argv: Sequence[str] | None = None, prog: str = "python -m core", epilog: str | None = None) -> int:
    return guarded(_main, argv, prog, epilog)


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
    if args.command == "config" and out is not None:
        config_format(out)  # a suffix it cannot write: refused before anything
    # an empty `--out ''` is a mistake (a variable that was not set), not stdout
    return out_path(out)  # before any work, not after it


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


def _main(argv: Sequence[str] | None, prog: str = "python -m core", epilog: str | None = None) -> int:
    check_environment()  # a bad MIA_* value: one line before anything else
    load_cli_plugins(sys.argv[1:] if argv is None else argv)
    args = apply_config_file(build_parser(prog, epilog).parse_args(argv))
    if args.command == "score":  # no task, no config, no torch
        return score_command(args)
    if args.command == "audit":  # a model of the user's own: no task, no config
        return audit_command(args)
    if args.command == "findings":
        return findings_command(args)
    out = check_arguments(args)  # torch is not imported yet: refused input answers at once
    if args.command == "compare":
        return compare_command(args, out)
    config = resolve_config(args)
    if args.command == "config":
        write_config(out, config)
        return 0
    if args.command == "inspect":
        from core.experiment.data_preview import preview_data

        write_result(out, preview_data(config).to_dict(), "inspect")
        return 0

    from core.foundations.device import configure_threads

    configure_threads()  # several runs at once must not each start one thread per host core
    if args.command == "analyze":  # --out is a folder here
        return analyze_command(args)
    if args.command == "report":
        assert out is not None  # report's --out is required (the parser refuses it missing)
        return report_command(args, out)

    progress = Progress(args.quiet)  # a bar on a terminal, lines otherwise, nothing with --quiet
    try:
        if args.command == "defend":
            return defend_command(args, config, out, progress)
        return run_command(args, config, out, progress)
    finally:
        progress.close()
