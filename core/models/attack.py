"""Attack classifiers: pure ``nn.Module``s; their training loop lives in :mod:`core.attacks`."""
from __future__ import annotations

from typing import cast

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from core.models.joint import block_places, hold_off_member_entries, place_members, read_members


class AttackMLP(nn.Module):
    """Binary member/non-member classifier on one feature vector (Shokri et al.'s attack model)."""

    def __init__(self, in_dim: int, hidden: int = 64):
        super().__init__()
        self.in_dim, self.hidden = in_dim, hidden
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, 1),
        )

    @property
    def linears(self) -> tuple[nn.Linear, nn.Linear, nn.Linear]:
        """The three linear layers: input → hidden, hidden → hidden, hidden → logit."""
        return cast(nn.Linear, self.net[0]), cast(nn.Linear, self.net[2]), cast(nn.Linear, self.net[4])

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """x: (N, 1, F) or (N, F) -> logits (N,)."""
        if x.ndim == 3:
            x = x[:, 0]
        return self.net(x)[:, 0]


class AttackLSTM(nn.Module):
    """Binary classifier over a sequence of per-step features of arbitrary length.

    An LSTM reads the (output, reference) features step by step; its final hidden state feeds
    an MLP head (papers 000 §3.2 and 001 A.1: an LSTM attack over output sequences).
    """

    def __init__(self, in_dim: int, hidden: int = 64):
        super().__init__()
        self.lstm = nn.LSTM(in_dim, hidden, batch_first=True)
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """x: (N, L_max, F) zero-padded, lengths: (N,) -> logits (N,)."""
        if lengths is None:
            lengths = torch.full((x.shape[0],), x.shape[1], dtype=torch.long)
        packed = pack_padded_sequence(x, lengths.clamp_min(1).cpu(), batch_first=True, enforce_sorted=False)
        _, (h, _) = self.lstm(packed)
        return self.head(h[-1])[:, 0]


