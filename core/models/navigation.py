"""Actor-critic agents of the navigation task (paper 000 §4.2, paper 001 §5.1 and A.1).

Both agents read MiniGrid's egocentric partial view, a 7×7×3 grid of (object, colour, state)
indices, one-hot encoded per cell and channel (11 + 6 + 3 = 20 bits per cell, 980 inputs): the
indices are categories, not magnitudes, so a one-hot code is the faithful input to an MLP.
The view is partial — the agent sees 7×7 cells ahead of it, not through walls or closed doors,
and not its absolute position — so a feed-forward policy must act on the current view alone,
while a recurrent policy can carry the map it has seen (and, when trained on few maps, which
map it is on) in its memory. This is why recurrence matters for the memorisation the studies
measure.

* :class:`MLPAgent` (``ffnn``): the study's MLP actor-critic — an actor with two tanh hidden
  layers (74 units) and a softmax output over the 7 actions, a critic with two tanh hidden
  layers (64 units) and a scalar value (paper 000 §4.2).
* :class:`LSTMAgent` (``rnn``): "the same MLP with additional LSTM units" — a tanh linear
  embedding, an LSTM cell whose hidden state is the agent's memory, and actor and critic heads
  of one tanh linear layer each (paper 001 A.1, paper 000 §4.2). Its width is chosen by
  :func:`match_lstm_width` so both agents have the same number of parameters (within 5 %).

Both take ``(obs, memory)`` and return ``(logits, value, memory)``; the MLP's memory has
width 0, so one PPO loop serves both (the memory is zeroed at episode starts by the caller).

DP-SGD (per-sample gradients with Opacus): ``forward_sequence`` keeps the window dimension B
first in every layer with parameters (the Linear layers see (B, R, ·) inputs, summed over R by
Opacus), so a per-sample gradient is the gradient of one R-frame window; with ``dp=True`` the
LSTM cell is Opacus' ``DPLSTMCell`` (same maths and parameter count as ``nn.LSTMCell``).
"""
from __future__ import annotations

import torch
from torch import nn

from core.models import count_params

#: Sizes of MiniGrid's encoding channels: objects, colours, states (minigrid.core.constants).
CHANNEL_SIZES = (11, 6, 3)
N_ACTIONS = 7


class OneHotView(nn.Module):
    """(B, 7, 7, 3) integer view -> (B, 7·7·20) float one-hot code (no parameters)."""

    offsets: torch.Tensor

    def __init__(self, view_cells: int = 49):
        super().__init__()
        offsets = torch.tensor([0, CHANNEL_SIZES[0], CHANNEL_SIZES[0] + CHANNEL_SIZES[1]])
        self.register_buffer("offsets", offsets, persistent=False)
        self.width = sum(CHANNEL_SIZES)
        self.out_dim = view_cells * self.width

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        b = obs.shape[0]
        idx = obs.reshape(b, -1, 3).long() + self.offsets  # (B, cells, 3) positions in the 20-bit code
        code = torch.zeros(b, idx.shape[1], self.width, device=obs.device)
        code.scatter_(2, idx, 1.0)
        return code.reshape(b, -1)


def mlp(in_dim: int, hidden: int, out_dim: int, layers: int = 2) -> nn.Sequential:
    """``layers`` tanh hidden layers of width ``hidden`` and a linear output."""
    mods: list[nn.Module] = []
    d = in_dim
    for _ in range(layers):
        mods += [nn.Linear(d, hidden), nn.Tanh()]
        d = hidden
    mods.append(nn.Linear(d, out_dim))
    return nn.Sequential(*mods)


