"""The four per-record views on cached runs: per-record exposure FFNN vs RNN (and flips under a
defense), the attacker's reference budget, an audited ε beside the accountant's, and vulnerability
per slice. The math is in :mod:`core.measurement.exposure`, :mod:`core.measurement.budget`,
:mod:`core.measurement.audit` and :mod:`core.measurement.slices`; this module feeds them the cached
summaries and models and returns their typed results (:mod:`core.analyses.analysis_results`).

Every view but the audit reads what the runs already cached; the audit trains one canary run per
(config, m, seed), cached.

**The same records.** FFNN and RNN of a preset share the seed, sizes and data source, so the split
(:func:`core.experiment.roles.make_splits`): record i of one summary is record i of the other.
:func:`evaluated_records` recomputes both splits and refuses a pair that differs.

**The audit's canary run** (Steinke, Nasr & Jagielski 2023): m canaries are drawn (seeded) from the
victim's unused records and made canaries by the task (:meth:`core.tasks.base.Task.canary_data`); each
is included with probability ½; one model of the victim's recipe (same config, DP-SGD included) trains on
the victim's members plus the included canaries. A canary's score is minus the model's mean loss on it.
Beside the audited bound: the run's own accountant ε (its q counts the canaries), the cached run's
attack-derived ε̂, and the estimators of :mod:`core.measurement.audit_estimators` on the same scores.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from core.analyses.analysis_results import AuditView, BudgetView, CanaryAudit, ExposureView, ReportViews, SlicesView
from core.analyses.repeats import repeat_config
from core.defenses.defender import Defender
from core.defenses.spec import DefenseSpec
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import cached_run, trained_models
from core.experiment.reference_attacks import (
    LIRA_ONLINE,
    fit_reference_attacks,
    lira_scores,
    online_references,
    reference_inputs,
    score_reference_attacks,
)
from core.experiment.results import DefendedPoint, RunRecords, RunSummary
from core.experiment.roles import is_cached, make_splits, refuse_loaded_victim, role_seed, train_model
from core.foundations.config import MAX_REPEATS, ExperimentConfig
from core.foundations.errors import ConfigError, MIAError
from core.measurement.audit import audit, audit_comparability
from core.measurement.audit_estimators import audit_estimators
from core.measurement.budget import budget_curve
from core.measurement.exposure import EXPOSURE_FPRS, flips, fpr_label, quadrants
from core.measurement.metrics import empirical_epsilon
from core.measurement.slices import MIN_SLICE_RECORDS, slice_metrics
from core.tasks import get_task
from core.training.dpsgd import report as privacy_report

#: the strongest attacks, in order of preference when a run has them
STRONGEST = ("lira", "rmia")
#: default number of audit canaries
DEFAULT_CANARIES = 100


# ---------------------------------------------------------------------------- the same records
def evaluated_records(cfg: ExperimentConfig) -> np.ndarray:
    """Dataset indices of the victim's balanced evaluation set of ``cfg`` (members first)."""
    task = get_task(cfg.task)
    return make_splits(cfg, task.load(cfg)).eval_index


def check_same_records(configs: dict[str, ExperimentConfig]) -> np.ndarray:
    """The evaluated records shared by every config; :class:`ConfigError` when they differ."""
    indices = {arch: evaluated_records(cfg) for arch, cfg in configs.items()}
    first_arch, first = next(iter(indices.items()))
    for arch, idx in indices.items():
        if not np.array_equal(idx, first):
            raise ConfigError(f"{arch} and {first_arch} evaluate different records (seed, n_train, n_eval or data "
                              "differ): per-record comparisons need the same split")
    return first


def strongest_attack(summaries: dict[str, RunSummary]) -> str:
    """LiRA or RMIA, whichever has the higher AUC averaged over the runs (the task's primary
    attack when a run has neither)."""
    names = [n for n in STRONGEST if all(s.per_record.has_scores(n) for s in summaries.values())]
    if not names:
        return next(iter(summaries.values())).primary
    return max(names, key=lambda n: np.mean([s.attacks[n].auc for s in summaries.values()]))


def _scores(values: Sequence[Any] | None, what: str) -> np.ndarray:
    if values is None:
        raise ConfigError(f"{what} has no per-record scores")
    if any(v is None for v in values):
        raise ConfigError(f"{what} has records without a score (an attack with no usable reference)")
    return np.asarray(values, np.float64)


