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

import hashlib
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import torch

from .attacks import (Attack, AttackOutcome, AttackTraining, attack_to_bytes, fit_attack_sets, load_attack_bytes,
                      score_attacks, standard_attacks)
from .cache import ArtifactCache, Validator, dict_with, tensor_shapes
from .config import ExperimentConfig
from .device import default_device, single_thread
from .errors import ConfigError, ResourceLimitError, TrainingDivergedError
from .fidelity import measure_shadow_fidelity
from .locks import hold
from .progress import ProgressCallback, ProgressTracker
from .reference_attacks import reference_attack_outcomes
from .responses import Responses
from .tasks import get_task
from .tasks.base import Task, TaskData

if TYPE_CHECKING:
    from .executor import Executor


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
    #: DP-SGD's record of the training (σ, C, q, steps, accountant history), None if not private
    privacy: dict[str, Any] | None = None


def seed_everything(seed: int) -> None:
    import random

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def role_seed(cfg: ExperimentConfig, role: str) -> int:
    """The seed of ``role`` (``victim`` or ``shadow_<i>``): initialisation and data order."""
    offset = 0 if role == "victim" else 1 + int(role.split("_")[1])
    return cfg.seed * 7919 + offset * 104729


def model_from_weights(task: Task, cfg: ExperimentConfig, weights: dict[str, torch.Tensor],
                       data: TaskData | None = None) -> torch.nn.Module:
    """The model of ``cfg`` with ``weights`` loaded, on the default device, in eval mode.

    Raises ``ValueError`` when the weights' names or shapes do not fit the model of ``cfg``.
    """
    data = data if data is not None else task.load(cfg)
    torch.manual_seed(0)  # the initial values are overwritten; seeding keeps construction deterministic
    model = task.build_model(cfg, data)
    try:
        model.load_state_dict(weights, strict=True)
    except RuntimeError as exc:
        raise ValueError(f"weights do not fit the {cfg.task}/{cfg.arch} model: {exc}") from None
    return model.to(default_device()).eval()


def train_model(task: Task, cfg: ExperimentConfig, data: TaskData, train_index: np.ndarray, seed: int,
                on_epoch=None, on_progress=None, on_batch=None, on_record=None) -> torch.nn.Module:
    """A freshly initialised model of ``cfg`` (seeded by ``seed``) trained on ``train_index``.

    The seed fixes the initialisation and the data order, so two calls with the same seed on
    neighbouring training sets differ only through the record that differs (what
    SensitivitySampler measures, paper 000 Algorithm 2). ``on_batch`` is the training loop's
    per-step hook (:class:`core.training.Batch`); ``on_record`` receives the run's
    :class:`core.training.TrainingRecord` (steps, and DP-SGD's privacy record). The model
    returned is the one that trained (under DP-SGD with Opacus' hooks removed).
    """
    seed_everything(seed)
    model = task.build_model(cfg, data).to(default_device())
    hooks = {"on_batch": on_batch} if on_batch is not None else {}
    record = task.train(cfg, model, data, train_index, on_epoch or (lambda e, m: None), on_progress or (lambda f: None),
                        **hooks)
    if on_record is not None and record is not None:
        on_record(record)
    return model.eval()


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
    loaded = _load_trained(task, cfg, data, role, cache, len(query_index))
    if loaded is None:
        cache.check_usable(write=True)  # a cache that cannot store fails now, not after the training
        # one training per model across processes: a second caller waits here, then loads
        with hold(f"model-{digest}-{role}", directory=cache.directory / "locks"):
            loaded = _load_trained(task, cfg, data, role, cache, len(query_index))
            if loaded is None:
                return _train_and_store(task, cfg, data, role, train_index, query_index, cache, measure_utility, on_progress)
    if on_progress:
        on_progress(1.0)
    return loaded


#: schema of a trained model's meta entry (anything else is discarded as corrupted)
_META = dict_with(params=int, per_epoch=list, train_s=float)


