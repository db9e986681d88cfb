"""The CLI's analysis subcommands (:mod:`core.cli`): ``analyze``, ``report`` (the run report of
cached runs), ``score`` (a file of scores, no model) and ``findings``; their option checks.

An entry point like :mod:`core.cli`: module-level imports are light (no torch); the library loads
inside the commands, after the arguments are checked."""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.cli.common import Once, check_named_sets, given, parse_sets, positive_int
from core.cli.output import out_folder, out_path, write_result
from core.cli.progress import Progress
from core.foundations.config import parse_values
from core.foundations.errors import ConfigError
from core.foundations.fileio import check_out_path, show_path, write_text_atomically
from core.tasks import available_tasks, get_task  # light: a task's module (and torch) loads on first use

if TYPE_CHECKING:
    from core.analyses.analyses_json import AnalysesResults


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


def report_command(args: argparse.Namespace, out: Path) -> int:
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


def analyze_command(args: argparse.Namespace) -> int:
    from core.analyses import registry as analysis_registry
    from core.analyses.analysis import analyze
    from core.defenses.spec import DefenseSpec

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
    if args.cached:  # the Analyses page's data: read from the cache, never trained
        return cached_analyze(args, configs, names if args.analysis != "all" else (), archs)
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
    progress = Progress(args.quiet)  # a bar on a terminal, a line per stage otherwise, nothing with --quiet
    try:
        results = analyze(configs, names, progress.stage, canaries=args.canaries, defense=defense,
                          online_lira=args.online_lira, repeats=args.repeats or 1)
    finally:
        progress.close()
    return _write(results, folder, args.quiet)


def cached_analyze(args: argparse.Namespace, configs: dict[str, Any], names: tuple[str, ...], archs: list[str]) -> int:
    """``analyze --cached``: :func:`core.analyses.analyses_view.analyses_view` of the cached runs (the Analyses
    page's data, nothing trains), written as ``analyze`` writes its results (one class, ``AnalysesResults``; the
    view's key order kept)."""
    from core.analyses import analyses_view

    if set(names) - set(analyses_view.CACHED):
        raise ConfigError(f"--cached reads cached runs only: it computes {', '.join(analyses_view.CACHED)}; "
                          f"{', '.join(n for n in names if n not in analyses_view.CACHED)} train models (drop --cached)")
    if set(archs) != {"ffnn", "rnn"}:
        raise ConfigError("--cached compares FFNN with RNN, as the Analyses page: give --archs ffnn,rnn")
    cached = analyses_view.cached_repeat_count(configs)
    if cached == 0:
        analyses_view.cached_runs(configs)  # raises: names the run missing and the command that computes it
    repeats = cached if args.repeats is None else args.repeats
    if repeats > cached:
        raise ConfigError(f"--repeats {repeats}: only {cached} repeat{'s' * (cached != 1)} of both runs cached "
                          f"(python -m core compare --repeats {repeats} computes them, or drop --cached)")
    folder = out_folder(args.out)
    for name in ("analyses.json", *(f"{n}.{ext}" for n in analyses_view.CACHED for ext in ("csv", "html"))):
        check_out_path(folder / name)
    results = analyses_view.analyses_view(configs, repeats=repeats).as_results()
    return _write(results, folder, args.quiet)


def _write(results: AnalysesResults, folder: Path, quiet: bool) -> int:
    """Write the analyses' files into ``folder`` (naming each on stderr) and print the verdicts' JSON."""
    from core.views.report import write_analyses

    for path in write_analyses(results, folder):
        if not quiet:
            print(f"wrote {path}", file=sys.stderr)
    write_result(None, results.printed(), "analyses-printed")
    return 0


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


def add_score_command(sub: Any) -> None:
    """The ``score`` subcommand: membership inference from a file of per-record scores."""
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


def score_command(args: argparse.Namespace) -> int:
    """``score``: :func:`core.analyses.scores.score_file` → JSON (and the HTML report)."""
    if args.bootstrap is not None and not 100 <= args.bootstrap <= 10_000:
        raise ConfigError(f"--bootstrap must lie in 100..10000, got {args.bootstrap}")
    out, report = out_path(args.out), out_path(args.report)
    if out is not None and report is not None and out == report:
        raise ConfigError("--out and --report name the same file")
    from core.analyses.scores import score_file  # after the checks: refused arguments answer at once
    from core.views.scores_report import scores_report_html
    result = score_file(args.inp, anywhere=True, n_boot=args.bootstrap, seed=args.seed)
    if report is not None:
        write_text_atomically(report, scores_report_html(result))
    write_result(out, result.to_dict(), "score")
    return 0


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
                   help="config fields changed from the preset, as the runs were made (repeatable, each key once; "
                        "PRESET:KEY=VALUE for one preset only, e.g. cifar_cpu:data_dir=DIR)")
    p.add_argument("--out", action=Once, help="write the JSON here (default: stdout)")
    p.add_argument("--markdown", action=Once, metavar="FILE.md",
                   help="also write the table as Markdown; a FILE holding <!-- findings:begin --> … "
                        "<!-- findings:end --> (docs/results.md) gets only that block replaced")
    p.add_argument("--html", action=Once, metavar="FILE.html", help="also write the table as one HTML page")
    p.add_argument("--imports", action=Once, metavar="DIR",
                   help="also read run summaries made on other machines from DIR (one folder per batch with its "
                        "provenance.json; e.g. imported_runs): each checked against its checksum, schema and config "
                        "hash (one failing refuses all), read where this cache lacks a run under the same config "
                        "hash (F1 / F1a rows); the table says which rows mix machines")


def findings_command(args: argparse.Namespace) -> int:
    """``findings``: :func:`core.analyses.findings.findings_table`; every output path checked before torch loads."""
    if not re.fullmatch(r"[A-Za-z0-9_]{1,64}(,[A-Za-z0-9_]{1,64}){0,15}", args.preset):
        raise ConfigError(f"--preset must be preset names separated by commas, got {args.preset!r}")
    paths = {name: out_path(getattr(args, name)) for name in ("out", "markdown", "html")}
    sets = parse_sets(args.sets)
    given_paths = [str(p.resolve()) for p in paths.values() if p is not None]
    if len(set(given_paths)) != len(given_paths):
        raise ConfigError("--out, --markdown and --html must name different files")
    from core.analyses.findings import findings_table
    from core.experiment.run_source import load_imports
    from core.views.findings_report import findings_html, markdown_into

    imports = load_imports(args.imports) if args.imports is not None else None
    table = findings_table((args.task,) if args.task else None, args.preset, sets=sets, imports=imports)
    if paths["markdown"] is not None:
        md = paths["markdown"]
        existing = md.read_text(encoding="utf-8") if md.is_file() else None
        write_text_atomically(md, markdown_into(existing, table, args.markdown))
    if paths["html"] is not None:
        write_text_atomically(paths["html"], findings_html(table))
    write_result(paths["out"], table.to_dict(), "findings")
    return 0
