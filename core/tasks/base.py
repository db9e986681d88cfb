"""The Task interface: what the pipeline needs from image, translation and navigation.

A task owns its data source, its two architectures and its training loop. Records are
addressed by integer indices into the task's data source (images, sentence pairs, map
seeds), so splitting into victim / attacker halves and members / non-members is generic and
lives in :mod:`core.experiment.pipeline`.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import torch
from torch import nn

from core.attacks.shadow_attacks import Attack, AttackTraining
from core.foundations.config import ExperimentConfig
from core.foundations.errors import ConfigError
from core.foundations.user_files import bind_user_files
from core.measurement.responses import Responses
from core.measurement.slices import quantile_buckets
from core.models import count_params

#: Called by a training loop after each epoch with the 1-based epoch number.
EpochCallback = Callable[[int, nn.Module], None]
#: Called by a training loop with the fraction of training done (0..1).
FractionCallback = Callable[[float], None]
#: Maps (B, m) log-probabilities to (B, m) log-probabilities (an output defense, e.g. Dir_k).
OutputTransform = Callable[[torch.Tensor], torch.Tensor]
#: where every built-in preset's measured times are (one row per task and preset, with its command and commit): a
#: preset note points here instead of carrying figures that age with the machine and the commit
PRESET_TIMES = "docs/results.md#preset-times"


def apply_each(transforms: Sequence[OutputTransform], log_probs: torch.Tensor) -> torch.Tensor:
    """(T, …): every transform applied to ``log_probs`` (a defense's draws, each its own noise), stacked; through
    the transforms' own ``apply_together`` where their class offers one (the draws' shared work done once:
    :class:`core.defenses.dirichlet.DirichletOutputTransform`), else one call each."""
    together = getattr(type(transforms[0]), "apply_together", None) if transforms else None
    out = together(list(transforms), log_probs) if together is not None else None
    return out if out is not None else torch.stack([t(log_probs) for t in transforms])


def fixed_halves(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The victim's and the attacker's halves of ``n`` records (sorted indices), the same for every config."""
    order = np.random.default_rng(12345).permutation(n)
    return np.sort(order[: n // 2]), np.sort(order[n // 2 :])


@dataclass
class TaskData:
    """A task's data source split into the victim's half and the attacker's disjoint half.

    Attributes:
        records: task-specific container addressed by index (tensors, sentence pairs, seeds).
        victim_pool: indices available to the victim (its members and non-members).
        attacker_pool: indices available to the attacker for shadow models.
        description: one line for the UI ("digits: 1,797 8×8 images, 10 classes").
        info: task-specific facts shown in the UI and the JSON (vocabulary size, ...).
    """

    records: Any
    victim_pool: np.ndarray
    attacker_pool: np.ndarray
    description: str
    info: dict[str, Any] = field(default_factory=dict)


#: how a :class:`RecordView` is drawn (the app and the report know these, and nothing task-specific)
RECORD_KINDS = ("image", "text", "map")


@dataclass(frozen=True)
class RecordView:
    """One record as the app shows it, as data (no drawing): :meth:`Task.describe_record`.

    Attributes:
        kind: how it is drawn, one of :data:`RECORD_KINDS`: ``image`` (``image``), ``text``
            (``lines``, and the victim's ``answer`` as text), ``map`` (the victim's ``answer``: a
            map view, :func:`core.tasks.navigation.map_view`, drawn with its path).
        caption: one line under the record ("label 3", "map seed 1234").
        image: ``kind`` image: H×W or H×W×3 floats in [0, 1].
        lines: (label, text) pairs, e.g. ("source", …), ("reference", …).
        answer: the victim's answer on the record (a translation, a map view with its path), or
            None when no victim was given or the task shows none.
    """

    kind: str
    caption: str = ""
    image: np.ndarray | None = None
    lines: tuple[tuple[str, str], ...] = ()
    answer: Any = None


#: returns the trained victim when called: a task loads it only when it shows the victim's answer
VictimLoader = Callable[[], nn.Module]


class Task(ABC):
    """One learning task with an FFNN and an RNN architecture of matched parameter counts."""

    name: str = "task"
    #: name of the utility measure ("accuracy", "bleu", "return")
    utility_metric: str = "accuracy"
    #: preset name -> field overrides of :class:`ExperimentConfig` (options included); a key
    #: ``ffnn`` or ``rnn`` holds overrides for that architecture only (e.g. its learning rate)
    presets: dict[str, dict[str, Any]] = {}
    #: preset name -> one line for the UI and the CLI: what it needs (a data folder, a GPU), its sizes and what it
    #: is for; the built-in tasks' notes end by pointing to :data:`PRESET_TIMES` for the measured times
    preset_notes: dict[str, str] = {}
    #: built-in and real data sources the task can load (the first is the default)
    datasets: tuple[str, ...] = ()
    #: one paragraph for the UI: what a record is, what the models answer, what the reference is
    about: str = ""
    #: those of ``datasets`` read from a local folder (``data_dir``)
    real_datasets: tuple[str, ...] = ()
    #: the task's frozen options dataclass
    options_cls: type = type(None)
    #: display name ("Image classification"); the name itself where empty
    label: str = ""
    #: the option that sets both architectures' size (the model-mismatch analysis scales it; 001 A.3)
    width_knob: str = ""
    #: what one record is called, singular and plural (the resolution line: "one image = 0.01 of TPR")
    record_names: tuple[str, str] = ("record", "records")
    #: what one private sample of DP-SGD is, for the pages and reports ("one image")
    privacy_unit: str = "one record"
    #: whether DP-SGD's sample is one record of the task (an audit canary, a member): False where a
    #: record yields many samples (navigation: a map yields many trajectory windows), so an audited
    #: ε per record and the accountant's ε per sample are not comparable
    privacy_unit_is_record: bool = True
    #: what DP-SGD's guarantee does not cover on this task, shown beside its ε (empty: nothing to add)
    privacy_caveat: str = ""
    #: the training precisions the task's loop supports (``ExperimentConfig.precision``)
    precisions: tuple[str, ...] = ("float32", "bf16")
    #: whether the app draws the task's records as maps (core.jobs.mapview: navigation)
    map_views: bool = False
    #: the architectures the task provides: both (the FFNN-vs-RNN comparison), or one (a plugin with
    #: a single model: runs, defenses and single-model views work; comparisons are refused in one line)
    archs: tuple[str, ...] = ("ffnn", "rnn")
    #: SensitivitySampler pairs for the GPM's S at the quick presets (the study: n = 500; γ(n) shows the price)
    sensitivity_samples: int = 5

    def make_config(self, arch: str, preset: str = "quick", overrides: dict[str, Any] | None = None) -> ExperimentConfig:
        """A validated config from a preset plus ``overrides`` (top-level or option keys)."""
        if preset not in self.presets:
            raise ConfigError(f"unknown preset {preset!r} for task {self.name}; choose one of {sorted(self.presets)}")
        base = ExperimentConfig(task=self.name, arch=arch, preset=preset, options=self.options_cls())
        preset_fields = {k: v for k, v in self.presets[preset].items() if k not in ("ffnn", "rnn")}
        preset_fields.update(self.presets[preset].get(arch, {}))
        cfg = base.with_updates(preset_fields)
        if overrides:
            cfg = cfg.with_updates(overrides)
        # a user's model as the victim: its files' content into the config (read once, here)
        return bind_user_files(cfg, given=set(overrides or ())).validate()

    def data_problem(self, cfg: ExperimentConfig) -> str | None:
        """Why ``cfg``'s data cannot be read, found without loading it (a missing folder or file), so a page
        can say so before a training starts; None when nothing is known to be wrong."""
        return None

    @abstractmethod
    def load(self, cfg: ExperimentConfig) -> TaskData:
        """Load (or generate) the data source and split it into victim and attacker halves."""

    @abstractmethod
    def build_model(self, cfg: ExperimentConfig, data: TaskData) -> nn.Module:
        """A freshly initialised model of ``cfg.arch`` (seed the RNG before calling)."""

    @abstractmethod
    def train(
        self,
        cfg: ExperimentConfig,
        model: nn.Module,
        data: TaskData,
        train_index: np.ndarray,
        on_epoch: EpochCallback,
        on_progress: FractionCallback,
        on_batch: Callable[[Any], None] | None = None,
    ) -> Any:
        """Train ``model`` in place on records ``train_index``; call ``on_epoch`` after each epoch.

        Training goes through :mod:`core.training` (the optimizer, seeded batching, the
        ``on_batch`` hook called with a :class:`core.training.loop.Batch` after each step, DP-SGD when
        ``cfg.dp`` is on) and returns its :class:`core.training.loop.TrainingRecord`.
        """

    def supports_ensemble(self, cfg: ExperimentConfig) -> bool:
        """Whether models of ``cfg`` can train as one vectorised ensemble (:mod:`core.training.ensemble`)."""
        return False

    def train_ensemble(self, cfg: ExperimentConfig, models: list[nn.Module], data: TaskData,
                       train_indices: list[np.ndarray], seeds: list[int],
                       on_epoch: Callable[[int, Any], None]) -> float:
        """Train ``models`` (member m on ``train_indices[m]``, seeded by ``seeds[m]``) as one ensemble,
        calling ``on_epoch(epoch, models)`` after every epoch; returns the seconds it took. Only
        for configs where :meth:`supports_ensemble` is true."""
        raise NotImplementedError(f"task {self.name} trains its models one by one")

    @abstractmethod
    def utility(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                output_transform: OutputTransform | None = None) -> float:
        """The task's utility measure of ``model`` on records ``index``.

        With ``output_transform`` every output distribution the model's decisions are taken from
        (a class, the next token, the next action) first passes through it: the utility of the
        model behind an output defense such as the Dirichlet mechanism.
        """

    def utility_of_responses(self, cfg: ExperimentConfig, responses: Responses) -> float | None:
        """:meth:`utility` read off answers the model already gave on the same records (no model
        run; the Defenses page's σ step reuses the noisy victim's answers), or None when it cannot
        be read from them exactly. Default None: a BLEU needs a decoding, a return an episode."""
        return None

    def record_features_under(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                              output_transform: OutputTransform) -> dict[str, np.ndarray]:
        """The task's ``Responses.record_features`` of records ``index`` when every output passes
        through ``output_transform`` (e.g. the BLEU features of a translation decoded from noisy
        distributions). Default: none depend on the outputs' values."""
        return {}

    def epoch_metrics(
        self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, members: np.ndarray, nonmembers: np.ndarray
    ) -> dict[str, float]:
        """Learning-curve row of the victim after an epoch: ``utility_train`` on members,
        ``utility_val`` on non-members, plus any task-specific curves (e.g. steps to goal)."""
        return {
            "utility_train": self.utility(cfg, model, data, members),
            "utility_val": self.utility(cfg, model, data, nonmembers),
        }

    @abstractmethod
    def respond(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                record_features: bool = True) -> Responses:
        """Query ``model`` with records ``index`` (in that order). ``record_features=False`` leaves
        out per-record features that cost extra model runs (translation's BLEU features: a greedy
        decoding) for callers that read per-step answers only (LiRA, RMIA)."""

    def extra_attacks(self, cfg: ExperimentConfig, training: AttackTraining) -> list[Attack]:
        """Task-specific attacks run beside the registered ones (default: none; a built-in attack is
        registered in :mod:`core.attacks.registry` instead, with the tasks it runs on)."""
        return []

    #: why :meth:`label_queries` is not offered (the label-only attack reports it); empty where it is
    label_queries_missing: str = "the task defines no augmented label queries"

    def label_queries(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray, n: int,
                      output_transform: OutputTransform | None = None) -> np.ndarray:
        """(N, n) booleans: whether ``model``'s predicted label (the argmax, after ``output_transform``
        when given: a defense's noisy output) is right on each of ``n`` augmented queries of each
        record ``index``; query 0 is the record itself. The label-only attacks read only this
        (Choquette-Choo et al. 2021). Default: not offered (:attr:`label_queries_missing` says why)."""
        raise ConfigError(f"label-only queries: {self.label_queries_missing}")

    def augmented_confidences(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                              n: int, output_transform: OutputTransform | None = None) -> np.ndarray:
        """(N, n) float64 LiRA signals φ = log c − log(1 − c) of the true label (c its probability, after
        ``output_transform`` on the log-probabilities when given) on the same ``n`` augmented queries as
        :meth:`label_queries`; query 0 is the record itself. LiRA with augmented queries reads only this
        (Carlini et al. 2022). Default: not offered (:attr:`label_queries_missing` says why)."""
        raise ConfigError(f"augmented queries: {self.label_queries_missing}")

    def label_queries_under(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray, n: int,
                            output_transforms: Sequence[OutputTransform | None]) -> np.ndarray:
        """(T, N, n): :meth:`label_queries` under each of ``output_transforms`` (a defense's draws), each called
        on its queries in the order :meth:`label_queries` calls it. Default: one :meth:`label_queries` per
        transform; a task whose noise acts on the model's outputs overrides it to run the model once for all."""
        return np.stack([self.label_queries(cfg, model, data, index, n, t) for t in output_transforms])

    def augmented_confidences_under(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                                    n: int, output_transforms: Sequence[OutputTransform | None]) -> np.ndarray:
        """(T, N, n): :meth:`augmented_confidences` under each of ``output_transforms``, as
        :meth:`label_queries_under` does for the labels."""
        return np.stack([self.augmented_confidences(cfg, model, data, index, n, t) for t in output_transforms])

    #: whether :meth:`augmented_answers` answers both augmented questions from one forward pass
    augmented_in_one_pass: bool = False

    def augmented_answers(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                          n: int) -> tuple[np.ndarray, np.ndarray]:
        """(:meth:`label_queries`, :meth:`augmented_confidences`) of the same queries, undefended: what
        the label-only attack and LiRA with augmented queries both read (one shared path). Default:
        the two methods; a task whose two read the same outputs answers both from one forward pass
        (and says so: :attr:`augmented_in_one_pass`)."""
        return (self.label_queries(cfg, model, data, index, n),
                self.augmented_confidences(cfg, model, data, index, n))

    def attack_features(self, cfg: ExperimentConfig, data: TaskData, index: np.ndarray) -> np.ndarray | None:
        """(N, F) features of records ``index`` that do not depend on any model (the record itself:
        an image's pixels and label), for attacks that predict per-record statistics from the record
        (quantile regression, Bertran et al. 2023). Default None: the task offers none."""
        return None

    def examples(
        self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, members: np.ndarray, nonmembers: np.ndarray
    ) -> dict[str, Any]:
        """JSON-serialisable showcase of the trained victim on a few member and non-member records
        (e.g. translations with per-token reference probabilities, rendered rollouts on maps).

        The app draws it; the CLI writes it under ``examples``. Default: nothing to show.
        """
        return {}

    def memory_estimate(self, cfg: ExperimentConfig, data: TaskData) -> int:
        """Rough peak bytes one training run needs beyond the loaded data (0 = negligible).

        The pipeline refuses a config whose estimate exceeds the memory available, with a
        :class:`~core.foundations.errors.ResourceLimitError`, instead of letting the process be killed.
        """
        return 0

    #: the audit canaries' design in words (None: the task has no canaries yet)
    canary_design: str | None = None

    def canary_data(self, cfg: ExperimentConfig, data: TaskData, index: np.ndarray,
                    rng: np.random.Generator) -> TaskData:
        """``data`` with the records ``index`` turned into audit canaries (records the model can
        only fit by memorising them; Steinke, Nasr & Jagielski 2023), for the one-run audit of
        :mod:`core.analyses.record_views`. The records stay where they are, so ``index`` addresses the canaries."""
        raise ConfigError(f"the one-run audit has no canaries for the {self.name} task yet "
                          "(their design is in docs/record_views.md)")

    def describe_record(self, cfg: ExperimentConfig, data: TaskData, index: int, victim: VictimLoader | None = None,
                        role: str = "member") -> RecordView:
        """Record ``index`` of ``data`` as the app shows it (the Analyses page's most exposed members
        and its selected record): the record itself and, where the task shows one, what ``cfg``'s
        victim (``victim()``, called only then) answers on it. ``role`` ("member" or "non-member")
        labels it. Data only: the page draws it by :attr:`RecordView.kind`. Default: the index."""
        return RecordView("text", f"record {int(index)} ({role})", lines=(("record", f"#{int(index)}"),))

    #: what a record id of a member list is (a user's own trained model), one line for the docs and the errors
    record_id_meaning: str = "the record's 0-based index in the task's record list"

    def record_ids(self, cfg: ExperimentConfig, data: TaskData, index: np.ndarray) -> list[str]:
        """The ids of records ``index`` as a member list writes them (:meth:`record_indices` inverts
        it). Default: the index in decimal."""
        return [str(int(i)) for i in index]

    def record_indices(self, cfg: ExperimentConfig, data: TaskData, ids: Sequence[str]) -> np.ndarray:
        """The record indices of a member list's ``ids`` (in that order): how a user's list of the
        records their model trained on addresses ``data``. A task whose records have
        names (a relative image path, a CSV row, a text line) overrides this and :meth:`record_ids`.

        Default: an id is :attr:`record_id_meaning`, written in decimal; the records are those of
        the victim's and the attacker's halves.

        Raises:
            ConfigError: an id that names no record (the first few are quoted).
        """
        known = np.union1d(data.victim_pool, data.attacker_pool)
        # decimal digits only ("+3", " 3", "3.0", "٣" are no ids); -1 where not a number
        out = np.array([int(t) if t.isascii() and t.isdigit() and len(t) <= 18 else -1 for t in ids], np.int64)
        unknown = [t for t, ok in zip(ids, np.isin(out, known)) if not ok]
        if unknown:
            shown = ", ".join(repr(t[:40]) for t in unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")
            raise ConfigError(f"members: {len(unknown)} id(s) name no record of {data.description!r}: {shown} "
                              f"(an id is {self.record_id_meaning}, 0..{int(known.max()) if known.size else -1})")
        return out

    def slice_labels(self, cfg: ExperimentConfig, data: TaskData, records: np.ndarray,
                     summary: dict[str, Any]) -> dict[str, list[str]]:
        """The slicings of the evaluated ``records`` (dataset indices) for vulnerability per slice
        (:func:`core.analyses.record_views.slices_view`; TF Privacy's SlicingSpec): slicing name → each record's
        slice label. Default: the records' answer length (steps per record, ``summary["records"]
        ["length"]``) in terciles."""
        return {"answer length": quantile_buckets(summary["records"]["length"], 3, " steps")}

    def primary_attack(self) -> str:
        """Name of the attack reported in the JSON's ``attack`` block."""
        return "shadow"

    def param_count(self, model: nn.Module) -> int:
        return count_params(model)


def named_record_indices(names: Sequence[str], ids: Sequence[str], description: str, meaning: str) -> np.ndarray:
    """The indices of records named ``ids`` among ``names`` (record i is named ``names[i]``): a member
    list of a source whose records have names (a relative image path, a line number).

    Raises:
        ConfigError: an id that names no record (the first few are quoted).
    """
    where = {name: i for i, name in enumerate(names)}
    out = np.array([where.get(t, -1) for t in ids], np.int64)
    unknown = [t for t, i in zip(ids, out) if i < 0]
    if unknown:
        shown = ", ".join(repr(t[:60]) for t in unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")
        raise ConfigError(f"members: {len(unknown)} id(s) name no record of {description!r}: {shown} (an id is "
                          f"{meaning})")
    return out


class LogitClassifier:
    """What every task whose model maps a record to class logits shares (image, tabular): accuracy,
    accuracy read off the answers, and the answers themselves, all from the task's ``_logits``
    (``records.labels`` holds the labels). A task mixes it in before :class:`Task`."""

    def _logits(self, model: nn.Module, data: TaskData, index: np.ndarray) -> torch.Tensor:
        raise NotImplementedError

    def utility(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                output_transform: OutputTransform | None = None) -> float:
        """Accuracy: the most probable class (of the transformed distribution) against the label."""
        scores = self._logits(model, data, index)
        if output_transform is not None:
            scores = output_transform(torch.log_softmax(scores.double(), 1))
        return float((scores.argmax(1) == data.records.labels[index]).float().mean())

    def utility_of_responses(self, cfg: ExperimentConfig, responses: Responses) -> float | None:
        """Accuracy from the answers: the label is the argmax iff no class is strictly more probable
        (rank 0, counted in float64 log space) and none ties it at the top. A tie at the top (equal
        logits, e.g. a collapsed noisy model) returns None: argmax's first-index rule needs the logits."""
        top = responses.top_probs
        if top.shape[1] > 1 and bool((top[:, 0] == top[:, 1]).any()):
            return None
        # the float32 mean of :meth:`utility`, so both give the very same number
        return float(torch.from_numpy(responses.ref_rank == 0).float().mean())

    def respond(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                record_features: bool = True) -> Responses:
        """One probability vector (softmax of the logits) per record; the reference is the one-hot label."""
        logits = self._logits(model, data, index)
        return Responses.from_logits(logits, np.ones(len(index), np.int64), data.records.labels[index])

    def mislabeled(self, data: TaskData, index: np.ndarray, rng: np.random.Generator) -> torch.Tensor:
        """The labels with those of ``index`` shifted by a seeded offset in 1..K−1 (mislabeled canaries):
        a record with a wrong label is fitted only by memorising it."""
        rec = data.records
        labels = rec.labels.clone()
        offset = torch.from_numpy(rng.integers(1, rec.n_classes, len(index))).to(labels.dtype)
        labels[torch.as_tensor(index)] = (labels[torch.as_tensor(index)] + offset) % rec.n_classes
        return labels