def _load_trained(task: Task, cfg: ExperimentConfig, data: TaskData, role: str, cache: ArtifactCache,
                  n_queries: int) -> TrainedModel | None:
    """``role``'s cached model if every part is present and is what it claims, else None.

    Weights are checked name by name and shape by shape against a freshly built model, so an
    entry with a valid checksum but foreign tensors is discarded instead of crashing later;
    Responses must answer exactly the ``n_queries`` records this config queries (another
    config's answers would fail later as an IndexError, or worse, be scored).
    """
    digest = cfg.training_hash
    meta = cache.get_json(cache.key("model", digest, role, "meta"), validate=_META)
    if meta is None:
        return None

    def answers_the_queries(r: Responses) -> None:
        if len(r) != n_queries:
            raise ValueError(f"answers {len(r)} records, the config queries {n_queries}")
        r.validate()

    responses = {e: cache.get_responses(cache.key("model", digest, role, "responses", e), validate=answers_the_queries)
                 for e in cfg.checkpoint_epochs}
    expected = tensor_shapes(task.build_model(cfg, data).state_dict())
    weights = cache.get_tensors(cache.key("model", digest, role, "weights"), expected=expected, require_finite=True)
    if weights is None or any(r is None for r in responses.values()):
        return None
    privacy = meta.get("privacy")
    if cfg.private and not isinstance(privacy, dict):
        return None  # a private model without its privacy record cannot report ε: retrain
    return TrainedModel(role, meta["params"], meta["per_epoch"], responses, weights, float(meta["train_s"]), True,
                        privacy if cfg.private else None)


def _train_and_store(task: Task, cfg: ExperimentConfig, data: TaskData, role: str, train_index: np.ndarray,
                     query_index: np.ndarray, cache: ArtifactCache,
                     measure_utility: tuple[np.ndarray, np.ndarray] | None, on_progress) -> TrainedModel:
    """Train ``role`` (:func:`train_role`), then cache it (:func:`store_trained`)."""
    trained = train_role(task, cfg, data, role, train_index, query_index, measure_utility, on_progress)
    store_trained(cache, cfg, trained)
    return trained


def store_trained(cache: ArtifactCache, cfg: ExperimentConfig, trained: TrainedModel) -> None:
    """Cache a trained model: Responses, weights, then meta (last: it marks the entry complete)."""
    digest, role = cfg.training_hash, trained.role
    for e, r in trained.responses.items():
        cache.put_responses(cache.key("model", digest, role, "responses", e), r)
    cache.put_tensors(cache.key("model", digest, role, "weights"), trained.weights)
    cache.put_json(cache.key("model", digest, role, "meta"), {"params": trained.params, "per_epoch": trained.per_epoch,
                                                             "train_s": trained.train_s, "privacy": trained.privacy})