class MLPAgent(nn.Module):
    """Feed-forward actor-critic: π(a|o) = softmax(actor(o)), V(o) = critic(o)."""

    recurrent = False

    def __init__(self, view_cells: int = 49, n_actions: int = N_ACTIONS, actor_hidden: int = 74, critic_hidden: int = 64):
        super().__init__()
        self.encode = OneHotView(view_cells)
        self.actor = mlp(self.encode.out_dim, actor_hidden, n_actions)
        self.critic = mlp(self.encode.out_dim, critic_hidden, 1)
        self.memory_size = 0

    def forward(self, obs: torch.Tensor, memory: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """obs (B, 7, 7, 3) -> logits (B, A), value (B,), memory (B, 0)."""
        x = self.encode(obs)
        empty = x.new_zeros(x.shape[0], 0)
        return self.actor(x), self.critic(x)[:, 0], empty

    def forward_sequence(self, obs: torch.Tensor, memory: torch.Tensor, masks: torch.Tensor
                         ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """obs (B, R, 7, 7, 3) -> logits (B, R, A), values (B, R), memory (B, 0); no recurrence,
        so the R steps are one batch."""
        b, r = obs.shape[:2]
        x = self.encode(obs.reshape((b * r,) + tuple(obs.shape[2:]))).reshape(b, r, -1)
        return self.actor(x), self.critic(x)[..., 0], memory


class LSTMAgent(nn.Module):
    """Recurrent actor-critic: e = tanh(W o + b); (h, c) = LSTM(e, (h, c)); π = softmax(actor(h)),
    V = critic(h). The memory passed between steps is [h, c] (B, 2·width)."""

    recurrent = True

    def __init__(self, view_cells: int = 49, n_actions: int = N_ACTIONS, width: int = 64, dp: bool = False):
        super().__init__()
        self.encode = OneHotView(view_cells)
        self.embed = nn.Sequential(nn.Linear(self.encode.out_dim, width), nn.Tanh())
        if dp:
            from opacus.layers.dp_rnn import DPLSTMCell

            self.cell = DPLSTMCell(width, width, bias=True)
        else:
            self.cell = nn.LSTMCell(width, width)
        self.actor = mlp(width, width, n_actions, layers=1)
        self.critic = mlp(width, width, 1, layers=1)
        self.width = width
        self.memory_size = 2 * width

    def forward(self, obs: torch.Tensor, memory: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """obs (B, 7, 7, 3), memory (B, 2·width) -> logits (B, A), value (B,), new memory."""
        e = self.embed(self.encode(obs))
        if memory is None:
            memory = e.new_zeros(e.shape[0], self.memory_size)
        h, c = self.cell(e, (memory[:, : self.width], memory[:, self.width :]))
        return self.actor(h), self.critic(h)[:, 0], torch.cat([h, c], 1)

    def forward_sequence(self, obs: torch.Tensor, memory: torch.Tensor, masks: torch.Tensor
                         ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """R consecutive steps of B environments, for truncated BPTT.

        obs (B, R, 7, 7, 3), memory (B, 2·width) before the first step, masks (B, R) with 0 where
        a step starts a new episode (the memory is zeroed there). Returns logits (B, R, A),
        values (B, R) and the memory after the last step. Same numbers as R calls of
        :meth:`forward`; the embedding and the heads run once on all B·R steps and only the
        LSTM cell runs step by step (the per-call overhead dominates at these sizes).
        """
        b, r = obs.shape[:2]
        e = self.embed(self.encode(obs.reshape((b * r,) + tuple(obs.shape[2:]))).reshape(b, r, -1))
        h, c = memory[:, : self.width], memory[:, self.width :]
        hs = []
        for k in range(r):
            m = masks[:, k : k + 1]
            h, c = self.cell(e[:, k], (h * m, c * m))
            hs.append(h)
        hseq = torch.stack(hs, 1)  # (B, R, width)
        return self.actor(hseq), self.critic(hseq)[..., 0], torch.cat([h, c], 1)


#: the navigation agents (what PPO trains and the rollouts query)
AGENTS = (MLPAgent, LSTMAgent)
Agent = MLPAgent | LSTMAgent


def lstm_agent_params(width: int, view_cells: int = 49, n_actions: int = N_ACTIONS) -> int:
    """Closed form of ``count_params(LSTMAgent(width))``: embedding, LSTM cell (4 gates with
    input and recurrent weights and two biases), actor and critic heads."""
    d = view_cells * sum(CHANNEL_SIZES)
    w = width
    return (d * w + w) + 4 * (2 * w * w + 2 * w) + (w * w + w + w * n_actions + n_actions) + (w * w + w + w + 1)


def match_lstm_width(target: int, view_cells: int = 49, n_actions: int = N_ACTIONS) -> int:
    """The LSTM agent's width whose parameter count is closest to ``target``.

    The count grows by about 20·w per unit of width, i.e. < 2 % per step at the sizes used
    here, so the closest width is always within the 5 % the comparison requires.
    """
    best, best_gap = 1, float("inf")
    for w in range(1, 2048):
        gap = abs(lstm_agent_params(w, view_cells, n_actions) - target)
        if gap < best_gap:
            best, best_gap = w, gap
        elif lstm_agent_params(w, view_cells, n_actions) > target:
            break
    return best


def build_agent(arch: str, actor_hidden: int = 74, critic_hidden: int = 64, dp: bool = False) -> nn.Module:
    """``ffnn``: :class:`MLPAgent`; ``rnn``: :class:`LSTMAgent` with the MLP's parameter count
    (``dp``: with Opacus' DP LSTM cell). Both read MiniGrid's 7×7 view."""
    mlp_agent = MLPAgent(49, N_ACTIONS, actor_hidden, critic_hidden)
    if arch == "ffnn":
        return mlp_agent
    if arch == "rnn":
        width = match_lstm_width(count_params(mlp_agent), 49, N_ACTIONS)
        return LSTMAgent(49, N_ACTIONS, width, dp=dp)
    raise ValueError(f"unknown arch {arch!r}")