def _column(values: Sequence[float] | None, what: str) -> list[float]:
    """A per-record column of a run (its cross-entropy, its APE) as a list; :class:`ConfigError` when the run has
    none."""
    if values is None:
        raise ConfigError(f"{what} has no per-record values")
    return list(values)


# ---------------------------------------------------------------------------- 1. exposure
def defended_points(configs: dict[str, ExperimentConfig], mechanism: str, value: float,
                    cache: ArtifactCache | None = None) -> dict[str, DefendedPoint]:
    """The naive attacker's point without utility (the slider's fast path, with quantile regression: every
    attack's per-record scores) of each config."""
    return {arch: Defender(trained_models(cfg, cache=cache), cache).point(DefenseSpec(mechanism, value), "naive",
                                                                            utility=False, quantile=True)
            for arch, cfg in configs.items()}


def cached_repeats(configs: dict[str, ExperimentConfig], cache: ArtifactCache | None = None
                   ) -> list[dict[str, RunSummary]]:
    """The cached repeats r ≥ 1 of the configs (:func:`core.analyses.repeats.repeat_config`: the same config
    with a derived seed, shared by both architectures) as ``{arch: summary}`` pairs, where every
    architecture's repeat r is cached: the independent repeats the exposure quadrants take an
    interval over. Nothing trains."""
    out = []
    for r in range(1, MAX_REPEATS):
        pair = {arch: cached_run(repeat_config(cfg, r), cache) for arch, cfg in configs.items()}
        runs = {arch: s for arch, s in pair.items() if s is not None}
        if len(runs) == len(pair):
            out.append(runs)
    return out


def exposure_view(configs: dict[str, ExperimentConfig], summaries: dict[str, RunSummary], attack: str | None = None,
                  fprs: tuple[float, ...] = EXPOSURE_FPRS, defended: dict[str, DefendedPoint] | None = None,
                  repeats: list[dict[str, RunSummary]] | None = None) -> ExposureView:
    """Per-record exposure of the same records under two architectures (``{"ffnn": …, "rnn": …}``):
    scores, loss and entropy per record, the quadrants at each FPR (with ``repeats`` — pairs of
    summaries of other seeds, :func:`cached_repeats` — also a t interval of each count over the
    repeats), and with ``defended`` (points of :func:`defended_points`) the members that stop /
    start being exposed under the defense."""
    if len(configs) != 2:
        raise ConfigError("the exposure view compares two architectures: give both ffnn and rnn")
    records = check_same_records(configs)
    (a, sa), (b, sb) = summaries.items()
    attack = attack or strongest_attack(summaries)
    for arch, s in summaries.items():
        if not s.per_record.has_scores(attack):
            raise ConfigError(f"the {arch} run has no per-record scores of {attack!r}")
    member = np.asarray(sa.per_record.membership, bool)
    if not np.array_equal(member, np.asarray(sb.per_record.membership, bool)) or len(member) != len(records):
        raise ConfigError("the two runs' per-record tables do not describe the same records")
    scores = {arch: _scores(s.per_record.scores_of(attack), f"{arch} {attack}") for arch, s in summaries.items()}
    out: dict[str, Any] = {
        "attack": attack, "archs": [a, b], "records": [int(i) for i in records], "membership": member.tolist(),
        "scores": {k: v.tolist() for k, v in scores.items()},
        "cross_entropy": {arch: _column(s.per_record.cross_entropy, f"{arch} cross-entropy")
                          for arch, s in summaries.items()},
        "ape": {arch: _column(s.per_record.ape, f"{arch} APE") for arch, s in summaries.items()},
    }
    triples, seeds = [], []
    for pair in repeats or []:
        if pair[a].per_record.has_scores(attack) and pair[b].per_record.has_scores(attack):
            triples.append((_scores(pair[a].per_record.scores_of(attack), "repeat"),
                            _scores(pair[b].per_record.scores_of(attack), "repeat"),
                            np.asarray(pair[a].per_record.membership, bool)))
            seeds.append(pair[a].seed)
    out["repeat_seeds"] = seeds
    out["quadrants"] = {str(f): quadrants(scores[a], scores[b], member, f, a, b, triples).to_dict() for f in fprs}
    # an FPR finer than 1/non-members is the threshold at 0 false positives: named so, never "0.1 %"
    out["fpr_labels"] = {str(f): fpr_label(f, int((~member).sum())) for f in fprs}
    if defended:
        first = next(iter(defended.values()))
        out["defense"] = {"mechanism": first.mechanism, "value": first.value, "attacker": "naive"}
        out["flips"] = {}
        for arch, point in defended.items():
            # the point's per-record block has a run's records layout: read it as one
            point_records = RunRecords.from_dict(point.records or {}, f"defended {arch} point.records")
            if not point_records.has_scores(attack):
                raise ConfigError(f"the defended {arch} point has no per-record {attack!r} scores")
            d = _scores(point_records.scores_of(attack), f"defended {arch} {attack}")
            out["flips"][arch] = {str(f): flips(scores[arch], d, member, f).to_dict() for f in fprs}
    return ExposureView.from_dict(out)  # typed as it is born; its to_dict() is the dict built here