class JointAttack(nn.Module):
    """E attack classifiers of one kind (all :class:`AttackMLP` or all :class:`AttackLSTM`, equal
    sizes) computed as one network E times as wide, whose weight matrices are block-diagonal
    (:mod:`core.models.joint`, off-block gradients masked): member e reads features e·F …
    (e+1)·F of the input and writes logit e, so training the joint network is fitting the E
    classifiers one by one, in one set of kernel launches. ``members()`` gives them back.

    Why not ``torch.func.vmap``: it has no batching rule for ``aten::lstm``; a block-diagonal
    ``nn.LSTM`` keeps the fused (cuDNN on a GPU) kernel.
    """

    def __init__(self, members: list[nn.Module]):
        super().__init__()
        kinds = {type(m) for m in members}
        if len(kinds) != 1 or not kinds <= {AttackMLP, AttackLSTM}:
            raise ValueError(f"a joint attack needs members of one attack kind, got {sorted(k.__name__ for k in kinds)}")
        self.n_members = e_n = len(members)
        first = members[0]
        self.sequential = isinstance(first, AttackLSTM)
        if isinstance(first, AttackLSTM):
            in_dim, hidden = first.lstm.input_size, first.lstm.hidden_size
            self.lstm = nn.LSTM(e_n * in_dim, e_n * hidden, batch_first=True)
            self.head = nn.Sequential(nn.Linear(e_n * hidden, e_n * hidden), nn.ReLU(), nn.Linear(e_n * hidden, e_n))
        else:
            in_dim, hidden = cast(AttackMLP, first).in_dim, cast(AttackMLP, first).hidden
            self.net = nn.Sequential(
                nn.Linear(e_n * in_dim, e_n * hidden), nn.ReLU(),
                nn.Linear(e_n * hidden, e_n * hidden), nn.ReLU(),
                nn.Linear(e_n * hidden, e_n),
            )
        self._member_kind: tuple[type[nn.Module], int, int] = (type(first), in_dim, hidden)  # rebuilds a member; not a submodule
        # LSTM weights stack their 4 gates along the rows: member e's rows stay gate-major
        self.places = block_places(self, e_n, lambda name: 4 if name.startswith("lstm.") else 1)
        hold_off_member_entries(self, place_members(self, members, self.places))

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """x: (N, L, E·F) or (N, E·F), member e's features in columns e·F…; -> logits (N, E)."""
        if not self.sequential:
            return self.net(x[:, 0] if x.ndim == 3 else x)
        if lengths is None:
            lengths = torch.full((x.shape[0],), x.shape[1], dtype=torch.long)
        packed = pack_padded_sequence(x, lengths.clamp_min(1).cpu(), batch_first=True, enforce_sorted=False)
        _, (h, _) = self.lstm(packed)
        return self.head(h[-1])

    def forward_padded(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Sequence members on zero-padded input without packing, each member at its *own* lengths.

        x: (N, L, E·F) zero-padded, lengths: (N, E) (member e's record lengths) -> logits (N, E).
        The LSTM runs over all L steps; member e's final state is its output at step lengths[:, e] − 1
        (clamped to ≥ 1, as :meth:`forward`), which depends on its inputs up to that step only (the
        LSTM reads forwards), so the padding after it changes nothing: the same state packing gives,
        with no per-step sort, and members whose records differ in length share one network.
        """
        return self.head(self.final_states(x, lengths))

    def final_states(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """:meth:`forward_padded` before the head: each member's final LSTM state, (N, E·H). Split out so
        that a caller running several length buckets applies the head once to all their states (the
        head is row-wise, so the logits are the same) instead of once per bucket."""
        if not self.sequential:
            raise ValueError("forward_padded is for sequence members")
        out, _ = self.lstm(x)  # (N, L, E·H)
        hidden = out.shape[-1] // self.n_members
        step = (lengths.clamp_min(1) - 1).repeat_interleave(hidden, dim=1)  # (N, E·H): each column's step
        return out.gather(1, step[:, None, :])[:, 0]

    def members(self) -> list[nn.Module]:
        """The E classifiers, as the plain modules they were built from (CPU, eval mode)."""
        kind, in_dim, hidden = self._member_kind
        with torch.random.fork_rng(devices=[]):  # their init is overwritten: leave the global RNG alone
            out = [kind(in_dim, hidden) for _ in range(self.n_members)]
        read_members(self, out, self.places)
        return [m.cpu().eval() for m in out]


class StackedAttackMLP(nn.Module):
    """E :class:`AttackMLP` s of one hidden width, each with its own input width, stacked along a
    leading member axis and computed with batched matrix products (``torch.baddbmm``): one set of
    kernels for all E, and E·(weights of one) parameters — no block-diagonal zeros.

    Member e's first-layer weights fill rows 0 … F_e − 1 of ``w1[e]``; the rows above are zero and
    so are the input columns they read (the features are zero-padded to the widest member), so
    their gradient is exactly zero and Adam leaves them at zero: the padding changes no member.
    """

    def __init__(self, members: list[AttackMLP]):
        super().__init__()
        if not members or any(type(m) is not AttackMLP for m in members):
            raise ValueError("a stacked attack MLP needs AttackMLP members")
        hidden = {m.hidden for m in members}
        if len(hidden) != 1:
            raise ValueError(f"stacked attack MLPs need one hidden width, got {sorted(hidden)}")
        h = hidden.pop()
        self.in_dims = [m.in_dim for m in members]
        e_n, f = len(members), max(self.in_dims)
        self.w1 = nn.Parameter(torch.zeros(e_n, f, h))
        self.b1 = nn.Parameter(torch.zeros(e_n, 1, h))
        self.w2 = nn.Parameter(torch.zeros(e_n, h, h))
        self.b2 = nn.Parameter(torch.zeros(e_n, 1, h))
        self.w3 = nn.Parameter(torch.zeros(e_n, h, 1))
        self.b3 = nn.Parameter(torch.zeros(e_n, 1, 1))
        with torch.no_grad():
            for e, m in enumerate(members):
                first, second, last = m.linears
                self.w1[e, : self.in_dims[e]] = first.weight.T
                self.b1[e, 0] = first.bias
                self.w2[e] = second.weight.T
                self.b2[e, 0] = second.bias
                self.w3[e] = last.weight.T
                self.b3[e, 0] = last.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (E, N, F_max), member e's features in its first F_e columns, zeros after -> logits (E, N)."""
        h = torch.baddbmm(self.b1, x, self.w1).relu()
        h = torch.baddbmm(self.b2, h, self.w2).relu()
        return torch.baddbmm(self.b3, h, self.w3)[..., 0]

    @torch.no_grad()
    def members(self) -> list[AttackMLP]:
        """The E classifiers as plain :class:`AttackMLP` s (CPU, eval mode)."""
        out = []
        h = self.w2.shape[-1]
        with torch.random.fork_rng(devices=[]):  # their init is overwritten: leave the global RNG alone
            for e, f in enumerate(self.in_dims):
                m = AttackMLP(f, h)
                first, second, last = m.linears
                first.weight.copy_(self.w1[e, :f].T)
                first.bias.copy_(self.b1[e, 0])
                second.weight.copy_(self.w2[e].T)
                second.bias.copy_(self.b2[e, 0])
                last.weight.copy_(self.w3[e].T)
                last.bias.copy_(self.b3[e, 0])
                out.append(m.cpu().eval())
        return out
