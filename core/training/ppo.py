"""Proximal Policy Optimisation (Schulman et al. 2017) for the navigation agents, in one function.

The studies train their agents with the PPO of rl-starter-files / torch-ac at its defaults
(paper 000 §4.2, paper 001 A.1); :class:`PPOSettings` holds those defaults. The loop is
written out here (CleanRL style: one readable function) so that the order of maps, the
random streams, the device and per-sample gradient clipping (DP-SGD) stay under our
control. What one update does, for N environments and T frames per environment:

1. Roll out: N·T steps with the current policy, actions a ~ π(·|o, m); the recurrent memory m
   is zeroed at episode starts (m ← m·mask, mask = 0 after a terminal or truncated step).
2. Generalised advantage estimation (Schulman et al. 2016):
   δ_t = r_t + γ·V(o_{t+1})·mask_{t+1} − V(o_t),  A_t = δ_t + γλ·mask_{t+1}·A_{t+1},
   returns R_t = A_t + V(o_t).
3. ``ppo_epochs`` passes over the N·T frames in mini-batches of ``batch_size`` frames, each
   minimising  L = L_clip − c_H·H[π] + c_V·L_V  with
   L_clip = −E[min(ρ_t A_t, clip(ρ_t, 1−ε, 1+ε) A_t)],  ρ_t = π(a_t|o_t)/π_old(a_t|o_t),
   L_V = E[max((V − R)², (V_old + clip(V − V_old, −ε, ε) − R)²)]  (torch-ac's clipped value loss),
   then clipping the global gradient norm to ``max_grad_norm`` and one Adam step.

Recurrent agents are trained by truncated back-propagation through time (as torch-ac): the
rollout of each environment is cut into windows of ``recurrence`` consecutive frames; a
window is replayed from the memory stored at its first frame during the rollout, and the
loss is averaged over its frames. Like torch-ac, advantages are not normalised. Unlike
torch-ac, window starts are not shifted by half a window every other update and the stored
memories are not refreshed between PPO epochs (simpler; no effect on the studies' findings
that we know of), and the window is 16 frames by default (torch-ac: 4) so that the memory
is trained over a whole member-map episode.

The optimizer is :func:`core.training.loop.build_optimizer`'s (Adam, L2 on weight matrices only).
With ``settings.privacy`` the updates are DP-SGD (paper 000 eq. 7–8) through
:func:`core.training.loop.privatize`: a *sample* is one BPTT window of ``recurrence`` consecutive
frames of one environment (for the MLP agent too, so both agents protect the same unit), each
pass over an update's N·T/R windows draws Poisson batches of expected size ``batch_size``/R,
each window's gradient of its own loss (the mean over its frames of the loss above) is clipped to
C and the sum gets N(0, σ²C²I); the global clip is then not applied. Every pass of every update
is one accountant step sequence at q = 1/⌈(N·T/R)/(batch_size/R)⌉, so the reported ε bounds
what all updates together reveal about *one window's training tuple* (its observations,
actions, old log-probabilities, advantages and returns). It does not bound what they reveal
about a map: a map is replayed in many windows of many updates (per-map privacy needs group
privacy over all of them, or per-map clipping), and GAE lets a window's advantages depend on
the later frames of its environment.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np
import torch
from torch import nn

from core.foundations.device import single_thread
from core.models.navigation import AGENTS, Agent
from core.training.dpsgd import PrivacyRecord
from core.training.loop import Batch, BatchCallback, PrivacySettings, build_optimizer, privatize


class VecEnv(Protocol):
    """N environments stepped in lock-step; finished episodes restart on their own."""

    n_envs: int

    def reset(self) -> np.ndarray:
        """(N, ...) first observations."""

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(next observations, rewards (N,), done (N,) bool); done envs already restarted."""


@dataclass(frozen=True)
class PPOSettings:
    """PPO hyper-parameters; defaults are rl-starter-files' / torch-ac's.

    ``frames_per_env`` × ``n_envs`` frames are collected per update.
    """

    n_envs: int = 16
    frames_per_env: int = 128
    ppo_epochs: int = 4
    batch_size: int = 256
    lr: float = 1e-3
    weight_decay: float = 0.0
    adam_eps: float = 1e-8
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    entropy_coef: float = 0.01
    value_coef: float = 0.5
    max_grad_norm: float = 0.5
    recurrence: int = 16
    threads: int = 1
    privacy: PrivacySettings | None = None

    def window(self, recurrent: bool) -> int:
        """Frames per training window: ``recurrence`` for a recurrent agent and under DP-SGD
        (the window is the private sample), else 1."""
        return self.recurrence if recurrent or self.privacy is not None else 1

    def check(self, recurrent: bool) -> None:
        r = self.window(recurrent)
        if self.frames_per_env % r or self.batch_size % r:
            raise ValueError(f"frames_per_env ({self.frames_per_env}) and batch_size ({self.batch_size}) "
                             f"must be multiples of recurrence ({r})")


