"""Models of the tabular task: an MLP (FFNN) and an LSTM over the feature tokens (RNN).

Both read the same encoded row: F features (numeric columns as they are, with NaN where a value is
missing; text columns one-hot; missing-value indicators), and both begin with
:class:`Standardize`, whose per-feature mean and scale are *buffers* set from the model's own
training records (:meth:`Standardize.fit`, called by the task before training). So the
statistics come from the training part only, travel with the weights (``state_dict``), and each
shadow model standardises with its own training records as the victim does with its own.

* :class:`TabularMLP` — ``layers`` ReLU layers of width ``hidden``, then a linear head.
* :class:`TabularLSTM` — the row read as a sequence of F tokens, one per feature: token t is
  z_t · v_t + p_t (v_t, p_t: learned vectors of feature t, two ``nn.Embedding`` tables, so that
  Opacus computes their per-sample gradients), an LSTM over the tokens, a linear head on its last
  state. With ``dp=True`` the LSTM is Opacus' ``DPLSTM`` (same maths and parameter count).

:func:`match_lstm_hidden` picks the LSTM width whose parameter count is nearest the MLP's; the
closed forms :func:`mlp_param_count` / :func:`lstm_param_count` let the task check sizes and
memory before anything is built.
"""
from __future__ import annotations

import torch
from torch import nn

from core.models.translation import _lstm  # nn.LSTM, or Opacus' DPLSTM with nn.LSTM's state-dict names

#: widest LSTM :func:`match_lstm_hidden` considers
MAX_LSTM_HIDDEN = 4096


class Standardize(nn.Module):
    """``(x − mean) / scale`` per feature, then missing values (NaN) → 0, i.e. the training mean.

    ``mean`` and ``scale`` are buffers (saved with the weights, never trained, never perturbed by a
    weight defense); features that are not standardised (one-hot, indicators) keep mean 0, scale 1.
    """

    mean: torch.Tensor
    scale: torch.Tensor

    def __init__(self, n_features: int):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("scale", torch.ones(n_features))

    @torch.no_grad()
    def fit(self, x: torch.Tensor, standardised: torch.Tensor) -> None:
        """Set the statistics of the features marked in ``standardised`` (bool, F) from the rows
        ``x`` (n, F), ignoring missing values. A feature with no value, or a constant one, in these
        rows keeps scale 1 (its values then pass centred, not blown up by a zero scale)."""
        cols = x[:, standardised].double()
        present = ~torch.isnan(cols)
        count = present.sum(0)
        filled = torch.where(present, cols, torch.zeros_like(cols))
        mean = filled.sum(0) / count.clamp(min=1)
        var = (torch.where(present, cols - mean, torch.zeros_like(cols)) ** 2).sum(0) / count.clamp(min=1)
        std = var.sqrt()
        mean[count == 0] = 0.0
        std[(count == 0) | (std < 1e-12)] = 1.0
        self.mean.zero_()
        self.scale.fill_(1.0)
        self.mean[standardised] = mean.to(self.mean.dtype)
        self.scale[standardised] = std.to(self.scale.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nan_to_num((x - self.mean) / self.scale, nan=0.0)


class TabularMLP(nn.Module):
    """Standardize → ``layers`` × (Linear, ReLU) of width ``hidden`` → Linear to the classes."""

    def __init__(self, n_features: int, n_classes: int, hidden: int = 64, layers: int = 2):
        super().__init__()
        self.standardize = Standardize(n_features)
        blocks: list[nn.Module] = []
        width = n_features
        for _ in range(layers):
            blocks += [nn.Linear(width, hidden), nn.ReLU()]
            width = hidden
        self.body = nn.Sequential(*blocks)
        self.head = nn.Linear(width, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(self.standardize(x)))


class TabularLSTM(nn.Module):
    """Standardize → one token per feature (z_t · v_t + p_t) → LSTM → Linear on the last state."""

    def __init__(self, n_features: int, n_classes: int, token_dim: int = 8, hidden: int = 32, dp: bool = False):
        super().__init__()
        self.standardize = Standardize(n_features)
        self.value = nn.Embedding(n_features, token_dim)     # v_t: how feature t's value enters its token
        self.position = nn.Embedding(n_features, token_dim)  # p_t: which feature the token is
        self.lstm = _lstm(token_dim, hidden, dp)
        self.head = nn.Linear(hidden, n_classes)
        self.n_features = n_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.standardize(x)
        # the feature ids per row (B, F): the embeddings see a batch dimension, as Opacus needs
        ids = torch.arange(self.n_features, device=x.device).expand(len(x), -1).contiguous()
        tokens = z.unsqueeze(-1) * self.value(ids) + self.position(ids)
        out, _ = self.lstm(tokens)
        return self.head(out[:, -1])


def mlp_param_count(n_features: int, n_classes: int, hidden: int, layers: int) -> int:
    """Closed form of the trainable parameters of ``TabularMLP(n_features, n_classes, hidden, layers)``."""
    return n_features * hidden + hidden + (layers - 1) * (hidden * hidden + hidden) + hidden * n_classes + n_classes


def lstm_param_count(n_features: int, n_classes: int, token_dim: int, hidden: int) -> int:
    """Closed form of the trainable parameters of ``TabularLSTM(n_features, n_classes, token_dim, hidden)``:
    two embedding tables, the LSTM's four gates (two bias vectors each, as ``nn.LSTM``), the head."""
    return 2 * n_features * token_dim + 4 * hidden * (token_dim + hidden) + 8 * hidden + hidden * n_classes + n_classes


def match_lstm_hidden(target: int, n_features: int, n_classes: int, token_dim: int) -> int:
    """The LSTM width (1..:data:`MAX_LSTM_HIDDEN`) whose parameter count is nearest ``target``."""
    return min(range(1, MAX_LSTM_HIDDEN + 1),
               key=lambda h: abs(lstm_param_count(n_features, n_classes, token_dim, h) - target))
