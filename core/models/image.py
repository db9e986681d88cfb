"""Image classifiers of paper 000 §4.2: a residual CNN (FFNN) and a ReNet-style LSTM (RNN).

The paper uses ResNet-101 vs ReNet at ~42.6M parameters on CIFAR-10; we keep both families
but at sizes a CPU trains in minutes, and match their parameter counts (within 5 %) by
choosing the ReNet's hidden size and FC width for the CNN's count (:func:`match_renet`).

GroupNorm instead of BatchNorm keeps the CNN compatible with per-sample gradients (DP-SGD).
With ``dp=True`` (DP-SGD) the ReNet sweeps with :class:`GridLSTM`: the same LSTM maths and
parameter count, written with ``nn.Linear`` layers whose batch dimension is the *image* (all its
rows advance together), so Opacus' per-sample gradients are per image, not per row.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from core.models.joint import MemberPlaces, block, gate_rows


class ResidualBlock(nn.Module):
    """x + conv-GN-ReLU-conv-GN(x), then ReLU (He et al.)."""

    def __init__(self, channels: int):
        super().__init__()
        groups = min(8, channels)
        self.body = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1), nn.GroupNorm(groups, channels), nn.ReLU(),
            nn.Conv2d(channels, channels, 3, padding=1), nn.GroupNorm(groups, channels),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.body(x))


class ResidualCNN(nn.Module):
    """A small ResNet: stem, residual stages (width doubles, resolution halves), pool, 2 FC layers."""

    def __init__(self, in_channels: int, n_classes: int, width: int = 16, stages: int = 2, fc: int = 64):
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(in_channels, width, 3, padding=1), nn.GroupNorm(min(8, width), width), nn.ReLU()]
        c = width
        for s in range(stages):
            layers.append(ResidualBlock(c))
            if s < stages - 1:
                layers += [nn.Conv2d(c, 2 * c, 3, stride=2, padding=1), nn.ReLU()]
                c *= 2
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(c, fc), nn.ReLU(), nn.Linear(fc, n_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, C, H, W) -> logits (B, n_classes)."""
        return self.head(self.features(x))


class GridLSTM(nn.Module):
    """A bidirectional LSTM run over every row of a grid at once: (B, N, L, F) → (B, N, L, 2h).

    Per direction, at step t of each of the N sequences of an image (Hochreiter & Schmidhuber;
    PyTorch's gate order and two bias vectors, so the parameter count is ``nn.LSTM``'s):

        [i, f, g, o] = W_ih x_t + b_ih + W_hh h_{t−1} + b_hh,
        c_t = σ(f)·c_{t−1} + σ(i)·tanh(g),   h_t = σ(o)·tanh(c_t).

    The DP-SGD replacement of the ReNet's ``nn.LSTM``: Opacus' ``DPLSTM`` takes sequences as its
    batch, so an image's H rows would be H samples; here every Linear sees (B, N, ·) inputs and
    Opacus sums their per-sample gradients over the rows, giving one gradient per image (Opacus'
    ``DPLSTM`` looping over the rows is exact too, but slower).
    """

    def __init__(self, in_features: int, hidden: int):
        super().__init__()
        self.hidden = hidden
        self.ih = nn.ModuleList([nn.Linear(in_features, 4 * hidden) for _ in range(2)])  # forward, backward
        self.hh = nn.ModuleList([nn.Linear(hidden, 4 * hidden) for _ in range(2)])
        bound = hidden**-0.5  # nn.LSTM's initialisation
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def _direction(self, x: torch.Tensor, d: int) -> torch.Tensor:
        b, n, length, _ = x.shape
        gates_x = self.ih[d](x)  # (B, N, L, 4h): the input part of every step at once
        h = c = x.new_zeros(b, n, self.hidden)
        out: list[torch.Tensor] = [h] * length
        for t in (range(length - 1, -1, -1) if d else range(length)):
            i, f, g, o = (gates_x[:, :, t] + self.hh[d](h)).chunk(4, -1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            out[t] = h
        return torch.stack(out, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self._direction(x, 0), self._direction(x, 1)], -1)