class EpochRecorder:
    """What a training of ``role`` keeps after every epoch: the divergence check, the utility on
    ``measure_utility = (train_idx, val_idx)`` when given, and the Responses to ``query_index`` at
    the checkpoint epochs. Call it as ``on_epoch(epoch, model)``; :meth:`result` packs the run.
    Shared by the sequential path (:func:`train_role`) and the ensemble (:mod:`core.ensemble`)."""

    def __init__(self, task: Task, cfg: ExperimentConfig, data: TaskData, role: str, query_index: np.ndarray,
                 measure_utility: tuple[np.ndarray, np.ndarray] | None = None):
        self.task, self.cfg, self.data, self.role = task, cfg, data, role
        self.query_index, self.measure_utility = query_index, measure_utility
        self.checkpoints = set(cfg.checkpoint_epochs)
        self.per_epoch: list[dict[str, Any]] = []
        self.responses: dict[int, Responses] = {}

    def __call__(self, epoch: int, trained: torch.nn.Module) -> None:
        task, cfg, role = self.task, self.cfg, self.role
        if not all(bool(torch.isfinite(p).all()) for p in trained.parameters()):
            raise TrainingDivergedError(
                f"training of the {role} ({cfg.task}/{cfg.arch}) diverged at epoch {epoch} (weights became NaN or "
                f"infinite); lower lr (now {cfg.lr:g}). Nothing of this run was cached.")
        row: dict[str, Any] = {"epoch": epoch}
        if self.measure_utility is not None:
            trained.eval()
            row.update(task.epoch_metrics(cfg, trained, self.data, self.measure_utility[0], self.measure_utility[1]))
        if epoch in self.checkpoints:
            trained.eval()
            try:
                self.responses[epoch] = task.respond(cfg, trained, self.data, self.query_index).validate()
            except ValueError as exc:  # e.g. NaN probabilities from an overflowing model
                raise TrainingDivergedError(f"the {role} answers with invalid outputs at epoch {epoch} ({exc}); "
                                            f"lower lr (now {cfg.lr:g}). Nothing of this run was cached.") from None
        trained.train()
        self.per_epoch.append(row)

    def result(self, model: torch.nn.Module, train_s: float, privacy: dict[str, Any] | None = None) -> TrainedModel:
        missing = self.checkpoints - set(self.responses)
        if missing:
            raise RuntimeError(f"task {self.task.name} did not report checkpoint epochs {sorted(missing)}")
        weights = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        return TrainedModel(self.role, self.task.param_count(model), self.per_epoch, self.responses, weights, train_s,
                            False, privacy)


def train_role(task: Task, cfg: ExperimentConfig, data: TaskData, role: str, train_index: np.ndarray,
               query_index: np.ndarray, measure_utility: tuple[np.ndarray, np.ndarray] | None = None,
               on_progress=None) -> TrainedModel:
    """Train ``role`` (seeded by :func:`role_seed`) and collect its Responses at every checkpoint
    epoch; stops with :class:`TrainingDivergedError` when weights or outputs become non-finite.
    Touches no cache (an executor's worker runs this and sends the result back as bytes)."""
    start = time.perf_counter()
    recorder = EpochRecorder(task, cfg, data, role, query_index, measure_utility)
    records = []
    model = train_model(task, cfg, data, train_index, role_seed(cfg, role), recorder, on_progress,
                        on_record=records.append)
    privacy = records[0].privacy if records else None
    return recorder.result(model, time.perf_counter() - start, privacy)


@dataclass
class TrainedModels:
    """The victim and the attacker's shadows of one config, trained or loaded (:func:`trained_models`).

    Everything a defense or an analysis needs: the data, the splits, each model's weights and its
    Responses at every checkpoint epoch. Rebuild a model with :meth:`model`.
    """

    cfg: ExperimentConfig
    task: Task
    data: TaskData
    splits: Splits
    victim: TrainedModel
    shadows: list[TrainedModel]
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def eval_membership(self) -> np.ndarray:
        """Membership of the victim's balanced evaluation set (members first)."""
        return self.splits.eval_membership

    @property
    def shadow_membership(self) -> np.ndarray:
        """Membership of the concatenated shadow query sets (each: n_eval in, then n_eval out)."""
        one = np.r_[np.ones(self.cfg.n_eval, bool), np.zeros(self.cfg.n_eval, bool)]
        return np.concatenate([one] * len(self.shadows))

    def shadow_query_index(self, i: int) -> np.ndarray:
        """Records shadow ``i`` answered: n_eval of its members, then its n_eval non-members."""
        return np.concatenate([self.splits.shadow_in[i][: self.cfg.n_eval], self.splits.shadow_out[i]])

    def shadow_responses(self, epoch: int | None = None) -> Responses:
        """Every shadow's Responses at ``epoch`` (default: the last), concatenated."""
        epoch = self.cfg.epochs if epoch is None else epoch
        return Responses.concat([s.responses[epoch] for s in self.shadows])

    def model(self, role: str = "victim") -> torch.nn.Module:
        """The trained model of ``role`` (``victim`` or ``shadow_<i>``), final weights, eval mode."""
        trained = self.victim if role == "victim" else self.shadows[int(role.split("_")[1])]
        return model_from_weights(self.task, self.cfg, trained.weights, self.data)


