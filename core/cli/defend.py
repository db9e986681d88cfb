"""The CLI's ``defend`` subcommand (:mod:`core.cli`): after-training mechanisms on cached models, the
training-time defenses (DP-SGD, L2: retrain per value), their repeats and option checks.

An entry point like :mod:`core.cli`: module-level imports are light (no torch); the library loads
inside the commands, after the arguments are checked."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from core.cli.common import check_named_sets, given, parse_sets
from core.cli.compare import with_repeats
from core.cli.output import write_result
from core.defenses import registry as defense_registry  # light: a mechanism's module (and torch) loads on first use
from core.foundations.config import MAX_DRAWS, MAX_REPEATS, MAX_SENSITIVITY_PAIRS, parse_values
from core.foundations.errors import ConfigError, MIAError
from core.tasks import get_task  # light: a task's module (and torch) loads on first use

if TYPE_CHECKING:  # types only: the library loads inside the commands
    from core.defenses.defense_results import UtilityCost


def _defend_training(args: argparse.Namespace, config, out, progress) -> int:
    """``defend`` with a training-time mechanism: one cached run per value (:mod:`core.defenses.sweeps`)."""
    from core.defenses.sweeps import check_sweep, sweep

    values = parse_values(args.values)
    check_sweep(config, args.mechanism, values, args.target_epsilon)  # every value before any training
    say = progress.say  # beside the bar (a line of its own where there is none)
    run = sweep(config, args.mechanism, values, target_epsilon=args.target_epsilon, progress=progress,
                on_point=lambda i, n, p: say(f"[defend] {args.mechanism}: {i}/{n} values"))
    run = run.with_json({"utility_cost_comparison": cached_utility_cost(args, config, values).to_dict()})
    write_result(out, run.to_dict(), "defend")
    if run.unreachable:  # the points computed are written above; the rest is one line
        missing = run.unreachable
        shown_values = ", ".join(f"{u.value:g}" for u in missing)
        raise ConfigError(f"{len(missing)} of {len(values)} values not computed ({shown_values}), the points computed "
                          f"are written; the first: {missing[0].error}")
    return 0


def cached_utility_cost(args: argparse.Namespace, config, values: list[float]) -> "UtilityCost":
    """The Training defenses page's answer to "does the same ε (λ, clip ε) cost the RNN more utility?"
    (:func:`core.defenses.utility_cost.sweep_utility_cost`) over the sweep's runs cached for both
    architectures — this sweep's, and the other architecture's from its own ``defend --arch`` or the page —
    and their repeats 1, 2, … as far as any is cached (the page's repeats box). Nothing trains here."""
    from core.analyses.repeats import repeat_config
    from core.defenses.defense_results import UtilityCost
    from core.defenses.sweeps import sweep_runs
    from core.defenses.utility_cost import question, sweep_utility_cost
    from core.experiment.pipeline import cached_run

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
        return UtilityCost.from_dict({"question": question(args.mechanism, args.target_epsilon), "values": [], "how": how,
                                      "summary": f"no comparison: {' '.join(str(exc).split())}"})
    summaries = []
    for r in range(MAX_REPEATS):
        cached = {(a, v): cached_run(repeat_config(c, r)) for a, rs in runs.items() for v, c in rs}
        if r and all(s is None for s in cached.values()):
            break
        summaries.append(cached)
    return sweep_utility_cost(runs, summaries, args.mechanism, args.target_epsilon).with_json({"how": how})


def defend_command(args: argparse.Namespace, config, out, progress) -> int:
    from core.defenses.defender import defense_run
    from core.defenses.spec import ATTACKERS, DefenseSpec
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
    say = progress.say  # beside the bar (a line of its own where there is none)
    result = defense_run(models, args.mechanism, values, args.attacker, args.draws, n_pairs, seed=args.seed,
                         on_point=lambda i, n: say(f"[defend] {args.mechanism}: {i}/{n} values"),
                         on_pair=lambda i, n: say(f"[sensitivity] {i}/{n} pairs"), executor=executor).to_dict()
    write_result(out, result, "defend")
    return 0


def check_defend_options(args: argparse.Namespace) -> None:
    """``defend``'s options before torch: ``--values`` (at most MAX_VALUES), the counts' caps (the
    app's: draws 1..MAX_DRAWS, SensitivitySampler pairs 0..MAX_SENSITIVITY_PAIRS), and no option
    that the chosen mechanism would ignore (``--draws`` with dpsgd)."""
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


def _defend_repeats(args: argparse.Namespace, config, values, n_pairs: int, out, progress, executor) -> int:
    """``defend --repeats N``: :func:`core.analyses.repeats.defend_repeats` (intervals per point)."""
    from core.analyses.repeats import defend_repeats

    say = progress.say  # beside the bar (a line of its own where there is none)
    result = defend_repeats(config, args.mechanism, values, args.attacker, args.draws, n_pairs, seed=args.seed,
                            progress=progress, executor=executor,
                            on_point=lambda i, n: say(f"[defend] {args.mechanism}: {i}/{n} values")).to_dict()
    write_result(out, result, "defend-repeats")
    return 0