def _patches(x: torch.Tensor, p: int) -> torch.Tensor:
    """(B, C, H, W) images as (B, H/p, W/p, C·p·p) non-overlapping p×p patches."""
    b, c, h, w = x.shape
    return x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5).reshape(b, h // p, w // p, c * p * p)


class ReNetLayer(nn.Module):
    """One ReNet layer (Visin et al. 2015): a bidirectional LSTM sweeps every row, then another
    sweeps every column of the result. Input/output layout (B, H, W, F).

    ``dp=True``: :class:`GridLSTM` sweeps (per-image per-sample gradients for DP-SGD).
    """

    horizontal: nn.Module  # nn.LSTM, or GridLSTM under DP
    vertical: nn.Module

    def __init__(self, in_features: int, hidden: int, dp: bool = False):
        super().__init__()
        self.dp = dp
        if dp:
            self.horizontal, self.vertical = GridLSTM(in_features, hidden), GridLSTM(2 * hidden, hidden)
        else:
            self.horizontal = nn.LSTM(in_features, hidden, batch_first=True, bidirectional=True)
            self.vertical = nn.LSTM(2 * hidden, hidden, batch_first=True, bidirectional=True)

    def _sweep(self, lstm: nn.Module, x: torch.Tensor) -> torch.Tensor:
        """x (B, N, L, F): N sequences of length L per image -> (B, N, L, 2h)."""
        if self.dp:
            return lstm(x)
        b, n, length, f = x.shape
        return lstm(x.reshape(b * n, length, f))[0].reshape(b, n, length, -1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = self._sweep(self.horizontal, x)  # sequences along the width
        cols = self._sweep(self.vertical, rows.transpose(1, 2))  # (B, W, H, 2h): along the height
        return cols.transpose(1, 2)  # (B, H, W, 2h)


class ReNet(nn.Module):
    """ReNet classifier: non-overlapping p×p patches, ReNet layers, two ReLU FC layers, output."""

    def __init__(self, in_channels: int, height: int, width: int, n_classes: int,
                 hidden: int = 16, fc: int = 64, patch: int = 2, layers: int = 1, dp: bool = False):
        super().__init__()
        if height % patch or width % patch:
            raise ValueError(f"image {height}x{width} is not divisible into {patch}x{patch} patches")
        self.patch = patch
        self.sizes = dict(in_channels=in_channels, height=height, width=width, n_classes=n_classes, hidden=hidden,
                          fc=fc, patch=patch, layers=layers, dp=dp)
        feats = in_channels * patch * patch
        blocks = []
        for _ in range(layers):
            blocks.append(ReNetLayer(feats, hidden, dp))
            feats = 2 * hidden
        self.renet = nn.Sequential(*blocks)
        cells = (height // patch) * (width // patch)
        self.head = nn.Sequential(
            nn.Flatten(), nn.Linear(cells * 2 * hidden, fc), nn.ReLU(), nn.Linear(fc, fc), nn.ReLU(), nn.Linear(fc, n_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.renet(_patches(x, self.patch)))


class GroupedLinear(nn.Module):
    """E linear layers applied side by side: (B, E, in) -> (B, E, out), member e with the weight
    rows e·out … (e+1)·out of one (E·out, in) matrix. Exact per member (no zero blocks)."""

    def __init__(self, members: int, in_features: int, out_features: int):
        super().__init__()
        self.members, self.out_features = members, out_features
        self.weight = nn.Parameter(torch.zeros(members * out_features, in_features))
        self.bias = nn.Parameter(torch.zeros(members * out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight.view(self.members, self.out_features, -1)
        return torch.einsum("bei,eoi->beo", x, w) + self.bias.view(self.members, self.out_features)


class _MemberFeatures(nn.Module):
    """(B, H', W', 2·E·h) joint ReNet features -> (B, E, H'·W'·2h): each member's flattened
    features in the order its own ``nn.Flatten`` gives them."""

    index: torch.Tensor

    def __init__(self, index: torch.Tensor, members: int):
        super().__init__()
        self.members = members
        self.register_buffer("index", index, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(x.shape[0], -1)[:, self.index].reshape(x.shape[0], self.members, -1)


class JointReNet(nn.Module):
    """E equal-sized ReNets computed as one network (the victim and shadows trained together).

    ``nn.LSTM`` has no ``vmap`` rule, so the ReNet layers are one LSTM per sweep E times as wide
    whose weight matrices are block-structured: member e's rows keep the gate-major layout (gate g
    at g·E·h + e·h), its inputs are its own features (its image's patch block e·F, then its own
    forward block e·h and backward block E·h + e·h), and everything else is zero — held there by
    the trainer (:func:`core.training.ensemble.train_joint_epochs` masks those gradients). The head is
    exact per member: each member's flattened features through :class:`GroupedLinear` layers.
    Input: the members' images stacked along channels (member e's at e·C … (e+1)·C); output
    (B, E, K) logits. :attr:`places` says where each member parameter sits.
    """

    def __init__(self, members: list["ReNet"]):
        super().__init__()
        sizes = members[0].sizes
        if any(m.sizes != sizes for m in members) or sizes["dp"]:
            raise ValueError("only non-DP ReNets of one size can be joined")
        e_n, h, f, k, p = len(members), sizes["hidden"], sizes["fc"], sizes["n_classes"], sizes["patch"]
        self.patch = p
        feats = sizes["in_channels"] * p * p
        self.renet = nn.Sequential(*[ReNetLayer(e_n * feats if i == 0 else 2 * e_n * h, e_n * h)
                                     for i in range(sizes["layers"])])
        cells = (sizes["height"] // p) * (sizes["width"] // p)

        def bi_out(e: int) -> np.ndarray:
            return np.r_[block(e, h), e_n * h + block(e, h)]

        flat = np.concatenate([np.concatenate([c * 2 * e_n * h + bi_out(e) for c in range(cells)]) for e in range(e_n)])
        self.head = nn.Sequential(
            _MemberFeatures(torch.as_tensor(flat), e_n), GroupedLinear(e_n, cells * 2 * h, f), nn.ReLU(),
            GroupedLinear(e_n, f, f), nn.ReLU(), GroupedLinear(e_n, f, k))
        places: MemberPlaces = {}
        inputs = [block(e, feats) for e in range(e_n)]
        for layer in range(sizes["layers"]):
            for direction in ("horizontal", "vertical"):
                for rev in ("", "_reverse"):
                    name = f"renet.{layer}.{direction}.%s_l0{rev}"
                    places[name % "weight_ih"] = [(gate_rows(e, e_n, h, 4), inputs[e]) for e in range(e_n)]
                    places[name % "weight_hh"] = [(gate_rows(e, e_n, h, 4), block(e, h)) for e in range(e_n)]
                    places[name % "bias_ih"] = places[name % "bias_hh"] = [(gate_rows(e, e_n, h, 4), None) for e in range(e_n)]
                inputs = [bi_out(e) for e in range(e_n)]
        for i, (out_dim, in_dim) in {1: (f, cells * 2 * h), 3: (f, f), 5: (k, f)}.items():
            places[f"head.{i}.weight"] = [(block(e, out_dim), np.arange(in_dim)) for e in range(e_n)]
            places[f"head.{i}.bias"] = [(block(e, out_dim), None) for e in range(e_n)]
        self.places = places

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.renet(_patches(x, self.patch)))


def renet_param_count(in_channels: int, height: int, width: int, n_classes: int,
                      hidden: int, fc: int, patch: int, layers: int) -> int:
    """Closed-form parameter count of :class:`ReNet` (PyTorch LSTMs carry two bias vectors)."""

    def bilstm(i: int, h: int) -> int:
        return 2 * 4 * (h * i + h * h + 2 * h)

    feats, total = in_channels * patch * patch, 0
    for _ in range(layers):
        total += bilstm(feats, hidden) + bilstm(2 * hidden, hidden)
        feats = 2 * hidden
    cells = (height // patch) * (width // patch)
    total += cells * 2 * hidden * fc + fc + fc * fc + fc + fc * n_classes + n_classes
    return total


def match_renet(target: int, in_channels: int, height: int, width: int, n_classes: int,
                patch: int, layers: int) -> tuple[int, int]:
    """(hidden, fc) of the ReNet whose parameter count is closest to ``target``.

    Prefers a balanced model (fc at least 2·hidden) among those within 1 % of the target.
    """
    best: tuple[float, int, int] | None = None
    for hidden in range(4, 257, 2):
        for fc in range(16, 1025, 8):
            n = renet_param_count(in_channels, height, width, n_classes, hidden, fc, patch, layers)
            err = abs(n - target) / target
            score = err + (0.0 if fc >= 2 * hidden and err < 0.01 else 1.0)
            if best is None or score < best[0]:
                best = (score, hidden, fc)
    assert best is not None
    return best[1], best[2]
