"""Attack classifiers: pure ``nn.Module``s; their training loop lives in :mod:`core.attacks`."""
from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence


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


def block_diagonal(blocks: list[torch.Tensor], gates: int = 1) -> torch.Tensor:
    """E weight matrices (gates·out, in) as one (gates·E·out, E·in) matrix, zero off the blocks.

    Rows keep a layer's gate-major layout (``nn.LSTM`` stacks its 4 gates along rows): member
    e's rows of gate g sit at g·E·out + e·out, its columns at e·in. With gates = 1 this is
    ``torch.block_diag``.
    """
    e_n = len(blocks)
    rows, cols = blocks[0].shape
    out = blocks[0].new_zeros(gates, e_n, rows // gates, e_n, cols)
    for e, block in enumerate(blocks):
        out[:, e, :, e, :] = block.reshape(gates, rows // gates, cols)
    return out.reshape(e_n * rows, e_n * cols)


def block_of(joint: torch.Tensor, e: int, e_n: int, gates: int = 1) -> torch.Tensor:
    """Member ``e``'s (gates·out, in) block of a :func:`block_diagonal` matrix of ``e_n`` members."""
    rows, cols = joint.shape
    return joint.reshape(gates, e_n, rows // (gates * e_n), e_n, cols // e_n)[:, e, :, e, :].reshape(rows // e_n, cols // e_n)


def stacked_bias(biases: list[torch.Tensor], gates: int = 1) -> torch.Tensor:
    """E biases (gates·out,) in the row layout of :func:`block_diagonal`."""
    return torch.stack([b.reshape(gates, -1) for b in biases], 1).reshape(-1)


def bias_of(joint: torch.Tensor, e: int, e_n: int, gates: int = 1) -> torch.Tensor:
    """Member ``e``'s bias from a :func:`stacked_bias` vector of ``e_n`` members."""
    return joint.reshape(gates, e_n, -1)[:, e, :].reshape(-1)


class JointAttack(nn.Module):
    """E attack classifiers of one kind (all :class:`AttackMLP` or all :class:`AttackLSTM`, equal
    sizes) computed as one network E times as wide, whose weight matrices are block-diagonal.

    Member e reads features e·F … (e+1)·F of the input and writes logit e: off the blocks every
    weight is zero, so member e's output depends on its own weights and inputs only, and the
    gradient of Σₑ Lₑ with respect to member e's block is ∂Lₑ/∂θₑ. The off-block gradients are
    masked to zero, so Adam (element-wise, no weight decay) leaves those weights at exactly zero
    and runs E independent Adams — the mathematics of fitting the E classifiers one by one in one
    set of kernel launches (what differs is float rounding: a matrix product sums E·F terms of
    which all but F are exact zeros). ``members()`` gives the E classifiers back.

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
        states = [m.state_dict() for m in members]
        joint = {}
        for name in self.state_dict():
            gates = 4 if name.startswith("lstm.") else 1
            blocks = [s[name] for s in states]
            joint[name] = block_diagonal(blocks, gates) if blocks[0].ndim == 2 else stacked_bias(blocks, gates)
        self.load_state_dict(joint)
        for i, (name, p) in enumerate(self.named_parameters()):
            if p.ndim == 2:
                gates = 4 if name.startswith("lstm.") else 1
                rows, cols = p.shape
                ones = [p.new_ones(rows // e_n, cols // e_n)] * e_n
                self.register_buffer(f"_mask{i}", block_diagonal(ones, gates), persistent=False)
                p.register_hook(lambda g, key=f"_mask{i}": g * getattr(self, key))

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
        state = {k: v.detach().cpu() for k, v in self.state_dict().items()}
        out = []
        for e in range(self.n_members):
            kind, in_dim, hidden = self._member_kind
            with torch.random.fork_rng(devices=[]):  # its init is overwritten: leave the global RNG alone
                member = kind(in_dim, hidden)
            own = {}
            for name, value in state.items():
                gates = 4 if name.startswith("lstm.") else 1
                own[name] = (block_of(value, e, self.n_members, gates) if value.ndim == 2
                             else bias_of(value, e, self.n_members, gates)).clone()
            member.load_state_dict(own)
            out.append(member.eval())
        return out
