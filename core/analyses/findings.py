"""The studies' findings beside what this machine measured: one row per finding × task × preset.

Every row reads the cache only (nothing trains here). F1 / F1a (the architectures compared), the repeats that
decide a row and the table are here; F2 – F5 in :mod:`core.analyses.findings_defenses`; each row's declaration in
:mod:`core.analyses.finding_specs`; the shared settings in :mod:`core.analyses.findings_base` (``FINDINGS``).

A row is *measured* when at least one repeat of what it needs is cached: then it carries N, the 95 % interval
and its word — holds / reversed / inconclusive from its declared test, *not comparable* where the claim's
condition fails, *uninformative* where both arms sit at a ceiling or a floor. Each row says ``decidable_at``
(the sign-flip floor 2/2^N times its Holm family's size) and ``target_repeats`` (≥ 80 % power at the paper's
effect where it prints one, else at the measured one; never below ``decidable_at``), and lists the runs missing
for that target (``missing``, queueable job kinds) — none where it cannot decide even when run, and none past a
decidable N it has already read (more repeats would be a new design).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping, cast

from core.analyses.arch_answer import CEILING, arch_answer, matching_unsettled
from core.analyses.declared_repeats import declared_for
from core.analyses.finding_specs import F3_MARGIN, declared_family, row_decidable_at, spec
from core.analyses.findings_base import (
    FINDINGS,
    MAX_TABLE_REPEATS,
    TARGET_REPEATS,
    TASKS,
    Costs,
    DecideBlock,
    DecideEntry,
    FindingRow,
    FindingsTable,
    MeasuredCell,
    Missing,
    PaperClaim,
    RuleCell,
    UtilityGap,
    cached_run,
    commit,
    finding_row,
    leading,
    missing_run,
    sets_text,
    time_text,
)
from core.analyses.findings_defenses import (
    dirichlet_row,
    mean_utility_loss,
    memorization_row,
    sensitivity,
    training_defense_row,
)
from core.analyses.repeats import comparison_configs, judged_pairs, repeat_config, summary_resolution
from core.experiment.cache import ArtifactCache
from core.experiment.results import AttackResult, RunSummary
from core.experiment.run_source import ImportedRuns, RunSource
from core.foundations.config import ExperimentConfig
from core.foundations.errors import ConfigError
from core.measurement.stats import (
    CONFIDENCE,
    NOT_COMPARABLE,
    UNINFORMATIVE,
    Comparison,
    compare,
    decidable_at,
    repeats_for_power,
    repeats_for_tost,
)
from core.measurement.studies import ARCH_FINDINGS, DIRICHLET, DPSGD_RECIPE, RL_ATTACK_ACCURACY
from core.tasks import get_task

#: F4's σ grid (DP-SGD's noise multiplier, at the paper's clip norm: 000 Table 2)
F4_SIGMAS = (0.5, 1.0, 2.0)
#: F5's grids: three λ a decade apart (L2), three PPO clip ε for navigation (the paper's RL regulariser)
F5_LAMBDAS = (1e-4, 1e-3, 1e-2)
F5_CLIP_GRID = (0.05, 0.1, 0.3)
#: the validation utilities of FFNN and RNN count as matched within this relative gap
MATCHED_RELATIVE_GAP = 0.05
#: the most repeats :func:`repeats_to_decide` searches (beyond: "more than this")
MAX_REPEATS_SEARCHED = 100_000
#: F1's metric (the primary attack's accuracy), F1a's (the attacker's view: LiRA and RMIA AUC) and the utility
#: whose gap says whether the architectures are matched: names of :func:`core.analyses.repeats.judged_pairs`' metrics
F1_METRIC = "attack_accuracy"
F1A_METRICS = ("lira_auc", "rmia_auc")
MATCHED_UTILITY = "utility_val"

#: (finding, task) → the difference FFNN − RNN the study reports in the row's metric, and where: only where the
#: study prints numbers (001 §1's navigation attack accuracies); the other findings are figures without numbers
STUDY_DIFFERENCES: dict[tuple[str, str], tuple[float, str]] = {
    ("F1", "navigation"): (RL_ATTACK_ACCURACY[("navigation", "ffnn")] - RL_ATTACK_ACCURACY[("navigation", "rnn")],
                           f"001 §1: attack accuracy {RL_ATTACK_ACCURACY[('navigation', 'ffnn')]:.0%} (MLP) − "
                           f"{RL_ATTACK_ACCURACY[('navigation', 'rnn')]:.0%} (LSTM)"),
}

#: task → what deciding F1 / F1a on it needs beyond repeats, and what no preset does yet; the runs behind it
#: (commands, commits, figures) are in docs/results.md, "GPU check", not here.
DECIDING_NEEDS: dict[str, str] = {
    "translation": (
        "To decide F1 on translation both models must translate (validation BLEU ≥ 20 on Multi30K) with attacks "
        "below saturation (AUC ≤ 0.95), over the row's decidable N (the sign-flip floor × its Holm family: see the "
        "row). On 2 CPU cores multi30k_cpu and pairs_cpu memorise (validation BLEU far below 20, every attack at "
        "saturation); multi30k_small translates on one CPU core per architecture (the full preset: both above "
        "BLEU 20, every attack below saturation) but its validation BLEU differs by more than the ±5 % matching "
        "allows, so its rows read not comparable until an N of repeats shows the utilities matched "
        "(docs/results.md). The paper preset on one GPU stayed below BLEU 20. "
        "The multi30k_gpu preset translates on one GPU (both models above BLEU 20, LiRA below saturation) but RMIA "
        "stays above it, and one repeat decides nothing (an observation, not a finding). Deciding it needs the "
        "row's target N of multi30k_gpu on a GPU, not run yet; docs/results.md (\"GPU check\") has the runs, "
        "their commands, commits and figures, and the time one repeat took."),
}


# ---------------------------------------------------------------------------- repeats to decide
def repeats_to_decide(sd: float, difference: float, family: int = 1, confidence: float = CONFIDENCE,
                      cap: int = MAX_REPEATS_SEARCHED) -> int | None:
    """The fewest repeats N ≥ :func:`core.measurement.stats.decidable_at` (the sign-flip floor times the Holm
    factor of a family of ``family``) at which the row's paired test has ≥ 80 % power against a true difference
    ``difference`` with per-repeat spread ``sd`` (:func:`core.measurement.stats.repeats_for_power`); None beyond
    ``cap`` or for a zero difference."""
    target = abs(float(difference))
    if not math.isfinite(target) or target == 0.0 or not math.isfinite(sd):
        return None
    if sd <= 0.0:
        return decidable_at(family, confidence)
    return repeats_for_power(target, sd, family, confidence=confidence, cap=cap)


def _decide_entry(metric: str, sd: float | None, n: int, measured_mean: float, study: tuple[float, str] | None,
                  per_repeat_s: float | None, family: int = 1) -> DecideEntry:
    """One metric's repeats-to-decide: against the study's difference (when it gives one) and, for reference,
    against the difference measured here; with the expected time of the repeats still to run."""
    def block(diff: float, source: str | None = None) -> DecideBlock:
        need = repeats_to_decide(sd, diff, family) if sd is not None else None
        more = None if need is None else max(0, need - n)
        return DecideBlock(diff, need, more, None if more is None or per_repeat_s is None else more * per_repeat_s,
                           source)

    return DecideEntry(metric, n, sd, per_repeat_s, None if study is None else block(study[0], study[1]),
                       "" if study is not None else "the study gives no number", block(measured_mean),
                       f"the fewest N ≥ {decidable_at(family)} (the sign-flip floor × Holm over {family}) with ≥ 80 % "
                       f"power of the paired test at that difference (noncentral t at α/{family}; sd: the measured "
                       f"spread of the N = {n} paired differences)")


def _per_repeat_s(items: list[tuple[ExperimentConfig, str]], costs: Costs) -> float | None:
    """The expected seconds of one more repeat of a row: the sum over its computations (None if one is unknown)."""
    total = 0.0
    for cfg, recipe in items:
        s = costs.of(cfg, recipe) if recipe != "analysis" else None
        if s is None:
            return None
        total += s
    return total


def _decide(row: FindingRow, costs: Costs) -> tuple[DecideEntry, ...] | None:
    """The repeats each measured metric of ``row`` needs to decide (N ≥ 2 measured), or None."""
    m = row.measured
    if row.status != "measured" or row.n < 2 or m is None:
        return None
    per = _per_repeat_s(list(row.repeat_items), costs)
    study = STUDY_DIFFERENCES.get((row.finding, row.task))
    if isinstance(m, RuleCell):  # F3: the repeats at which TOST has 80 % power where the mean sits now
        acc = m.attack_accuracy
        inside = F3_MARGIN - abs(acc.mean - 0.5)
        need = repeats_for_tost(inside, acc.sd, 2 * F3_MARGIN) if inside > 0 else None
        more = None if need is None else max(0, need - row.n)
        block = DecideBlock(inside, need, more, None if more is None or per is None else more * per)
        return (DecideEntry(f"attack_accuracy (TOST within 50 % ± {F3_MARGIN:.0%})", row.n, acc.sd, per, None,
                            "the distance is the measured mean's inside the margin (none: outside it, TOST cannot "
                            "show equivalence)", block,
                            "the fewest N with 80 % power of TOST at the measured mean and spread (noncentral t)"),)
    comps = {str(row.metric): m} if isinstance(m, MeasuredCell) else m
    family = len(row.family or ()) or 1
    return tuple(_decide_entry(name, c.difference.sd, row.n, c.difference.mean, study, per,
                               family=family if name == row.metric else 1)
                 for name, c in comps.items())


# ---------------------------------------------------------------------------- F1 / F1a: the architectures compared
def _utility_gap(comps: dict[str, Comparison]) -> UtilityGap | None:
    """The validation-utility gap FFNN − RNN with its interval and whether the two count as matched
    (|gap| ≤ :data:`MATCHED_RELATIVE_GAP` of the larger mean, and its interval too where it has one)."""
    c = comps.get(MATCHED_UTILITY)
    if c is None:
        return None
    d = c.difference
    f, r = d.a.mean, d.b.mean
    scale = max(abs(f), abs(r), 1e-12)
    ends = [x for x in (d.diff.ci_low, d.diff.ci_high) if x is not None] or [d.diff.mean]
    matched = max(abs(x) for x in ends) <= MATCHED_RELATIVE_GAP * scale
    return UtilityGap(f, r, d.diff, abs(d.diff.mean) / scale, matched,
                      f"matched when the gap's interval lies within ±{MATCHED_RELATIVE_GAP:.0%} of the larger utility")


def _judged_cell(judged: Mapping[str, Any]) -> MeasuredCell:
    """A metric as :func:`core.analyses.repeats.judged_pairs` judges it (a comparison's JSON with its role, the
    Holm-adjusted p of a secondary metric, the verdict held to it, or why it has none) as a measured cell."""
    return MeasuredCell.of(Comparison.from_dict(judged), judged.get("role"), judged.get("p_holm"),
                           judged.get("no_verdict_reason"))


def _paired_pairs(configs: dict[str, ExperimentConfig], cache: ArtifactCache | RunSource, costs: Costs, limit: int
                  ) -> tuple[dict[str, list[RunSummary]], list[Missing]]:
    """The leading repeats cached for both architectures and the runs missing for ``limit``: past ``limit``, every
    further repeat cached for both is read too (repeats added to narrow an interval count without retraining)."""
    per: dict[str, list[RunSummary | None]] = {
        a: [cached_run(repeat_config(c, r), cache, costs) for r in range(limit)] for a, c in configs.items()}
    n = leading([all(per[a][r] is not None for a in per) for r in range(limit)])
    missing = [missing_run(repeat_config(c, r), costs, "plain", f"run {a} repeat {r + 1}")
               for r in range(limit) for a, c in configs.items() if per[a][r] is None]
    r = limit
    while n == r and r < MAX_TABLE_REPEATS:
        more = {a: cached_run(repeat_config(c, r), cache, costs) for a, c in configs.items()}
        if any(s is None for s in more.values()):
            break
        for a, s in more.items():
            per[a].append(s)
        n = r = r + 1
    return {a: [s for s in v[:n] if s is not None] for a, v in per.items()}, missing


def _arch_rows(task: str, preset: str, sets: dict[str, Any] | None, cache: ArtifactCache | RunSource, costs: Costs,
               target: int) -> list[FindingRow]:
    configs = comparison_configs(task, preset, 1, sets)
    pairs, missing = _paired_pairs(configs, cache, costs, target)
    n = len(pairs["ffnn"])
    command = f"python -m core compare --task {task} --preset {preset}{sets_text(sets)} --repeats {max(n, target)}"
    text, src = ARCH_FINDINGS.get(task, ("", None))
    paper = PaperClaim(src.cite() if src else "", text)
    if task == "navigation":
        paper = dataclasses.replace(paper, ffnn=RL_ATTACK_ACCURACY[("navigation", "ffnn")],
                                    rnn=RL_ATTACK_ACCURACY[("navigation", "rnn")])
    common = dict(paper=paper, n=n, target_repeats=target, missing=tuple(missing), missing_time=time_text(missing),
                  command=command, repeat_items=tuple((c, "plain") for c in configs.values()))
    f1_note = DECIDING_NEEDS.get(task)
    views_metric = ", ".join(F1A_METRICS)
    f1 = dict(expected_sign=-1)
    if n == 0:
        return [finding_row(FINDINGS["F1"], task, preset, status="not run", metric=F1_METRIC, to_decide_note=f1_note,
                            family=declared_family(configs["ffnn"]), **f1, **common),
                finding_row(FINDINGS["F1a"], task, preset, status="not run", metric=views_metric,
                            family=("lira_auc",), expected_sign=-1, **common)]
    # the one answer (core.analyses.arch_answer) over these repeats: compare's own judgement (the declared primary
    # metric, the secondary metrics Holm-adjusted over their family), held to the claim's matching condition
    comps, judged = judged_pairs(pairs["ffnn"], pairs["rnn"])
    answer = arch_answer(comps, judged)
    cells = {name: _judged_cell(j) for name, j in judged.items()}
    primary = next((name for name, c in cells.items() if c.role == "primary"), None)
    first = pairs["ffnn"][0]
    matched = None if answer is None else {
        **{u.which: u.matched for u in answer.utilities}, "matched": answer.matched,
        "unsettled": answer.matched is False and matching_unsettled(answer.utilities),
        "gaps": {u.which: u.text() for u in answer.utilities}}
    context = dict(resolution=summary_resolution(first), utility_gap=_utility_gap(comps),
                   utility_metric=first.utility.metric,
                   config_hashes={a: tuple(s.config_hash for s in pairs[a]) for a in pairs}, matched=matched)
    over_epochs = _over_epochs(pairs)
    out = [finding_row(FINDINGS["F1"], task, preset, status="measured", metric=F1_METRIC, measured=cells[F1_METRIC],
                       to_decide_note=f1_note, family=answer.family if answer else (F1_METRIC,),
                       verdict=answer.verdict if answer else None, verdict_reason=answer.reason if answer else None,
                       beside=None if over_epochs is None else {"over_checkpoint_epochs": over_epochs},
                       **f1, **context, **common)]
    views = {m: cells[m] for m in F1A_METRICS if m in cells}
    if views:
        head = primary if primary in views else next(iter(views))
        word, why = _f1a_word(views, head, answer)
        out.append(finding_row(FINDINGS["F1a"], task, preset, status="measured", metric=", ".join(views),
                               measured=views, primary=primary if primary in views else None, family=(head,),
                               expected_sign=-1, verdict=word, verdict_reason=why, **context, **common))
    else:
        out.append(finding_row(FINDINGS["F1a"], task, preset, status="not run", metric=views_metric,
                               family=("lira_auc",), expected_sign=-1,
                               note="the cached runs have no LiRA/RMIA numbers (they need n_shadows ≥ 2)", **common))
    return out


def _f1a_word(views: Mapping[str, MeasuredCell], head: str, answer: Any) -> tuple[str, str]:
    """F1a's word: the primary reference attack's verdict, held to F1's matching condition, and uninformative
    where every reference attack sits at the ceiling on both arms."""
    cell = views[head]
    if all(min(c.ffnn.mean, c.rnn.mean) >= CEILING for c in views.values()):
        return UNINFORMATIVE, (f"both arms at the ceiling under every reference attack (AUC ≥ {CEILING:g}): no "
                               "difference could show")
    if answer is not None and answer.matched is False:
        if matching_unsettled(answer.utilities):
            return NOT_COMPARABLE, "utility matching not settled yet (F1's gaps: more repeats narrow their intervals)"
        return NOT_COMPARABLE, "utility not matched on train and validation (F1's gaps)"
    v = cell.verdict
    return ("inconclusive", "no verdict") if v is None else (v.value, v.reason)


def _over_epochs(pairs: dict[str, list[RunSummary]]) -> dict[str, Any] | None:
    """F1 over the checkpoint epochs both architectures attacked in every repeat: per repeat the primary attack's
    accuracy averaged with equal weight per epoch, then paired over repeats (an interval, no verdict of its own)."""
    per: dict[str, list[float]] = {"ffnn": [], "rnn": []}
    common_epochs: set[str] | None = None
    for a in per:
        for s in pairs[a]:
            have = {e for e, atk in (s.attacks_by_epoch or {}).items() if s.primary in atk}
            common_epochs = have if common_epochs is None else common_epochs & have
    if not common_epochs or len(common_epochs) < 2:
        return None
    epochs = sorted(common_epochs, key=int)
    for a in per:
        for s in pairs[a]:
            by_epoch = cast("dict[str, dict[str, AttackResult]]", s.attacks_by_epoch)  # not None: it holds the epochs
            per[a].append(sum(float(by_epoch[e][s.primary].accuracy) for e in epochs) / len(epochs))
    c = compare("attack_accuracy_over_epochs", per["ffnn"], per["rnn"])
    return {"epochs": [int(e) for e in epochs],
            "how": "per repeat the primary attack's accuracy averaged over these checkpoint epochs (equal weight), "
                   "then FFNN − RNN paired over repeats; shown, not judged (a second test would enlarge the family)",
            "comparison": c.to_dict()}


# ---------------------------------------------------------------------------- the table
def task_presets(task: str) -> list[str]:
    """The presets of ``task``."""
    return list(get_task(task).presets)


def parse_presets(preset: str | list[str] | tuple[str, ...], tasks: tuple[str, ...]) -> list[str]:
    """The presets asked for: a name, comma-separated names or a list; ``all``: every preset of ``tasks``
    (in the tasks' order). Unknown names: ConfigError."""
    names = [p.strip() for p in (preset.split(",") if isinstance(preset, str) else preset) if p.strip()]
    known: list[str] = []
    for t in tasks:
        known += [p for p in get_task(t).presets if p not in known]  # an unknown task: ConfigError
    if names == ["all"]:
        return known
    if not names:
        raise ConfigError(f"no preset given; choose from {', '.join(sorted(known))} (or all)")
    for name in names:
        if name not in known:
            raise ConfigError(f"unknown preset {name!r} for {', '.join(tasks)}; choose one of "
                              f"{', '.join(sorted(known))} (or all)")
    return list(dict.fromkeys(names))


def preset_sets(sets: dict[str, Any] | None, preset: str, presets: list[str]) -> dict[str, Any]:
    """The config fields ``sets`` changes for ``preset``: every unscoped ``field`` and every ``preset:field``
    (scope removed). A scope that names none of ``presets``, or a field given both unscoped and scoped, is a
    :class:`ConfigError` (one of the two would be silently dropped)."""
    out: dict[str, Any] = {}
    scoped: dict[str, Any] = {}
    for key, value in (sets or {}).items():
        scope, sep, field = key.partition(":")
        if not sep:
            out[key] = value
            continue
        if scope not in presets:
            raise ConfigError(f"--set {key}: {scope!r} is not one of the presets asked for ({', '.join(presets)})")
        if scope == preset:
            scoped[field] = value
    both = sorted(set(out) & set(scoped))
    if both:
        raise ConfigError(f"--set {both[0]} given both for every preset and for {preset}: give it once")
    return {**out, **scoped}


def findings_table(tasks: tuple[str, ...] | list[str] | None = None, preset: str | list[str] = "quick",
                   cache: ArtifactCache | None = None, target: int = TARGET_REPEATS,
                   sets: dict[str, Any] | None = None, imports: ImportedRuns | None = None) -> FindingsTable:
    """The findings table from the cache: one row per finding × task × preset (``preset``: :func:`parse_presets`), the
    commit, and per row the runs missing for N = ``target`` and the repeats that decide it. ``sets``: config fields
    changed from the preset (``PRESET:field`` for that preset's rows only, :func:`preset_sets`). ``imports``: run
    summaries made on other machines, read by the F1 / F1a rows where this cache lacks a run (under the same config
    hash only); the table's ``sources`` then says which rows mix machines. Nothing trains."""
    cache = cache or ArtifactCache()
    arch_source: ArtifactCache | RunSource = cache if imports is None else RunSource(cache, imports)
    tasks = tuple(tasks or TASKS)
    presets = parse_presets(preset, tasks)
    by_preset = {p: preset_sets(sets, p, presets) for p in presets}
    costs = Costs()
    rows: list[FindingRow] = []
    for task in tasks:
        have = [p for p in presets if p in get_task(task).presets]
        if not have:
            for f in FINDINGS.values():
                if task in f.tasks:
                    rows.append(finding_row(f, task, ",".join(presets), status="no preset", n=0,
                                            target_repeats=target, missing=(), missing_time="", command="",
                                            note=f"task {task} has no preset {' or '.join(map(repr, presets))} "
                                                 f"({', '.join(task_presets(task))})"))
            continue
        for p in have:
            rows.extend(_task_rows(task, p, by_preset[p], cache, costs, target, arch_source))
    rows = [_finish(row, costs, lambda t, task=row.task, p=row.preset: _task_rows(task, p, by_preset.get(p), cache,
                                                                             costs, t, arch_source))
            for row in rows]
    order = list(FINDINGS)
    preset_order = {p: i for i, p in enumerate(presets)}
    rows.sort(key=lambda r: (order.index(r.finding), tasks.index(r.task), preset_order.get(r.preset, -1)))
    sources = None if not isinstance(arch_source, RunSource) else imported_sources(arch_source, rows)
    return FindingsTable(",".join(presets), tuple(presets), dict(sets or {}), tasks, target, commit(), tuple(rows),
                         sources)


def imported_sources(source: RunSource, rows: list[FindingRow]) -> dict[str, Any]:
    """The table's ``sources``: the imported batches and, per measured F1 / F1a row, the origins of its runs
    (``mixed``: more than one machine, torch version or commit)."""
    per_row = []
    for r in rows:
        if r.config_hashes:
            origins = source.origins_of(h for hs in r.config_hashes.values() for h in hs)
            per_row.append({"finding": r.finding, "task": r.task, "preset": r.preset, "origins": origins,
                            "mixed": len(origins) > 1})
    imported = source.imports.to_dict() if source.imports is not None else {}
    return dict(imported, rows=per_row)


def _target(row: FindingRow, floor: int) -> tuple[int, str]:
    """The row's target N and what it was sized for: ≥ 80 % power at the paper's effect where it gives one, else at
    the effect measured here; the floor (``decidable_at``) where no spread is measured yet; never below the floor."""
    s = spec(row.finding, row.task)
    m = row.measured
    declared = declared_for(row.finding, row.task, row.preset)
    if declared is not None:  # fixed before the runs: the row is read at this N whatever it says
        return max(floor, declared.repeats), f"declared before the runs: {declared.rationale}"
    if row.finding == "F3":
        study = DIRICHLET.get((row.task, "rnn"))
        if study is not None:
            acc, acc_sd = study.rows[1.0][0] / 100, study.rows[1.0][1] / 100
            need = repeats_for_tost(0.5 + F3_MARGIN - acc if acc >= 0.5 else acc - 0.5 + F3_MARGIN, acc_sd,
                                    2 * F3_MARGIN)
            if need is not None:
                return max(floor, need), (f"the paper's k = 1 row ({study.source.cite()}: {acc:.2%} ± {acc_sd:.2%}), "
                                          "80 % TOST power")
        return floor, "the floor (no paper spread)"
    sd = m.difference.sd if isinstance(m, MeasuredCell) else None
    family = len(row.family or ()) or 1
    if sd is None or not math.isfinite(sd):
        return floor, "the floor: the fewest N at which the test can decide (no spread measured yet)"
    if s.paper_effect is not None:
        need = repeats_for_power(s.paper_effect[0], sd, family)
        if need is not None:
            return max(floor, need), f"80 % power at the paper's effect {s.paper_effect[0]:+.3g} ({s.paper_effect[1]}) " \
                                     f"with the spread measured here (sd {sd:.3g})"
    diff = m.difference.mean if isinstance(m, MeasuredCell) else float("nan")
    need = repeats_to_decide(sd, diff, family)
    if need is None:
        return floor, (f"the floor: no N up to {MAX_REPEATS_SEARCHED:,} reaches 80 % power at the measured effect "
                       f"{diff:+.3g} (sd {sd:.3g})")
    return max(floor, need), f"80 % power at the effect measured here ({diff:+.3g}, sd {sd:.3g}; the paper gives none)"


def _finish(row: FindingRow, costs: Costs, rebuild: Any) -> FindingRow:
    """A row with its declaration and the contract's fields: ``decidable_at`` (the sign-flip floor × Holm),
    ``target_repeats`` (:func:`_target`, never below it), the machines its runs were made on, and the runs it
    queues — none where it cannot decide even when run (not comparable, uninformative) or where it has already
    read its data at a decidable N (a larger N is then a new, declared design, not an extension)."""
    s = spec(row.finding, row.task)
    family = row.family or (s.metric,)
    floor = row_decidable_at(s, len(family))
    verdict = row.verdict if row.status == "measured" else ("not run" if row.status == "not run" else row.status)
    row = dataclasses.replace(row, spec=s.to_dict(), family=tuple(family), decidable_at=floor,
                              expected_sign=s.expected_sign if row.expected_sign is None else row.expected_sign,
                              verdict=verdict,
                              machine=costs.machines_of(row.task, row.preset))
    if row.status == "no preset":
        return dataclasses.replace(row, target_repeats=floor, target_sized_by="the floor")
    target, sized = _target(row, floor)
    note, missing, queued = None, row.missing, True
    unsettled = row.verdict == NOT_COMPARABLE and bool((row.matched or {}).get("unsettled"))
    if row.verdict in (NOT_COMPARABLE, UNINFORMATIVE) and not unsettled:
        note = f"cannot decide even when run ({row.verdict}): no runs queued"
        missing, queued = (), False
    elif unsettled and row.n >= target:
        note = (f"read at its target N = {row.n}: the utility matching is still not settled (a gap's interval "
                "reaches past ±5 % and into it), so the row stays not comparable at this design; not queued")
        missing, queued = (), False
    elif unsettled:
        note = (f"not comparable yet at N = {row.n}: the utility gaps' intervals are too wide to show matching or "
                f"its absence; the runs up to the target N = {target} are queued, and the row is read there")
    elif row.n >= floor and target > row.n and "measured here" in sized:
        note = (f"read at N = {row.n} (≥ {floor}, where its test can decide): N = {target} would be a new, declared "
                "design with fresh repeats, not an extension of these until it decides; not queued")
        missing, queued = (), False
    if queued and target > row.target_repeats:  # the runs up to this row's own target
        again = next((r for r in rebuild(target) if r.finding == row.finding), None)
        if again is not None:
            missing = again.missing
    row = dataclasses.replace(row, target_repeats=target, target_sized_by=sized, design_note=note,
                              missing=tuple(missing), missing_time=time_text(list(missing), costs))
    return dataclasses.replace(row, decide=_decide(row, costs))


def _task_rows(task: str, preset: str, sets: dict[str, Any] | None, cache: ArtifactCache, costs: Costs,
               target: int, arch_source: ArtifactCache | RunSource | None = None) -> list[FindingRow]:
    """Every finding's row of one task at one preset (F1 / F1a read ``arch_source`` when given)."""
    rows = _arch_rows(task, preset, sets, cache if arch_source is None else arch_source, costs, target)
    if task in FINDINGS["F2"].tasks:
        rows.append(memorization_row(task, preset, sets, cache, costs, target))
    if task in FINDINGS["F3"].tasks:
        rows.append(dirichlet_row(task, preset, sets, cache, costs, target))
    clip = DPSGD_RECIPE[task].clip_norm if task in DPSGD_RECIPE else None
    rows.append(training_defense_row(
        FINDINGS["F4"], task, preset, sets, cache, costs, target, "dpsgd", F4_SIGMAS, False,
        f"utility loss under DP-SGD averaged over σ = {', '.join(f'{v:g}' for v in F4_SIGMAS)} at clip norm "
        f"{clip if clip is not None else 'the preset’s'}", mean_utility_loss, -1,
        PaperClaim(FINDINGS["F4"].source.cite(),
                   "at every noise variance tested the RNN loses more utility than the FFNN (curves only; no numbers "
                   "printed)"), max_grad_norm=clip))
    rl = task == "navigation"  # the paper regularises its PPO agents by the clip ε instead (000 §5.1)
    grid, mechanism = (F5_CLIP_GRID, "clip") if rl else (F5_LAMBDAS, "l2")
    metric = (f"sensitivity of the attack accuracy to PPO's clip ε (slope over clip ε = "
              f"{', '.join(f'{v:g}' for v in grid)}; smaller ε is stronger)" if rl else
              f"sensitivity of the attack accuracy to L2 (its fall per decade of λ over λ = "
              f"{', '.join(f'{v:g}' for v in grid)})")
    rows.append(training_defense_row(
        FINDINGS["F5"], task, preset, sets, cache, costs, target, mechanism, grid, False, metric,
        sensitivity(grid, log=not rl, stronger_when_larger=not rl), +1,
        PaperClaim(FINDINGS["F5"].source.cite(),
                   "the FFNN's attack accuracy is highly sensitive to the regularisation, the RNN's only marginally "
                   "(the lines' slopes; curves only, no numbers printed)")))
    return rows


def missing_jobs(table: FindingsTable, row_index: int | None = None) -> list[Missing]:
    """The missing computations of one row (or of every row), each once (the queue's unit: config × kind)."""
    rows = table.rows if row_index is None else [table.rows[row_index]]
    seen, out = set(), []
    for row in rows:
        for m in row.missing:
            key = (m.config.config_hash, m.kind, repr(m.params))
            if key not in seen:
                seen.add(key)
                out.append(m)
    return out