# ---------------------------------------------------------------------------- 2. reference budget
def budget_view(cfg: ExperimentConfig, resamples: int = 8, cache: ArtifactCache | None = None,
                online: int = 0) -> BudgetView:
    """Offline LiRA and RMIA with 2, 4, … up to all shadows as references (each budget refitted on its own subset):
    AUC and TPR at 1 % / 0.1 % FPR with their spread over which references were used
    (:func:`core.measurement.budget.budget_curve`). With ``online`` = N > 0 also online LiRA over subsets of its N
    IN/OUT models plus the shadows (trained once, on request, cached)."""
    cache = cache or ArtifactCache()
    models = trained_models(cfg, cache=cache)
    inputs = reference_inputs(models, cache)
    if inputs is None:
        raise ConfigError("the reference budget needs at least 2 shadows (n_shadows ≥ 2)")
    n = len(inputs.references)
    member = models.eval_membership
    memo: dict[tuple[int, ...], dict[str, np.ndarray]] = {}

    def scores(sub: tuple[int, ...]) -> dict[str, np.ndarray]:
        if sub not in memo:
            chosen = inputs if len(sub) == n else inputs.subset(sub)
            outcome = score_reference_attacks(fit_reference_attacks(chosen), chosen.target, member)
            memo[sub] = {name: o.scores for name, o in outcome.items()}
        return memo[sub]

    def scores_of(name: str) -> Callable[[tuple[int, ...]], np.ndarray]:
        def score(sub: tuple[int, ...]) -> np.ndarray:
            return scores(sub)[name]
        return score

    curves = {name: budget_curve(name, scores_of(name), n, member, resamples=resamples,
                                 seed=cfg.seed, minimum=2).to_dict() for name in STRONGEST}
    if online:
        refs, in_mask = online_references(models, online, cache)
        target = models.victim.responses[cfg.epochs]
        curves[LIRA_ONLINE] = budget_curve(
            LIRA_ONLINE, lambda sub: lira_scores(target, [refs[j] for j in sub], in_mask=in_mask[list(sub)]),
            len(refs), member, resamples=resamples, seed=cfg.seed, minimum=2).to_dict()
    return BudgetView.from_dict({
        "arch": cfg.arch, "n_shadows": n, "online_models": int(online), "resamples": resamples, "curves": curves,
        "note": "lira and rmia: the shadows as (OUT) references; lira_online: its IN/OUT models plus the shadows; "
                "every attack needs two references (LiRA's variance, RMIA's calibration), so budgets start at 2"})


# ---------------------------------------------------------------------------- 3. audited ε
def canary_pool(cfg: ExperimentConfig) -> np.ndarray:
    """The victim's unused records, where the audit's canaries are drawn from (loads the data and
    makes the splits: no training)."""
    data = get_task(cfg.task).load(cfg)  # the same pool canary_audit draws from
    splits = make_splits(cfg, data)
    return np.setdiff1d(data.victim_pool, np.r_[splits.victim_members, splits.victim_nonmembers])


