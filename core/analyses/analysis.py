"""Do RNNs leak more, and why do attacks work? The explorer's explanation analyses, task-generic, as plain data.

Each analysis takes summaries or trained models (never a figure) and returns its typed result, whose JSON
(``to_dict``) the CLI writes (``python -m core analyze``) and the Analyses page draws:

* :func:`entropy_scatter` — paper 000 Fig. 5: per record, x = average prediction entropy (APE,
  eq. 3), y = cross-entropy to the reference; membership, each attack's decision and its decision
  boundary in this plane (the real threshold, or for learned attacks a *surrogate* classifier fitted
  to the attack's decisions), and the best two-threshold quadrant (CE < a and H < b).
* :func:`vulnerability` — paper 000 Fig. 4: per checkpoint epoch, utility, APE of members and
  non-members and a separate attack's accuracy and AUC.
* :func:`overtraining` — attack accuracy far past the best validation epoch (a longer run).
* :func:`~core.analyses.own_models.mismatch` and :func:`~core.analyses.own_models.memorization` (registered here).
* the per-record views of :mod:`core.analyses.record_views`: ``exposure``, ``budget``, ``audit``, ``slices``.

:mod:`core.analyses.verdicts` turns each analysis' own data into a computed sentence, so no page writes a
finding by hand and a tab never shows a verdict another analysis' runs decided.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from core.analyses.analyses_json import AnalysesResults
from core.analyses.analysis_results import (
    AuditView,
    BudgetView,
    EpochRow,
    ExposedMember,
    ExposureView,
    Scatter,
    SlicesView,
    Surrogate,
    Vulnerability,
)
from core.analyses.own_models import Memorization, Mismatch, memorization, mismatch
from core.analyses.record_views import (
    DEFAULT_CANARIES,
    audit_view,
    budget_view,
    cached_repeats,
    canary_audit,
    defended_points,
    exposure_view,
    slices_view,
)
from core.analyses.registry import (
    Analysis,
    AnalysisRun,
    Repeat,
    int_param,
    laid_out,
    names,
    register_analysis,
    registered,
)
from core.analyses.repeats import repeat_config
from core.analyses.verdicts import (
    audit_verdict,
    memorization_pair,
    memorization_verdict,
    mismatch_verdict,
    overtraining_pair,
    overtraining_verdict,
    repeated_analyses,
    repeated_verdicts,
    runs_pair,
    runs_verdict,
    scatter_pair,
    scatter_verdict,
    verdicts,
    vulnerability_pair,
    vulnerability_verdict,
)
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import run_experiment, trained_models
from core.experiment.results import DefendedPoint, RunRecords, RunSummary
from core.experiment.roles import RETRAINING_ANALYSES, TrainedModels, refuse_loaded_victim
from core.foundations.config import ExperimentConfig
from core.foundations.errors import ConfigError
from core.foundations.progress import ProgressCallback, ProgressEvent

_FLOOR = 1e-12


def _log10(values) -> np.ndarray:
    return np.log10(np.maximum(np.asarray(values, np.float64), _FLOOR))


# ---------------------------------------------------------------------------- scatter and boundaries
def data_range(values: np.ndarray, clipped: np.ndarray) -> tuple[float, float]:
    """The span of the records' log₁₀ values that were not clipped at the floor (1e-12), widened to
    at least one decade: the box the figure, the surrogate's lattice and the quadrant are drawn in.
    All records clipped: one decade above the floor."""
    kept = np.asarray(values, np.float64)[~np.asarray(clipped, bool)]
    kept = kept[np.isfinite(kept)]
    if kept.size == 0:
        lo = hi = float(np.log10(_FLOOR))
    else:
        lo, hi = float(kept.min()), float(kept.max())
    if hi - lo < 1.0:  # a degenerate span: centre one decade on it
        mid = (hi + lo) / 2
        lo, hi = mid - 0.5, mid + 0.5
    return lo, hi


def clip_strip(lo: float, hi: float) -> float:
    """Where records clipped at the floor are drawn (and fitted): just below the data's range
    (8 % of its span), so that they read as "below this axis" and not as a row of data at −12."""
    return lo - 0.08 * (hi - lo)


def surrogate_boundary(x: np.ndarray, y: np.ndarray, decisions: np.ndarray, grid: int = 60,
                       x_range: tuple[float, float] | None = None,
                       y_range: tuple[float, float] | None = None) -> Surrogate:
    """A logistic regression on quadratic features of (x, y) fitted to an attack's decisions.

    Returns its agreement with the decisions and its predicted member probability on a
    ``grid``×``grid`` lattice spanning ``x_range`` × ``y_range`` (default: the data's min–max; the
    scatter passes the records' range so the shaded region and its boundary stay where the records
    are) for a filled contour: how well the attack's behaviour can be read off these two signals alone.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures, StandardScaler

    xy = np.stack([x, y], 1)
    decisions = np.asarray(decisions, bool)
    x0, x1 = x_range if x_range is not None else (float(x.min()), float(x.max()))
    y0, y1 = y_range if y_range is not None else (float(y.min()), float(y.max()))
    gx = np.linspace(x0, x1, grid)
    gy = np.linspace(y0, y1, grid)
    if decisions.all() or not decisions.any():  # one class everywhere: the boundary is the frame
        z = np.full((grid, grid), float(decisions.all()))
        return Surrogate.from_dict({"agreement": 1.0, "x": gx.tolist(), "y": gy.tolist(),
                                    "member_probability": z.tolist()})
    model = make_pipeline(StandardScaler(), PolynomialFeatures(2), LogisticRegression(C=10.0, max_iter=2000))
    model.fit(xy, decisions)
    agreement = float((model.predict(xy) == decisions).mean())
    mx, my = np.meshgrid(gx, gy)
    z = model.predict_proba(np.stack([mx.ravel(), my.ravel()], 1))[:, 1].reshape(grid, grid)
    return Surrogate.from_dict({"agreement": agreement, "x": gx.tolist(), "y": gy.tolist(),
                                "member_probability": np.round(z, 4).tolist()})


