"""The analyses whose models are not the run's: model mismatch and memorization.

* :func:`mismatch` — paper 001 A.3: the run's victim attacked with shadows of another width (half /
  double the task's width knob), trained and cached under their own config.
* :func:`memorization` — paper 000 Fig. 6 / 001 Figs. 1–3: the victim and every shadow learn k
  disjoint blocks one after another; each block is attacked separately, in the order it was learned.

Both train models of their own, so they are long (the app runs them in a worker). Their results are typed
(:class:`Mismatch`, :class:`Memorization`) and returned as their JSON (``to_dict``), which the registry, the
worker jobs, the cache and the views carry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from core.attacks.shadow_attacks import fit_attack_sets, fit_attacks, score_attacks
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import build_attacks, fitted_attacks, trained_models
from core.experiment.roles import make_splits, refuse_loaded_victim, role_seed, seed_everything, train_or_load
from core.foundations.config import ExperimentConfig
from core.foundations.device import default_device, single_thread
from core.foundations.errors import ConfigError
from core.measurement.responses import Responses
from core.tasks import get_task


# ---------------------------------------------------------------------------- the results
@dataclass(frozen=True)
class MismatchRow:
    """The victim attacked with shadows of one size: ``scale`` × the task's width knob (1 = the run's own
    shadows), the knob's value ``width``, and every attack's accuracy on the victim."""

    scale: float
    width: int
    accuracy: dict[str, float]

    def to_dict(self, knob: str) -> dict[str, Any]:
        """The row as written: the width under the knob's own name (``cnn_width``, ``hidden``, …)."""
        return {"scale": self.scale, knob: self.width, "accuracy": dict(self.accuracy)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], knob: str) -> "MismatchRow":
        return cls(d["scale"], d[knob], dict(d["accuracy"]))


@dataclass(frozen=True)
class Mismatch:
    """:func:`mismatch`'s result: the rows in the order measured (the matched shadows first), for ``arch``;
    ``attack`` is the task's primary attack."""

    arch: str
    knob: str
    rows: tuple[MismatchRow, ...]
    attack: str

    def to_dict(self) -> dict[str, Any]:
        return {"arch": self.arch, "knob": self.knob, "rows": [r.to_dict(self.knob) for r in self.rows],
                "attack": self.attack}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Mismatch":
        return cls(d["arch"], d["knob"], tuple(MismatchRow.from_dict(r, d["knob"]) for r in d["rows"]), d["attack"])


@dataclass(frozen=True)
class CurvePoint:
    """The victim's utility after one epoch of block-wise training: on the block it is learning and on
    held-out records (the saw-tooth of paper 000 Fig. 6); ``step`` counts epochs over all blocks."""

    step: int
    block: int
    utility_current_block: float
    utility_val: float

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "block": self.block, "utility_current_block": self.utility_current_block,
                "utility_val": self.utility_val}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CurvePoint":
        return cls(d["step"], d["block"], d["utility_current_block"], d["utility_val"])


@dataclass(frozen=True)
class MemorizedBlock:
    """Block ``block`` (1 = learned first) attacked on its own: the primary attack's accuracy and AUC, every
    attack's accuracy, and the victim's mean APE on the block's members and on as many non-members."""

    block: int
    attack_accuracy: float
    attack_auc: float | None
    accuracies: dict[str, float]
    ape_members: float
    ape_non_members: float

    def to_dict(self) -> dict[str, Any]:
        return {"block": self.block, "attack_accuracy": self.attack_accuracy, "attack_auc": self.attack_auc,
                "accuracies": dict(self.accuracies), "ape_members": self.ape_members,
                "ape_non_members": self.ape_non_members}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "MemorizedBlock":
        return cls(d["block"], d["attack_accuracy"], d["attack_auc"], dict(d["accuracies"]), d["ape_members"],
                   d["ape_non_members"])


