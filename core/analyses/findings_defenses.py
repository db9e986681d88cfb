"""The rows of F2 (the FFNN forgets early training blocks faster), F3 (Dirichlet k = 1 brings the attack to ≈ 50 %
at a small utility cost), F4 (the same ε costs the RNN more utility) and F5 (L2 helps the FFNN more), each a
metric that is its own family (one comparison, no multiplicity), read from the cache only.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, cast

import numpy as np

from core.analyses.arch_answer import matching_unsettled, utility_match
from core.analyses.finding_specs import CHANCE_BAND, F3_MARGIN, LOSS_FLOOR
from core.analyses.finding_specs import F3_MAX_LOSS as F3_LOSS_BOUND
from core.analyses.findings_base import (
    DIRICHLET_K,
    FINDINGS,
    MAX_TABLE_REPEATS,
    MEMORIZATION_BLOCKS,
    Costs,
    Finding,
    FindingRow,
    MeasuredCell,
    Missing,
    PaperClaim,
    RuleCell,
    RuleVerdict,
    cached_run,
    finding_row,
    leading,
    missing_run,
    present,
    sets_text,
    time_text,
)
from core.analyses.own_models import Memorization
from core.analyses.repeats import comparison_configs, repeat_config
from core.defenses import registry as defense_registry
from core.defenses.spec import DefenseSpec
from core.defenses.sweeps import baseline_config, point_config
from core.experiment.cache import ArtifactCache
from core.experiment.results import DefendedPoint, RunSummary
from core.foundations.config import ExperimentConfig, config_changes
from core.measurement.metrics import utility_loss
from core.measurement.stats import NOT_COMPARABLE, UNINFORMATIVE, compare, mean_interval, tost
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
                  family=("attack accuracy on the first block learned",), expected_sign=-1,
                  missing=tuple(missing), missing_time=time_text(missing),
                  command=f"python -m core analyze --task {task} --preset {preset}{sets_text(sets)} --analysis memorization "
                          f"--repeats {max(n, target)} --out findings_memorization",
                  repeat_items=tuple([(c, "plain") for c in configs.values()] + [(c, "analysis") for c in configs.values()]))
    if n == 0:
        return finding_row(FINDINGS["F2"], task, preset, status="not run", **common)
    f = [m.blocks[0].attack_accuracy for m in present(per["ffnn"], n)]
    r_ = [m.blocks[0].attack_accuracy for m in present(per["rnn"], n)]
    comp = compare("memorization_first_block", f, r_, -1, bounds=(0.0, 1.0))
    word, why = _judged_word(comp)
    if all(abs(x - 0.5) <= CHANCE_BAND for x in (comp.difference.a.mean, comp.difference.b.mean)):
        word, why = UNINFORMATIVE, (f"both first-block attacks at chance (within 50 % ± {CHANCE_BAND:.0%}): the floor, "
                                    "so neither architecture shows a memory to compare")
    return finding_row(FINDINGS["F2"], task, preset, status="measured", measured=MeasuredCell.of(comp),
                       verdict=word, verdict_reason=why, **common)


def _judged_word(comp: Any) -> tuple[str, str]:
    """A comparison's verdict word and reason (inconclusive where it has none)."""
    v = comp.verdict
    return ("inconclusive", "no verdict") if v is None else (v.value, v.reason)


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


def f3_verdict(accuracies: list[float], losses: list[float], task: str) -> tuple[str, str]:
    """F3's (word, reason): equivalence of the RNN's mean attack accuracy under Dir_k to 50 % within ±
    :data:`core.analyses.finding_specs.F3_MARGIN` by TOST, and the utility loss's one-sided 95 % upper bound at most
    the paper's bound for the task (both must pass: an intersection-union test, no multiplicity); reversed where
    the accuracy's 95 % interval lies wholly outside the margin or the loss's lower end exceeds the bound;
    uninformative where the defended models lost ≈ all utility (nothing left to protect)."""
    n = len(accuracies)
    bound = F3_LOSS_BOUND.get(task, 0.10)
    if n < 2:
        return "inconclusive", f"N = {n}: TOST needs N ≥ 2"
    loss = mean_interval(losses, confidence=0.90, bounds=(None, 1.0))  # its upper end: the one-sided 95 % bound
    if loss.mean >= LOSS_FLOOR:
        return UNINFORMATIVE, f"utility loss {loss.mean:.0%} ≥ {LOSS_FLOOR:.0%}: the defended model answers nothing useful"
    eq = tost(accuracies, 0.5 - F3_MARGIN, 0.5 + F3_MARGIN)
    same = [w for w, v in (("attack accuracy", accuracies), ("utility loss", losses)) if max(v) == min(v)]
    if same or eq.p is None or loss.ci_high is None:
        return "inconclusive", (f"every one of the N = {n} repeats gave the same {' and '.join(same) or 'value'}: a "
                                "zero-width interval is the metric's resolution, not certainty")
    acc_text = f"attack accuracy {eq.mean:.3f}, 90 % CI [{eq.ci_low:.3f}, {eq.ci_high:.3f}], TOST p = {eq.p:.3g}"
    loss_text = f"utility loss {loss.mean:.1%}, one-sided 95 % upper bound {loss.ci_high:.1%} (bound {bound:.0%})"
    if eq.equivalent and loss.ci_high <= bound:
        return "holds", f"{acc_text} within 50 % ± {F3_MARGIN:.0%}; {loss_text}"
    if eq.outside or (loss.ci_low is not None and loss.ci_low > bound):
        return "reversed", f"{acc_text}; {loss_text}: outside the claim"
    return "inconclusive", f"{acc_text}; {loss_text}: not shown inside the margin"


