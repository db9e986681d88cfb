"""The one training loop: optimizer from the config, seeded batching, hooks, progress, DP-SGD.

Image classification and translation train through :func:`train_epochs`; navigation's PPO keeps
its own rollout/update structure (:mod:`core.training.ppo`) but builds its optimizer with
:func:`build_optimizer` and goes private with :func:`privatize`, the same hooks.

One epoch of :func:`train_epochs` over N training records with batch size B:

* **non-private** — a seeded permutation of 0..N−1 cut into ⌈N/B⌉ batches; per batch:
  ``loss = batch_loss(index)`` (the mean of the records' losses), backward, optional global
  gradient-norm clip, optimizer step;
* **private** (``privacy`` given) — DP-SGD as :mod:`core.training.dpsgd` states it: ⌈N/B⌉ Poisson
  batches (q = 1/⌈N/B⌉, the same seeded generator), per-record gradients of ``batch_loss``
  clipped to C, Gaussian noise added; the global clip is not applied.

The optimizer is Adam with the L2 penalty (λ/2)·‖W‖² of the study's regularisation defense
(paper 000 Fig. 7) on **weight matrices only** — parameters with two or more dimensions (linear,
convolution, embedding and recurrent weights) — never on biases or normalisation gains (as
nanoGPT's ``configure_optimizers``): penalising those shifts activations without limiting
capacity. Adam's coupled ``weight_decay`` adds λ·W to the gradient; under DP-SGD it is added to
the noisy gradient, a data-independent step that costs no privacy.

Precision: with ``autocast`` (``cfg.precision = "bf16"``: :func:`autocast_dtype`) the forward
pass and the loss of each step run under ``torch.autocast`` in that dtype; parameters, gradients
and Adam's state stay float32 (bfloat16 has float32's range, so no loss scaling is needed), and
nothing measured after training — Responses, utility — runs under autocast.

Learning-rate schedule: with ``lr_factor`` (e.g. :func:`warmup_inverse_sqrt`) each step's learning rate
is the optimizer's base rate times ``lr_factor(step)`` (step 0, 1, … over the whole run).

Hooks: ``on_batch(Batch)`` after every optimizer step (record positions, loss and, under DP,
each record's gradient norm before clipping), ``on_epoch(epoch, model)`` after every epoch,
``on_progress(fraction)`` after every batch.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from core.foundations.errors import ConfigError
from core.training.dpsgd import PrivacyRecord, PrivacySettings, make_private, per_sample_norms

#: ``batch_loss(index)``: the mean loss of the records at positions ``index`` (a CPU LongTensor)
BatchLoss = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class Batch:
    """What ``on_batch`` is told after each optimizer step.

    Attributes:
        epoch: 1-based epoch (PPO: update).
        step: 0-based optimizer step within the epoch.
        index: positions (0..N−1) of the records (PPO: of the trajectory windows) in the batch.
        loss: the batch's mean loss (NaN for an empty Poisson batch: a noise-only step).
        per_sample_norms: DP-SGD only: ‖g_x‖₂ of each record's gradient before clipping.
    """

    epoch: int
    step: int
    index: np.ndarray
    loss: float
    per_sample_norms: np.ndarray | None = None


BatchCallback = Callable[[Batch], None]


@dataclass
class TrainingRecord:
    """What a training run reports besides the trained model.

    Attributes:
        epochs: epochs (PPO: updates) run.
        steps: optimizer steps taken.
        seconds: wall-clock seconds of the loop.
        privacy: DP-SGD only: σ, C, q, steps and the accountant history
            (:class:`core.training.dpsgd.PrivacyRecord`), else None.
    """

    epochs: int
    steps: int
    seconds: float
    privacy: PrivacyRecord | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------- optimizer
def decay_groups(model: nn.Module) -> tuple[list[str], list[str]]:
    """(names decayed, names not decayed): weight matrices (≥ 2 dimensions) vs biases and
    normalisation gains (1 dimension)."""
    decay: list[str] = []
    no_decay: list[str] = []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (decay if p.dim() >= 2 else no_decay).append(name)
    return decay, no_decay


def build_optimizer(model: nn.Module, lr: float, weight_decay: float = 0.0, eps: float = 1e-8) -> torch.optim.Adam:
    """Adam with the L2 penalty ``weight_decay`` on weight matrices only (module docstring).

    Two parameter groups, decayed first; with ``weight_decay = 0`` the steps are Adam's exactly.
    """
    return adam_over(dict(model.named_parameters()), model, lr, weight_decay, eps)


def adam_over(params: dict[str, torch.Tensor], layout: nn.Module, lr: float, weight_decay: float = 0.0,
              eps: float = 1e-8) -> torch.optim.Adam:
    """Adam over ``params`` (named like ``layout``'s parameters: the model's own, or an ensemble's
    stacked (M, …) copies), grouped by :func:`decay_groups` of ``layout`` — one grouping rule for
    the sequential and the ensemble path, so L2 means the same on both."""
    decay, no_decay = decay_groups(layout)
    groups = [{"params": [params[n] for n in decay], "weight_decay": weight_decay},
              {"params": [params[n] for n in no_decay], "weight_decay": 0.0}]
    return torch.optim.Adam([g for g in groups if g["params"]], lr=lr, eps=eps)


def seeded_generator() -> torch.Generator:
    """A CPU generator seeded from the seed the pipeline gave this model (``torch.initial_seed``),
    so the data order (and Poisson sampling) is fixed by the role's seed alone."""
    return torch.Generator().manual_seed(int(torch.initial_seed()) % 2**63)