def check_canaries(cfg: ExperimentConfig, m: int, free: np.ndarray | None = None) -> None:
    """Raise :class:`ConfigError` unless ``m`` canaries fit in ``cfg``'s unused victim records: the
    CLI calls it before any training (the pool is known from the data and the splits alone)."""
    free = canary_pool(cfg) if free is None else free
    if not 2 <= m <= len(free):
        raise ConfigError(f"audit canaries must lie in 2..{len(free)} (the victim's unused records), got {m}")


def canary_audit(cfg: ExperimentConfig, m: int = DEFAULT_CANARIES, seed: int = 0, cache: ArtifactCache | None = None,
                 progress: Callable[[float], None] | None = None) -> CanaryAudit:
    """The one-run audit of ``cfg``'s recipe with ``m`` canaries (module docstring); cached under
    (training hash, m, seed), so it trains once, and read back typed."""
    refuse_loaded_victim(cfg, "audit")
    cache = cache or ArtifactCache()
    key = cache.key("analysis", cfg.training_hash, "audit", int(m), int(seed))
    stored = cache.get_json(key)
    if isinstance(stored, dict) and "audit" in stored and "m" in stored:  # else: an older layout, computed again
        entry = CanaryAudit.from_dict(stored, "cached canary audit")
        if entry.m == m:
            return entry
    task = get_task(cfg.task)
    data = task.load(cfg)
    splits = make_splits(cfg, data)
    free = np.setdiff1d(data.victim_pool, np.r_[splits.victim_members, splits.victim_nonmembers])
    check_canaries(cfg, m, free)
    rng = np.random.default_rng([cfg.seed, 0xCA7A, int(m), int(seed)])
    canaries = np.sort(rng.choice(free, m, replace=False)).astype(np.int64)
    included = rng.random(m) < 0.5
    canary_data = task.canary_data(cfg, data, canaries, rng)
    records: list[Any] = []
    model = train_model(task, cfg, canary_data, np.r_[splits.victim_members, canaries[included]].astype(np.int64),
                        role_seed(cfg, "victim"), on_progress=progress, on_record=records.append)
    answers = task.respond(cfg, model, canary_data, canaries, record_features=False)
    scores = -np.asarray(answers.mean_cross_entropy, np.float64)
    delta = float(cfg.dp_delta)
    result = audit(scores, included, delta)
    privacy = records[0].privacy if records and records[0].privacy else None
    out = {
        "arch": cfg.arch, "m": int(m), "seed": int(seed), "delta": delta, "design": task.canary_design,
        "canaries": canaries.tolist(), "included": included.tolist(), "scores": [float(v) for v in scores],
        "audit": result.to_dict(), "private": cfg.private,
        "accountant": privacy_report(privacy, delta) if privacy else None,
        "utility_val": float(task.utility(cfg, model, data, splits.victim_nonmembers)),
        "n_train": int(len(splits.victim_members) + included.sum()),
    }
    cache.put_json(key, out, allow_nan=False)
    return CanaryAudit.from_dict(out)


def audit_view(configs: dict[str, ExperimentConfig], summaries: dict[str, RunSummary], m: int = DEFAULT_CANARIES,
               cache: ArtifactCache | None = None, progress: Callable[[str, float], None] | None = None
               ) -> dict[str, AuditView]:
    """Per architecture: the audited ε of a canary run, its accountant ε (DP-SGD runs; None
    otherwise: no guarantee to compare) and the attack-derived ε̂ of the cached run."""
    def progress_of(arch: str) -> Callable[[float], None] | None:
        if not progress:
            return None
        report = progress

        def of(f: float) -> None:
            report(f"audit ({arch})", f)
        return of

    return {arch: audit_beside(canary_audit(cfg, m, cache=cache, progress=progress_of(arch)), summaries[arch])
            for arch, cfg in configs.items()}