def dirichlet_row(task: str, preset: str, sets: dict[str, Any] | None, cache: ArtifactCache, costs: Costs,
                   target: int) -> FindingRow:
    cfg = get_task(task).make_config("rnn", preset, dict(sets or {}))
    # the mechanism's default draws, as `defend` (the row's command) and the Defenses page write them
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
    rule = (f"holds: TOST shows the RNN's mean attack accuracy within 50 % ± {F3_MARGIN:.0%} (two one-sided t tests "
            f"at α = 0.05; the margin is ours, the paper gives none) and the utility loss's one-sided 95 % upper bound "
            f"≤ {F3_LOSS_BOUND.get(task, 0.10):.0%} (001 §5.3); reversed: the accuracy's 95 % interval wholly outside "
            "the margin or the loss's lower end above the bound; uninformative: utility loss ≥ "
            f"{LOSS_FLOOR:.0%}; else inconclusive")
    common = dict(paper=paper, metric=f"RNN attack accuracy and utility loss under Dir_k, k = {DIRICHLET_K:g}", n=n,
                  family=("alone (intersection-union)",), expected_sign=0,
                  target_repeats=target, rule=rule, missing=tuple(missing), missing_time=time_text(missing),
                  command=f"python -m core defend --task {task} --arch rnn --preset {preset}{sets_text(sets)} --mechanism dirichlet "
                          f"--values {DIRICHLET_K:g} --draws {spec.draws} --attacker both --repeats {max(n, target)}",
                  repeat_items=((cfg, "plain"), (cfg, "analysis")))
    if n == 0:
        return finding_row(FINDINGS["F3"], task, preset, status="not run", **common)
    measured_points = present(points, n)
    accs = [float(p.attack.accuracy) for p in measured_points]
    losses = [float(u) for p in measured_points if (u := p.utility_loss) is not None]
    assert len(losses) == n, "_defended_point returns points with a utility loss only"
    accuracy = mean_interval(accs, bounds=(0.0, 1.0))
    loss_estimate = mean_interval(losses, bounds=(None, 1.0))
    value, reason = f3_verdict(accs, losses, task)
    measured = RuleCell(accuracy, loss_estimate, RuleVerdict(value, n, reason))
    return finding_row(FINDINGS["F3"], task, preset, status="measured", measured=measured, verdict=value,
                       verdict_reason=reason, beside=_f3_beside(cfg, measured_points, cache, costs), **common)


def _f3_beside(cfg: ExperimentConfig, points: list[DefendedPoint], cache: ArtifactCache, costs: Costs
               ) -> dict[str, Any]:
    """What the same defended points store beside the naive attacker's accuracy, each over the repeats: the
    undefended baseline (the repeat's run), the adaptive attacker (where measured), LiRA and RMIA; not judged."""
    out: dict[str, Any] = {}
    base = [cached_run(repeat_config(cfg, r), cache, costs) for r in range(len(points))]  # the one reader of runs
    if all(isinstance(b, RunSummary) for b in base):
        out["undefended_attack_accuracy"] = mean_interval([float(b.attack.accuracy)
                                                           for b in cast("list[RunSummary]", base)],
                                                          bounds=(0.0, 1.0)).to_dict()
    adaptive = [getattr(p, "adaptive_attack", None) for p in points]
    if all(a is not None for a in adaptive):
        out["adaptive_attack_accuracy"] = mean_interval([float(a.accuracy) for a in cast("list[Any]", adaptive)],
                                                        bounds=(0.0, 1.0)).to_dict()
    for name in ("lira", "rmia"):
        got = [(getattr(p, "attacks", None) or {}).get(name) for p in points]
        if all(g is not None for g in got):
            out[f"{name}_auc"] = mean_interval([float(g.auc) for g in cast("list[Any]", got)],
                                               bounds=(0.0, 1.0)).to_dict()
    out["query_model"] = ("each query of a record gets a fresh Dirichlet draw; an attacker averaging repeated queries "
                          "is not built")
    return out