@dataclass
class UpdateLog:
    """What one update reports: frames so far, finished episodes' returns and lengths, losses."""

    update: int
    frames: int
    returns: list[float]
    lengths: list[int]
    policy_loss: float
    value_loss: float
    entropy: float
    fps: float


def sample_actions(logits: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """a ~ softmax(logits) with an explicit generator (reproducible independent of global RNG)."""
    return torch.multinomial(torch.softmax(logits, 1), 1, generator=generator)[:, 0]


def train_ppo(
    model: nn.Module,
    envs: VecEnv,
    settings: PPOSettings,
    n_updates: int,
    seed: int,
    on_update: Callable[[UpdateLog], None] | None = None,
    on_batch: BatchCallback | None = None,
) -> PrivacyRecord | None:
    """Train ``model`` in place with ``n_updates`` PPO updates on ``envs`` (see module docstring).

    Args:
        model: a navigation agent (:class:`~core.models.navigation.MLPAgent` or
            :class:`~core.models.navigation.LSTMAgent`, else a ``TypeError``) with
            ``forward(obs, memory) -> (logits, value, memory)``, ``forward_sequence(obs, memory, masks)``
            (the same over R steps), ``memory_size`` and ``recurrent``.
        envs: the vectorised environments (their map order is seeded by their owner).
        settings: PPO hyper-parameters.
        n_updates: number of rollout + optimisation rounds.
        seed: seeds action sampling and mini-batch order.
        on_update: called after every update with its :class:`UpdateLog`.
        on_batch: called after every optimizer step (:class:`core.training.loop.Batch`; its index
            holds the windows' positions in the update's buffer).

    Returns:
        Under DP-SGD the privacy record (σ, C, q, steps, accountant history), else None.
    """
    if not isinstance(model, AGENTS):
        raise TypeError(f"PPO trains a navigation agent (MLPAgent, LSTMAgent), got {type(model).__name__}")
    recurrent = bool(getattr(model, "recurrent", False))
    settings.check(recurrent)
    s = settings
    device = next(model.parameters()).device
    n, t_len = s.n_envs, s.frames_per_env
    rec = s.window(recurrent)
    gen = torch.Generator().manual_seed(seed)
    batch_rng = np.random.default_rng(seed)
    opt = build_optimizer(model, s.lr, s.weight_decay, eps=s.adam_eps)
    private = None
    if s.privacy is not None:
        private = privatize(model, opt, n * t_len // rec, s.batch_size // rec, n_updates * s.ppo_epochs, s.privacy,
                            torch.Generator().manual_seed(seed + 1),
                            unit=f"one trajectory window ({rec} consecutive frames of one environment in one update)")
    try:
        _updates(model, envs, s, n_updates, rec, gen, batch_rng, opt, private, device, on_update, on_batch)
    finally:
        record = private.record() if private is not None else None
        if private is not None:
            private.close()
    return record


def _updates(model: Agent, envs: VecEnv, s: PPOSettings, n_updates: int, rec: int, gen: torch.Generator,
             batch_rng: np.random.Generator, opt: torch.optim.Optimizer, private, device: torch.device,
             on_update: Callable[[UpdateLog], None] | None, on_batch: BatchCallback | None) -> None:
    """The rollout / GAE / optimisation rounds of :func:`train_ppo`."""
    n, t_len = s.n_envs, s.frames_per_env

    obs = torch.from_numpy(envs.reset())
    obs_buf = torch.zeros((t_len, n) + tuple(obs.shape[1:]), dtype=obs.dtype)
    mem_buf = torch.zeros(t_len, n, model.memory_size)
    mask_buf = torch.zeros(t_len, n)
    act_buf = torch.zeros(t_len, n, dtype=torch.long)
    logp_buf = torch.zeros(t_len, n)
    val_buf = torch.zeros(t_len, n)
    rew_buf = torch.zeros(t_len, n)
    memory = torch.zeros(n, model.memory_size, device=device)
    mask = torch.ones(n)  # 0 where the previous step ended an episode
    ep_return = np.zeros(n)
    ep_len = np.zeros(n, np.int64)
    frames = 0
    with single_thread(s.threads):
        for update in range(1, n_updates + 1):
            t0 = time.perf_counter()
            done_returns: list[float] = []
            done_lengths: list[int] = []
            # ---------------------------------------------------------------- 1. rollout
            model.eval()
            with torch.no_grad():
                for t in range(t_len):
                    memory = memory * mask[:, None].to(device)
                    logits, value, new_memory = model(obs.to(device), memory)
                    action = sample_actions(logits.cpu(), gen)
                    obs_buf[t], mem_buf[t], mask_buf[t] = obs, memory.cpu(), mask
                    act_buf[t], val_buf[t] = action, value.cpu()
                    logp_buf[t] = torch.log_softmax(logits.cpu(), 1).gather(1, action[:, None])[:, 0]
                    next_obs, reward, done = envs.step(action.numpy())
                    rew_buf[t] = torch.from_numpy(reward.astype(np.float32))
                    ep_return += reward
                    ep_len += 1
                    for i in np.flatnonzero(done):
                        done_returns.append(float(ep_return[i]))
                        done_lengths.append(int(ep_len[i]))
                    ep_return[done] = 0.0
                    ep_len[done] = 0
                    obs, memory = torch.from_numpy(next_obs), new_memory
                    mask = torch.from_numpy((~done).astype(np.float32))
                # ------------------------------------------------------------ 2. GAE
                _, next_value, _ = model(obs.to(device), memory * mask[:, None].to(device))
                next_value = next_value.cpu()
                adv_buf = torch.zeros(t_len, n)
                next_adv = torch.zeros(n)
                next_mask = mask
                for t in reversed(range(t_len)):
                    delta = rew_buf[t] + s.gamma * next_value * next_mask - val_buf[t]
                    next_adv = delta + s.gamma * s.gae_lambda * next_mask * next_adv
                    adv_buf[t] = next_adv
                    next_value, next_mask = val_buf[t], mask_buf[t]
            frames += n * t_len
            # env-major flattening: frame (env i, step t) -> i·T + t, so a window of `rec`
            # consecutive indices is one environment's consecutive steps
            def flat(x: torch.Tensor) -> torch.Tensor:
                return x.transpose(0, 1).reshape((n * t_len,) + tuple(x.shape[2:])).to(device)

            b_obs, b_mem, b_mask, b_act = flat(obs_buf), flat(mem_buf), flat(mask_buf), flat(act_buf)
            b_logp, b_val, b_adv = flat(logp_buf), flat(val_buf), flat(adv_buf)
            b_ret = b_val + b_adv
            # ---------------------------------------------------------------- 3. optimise
            model.train()
            logs = []
            for _ in range(s.ppo_epochs):
                for k, windows in enumerate(_window_batches(n * t_len // rec, s.batch_size // rec, batch_rng, private)):
                    if private is not None:
                        private.zero_grad()
                        if len(windows) == 0:  # Poisson sampling drew no window: a noise-only step
                            private.step(empty=True)
                            if on_batch is not None:
                                on_batch(Batch(update, k, windows, float("nan")))
                            continue
                    # (B, rec) frame indices: B windows of `rec` consecutive steps of one env each
                    starts = windows * rec
                    idx = torch.from_numpy(starts[:, None] + np.arange(rec)[None, :]).to(device)
                    logits, value, _ = model.forward_sequence(b_obs[idx], b_mem[idx[:, 0]], b_mask[idx])
                    logp_all = torch.log_softmax(logits, -1)
                    entropy = -(logp_all.exp() * logp_all).sum(-1).mean()
                    ratio = torch.exp(logp_all.gather(-1, b_act[idx][..., None])[..., 0] - b_logp[idx])
                    adv = b_adv[idx]
                    policy_loss = -torch.min(ratio * adv, ratio.clamp(1 - s.clip_eps, 1 + s.clip_eps) * adv).mean()
                    v_clipped = b_val[idx] + (value - b_val[idx]).clamp(-s.clip_eps, s.clip_eps)
                    value_loss = torch.max((value - b_ret[idx]) ** 2, (v_clipped - b_ret[idx]) ** 2).mean()
                    # the mean over all B·rec frames = torch-ac's mean over the rec per-step losses
                    loss = policy_loss - s.entropy_coef * entropy + s.value_coef * value_loss
                    if private is None:
                        opt.zero_grad()
                        loss.backward()
                        nn.utils.clip_grad_norm_(model.parameters(), s.max_grad_norm)
                        opt.step()
                    else:  # each window's gradient clipped to C, noise added (module docstring)
                        private.backward(loss)
                        private.step()
                    logs.append((policy_loss.item(), value_loss.item(), entropy.item()))
                    if on_batch is not None:
                        on_batch(Batch(update, k, windows, float(loss.item())))
            model.eval()
            if on_update is not None:
                pl, vl, ent = np.mean(logs, axis=0) if logs else (float("nan"),) * 3
                on_update(UpdateLog(update, frames, done_returns, done_lengths, float(pl), float(vl), float(ent),
                                    n * t_len / max(time.perf_counter() - t0, 1e-9)))


def _window_batches(n_windows: int, per_batch: int, rng: np.random.Generator, private):
    """One pass over an update's windows: a seeded permutation cut into batches of ``per_batch``
    windows, or under DP-SGD Opacus' Poisson batches (each window with q = 1/⌈n_windows/per_batch⌉)."""
    if private is not None:
        for windows in private.batches():
            yield windows.numpy()
        return
    starts = rng.permutation(n_windows)
    for b in range(0, n_windows, per_batch):
        yield starts[b : b + per_batch]
