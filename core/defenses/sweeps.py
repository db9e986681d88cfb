"""Training-time defenses over a grid of values: DP-SGD's σ (or a target ε), L2's λ, PPO's clip ε.

These change how victims and shadows train, so every value is its own experiment: a *point* is the base config
with one field set (:func:`point_config`), run and cached by :func:`core.experiment.pipeline.run_experiment`. The
shadows train with the same config, so the attacker knows the recipe, DP settings included (the adaptive attacker).

A sweep's JSON has the shape of ``python -m core defend``: a ``baseline`` (the undefended run) and ``points``
with ``attack``, ``attacks``, ``utility``, ``utility_loss`` (paper 000 Def. 4), ``epsilon`` and ``delta``; DP-SGD
points add a ``dpsgd`` block. The mechanisms are the training-time defenses of :mod:`core.defenses.registry`:

* ``dpsgd`` — DP-SGD (paper 000 eq. 7–8), σ = value, or with ``target_epsilon`` the σ reaching ε = value at δ.
* ``l2`` — the L2 penalty λ = value on weight matrices (paper 000 Fig. 7); undefended: λ = 0.
* ``clip`` — navigation only: PPO's clip ε = value (paper 000 Fig. 7); undefended: the preset's ε.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from core.defenses.defense_results import DefenseRun
from core.defenses.registry import get_training
from core.experiment.cache import ArtifactCache
from core.experiment.fidelity import chance_utility
from core.experiment.pipeline import run_experiment
from core.experiment.results import AttackResult, DefendedPoint, DefenseBaseline, RunSummary
from core.foundations.config import ExperimentConfig, config_changes
from core.foundations.errors import ConfigError
from core.foundations.progress import ProgressCallback
from core.measurement.metrics import EpsilonBound, empirical_epsilon, utility_loss
from core.measurement.stats import mean_interval
from core.measurement.studies import DPSGD_RECIPE, DPSGD_RECIPE_SOURCE
from core.training.dpsgd import EpsilonOutOfReachError, epsilon


def value_name(mechanism: str, target_epsilon: bool = False) -> str:
    """How the swept value is written: σ, ε, λ or clip ε (the defense's parameter symbol)."""
    return get_training(mechanism).parameter_of(target_epsilon).symbol


def check_sweep(cfg: ExperimentConfig, mechanism: str, values: list[float], target_epsilon: bool = False) -> None:
    """Raise :class:`ConfigError` (one line) unless every value is valid for ``mechanism`` on
    ``cfg``'s task: in the defense's parameter range (σ ≥ 0, ε > 0, λ ≥ 0, clip ε in (0, 1)),
    the defense available for the task (``clip``: navigation), ``target_epsilon`` only where
    the defense has a target parameter (DP-SGD). Every point's config is validated too."""
    defense = get_training(mechanism)
    if cfg.target_weights:  # every point retrains the victim, and a user's model is loaded, not trained here
        raise ConfigError(f"the {mechanism} defense retrains the victim at every value; with target_weights the victim "
                          f"is your trained model: retrain it yourself and audit each model, or use the after-training "
                          f"defenses (defend --mechanism dirichlet|gpm)")
    if not defense.applies_to(cfg.task):
        raise ConfigError(f"the {mechanism} defense ({defense.label}) exists for {', '.join(defense.tasks or ())} "
                          f"only, not {cfg.task}")
    param = defense.parameter_of(target_epsilon)
    if not values:
        raise ConfigError("no values to sweep")
    for v in values:
        param.check(v)
        point_config(cfg, mechanism, v, target_epsilon)  # the fields' own ranges (one line each)


def point_config(cfg: ExperimentConfig, mechanism: str, value: float, target_epsilon: bool = False,
                 max_grad_norm: float | None = None, delta: float | None = None) -> ExperimentConfig:
    """The validated config of one point: ``cfg`` with the defense's fields set for ``value``
    (DP-SGD: also C and δ when given; otherwise ``cfg``'s)."""
    defense = get_training(mechanism)
    defense.parameter_of(target_epsilon)
    return cfg.with_updates(defense.updates(float(value), target_epsilon, max_grad_norm, delta)).validate()


def baseline_config(cfg: ExperimentConfig, mechanism: str) -> ExperimentConfig:
    """The undefended run the utility loss is measured against: DP off (DP-SGD), λ = 0 (L2), or
    ``cfg`` as it is (clip: its clip ε is the reference)."""
    updates = get_training(mechanism).baseline_updates()
    return cfg.with_updates(updates).validate() if updates else cfg


def sweep_configs(cfg: ExperimentConfig, mechanism: str, values: list[float], target_epsilon: bool = False,
                  max_grad_norm: float | None = None, delta: float | None = None) -> list[ExperimentConfig]:
    """The points' configs, in the order of ``values``."""
    return [point_config(cfg, mechanism, v, target_epsilon, max_grad_norm, delta) for v in values]


def sweep_runs(bases: dict[str, ExperimentConfig], mechanism: str, values: list[float], target_epsilon: bool = False,
               max_grad_norm: float | None = None, delta: float | None = None
               ) -> dict[str, list[tuple[float | None, ExperimentConfig]]]:
    """Every run of a sweep per architecture: ``(None, baseline)`` first, then ``(value, point config)``
    for the sorted distinct ``values``; every value is checked (:func:`check_sweep`) for every
    architecture before anything is returned (the Training defenses page's plan)."""
    values = sorted(set(float(v) for v in values))
    for base in bases.values():
        check_sweep(base, mechanism, values, target_epsilon)
    return {arch: [(None, baseline_config(base, mechanism))]
            + list(zip(values, sweep_configs(base, mechanism, values, target_epsilon, max_grad_norm, delta)))
            for arch, base in bases.items()}


#: a sweep's curves: (baselines, points) per architecture (:func:`collect_points`)
SweepCurves = tuple[dict[str, DefenseBaseline], dict[str, list[DefendedPoint]]]
#: one repeat's runs of a sweep: the typed summary per (architecture, value; None: the baseline), None where not run
SweepSummaries = dict[tuple[str, float | None], RunSummary | None]


def collect_points(runs: dict[str, list[tuple[float | None, ExperimentConfig]]],
                   summaries: SweepSummaries, mechanism: str,
                   target_epsilon: bool = False) -> SweepCurves:
    """(baselines, points) per architecture from the runs' summaries (``None``: not trained yet);
    an architecture whose baseline is missing is left out, a missing point is skipped."""
    baselines: dict[str, DefenseBaseline] = {}
    points: dict[str, list[DefendedPoint]] = {}
    for arch, rs in runs.items():
        base_summary = summaries.get((arch, None))
        if base_summary is None:
            continue
        baselines[arch] = baseline_of(base_summary)
        points[arch] = []
        for v, _ in rs[1:]:
            if v is None:  # sweep_runs: the baseline first (value None), then one run per value
                raise ValueError(f"{arch}: a sweep run after the baseline without a value")
            run = summaries.get((arch, v))
            if run is not None:
                points[arch].append(point_of(run, baselines[arch], mechanism, v, target_epsilon))
    return baselines, points


#: the metrics of a sweep point that get an interval over repeats (the pages' bands)
SWEEP_BANDED = ("attack_accuracy", "attack_auc", "utility", "utility_loss")


def _sweep_metrics(point: DefendedPoint) -> dict[str, float | None]:
    return {"attack_accuracy": point.attack.accuracy, "attack_auc": point.attack.auc, "utility": point.utility,
            "utility_loss": point.utility_loss}


def collect_points_repeats(runs: dict[str, list[tuple[float | None, ExperimentConfig]]],
                           summaries: Sequence[SweepSummaries],
                           mechanism: str, target_epsilon: bool = False) -> SweepCurves:
    """:func:`collect_points` over repeats (``summaries[r]``: repeat r's runs). Repeat 0's points, where N ≥ 2
    repeats have the point and its baseline cached, with ``intervals`` (per metric of :data:`SWEEP_BANDED`, the
    mean and 95 % Student-t interval; each repeat's utility loss against its own baseline) and ``band``."""
    baselines, points = collect_points(runs, summaries[0], mechanism, target_epsilon)
    for arch, pts in points.items():
        for i, p in enumerate(pts):
            per_repeat = []
            for s in summaries:
                base, run = s.get((arch, None)), s.get((arch, p.value))
                if base is not None and run is not None:
                    per_repeat.append(_sweep_metrics(point_of(run, baseline_of(base), mechanism, p.value, target_epsilon)))
            if len(per_repeat) < 2:
                continue
            intervals = {}
            for name in SWEEP_BANDED:
                values = [v for m in per_repeat if (v := m[name]) is not None]
                if len(values) == len(per_repeat):  # every repeat has it
                    e = mean_interval([float(v) for v in values])
                    intervals[name] = dataclasses.replace(e, method=f"t over {len(values)} repeats").to_dict()
            pts[i] = p.with_json({"intervals": intervals,
                                  "band": {"repeats": len(per_repeat), "draws": 1, "over": "repeats"}})
    return baselines, points


def accuracy_bound_curve(max_epsilon: float, delta: float, n: int = 61) -> list[tuple[float, float]]:
    """(ε, :func:`accuracy_bound`) at ``n`` evenly spaced ε in [0, max_epsilon] (the pages' grey curve)."""
    return [(e, accuracy_bound(e, delta)) for e in (max_epsilon * k / (n - 1) for k in range(n))]


def _lower_bound(run: RunSummary) -> EpsilonBound | None:
    """The empirical ε lower bound (Jagielski et al.) of the primary attack's scores."""
    records = run.per_record
    scores = records.scores_of(run.primary)
    if scores is None or not records.membership:
        return None
    return empirical_epsilon(np.asarray(scores, np.float64), np.asarray(records.membership, bool))


def _without_roc(result: AttackResult) -> dict[str, Any]:
    return {k: v for k, v in result.to_dict().items() if k not in ("roc_fpr", "roc_tpr")}


def baseline_of(run: RunSummary) -> DefenseBaseline:
    """The ``baseline`` block from the undefended run's summary (the defenses' layout), with
    ``utility_chance``: the utility of a model that learned nothing (:func:`core.experiment.fidelity.chance_utility`)."""
    return DefenseBaseline.from_dict({
        "attack": _without_roc(run.attack),
        "attacks": {n: _without_roc(a) for n, a in run.attacks.items()},
        "utility": run.utility.val, "utility_train": run.utility.train,
        "utility_metric": run.utility.metric, "utility_chance": chance_utility(run),
        "epsilon_lower_bound": _lower_bound(run), "config_hash": run.config_hash,
    })


def point_of(run: RunSummary, baseline: DefenseBaseline, mechanism: str, value: float,
             target_epsilon: bool = False, changes: dict[str, Any] | None = None) -> DefendedPoint:
    """One point from its run's summary and the baseline block (see the module docstring); ``changes``: what the
    point's run changed from the baseline's (:func:`sweep`'s points)."""
    point: dict[str, Any] = {
        "value": float(value), "mechanism": mechanism, "value_name": value_name(mechanism, target_epsilon),
        "config_hash": run.config_hash, "training_hash": run.training_hash,
        "attack": _without_roc(run.attack),
        "attacks": {n: _without_roc(a) for n, a in run.attacks.items()}, "adaptive_attack": None,
        "utility": run.utility.val, "utility_train": run.utility.train,
        "epsilon_lower_bound": _lower_bound(run),
        "timings": {"total_s": run.timings.get("total_s"),
                    "trained_s": run.timing("victim_trained_s") + run.timing("shadows_trained_s")},
        "cache_hit": bool(run.cache_hit),
        "utility_loss": utility_loss(run.utility.val, baseline.utility),
        "utility_loss_train": utility_loss(run.utility.train, baseline.utility_train),
    }
    # the registry's guarantee of the run (a training defense is one file: core.defenses.registry)
    point.update(get_training(mechanism).guarantee(run))
    if changes is not None:
        point.update(changes=changes)
    return DefendedPoint.from_dict(point)


def sweep(cfg: ExperimentConfig, mechanism: str, values: list[float], *, target_epsilon: bool = False,
          progress: ProgressCallback | None = None, on_point: Callable[[int, int, DefendedPoint], None] | None = None,
          cache: ArtifactCache | None = None) -> DefenseRun:
    """Run (or load) the baseline and every point; the CLI's ``defend --mechanism dpsgd|l2|clip|…`` JSON.

    ``progress`` receives each run's events with the stage prefixed by the point and the
    overall fraction spread over the runs; ``on_point(i, n, point)`` after each point.
    """
    check_sweep(cfg, mechanism, values, target_epsilon)
    cache = cache or ArtifactCache()
    base_cfg = baseline_config(cfg, mechanism)
    configs = sweep_configs(cfg, mechanism, values, target_epsilon)
    runs = [("baseline", base_cfg)] + [(f"{value_name(mechanism, target_epsilon)} = {v:g}", c)
                                       for v, c in zip(values, configs)]

    def run(i: int, label: str, c: ExperimentConfig) -> RunSummary:
        def relay(ev) -> None:
            if progress is not None:
                progress(dataclasses.replace(ev, stage=f"{label} ({i + 1}/{len(runs)}): {ev.stage}",
                                             overall_fraction=(i + ev.overall_fraction) / len(runs)))
        return run_experiment(c, progress=relay, cache=cache).run

    baseline = baseline_of(run(0, *runs[0]))
    points: list[DefendedPoint] = []
    unreachable: list[dict[str, Any]] = []
    for i, (v, c) in enumerate(zip(values, configs)):
        try:
            summary = run(i + 1, *runs[i + 1])
        except EpsilonOutOfReachError as exc:
            # a target ε out of reach is known only once the run's sampling plan is (in training);
            # the other values are independent runs: keep them, and say which value was not computed
            unreachable.append({"value": float(v), "error": " ".join(str(exc).split())})
            continue
        # with what this point's run changed from the baseline's
        points.append(point_of(summary, baseline, mechanism, v, target_epsilon, changes=config_changes(base_cfg, c)))
        if on_point is not None:
            on_point(i + 1, len(values), points[-1])
    spec = {"mechanism": mechanism, "values": [float(v) for v in values], "target_epsilon": target_epsilon,
            "value_name": value_name(mechanism, target_epsilon)}
    spec.update(get_training(mechanism).spec_extra(configs[0]))
    return DefenseRun.from_dict({
        "task": cfg.task, "arch": cfg.arch, "preset": cfg.preset, "mechanism": mechanism,
        "attacker": "adaptive", "attacker_note": "the shadows train with the victim's recipe, this defense included",
        "config_hash": base_cfg.config_hash, "training_hash": base_cfg.training_hash, "spec": spec,
        "sensitivity": None, "baseline": baseline.to_dict(), "points": [p.to_dict() for p in points],
        **({"unreachable": unreachable} if unreachable else {})})


@dataclasses.dataclass(frozen=True)
class RecipeEpsilon:
    """ε of the study's DP-SGD recipe at one σ (:func:`study_recipe_epsilons`): q, steps, δ, ε by RDP and PRV
    (None where infinite), and who computed it."""

    sigma: float
    sample_rate: float
    steps: int
    delta: float
    epsilon_rdp: float | None
    epsilon_prv: float | None
    computed_by: str


def study_recipe_epsilons(task: str, sigmas: list[float]) -> list[RecipeEpsilon]:
    """ε at each σ of the study's DP-SGD recipe (paper 000 Table 2), **computed by us** with Opacus' RDP and PRV
    accountants under Poisson sampling at q = batch/|D| (the paper prints no ε per σ); ``computed_by`` says so."""
    row = DPSGD_RECIPE[task]
    n = int(row.samples)
    q = row.batch / n
    steps = int(round(row.epochs / q))
    out = []
    for s in sigmas:
        hist = [[float(s), q, steps]]
        rdp, prv = epsilon(hist, row.delta, "rdp"), epsilon(hist, row.delta, "prv")
        out.append(RecipeEpsilon(float(s), q, steps, row.delta, rdp if math.isfinite(rdp) else None,
                                 prv if math.isfinite(prv) else None,
                                 "us (Opacus accountants) for the recipe of " + DPSGD_RECIPE_SOURCE.cite()))
    return out


def accuracy_bound(epsilon: float, delta: float) -> float:
    """The highest balanced accuracy any membership attack can reach on an (ε, δ)-DP learner.

    DP bounds every test's error rates (Kairouz, Oh & Viswanath 2015): TPR ≤ e^ε·FPR + δ and
    1 − FPR ≤ e^ε·(1 − TPR) + δ. With both tight, FPR = (1 − δ)/(e^ε + 1), so the accuracy
    (1 + TPR − FPR)/2 is at most ½·(1 + δ + (1 − δ)·(e^ε − 1)/(e^ε + 1)) — e^ε/(1 + e^ε) at δ = 0,
    the accuracy form of Yeom et al.'s advantage bound (paper 002).
    """
    return 0.5 * (1.0 + delta + (1.0 - delta) * math.tanh(epsilon / 2.0))


# ---------------------------------------------------------------------------- how long a sweep takes
def run_cost_s(summary: RunSummary) -> float | None:
    """Seconds that computing ``summary`` from nothing took where it ran: data, the models' recorded training
    times and the attacks. None when the summary does not carry them."""
    t = summary.timings
    given = [t.get("victim_trained_s"), t.get("shadows_trained_s"), t.get("attack_s")]
    parts = [p for p in given if isinstance(p, (int, float)) and math.isfinite(p)]
    if len(parts) < len(given):
        return None
    data = t.get("data_s")
    return float(sum(parts) + (data if isinstance(data, (int, float)) and math.isfinite(data) else 0.0))


@dataclasses.dataclass(frozen=True)
class SweepEstimate:
    """The expected seconds of a sweep's missing runs, from runs measured on this machine.

    ``seconds``: the sum over the missing runs (one worker runs them one after another); None when
    no run of an architecture was measured. ``lower_bound``: some runs were estimated from the
    undefended run only, and DP-SGD's per-sample gradients make a point slower than that.
    ``basis``: one line saying what was measured."""

    seconds: float | None
    lower_bound: bool
    basis: str


def expected_run_s(arch: str, is_baseline: bool, points: Mapping[str, Sequence[float | None]],
                   baseline: Mapping[str, float | None], mechanism: str) -> tuple[float | None, bool]:
    """Expected seconds of one missing run of ``arch`` and whether that is a lower bound.

    A point: the mean measured cost of this sweep's points of ``arch`` that already ran (same
    recipe kind), else its undefended run's cost (a lower bound under DP-SGD), else None. The
    undefended run itself: the cheapest measured point (DP-SGD points cost more than it, so that is
    no lower bound; L2 and clip points cost about the same)."""
    done = [c for c in points.get(arch, []) if c is not None]
    if is_baseline:
        return (float(min(done)), False) if done else (None, False)
    if done:
        return float(np.mean(done)), False
    base = baseline.get(arch)
    if base is not None:
        return float(base), mechanism == "dpsgd"
    return None, False


def expected_sweep(missing: list[tuple[str, bool]], points: Mapping[str, Sequence[float | None]],
                   baseline: Mapping[str, float | None], mechanism: str) -> SweepEstimate:
    """The expected time of a sweep's missing runs (``missing``: (arch, is the undefended run) per
    run) from the measured costs (:func:`run_cost_s`) of the sweep's points already cached
    (``points`` per arch) and of the undefended runs (``baseline`` per arch)."""
    total, lower, unknown = 0.0, False, []
    for arch, is_baseline in missing:
        s, lb = expected_run_s(arch, is_baseline, points, baseline, mechanism)
        if s is None:
            unknown.append(arch)
            continue
        total += s
        lower = lower or lb
    if unknown:
        return SweepEstimate(None, False, f"no run of this size was measured on this machine yet for "
                                          f"{', '.join(sorted(set(unknown)))}")
    measured = sum(len([c for c in v if c is not None]) for v in points.values())
    basis = (f"from {measured} point{'s' if measured != 1 else ''} of this sweep measured on this machine"
             if measured else "from the undefended runs measured on this machine")
    if lower:
        basis += " (DP-SGD's per-sample gradients make a point slower than an undefended run: a lower bound)"
    return SweepEstimate(total, lower, basis)