def noise_seed() -> int:
    """Seed of DP-SGD's noise generator, derived from the role's seed (independent of the data order)."""
    return (int(torch.initial_seed()) * 6364136223846793005 + 1442695040888963407) % 2**63


def autocast_dtype(cfg: Any) -> torch.dtype | None:
    """The autocast dtype of a config's training (``precision``), None for float32."""
    return torch.bfloat16 if getattr(cfg, "precision", "float32") == "bf16" else None


def warmup_inverse_sqrt(warmup_steps: int) -> Callable[[int], float] | None:
    """The Transformer's schedule (Vaswani et al. 2017, §5.3) as a factor of the peak rate: linear
    warm-up over ``warmup_steps`` steps to 1, then decay as √(warmup_steps / step):
    f(s) = min((s + 1) / W, √(W / (s + 1))). None for ``warmup_steps = 0`` (a constant rate)."""
    if warmup_steps < 0:
        raise ValueError("warmup_steps must be ≥ 0")
    if warmup_steps == 0:
        return None
    w = float(warmup_steps)
    return lambda step: min((step + 1) / w, (w / (step + 1)) ** 0.5)


# ---------------------------------------------------------------------------- privacy hook
def privatize(model: nn.Module, optimizer: torch.optim.Optimizer, n_samples: int, batch_size: int, passes: int,
              settings: PrivacySettings, generator: torch.Generator, unit: str):
    """Wrap ``model`` and ``optimizer`` for DP-SGD over ``n_samples`` samples with Opacus
    (:func:`core.training.dpsgd.make_private`): Poisson batches of expected size ≈ ``batch_size``
    drawn with ``generator``, ``passes`` passes, σ from ``settings`` (given, or calibrated to the
    target ε over all the steps). ``unit`` says what one sample is (what the guarantee protects)."""
    return make_private(model, optimizer, n_samples, batch_size, passes, settings, generator, noise_seed(), unit)