def training_defense_row(finding: Finding, task: str, preset: str, sets: dict[str, Any] | None, cache: ArtifactCache,
                          costs: Costs, target: int,
                          mechanism: str, value: float | tuple[float, ...], target_epsilon: bool, metric: str,
                          read: Callable[..., float | None], expected: int,
                          paper: PaperClaim, max_grad_norm: float | None = None) -> FindingRow:
    """A training-time defense compared between the architectures over repeats: per repeat r and
    architecture, the undefended run and the defended one at each of ``value`` (one value or several; all
    cached), ``read(baseline, point)`` — or, with several values, ``read(baseline, [points in the values' order])``."""
    several = isinstance(value, tuple)
    grid: tuple[float, ...] = tuple(cast("tuple[float, ...]", value)) if several else (cast(float, value),)
    configs = comparison_configs(task, preset, 1, sets)
    values: dict[str, list[float | None]] = {a: [] for a in configs}
    bases: dict[str, list[RunSummary | None]] = {a: [] for a in configs}
    epsilons: dict[str, list[tuple[float | None, ...]]] = {a: [] for a in configs}  # DP-SGD's ε of each point
    missing: list[Missing] = []
    run_sets: dict[str, list[dict[str, Any]]] = {}
    items: list[tuple[ExperimentConfig, str]] = []

    def read_repeat(a: str, c: ExperimentConfig, r: int, note: bool) -> tuple[RunSummary | None, float | None]:
        base_cfg = baseline_config(c, mechanism)
        b = cached_run(repeat_config(base_cfg, r), cache, costs)
        if b is None and note:
            missing.append(missing_run(repeat_config(base_cfg, r), costs, "plain", f"undefended {a} repeat {r + 1}"))
        points = []
        for v in grid:
            pc = point_config(c, mechanism, v, target_epsilon, max_grad_norm)
            p = cached_run(repeat_config(pc, r), cache, costs, mechanism)
            if p is None and note:
                missing.append(missing_run(repeat_config(pc, r), costs, mechanism,
                                            f"{mechanism} {v:g} {a} repeat {r + 1}"))
            points.append(p)
        if b is None or any(p is None for p in points):
            return b, None
        epsilons[a].append(tuple(p.privacy.epsilon if p.privacy else None for p in cast("list[RunSummary]", points)))
        return b, read(b, points) if several else read(b, points[0])

    v: float | None  # a grid value, then a repeat's read number
    for a, c in configs.items():
        items.append((baseline_config(c, mechanism), "plain"))
        run_sets[a] = []
        for v in grid:
            pc = point_config(c, mechanism, v, target_epsilon, max_grad_norm)
            items.append((pc, mechanism))
            run_sets[a].append({**dict(sets or {}), **config_changes(c, pc)})  # task options flattened: --set keys
        for r in range(target):
            b, got = read_repeat(a, c, r, True)
            values[a].append(got)
            bases[a].append(b)
    n = leading([all(values[a][r] is not None for a in values) for r in range(target)])
    while n == len(values["ffnn"]) and n < MAX_TABLE_REPEATS:  # further repeats cached for both: read them too
        more = {a: read_repeat(a, c, n, False) for a, c in configs.items()}
        if any(v is None for _, v in more.values()):
            break
        for a, (b, v) in more.items():
            values[a].append(v)
            bases[a].append(b)
        n += 1
    reps = max(n, target)
    command = " ; ".join(f"python -m core run --task {task} --arch {a} --preset {preset}{sets_text(rs)} "
                         f"--repeats {reps} --quiet --out findings_{task}_{a}_{mechanism}"
                         f"{'_' + format(v, 'g') if several else ''}.json"
                         for a in configs for v, rs in zip(grid, run_sets[a]))
    common = dict(paper=paper, metric=metric, n=n, target_repeats=target, missing=tuple(missing),
                  missing_time=time_text(missing), command=command, repeat_items=tuple(items), family=(metric,),
                  expected_sign=expected)
    if n == 0:
        return finding_row(finding, task, preset, status="not run", **common)
    comp = compare(metric, [float(v) for v in present(values["ffnn"], n)], [float(v) for v in present(values["rnn"], n)],
                   expected)
    word, why = _judged_word(comp)
    matched = _baseline_match(bases["ffnn"][:n], bases["rnn"][:n])
    a_mean, b_mean = comp.difference.a.mean, comp.difference.b.mean
    if mechanism == "dpsgd" and min(a_mean, b_mean) >= LOSS_FLOOR:
        word, why = UNINFORMATIVE, (f"utility loss ≥ {LOSS_FLOOR:.0%} on both arms (FFNN {a_mean:.0%}, RNN "
                                    f"{b_mean:.0%}): both lost everything, no difference could show")
    elif mechanism != "dpsgd" and all(b is not None and abs(float(b.attack.accuracy) - 0.5) <= CHANCE_BAND
                                      for b in bases["ffnn"][:n] + bases["rnn"][:n]):
        word, why = UNINFORMATIVE, (f"the undefended attack is at chance (50 % ± {CHANCE_BAND:.0%}) on both arms: "
                                    "there is nothing for the defense to lower")
    elif (apart := _epsilons_apart(epsilons)) is not None:
        word, why = NOT_COMPARABLE, apart
        if matched is not None:  # more repeats cannot make two ε one
            matched = {**matched, "unsettled": False}
    elif matched is not None and matched["matched"] is False:
        word, why = NOT_COMPARABLE, ("the undefended models' utility is not matched on train and validation: "
                                     + "; ".join(matched["gaps"].values()))
        if matched["unsettled"]:
            why += "; the matching is not settled yet: more repeats narrow the gaps' intervals"
    return finding_row(finding, task, preset, status="measured", measured=MeasuredCell.of(comp), verdict=word,
                       verdict_reason=why, matched=matched, **common)


