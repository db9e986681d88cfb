"""The findings of the defenses and of forgetting (issue 35): the rows of F2 (the FFNN forgets early training
blocks faster: the memorization analysis' cached results), F3 (Dirichlet k = 1 brings the attack to ≈ 50 % at a
small utility cost: the cached defended points of the RNN victim), F4 (the same ε costs the RNN more utility:
DP-SGD at a target ε) and F5 (L2 helps the FFNN more: the attack accuracy's drop under λ) — each a metric that is
its own family (one comparison, no multiplicity), read from the cache only, with the runs it still needs.
:func:`core.analyses.findings.findings_table` puts them beside F1 / F1a.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from core.analyses.findings_base import (DIRICHLET_K, F3_MAX_LOSS, F3_TOLERANCE, FINDINGS, MAX_TABLE_REPEATS,
                                         MEMORIZATION_BLOCKS, TARGET_REPEATS, Costs, Finding, FindingRow, MeasuredCell, Missing, PaperClaim,
                                         RuleCell, RuleVerdict, cached_run, finding_row, leading, missing_run,
                                         sets_text, time_text)
from core.analyses.own_models import Memorization
from core.analyses.repeats import comparison_configs, repeat_config
from core.defenses import registry as defense_registry
from core.defenses.spec import DefenseSpec
from core.defenses.sweeps import baseline_config, point_config
from core.experiment.cache import ArtifactCache
from core.experiment.results import DefendedPoint, RunSummary
from core.foundations.config import ExperimentConfig
from core.measurement.metrics import utility_loss
from core.measurement.stats import Estimate, compare, is_zero_width, mean_interval
from core.measurement.studies import DIRICHLET
from core.tasks import get_task


def _memorization_key(cfg: ExperimentConfig, cache: ArtifactCache) -> str:
    """The cache key :func:`core.analyses.analysis.memorization` stores its result under (its default schedule)."""
    return cache.key("analysis", cfg.training_hash, "memorization", cfg.config_hash, MEMORIZATION_BLOCKS,
                     max(1, cfg.epochs // MEMORIZATION_BLOCKS))


def _cached_memorization(cfg: ExperimentConfig, cache: ArtifactCache) -> Memorization | None:
    """The memorization analysis' cached result of ``cfg``, typed; None when not cached, without blocks, or not a
    result memorization writes (read only: a bad entry is left to the analysis itself, which recomputes it)."""
    stored = cache.get_json(_memorization_key(cfg, cache))
    if not isinstance(stored, dict):
        return None
    try:
        result = Memorization.from_dict(stored)
    except (KeyError, TypeError, ValueError):
        return None
    return result if result.blocks else None


def memorization_row(task: str, preset: str, sets: dict[str, Any] | None, cache: ArtifactCache, costs: Costs,
                      target: int) -> FindingRow:
    configs = comparison_configs(task, preset, 1, sets)
    per: dict[str, list[Memorization | None]] = {}
    missing: list[Missing] = []
    for a, c in configs.items():
        per[a] = []
        for r in range(target):
            rc = repeat_config(c, r)
            result = _cached_memorization(rc, cache)
            per[a].append(result)
            if result is None:
                missing.append(Missing(rc, "analysis", {"name": "memorization"}, f"memorization {a} repeat {r + 1}",
                                       None))
    n = leading([all(per[a][r] is not None for a in per) for r in range(target)])
    while n == len(per["ffnn"]) and n < MAX_TABLE_REPEATS:  # further repeats cached for both (as F1, F3 – F5 read
        more = {a: _cached_memorization(repeat_config(c, n), cache) for a, c in configs.items()}  # them): the
        if any(m is None for m in more.values()):  # "repeats to decide" this row asks for
            break
        for a, m in more.items():
            per[a].append(m)
        n += 1
    common = dict(paper=PaperClaim(FINDINGS["F2"].source.cite(), "trained on blocks in sequence, the FFNN's attack "
                                   "on the first block falls toward 50 % while the RNN's stays high"),
                  metric="attack accuracy on the first block learned", n=n, target_repeats=target,
                  missing=tuple(missing), missing_time=time_text(missing),
                  command=f"python -m core analyze --task {task} --preset {preset}{sets_text(sets)} --analysis memorization "
                          f"--repeats {max(n, target)} --out findings_memorization",
                  repeat_items=tuple([(c, "plain") for c in configs.values()] + [(c, "analysis") for c in configs.values()]))
    if n == 0:
        return finding_row(FINDINGS["F2"], task, preset, status="not run", **common)
    f = [per["ffnn"][r].blocks[0].attack_accuracy for r in range(n)]
    r_ = [per["rnn"][r].blocks[0].attack_accuracy for r in range(n)]
    comp = compare("memorization_first_block", f, r_, -1, bounds=(0.0, 1.0))
    return finding_row(FINDINGS["F2"], task, preset, status="measured", measured=MeasuredCell.of(comp), **common)


def _defended_point(cfg: ExperimentConfig, spec: DefenseSpec, cache: ArtifactCache) -> DefendedPoint | None:
    """The Dirichlet point with utility cached for ``cfg`` (the adaptive job's ``both``, else ``naive``), or None."""
    for attacker in ("both", "naive"):
        stored = cache.get_json(cache.key("defended", cfg.config_hash, spec.key, attacker),
                                validate=DefendedPoint.from_dict)
        if not isinstance(stored, dict):
            continue
        point = DefendedPoint.from_dict(stored)  # validated as it left the cache: it parses
        if point.value == spec.value and point.utility_loss is not None:
            return point
    return None


def f3_verdict(acc: Estimate, loss: Estimate, n: int) -> tuple[str, str]:
    """F3's (value, reason) from the RNN's attack accuracy and utility loss under Dir_k over ``n`` repeats: the
    rule in :func:`dirichlet_row`'s ``rule``; never a verdict from a zero-width interval (every repeat equal)."""
    value, reason = "inconclusive", f"N = {n}"
    if n < TARGET_REPEATS:
        reason = f"N = {n} < {TARGET_REPEATS}: run {TARGET_REPEATS} repeats"
    elif acc.ci_low is None or loss.ci_low is None:
        reason = "no interval"
    elif is_zero_width(acc.ci_low, acc.ci_high, acc.mean) or is_zero_width(loss.ci_low, loss.ci_high, loss.mean):
        which = "attack accuracy" if is_zero_width(acc.ci_low, acc.ci_high, acc.mean) else "utility loss"
        reason = (f"every one of the N = {n} repeats gave the same {which}: a zero-width interval is the metric's "
                  "resolution, not certainty")
    elif acc.ci_low >= 0.5 - F3_TOLERANCE and acc.ci_high <= 0.5 + F3_TOLERANCE and loss.ci_high <= F3_MAX_LOSS:
        value, reason = "holds", "accuracy interval within 50 % ± 5 points and the loss's upper end ≤ 10 %"
    elif acc.ci_low > 0.5 + F3_TOLERANCE or loss.ci_low > F3_MAX_LOSS:
        value, reason = "reversed", "accuracy interval above 55 % or the loss's lower end above 10 %"
    else:
        reason = "the intervals straddle the rule's bounds"
    return value, reason


def dirichlet_row(task: str, preset: str, sets: dict[str, Any] | None, cache: ArtifactCache, costs: Costs,
                   target: int) -> FindingRow:
    cfg = get_task(task).make_config("rnn", preset, dict(sets or {}))
    # the mechanism's default draws, as `defend` (the row's command) and the Defenses page use: a row reading
    # one draw never found the points its own command had written with eight
    spec = DefenseSpec("dirichlet", DIRICHLET_K, draws=defense_registry.get("dirichlet").default_draws)
    points, missing = [], []
    for r in range(target):
        rc = repeat_config(cfg, r)
        run = cached_run(rc, cache, costs)
        point = _defended_point(rc, spec, cache) if run is not None else None
        points.append(point)
        if run is None:
            missing.append(missing_run(rc, costs, "plain", f"run rnn repeat {r + 1}"))
        if point is None:
            missing.append(Missing(rc, "adaptive", {"spec": dataclasses.asdict(spec)},
                                   f"Dirichlet k = {DIRICHLET_K:g} point (naive + adaptive attacker, utility) repeat {r + 1}",
                                   None))
    n = leading([p is not None for p in points])
    while n == len(points) and n < MAX_TABLE_REPEATS:  # further repeats cached (as F1, F4, F5 read them): the
        point = _defended_point(repeat_config(cfg, n), spec, cache)  # "repeats to decide" this row asks for
        if point is None:
            break
        points.append(point)
        n += 1
    study = DIRICHLET.get((task, "rnn"))
    paper = PaperClaim("")
    if study:
        acc, acc_sd, util, util_sd = study.rows[DIRICHLET_K]
        base = study.rows[None][2]
        paper = PaperClaim(study.source.cite(),
                           f"k = 1: attack {acc:.2f} % ± {acc_sd:.2f}, {study.metric} {util:g} ± {util_sd:g} "
                           f"(undefended {base:g}: loss {1 - util / base:.1%})",
                           attack_accuracy=acc / 100, utility_loss=1 - util / base)
    rule = (f"holds: N ≥ {TARGET_REPEATS} and the attack accuracy's 95 % interval within 50 % ± {F3_TOLERANCE:.0%} "
            f"points and the utility loss's upper end ≤ {F3_MAX_LOSS:.0%}; reversed: N ≥ {TARGET_REPEATS} and the "
            f"accuracy interval wholly above 50 % + {F3_TOLERANCE:.0%} or the loss's lower end above "
            f"{F3_MAX_LOSS:.0%}; else inconclusive (the paper gives no tolerance: ours)")
    common = dict(paper=paper, metric=f"RNN attack accuracy and utility loss under Dir_k, k = {DIRICHLET_K:g}", n=n,
                  target_repeats=target, rule=rule, missing=tuple(missing), missing_time=time_text(missing),
                  command=f"python -m core defend --task {task} --arch rnn --preset {preset}{sets_text(sets)} --mechanism dirichlet "
                          f"--values {DIRICHLET_K:g} --draws {spec.draws} --attacker both --repeats {max(n, target)}",
                  repeat_items=((cfg, "plain"), (cfg, "analysis")))
    if n == 0:
        return finding_row(FINDINGS["F3"], task, preset, status="not run", **common)
    acc = mean_interval([float(p.attack.accuracy) for p in points[:n]], bounds=(0.0, 1.0))
    loss = mean_interval([float(p.utility_loss) for p in points[:n]], bounds=(None, 1.0))
    value, reason = f3_verdict(acc, loss, n)
    measured = RuleCell(acc, loss, RuleVerdict(value, n, reason))
    return finding_row(FINDINGS["F3"], task, preset, status="measured", measured=measured, **common)


def training_defense_row(finding: Finding, task: str, preset: str, sets: dict[str, Any] | None, cache: ArtifactCache,
                          costs: Costs, target: int,
                          mechanism: str, value: float, target_epsilon: bool, metric: str,
                          read: Callable[[RunSummary, RunSummary], float | None], expected: int,
                          paper: PaperClaim) -> FindingRow:
    """A training-time defense compared between the architectures over repeats: per repeat r and
    architecture, the undefended run and the defended one (both cached), ``read(baseline, point)``."""
    configs = comparison_configs(task, preset, 1, sets)
    values: dict[str, list[float | None]] = {a: [] for a in configs}
    missing: list[Missing] = []
    run_sets: dict[str, Any] = {}
    items: list[tuple[ExperimentConfig, str]] = []
    for a, c in configs.items():
        point_cfg = point_config(c, mechanism, value, target_epsilon)
        base_cfg = baseline_config(c, mechanism)
        items += [(base_cfg, "plain"), (point_cfg, mechanism)]
        run_sets = {**dict(sets or {}), **{k: v for k, v in point_cfg.to_dict().items() if v != c.to_dict().get(k)}}
        for r in range(target):
            b = cached_run(repeat_config(base_cfg, r), cache, costs)
            p = cached_run(repeat_config(point_cfg, r), cache, costs, mechanism)
            if b is None:
                missing.append(missing_run(repeat_config(base_cfg, r), costs, "plain", f"undefended {a} repeat {r + 1}"))
            if p is None:
                missing.append(missing_run(repeat_config(point_cfg, r), costs, mechanism,
                                            f"{mechanism} {a} repeat {r + 1}"))
            values[a].append(read(b, p) if b is not None and p is not None else None)
    n = leading([all(values[a][r] is not None for a in values) for r in range(target)])
    while n == len(values["ffnn"]) and n < MAX_TABLE_REPEATS:  # further repeats cached for both: read them too
        more = {}
        for a, c in configs.items():
            b = cached_run(repeat_config(baseline_config(c, mechanism), n), cache, costs)
            p = cached_run(repeat_config(point_config(c, mechanism, value, target_epsilon), n), cache, costs, mechanism)
            more[a] = read(b, p) if b is not None and p is not None else None
        if any(v is None for v in more.values()):
            break
        for a, v in more.items():
            values[a].append(v)
        n += 1
    reps = max(n, target)
    command = " ; ".join(f"python -m core run --task {task} --arch {a} --preset {preset}{sets_text(run_sets)} "
                         f"--repeats {reps} --quiet --out findings_{task}_{a}_{mechanism}.json" for a in configs)
    common = dict(paper=paper, metric=metric, n=n, target_repeats=target, missing=tuple(missing),
                  missing_time=time_text(missing), command=command, repeat_items=tuple(items))
    if n == 0:
        return finding_row(finding, task, preset, status="not run", **common)
    comp = compare(metric, [float(v) for v in values["ffnn"][:n]], [float(v) for v in values["rnn"][:n]], expected)
    return finding_row(finding, task, preset, status="measured", measured=MeasuredCell.of(comp), **common)


def summary_utility_loss(base: RunSummary, point: RunSummary) -> float | None:
    """:func:`core.measurement.metrics.utility_loss` of ``point``'s validation utility against ``base``'s."""
    u0, u = base.utility.val, point.utility.val
    return utility_loss(None if u is None else float(u), None if u0 is None else float(u0))


def accuracy_drop(base: RunSummary, point: RunSummary) -> float | None:
    return float(base.attack.accuracy) - float(point.attack.accuracy)