def audit_beside(entry: CanaryAudit, summary: RunSummary) -> AuditView:
    """A :func:`canary_audit` result with the numbers it is read against: its audited ε, its
    accountant ε (RDP, PRV; None when not private), the cached run's attack-derived ε̂ and the
    other estimators of the same canaries (``estimators``: the GDP estimate, the f-DP bound, the
    bounds against the number of guesses; :func:`core.measurement.audit_estimators.audit_estimators`)."""
    primary = summary.primary
    member = np.asarray(summary.per_record.membership, bool)
    hat = empirical_epsilon(_scores(summary.per_record.scores_of(primary), primary), member)
    acc = entry.accountant if entry.accountant is not None and entry.accountant.keys else None  # {}: none
    epsilons = (acc.epsilons or {}) if acc else {}
    task = get_task(summary.task)
    return AuditView.from_dict({
        **entry.to_dict(), "audited_epsilon": entry.audit.epsilon,
        "accountant_epsilon": {k: epsilons.get(k) for k in ("rdp", "prv")} if acc else None,
        "attack_epsilon_lower_bound": hat.lower_bound, "attack": primary,
        "estimators": audit_estimators(list(entry.scores), list(entry.included), entry.delta, seed=entry.seed or 0),
        "comparability": audit_comparability(f"one {task.record_names[0]}", task.privacy_unit,
                                             task.privacy_unit_is_record)})


# ---------------------------------------------------------------------------- 4. slices
def slice_labels(cfg: ExperimentConfig, records: np.ndarray, summary: RunSummary) -> dict[str, list[str]]:
    """The task's slicings of the evaluated ``records`` (:meth:`core.tasks.base.Task.slice_labels`:
    image — class; translation — source length and frequency of the source's rarest word, in
    terciles; navigation — the query episode's length in terciles)."""
    task = get_task(cfg.task)
    # the task hook takes the summary's JSON: it is a plugin's API (examples/plugin_task.py)
    labels = task.slice_labels(cfg, task.load(cfg), records, summary.to_dict())
    if not labels:
        raise ConfigError(f"the {cfg.task} task defines no slicing of its records")
    return labels


def slices_view(configs: dict[str, ExperimentConfig], summaries: dict[str, RunSummary], attack: str | None = None,
                min_records: int = MIN_SLICE_RECORDS) -> SlicesView:
    """Attack metrics per slice, per architecture (the same slices when the records are the same)."""
    attack = attack or strongest_attack(summaries)
    archs: dict[str, Any] = {}
    for arch, cfg in configs.items():
        s = summaries[arch]
        records = evaluated_records(cfg)
        member = np.asarray(s.per_record.membership, bool)
        scores = _scores(s.per_record.scores_of(attack), f"{arch} {attack}")
        archs[arch] = {name: [r.to_dict() for r in slice_metrics(name, labels, scores, member, min_records,
                                                                 seed=cfg.seed)]
                       for name, labels in slice_labels(cfg, records, s).items()}
    return SlicesView.from_dict({"attack": attack, "min_records": min_records, "archs": archs})


# ---------------------------------------------------------------------------- the run report's views
def report_views(configs: dict[str, ExperimentConfig], summaries: dict[str, RunSummary],
                 cache: ArtifactCache | None = None, budget: bool = True) -> ReportViews:
    """The per-record views a run report shows, from what is cached only: ``exposure``, ``budget`` (each architecture
    with ≥ 2 shadows still cached; left out with ``budget`` False, as it refits LiRA and RMIA per subset) and
    ``slices``. A view the runs cannot give (any :class:`MIAError`) is under ``skipped`` with the reason."""
    cache = cache or ArtifactCache()
    skipped: dict[str, str] = {}
    exposure = slices = None
    if len(configs) == 2:
        try:
            exposure = exposure_view(configs, summaries, repeats=cached_repeats(configs, cache))
        except MIAError as exc:
            skipped["exposure"] = str(exc)
    else:
        skipped["exposure"] = "compares two architectures: report on both ffnn and rnn"
    budgets: dict[str, BudgetView] = {}
    for arch, cfg in configs.items() if budget else ():
        roles = ["victim", *(f"shadow_{i}" for i in range(cfg.n_shadows))]
        if cfg.n_shadows < 2:
            skipped[f"budget ({arch})"] = "needs at least 2 shadows as references (n_shadows ≥ 2)"
        elif not all(is_cached(cfg, role, cache) for role in roles):
            skipped[f"budget ({arch})"] = "the run's models are no longer cached (rerun it to refit)"
        else:
            try:
                budgets[arch] = budget_view(cfg, cache=cache)
            except MIAError as exc:
                skipped[f"budget ({arch})"] = str(exc)
    try:
        slices = slices_view(configs, summaries)
    except MIAError as exc:
        skipped["slices"] = str(exc)
    return ReportViews(exposure, budgets, slices, skipped)
