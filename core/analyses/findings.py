"""The studies' findings beside what this machine measured (issue 35): one row per finding × task.

Every row reads the cache only (nothing trains here): the cached repeats of a preset
(:func:`core.analyses.repeats.repeat_config`; repeat r of both architectures shares its seed, hence
its split), the memorization analysis' cached result of each repeat, the cached defended points of
the Dirichlet mechanism, and the cached training-defense runs (DP-SGD at a target ε, L2 at a λ).
The rows of F1 / F1a (the architectures compared), the repeats that decide a row and the table are here;
F2 – F5's rows in :mod:`core.analyses.findings_defenses`; the findings, the shared settings and what is
cached in :mod:`core.analyses.findings_base`.
A row is *measured* when at least one repeat of what it needs is cached: then it carries N, the 95 %
interval and the verdict (:func:`core.measurement.stats.compare`: the t interval and the exact
sign-flip test, which cannot reach 95 % below N = 6); otherwise it says *not run*. F1 and F1a take each
metric's verdict from the judgement ``python -m core compare`` builds on the same repeats
(:func:`core.analyses.repeats.judged_pairs`: the declared primary metric, the secondary metrics
Holm-adjusted over their family), so a metric's verdict here always equals compare's and the Home
page's. Either way a row lists the runs that are missing for N = :data:`TARGET_REPEATS` (``missing``: each an
ordinary config and a job kind of :mod:`ui.jobs`, so a page can queue exactly those) and their expected time from
the runs measured on this machine (:func:`core.defenses.sweeps.run_cost_s`), or "time unknown".

The findings (``FINDINGS``; the papers' own numbers and sources from :mod:`core.measurement.studies`):

* F1 the RNN is more vulnerable than the FFNN (paper 000 Fig. 4 image and translation, 001 §5.1 navigation):
  the primary (Shokri shadow) attack's accuracy, FFNN − RNN < 0, with the validation-utility gap;
* F1a the attacker's view: the same under LiRA and RMIA (AUC);
* F2 the FFNN forgets early training blocks faster (000 Fig. 6): attack accuracy on the first block
  learned, FFNN − RNN < 0;
* F3 Dirichlet k = 1 brings the attack to ≈ 50 % at a small utility cost (001 Tables 1–2, RNN victims):
  the rule is stated in the row (the paper gives no tolerance; ours: 50 % ± 5 points, loss ≤ 10 %);
* F4 the same ε costs the RNN more utility (000 Fig. 8): DP-SGD at target ε = 8, utility loss
  FFNN − RNN < 0;
* F5 L2 helps the FFNN more (000 Fig. 7): the attack accuracy's drop under λ = 1e-3, FFNN − RNN > 0.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

from scipy import stats as sps

from core.analyses.findings_base import (DP_TARGET_EPSILON, F3_TOLERANCE, FINDINGS, L2_LAMBDA, MAX_TABLE_REPEATS,
                                         TARGET_REPEATS, TASKS,
                                         Costs, DecideBlock, DecideEntry, FindingRow, FindingsTable, MeasuredCell,
                                         Missing, PaperClaim, RuleCell, UtilityGap, cached_run, commit, finding_row,
                                         leading, missing_run, sets_text, time_text)
from core.analyses.findings_defenses import (accuracy_drop, dirichlet_row, memorization_row, summary_utility_loss,
                                             training_defense_row)
from core.analyses.repeats import comparison_configs, judged_pairs, repeat_config, summary_resolution
from core.experiment.cache import ArtifactCache
from core.experiment.results import RunSummary
from core.experiment.run_source import ImportedRuns, RunSource
from core.foundations.config import ExperimentConfig
from core.foundations.errors import ConfigError
from core.measurement.stats import CONFIDENCE, Comparison
from core.measurement.studies import ARCH_FINDINGS, RL_ATTACK_ACCURACY
from core.tasks import get_task


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
#: study prints numbers (001 §5.1's navigation attack accuracies); the other findings are figures without numbers
STUDY_DIFFERENCES: dict[tuple[str, str], tuple[float, str]] = {
    ("F1", "navigation"): (RL_ATTACK_ACCURACY[("navigation", "ffnn")] - RL_ATTACK_ACCURACY[("navigation", "rnn")],
                           f"001 §5.1: attack accuracy {RL_ATTACK_ACCURACY[('navigation', 'ffnn')]:.0%} (MLP) − "
                           f"{RL_ATTACK_ACCURACY[('navigation', 'rnn')]:.0%} (LSTM)"),
}

#: task → what deciding F1 / F1a on it needs beyond repeats, where this was measured (command, commit), and what
#: no preset does yet. Translation (issue 35): models that generalise (validation BLEU ≥ 20 for both) with attacks
#: below saturation (AUC ≤ 0.95); figures from docs/results.md "GPU check" (docs/device_runs/2026-11-26-b, -c and
#: 2026-11-27: gpu_check.json / gpu_check.log).
DECIDING_NEEDS: dict[str, str] = {
    "translation": (
        "To decide F1 on translation both models must translate (validation BLEU ≥ 20 on Multi30K) with attacks "
        "below saturation (AUC ≤ 0.95), over N ≥ 6 repeats. No CPU preset reaches it yet: multi30k_cpu and "
        "pairs_cpu reach validation BLEU 2–8 on 2 CPU cores (the models memorise; every attack AUC ≥ 0.99). The "
        "paper preset on one H100 (en→de, one seed, `CPU_ARCHS=rnn bench/device_session.sh .m30k $OUT` at commit "
        "f0f2da2; the LSTM again at commit 67b6db4) did not either: validation BLEU 12.9 (Transformer) / 19.6 "
        "(LSTM). The multi30k_gpu preset translates: on one H100 on 2026-11-27 (en→de, one seed, "
        "`bench/device_session_findings.sh .m30k $OUT` on main's tree at commit 5953d02, torch 2.11) validation "
        "BLEU 26.4 (Transformer) / 26.8 (LSTM), train 65.6 / 41.7 — issue 35's bar for utility met; LiRA AUC "
        "0.945 / 0.936 is below 0.95, but RMIA 0.986 / 0.975 is above, so not every attack is below saturation. "
        "One seed, so F1 there is inconclusive (one repeat; FFNN − RNN LiRA AUC +0.009 in that one run: an "
        "observation, not a finding). Deciding it needs N = 6 repeats of multi30k_gpu on a GPU: about "
        "6 × (149 + 138) s ≈ 29 min of one H100 (an estimate from that one repeat), not run yet."),
}


# ---------------------------------------------------------------------------- repeats to decide
def repeats_to_decide(sd: float, difference: float, floor: int = TARGET_REPEATS,
                      confidence: float = CONFIDENCE, cap: int = MAX_REPEATS_SEARCHED) -> int | None:
    """The fewest repeats N ≥ ``floor`` (the sign-flip test's 6) with t_{N−1, 1−α/2} · sd / √N < |difference|:
    the 95 % interval's half-width below the difference, so that an interval around a mean of that size
    excludes 0. ``sd``: the measured standard deviation of the paired differences; None beyond ``cap``
    (or for a zero difference)."""
    target = abs(float(difference))
    if not math.isfinite(target) or target == 0.0 or not math.isfinite(sd):
        return None
    n = max(2, int(floor))
    if sd <= 0.0:
        return n

    def half(k: int) -> float:
        return float(sps.t.ppf(0.5 + confidence / 2, k - 1)) * sd / math.sqrt(k)

    if half(n) < target:
        return n
    if half(cap) >= target:
        return None
    lo, hi = n, cap  # half(lo) ≥ target > half(hi); half falls with k
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if half(mid) >= target else (lo, mid)
    return hi


def _decide_entry(metric: str, sd: float | None, n: int, measured_mean: float, study: tuple[float, str] | None,
                  per_repeat_s: float | None, study_missing: str = "the study gives no number") -> DecideEntry:
    """One metric's repeats-to-decide: against the study's difference (when it gives one) and, for reference,
    against the difference measured here; with the expected time of the repeats still to run."""
    def block(diff: float, source: str | None = None) -> DecideBlock:
        need = repeats_to_decide(sd, diff) if sd is not None else None
        more = None if need is None else max(0, need - n)
        return DecideBlock(diff, need, more, None if more is None or per_repeat_s is None else more * per_repeat_s,
                           source)

    return DecideEntry(metric, n, sd, per_repeat_s, None if study is None else block(study[0], study[1]),
                       "" if study is not None else study_missing, block(measured_mean),
                       f"the fewest N ≥ {TARGET_REPEATS} with t(N−1, 0.975) × sd / √N < |difference| "
                       f"(sd: the measured spread of the N = {n} paired differences)")


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
    if isinstance(m, RuleCell):
        acc = m.attack_accuracy
        margin = abs(abs(acc.mean - 0.5) - F3_TOLERANCE)
        return (_decide_entry("attack_accuracy (distance to the rule's 50 % ± 5 points)", acc.sd, row.n,
                              margin, None, per,
                              "the study gives no tolerance (ours: 50 % ± 5 points; the margin is the measured "
                              "mean's distance to its edge)"),)
    comps = {str(row.metric): m} if isinstance(m, MeasuredCell) else m
    return tuple(_decide_entry(name, c.difference.sd, row.n, c.difference.mean, study, per)
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
    missing = [missing_run(repeat_config(c, r), costs, "plain", f"run {a} repeat {r}")
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
    if n == 0:
        return [finding_row(FINDINGS["F1"], task, preset, status="not run", metric=F1_METRIC, to_decide_note=f1_note,
                            **common),
                finding_row(FINDINGS["F1a"], task, preset, status="not run", metric=views_metric, **common)]
    # the verdicts of the compare command's own judgement (core.analyses.repeats.judged_pairs): the declared
    # primary metric, the secondary metrics Holm-adjusted over their family — never a metric judged alone
    comps, judged = judged_pairs(pairs["ffnn"], pairs["rnn"])
    cells = {name: _judged_cell(j) for name, j in judged.items()}
    primary = next((name for name, c in cells.items() if c.role == "primary"), None)
    first = pairs["ffnn"][0]
    context = dict(resolution=summary_resolution(first), utility_gap=_utility_gap(comps),
                   utility_metric=first.utility.metric,
                   config_hashes={a: tuple(s.config_hash for s in pairs[a]) for a in pairs})
    out = [finding_row(FINDINGS["F1"], task, preset, status="measured", metric=F1_METRIC, measured=cells[F1_METRIC],
                       to_decide_note=f1_note, **context, **common)]
    views = {m: cells[m] for m in F1A_METRICS if m in cells}
    if views:
        out.append(finding_row(FINDINGS["F1a"], task, preset, status="measured", metric=", ".join(views),
                               measured=views, primary=primary if primary in views else None, **context, **common))
    else:
        out.append(finding_row(FINDINGS["F1a"], task, preset, status="not run", metric=views_metric,
                               note="the cached runs have no LiRA/RMIA numbers (they need n_shadows ≥ 2)", **common))
    return out


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
    """The findings table from the cache: ``rows`` (one per finding × task × preset; :data:`FINDINGS`), the
    presets asked for (``preset``: a name, comma-separated names, a list, or ``all``: :func:`parse_presets`),
    the commit, and per row the runs missing for N = ``target`` and, where N ≥ 2 is measured, the repeats
    that decide it (``decide``: :func:`repeats_to_decide`). A task with none of the presets gets a row per
    finding saying so; ``sets``: config fields changed from the preset (both architectures; every command
    carries them); a key ``PRESET:field`` changes that field for that preset's rows only (:func:`preset_sets`:
    a real dataset's ``data_dir`` is part of the config, so it cannot be given to the built-in presets beside it).
    ``imports``: run summaries made on other machines (:func:`core.experiment.run_source.load_imports`), read by
    the F1 / F1a rows where this cache lacks a run (under the same config hash only); the table's ``sources`` then
    says which rows mix machines. The other rows read this machine's cache only (defended points and analyses are
    never imported). Nothing trains."""
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
    rows = [dataclasses.replace(row, decide=_decide(row, costs)) for row in rows]
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


def _task_rows(task: str, preset: str, sets: dict[str, Any] | None, cache: ArtifactCache, costs: Costs,
               target: int, arch_source: ArtifactCache | RunSource | None = None) -> list[FindingRow]:
    """Every finding's row of one task at one preset (F1 / F1a read ``arch_source`` when given)."""
    rows = _arch_rows(task, preset, sets, cache if arch_source is None else arch_source, costs, target)
    if task in FINDINGS["F2"].tasks:
        rows.append(memorization_row(task, preset, sets, cache, costs, target))
    if task in FINDINGS["F3"].tasks:
        rows.append(dirichlet_row(task, preset, sets, cache, costs, target))
    rows.append(training_defense_row(
        FINDINGS["F4"], task, preset, sets, cache, costs, target, "dpsgd", DP_TARGET_EPSILON, True,
        f"utility loss under DP-SGD at target ε = {DP_TARGET_EPSILON:g}", summary_utility_loss, -1,
        PaperClaim(FINDINGS["F4"].source.cite(),
                   "at the same ε the RNN loses more utility than the FFNN (curves only; no numbers printed)")))
    rows.append(training_defense_row(
        FINDINGS["F5"], task, preset, sets, cache, costs, target, "l2", L2_LAMBDA, False,
        f"attack accuracy drop under L2, λ = {L2_LAMBDA:g}", accuracy_drop, +1,
        PaperClaim(FINDINGS["F5"].source.cite(),
                   "L2 lowers the attack more for the FFNN than for the RNN (curves only; no numbers printed)")))
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

