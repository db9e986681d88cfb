"""The experiment pipeline: data → victim → shadow models → attacks → result (task-generic).

Follows the shadow-model framework of Shokri et al. as laid out in paper 000 §3.2:

1. The task's data source is split into two disjoint halves, the victim's and the attacker's.
2. The victim trains on ``n_train`` records of its half (members); ``n_eval`` further records
   of its half are non-members. The evaluation set is ``n_eval`` members + ``n_eval``
   non-members (balanced: chance = 50 %).
3. Shadow model i trains on ``n_train`` records drawn from the attacker's half (its "in"
   records) with the victim's specification; ``n_eval`` other attacker records are its "out"
   records. Responses of all shadows on their in/out records, with known membership, train the
   attack.
4. At every checkpoint epoch a separate attack is fitted on shadows taken at that same epoch and
   evaluated on the victim at that epoch (paper 000, Fig. 4).

Trained models (weights, learning curves, Responses at each checkpoint) are cached under the
config's *training* hash, so changing only attack settings re-uses them; the whole result is
cached under the full config hash.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .attacks import AttackTraining, run_attacks, standard_attacks
from .cache import ArtifactCache
from .config import ExperimentConfig
from .device import default_device, single_thread
from .errors import ConfigError, ResourceLimitError
from .progress import ProgressCallback, ProgressTracker
from .responses import Responses
from .tasks import get_task
from .tasks.base import Task, TaskData


@dataclass
class Splits:
    """Record indices of one experiment (all index the task's data source)."""

    victim_members: np.ndarray
    victim_nonmembers: np.ndarray
    shadow_in: list[np.ndarray]
    shadow_out: list[np.ndarray]

    @property
    def eval_members(self) -> np.ndarray:
        return self.victim_members[: len(self.victim_nonmembers)]

    @property
    def eval_index(self) -> np.ndarray:
        """Victim's balanced evaluation set: members first, then non-members."""
        return np.concatenate([self.eval_members, self.victim_nonmembers])

    @property
    def eval_membership(self) -> np.ndarray:
        n = len(self.victim_nonmembers)
        return np.r_[np.ones(n, bool), np.zeros(n, bool)]


def make_splits(cfg: ExperimentConfig, data: TaskData) -> Splits:
    """Seeded member/non-member splits of the victim's and attacker's halves."""
    need = cfg.n_train + cfg.n_eval
    for name, pool in (("victim", data.victim_pool), ("attacker", data.attacker_pool)):
        if len(pool) < need:
            raise ConfigError(
                f"n_train + n_eval = {need} records needed, but the {name}'s half of {data.description!r} "
                f"has only {len(pool)}; lower n_train or n_eval"
            )
    if cfg.n_eval > cfg.n_train:
        raise ConfigError(f"n_eval ({cfg.n_eval}) must not exceed n_train ({cfg.n_train}) for a balanced evaluation set")
    rng = np.random.default_rng(cfg.seed)
    victim = rng.permutation(data.victim_pool)
    shadow_in, shadow_out = [], []
    for i in range(cfg.n_shadows):
        perm = np.random.default_rng([cfg.seed, 1000 + i]).permutation(data.attacker_pool)
        shadow_in.append(perm[: cfg.n_train])
        shadow_out.append(perm[cfg.n_train : need])
    return Splits(victim[: cfg.n_train], victim[cfg.n_train : need], shadow_in, shadow_out)


def available_memory() -> int:
    """Bytes of memory available to a training run: free GPU memory on a GPU, else free RAM."""
    device = default_device()
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def check_memory(task: Task, cfg: ExperimentConfig, data: TaskData) -> None:
    """Raise :class:`ResourceLimitError` when a training run would not fit in memory."""
    need = task.memory_estimate(cfg, data)
    have = available_memory()
    if need > 0.8 * have:
        raise ResourceLimitError(
            f"this config needs about {need / 2**30:.1f} GiB to train but only {have / 2**30:.1f} GiB is available "
            f"on {default_device()}; lower batch_size, n_train or the model size"
        )


@dataclass
class TrainedModel:
    """A trained victim or shadow with what the attacks and the UI need."""

    role: str
    params: int
    per_epoch: list[dict[str, Any]]
    responses: dict[int, Responses]
    weights: dict[str, torch.Tensor]
    train_s: float
    cache_hit: bool


def seed_everything(seed: int) -> None:
    import random

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _role_seed(cfg: ExperimentConfig, role: str) -> int:
    offset = 0 if role == "victim" else 1 + int(role.split("_")[1])
    return cfg.seed * 7919 + offset * 104729


def train_or_load(
    task: Task,
    cfg: ExperimentConfig,
    data: TaskData,
    role: str,
    train_index: np.ndarray,
    query_index: np.ndarray,
    cache: ArtifactCache,
    measure_utility: tuple[np.ndarray, np.ndarray] | None = None,
    on_progress=None,
) -> TrainedModel:
    """Train ``role`` (``victim`` or ``shadow_<i>``) on ``train_index`` or load it from the cache.

    At every checkpoint epoch the model answers ``query_index`` (Responses are kept) and its
    weights are snapshotted; with ``measure_utility = (train_idx, val_idx)`` the utility on both
    is measured after every epoch.
    """
    digest = cfg.training_hash
    meta_key = cache.key("model", digest, role, "meta")
    meta = cache.get_json(meta_key)
    if meta is not None:
        responses = {e: cache.get_responses(cache.key("model", digest, role, "responses", e)) for e in cfg.checkpoint_epochs}
        weights = cache.get_tensors(cache.key("model", digest, role, "weights"))
        if weights is not None and all(r is not None for r in responses.values()):
            if on_progress:
                on_progress(1.0)
            return TrainedModel(role, meta["params"], meta["per_epoch"], responses, weights, meta["train_s"], True)

    seed_everything(_role_seed(cfg, role))
    model = task.build_model(cfg, data).to(default_device())
    params = task.param_count(model)
    per_epoch: list[dict[str, Any]] = []
    responses: dict[int, Responses] = {}
    checkpoints = set(cfg.checkpoint_epochs)
    start = time.perf_counter()

    def on_epoch(epoch: int, trained: torch.nn.Module) -> None:
        row: dict[str, Any] = {"epoch": epoch}
        if measure_utility is not None:
            trained.eval()
            row.update(task.epoch_metrics(cfg, trained, data, measure_utility[0], measure_utility[1]))
        if epoch in checkpoints:
            trained.eval()
            responses[epoch] = task.respond(cfg, trained, data, query_index)
        trained.train()
        per_epoch.append(row)

    task.train(cfg, model, data, train_index, on_epoch, on_progress or (lambda f: None))
    train_s = time.perf_counter() - start
    missing = checkpoints - set(responses)
    if missing:
        raise RuntimeError(f"task {task.name} did not report checkpoint epochs {sorted(missing)}")
    weights = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    for e, r in responses.items():
        cache.put_responses(cache.key("model", digest, role, "responses", e), r)
    cache.put_tensors(cache.key("model", digest, role, "weights"), weights)
    cache.put_json(meta_key, {"params": params, "per_epoch": per_epoch, "train_s": train_s})
    return TrainedModel(role, params, per_epoch, responses, weights, train_s, False)


@dataclass
class ExperimentResult:
    """Everything an experiment produced: the JSON summary plus in-memory artefacts."""

    summary: dict[str, Any]
    victim: TrainedModel | None = None
    shadows: list[TrainedModel] = field(default_factory=list)
    splits: Splits | None = None
    scores: dict[str, np.ndarray] = field(default_factory=dict)


def cached_summary(cfg: ExperimentConfig, cache: ArtifactCache | None = None) -> dict[str, Any] | None:
    """The cached JSON summary of ``cfg`` (marked ``cache_hit``), or None if it was never run."""
    cache = cache or ArtifactCache()
    summary = cache.get_json(cache.key("result", cfg.config_hash))
    if summary is not None:
        summary["cache_hit"] = True
    return summary


def run_experiment(
    cfg: ExperimentConfig,
    progress: ProgressCallback | None = None,
    cache: ArtifactCache | None = None,
) -> ExperimentResult:
    """Run (or load) the whole pipeline for ``cfg`` and return its result.

    The JSON ``summary`` layout is shared by every task (see docs/architecture.md).
    """
    cfg.validate()
    t0 = time.perf_counter()
    cache = cache or ArtifactCache()
    task = get_task(cfg.task)
    cached = cached_summary(cfg, cache)
    if cached is not None:
        cached["timings"] = dict(cached["timings"], total_s=time.perf_counter() - t0, load_s=time.perf_counter() - t0)
        if progress:
            ProgressTracker([("cached", 1.0)], progress).finish("cached")
        return ExperimentResult(cached)

    stages = [("data", 0.2), (f"victim ({cfg.arch})", 2.0)]
    stages += [(f"shadow {i + 1}/{cfg.n_shadows}", 1.0) for i in range(cfg.n_shadows)]
    stages += [("attacks", 0.3 * len(cfg.checkpoint_epochs))]
    tracker = ProgressTracker(stages, progress)

    tracker.update("data", 0.0)
    t = time.perf_counter()
    data = task.load(cfg)
    splits = make_splits(cfg, data)
    check_memory(task, cfg, data)
    data_s = time.perf_counter() - t
    tracker.finish("data")

    t = time.perf_counter()
    stage = f"victim ({cfg.arch})"
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
        stage_i = f"shadow {i + 1}/{cfg.n_shadows}"
        query = np.concatenate([splits.shadow_in[i][: cfg.n_eval], splits.shadow_out[i]])
        shadows.append(
            train_or_load(
                task, cfg, data, f"shadow_{i}", splits.shadow_in[i], query, cache,
                on_progress=lambda f, s=stage_i: tracker.update(s, f),
            )
        )
        tracker.finish(stage_i)
    shadows_s = time.perf_counter() - t

    t = time.perf_counter()
    training = AttackTraining(cfg.attack_hidden, cfg.attack_train_epochs, cfg.attack_lr, seed=cfg.seed)
    shadow_membership = np.concatenate([np.r_[np.ones(cfg.n_eval, bool), np.zeros(cfg.n_eval, bool)]] * cfg.n_shadows)
    attacks_by_epoch: dict[int, dict] = {}
    for k, epoch in enumerate(cfg.checkpoint_epochs):
        tracker.update("attacks", k / len(cfg.checkpoint_epochs))
        shadow_resp = Responses.concat([s.responses[epoch] for s in shadows])
        attacks = standard_attacks(training, task.extra_attacks(cfg, training))
        with single_thread():  # small attack networks: extra threads only contend
            attacks_by_epoch[epoch] = run_attacks(attacks, shadow_resp, shadow_membership, victim.responses[epoch], splits.eval_membership)
    tracker.finish("attacks")
    attack_s = time.perf_counter() - t

    final = attacks_by_epoch[cfg.epochs]
    primary = task.primary_attack()
    per_epoch = []
    for row in victim.per_epoch:
        row = dict(row)
        outcome = attacks_by_epoch.get(row["epoch"], {}).get(primary)
        row["attack_accuracy"] = outcome.result.accuracy if outcome else None
        row["attack_auc"] = outcome.result.auc if outcome else None
        per_epoch.append(row)
    last = victim.per_epoch[-1]
    primary_result = final[primary].result.to_dict(include_roc=False)
    summary: dict[str, Any] = {
        "task": cfg.task,
        "arch": cfg.arch,
        "preset": cfg.preset,
        "config": cfg.to_dict(),
        "config_hash": cfg.config_hash,
        "params": victim.params,
        "data": {"description": data.description, **data.info},
        "device": str(default_device()),
        "utility": {"metric": task.utility_metric, "train": last.get("utility_train"), "val": last.get("utility_val")},
        "attack": {**primary_result},
        "attacks": {name: o.result.to_dict() for name, o in final.items()},
        "attacks_by_epoch": {
            str(e): {name: o.result.to_dict(include_roc=False) for name, o in res.items()} for e, res in attacks_by_epoch.items()
        },
        "per_epoch": per_epoch,
        "timings": {
            "data_s": data_s,
            "victim_s": victim_s,
            "shadows_s": shadows_s,
            "attack_s": attack_s,
            "total_s": time.perf_counter() - t0,
            "victim_trained_s": victim.train_s,
            "shadows_trained_s": sum(s.train_s for s in shadows),
        },
        "cache_hit": False,
        "models_from_cache": {"victim": victim.cache_hit, "shadows": sum(s.cache_hit for s in shadows)},
        "cache_corrupted": list(cache.corrupted),
    }
    summary["attack"]["name"] = primary
    summary["examples"] = _examples(task, cfg, data, victim, splits)
    summary["records"] = _record_signals(victim.responses[cfg.epochs], splits, final)
    cache.put_json(cache.key("result", cfg.config_hash), summary)
    return ExperimentResult(summary, victim, shadows, splits, {n: o.scores for n, o in final.items()})


def _record_signals(responses: Responses, splits: Splits, final: dict) -> dict[str, Any]:
    """Per-record signals of the victim's evaluation set (for the "why" plots): membership,
    APE (paper 000 eq. 3), mean cross-entropy to the reference, and every attack's score."""

    def rounded(a: np.ndarray) -> list[float]:
        return [float(v) for v in np.round(np.asarray(a, np.float64), 6)]

    return {
        "membership": [bool(v) for v in splits.eval_membership],
        "ape": rounded(responses.ape),
        "cross_entropy": rounded(responses.mean_cross_entropy),
        "length": [int(v) for v in responses.lengths],
        "scores": {name: rounded(o.scores) for name, o in final.items()},
        "thresholds": {name: (o.result.threshold if np.isfinite(o.result.threshold) else None) for name, o in final.items()},
    }


def _examples(task: Task, cfg: ExperimentConfig, data: TaskData, victim: TrainedModel, splits: Splits) -> dict[str, Any]:
    """The task's showcase of the final victim on a few member and non-member records."""
    seed_everything(_role_seed(cfg, "victim"))
    model = task.build_model(cfg, data)
    model.load_state_dict(victim.weights)
    model.to(default_device()).eval()
    return task.examples(cfg, model, data, splits.eval_members, splits.victim_nonmembers)
