"""Every learned attack classifier of a run fitted as one batched ensemble.

A run fits many small classifiers (shadow-model MLP/LSTM, PRMIA, BLEU-feature) at every checkpoint and
defense draw; fitted one by one, each optimiser step is a few tiny kernel launches. Here one loop takes one
step for all of them, and the result is the one-by-one fit up to float rounding:

* classifiers with the same (records n, seed, batch size, epochs) — a *schedule* — see the same batches
  (``torch.randperm(n, generator)`` seeded alike), so one index serves them all;
* a schedule's MLPs run as one :class:`~core.models.attack.StackedAttackMLP` (inputs zero-padded to the
  widest; the padding's gradient is zero), its LSTMs as block-diagonal :class:`~core.models.attack.JointAttack`
  networks read with each member's own lengths;
* the step minimises Σₑ Lₑ(θₑ): ∂/∂θₑ of the sum is ∂Lₑ/∂θₑ, and Adam is element-wise, so one Adam is E
  independent Adams;
* at a step where a schedule has no batch its parameters' gradients stay ``None`` and Adam skips them.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Sequence, cast

import numpy as np
import torch
from torch import nn

from core.foundations.device import default_device
from core.models.attack import AttackLSTM, AttackMLP, JointAttack, StackedAttackMLP


@dataclass
class FitMember:
    """One classifier to fit, as :func:`core.attacks.shadow_attacks._fit_classifier` would fit it alone."""

    #: an :class:`AttackMLP` or :class:`AttackLSTM`, initialised as the one-by-one fit initialises it
    model: nn.Module
    #: standardised features: (N, F) or (N, 1, F) for an MLP, (N, L, F) zero-padded for an LSTM
    x: torch.Tensor
    #: (N,) steps per record (an LSTM's; ignored for an MLP)
    lengths: torch.Tensor
    #: (N,) membership, the target
    y: np.ndarray
    epochs: int
    batch_size: int
    lr: float
    seed: int

    @property
    def schedule(self) -> tuple[int, int, int, int]:
        """What fixes the batches it sees: (records, seed, batch size, epochs)."""
        return (int(self.x.shape[0]), int(self.seed), int(self.batch_size), int(self.epochs))


def joint_lstm_size(device: torch.device) -> int:
    """LSTM members per block-diagonal network: several on a GPU (launch-bound: the zeros are free), one on a CPU
    (arithmetic-bound: the block-diagonal zeros would cost E²)."""
    return 8 if device.type == "cuda" else 1


_ONE = torch.ones(())


def _relu_mask(pre: torch.Tensor) -> torch.Tensor:
    """ReLU's derivative at ``pre`` as floats (1.0 where pre > 0, else 0.0), without a bool tensor: a product
    of floats and bools takes PyTorch's slow casting loop. At a NaN pre-activation it is 1.0; the gradients
    there are NaN either way."""
    return torch.ops.aten.threshold_backward(_ONE.to(pre.device).expand_as(pre), pre, 0)


class _MLPBank:
    """MLP members of one schedule and learning rate, as one :class:`StackedAttackMLP`."""

    def __init__(self, members: Sequence[FitMember], device: torch.device):
        self.module = StackedAttackMLP([cast(AttackMLP, m.model) for m in members]).to(device)
        n = members[0].x.shape[0]
        width = max(self.module.in_dims)
        x = torch.zeros(len(members), n, width)
        for e, m in enumerate(members):
            flat = m.x.reshape(n, -1)
            x[e, :, : flat.shape[1]] = flat
        self.x = x.to(device)
        self.y = torch.as_tensor(np.stack([np.asarray(m.y) for m in members]), dtype=torch.float32, device=device)
        self.lr = members[0].lr

    def loss(self, at: torch.Tensor, at_cpu: torch.Tensor) -> torch.Tensor:
        logits = self.module(self.x[:, at])  # (E, B)
        return nn.functional.binary_cross_entropy_with_logits(logits, self.y[:, at], reduction="none").mean(1).sum()

    @torch.no_grad()
    def gradients(self, at: torch.Tensor, at_cpu: torch.Tensor, into: Callable[[nn.Parameter], torch.Tensor]) -> None:
        """Write ∂(:meth:`loss`)/∂θ into ``into(θ)`` for each parameter θ, written out by hand: the same
        products autograd runs (BCE-with-logits' σ(z) − y, ReLU's z > 0), without building a graph each
        step — on a CPU the graph, not the arithmetic, was most of a small MLP's step. ``into`` gives each
        parameter's place in its flat gradient (:meth:`_FlatParameters.gradient_of`): the products land
        there (``out=``, the same kernels) instead of in new tensors that were then copied into it."""
        m = self.module
        x, y = self.x[:, at], self.y[:, at, None]  # (E, B, F), (E, B, 1)
        a1 = torch.baddbmm(m.b1, x, m.w1)
        h1 = a1.relu()
        a2 = torch.baddbmm(m.b2, h1, m.w2)
        h2 = a2.relu()
        dz = (torch.sigmoid(torch.baddbmm(m.b3, h2, m.w3)) - y) / x.shape[1]  # each member's mean over its batch
        torch.bmm(h2.transpose(1, 2), dz, out=into(m.w3))
        torch.sum(dz, 1, keepdim=True, out=into(m.b3))
        # dz (E, B, 1) times w3ᵀ (E, 1, H) has one product per entry: broadcast, not a K = 1 bmm (7x cheaper)
        dh = (dz * m.w3.transpose(1, 2)).mul_(_relu_mask(a2))
        torch.bmm(h1.transpose(1, 2), dh, out=into(m.w2))
        torch.sum(dh, 1, keepdim=True, out=into(m.b2))
        dh = torch.bmm(dh, m.w2.transpose(1, 2)).mul_(_relu_mask(a1))
        torch.bmm(x.transpose(1, 2), dh, out=into(m.w1))
        torch.sum(dh, 1, keepdim=True, out=into(m.b1))

    def fitted(self) -> list[nn.Module]:
        return list(self.module.members())


class _LSTMBank:
    """LSTM members of one schedule, learning rate and shape, as one block-diagonal :class:`JointAttack`.

    ``buckets`` (a CPU's one-member networks): each batch runs sorted by length in runs of similar
    lengths (:func:`length_buckets`), each cut to its own longest record, instead of every record
    padded to the batch's longest — the LSTM reads forwards, so a record's final state does not
    depend on the padding after it, and the padded steps were most of the arithmetic (navigation
    quick: 2.8 padded steps per real one)."""

    def __init__(self, members: Sequence[FitMember], device: torch.device, buckets: bool = False):
        self.module = JointAttack([m.model for m in members]).to(device)
        n, steps = members[0].x.shape[0], max(m.x.shape[1] for m in members)
        x = torch.zeros(n, steps, sum(m.x.shape[2] for m in members))
        col = 0
        for m in members:
            x[:, : m.x.shape[1], col : col + m.x.shape[2]] = m.x
            col += m.x.shape[2]
        self.x = x.to(device)
        # lengths stay on the CPU too: a batch is cut to its longest record without asking the GPU
        self.lengths = torch.stack([m.lengths.to(torch.long).clamp_min(1) for m in members], dim=1)
        self.lengths_dev = self.lengths.to(device)
        self.y = torch.as_tensor(np.stack([np.asarray(m.y) for m in members], axis=1), dtype=torch.float32, device=device)
        self.lr = members[0].lr
        lstm = cast(AttackLSTM, members[0].model).lstm
        # one more network call costs about this many record-steps of arithmetic (see _CALL_COST)
        self.call_cost = _CALL_COST / (4 * lstm.hidden_size * (lstm.hidden_size + lstm.input_size)) if buckets else None

    def loss(self, at: torch.Tensor, at_cpu: torch.Tensor) -> torch.Tensor:
        lengths = self.lengths[at_cpu]
        if self.call_cost is None:
            logits = self.module.forward_padded(self.x[at, : int(lengths.max())], self.lengths_dev[at])  # (B, E)
        else:
            longest = lengths.max(1).values
            order = torch.argsort(longest, stable=True)
            sorted_lengths = longest[order]
            parts = []
            for lo, hi in length_buckets(sorted_lengths.numpy(), self.call_cost):
                rows = at[order[lo:hi]]
                parts.append(self.module.final_states(self.x[rows, : int(sorted_lengths[hi - 1])],
                                                      self.lengths_dev[rows]))
            # the head once for all buckets (row-wise: the same logits), back in the batch's order
            logits = self.module.head(torch.cat(parts)[torch.argsort(order).to(parts[0].device)])
        return nn.functional.binary_cross_entropy_with_logits(logits, self.y[at], reduction="none").mean(0).sum()

    def fitted(self) -> list[nn.Module]:
        return self.module.members()


#: what one more LSTM call costs, in multiply-adds × steps of one record (4·H·(H+F) per record-step): about
#: 670 record-steps at H = 32, F = 16 on a CPU (oneDNN LSTM, forward + backward, one thread)
_CALL_COST = 670 * 4 * 32 * 48


def length_buckets(sorted_lengths: np.ndarray, call_cost: float) -> list[tuple[int, int]]:
    """Cut ascending record lengths into runs [lo, hi) minimising Σ (records · longest) + call_cost per
    run: the arithmetic of running each run padded to its own longest record, plus each call's own cost.
    Cuts fall only between different lengths (an exact dynamic programme over the distinct lengths)."""
    values, counts = np.unique(np.asarray(sorted_lengths), return_counts=True)
    return list(_cuts(tuple(values.tolist()), tuple(np.cumsum(counts).tolist()), float(call_cost)))


@functools.lru_cache(maxsize=4096)
def _cuts(values: tuple[int, ...], ends: tuple[int, ...], call_cost: float) -> tuple[tuple[int, int], ...]:
    """:func:`length_buckets` on the distinct lengths and the record counts up to each (memoised: a
    schedule whose batch is all its records asks the same question every step)."""
    d = len(values)
    starts = (0,) + ends[:-1]
    best = [0.0] + [math.inf] * d
    cut = [0] * (d + 1)
    for j in range(1, d + 1):
        top, end = values[j - 1], ends[j - 1]
        for i in range(j):
            cost = best[i] + (end - starts[i]) * top + call_cost
            if cost < best[j]:
                best[j], cut[j] = cost, i
    runs, j = [], d
    while j > 0:
        i = cut[j]
        runs.append((starts[i], ends[j - 1]))
        j = i
    return tuple(runs[::-1])


def _banks(members: Sequence[FitMember], where: list[int], device: torch.device,
           lstm_size: int | None) -> list[tuple[list[int], "_MLPBank | _LSTMBank"]]:
    """The members ``where`` (one schedule) grouped into banks: MLPs by (lr, hidden), LSTMs by
    (lr, input width, hidden) in networks of up to ``lstm_size`` (None: :func:`joint_lstm_size`)."""
    groups: dict[tuple, list[int]] = {}
    for i in where:
        m = members[i].model
        key: tuple[object, ...]
        if type(m) is AttackMLP:
            key = ("mlp", members[i].lr, m.hidden)
        elif type(m) is AttackLSTM:
            key = ("lstm", members[i].lr, m.lstm.input_size, m.lstm.hidden_size)
        else:
            raise ValueError(f"cannot fit a {type(m).__name__} in the attack ensemble")
        groups.setdefault(key, []).append(i)
    out: list[tuple[list[int], _MLPBank | _LSTMBank]] = []
    for key, idx in groups.items():
        if key[0] == "mlp":
            out.append((idx, _MLPBank([members[i] for i in idx], device)))
        else:
            size = lstm_size or joint_lstm_size(device)
            for start in range(0, len(idx), size):
                chunk = idx[start : start + size]
                # one member per network (a CPU's): its batches run in runs of similar lengths
                out.append((chunk, _LSTMBank([members[i] for i in chunk], device, buckets=device.type != "cuda" and len(chunk) == 1)))
    return out


class _FlatParameters:
    """One schedule's parameters of one learning rate as views of one flat tensor, which Adam steps: on small
    tensors Adam's per-tensor ops and bookkeeping cost more than the arithmetic. Adam is element-wise, so
    stepping the flat tensor is stepping each parameter; a step where the schedule has no batch leaves the
    flat gradient None and Adam skips it.

    The flat gradient is one buffer whose views are the parameters' gradients: a hand-written bank writes
    there (:meth:`gradient_of`), an autograd bank's are copied in (:meth:`gather_gradients`). :meth:`adam_step`
    is torch.optim.Adam's own update of the flat tensor."""

    def __init__(self, params: list[nn.Parameter], lr: float):
        self.params, self.lr = params, lr
        with torch.no_grad():
            self.flat = nn.Parameter(torch.cat([p.detach().reshape(-1) for p in params]))
        self.buffer = torch.zeros_like(self.flat.data)
        self._exp_avg, self._exp_avg_sq, self._steps = torch.zeros_like(self.flat.data), torch.zeros_like(self.flat.data), 0
        self._views: dict[int, torch.Tensor] = {}
        start = 0
        for p in params:
            p.data = self.flat.data[start : start + p.numel()].view_as(p)  # shares the flat tensor's storage
            self._views[id(p)] = self.buffer[start : start + p.numel()].view_as(p)
            start += p.numel()
        #: the parameters (ids) whose gradient this step a hand-written bank has put in the buffer
        self._written: set[int] = set()

    def gradient_of(self, p: nn.Parameter) -> torch.Tensor:
        """Where ``p``'s gradient of this step goes (its view of the flat gradient), for a bank to write."""
        self._written.add(id(p))
        return self._views[id(p)]

    def gather_gradients(self) -> None:
        """The flat gradient of this step (None where no parameter has one): the hand-written ones already
        in place, autograd's copied in and theirs cleared, zeros for a parameter without one."""
        written, self._written = self._written, set()
        if not written and all(p.grad is None for p in self.params):
            self.flat.grad = None
            return
        for p in self.params:
            if id(p) in written:
                continue
            view = self._views[id(p)]
            if p.grad is None:
                view.zero_()
            else:
                view.copy_(p.grad)
                p.grad = None
        self.flat.grad = self.buffer

    @torch.no_grad()
    def adam_step(self) -> None:
        """``torch.optim.Adam([flat], lr, foreach=True).step()`` (betas 0.9, 0.999, eps 1e-8, no weight decay):
        its operations on the flat tensor in its order (on a CPU its multi-tensor functions run the same
        per-tensor operations; its step count is a float), so the same bits; skipped, as Adam skips it,
        at a step without a gradient (its moments and step count stay)."""
        grad = self.flat.grad
        if grad is None:
            return
        beta1, beta2, eps = 0.9, 0.999, 1e-8
        self._steps += 1
        self._exp_avg.lerp_(grad, 1 - beta1)
        self._exp_avg_sq.mul_(beta2)
        self._exp_avg_sq.addcmul_(grad, grad, value=1 - beta2)
        bias_correction1, bias_correction2 = 1 - beta1 ** float(self._steps), 1 - beta2 ** float(self._steps)
        denom = self._exp_avg_sq.sqrt()
        denom.div_(bias_correction2 ** 0.5)
        denom.add_(eps)
        self.flat.addcdiv_(self._exp_avg, denom, value=(self.lr / bias_correction1) * -1)


def fit_members(members: Sequence[FitMember], device: torch.device | None = None, lstm_size: int | None = None,
                on_progress: Callable[[float], None] | None = None) -> list[nn.Module]:
    """Fit every member in one loop (module docstring); return the fitted classifiers, in order,
    as plain :class:`AttackMLP` / :class:`AttackLSTM` modules on the CPU in eval mode.

    ``lstm_size``: LSTM members per block-diagonal network (default :func:`joint_lstm_size`).
    ``on_progress(fraction)`` is called after every epoch but the last. The MLPs' gradients are written
    out by hand (:meth:`_MLPBank.gradients`) on a CPU; on a GPU, where a step is launches, by autograd.
    """
    if not members:
        return []
    device = device or default_device()
    hand_written = device.type != "cuda"
    for m in members:
        if m.x.shape[0] != len(m.y) or m.x.shape[0] == 0:
            raise ValueError(f"a member has {m.x.shape[0]} records and {len(m.y)} targets")
    schedules: dict[tuple[int, int, int, int], list[int]] = {}
    for i, m in enumerate(members):
        schedules.setdefault(m.schedule, []).append(i)
    plan = []  # per schedule: (n, batch size, epochs, its generator, its banks)
    for (n, seed, batch_size, epochs), where in schedules.items():
        plan.append((n, batch_size, epochs, torch.Generator().manual_seed(seed), _banks(members, where, device, lstm_size)))
    banks = [bank for *_, bs in plan for _, bank in bs]
    # the one-by-one fit's Adam arithmetic in fewer launches: fused on a GPU; on a CPU the multi-tensor (foreach)
    # update of _FlatParameters.adam_step, since the CPU's fused kernel orders the arithmetic otherwise
    # one parameter group per learning rate (not per bank): one multi-tensor Adam call a step for them all
    groups: dict[tuple[int, float], list[nn.Parameter]] = {}
    for which, (*_, bs) in enumerate(plan):  # on a CPU per schedule too: one flat tensor each (_FlatParameters)
        for _, b in bs:
            groups.setdefault((which, b.lr) if hand_written else (0, b.lr), []).extend(b.module.parameters())
    flats = [_FlatParameters(params, lr) for (_, lr), params in groups.items()] if hand_written else []
    flat_of = {id(p): f for f in flats for p in f.params}

    def gradient_of(p: nn.Parameter) -> torch.Tensor:
        return flat_of[id(p)].gradient_of(p)

    opt = None if hand_written else torch.optim.Adam([{"params": params, "lr": lr} for (_, lr), params in groups.items()],
                                                     fused=True)
    for b in banks:
        b.module.train()
    total = max(epochs for _, _, epochs, _, _ in plan)
    for epoch in range(total):
        live = []
        for n, batch_size, epochs, g, bs in plan:
            if epoch < epochs:
                perm = torch.randperm(n, generator=g)  # the permutation the one-by-one fit draws this epoch
                live.append((perm, perm.to(device), batch_size, math.ceil(n / batch_size), bs))
        for k in range(max(steps for *_, steps, _ in live)):
            if opt is not None:  # a schedule without a batch now keeps grad None: Adam skips it
                opt.zero_grad(set_to_none=True)
            loss = None
            for perm, perm_dev, batch_size, steps, bs in live:
                if k < steps:
                    cut = slice(k * batch_size, (k + 1) * batch_size)
                    for _, bank in bs:
                        if isinstance(bank, _MLPBank) and hand_written:
                            bank.gradients(perm_dev[cut], perm[cut], gradient_of)  # into the flat gradients
                            continue
                        term = bank.loss(perm_dev[cut], perm[cut])
                        loss = term if loss is None else loss + term
            if loss is not None:  # the banks' parameters are disjoint: each gradient is its own loss's
                loss.backward()
            for f in flats:  # each flat's gradient set anew (None without a batch), then stepped
                f.gather_gradients()
                f.adam_step()
            if opt is not None:
                opt.step()
        if on_progress is not None and epoch + 1 < total:
            on_progress((epoch + 1) / total)
    out: list[nn.Module | None] = [None] * len(members)
    for *_, bs in plan:
        for idx, bank in bs:
            bank.module.eval()
            for i, model in zip(idx, bank.fitted()):
                out[i] = model
    return out  # type: ignore[return-value]
