"""Command-line interface: everything the app shows, produced headless as JSON.

    python -m core run --task image --arch rnn --preset quick [--set key=value ...] [--out result.json]
    python -m core config --task image --arch ffnn --preset quick     # print the resolved config
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from .errors import MIAError
from .tasks import available_tasks, get_task


def _parse_sets(pairs: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            raise MIAError(f"--set expects key=value, got {pair!r}")
        key, value = pair.split("=", 1)
        out[key.strip()] = value.strip()
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m core",
        description="MIA Explorer: train victims and shadow models, run membership inference attacks, print JSON.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--task", choices=available_tasks(), default="image", help="learning task (default: image)")
        p.add_argument("--arch", choices=("ffnn", "rnn"), default="rnn", help="ffnn (CNN/Transformer/MLP) or rnn (LSTM-based)")
        p.add_argument("--preset", default="quick", help="quick (minutes on 2 CPU cores) or paper (the studies' sizes)")
        p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                       help="override a config field (repeatable), e.g. --set epochs=10 --set weight_decay=1e-4; "
                            "'python -m core config' lists the keys")

    run = sub.add_parser("run", help="run the whole pipeline (cached) and write the result JSON")
    common(run)
    run.add_argument("--out", help="write the JSON here (default: stdout)")
    run.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    cfg = sub.add_parser("config", help="print the resolved config and its hash as JSON")
    common(cfg)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        task = get_task(args.task)
        config = task.make_config(args.arch, args.preset, _parse_sets(args.sets))
    except MIAError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.command == "config":
        print(json.dumps({"config": config.to_dict(), "config_hash": config.config_hash}, indent=2))
        return 0

    from .pipeline import run_experiment

    def progress(ev) -> None:
        eta = f", ~{ev.eta_s:.0f}s left" if ev.eta_s is not None else ""
        print(f"[{ev.overall_fraction:6.1%}] {ev.stage}: {ev.stage_fraction:.0%}{eta}", file=sys.stderr)

    try:
        result = run_experiment(config, progress=None if args.quiet else progress)
    except MIAError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(result.summary, indent=2)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    else:
        print(text)
    return 0
