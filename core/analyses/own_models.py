"""The analyses whose models are not the run's: model mismatch and memorization.

* :func:`mismatch` — paper 001 A.3: the run's victim attacked with shadows of another width (half /
  double the task's width knob), trained and cached under their own config.
* :func:`memorization` — paper 000 Fig. 6 / 001 Figs. 1–3: the victim and every shadow learn k
  disjoint blocks one after another; each block is attacked separately, in the order it was learned.

Both train models outside the pipeline's roles (other shadows, block-wise training), so they are long
(the app runs them in a worker) and live apart from :mod:`core.analyses.analysis`, which reads the run's
own models and registers every analysis, these two included.
"""
from __future__ import annotations

from typing import Any

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


# ---------------------------------------------------------------------------- model mismatch
def mismatch(cfg: ExperimentConfig, scales: tuple[float, ...] = (0.5, 2.0), progress=None,
             cache: ArtifactCache | None = None) -> dict[str, Any]:
    """Attack the victim of ``cfg`` with shadows whose width knob is scaled (paper 001 A.3).

    The victim, its evaluation set and the attacker's data stay the same; only the shadows'
    architecture size changes (they are trained, and cached, under their own config).
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
    rows = [{"scale": 1.0, knob: getattr(cfg.options, knob), "accuracy": base}]
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
        rows.append({"scale": scale, knob: width, "accuracy": acc})
    return {"arch": cfg.arch, "knob": knob, "rows": rows, "attack": models.task.primary_attack()}


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
    ``val_index`` is given, the utility on the current block and on ``val_index`` after every
    epoch (the saw-tooth of paper 000 Fig. 6).
    """
    seed_everything(seed)
    model = task.build_model(cfg, data).to(default_device())
    block_cfg = cfg.with_updates({"epochs": epochs_per_block, "attack_epochs": ()})
    curve: list[dict[str, Any]] = []
    for b, block in enumerate(blocks):
        def on_epoch(epoch: int, m, b=b, block=block) -> None:
            if val_index is not None:
                m.eval()
                curve.append({"step": b * epochs_per_block + epoch, "block": b + 1,
                              "utility_current_block": task.utility(block_cfg, m, data, block),
                              "utility_val": task.utility(block_cfg, m, data, val_index)})
                m.train()

        def progress(f: float, b=b) -> None:
            if on_progress:
                on_progress((b + f) / len(blocks))

        task.train(block_cfg, model, data, block, on_epoch, progress)
    return model.eval(), curve


def memorization(cfg: ExperimentConfig, blocks: int = 4, epochs_per_block: int | None = None, progress=None,
                 cache: ArtifactCache | None = None) -> dict[str, Any]:
    """Paper 000 Fig. 6 / 001 Figs. 1–3: the victim and every shadow learn ``blocks`` disjoint
    blocks of their members in sequence; block j is then attacked on its own — an attack fitted on
    the shadows' block-j members vs their non-members, evaluated on the victim's block-j members
    vs as many of its non-members. The studies' finding: the FFNN forgets early blocks (attack
    → 50 %), the RNN does not. The result is cached under the training hash and the schedule.
    """
    refuse_loaded_victim(cfg, "memorization")
    cache = cache or ArtifactCache()
    if not 2 <= blocks <= 10:
        raise ConfigError(f"blocks must lie in 2..10, got {blocks}")
    epochs_per_block = epochs_per_block or max(1, cfg.epochs // blocks)
    key = cache.key("analysis", cfg.training_hash, "memorization", cfg.config_hash, blocks, epochs_per_block)
    stored = cache.get_json(key)
    if isinstance(stored, dict) and "blocks" in stored:
        return stored
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
    rows = []
    attack_sets = [build_attacks(task, cfg) for _ in range(blocks)]
    with single_thread():  # one attack per block, fitted together (core.attacks.shadow_attacks.fit_attack_sets)
        fit_attack_sets(attack_sets, [Responses.concat([r for pair in zip(shadow_answers[j], shadow_out) for r in pair])
                                      for j in range(blocks)], np.concatenate([membership] * cfg.n_shadows))
    for j, attacks in enumerate(attack_sets):
        with single_thread():
            target = Responses.concat([task.respond(cfg, victim, data, victim_blocks[j][:n_eval]), non])
            out = score_attacks(attacks, target, membership)
        rows.append({"block": j + 1, "attack_accuracy": out[primary].result.accuracy, "attack_auc": out[primary].result.auc,
                     "accuracies": {n: o.result.accuracy for n, o in out.items()},
                     "ape_members": float(target.ape[:n_eval].mean()), "ape_non_members": float(target.ape[n_eval:].mean())})
    result = {"arch": cfg.arch, "blocks": rows, "curve": curve, "block_size": size, "epochs_per_block": epochs_per_block,
              "n_eval_per_block": n_eval, "attack": primary}
    cache.put_json(key, result, allow_nan=False)
    return result
