"""E equal models computed as one *joint* model E times as wide (shared by the attack classifiers
fitted together, :class:`core.models.attack.JointAttack`, and the ReNet ensemble,
:class:`core.models.image.JointReNet`).

A joint parameter holds member e's parameter at fixed places — ``places[name][e]`` = (rows,
columns), or (rows, None) for a vector — and zeros everywhere else. When every layer reads only
its own member's inputs there (block structure), member e's outputs depend on its own weights
alone, so ∂(Σₑ Lₑ)/∂θₑ = ∂Lₑ/∂θₑ. The gradients off the member entries are masked to zero
(:func:`hold_off_member_entries`), so Adam — element-wise; its weight decay λ·θ is zero there
too — keeps those entries at exactly zero and runs E independent optimisers: training the joint
model is training the E members, up to float rounding (wider products sum exact zeros in
another order).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import nn

#: per parameter name of a joint model, per member: (rows, columns or None for a vector) of its entries
MemberPlaces = dict[str, list[tuple[np.ndarray, "np.ndarray | None"]]]


def block(e: int, size: int) -> np.ndarray:
    """Member ``e``'s contiguous block of ``size`` positions."""
    return e * size + np.arange(size)


def gate_rows(e: int, e_n: int, size: int, gates: int) -> np.ndarray:
    """Member ``e``'s rows of a layer that stacks ``gates`` gates of ``size`` rows along its rows
    (``nn.LSTM``: 4), kept gate-major in the joint layer: gate g of member e at g·E·size + e·size."""
    return np.concatenate([g * e_n * size + block(e, size) for g in range(gates)])


def block_places(joint: nn.Module, e_n: int, gates_of=lambda name: 1) -> MemberPlaces:
    """Places of a block-diagonal joint model: member e's rows are its (gate-major) block, its
    columns the block e of the columns. ``gates_of(name)``: gates stacked along the rows."""
    places: MemberPlaces = {}
    for name, p in joint.named_parameters():
        gates = gates_of(name)
        rows = p.shape[0] // (e_n * gates)
        cols = p.shape[1] // e_n if p.ndim == 2 else 0
        places[name] = [(gate_rows(e, e_n, rows, gates), block(e, cols) if p.ndim == 2 else None) for e in range(e_n)]
    return places


def member_index(rows: np.ndarray, cols: np.ndarray | None) -> tuple[torch.Tensor, ...]:
    """The index of a member's entries in a joint parameter: its rows (a vector), or rows × cols."""
    r = torch.as_tensor(rows)
    return (r,) if cols is None else (r[:, None], torch.as_tensor(cols)[None, :])


@torch.no_grad()
def place_members(joint: nn.Module, members: Sequence[nn.Module], places: MemberPlaces) -> dict[str, torch.Tensor]:
    """Write each member's parameters into ``joint`` at its places, zero elsewhere; return per
    parameter the 0/1 mask of the member entries (what training must keep the gradient to)."""
    own = [dict(m.named_parameters()) for m in members]
    names = {n for n, _ in joint.named_parameters()}
    if names != set(places):
        raise ValueError(f"member places do not cover the joint model: {sorted(names ^ set(places))}")
    masks = {}
    for name, p in joint.named_parameters():
        p.zero_()
        mask = torch.zeros_like(p)
        for e, (rows, cols) in enumerate(places[name]):
            at = member_index(rows, cols)
            p[at] = own[e][name].to(p.device)
            mask[at] = 1.0
        masks[name] = mask
    return masks


@torch.no_grad()
def read_members(joint: nn.Module, members: Sequence[nn.Module], places: MemberPlaces) -> None:
    """Copy each member's entries of ``joint`` back into ``members`` (inverse of :func:`place_members`)."""
    for name, p in joint.named_parameters():
        for e, (rows, cols) in enumerate(places[name]):
            target = dict(members[e].named_parameters())[name]
            target.copy_(p[member_index(rows, cols)])


def hold_off_member_entries(joint: nn.Module, masks: dict[str, torch.Tensor]) -> None:
    """Mask every gradient of ``joint`` to its member entries (module docstring). The masks are
    kept as (non-persistent) buffers, so they follow the model to its device."""
    for i, (name, p) in enumerate(joint.named_parameters()):
        if not bool(masks[name].all()):
            joint.register_buffer(f"_member_mask{i}", masks[name], persistent=False)
            p.register_hook(lambda g, key=f"_member_mask{i}": g * getattr(joint, key))
