"""The CLI's repeats (``run --repeats N``) and ``compare`` (FFNN vs RNN, paired over repeats)
subcommands (:mod:`core.cli`).

An entry point like :mod:`core.cli`: module-level imports are light (no torch); the library loads
inside the commands, after the arguments are checked."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

from core.cli.common import Once, check_named_sets, given, parse_sets
from core.cli.output import write_result
from core.cli.progress import Progress
from core.foundations.errors import ConfigError


# ---------------------------------------------------------------------------- repeats and compare
def with_repeats(config, repeats: int | None):
    """``config`` with ``repeats`` (from ``--repeats``) set and checked against its range."""
    if repeats is None:
        return config
    return config.with_updates({"repeats": repeats}).validate()


def run_repeats_command(args: argparse.Namespace, config, out, progress, executor) -> int:
    """``run --repeats N``: repeat 0's summary plus a ``repeats`` block (:func:`core.analyses.repeats.repeats_block`)."""
    from core.analyses.repeats import repeats_block, run_repeats

    if args.online_lira:
        raise ConfigError("--online-lira runs on one run; leave out --repeats (or run it on repeat 0 alone)")
    summaries = run_repeats(config, progress=progress, executor=executor)
    summary = dict(summaries[0].to_dict(), repeats=repeats_block(summaries))  # the JSON the CLI writes
    write_result(out, summary, "run")
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
    p.add_argument("--imports", action=Once, metavar="DIR",
                   help="with --cached: also read run summaries made on other machines from DIR (one folder per batch "
                        "with its provenance.json; each checked against its checksum, schema and config hash), where "
                        "this cache lacks a repeat under the same config hash; the JSON names each repeat's origin")


def compare_command(args: argparse.Namespace, out: Path | None) -> int:
    """``compare``: :func:`core.analyses.repeats.run_comparison` (``out`` checked by :func:`check_arguments`)."""
    from core.analyses.repeats import comparison_configs, run_comparison
    from core.experiment.executor import make_executor
    from core.foundations.device import configure_threads

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
    if args.imports is not None and not args.cached:
        raise ConfigError("--imports reads summaries made elsewhere: it needs --cached (without it compare trains)")
    if args.cached:  # what the Home page shows: read the cache, never train
        from core.analyses.answer import cached_answer
        from core.experiment.run_source import RunSource, load_imports

        if sets:
            raise ConfigError("--cached answers for a preset as it is: leave out --set")
        source = RunSource(None, load_imports(args.imports)) if args.imports is not None else None
        write_result(out, cached_answer(args.task, args.preset, source=source).to_dict(), "answer")
        return 0
    configs = comparison_configs(args.task, args.preset, args.repeats, sets)
    configure_threads()

    progress = Progress(args.quiet)  # a bar on a terminal, lines otherwise, nothing with --quiet
    executor = make_executor(args.executor, args.workers, args.ray_address)
    try:
        if configs["ffnn"].match_utility != "off":
            from core.analyses.matching import run_matched

            result, schema = run_matched(configs, progress=progress, executor=executor), "compare-matched"
        else:
            result, schema = run_comparison(configs, progress=progress, executor=executor), "compare"
    finally:
        progress.close()
    write_result(out, result, schema)
    return 0
