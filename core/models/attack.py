"""Attack classifiers: pure ``nn.Module``s; their training loop lives in :mod:`core.attacks`."""
from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from core.models.joint import block_places, hold_off_member_entries, place_members, read_members


class AttackMLP(nn.Module):
    """Binary member/non-member classifier on one feature vector (Shokri et al.'s attack model)."""

    def __init__(self, in_dim: int, hidden: int = 64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, 1),
        )

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
        if self.sequential:
            in_dim, hidden = first.lstm.input_size, first.lstm.hidden_size
            self.lstm = nn.LSTM(e_n * in_dim, e_n * hidden, batch_first=True)
            self.head = nn.Sequential(nn.Linear(e_n * hidden, e_n * hidden), nn.ReLU(), nn.Linear(e_n * hidden, e_n))
        else:
            in_dim, hidden = first.net[0].in_features, first.net[0].out_features
            self.net = nn.Sequential(
                nn.Linear(e_n * in_dim, e_n * hidden), nn.ReLU(),
                nn.Linear(e_n * hidden, e_n * hidden), nn.ReLU(),
                nn.Linear(e_n * hidden, e_n),
            )
        self._member_kind = (type(first), in_dim, hidden)  # rebuilds a member; not a submodule
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

    def members(self) -> list[nn.Module]:
        """The E classifiers, as the plain modules they were built from (CPU, eval mode)."""
        kind, in_dim, hidden = self._member_kind
        with torch.random.fork_rng(devices=[]):  # their init is overwritten: leave the global RNG alone
            out = [kind(in_dim, hidden) for _ in range(self.n_members)]
        read_members(self, out, self.places)
        return [m.cpu().eval() for m in out]