def best_quadrant(entropy: np.ndarray, cross_entropy: np.ndarray, membership: np.ndarray,
                  candidates: int = 80, seed: int = 0) -> dict[str, Any]:
    """The two-threshold rule "member iff CE ≤ a and H ≤ b", chosen on one half of the records and scored on the
    other.

    Thresholds range over quantiles of each signal (plus +∞, i.e. that signal unused). The best of the
    ``candidates``² rules on the records it is scored on overstates (a maximum over thousands of rules), so the
    records are split into two stratified random halves (``seed``): the rule with the highest accuracy on the first
    half is chosen, and ``accuracy`` is its accuracy on the second (``n_scored`` records) — a held-out number,
    comparable with an attack's. ``accuracy_chosen_on`` is its accuracy on the half that chose it (for reference).
    """
    h = np.asarray(entropy, np.float64)
    ce = np.asarray(cross_entropy, np.float64)
    y = np.asarray(membership, bool)
    rng = np.random.default_rng(seed)
    choose = np.zeros(len(y), bool)
    for group in (np.flatnonzero(y), np.flatnonzero(~y)):
        choose[rng.permutation(group)[: len(group) // 2]] = True
    split = bool(y[choose].any() and (~y[choose]).any() and y[~choose].any() and (~y[~choose]).any())
    if not split:  # too few records to halve (a half without members or non-members): chosen on these records
        choose = np.ones(len(y), bool)
    hc, cc, yc = h[choose], ce[choose], y[choose]
    qs = np.linspace(0, 1, candidates)
    a_cand = np.r_[np.unique(np.quantile(cc, qs)), np.inf]
    b_cand = np.r_[np.unique(np.quantile(hc, qs)), np.inf]
    below_a = cc[None, :] <= a_cand[:, None]  # (A, N)
    below_b = hc[None, :] <= b_cand[:, None]  # (B, N)
    # accuracy of every (a, b): members inside + non-members outside, over the choosing half
    mem_in = below_a[:, yc].astype(np.int32) @ below_b[:, yc].T.astype(np.int32)
    non_in = below_a[:, ~yc].astype(np.int32) @ below_b[:, ~yc].T.astype(np.int32)
    acc = (mem_in + ((~yc).sum() - non_in)) / len(yc)
    i, j = np.unravel_index(int(np.argmax(acc)), acc.shape)
    scored = ~choose if split else choose
    decided = (ce[scored] <= a_cand[i]) & (h[scored] <= b_cand[j])
    return {"cross_entropy_max": float(a_cand[i]) if np.isfinite(a_cand[i]) else None,
            "entropy_max": float(b_cand[j]) if np.isfinite(b_cand[j]) else None,
            "accuracy": float((decided == y[scored]).mean()), "accuracy_chosen_on": float(acc[i, j]),
            "n_scored": int(scored.sum()) if split else None}


def near_records(surrogate: Surrogate, x: np.ndarray, y: np.ndarray, reach: float = 0.06) -> Surrogate:
    """``surrogate`` with its member probability blanked (None) on lattice points farther than
    ``reach`` (a fraction of each axis' span, in the max norm) from every record: the shaded region
    and its boundary are then drawn where there are records to decide about, not extrapolated by the
    quadratic surface into empty corners of the plot."""
    gx, gy = np.asarray(surrogate.x), np.asarray(surrogate.y)
    sx, sy = max(float(gx[-1] - gx[0]), 1e-12), max(float(gy[-1] - gy[0]), 1e-12)
    # per lattice row/column: distance of each lattice coordinate to each record, scaled by the span
    dx = np.abs(gx[:, None] - np.asarray(x)[None, :]) / sx  # (G, N)
    dy = np.abs(gy[:, None] - np.asarray(y)[None, :]) / sy  # (G, N)
    near = ((dx[None, :, :] <= reach) & (dy[:, None, :] <= reach)).any(axis=2)  # (Gy, Gx)
    z = np.asarray(surrogate.member_probability, dtype=object)
    z[~near] = None
    return surrogate.with_json({"member_probability": z.tolist(), "reach": reach})  # its JSON, these two keys set


def entropy_scatter(summary: RunSummary) -> Scatter:
    """The data of paper 000 Fig. 5 for one run (see the module docstring), from its summary.

    Signals at or below 1e-12 (a confident correct answer's cross-entropy underflows) are flagged
    per record (``clipped_ape``, ``clipped_cross_entropy``): their log₁₀ stays −12 in the data, and the
    figure draws them on a strip below the axis (``strip``, :func:`clip_strip`) marked as clipped. ``range`` is
    the unclipped records' log₁₀ span (:func:`data_range`); the surrogates are fitted with clipped
    values on the strip and evaluated over that range only.
    """
    run = summary
    if not run.records:
        raise ConfigError("this summary carries no per-record signals (run it again with this version)")
    rec = run.per_record
    ape, ce = np.asarray(rec.ape), np.asarray(rec.cross_entropy)
    member = np.asarray(rec.membership, bool)
    lx, ly = _log10(ape), _log10(ce)
    cx, cy = lx <= np.log10(_FLOOR), ly <= np.log10(_FLOOR)
    x_range, y_range = data_range(lx, cx), data_range(ly, cy)
    # the surrogate sees clipped records where the figure draws them, not 10 decades away
    fx = np.where(cx, clip_strip(*x_range), lx)
    fy = np.where(cy, clip_strip(*y_range), ly)
    # the lattice starts at the strip only where records were clipped: otherwise at the records
    x_lo = clip_strip(*x_range) if cx.any() else x_range[0]
    y_lo = clip_strip(*y_range) if cy.any() else y_range[0]
    attacks = {}
    for name, scores in (rec.scores or {}).items():
        threshold = run.attacks[name].threshold
        threshold = float("inf") if threshold is None else threshold
        decided = np.asarray(scores) >= threshold
        boundary = (rec.boundaries or {}).get(name)
        # the real threshold, in its signal's units, where the attack has one; else the surrogate's
        where = {"boundary": boundary} if boundary else {"surrogate": near_records(
            surrogate_boundary(fx, fy, decided, x_range=(x_lo, x_range[1]), y_range=(y_lo, y_range[1])), fx, fy)}
        attacks[name] = {"decision": decided.tolist(), "correct": (decided == member).tolist(),
                         "accuracy": float((decided == member).mean()), **where}
    # typed as it is born: to_dict() is this dict (analyses.json's scatter of one architecture)
    return Scatter.from_dict({
        "arch": run.arch, "task": run.task, "log10_ape": lx.tolist(), "log10_cross_entropy": ly.tolist(),
        "membership": member.tolist(), "clipped_ape": cx.tolist(), "clipped_cross_entropy": cy.tolist(),
        "floor": _FLOOR, "range": {"log10_ape": list(x_range), "log10_cross_entropy": list(y_range)},
        "strip": {"log10_ape": clip_strip(*x_range), "log10_cross_entropy": clip_strip(*y_range)},
        "attacks": attacks, "quadrant": best_quadrant(ape, ce, member),
        "mean_ape": {"members": float(ape[member].mean()), "non_members": float(ape[~member].mean())},
        "mean_cross_entropy": {"members": float(ce[member].mean()), "non_members": float(ce[~member].mean())}})


def point_records(point: DefendedPoint) -> RunRecords:
    """A defended point's per-record block (:meth:`core.defenses.defender.Defender.point`), read typed: it has a
    run's records layout (membership, APE, cross-entropy, the naive attacks' scores on the defended outputs)."""
    return RunRecords.from_dict(point.records or {}, "defended point.records")


def defended_summary(summary: RunSummary, records: RunRecords) -> RunSummary:
    """``summary`` with its per-record signals replaced by a defended point's ``records``
    (:func:`point_records`): the defended outputs' APE and cross-entropy and the
    naive attacks' scores on them. The naive attacker keeps its thresholds and boundaries, so
    :func:`entropy_scatter` then draws the same decision boundaries over the defended records."""
    run = summary
    if records.scores is None:
        raise ConfigError("this defended point carries no per-record attack scores (computed by an older version)")
    scores = {n: [float("nan") if v is None else v for v in values] for n, values in records.scores.items()
              if n in run.attacks}
    block = {"membership": list(records.membership or ()), "ape": list(records.ape or ()),
             "cross_entropy": list(records.cross_entropy or ()), "scores": scores,
             "boundaries": dict(run.per_record.boundaries or {})}
    return RunSummary.from_dict({**run.to_dict(), "records": block})


def most_exposed(summary: RunSummary, attack: str | None = None, top: int = 10) -> list[ExposedMember]:
    """Members with the highest attack score (position in the evaluation set, score, APE, CE)."""
    rec = summary.per_record
    attack = attack or summary.primary
    if not rec.has_scores(attack):
        raise KeyError(attack)  # as a look-up of a missing attack always did
    ape, cross_entropy = rec.ape, rec.cross_entropy
    if ape is None or cross_entropy is None:
        raise ConfigError("the run has no per-record APE and cross-entropy to show its most exposed members by")
    scores = np.asarray(rec.scores_of(attack))
    member = np.asarray(rec.membership, bool)
    order = [int(i) for i in np.argsort(-scores) if member[i]][:top]
    return [ExposedMember.from_dict({"position": i, "score": float(scores[i]), "ape": ape[i],
                                     "cross_entropy": cross_entropy[i]}) for i in order]


# ---------------------------------------------------------------------------- over training
def vulnerability(models: TrainedModels, summary: RunSummary) -> Vulnerability:
    """Paper 000 Fig. 4 for one run: per epoch utility, per checkpoint APE and attack numbers."""
    run = summary
    member = models.eval_membership
    rows = []
    primary = run.primary
    for row in run.per_epoch:
        e = row.epoch
        out = {"epoch": e, "utility_train": row.utility_train, "utility_val": row.utility_val}
        r = models.victim.responses.get(e)
        if r is not None:
            ape = r.ape
            out.update(ape_members=float(ape[member].mean()), ape_non_members=float(ape[~member].mean()))
            res = run.attacks_at(e).get(primary)
            if res:
                out.update(attack_accuracy=res.accuracy, attack_auc=res.auc)
        rows.append(EpochRow.from_dict(out))  # typed from birth; its JSON (to_dict) is the dict built
    vals = [(r.utility_val, r.epoch) for r in rows if r.utility_val is not None]
    best = max(vals)[1] if vals else None
    by_epoch = {r.epoch: r for r in rows}

    def gap(e: int) -> float | None:
        r = by_epoch.get(e)
        # no gap where the epoch lacks either utility
        return (None if r is None or r.utility_train is None or r.utility_val is None
                else r.utility_train - r.utility_val)

    return Vulnerability.from_dict({"arch": run.arch, "rows": rows, "best_val_epoch": best,  # the rows typed already
                                    "gap_at_best": gap(best) if best else None,
                                    "gap_final": gap(rows[-1].epoch) if rows else None, "attack": primary})


def _spread(epochs: int, points: int) -> tuple[int, ...]:
    return tuple(sorted({max(1, int(round(epochs * (i + 1) / points))) for i in range(points)} - {epochs}))


def overtraining(cfg: ExperimentConfig, factor: int = 3, points: int = 8, progress=None,
                 cache: ArtifactCache | None = None) -> Vulnerability:
    """Attack accuracy at epochs up to ``factor`` × the preset's, a separate attack per checkpoint.
    ``progress(fraction)`` is told how far the (cached) longer run is."""
    refuse_loaded_victim(cfg, "overtraining")
    if not 2 <= factor <= 10:
        raise ConfigError(f"factor must lie in 2..10, got {factor}")
    long = cfg.with_updates({"epochs": cfg.epochs * factor, "attack_epochs": _spread(cfg.epochs * factor, points)})
    summary = run_experiment(long.validate(), progress=(lambda ev: progress(ev.overall_fraction)) if progress else None,
                             cache=cache).run
    models = trained_models(long, cache=cache)
    return vulnerability(models, summary).with_json({"epochs": long.epochs, "preset_epochs": cfg.epochs,
                                                      "config_hash": long.config_hash})


# ---------------------------------------------------------------------------- how long a long analysis takes
def time_estimate(name: str, summary: RunSummary, blocks: int = 4, factor: int = 3,
                  scales: tuple[float, ...] = (0.5, 2.0)) -> float | None:
    """Seconds the analysis ``name`` should take for one architecture, scaled from the training and attack times
    ``summary``'s own run measured by the work the analysis repeats: memorization about ``1/blocks`` of the run's
    training, overtraining the whole run at ``factor`` × the epochs (attacked at 8 checkpoints), mismatch the
    shadows once per scale. None where the run measured no training."""
    t = summary.timings
    victim, shadows = t.get("victim_trained_s"), t.get("shadows_trained_s")
    if not victim or shadows is None:
        return None
    attack = t.get("attack_s") or 0.0
    if name == "memorization":
        return (victim + shadows) / blocks
    if name == "overtraining":
        checkpoints = max(1, len(summary.settings.attack_epochs or ()) + 1)
        return factor * (victim + shadows) + attack * 8 / checkpoints
    if name == "mismatch":
        return shadows * sum(scales)
    return None


#: measured time / :func:`time_estimate`, lowest and highest, per analysis on the image quick runs (docs/performance.md,
#: "The long analyses' time estimates"). The scaling leaves out fixed costs (loading the data, each block's
#: evaluation), which weigh most on the shortest analysis
MEASURED_RATIO = {"memorization": (1.18, 2.32), "overtraining": (0.97, 1.51), "mismatch": (0.87, 1.53)}


def time_range(name: str, summaries: list[RunSummary]) -> tuple[float, float] | None:
    """The seconds ``name`` should take for all of ``summaries`` one after another, as (low, high): the sum of their
    :func:`time_estimate` times :data:`MEASURED_RATIO`'s bounds; None where any run has no estimate."""
    estimates = [e for s in summaries if (e := time_estimate(name, s)) is not None]
    if not estimates or len(estimates) < len(summaries) or name not in MEASURED_RATIO:
        return None
    lo, hi = MEASURED_RATIO[name]
    return sum(estimates) * lo, sum(estimates) * hi


# ---------------------------------------------------------------------------- everything, both architectures
def analyze(configs: dict[str, ExperimentConfig], analyses: tuple[str, ...] | None = None, progress=None,
            cache: ArtifactCache | None = None, canaries: int = DEFAULT_CANARIES,
            defense: tuple[str, float] | None = None, online_lira: int = 0, repeats: int = 1) -> AnalysesResults:
    """Run ``analyses`` (default: every registered one) for each architecture's config (``{"ffnn": cfg, "rnn": cfg}``),
    in registration order, and compute the verdicts that compare them; ``progress(stage, fraction)`` is told what
    runs. The result's ``to_dict()`` is ``analyses.json``.

    With ``repeats`` = N ≥ 2 the analyses registered with a ``repeat`` pairing also run on repeats 1 … N−1 (each
    cached) and ``repeats`` holds their paired verdicts; everything else is repeat 0's. ``defense`` = (mechanism,
    value) adds the exposure flips under that defense, ``online_lira`` = N > 0 online LiRA's budget curve, and
    ``canaries`` sizes the audit's canary run."""
    known = names()
    analyses = known if analyses is None else tuple(analyses)
    unknown = set(analyses) - set(known)
    if unknown:
        raise ConfigError(f"unknown analyses {sorted(unknown)}; choose from {', '.join(known)}")
    if "exposure" in analyses and len(configs) != 2:
        raise ConfigError("the exposure analysis compares two architectures: give both ffnn and rnn")
    if "audit" in analyses and canaries < 2:
        raise ConfigError(f"the audit needs at least 2 canaries, got {canaries}")
    for name in RETRAINING_ANALYSES:  # before any work: a user's model cannot be retrained
        if name in analyses:
            for cfg in configs.values():
                refuse_loaded_victim(cfg, name)
    cache = cache or ArtifactCache()
    say = progress or (lambda stage, fraction: None)
    out: dict[str, Any] = {}  # each analysis' data as its run returns it (typed where it registers a reader)
    summaries = {}

    def stage_progress(stage: str) -> ProgressCallback:
        def report(ev: ProgressEvent) -> None:
            say(stage, ev.overall_fraction)
        return report

    for arch, cfg in configs.items():
        say(f"train & attack ({arch})", 0.0)
        summaries[arch] = run_experiment(  # typed from birth (core.experiment.pipeline)
            cfg, cache=cache, progress=stage_progress(f"train & attack ({arch})")).run
    run = AnalysisRun(configs, summaries, cache, say, canaries=canaries, defense=defense, online_lira=online_lira)
    for entry in registered():
        if entry.name in analyses:
            out[entry.name] = _run_of(entry)(run)
            if entry.extras is not None:
                out.update(entry.extras(run))
    # analyses.json's layout: the verdicts typed, each analysis' data written as its JSON (laid_out)
    layout = {"task": next(iter(configs.values())).task, "archs": list(configs), "verdicts": verdicts(out, summaries),
              **laid_out(out)}
    if repeats >= 2 and {"ffnn", "rnn"} <= set(configs):
        compared = [a.name for a in repeated_analyses()]
        per_repeat = [{"runs": summaries, **{n: out[n] for n in compared if n in out}}]
        for r in range(1, repeats):
            rcfg = {a: repeat_config(c, r) for a, c in configs.items()}
            per_repeat.append(_repeat_results(rcfg, [n for n in compared if n in analyses], cache,
                                              lambda stage, f, r=r: say(f"repeat {r + 1}/{repeats}: {stage}", f)))
        over = repeated_verdicts(per_repeat, [repeat_config(configs["ffnn"], r).seed for r in range(repeats)])
        return AnalysesResults.from_dict({**layout, "repeats": over})
    return AnalysesResults.from_dict(layout)


def _repeat_results(configs: dict[str, ExperimentConfig], compared: list[str], cache: ArtifactCache, say
                    ) -> dict[str, Any]:
    """One repeat's data for the comparing analyses ``compared`` (and its runs' summaries), typed as their runs
    return it."""
    summaries = {}
    for arch, cfg in configs.items():
        say(f"train & attack ({arch})", 0.0)
        summaries[arch] = run_experiment(cfg, cache=cache).run
    out: dict[str, Any] = {"runs": summaries}
    run = AnalysisRun(configs, summaries, cache, say)
    for entry in repeated_analyses():
        if entry.name in compared:
            out[entry.name] = _run_of(entry)(run)
    return out


def _run_of(entry: Analysis) -> Callable[[AnalysisRun], Any]:
    """A listed analysis' run function (the registry refuses a listed analysis without one; only the runs' entry,
    never run by name, has none)."""
    if entry.run is None:
        raise ValueError(f"analysis {entry.name} has no run function: it cannot be run by name")
    return entry.run


# ---------------------------------------------------------------------------- the registrations
def _staged_job(name: str, fn):
    """The worker's run of a long analysis that takes no parameters: ``fn(config, progress=…)``
    under the stage ``"<name> (<arch>)"``."""
    return lambda cfg, stage, params: fn(cfg, progress=stage(f"{name} ({cfg.arch})"))


def _laid_out(fn):
    """``fn`` with its typed result written as its JSON layout (``to_dict``): what a worker job's result carries,
    read typed again where the page takes it (:func:`core.analyses.registry.read_result`)."""
    return lambda *args, **kwargs: fn(*args, **kwargs).to_dict()


def _audit_job(cfg: ExperimentConfig, stage, params: dict[str, Any]) -> dict[str, Any]:
    m = int_param(params, "canaries", 100, 2, 100_000)
    # a job's result crosses to the page as its JSON layout, read there once (CanaryAudit.from_dict)
    return canary_audit(cfg, m, progress=stage(f"audit ({cfg.arch}, {m} canaries)")).to_dict()


def _budget_job(cfg: ExperimentConfig, stage, params: dict[str, Any]) -> dict[str, Any]:
    online = int_param(params, "online", 0, 0, 64)
    fraction = stage(f"reference budget ({cfg.arch}, {online} online models)")
    result = budget_view(cfg, online=online)
    fraction(1.0)
    return result.to_dict()  # a job's result crosses as its JSON layout, read typed where the page takes it


def _budget_run(run: AnalysisRun) -> dict[str, BudgetView]:
    out = {}
    for arch, cfg in run.configs.items():
        run.say(f"budget ({arch})", 0.0)
        out[arch] = budget_view(cfg, cache=run.cache, online=run.online_lira)
    return out


def _exposure_run(run: AnalysisRun) -> ExposureView:
    run.say("exposure", 0.0)
    points = defended_points(run.configs, run.defense[0], run.defense[1], run.cache) if run.defense else None
    return exposure_view(run.configs, run.summaries, defended=points, repeats=cached_repeats(run.configs, run.cache))


#: the runs every analysis starts from: their verdict and repeat pairing (never run or written by name)
register_analysis(Analysis(
    "runs", "Train & attack", None, verdict="rnn_more_vulnerable", verdict_of=runs_verdict,
    repeat=Repeat(runs_pair, -1, "final attack accuracy"), listed=False))
register_analysis(Analysis(
    "scatter", "Entropy scatter", lambda run: run.per_arch(lambda cfg, s: entropy_scatter(s)), reads=Scatter.from_dict,
    verdict="lower_member_entropy", verdict_of=scatter_verdict,
    repeat=Repeat(scatter_pair, -1, "entropy gap (non-members' − members' mean APE, nats): the RNN separates them "
                                     "more"),
    extras=lambda run: {"most_exposed": run.per_arch(lambda cfg, s: most_exposed(s))}))  # laid_out writes each
register_analysis(Analysis(
    "vulnerability", "Over training",
    lambda run: run.per_arch(lambda cfg, s: vulnerability(trained_models(cfg, cache=run.cache), s)),
    reads=Vulnerability.from_dict, verdict="rnn_more_vulnerable_over_training", verdict_of=vulnerability_verdict,
    repeat=Repeat(vulnerability_pair, -1, "attack accuracy averaged over the shared checkpoint epochs")))
register_analysis(Analysis(
    "memorization", "Memorization", lambda run: run.staged("memorization", memorization), reads=Memorization.from_dict,
    verdict="ffnn_forgets_early_blocks", verdict_of=memorization_verdict,
    repeat=Repeat(memorization_pair, -1, "attack accuracy on the first block learned"),
    long=True, job=_staged_job("memorization", _laid_out(memorization))))
register_analysis(Analysis(
    "overtraining", "Overtraining", lambda run: run.staged("overtraining", overtraining), reads=Vulnerability.from_dict,
    verdict="overtraining_raises_ffnn_more", verdict_of=overtraining_verdict,
    repeat=Repeat(overtraining_pair, +1, "rise of the attack accuracy past the best validation epoch"),
    long=True, job=_staged_job("overtraining", _laid_out(overtraining))))
register_analysis(Analysis(
    "mismatch", "Model mismatch", lambda run: run.staged("mismatch", mismatch), reads=Mismatch.from_dict,
    verdict="mismatch_costs_little", verdict_of=mismatch_verdict,
    long=True, job=_staged_job("mismatch", _laid_out(mismatch))))
register_analysis(Analysis(
    "exposure", "Exposure per record", _exposure_run, reads=ExposureView.from_dict, whole=True))
register_analysis(Analysis(
    "budget", "Reference budget", _budget_run, reads=BudgetView.from_dict, long=True, job=_budget_job,
    job_params=("online",)))
register_analysis(Analysis(
    "audit", "Audited ε", lambda run: audit_view(run.configs, run.summaries, run.canaries, run.cache, progress=run.say),
    reads=AuditView.from_dict, verdict="audit_within_accountant", verdict_of=audit_verdict,
    long=True, job=_audit_job, job_params=("canaries",)))
register_analysis(Analysis(
    "slices", "Slices", lambda run: slices_view(run.configs, run.summaries), reads=SlicesView.from_dict, whole=True))