# ---------------------------------------------------------------------------- the loop
def train_epochs(
    model: nn.Module,
    n_records: int,
    batch_loss: BatchLoss,
    *,
    epochs: int,
    batch_size: int,
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
    privacy: PrivacySettings | None = None,
    clip_norm: float | None = None,
    autocast: torch.dtype | None = None,
    unit: str = "one training record",
    on_batch: BatchCallback | None = None,
    on_epoch: Callable[[int, nn.Module], None] | None = None,
    on_progress: Callable[[float], None] | None = None,
    lr_factor: Callable[[int], float] | None = None,
) -> TrainingRecord:
    """Train ``model`` in place for ``epochs`` epochs over records 0..``n_records``−1 (see the
    module docstring); ``batch_loss(index)`` must return the *mean* of the per-record losses
    (DP-SGD's per-sample gradients are taken of it), each record's loss depending on that record
    alone. ``autocast``: the dtype of the forward passes (None: float32), not with ``privacy``.
    ``lr_factor(step)``: each step's learning rate as a factor of the optimizer's (module docstring).
    Returns the :class:`TrainingRecord` (with the privacy record under DP-SGD)."""
    if autocast is not None and privacy is not None:
        raise ValueError("autocast training cannot be combined with DP-SGD")
    start = time.perf_counter()
    model.train()
    private = None
    if privacy is not None:
        private = privatize(model, optimizer, n_records, batch_size, epochs, privacy, generator, unit)
        steps_per_epoch = private.steps_per_pass
    else:
        steps_per_epoch = -(-n_records // batch_size)
    steps = 0
    base_lr = [g["lr"] for g in optimizer.param_groups]
    try:
        for epoch in range(1, epochs + 1):
            if private is None:
                perm = torch.randperm(n_records, generator=generator)
                batches = (perm[i : i + batch_size] for i in range(0, n_records, batch_size))
            else:
                batches = private.batches()
            for k, index in enumerate(batches):
                if lr_factor is not None:
                    factor = float(lr_factor(steps))
                    for group, lr in zip(optimizer.param_groups, base_lr):
                        group["lr"] = lr * factor
                try:
                    loss, norms = _step(model, optimizer, private, batch_loss, index, clip_norm, on_batch is not None,
                                        autocast)
                except RuntimeError as exc:
                    if steps == 0 and autocast is not None and _kernel_missing(exc):
                        # the first forward pass failed before any weight moved: a refusal, nothing lost
                        raise ConfigError(f"precision=bf16: this {next(model.parameters()).device.type.upper()} has "
                                          f"no {autocast} kernel for a layer of this model ({_first_line(exc)}); "
                                          f"train it with precision=float32") from exc
                    raise
                steps += 1
                if on_batch is not None:  # reading the loss waits for the GPU: only when someone asks
                    on_batch(Batch(epoch, k, index.numpy(), float(loss), norms))
                if on_progress is not None:
                    on_progress((epoch - 1 + min(k + 1, steps_per_epoch) / steps_per_epoch) / epochs)
            if on_epoch is not None:
                on_epoch(epoch, model)
    finally:
        for group, lr in zip(optimizer.param_groups, base_lr):  # the optimizer as it came
            group["lr"] = lr
        record = private.record() if private is not None else None
        if private is not None:
            private.close()
    return TrainingRecord(epochs, steps, time.perf_counter() - start, record)


def _kernel_missing(exc: RuntimeError) -> bool:
    """Whether ``exc`` says the backend has no kernel for a dtype (e.g. oneDNN's bfloat16 LSTM on a CPU without
    AVX-512 BF16: "could not create a primitive descriptor"), as opposed to a bug in the model or the data."""
    text = str(exc)
    return "could not create a primitive" in text or "not implemented for 'BFloat16'" in text


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__


def _step(model: nn.Module, optimizer: torch.optim.Optimizer, private, batch_loss: BatchLoss, index: torch.Tensor,
          clip_norm: float | None, want_norms: bool,
          autocast: torch.dtype | None = None) -> tuple[torch.Tensor | float, np.ndarray | None]:
    """One optimizer step on the records ``index``: (loss, per-sample norms under DP or None).

    The loss comes back as a detached tensor, not a float: turning it into a number would wait for the
    device to finish the step and keep the CPU from queueing the next one."""
    if private is None:
        optimizer.zero_grad(set_to_none=True)
        if autocast is None:
            loss = batch_loss(index)
        else:  # the backward pass runs outside autocast, in the dtypes the forward pass chose
            device_type = next(model.parameters()).device.type
            with torch.autocast(device_type, dtype=autocast):
                loss = batch_loss(index)
        loss.backward()
        if clip_norm is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
        optimizer.step()
        return loss.detach(), None
    private.zero_grad()
    if len(index) == 0:  # Poisson sampling drew nobody: the noise-only step still happens
        private.step(empty=True)
        return float("nan"), (np.zeros(0, np.float32) if want_norms else None)
    loss = batch_loss(index)
    private.backward(loss)
    norms = None
    if want_norms:
        norms = per_sample_norms(private.optimizer).detach().cpu().numpy()
    private.step()
    return loss.detach(), norms
