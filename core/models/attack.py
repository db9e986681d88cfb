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
