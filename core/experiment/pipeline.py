"""The experiment pipeline: data → victim → shadow models → attacks → result (task-generic).

The shadow-model framework of Shokri et al. as laid out in paper 000 §3.2:

1. The data source is split into two disjoint halves, the victim's and the attacker's.
2. The victim trains on ``n_train`` records of its half; the evaluation set is ``n_eval`` members +
   ``n_eval`` non-members of its half (balanced: chance = 50 %).
3. Shadow i trains on ``n_train`` attacker records (its "in" records) like the victim; ``n_eval`` other
   attacker records are its "out" records. Their responses, with known membership, train the attack.
4. At every checkpoint epoch an attack is fitted on shadows at that epoch and evaluated on the victim at
   that epoch (paper 000, Fig. 4).

Trained models are cached under the config's *training* hash, so changing only attack settings reuses them;
the whole result is cached under the full config hash.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Callable

import numpy as np
from safetensors.torch import load as load_safetensors

from core.attacks import registry as attack_registry
from core.attacks.shadow_attacks import (
    Attack,
    AttackOutcome,
    AttackTraining,
    attack_to_bytes,
    fit_attack_sets,
    load_attack_bytes,
    score_attacks,
)
from core.experiment.answer_memo import AnswerMemo
from core.experiment.cache import ArtifactCache, dict_with

#: part of a fitted attack's cache key: raise it whenever fitting changes its numbers, even by rounding
ATTACK_FIT_VERSION = "fit3"
from core.experiment.executor import Executor, TrainingJob, as_tuple
from core.experiment.fidelity import measure_shadow_fidelity
from core.experiment.model_attacks import UndefendedQuery
from core.experiment.results import AttackResult, DPSGDBlock, RunSummary, Utility
from core.experiment.roles import (
    Splits,
    TrainedModel,
    TrainedModels,
    check_memory,
    is_cached,
    load_trained,
    load_user_victim,
    make_splits,
    role_seed,
    seed_everything,
    store_trained,
    train_or_load,
    victim_source,
)
from core.experiment.summary_blocks import DataBlock
from core.foundations.config import ExperimentConfig
from core.foundations.device import default_device, single_thread
from core.foundations.errors import ConfigError, NotCachedError
from core.foundations.machine import machine_info
from core.foundations.progress import ProgressCallback, ProgressTracker
from core.measurement.metrics import resolution, scores_for_json
from core.measurement.responses import Responses
from core.tasks import get_task
from core.tasks.base import Task
from core.training.dpsgd import report as privacy_report


def trained_models(
    cfg: ExperimentConfig,
    progress: ProgressCallback | None = None,
    cache: ArtifactCache | None = None,
    tracker: ProgressTracker | None = None,
    executor: Executor | None = None,
) -> TrainedModels:
    """Train (or load from the cache) the victim and every shadow model of ``cfg``.

    The one way to obtain trained models, so a model is trained once and then reused from the cache. With a
    non-local ``executor`` the missing models train there and come back as bytes that this process caches.
    """
    cfg.validate()
    cache = cache or ArtifactCache()
    cache.check_usable()
    task = get_task(cfg.task)
    if tracker is None:
        tracker = ProgressTracker(training_stages(cfg), progress)
    if executor is not None and executor.name != "local":
        _train_missing_on(executor, cfg, cache, tracker)
    tracker.update("data", 0.0)
    t = time.perf_counter()
    data = task.load(cfg)
    splits = make_splits(cfg, data, cache)
    check_memory(task, cfg, data)
    data_s = time.perf_counter() - t
    tracker.finish("data")

    t = time.perf_counter()
    stage = role_stage(cfg, "victim")
    if cfg.target_weights:  # the user's model: loaded and checked before any shadow trains
        victim = load_user_victim(task, cfg, data, splits, cache, on_progress=lambda f: tracker.update(stage, f))
    else:
        victim = train_or_load(
            task, cfg, data, "victim", splits.victim_members, splits.eval_index, cache,
            measure_utility=(splits.eval_members, splits.victim_nonmembers),
            on_progress=lambda f: tracker.update(stage, f),
        )
    tracker.finish(stage)
    victim_s = time.perf_counter() - t

    t = time.perf_counter()
    shadows = []
    for i in range(cfg.n_shadows):
        stage_i = role_stage(cfg, f"shadow_{i}")
        query = np.concatenate([splits.shadow_in[i][: cfg.n_eval], splits.shadow_out[i]])
        shadows.append(
            train_or_load(
                task, cfg, data, f"shadow_{i}", splits.shadow_in[i], query, cache,
                on_progress=lambda f, s=stage_i: tracker.update(s, f),
            )
        )
        tracker.finish(stage_i)
    shadows_s = time.perf_counter() - t
    timings = {"data_s": data_s, "victim_s": victim_s, "shadows_s": shadows_s}
    return TrainedModels(cfg, task, data, splits, victim, shadows, timings)


def load_models(cfg: ExperimentConfig, cache: ArtifactCache | None = None) -> TrainedModels:
    """The cached victim and shadows of ``cfg``; never trains (nor loads a user's weights anew).

    "Pages never train" is this function's contract: :func:`trained_models` without the training.

    Raises:
        NotCachedError: a model of ``cfg`` is missing from the cache or fails its integrity checks (one line
            naming the run and the model; train it first: Train & attack, or ``python -m core run``).
    """
    cfg.validate()
    cache = cache or ArtifactCache()
    roles = ["victim", *(f"shadow_{i}" for i in range(cfg.n_shadows))]

    def missing(role: str) -> NotCachedError:
        return NotCachedError(f"the {role.replace('_', ' ')} model of {cfg.task} {cfg.arch} ({cfg.preset}, "
                              f"{cfg.config_hash[:6]}) is not cached: train it first (Train & attack)")

    for role in roles:  # the meta entries first: a run never trained is said before its data loads
        if not is_cached(cfg, role, cache):
            raise missing(role)
    task = get_task(cfg.task)
    data = task.load(cfg)
    splits = make_splits(cfg, data, cache)
    loaded: dict[str, TrainedModel] = {}
    for role in roles:
        if role == "victim":
            n_queries = len(splits.eval_index)
        else:  # the records trained_models has shadow i answer: its first n_eval members and its non-members
            i = int(role.split("_")[1])
            n_queries = len(splits.shadow_in[i][: cfg.n_eval]) + len(splits.shadow_out[i])
        trained = load_trained(task, cfg, data, role, cache, n_queries)
        if trained is None:
            raise missing(role)
        loaded[role] = trained
    return TrainedModels(cfg, task, data, splits, loaded["victim"], [loaded[r] for r in roles[1:]], {})


def _train_missing_on(executor: Executor, cfg: ExperimentConfig, cache: ArtifactCache,
                      tracker: ProgressTracker | None = None) -> None:
    """Train the roles of ``cfg`` missing from the cache on ``executor``; cache each model as it arrives (a failed
    job loses none that finished)."""
    cfg.validate()
    task = get_task(cfg.task)
    if tracker is not None:
        tracker.update("data", 0.0)
    data = task.load(cfg)
    splits = make_splits(cfg, data, cache)
    check_memory(task, cfg, data)
    if tracker is not None:
        tracker.finish("data")
    jobs = []
    if cfg.target_weights:  # the user's model is loaded here, not trained: its weights are checked before the jobs
        load_user_victim(task, cfg, data, splits, cache)
    elif load_trained(task, cfg, data, "victim", cache, len(splits.eval_index)) is None:
        jobs.append(TrainingJob(cfg.to_dict(), "victim", as_tuple(splits.victim_members), as_tuple(splits.eval_index),
                                (as_tuple(splits.eval_members), as_tuple(splits.victim_nonmembers))))
    for i in range(cfg.n_shadows):
        query = np.concatenate([splits.shadow_in[i][: cfg.n_eval], splits.shadow_out[i]])
        if load_trained(task, cfg, data, f"shadow_{i}", cache, len(query)) is None:
            jobs.append(TrainingJob(cfg.to_dict(), f"shadow_{i}", as_tuple(splits.shadow_in[i]), as_tuple(query)))

    def store(out) -> None:
        responses = {int(e): Responses.from_bytes(b) for e, b in out.responses.items()}
        meta = out.meta
        trained = TrainedModel(out.role, meta.params, meta.per_epoch, responses, load_safetensors(out.weights),
                               meta.train_s, False, meta.privacy)
        store_trained(cache, cfg, trained)
        if tracker is not None:
            finished.add(role_stage(cfg, out.role))
            tracker.finish_parallel(role_stage(cfg, out.role), running)

    running: dict[str, float] = {}  # the progress of the models training right now, by stage
    finished: set[str] = set()

    def progress(role: str, fraction: float) -> None:
        assert tracker is not None, "progress is reported only to a tracker"  # handed to the executor only with one
        stage = role_stage(cfg, role)
        if stage not in finished and fraction > running.get(stage, -1.0):  # a late report changes nothing
            running[stage] = fraction
            tracker.update_parallel(running)

    executor.map(jobs, store, progress if tracker is not None else None)


def role_stage(cfg: ExperimentConfig, role: str) -> str:
    """The progress stage of training ``role`` (``victim``, ``shadow_i``)."""
    return f"victim ({cfg.arch})" if role == "victim" else f"shadow {int(role.split('_')[1]) + 1}/{cfg.n_shadows}"


def training_stages(cfg: ExperimentConfig) -> list[tuple[str, float]]:
    """Progress stages of :func:`trained_models` with their relative cost."""
    stages = [("data", 0.2), (role_stage(cfg, "victim"), 2.0)]
    return stages + [(role_stage(cfg, f"shadow_{i}"), 1.0) for i in range(cfg.n_shadows)]


def build_attacks(task: Task, cfg: ExperimentConfig) -> list[Attack]:
    """Fresh (unfitted) attacks of ``cfg`` fitted on the shadows' Responses: the registry's
    responses-stage attacks of the task (:mod:`core.attacks.registry`), then the task's own."""
    training = AttackTraining(cfg.attack_hidden, cfg.attack_train_epochs, cfg.attack_lr, seed=cfg.seed)
    return attack_registry.responses_attacks(task.name, training) + task.extra_attacks(cfg, training)


def unavailable_attacks(models: TrainedModels) -> dict[str, str]:
    """{attack: why not} for the responses-stage attacks the run's stored Responses cannot support
    (e.g. Min-K%++ on Responses cached before the per-step spread of log p was kept): read on the
    victim's and the shadows' final answers, so every variant of the run fits the same attacks."""
    task, epoch = models.task.name, models.cfg.epochs
    out: dict[str, str] = {}
    for r in [models.victim.responses[epoch]] + [s.responses[epoch] for s in models.shadows]:
        out.update(attack_registry.unavailable(task, r))
    return out


def fitted_attacks(models: TrainedModels, epoch: int | None = None, cache: ArtifactCache | None = None) -> list[Attack]:
    """Attacks fitted on the shadows' Responses at ``epoch`` (default: the last), cached as bytes; score any
    Responses with :func:`core.attacks.shadow_attacks.score_attacks`."""
    return fitted_attack_variants(models, [AttackVariant(epoch)], cache)[0]


@dataclass(frozen=True)
class AttackVariant:
    """What one set of attacks is fitted on: the shadows' answers at ``epoch`` (None: the last), or
    ``shadow_responses`` in their place (an adaptive attacker's defended answers), cached under ``tag``."""

    epoch: int | None = None
    tag: str = "undefended"
    shadow_responses: Responses | None = None


def fitted_attack_variants(
    models: TrainedModels, variants: list[AttackVariant], cache: ArtifactCache | None = None,
    on_progress: Callable[[float], None] | None = None,
) -> list[list[Attack]]:
    """:func:`fitted_attacks` for several variants at once (checkpoint epochs, defense draws):
    the cached ones load, the missing ones are fitted together (:func:`core.attacks.shadow_attacks.fit_attack_sets`:
    the same learned attack of several variants shares one joint network)."""
    cfg = models.cfg
    cache = cache or ArtifactCache()
    out: list[list[Attack] | None] = []
    missing: list[tuple[int, list[Attack], list[str], Responses]] = []
    skip = set(unavailable_attacks(models))

    def build() -> list[Attack]:
        return [a for a in build_attacks(models.task, cfg) if a.name not in skip]

    for v in variants:
        epoch = cfg.epochs if v.epoch is None else v.epoch
        attacks = build()
        keys = [cache.key("attack", cfg.config_hash, epoch, v.tag, ATTACK_FIT_VERSION, a.name) for a in attacks]
        blobs = [b for b in (cache.get_bytes(k) for k in keys) if b is not None]
        if len(blobs) == len(keys):  # every attack's fit cached
            try:
                out.append([load_attack_bytes(a, b) for a, b in zip(attacks, blobs)])
                continue
            except ValueError as exc:  # checksum passed but the content is not this attack: recompute
                for k in keys:
                    cache.discard(k, f"does not hold a fitted attack ({exc})")
                attacks = build()
        responses = models.shadow_responses(epoch) if v.shadow_responses is None else v.shadow_responses
        missing.append((len(out), attacks, keys, responses))
        out.append(None)
    if missing:
        with single_thread():  # small attack networks: extra threads only contend
            fit_attack_sets([m[1] for m in missing], [m[3] for m in missing], models.shadow_membership, on_progress)
        for position, attacks, keys, _ in missing:
            for attack, key in zip(attacks, keys):
                cache.put_bytes(key, attack_to_bytes(attack))
            out[position] = attacks
    return out  # type: ignore[return-value]


@dataclass
class ExperimentResult:
    """Everything an experiment produced: the typed summary (``run``, typed from birth), its JSON
    (``summary``: ``run.to_dict()``, what the cache stores and the CLI writes) and the in-memory artefacts."""

    run: RunSummary
    models: TrainedModels | None = None
    scores: dict[str, np.ndarray] = field(default_factory=dict)

    @cached_property
    def summary(self) -> dict[str, Any]:
        """The summary's JSON, built once: a caller that adds to it (``run --out``'s online LiRA) adds to this dict."""
        return self.run.to_dict()

    @property
    def victim(self) -> TrainedModel | None:
        return self.models.victim if self.models else None

    @property
    def shadows(self) -> list[TrainedModel]:
        return self.models.shadows if self.models else []

    @property
    def splits(self) -> Splits | None:
        return self.models.splits if self.models else None


def cached_summary(cfg: ExperimentConfig, cache: ArtifactCache | None = None) -> dict[str, Any] | None:
    """The cached JSON summary of ``cfg`` (marked ``cache_hit``), or None if it was never run: :func:`cached_run`'s
    JSON, for the readers that still take the dict."""
    run = cached_run(cfg, cache)
    return None if run is None else run.to_dict()


def cached_run(cfg: ExperimentConfig, cache: ArtifactCache | None = None) -> RunSummary | None:
    """The cached summary of ``cfg``, typed as it leaves the cache and marked ``cache_hit``, or None if it was
    never run."""
    cache = cache or ArtifactCache()
    run = _stored_run(cache, cfg)
    return None if run is None else _marked(run, _loaded(cfg))


def _loaded(cfg: ExperimentConfig) -> dict[str, Any]:
    """What *this* load did (the stored values are the first run's): every model came from the cache."""
    return {"cache_hit": True, "models_from_cache": {"victim": True, "shadows": int(cfg.n_shadows)}}


def _marked(run: RunSummary, marks: dict[str, Any]) -> RunSummary:
    """``run`` with ``marks`` (JSON values of plain fields) written over it, as ``with_json`` does, but without
    re-reading the summary where it already holds every such key."""
    if all(k in run.keys for k in marks):
        return replace(run, **marks)
    return run.with_json(marks)


def _stored_run(cache: ArtifactCache, cfg: ExperimentConfig) -> RunSummary | None:
    """The summary stored under ``cfg``'s config hash, typed, unless it is not the one asked for."""
    return _read_run(cache, cache.key("result", cfg.config_hash), cfg.config_hash, cfg.task, cfg.arch)


def _read_run(cache: ArtifactCache, key: str, config_hash: str, task: str | None = None,
              arch: str | None = None) -> RunSummary | None:
    """The summary under ``key`` read typed once; one that does not read, or whose own ``config_hash`` (task, arch)
    differs from the one asked for, is discarded and never served."""
    read: list[RunSummary] = []  # the typed summary the check read, so that it is parsed once

    def check(summary: Any) -> None:
        _SUMMARY(summary)
        run = RunSummary.from_dict(summary)  # every field a reader types (core.experiment.results)
        if run.config_hash != config_hash:
            raise ValueError(f"holds the result of config {run.config_hash[:12]}…, not {config_hash[:12]}…")
        for name, have, want in (("task", run.task, task), ("arch", run.arch, arch)):
            if want is not None and have != want:
                raise ValueError(f"holds a {have!r} result, not {want!r}")
        read.append(run)

    cache.get_json(key, validate=check)
    return read[0] if read else None


def cached_runs(task: str, arch: str | None = None, cache: ArtifactCache | None = None) -> list[RunSummary]:
    """Summaries of every cached result of ``task`` (and ``arch``), typed, newest first by nothing but key
    order: what a page offers as "trained runs" to analyse or defend."""
    cache = cache or ArtifactCache()
    out = []
    for key in cache.keys(cache.key("result", "")):
        run = _read_run(cache, key, key.rsplit("/", 1)[-1])
        if run is not None and run.task == task and (arch is None or run.arch == arch):
            out.append(run)
    return out


def config_of(run: RunSummary) -> ExperimentConfig:
    """The validated config a summary was produced with (options included)."""
    c = dict(run.config)
    task = get_task(c.pop("task"))
    arch, preset = c.pop("arch"), c.pop("preset")
    options = c.pop("options", {}) or {}
    cfg = task.make_config(arch, preset, {**c, **options})
    if cfg.config_hash != run.config_hash:
        raise ConfigError("the summary's config does not reproduce its hash (written by another version?)")
    return cfg


#: the summary's JSON layout as run_experiment writes it, key by key (a None is written as null, never left out)
_RUN_KEYS = ("task", "arch", "preset", "config", "config_hash", "training_hash", "params", "data", "device", "machine", "utility",
             "attack", "attacks", "attacks_by_epoch", "per_epoch", "timings", "cache_hit", "models_from_cache",
             "cache_corrupted", "victim_source", "shadow_fidelity", "attacks_not_run", "resolution", "privacy",
             "examples", "records")
_UTILITY_KEYS = ("metric", "train", "val")

#: what every cached summary must hold (anything else is discarded and recomputed)
_SUMMARY = dict_with(task=str, arch=str, config=dict, config_hash=str, params=int, utility=dict, attack=dict,
                     attacks=dict, per_epoch=list, timings=dict, records=dict)


def run_experiment(
    cfg: ExperimentConfig,
    progress: ProgressCallback | None = None,
    cache: ArtifactCache | None = None,
    executor: Executor | None = None,
) -> ExperimentResult:
    """Run (or load) the whole pipeline for ``cfg`` and return its result.

    The JSON ``summary`` layout is shared by every task (see docs/architecture.md).
    """
    cfg.validate()
    t0 = time.perf_counter()
    cache = cache or ArtifactCache()
    cache.check_usable()  # a garbage database or a file as the folder: one clear error, now
    corrupted_before = len(cache.corrupted)  # report this run's discarded entries, not older ones
    task = get_task(cfg.task)
    cached = _stored_run(cache, cfg)
    if cached is not None:  # marked as a load (cached_run), with this run's discarded entries and its own seconds
        elapsed = time.perf_counter() - t0
        cached = _marked(cached, {**_loaded(cfg), "cache_corrupted": cache.corrupted[corrupted_before:],
                                  "timings": dict(cached.timings, total_s=elapsed, load_s=elapsed)})
        if progress:
            ProgressTracker([("cached", 1.0)], progress).finish("cached")
        return ExperimentResult(cached)
    cache.check_usable(write=True)  # results must be stored: a read-only cache fails now, not after the work

    tracker = ProgressTracker(training_stages(cfg) + [("attacks", 0.3 * len(cfg.checkpoint_epochs))], progress)
    models = trained_models(cfg, cache=cache, tracker=tracker, executor=executor)
    victim, shadows, splits = models.victim, models.shadows, models.splits

    t, t_cpu = time.perf_counter(), time.process_time()
    attacks_by_epoch: dict[int, dict] = {}
    fitted = fitted_attack_variants(models, [AttackVariant(e) for e in cfg.checkpoint_epochs], cache,
                                    on_progress=lambda f: tracker.update("attacks", 0.9 * f))
    for epoch, attacks in zip(cfg.checkpoint_epochs, fitted):
        with single_thread():
            attacks_by_epoch[epoch] = score_attacks(attacks, victim.responses[epoch], splits.eval_membership)
    # the models-stage attacks at the final epoch, and how closely the shadows track the victim
    t_reference = time.perf_counter()
    models.memo = AnswerMemo()
    try:
        model_outcomes, model_timings, not_run = model_attack_outcomes(models, cache)
        attacks_by_epoch[cfg.epochs].update(model_outcomes)
        fidelity = measure_shadow_fidelity(models)
    finally:
        models.memo = None  # answers and models held for this stage only
    # LiRA, RMIA and the fidelity; the other models-stage attacks have their own timings
    reference_s = time.perf_counter() - t_reference - sum(v for k, v in model_timings.items() if not k.endswith("_fit_s"))
    tracker.finish("attacks")
    attack_s, attack_cpu_s = time.perf_counter() - t, time.process_time() - t_cpu

    final = attacks_by_epoch[cfg.epochs]
    primary = task.primary_attack()
    per_epoch = []
    for row in victim.per_epoch:  # the task's row, then the primary attack's numbers at that epoch (null where none)
        outcome = attacks_by_epoch.get(row.epoch, {}).get(primary)
        per_epoch.append(row.with_json({"attack_accuracy": outcome.result.accuracy if outcome else None,
                                        "attack_auc": outcome.result.auc if outcome else None}))
    last = victim.per_epoch[-1]
    # typed at birth: a key or value this version cannot read fails here, not at each cache read
    run = RunSummary(
        task=cfg.task, arch=cfg.arch, preset=cfg.preset, config=cfg.to_dict(), config_hash=cfg.config_hash,
        training_hash=cfg.training_hash, params=victim.params,
        data=DataBlock.from_dict({"description": models.data.description, **models.data.info}, "summary.data"),
        device=str(default_device()),
        machine=machine_info(default_device()),
        utility=Utility(metric=task.utility_metric, train=last.utility_train, val=last.utility_val,
                        keys=_UTILITY_KEYS),
        attack=replace(AttackResult.from_dict(final[primary].result.to_dict(include_roc=False), "summary.attack"),
                       name=primary),
        attacks={name: AttackResult.from_dict(o.result.to_dict(), f"summary.attacks[{name!r}]")
                 for name, o in final.items()},
        attacks_by_epoch={str(e): {name: AttackResult.from_dict(o.result.to_dict(include_roc=False),
                                                                f"summary.attacks_by_epoch[{e!r}]")
                                   for name, o in res.items()} for e, res in attacks_by_epoch.items()},
        per_epoch=tuple(per_epoch),
        timings={
            **models.timings,
            "attack_s": attack_s,
            "attack_cpu_s": attack_cpu_s,  # this process's CPU seconds in it (wall times move with the load)
            "total_s": time.perf_counter() - t0,
            "victim_trained_s": victim.train_s,
            "shadows_trained_s": sum(s.train_s for s in shadows),
            "reference_attacks_s": reference_s,
            **model_timings,
        },
        cache_hit=False,
        models_from_cache={"victim": victim.cache_hit, "shadows": sum(s.cache_hit for s in shadows)},
        cache_corrupted=cache.corrupted[corrupted_before:],
        victim_source={**victim_source(cfg), "n_members": int(len(splits.victim_members))},
        shadow_fidelity=fidelity,
        # every registered attack that did not run on this run, and why (the task, or the run's shape)
        attacks_not_run={**not_run, **unavailable_attacks(models)},
        # one record of the evaluation set = how much TPR / FPR / accuracy (read before comparing numbers)
        resolution=resolution(int(splits.eval_membership.sum()), int((~splits.eval_membership).sum())),
        privacy=_privacy(cfg, victim),
        examples=_examples(models),
        records=record_signals(victim.responses[cfg.epochs], splits.eval_membership, final),
        keys=_RUN_KEYS)
    RunSummary.from_dict(run.to_dict())  # every value checked as a reader will check it (the cross-checks too)
    result = ExperimentResult(run, models, {n: o.scores for n, o in final.items()})
    cache.put_json(cache.key("result", cfg.config_hash), result.summary, allow_nan=False)
    return result


def model_attack_outcomes(models: TrainedModels, cache: ArtifactCache | None = None
                          ) -> tuple[dict[str, AttackOutcome], dict[str, float], dict[str, str]]:
    """The registry's models-stage attacks of the task fitted on ``models`` and scored on the
    undefended victim: (outcomes by result name, ``<attack>_fit_s`` and ``<attack>_s`` seconds, and
    ``{attack: why it did not run}`` for every registered attack that did not)."""
    task = models.task.name
    query = UndefendedQuery(models, cache)
    outcomes: dict[str, AttackOutcome] = {}
    timings: dict[str, float] = {}
    not_run = {e.name: why for e in attack_registry.entries() if (why := e.why_not(task)) is not None}
    for entry in attack_registry.entries(task, "models"):
        t = time.perf_counter()
        attack = entry.factory()
        if not attack.fit(models, cache):
            not_run[entry.name] = attack.skipped
            continue
        outcomes.update(attack.outcomes(query))
        if entry.name != "reference":  # LiRA/RMIA's cost is in reference_attacks_s
            timings[f"{entry.name}_fit_s"] = attack.fit_s
            timings[f"{entry.name}_s"] = time.perf_counter() - t
    return outcomes, timings, not_run


def record_signals(responses: Responses, membership: np.ndarray, outcomes: dict[str, AttackOutcome]) -> dict[str, Any]:
    """Per-record signals of an evaluation set (for the "why" plots): membership, APE (paper 000
    eq. 3), mean cross-entropy to the reference, every attack's score, and the decision boundary
    of each threshold attack in its signal's units (``{"signal", "threshold", "member_if"}``)."""

    def significant(a: np.ndarray) -> list[float]:
        # significant digits, not decimals: a confident answer's APE or cross-entropy is 1e-7 … 1e-9
        return [float(f"{v:.6g}") for v in np.asarray(a, np.float64)]

    return {
        "membership": [bool(v) for v in membership],
        "ape": significant(responses.ape),
        "cross_entropy": significant(responses.mean_cross_entropy),
        "length": [int(v) for v in responses.lengths],
        "scores": {name: scores_for_json(o.scores) for name, o in outcomes.items()},  # exact, not rounded
        "boundaries": {name: o.result.boundary for name, o in outcomes.items() if o.result.boundary is not None},
    }


def _privacy(cfg: ExperimentConfig, victim: TrainedModel) -> DPSGDBlock | None:
    """DP-SGD's ``dpsgd`` block of the victim (σ, C, q, steps, δ, ε by RDP/PRV/GDP), None if not private."""
    if victim.privacy is None:
        return None
    return DPSGDBlock.from_dict(privacy_report(victim.privacy, cfg.dp_delta), "summary.privacy")


def _examples(models: TrainedModels) -> dict[str, Any]:
    """The task's showcase of the final victim on a few member and non-member records."""
    seed_everything(role_seed(models.cfg, "victim"))
    return models.task.examples(models.cfg, models.model("victim"), models.data, models.splits.eval_members,
                                models.splits.victim_nonmembers)