def trained_models(
    cfg: ExperimentConfig,
    progress: ProgressCallback | None = None,
    cache: ArtifactCache | None = None,
    tracker: ProgressTracker | None = None,
    executor: "Executor | None" = None,
) -> TrainedModels:
    """Train (or load from the cache) the victim and every shadow model of ``cfg``.

    The one public way to obtain trained models: the pipeline, the defenses and the analyses
    all start here, so a model is trained once and then re-used from the cache. With an
    ``executor`` other than the local one (:mod:`core.executor`: a process pool, Ray) the missing
    models train there in parallel and come back as bytes that this process caches; the models
    are then loaded like any cached ones (same numbers whichever executor trained them).
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
    splits = make_splits(cfg, data)
    check_memory(task, cfg, data)
    data_s = time.perf_counter() - t
    tracker.finish("data")

    t = time.perf_counter()
    stage = role_stage(cfg, "victim")
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


def reference_answers(models: TrainedModels, index: np.ndarray | None = None,
                      cache: ArtifactCache | None = None) -> list[Responses]:
    """Every shadow's final model answering records ``index`` (default: the victim's evaluation set).

    For attacks that compare the victim with *reference* models on the very records attacked
    (LiRA, RMIA): the shadows never trained on the victim's half, so for those records they are
    OUT models. Computed from the cached weights (nothing retrains) and cached per shadow under
    (training hash, role, a digest of the records). Per-step answers only: LiRA and RMIA read no
    record features (translation's BLEU features would cost a greedy decoding per record).
    """
    cache = cache or ArtifactCache()
    cfg = models.cfg
    index = models.splits.eval_index if index is None else np.asarray(index, np.int64)
    tag = hashlib.sha256(np.ascontiguousarray(index, np.int64).tobytes()).hexdigest()[:16]
    out = []
    for i in range(len(models.shadows)):
        key = cache.key("model", cfg.training_hash, f"shadow_{i}", "answers", tag)
        answers = cache.get_responses(key)
        if answers is None or len(answers) != len(index):
            answers = models.task.respond(cfg, models.model(f"shadow_{i}"), models.data, index,
                                          record_features=False).validate()
            cache.put_responses(key, answers)
        out.append(answers)
    return out


def _train_missing_on(executor: "Executor", cfg: ExperimentConfig, cache: ArtifactCache,
                      tracker: ProgressTracker | None = None) -> None:
    """Train the roles of ``cfg`` missing from the cache on ``executor``; cache what comes back,
    each model as it arrives (a failed or crashed job loses none that finished). Progress: the
    models training side by side report their fractions where the executor passes them on
    (local, processes), else move model by model (ensemble, Ray)."""
    from safetensors.torch import load as load_safetensors

    from .executor import TrainingJob, as_tuple

    cfg.validate()
    task = get_task(cfg.task)
    if tracker is not None:
        tracker.update("data", 0.0)
    data = task.load(cfg)
    splits = make_splits(cfg, data)
    check_memory(task, cfg, data)
    if tracker is not None:
        tracker.finish("data")
    jobs = []
    if _load_trained(task, cfg, data, "victim", cache, len(splits.eval_index)) is None:
        jobs.append(TrainingJob(cfg.to_dict(), "victim", as_tuple(splits.victim_members), as_tuple(splits.eval_index),
                                (as_tuple(splits.eval_members), as_tuple(splits.victim_nonmembers))))
    for i in range(cfg.n_shadows):
        query = np.concatenate([splits.shadow_in[i][: cfg.n_eval], splits.shadow_out[i]])
        if _load_trained(task, cfg, data, f"shadow_{i}", cache, len(query)) is None:
            jobs.append(TrainingJob(cfg.to_dict(), f"shadow_{i}", as_tuple(splits.shadow_in[i]), as_tuple(query)))

    def store(out) -> None:
        responses = {int(e): Responses.from_bytes(b) for e, b in out.responses.items()}
        meta = out.meta
        trained = TrainedModel(out.role, meta["params"], meta["per_epoch"], responses, load_safetensors(out.weights),
                               meta["train_s"], False, meta.get("privacy"))
        store_trained(cache, cfg, trained)
        if tracker is not None:
            finished.add(role_stage(cfg, out.role))
            tracker.finish_parallel(role_stage(cfg, out.role), running)

    running: dict[str, float] = {}  # the progress of the models training right now, by stage
    finished: set[str] = set()

    def progress(role: str, fraction: float) -> None:
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
    """Fresh (unfitted) attacks of ``cfg``: the standard ones plus the task's own."""
    training = AttackTraining(cfg.attack_hidden, cfg.attack_train_epochs, cfg.attack_lr, seed=cfg.seed)
    return standard_attacks(training, task.extra_attacks(cfg, training))


def fitted_attacks(
    models: TrainedModels,
    epoch: int | None = None,
    shadow_responses: Responses | None = None,
    tag: str = "undefended",
    cache: ArtifactCache | None = None,
) -> list[Attack]:
    """Attacks fitted on the shadows' Responses at ``epoch`` (default: the last), cached as bytes.

    ``shadow_responses`` replaces the shadows' own Responses (an adaptive attacker fits on its
    shadows' *defended* answers); ``tag`` then names what they are (e.g. a defense spec's key),
    so each variant is cached under (config hash, epoch, tag). Fitting happens once; scoring any
    Responses afterwards is :func:`core.attacks.score_attacks`.
    """
    return fitted_attack_variants(models, [AttackVariant(epoch, tag, shadow_responses)], cache)[0]


@dataclass(frozen=True)
class AttackVariant:
    """What one set of attacks is fitted on: the shadows' answers at ``epoch`` (None: the last),
    or ``shadow_responses`` in their place (defended answers), cached under ``tag``."""

    epoch: int | None = None
    tag: str = "undefended"
    shadow_responses: Responses | None = None


def fitted_attack_variants(
    models: TrainedModels, variants: list[AttackVariant], cache: ArtifactCache | None = None,
    on_progress: Callable[[float], None] | None = None,
) -> list[list[Attack]]:
    """:func:`fitted_attacks` for several variants at once (checkpoint epochs, defense draws):
    the cached ones load, the missing ones are fitted together (:func:`core.attacks.fit_attack_sets`:
    the same learned attack of several variants shares one joint network)."""
    cfg = models.cfg
    cache = cache or ArtifactCache()
    out: list[list[Attack] | None] = []
    missing: list[tuple[int, list[Attack], list[str], Responses]] = []
    for v in variants:
        epoch = cfg.epochs if v.epoch is None else v.epoch
        attacks = build_attacks(models.task, cfg)
        keys = [cache.key("attack", cfg.config_hash, epoch, v.tag, a.name) for a in attacks]
        blobs = [cache.get_bytes(k) for k in keys]
        if all(b is not None for b in blobs):
            try:
                out.append([load_attack_bytes(a, b) for a, b in zip(attacks, blobs)])
                continue
            except ValueError as exc:  # checksum passed but the content is not this attack: recompute
                for k in keys:
                    cache.discard(k, f"does not hold a fitted attack ({exc})")
                attacks = build_attacks(models.task, cfg)
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
    """Everything an experiment produced: the JSON summary plus in-memory artefacts."""

    summary: dict[str, Any]
    models: TrainedModels | None = None
    scores: dict[str, np.ndarray] = field(default_factory=dict)

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
    """The cached JSON summary of ``cfg`` (marked ``cache_hit``), or None if it was never run."""
    cache = cache or ArtifactCache()
    key = cache.key("result", cfg.config_hash)
    summary = cache.get_json(key, validate=_summary_of(cfg.config_hash, cfg.task, cfg.arch))
    if summary is not None:  # what *this* load did (the stored values are the first run's)
        summary["cache_hit"] = True
        summary["models_from_cache"] = {"victim": True, "shadows": int(summary["config"].get("n_shadows", 0))}
    return summary


def _summary_of(config_hash: str, task: str | None = None, arch: str | None = None) -> Validator:
    """The summary schema, and that the summary is the one asked for: a result whose own
    ``config_hash`` (or task, arch) differs from the requested one is discarded, not served."""

    def check(summary: Any) -> None:
        _SUMMARY(summary)
        if summary["config_hash"] != config_hash:
            raise ValueError(f"holds the result of config {summary['config_hash'][:12]}…, not {config_hash[:12]}…")
        for name, want in (("task", task), ("arch", arch)):
            if want is not None and summary[name] != want:
                raise ValueError(f"holds a {summary[name]!r} result, not {want!r}")

    return check


def cached_runs(task: str, arch: str | None = None, cache: ArtifactCache | None = None) -> list[dict[str, Any]]:
    """Summaries of every cached result of ``task`` (and ``arch``), newest first by nothing but key
    order: what a page offers as "trained runs" to analyse or defend."""
    cache = cache or ArtifactCache()
    out = []
    for key in cache.keys(cache.key("result", "")):
        summary = cache.get_json(key, validate=_summary_of(key.rsplit("/", 1)[-1]))
        if summary is not None and summary["task"] == task and (arch is None or summary["arch"] == arch):
            out.append(summary)
    return out


def config_of(summary: dict[str, Any]) -> ExperimentConfig:
    """The validated config a summary was produced with (options included)."""
    c = dict(summary["config"])
    task = get_task(c.pop("task"))
    arch, preset = c.pop("arch"), c.pop("preset")
    options = c.pop("options", {}) or {}
    cfg = task.make_config(arch, preset, {**c, **options})
    if cfg.config_hash != summary["config_hash"]:
        raise ConfigError("the summary's config does not reproduce its hash (written by another version?)")
    return cfg


#: what every cached summary must hold (anything else is discarded and recomputed)
_SUMMARY = dict_with(task=str, arch=str, config=dict, config_hash=str, params=int, utility=dict, attack=dict,
                     attacks=dict, per_epoch=list, timings=dict, records=dict)


def run_experiment(
    cfg: ExperimentConfig,
    progress: ProgressCallback | None = None,
    cache: ArtifactCache | None = None,
    executor: "Executor | None" = None,
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
    cached = cached_summary(cfg, cache)
    if cached is not None:
        cached["cache_corrupted"] = cache.corrupted[corrupted_before:]
        cached["timings"] = dict(cached["timings"], total_s=time.perf_counter() - t0, load_s=time.perf_counter() - t0)
        if progress:
            ProgressTracker([("cached", 1.0)], progress).finish("cached")
        return ExperimentResult(cached)
    cache.check_usable(write=True)  # results must be stored: a read-only cache fails now, not after the work

    tracker = ProgressTracker(training_stages(cfg) + [("attacks", 0.3 * len(cfg.checkpoint_epochs))], progress)
    models = trained_models(cfg, cache=cache, tracker=tracker, executor=executor)
    victim, shadows, splits = models.victim, models.shadows, models.splits

    t = time.perf_counter()
    attacks_by_epoch: dict[int, dict] = {}
    fitted = fitted_attack_variants(models, [AttackVariant(e) for e in cfg.checkpoint_epochs], cache,
                                    on_progress=lambda f: tracker.update("attacks", 0.9 * f))
    for epoch, attacks in zip(cfg.checkpoint_epochs, fitted):
        with single_thread():
            attacks_by_epoch[epoch] = score_attacks(attacks, victim.responses[epoch], splits.eval_membership)
    # LiRA and RMIA beside them, at the final epoch (they need the shadows' final weights), and
    # how closely the shadows track the victim (core.reference_attacks, core.fidelity)
    t_reference = time.perf_counter()
    attacks_by_epoch[cfg.epochs].update(reference_attack_outcomes(models, cache))
    fidelity = measure_shadow_fidelity(models)
    reference_s = time.perf_counter() - t_reference
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
        "training_hash": cfg.training_hash,
        "params": victim.params,
        "data": {"description": models.data.description, **models.data.info},
        "device": str(default_device()),
        "utility": {"metric": task.utility_metric, "train": last.get("utility_train"), "val": last.get("utility_val")},
        "attack": {**primary_result},
        "attacks": {name: o.result.to_dict() for name, o in final.items()},
        "attacks_by_epoch": {
            str(e): {name: o.result.to_dict(include_roc=False) for name, o in res.items()} for e, res in attacks_by_epoch.items()
        },
        "per_epoch": per_epoch,
        "timings": {
            **models.timings,
            "attack_s": attack_s,
            "total_s": time.perf_counter() - t0,
            "victim_trained_s": victim.train_s,
            "shadows_trained_s": sum(s.train_s for s in shadows),
            "reference_attacks_s": reference_s,
        },
        "cache_hit": False,
        "models_from_cache": {"victim": victim.cache_hit, "shadows": sum(s.cache_hit for s in shadows)},
        "cache_corrupted": cache.corrupted[corrupted_before:],
    }
    summary["attack"]["name"] = primary
    summary["shadow_fidelity"] = fidelity
    summary["privacy"] = _privacy(cfg, victim)
    summary["examples"] = _examples(models)
    summary["records"] = record_signals(victim.responses[cfg.epochs], splits.eval_membership, final)
    cache.put_json(cache.key("result", cfg.config_hash), summary, allow_nan=False)
    return ExperimentResult(summary, models, {n: o.scores for n, o in final.items()})


def record_signals(responses: Responses, membership: np.ndarray, outcomes: dict[str, AttackOutcome]) -> dict[str, Any]:
    """Per-record signals of an evaluation set (for the "why" plots): membership, APE (paper 000
    eq. 3), mean cross-entropy to the reference, every attack's score, and the decision boundary
    of each threshold attack in its signal's units (``{"signal", "threshold", "member_if"}``)."""

    def rounded(a: np.ndarray) -> list[float]:
        return [float(v) for v in np.round(np.asarray(a, np.float64), 6)]

    return {
        "membership": [bool(v) for v in membership],
        "ape": rounded(responses.ape),
        "cross_entropy": rounded(responses.mean_cross_entropy),
        "length": [int(v) for v in responses.lengths],
        "scores": {name: rounded(o.scores) for name, o in outcomes.items()},
        "boundaries": {name: o.result.boundary for name, o in outcomes.items() if o.result.boundary is not None},
    }


def _privacy(cfg: ExperimentConfig, victim: TrainedModel) -> dict[str, Any] | None:
    """DP-SGD's ``dpsgd`` block of the victim (σ, C, q, steps, δ, ε by RDP/PRV/GDP), None if not private."""
    if victim.privacy is None:
        return None
    from .defenses.dpsgd import report  # Opacus accounting, only for private configs

    return report(victim.privacy, cfg.dp_delta)


def _examples(models: TrainedModels) -> dict[str, Any]:
    """The task's showcase of the final victim on a few member and non-member records."""
    seed_everything(role_seed(models.cfg, "victim"))
    return models.task.examples(models.cfg, models.model("victim"), models.data, models.splits.eval_members,
                                models.splits.victim_nonmembers)
