"""Several models of one config trained as one vectorised ensemble (victim and shadows at once).

The victim and the shadows of a config share every shape; only their initialisation, their
training records and their data order differ. The M models' parameters are stacked along a new
leading dimension (``torch.func.stack_module_state``) and one step computes all M losses at once
with ``torch.func.vmap`` over ``functional_call`` — the same per-member mathematics:

* member m is initialised exactly as the sequential path initialises it (the model built right
  after seeding with the member's seed), and its data order comes from a generator seeded the
  way :func:`core.training.loop.seeded_generator` seeds it — so each member sees the batches it would
  have seen alone;
* the step minimises Σₘ Lₘ(θₘ); since Lₘ depends on θₘ alone, ∂/∂θₘ of the sum is ∂Lₘ/∂θₘ, and
  Adam (element-wise) on the stacked tensors is M independent Adams. Weight decay (L2 on weight
  matrices only) is grouped by the *member's* parameter shapes, as :func:`core.training.loop.build_optimizer`
  groups them.

Models with a layer ``vmap`` cannot batch (``nn.LSTM``: no rule for ``aten::lstm``) train through
:func:`train_joint_epochs` instead: one *joint* model E times as wide holds member e's weights at
fixed places and zeros elsewhere (the ReNet: :class:`core.models.image.JointReNet`), the gradients
off the member entries are masked, and the same argument makes it E independent Adams.

What can differ from the sequential path is float rounding: vmapped kernels (a convolution
becomes one grouped convolution) and wider matrix products add in another order, so weights
agree to float tolerance, not bit for bit. Not covered: DP-SGD (per-sample clipping is Opacus', per model), bf16,
gradient clipping across the whole model, PPO, and the translation models (per-member
variable-length batches; attention mixes features across blocks) — those configs train
sequentially (``Task.supports_ensemble``).
"""
from __future__ import annotations

import copy
import time
from typing import Callable, Sequence

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from core.models.joint import MemberPlaces, hold_off_member_entries, place_members, read_members
from core.training.loop import adam_over, build_optimizer

#: ``member_batches(positions)``: the stacked inputs and targets of one step, from each member's
#: record positions (a list of M CPU LongTensors of equal length): ``(inputs (M, B, …), targets (M, B, …))``
MemberBatches = Callable[[list[torch.Tensor]], tuple[torch.Tensor, torch.Tensor]]
#: ``loss(outputs, targets)`` of one member: the mean of its records' losses
MemberLoss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def train_ensemble_epochs(
    models: Sequence[nn.Module],
    n_records: int,
    member_batches: MemberBatches,
    member_loss: MemberLoss,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    weight_decay: float,
    generators: Sequence[torch.Generator],
    on_epoch: Callable[[int, Sequence[nn.Module]], None] | None = None,
    on_progress: Callable[[float], None] | None = None,
    eps: float = 1e-8,
) -> float:
    """Train ``models`` (same architecture, each on its own ``n_records`` records) in place, as
    one ensemble: per epoch, member m's records in the order of ``generators[m]`` cut into
    ⌈n/B⌉ batches, one Adam step per batch for all members. After every epoch the members'
    weights are written back to ``models`` and ``on_epoch(epoch, models)`` is called. Returns
    the wall-clock seconds of the loop."""
    start = time.perf_counter()
    m = len(models)
    if m == 0 or len(generators) != m:
        raise ValueError("train_ensemble_epochs needs one generator per model and at least one model")
    for model in models:
        model.train()
    params, buffers = stack_module_state(list(models))  # leaves, (M, …) each
    base = copy.deepcopy(models[0]).to("meta")
    optimizer = adam_over(params, models[0], lr, weight_decay, eps)

    def one_loss(p, b, x, y):
        return member_loss(functional_call(base, (p, b), (x,)), y)

    losses = vmap(one_loss)

    def step(inputs: torch.Tensor, targets: torch.Tensor) -> None:
        optimizer.zero_grad(set_to_none=True)
        losses(params, buffers, inputs, targets).sum().backward()
        optimizer.step()

    _member_epochs(models, n_records, member_batches, step, lambda: unstack_into(params, buffers, models),
                   epochs=epochs, batch_size=batch_size, generators=generators, on_epoch=on_epoch,
                   on_progress=on_progress)
    return time.perf_counter() - start


