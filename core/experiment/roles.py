"""The roles of one experiment: victim and shadow models, trained or loaded, one at a time.

The layer under the pipeline (the executors, the reference attacks and shadow fidelity build on this, never on
the pipeline): the data splits of paper 000 §3.2 (:func:`make_splits`); per-role seeds (:func:`role_seed`); one
model trained (:func:`train_role`, :class:`EpochRecorder`) or loaded under an inter-process lock
(:func:`train_or_load`); :class:`TrainedModels`, what defenses and analyses consume; and the executors' job types
(:class:`TrainingJob` → :func:`train_job` → :class:`TrainingOutput`: plain bytes, so any worker can train a role).
"""
from __future__ import annotations

import hashlib
import os
import random
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np
import torch
from safetensors.torch import save as save_safetensors

from core.experiment.answer_memo import AnswerMemo
from core.experiment.cache import ArtifactCache, dict_with, tensor_shapes
from core.experiment.model_meta import ModelMeta
from core.experiment.results import EpochRecord
from core.experiment.user_model import member_index, user_weights
from core.foundations.config import ExperimentConfig
from core.foundations.device import default_device
from core.foundations.errors import ConfigError, ResourceLimitError, TrainingDivergedError
from core.foundations.locks import hold
from core.measurement.responses import Responses
from core.tasks import get_task
from core.tasks.base import Task, TaskData
from core.training.dpsgd import PrivacyRecord
from core.training.loop import TrainingRecord


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


def make_splits(cfg: ExperimentConfig, data: TaskData, cache: ArtifactCache | None = None) -> Splits:
    """Seeded member/non-member splits of the victim's and attacker's halves (with ``target_weights``:
    :func:`user_splits` around the listed members, read through ``cache``)."""
    if cfg.target_weights:
        cache = cache or ArtifactCache()
        return user_splits(cfg, data, member_index(get_task(cfg.task), cfg, data, cache))
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
    shadow_in, shadow_out = _shadow_splits(cfg, data.attacker_pool)
    return Splits(victim[: cfg.n_train], victim[cfg.n_train : need], shadow_in, shadow_out)