def _epsilons_apart(epsilons: dict[str, list[tuple[float | None, ...]]]) -> str | None:
    """Why the same σ is not the same ε for FFNN and RNN (their accountants' ε of a point differ by more than 1 %:
    another number of steps or sampling rate), or None — the claim is about the same ε (000 §5.2.2)."""
    for (fe, re_) in zip(epsilons.get("ffnn", ()), epsilons.get("rnn", ())):
        for f, r in zip(fe, re_):
            if f is not None and r is not None and abs(f - r) > 0.01 * max(abs(f), abs(r)):
                return (f"the same σ gives FFNN ε = {f:.3g} but RNN ε = {r:.3g} (other steps or sampling rate): the "
                        "claim is at the same ε")
    return None


def _baseline_match(ffnn: list[RunSummary | None], rnn: list[RunSummary | None]) -> dict[str, Any] | None:
    """Whether the undefended FFNN and RNN runs are matched on train and validation utility (each gap's interval
    over the repeats within ±5 % of the larger: :func:`core.analyses.arch_answer.utility_match`)."""
    out: dict[str, Any] = {"gaps": {}}
    matches = []
    for key, which in (("train", "train"), ("val", "validation")):
        f = [getattr(b.utility, key) if b is not None else None for b in ffnn]
        r = [getattr(b.utility, key) if b is not None else None for b in rnn]
        if not f or any(v is None for v in f + r):
            continue
        u = utility_match(compare(f"utility_{key}", [float(v) for v in cast("list[float]", f)],
                                  [float(v) for v in cast("list[float]", r)]), which)
        out[which], out["gaps"][which] = u.matched, u.text()
        matches.append(u)
    if not out["gaps"]:
        return None
    out["matched"] = all(out[w] for w in out["gaps"])
    out["unsettled"] = matching_unsettled(matches)
    return out


def summary_utility_loss(base: RunSummary, point: RunSummary) -> float | None:
    """:func:`core.measurement.metrics.utility_loss` of ``point``'s validation utility against ``base``'s."""
    u0, u = base.utility.val, point.utility.val
    return utility_loss(None if u is None else float(u), None if u0 is None else float(u0))


def mean_utility_loss(base: RunSummary, points: list[RunSummary]) -> float | None:
    """F4's per-repeat number: the utility loss averaged over the σ grid's points (equal weight per σ)."""
    losses = [summary_utility_loss(base, p) for p in points]
    return None if any(v is None for v in losses) else float(np.mean(cast("list[float]", losses)))


def sensitivity(grid: tuple[float, ...], log: bool, stronger_when_larger: bool) -> Callable[..., float | None]:
    """F5's per-repeat number: how fast the attack accuracy falls as the regulariser strengthens — the least-squares
    slope of the attack accuracy over the grid's values (on log10 of them where ``log``: λ spans decades), signed
    so that a fall with stronger regularisation is positive (L2: larger λ is stronger; PPO's clip ε: smaller is)."""
    x = np.log10(np.asarray(grid, np.float64)) if log else np.asarray(grid, np.float64)

    def read(base: RunSummary, points: list[RunSummary]) -> float | None:
        y = np.asarray([float(p.attack.accuracy) for p in points], np.float64)
        slope = float(np.polyfit(x, y, 1)[0])
        return -slope if stronger_when_larger else slope
    return read