def _member_epochs(models: Sequence[nn.Module], n_records: int, member_batches: MemberBatches,
                   step: Callable[[torch.Tensor, torch.Tensor], None], write_back: Callable[[], None], *,
                   epochs: int, batch_size: int, generators: Sequence[torch.Generator],
                   on_epoch: Callable[[int, Sequence[nn.Module]], None] | None,
                   on_progress: Callable[[float], None] | None) -> None:
    """The loop both ensembles share: per epoch each member's permutation from its own generator
    cut into ⌈n/B⌉ batches, ``step(inputs, targets)`` once per batch for all members, then the
    members' weights written back (``write_back``) for ``on_epoch(epoch, models)``."""
    steps_per_epoch = -(-n_records // batch_size)
    for epoch in range(1, epochs + 1):
        perms = [torch.randperm(n_records, generator=g) for g in generators]
        for k in range(steps_per_epoch):
            step(*member_batches([perm[k * batch_size : (k + 1) * batch_size] for perm in perms]))
            if on_progress is not None:
                on_progress((epoch - 1 + (k + 1) / steps_per_epoch) / epochs)
        write_back()
        if on_epoch is not None:
            on_epoch(epoch, models)
            for model in models:
                model.train()


@torch.no_grad()
def unstack_into(params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor], models: Sequence[nn.Module]) -> None:
    """Copy member m's slice of the stacked tensors into ``models[m]``."""
    for i, model in enumerate(models):
        for name, p in model.named_parameters():
            p.copy_(params[name][i])
        for name, b in model.named_buffers():
            if name in buffers:
                b.copy_(buffers[name][i])


def train_joint_epochs(
    joint: nn.Module,
    places: MemberPlaces,
    models: Sequence[nn.Module],
    n_records: int,
    member_batches: MemberBatches,
    joint_loss: Callable[[nn.Module, torch.Tensor, torch.Tensor], torch.Tensor],
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    weight_decay: float,
    generators: Sequence[torch.Generator],
    on_epoch: Callable[[int, Sequence[nn.Module]], None] | None = None,
    on_progress: Callable[[float], None] | None = None,
) -> float:
    """Train ``models`` in place through ``joint``, one model E times as wide holding member e's
    weights at ``places[name][e]`` and zeros elsewhere (e.g. :class:`core.models.image.JointReNet`),
    for models ``vmap`` cannot batch (module docstring). ``joint_loss(joint, inputs, targets)`` = Σₑ Lₑ;
    members are read back after every epoch for ``on_epoch``. Returns the seconds of the loop.
    """
    start = time.perf_counter()
    if len(models) == 0 or len(generators) != len(models):
        raise ValueError("train_joint_epochs needs one generator per model and at least one model")
    hold_off_member_entries(joint, place_members(joint, models, places))
    optimizer = build_optimizer(joint, lr, weight_decay)
    joint.train()

    def step(inputs: torch.Tensor, targets: torch.Tensor) -> None:
        optimizer.zero_grad(set_to_none=True)
        joint_loss(joint, inputs, targets).backward()
        optimizer.step()

    _member_epochs(models, n_records, member_batches, step, lambda: read_members(joint, models, places),
                   epochs=epochs, batch_size=batch_size, generators=generators, on_epoch=on_epoch,
                   on_progress=on_progress)
    return time.perf_counter() - start


def member_generator(seed: int) -> torch.Generator:
    """The data-order generator member ``seed`` would get alone: :func:`core.training.loop.seeded_generator`
    right after ``torch.manual_seed(seed)`` (offset 0)."""
    return torch.Generator().manual_seed(int(seed) % 2**63)
