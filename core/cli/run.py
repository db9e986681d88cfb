"""The CLI's ``run`` subcommand (:mod:`core.cli.main` parses it): one run of the pipeline (cached), or its repeats
(:func:`core.cli.compare.run_repeats_command`), with online LiRA on request, written as the ``run`` layout.

An entry point like :mod:`core.cli.main`: module-level imports are light (no torch); the library loads inside the
command, after the arguments are checked."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from core.cli.compare import run_repeats_command, with_repeats
from core.cli.output import write_result
from core.cli.progress import Progress
from core.foundations.config import ExperimentConfig

if TYPE_CHECKING:  # the typed results load with the run (numpy, scipy): not for --help
    from core.experiment.results import RunSummary


def run_command(args: argparse.Namespace, config: ExperimentConfig, out: Path | None, progress: Progress) -> int:
    """``run``: one run (or its repeats), written as the ``run`` layout."""
    from core.experiment.executor import make_executor
    from core.experiment.pipeline import run_experiment

    executor = make_executor(args.executor, args.workers, args.ray_address)
    config = with_repeats(config, args.repeats)
    if args.repeats is not None or config.repeats > 1:
        return run_repeats_command(args, config, out, progress, executor)
    result = run_experiment(config, progress=progress, executor=executor)
    if args.online_lira:
        from core.experiment.pipeline import trained_models
        from core.experiment.reference_attacks import LIRA_ONLINE, online_lira
        from core.experiment.results import AttackResult
        from core.measurement.metrics import scores_for_json

        progress.say(f"[online LiRA] {args.online_lira} reference models (trained once, cached)")
        outcome = online_lira(trained_models(config), n_models=args.online_lira)
        online = AttackResult.from_dict({**outcome.result.to_dict(), "threat_model": "online",
                                         "reference_models": args.online_lira}, f"summary.attacks[{LIRA_ONLINE!r}]")
        # its per-record scores beside the others' (exact, as core.experiment.pipeline.record_signals keeps them)
        run = add_augmented_online_lira(result.run.with_attack(online, scores_for_json(outcome.scores)), config)
        summary = run.to_dict()
    else:
        summary = result.summary
    write_result(out, summary, "run")
    return 0


def add_augmented_online_lira(run: RunSummary, config: ExperimentConfig) -> RunSummary:
    """``run --online-lira N``: LiRA with augmented queries against the online references just trained
    (:class:`core.experiment.model_attacks.AugmentedLiRAOnline`; the pipeline ran before those models existed, so
    it could only say why not): ``run`` with it added, or where the task has no augmentations with the reason in
    ``attacks_not_run``."""
    from core.experiment.cache import ArtifactCache
    from core.experiment.model_attacks import LIRA_AUGMENTED_ONLINE, AugmentedLiRAOnline, UndefendedQuery
    from core.experiment.pipeline import trained_models
    from core.experiment.results import AttackResult
    from core.measurement.metrics import scores_for_json

    models, cache = trained_models(config), ArtifactCache()
    attack = AugmentedLiRAOnline()
    if not attack.fit(models, cache):  # why not, beside the pipeline's reasons
        return run.with_json({"attacks_not_run": {**(run.attacks_not_run or {}), LIRA_AUGMENTED_ONLINE: attack.skipped}})
    outcome = attack.outcomes(UndefendedQuery(models, cache))[LIRA_AUGMENTED_ONLINE]
    augmented = AttackResult.from_dict({**outcome.result.to_dict(), "threat_model": "online"},
                                       f"summary.attacks[{LIRA_AUGMENTED_ONLINE!r}]")
    return run.with_attack(augmented, scores_for_json(outcome.scores))