@dataclass(frozen=True)
class Memorization:
    """:func:`memorization`'s result (cached as its :meth:`to_dict`): the blocks in the order learned, the
    victim's training curve, ``block_size`` members per block, ``n_eval_per_block`` members (and as many
    non-members) attacked per block, ``attack`` the task's primary attack."""

    arch: str
    blocks: tuple[MemorizedBlock, ...]
    curve: tuple[CurvePoint, ...]
    block_size: int
    epochs_per_block: int
    n_eval_per_block: int
    attack: str

    def to_dict(self) -> dict[str, Any]:
        return {"arch": self.arch, "blocks": [b.to_dict() for b in self.blocks],
                "curve": [c.to_dict() for c in self.curve], "block_size": self.block_size,
                "epochs_per_block": self.epochs_per_block, "n_eval_per_block": self.n_eval_per_block,
                "attack": self.attack}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Memorization":
        return cls(d["arch"], tuple(MemorizedBlock.from_dict(b) for b in d["blocks"]),
                   tuple(CurvePoint.from_dict(c) for c in d["curve"]), d["block_size"], d["epochs_per_block"],
                   d["n_eval_per_block"], d["attack"])


# ---------------------------------------------------------------------------- model mismatch
def mismatch(cfg: ExperimentConfig, scales: tuple[float, ...] = (0.5, 2.0), progress=None,
             cache: ArtifactCache | None = None) -> Mismatch:
    """Attack the victim of ``cfg`` with shadows whose width knob is scaled (paper 001 A.3); the victim,
    its evaluation set and the attacker's data stay the same. The shadows are cached under their own config.
    """
    cache = cache or ArtifactCache()
    models = trained_models(cfg, cache=cache)
    matched = fitted_attacks(models, cache=cache)
    target = models.victim.responses[cfg.epochs]
    member = models.eval_membership
    base = {n: o.result.accuracy for n, o in score_attacks(matched, target, member).items()}
    knob = models.task.width_knob  # the option that sets both architectures' size (001 A.3)
    if not knob:
        raise ConfigError(f"task {cfg.task} names no width knob: the model-mismatch analysis cannot scale its shadows")
    rows = [MismatchRow(1.0, getattr(cfg.options, knob), base)]
    for k, scale in enumerate(scales):
        width = max(1, int(round(getattr(cfg.options, knob) * scale)))
        if knob == "cnn_width" and width >= 8:
            width = 8 * round(width / 8)  # GroupNorm splits channels into 8 groups
        other = cfg.with_updates({knob: width}).validate()
        shadows = _shadows_only(other, cache, progress=(lambda f, k=k: progress((k + f) / len(scales))) if progress else None)
        attacks = build_attacks(models.task, cfg)
        membership = np.concatenate([np.r_[np.ones(cfg.n_eval, bool), np.zeros(cfg.n_eval, bool)]] * len(shadows))
        with single_thread():
            fit_attacks(attacks, Responses.concat(shadows), membership)
            acc = {n: o.result.accuracy for n, o in score_attacks(attacks, target, member).items()}
        rows.append(MismatchRow(scale, width, acc))
    return Mismatch(cfg.arch, knob, tuple(rows), models.task.primary_attack())


def _shadows_only(cfg: ExperimentConfig, cache: ArtifactCache, progress=None) -> list[Responses]:
    """The shadows of ``cfg`` (trained or loaded), their final-epoch Responses."""
    task = get_task(cfg.task)
    data = task.load(cfg)
    splits = make_splits(cfg, data)
    out = []
    for i in range(cfg.n_shadows):
        query = np.concatenate([splits.shadow_in[i][: cfg.n_eval], splits.shadow_out[i]])
        trained = train_or_load(task, cfg, data, f"shadow_{i}", splits.shadow_in[i], query, cache,
                                on_progress=(lambda f, i=i: progress((i + f) / cfg.n_shadows)) if progress else None)
        out.append(trained.responses[cfg.epochs])
    return out


# ---------------------------------------------------------------------------- memorization
def _train_in_blocks(task, cfg: ExperimentConfig, data, blocks: list[np.ndarray], epochs_per_block: int, seed: int,
                     val_index: np.ndarray | None = None, on_progress=None):
    """A fresh model (seeded) trained on ``blocks`` one after another, ``epochs_per_block`` each.

    Each block goes through the task's own training loop (a fresh optimizer per block: the
    model keeps its weights, not its optimizer state). Returns the model and, when
    ``val_index`` is given, a :class:`CurvePoint` after every epoch (the saw-tooth of paper 000 Fig. 6).
    """
    seed_everything(seed)
    model = task.build_model(cfg, data).to(default_device())
    block_cfg = cfg.with_updates({"epochs": epochs_per_block, "attack_epochs": ()})
    curve: list[CurvePoint] = []
    for b, block in enumerate(blocks):
        def on_epoch(epoch: int, m, b=b, block=block) -> None:
            if val_index is not None:
                m.eval()
                curve.append(CurvePoint(b * epochs_per_block + epoch, b + 1, task.utility(block_cfg, m, data, block),
                                        task.utility(block_cfg, m, data, val_index)))
                m.train()

        def progress(f: float, b=b) -> None:
            if on_progress:
                on_progress((b + f) / len(blocks))

        task.train(block_cfg, model, data, block, on_epoch, progress)
    return model.eval(), curve