def _shadow_splits(cfg: ExperimentConfig, pool: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Shadow i's n_train members and n_eval non-members: a permutation of ``pool`` seeded by (seed, i)."""
    shadow_in, shadow_out = [], []
    for i in range(cfg.n_shadows):
        perm = np.random.default_rng([cfg.seed, 1000 + i]).permutation(pool)
        shadow_in.append(perm[: cfg.n_train])
        shadow_out.append(perm[cfg.n_train : cfg.n_train + cfg.n_eval])
    return shadow_in, shadow_out


def user_splits(cfg: ExperimentConfig, data: TaskData, members: np.ndarray) -> Splits:
    """The splits around a user's model that trained on records ``members``.

    The rule (seeded by ``cfg.seed``; listed and unlisted records never mix):

    * victim members: every listed record, ordered as the explorer's own split orders records — the
      victim's half in :func:`make_splits`' permutation, then the attacker's half in a permutation
      seeded by (seed, 2); the evaluation's members are the first ``n_eval`` of them;
    * evaluation non-members: the first ``n_eval`` *unlisted* records of the victim's half in that
      same permutation (balanced: as many as the evaluation's members);
    * attacker's pool: the attacker's half without the listed records; shadow i draws ``n_train`` members
      and ``n_eval`` non-members from it as in :func:`make_splits`.

    A victim the explorer trained, exported with its members, so gets back the very splits of its run.

    Raises:
        ConfigError: fewer members than n_train (or n_eval), fewer unlisted records of the victim's
            half than n_eval, or an attacker's pool smaller than n_train + n_eval.
    """
    members = np.asarray(members, np.int64)
    if cfg.n_train > len(members):
        raise ConfigError(f"n_train ({cfg.n_train}), the shadows' training-set size, exceeds the {len(members)} listed "
                          f"members: lower n_train (left out, it is the number of members)")
    if cfg.n_eval > cfg.n_train:
        raise ConfigError(f"n_eval ({cfg.n_eval}) must not exceed n_train ({cfg.n_train}) for a balanced evaluation set")
    victim_order = np.random.default_rng(cfg.seed).permutation(data.victim_pool)
    attacker_order = np.random.default_rng([cfg.seed, 2]).permutation(data.attacker_pool)
    order = np.concatenate([victim_order, attacker_order])
    rank = np.full(int(order.max()) + 1 if order.size else 0, order.size, np.int64)
    rank[order] = np.arange(order.size)
    ordered_members = members[np.argsort(rank[members], kind="stable")]
    nonmembers = victim_order[~np.isin(victim_order, members)][: cfg.n_eval]
    if len(nonmembers) < cfg.n_eval:
        raise ConfigError(f"only {len(nonmembers)} records of the victim's half of {data.description!r} are not listed "
                          f"as members; the evaluation needs n_eval = {cfg.n_eval} non-members: lower n_eval or list "
                          f"fewer members")
    pool = data.attacker_pool[~np.isin(data.attacker_pool, members)]
    if len(pool) < cfg.n_train + cfg.n_eval:
        raise ConfigError(f"the attacker's pool (the attacker's half without listed members) holds {len(pool)} records; "
                          f"each shadow needs n_train + n_eval = {cfg.n_train + cfg.n_eval}: lower n_train or n_eval")
    shadow_in, shadow_out = _shadow_splits(cfg, pool)
    return Splits(ordered_members, nonmembers, shadow_in, shadow_out)


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
    #: the learning curve, one typed row per epoch (a shadow's rows: the epoch only)
    per_epoch: tuple[EpochRecord, ...]
    responses: dict[int, Responses]
    weights: dict[str, torch.Tensor]
    train_s: float
    cache_hit: bool
    #: DP-SGD's record of the training (σ, C, q, steps, accountant history), None if not private
    privacy: PrivacyRecord | None = None

    def meta(self) -> ModelMeta:
        """The meta entry the cache stores beside the weights and answers (and a worker sends back)."""
        return ModelMeta.of(self.params, self.per_epoch, self.train_s, self.privacy)


def seed_everything(seed: int) -> None:
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

    The seed fixes the initialisation and the data order, so two calls with the same seed on neighbouring
    training sets differ only through the record that differs (paper 000 Algorithm 2). ``on_batch`` is the
    loop's per-step hook; ``on_record`` receives the run's :class:`core.training.loop.TrainingRecord`. Returns
    the model that trained (under DP-SGD with Opacus' hooks removed).
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
    loaded = load_trained(task, cfg, data, role, cache, len(query_index))
    if loaded is None:
        cache.check_usable(write=True)  # a cache that cannot store fails now, not after the training
        # one training per model across processes: a second caller waits here, then loads
        with hold(f"model-{digest}-{role}", directory=cache.directory / "locks"):
            loaded = load_trained(task, cfg, data, role, cache, len(query_index))
            if loaded is None:
                return _train_and_store(task, cfg, data, role, train_index, query_index, cache, measure_utility, on_progress)
    if on_progress:
        on_progress(1.0)
    return loaded


def load_user_victim(task: Task, cfg: ExperimentConfig, data: TaskData, splits: Splits, cache: ArtifactCache,
                     on_progress: Callable[[float], None] | None = None) -> TrainedModel:
    """The victim of a config with ``target_weights``: the user's model, loaded, never trained.

    Its weights are checked against this config's architecture, then it answers the evaluation set and its
    utility is measured (one learning-curve row, at ``cfg.epochs``); it is cached like a trained victim (the
    training hash binds the files' sha256), so a reopened run needs the files no more.

    Raises:
        ConfigError: the weights do not fit, or the model answers with NaN or infinite outputs.
    """
    loaded = load_trained(task, cfg, data, "victim", cache, len(splits.eval_index))
    if loaded is None:
        cache.check_usable(write=True)
        weights = user_weights(task, cfg, data)
        model = model_from_weights(task, cfg, weights, data)
        row = {"epoch": cfg.epochs,
               **task.epoch_metrics(cfg, model, data, splits.eval_members, splits.victim_nonmembers)}
        try:
            responses = {cfg.epochs: task.respond(cfg, model, data, splits.eval_index).validate()}
        except ValueError as exc:  # NaN probabilities from finite but extreme weights
            raise ConfigError(f"the model of target_weights answers with invalid outputs ({exc})") from None
        # trained 0 s here: the training happened elsewhere
        loaded = TrainedModel("victim", task.param_count(model), (EpochRecord.from_dict(row),), responses, weights, 0.0,
                              False)
        store_trained(cache, cfg, loaded)
    if on_progress:
        on_progress(1.0)
    return loaded


def victim_source(cfg: ExperimentConfig) -> dict[str, Any]:
    """Where the victim of ``cfg`` came from, for the summary: trained by the explorer, or the user's
    weights (loaded) with the sha256 of the weights file and of the member list."""
    if not cfg.target_weights:
        return {"kind": "trained"}
    return {"kind": "user weights", "weights_sha256": cfg.target_weights_sha256, "members_sha256": cfg.members_sha256}


#: the analyses that train victims of their own from the recipe (longer, in blocks, with canaries): with a
#: user's model they would describe those models, not the one audited
RETRAINING_ANALYSES = ("memorization", "overtraining", "audit")


def refuse_loaded_victim(cfg: ExperimentConfig, analysis: str) -> None:
    """Raise :class:`ConfigError` when ``analysis`` (one of :data:`RETRAINING_ANALYSES`) is asked of a
    config whose victim is the user's model: it would retrain a victim the user trained."""
    if cfg.target_weights:
        raise ConfigError(f"the {analysis} analysis trains victims of its own with the recipe; with target_weights "
                          f"the victim is your trained model, which the explorer cannot retrain: leave out "
                          f"{', '.join(RETRAINING_ANALYSES)}")


#: schema of a trained model's meta entry (anything else is discarded as corrupted)
_META = dict_with(params=int, per_epoch=list, train_s=float)


def _typed_meta(meta: Any) -> None:
    """The meta schema, and every field read typed (:class:`ModelMeta`: a learning-curve row of numbers)."""
    _META(meta)
    ModelMeta.from_dict(meta)


def is_cached(cfg: ExperimentConfig, role: str, cache: ArtifactCache) -> bool:
    """Whether ``role``'s model of ``cfg`` is in the cache (its meta entry; the weights and answers are
    checked when :func:`load_trained` loads them): lets a reader of cached runs refuse work that
    would train."""
    return cache.get_json(cache.key("model", cfg.training_hash, role, "meta"), validate=_META) is not None


def load_trained(task: Task, cfg: ExperimentConfig, data: TaskData, role: str, cache: ArtifactCache,
                  n_queries: int) -> TrainedModel | None:
    """``role``'s cached model if every part is present and is what it claims, else None.

    Weights are checked name by name and shape by shape against a freshly built model, so an
    entry with a valid checksum but foreign tensors is discarded instead of crashing later;
    Responses must answer exactly the ``n_queries`` records this config queries (another
    config's answers would fail later as an IndexError, or worse, be scored).
    """
    digest = cfg.training_hash
    # read typed once as it leaves the cache: an entry whose rows this version cannot read is discarded (retrained)
    stored = cache.get_json(cache.key("model", digest, role, "meta"), validate=_typed_meta)
    if stored is None:
        return None
    meta = ModelMeta.from_dict(stored)

    def answers_the_queries(r: Responses) -> None:
        if len(r) != n_queries:
            raise ValueError(f"answers {len(r)} records, the config queries {n_queries}")
        r.validate()

    stored_responses = {e: cache.get_responses(cache.key("model", digest, role, "responses", e),
                                               validate=answers_the_queries) for e in cfg.checkpoint_epochs}
    responses = {e: r for e, r in stored_responses.items() if r is not None}
    expected = tensor_shapes(task.build_model(cfg, data).state_dict())
    weights = cache.get_tensors(cache.key("model", digest, role, "weights"), expected=expected, require_finite=True)
    if weights is None or len(responses) < len(stored_responses):  # a checkpoint's answers missing or refused
        return None
    if cfg.private and meta.privacy is None:
        return None  # a private model without its privacy record cannot report ε: retrain
    return TrainedModel(role, meta.params, meta.per_epoch, responses, weights, float(meta.train_s), True,
                        meta.privacy if cfg.private else None)


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
    cache.put_json(cache.key("model", digest, role, "meta"), trained.meta().to_dict())


class EpochRecorder:
    """What a training of ``role`` keeps after every epoch: the divergence check, the utility on
    ``measure_utility = (train_idx, val_idx)`` when given, and the Responses to ``query_index`` at
    the checkpoint epochs. Call it as ``on_epoch(epoch, model)``; :meth:`result` packs the run.
    Shared by the sequential path (:func:`train_role`) and the ensemble (:mod:`core.training.ensemble`)."""

    def __init__(self, task: Task, cfg: ExperimentConfig, data: TaskData, role: str, query_index: np.ndarray,
                 measure_utility: tuple[np.ndarray, np.ndarray] | None = None):
        self.task, self.cfg, self.data, self.role = task, cfg, data, role
        self.query_index, self.measure_utility = query_index, measure_utility
        self.checkpoints = set(cfg.checkpoint_epochs)
        self.per_epoch: list[EpochRecord] = []
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
        self.per_epoch.append(EpochRecord.from_dict(row))  # typed as it is measured

    def result(self, model: torch.nn.Module, train_s: float, privacy: PrivacyRecord | None = None) -> TrainedModel:
        missing = self.checkpoints - set(self.responses)
        if missing:
            raise RuntimeError(f"task {self.task.name} did not report checkpoint epochs {sorted(missing)}")
        weights = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        return TrainedModel(self.role, self.task.param_count(model), tuple(self.per_epoch), self.responses, weights,
                            train_s, False, privacy)


def train_role(task: Task, cfg: ExperimentConfig, data: TaskData, role: str, train_index: np.ndarray,
               query_index: np.ndarray, measure_utility: tuple[np.ndarray, np.ndarray] | None = None,
               on_progress=None) -> TrainedModel:
    """Train ``role`` (seeded by :func:`role_seed`) and collect its Responses at every checkpoint
    epoch; stops with :class:`TrainingDivergedError` when weights or outputs become non-finite.
    Touches no cache (an executor's worker runs this and sends the result back as bytes)."""
    start = time.perf_counter()
    recorder = EpochRecorder(task, cfg, data, role, query_index, measure_utility)
    records: list[TrainingRecord] = []
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
    #: set for one attack stage on the batched path: models built once, answers computed once
    memo: AnswerMemo | None = field(default=None, repr=False)

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
        if self.memo is not None:  # one attack stage reads the model: built once
            return self.memo.model(role, lambda: model_from_weights(self.task, self.cfg, trained.weights, self.data))
        return model_from_weights(self.task, self.cfg, trained.weights, self.data)


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
    index = models.splits.eval_index if index is None else np.asarray(index, np.int64)
    return [cached_answers(models, f"shadow_{i}", index, cache) for i in range(len(models.shadows))]


def records_digest(index: np.ndarray) -> str:
    """A short digest of record indices: part of the cache keys of answers on them."""
    return hashlib.sha256(np.ascontiguousarray(index, np.int64).tobytes()).hexdigest()[:16]


def cached_answers(models: TrainedModels, role: str, index: np.ndarray, cache: ArtifactCache) -> Responses:
    """``role``'s final model answering records ``index``, cached under (training hash, role, a digest of the
    records)."""
    key = cache.key("model", models.cfg.training_hash, role, "answers", records_digest(index))
    answers = cache.get_responses(key)
    if answers is None or len(answers) != len(index):
        answers = memo_answers(models, role, index)
        cache.put_responses(key, answers)
    return answers


def memo_answers(models: TrainedModels, role: str, index: np.ndarray) -> Responses:
    """``role``'s final model answering records ``index`` (per-step answers only, validated). With the
    models' :class:`~core.experiment.answer_memo.AnswerMemo` (the batched path), records it answered
    before are read back, a shadow's own query records from its stored final answers (the same model on
    the same records), and the answers carry no record features (LiRA, RMIA, the reference ratio and
    quantile regression read per-step answers only; navigation's episode summary is left out)."""
    def compute(records: np.ndarray) -> Responses:
        answers = models.task.respond(models.cfg, models.model(role), models.data, records,
                                      record_features=False).validate()
        return _steps_only(answers) if models.memo is not None else answers

    if models.memo is None:
        return compute(index)
    if role.startswith("shadow_"):
        k = int(role.split("_")[1])
        own = models.shadows[k].responses.get(models.cfg.epochs)
        query = models.shadow_query_index(k)
        if own is not None and len(own) == len(query):
            models.memo.seed(("respond", role), query, _steps_only(own))
    return models.memo.rows(("respond", role), index, compute, Responses.concat, lambda r, rows: r.subset(rows))


def _steps_only(answers: Responses) -> Responses:
    """``answers`` without record features (what the shared path's reference answers carry)."""
    if not answers.record_features:
        return answers
    return replace(answers, record_features={})



@dataclass(frozen=True)
class TrainingJob:
    """One training of the pipeline, described by plain data (picklable, JSON-able)."""

    config: dict[str, Any]
    role: str
    train_index: tuple[int, ...]
    query_index: tuple[int, ...]
    measure_utility: tuple[tuple[int, ...], tuple[int, ...]] | None = None


@dataclass
class TrainingOutput:
    """What a worker sends back: bytes only, written to the cache by the driver."""

    role: str
    meta: ModelMeta
    weights: bytes
    responses: dict[int, bytes] = field(default_factory=dict)


def config_from_dict(d: dict[str, Any]) -> ExperimentConfig:
    """The validated :class:`~core.foundations.config.ExperimentConfig` of ``cfg.to_dict()``."""
    d = dict(d)
    task = get_task(d.pop("task"))
    arch, preset = d.pop("arch"), d.pop("preset")
    options = d.pop("options", {}) or {}
    return task.make_config(arch, preset, {**d, **options})


def train_job(job: TrainingJob, on_progress: Callable[[float], None] | None = None) -> TrainingOutput:
    """Train one job (in whatever process this runs) and return its bytes; ``on_progress(fraction)``
    as it trains."""
    cfg = config_from_dict(job.config)
    task = get_task(cfg.task)
    data = task.load(cfg)
    measure = None
    if job.measure_utility is not None:
        measure = (np.asarray(job.measure_utility[0], np.int64), np.asarray(job.measure_utility[1], np.int64))
    trained = train_role(task, cfg, data, job.role, np.asarray(job.train_index, np.int64),
                         np.asarray(job.query_index, np.int64), measure, on_progress)
    weights = save_safetensors({k: v.detach().cpu().contiguous() for k, v in trained.weights.items()})
    return TrainingOutput(job.role, trained.meta(), weights, {e: r.to_bytes() for e, r in trained.responses.items()})