def memorization(cfg: ExperimentConfig, blocks: int = 4, epochs_per_block: int | None = None, progress=None,
                 cache: ArtifactCache | None = None) -> Memorization:
    """Paper 000 Fig. 6 / 001 Figs. 1–3: the victim and every shadow learn ``blocks`` disjoint blocks of
    their members in sequence; block j is then attacked on its own (fitted on the shadows' block-j members
    vs their non-members, evaluated on the victim's). Cached under the training hash and the schedule.
    """
    refuse_loaded_victim(cfg, "memorization")
    cache = cache or ArtifactCache()
    if not 2 <= blocks <= 10:
        raise ConfigError(f"blocks must lie in 2..10, got {blocks}")
    epochs_per_block = epochs_per_block or max(1, cfg.epochs // blocks)
    key = cache.key("analysis", cfg.training_hash, "memorization", cfg.config_hash, blocks, epochs_per_block)
    stored = cache.get_json(key)
    if isinstance(stored, dict) and "blocks" in stored:
        return Memorization.from_dict(stored)
    task = get_task(cfg.task)
    data = task.load(cfg)
    splits = make_splits(cfg, data)
    size = cfg.n_train // blocks
    if size < 2:
        raise ConfigError(f"n_train = {cfg.n_train} is too small for {blocks} blocks")
    n_eval = min(size, cfg.n_eval)
    models_total = 1 + cfg.n_shadows
    done = [0]

    def stage(f: float) -> None:
        if progress:
            progress((done[0] + f) / models_total)

    def split(members: np.ndarray) -> list[np.ndarray]:
        return [members[j * size : (j + 1) * size] for j in range(blocks)]

    victim_blocks = split(splits.victim_members)
    victim, curve = _train_in_blocks(task, cfg, data, victim_blocks, epochs_per_block, role_seed(cfg, "victim"),
                                     splits.victim_nonmembers[: cfg.n_eval], stage)
    done[0] += 1
    victim_out = splits.victim_nonmembers[:n_eval]
    shadow_answers: list[list[Responses]] = [[] for _ in range(blocks)]
    shadow_out: list[Responses] = []
    for i in range(cfg.n_shadows):
        shadow_blocks = split(splits.shadow_in[i])
        model, _ = _train_in_blocks(task, cfg, data, shadow_blocks, epochs_per_block, role_seed(cfg, f"shadow_{i}"),
                                    None, stage)
        done[0] += 1
        for j in range(blocks):
            shadow_answers[j].append(task.respond(cfg, model, data, shadow_blocks[j][:n_eval]))
        shadow_out.append(task.respond(cfg, model, data, splits.shadow_out[i][:n_eval]))
    non = task.respond(cfg, victim, data, victim_out)
    membership = np.r_[np.ones(n_eval, bool), np.zeros(n_eval, bool)]
    primary = task.primary_attack()
    rows: list[MemorizedBlock] = []
    attack_sets = [build_attacks(task, cfg) for _ in range(blocks)]
    with single_thread():  # one attack per block, fitted together (core.attacks.shadow_attacks.fit_attack_sets)
        fit_attack_sets(attack_sets, [Responses.concat([r for pair in zip(shadow_answers[j], shadow_out) for r in pair])
                                      for j in range(blocks)], np.concatenate([membership] * cfg.n_shadows))
    for j, attacks in enumerate(attack_sets):
        with single_thread():
            target = Responses.concat([task.respond(cfg, victim, data, victim_blocks[j][:n_eval]), non])
            out = score_attacks(attacks, target, membership)
        rows.append(MemorizedBlock(j + 1, out[primary].result.accuracy, out[primary].result.auc,
                                   {n: o.result.accuracy for n, o in out.items()}, float(target.ape[:n_eval].mean()),
                                   float(target.ape[n_eval:].mean())))
    result = Memorization(cfg.arch, tuple(rows), tuple(curve), size, epochs_per_block, n_eval, primary)
    cache.put_json(key, result.to_dict(), allow_nan=False)
    return result
