"""Navigation task (paper 000 §4.2, paper 001 §3.2 and §5.1): PPO agents on MiniGrid floor-maps.

Records are *floor-maps*: record i is the MiniGrid environment seed i (``reset(seed=i)`` builds
the same map and start state every time). The victim's agent trains on ``n_train`` maps (its
members); ``n_eval`` other maps of the victim's half are non-members; the attacker's shadow
agents train on maps of the disjoint other half ("the attacker is able to obtain an arbitrary
number of floor-maps by feeding a randomly generated seed number", paper 000 §4.2).

* Environment: MiniGrid MultiRoom (the studies' ``MiniGrid-MultiRoom-N4-…``), gymnasium API,
  MiniGrid's own reward r = 1 − 0.9·t/T on reaching the goal at step t of at most T, else 0
  (paper 000, eq. 2).
* Observation: MiniGrid's 7×7×3 egocentric partial view; the agents one-hot encode it
  (:mod:`core.models.navigation`). :class:`MapEnv` computes the view with numpy, cell for cell
  MiniGrid's array without its per-cell Python loops.
* Training: PPO (:func:`core.training.ppo.train_ppo`) on ``n_envs`` environments, each restarted on a
  member map drawn in a seeded order (every map once per cycle, cycles shuffled). The
  pipeline's "epoch" is ``updates_per_epoch`` PPO updates of ``n_envs × frames_per_env``
  frames; ``updates_per_epoch = ceil(frames / (epochs · n_envs · frames_per_env))``, so the
  agent sees ``epochs × updates_per_epoch × n_envs × frames_per_env ≥ frames`` frames.
* Query (paper 001 §3.2): one rollout of the agent on the queried map, actions *sampled* from
  its policy with a random stream seeded by the map alone (the same map gives the same
  uniforms to every agent, and a rollout does not depend on which other maps are queried with
  it), at most the environment's step limit. The response is the sequence of the agent's
  action distributions (7 actions, full vectors kept); the reference at each step is the label
  model's policy at the visited state: the shortest-path planner of :mod:`core.data.planner`
  (uniform over all optimal actions), the exact reward-maximising policy.
* Utility: mean episodic return of the same seeded rollouts (one per map).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

import numpy as np
import torch
from torch import nn

from core.data.minigrid import MapEnv, MapVecEnv, Rollout, StartRoomCurriculum, query_stream
from core.data.planner import EMPTY, GOAL, PlannerCache
from core.data.render import render_path
from core.foundations.config import ExperimentConfig, bounded, check_fields
from core.foundations.device import single_thread
from core.foundations.errors import ConfigError
from core.foundations.memory import (
    FLOAT_BYTES,
    attack_training_bytes,
    mlp_agent_param_count,
    responses_bytes,
    training_state_bytes,
)
from core.measurement.responses import Responses
from core.measurement.slices import quantile_buckets
from core.models.navigation import AGENTS, Agent, build_agent, lstm_agent_params, match_lstm_width
from core.tasks.base import (
    PRESET_TIMES,
    EpochCallback,
    FractionCallback,
    OutputTransform,
    RecordView,
    Task,
    TaskData,
    VictimLoader,
)
from core.training.loop import BatchCallback, PrivacySettings, TrainingRecord
from core.training.ppo import PPOSettings, train_ppo


@torch.no_grad()
def rollout_maps(model: nn.Module, envs: list[MapEnv], seeds: np.ndarray,
                 planner: PlannerCache | None = None, policy_transform=None) -> list[Rollout]:
    """Roll ``model`` out on each map (batched over maps), one seeded episode per map.

    Action at step t of map s: the smallest a with Σ_{b ≤ a} π(b) > u_t, u = ``query_stream(s)``
    (inverse-CDF sampling, so the episode depends on the map and the agent only). With a
    ``planner`` the label model's policy at each visited state is recorded as the reference.
    ``policy_transform`` maps the (n, 7) log-probabilities of each step before the action is
    drawn (an output defense); the recorded distributions are then the transformed ones.
    """
    if not isinstance(model, AGENTS):
        raise TypeError(f"rollouts query a navigation agent (MLPAgent, LSTMAgent), got {type(model).__name__}")
    with single_thread():
        return _rollout_maps(model, envs, seeds, planner, policy_transform)


def _rollout_maps(model: Agent, envs: list[MapEnv], seeds: np.ndarray, planner: PlannerCache | None,
                  policy_transform=None) -> list[Rollout]:
    device = next(model.parameters()).device
    n = len(seeds)
    out = [Rollout(int(s), np.zeros((0, 7)), None) for s in seeds]
    if n == 0:
        return out
    obs = np.stack([env.reset(s) for env, s in zip(envs, seeds)])
    max_steps = envs[0].max_steps
    streams = [query_stream(s, max_steps) for s in seeds]
    memory = torch.zeros(n, model.memory_size, device=device)
    probs: list[list[np.ndarray]] = [[] for _ in range(n)]
    refs: list[list[np.ndarray]] = [[] for _ in range(n)]
    active = np.arange(n)
    t = 0
    while len(active):
        logits, _, new_memory = model(torch.from_numpy(obs[active]).to(device), memory[active])
        if policy_transform is None:
            p = torch.softmax(logits.float(), 1).cpu().numpy().astype(np.float64)
        else:
            p = policy_transform(torch.log_softmax(logits.double(), 1)).exp().cpu().numpy()
        memory[active] = new_memory
        still = []
        for k, i in enumerate(active.tolist()):
            env = envs[i]
            pos, direction = env.agent_state
            out[i].path.append(pos)
            if planner is not None:
                refs[i].append(planner.policy(env.grid_code, pos, direction))
            probs[i].append(p[k])
            cdf = np.cumsum(p[k])
            a = int(min(np.searchsorted(cdf, streams[i][t] * cdf[-1], side="right"), len(cdf) - 1))
            out[i].actions.append(a)
            obs[i], r, term, trunc = env.step(a)
            out[i].episode_return += r
            if term or trunc:
                out[i].reached = bool(term and r > 0)
                out[i].path.append(env.agent_state[0])
            else:
                still.append(i)
        active = np.asarray(still, np.int64)
        t += 1
    for i in range(n):
        out[i].probs = np.asarray(probs[i], np.float32)
        out[i].reference = np.asarray(refs[i], np.float32) if planner is not None else None
    return out


#: training curricula: none, or the reverse curriculum over start rooms
CURRICULA = ("", "start_rooms")


@dataclass(frozen=True)
class NavigationOptions:
    """Options of the navigation task (PPO defaults are rl-starter-files' / torch-ac's).

    Ranges in brackets are checked by :meth:`validate`; floats must be finite.

    Attributes:
        frames: total environment frames each agent trains on (rounded up to whole epochs of
            whole PPO updates: see the module docstring). [1, 100000000]
        n_envs: parallel environments per PPO update. [1, 256]
        frames_per_env: frames each environment contributes to one update. [1, 4096]
        ppo_epochs: passes over an update's frames. [1, 100]
        clip_eps: PPO's clipping ε (also clips the value update); small ε = a regulariser
            (paper 000 §5, Fig. 7). (0, 1)
        gamma, gae_lambda: discount and GAE λ. [0, 1]
        entropy_coef, value_coef: loss weights. [0, 10]
        max_grad_norm: gradient-norm clip. (0, 1000]
        recurrence: truncated-BPTT window of the LSTM agent, in frames. [1, 4096], and a
            divisor of frames_per_env.
        actor_hidden, critic_hidden: widths of the MLP agent's two hidden layers (the LSTM
            agent's width is then chosen to match its parameter count). [1, 4096]
        map_pool: maps in each half of the data source (seeds [0, P) for the victim,
            [P, 2P) for the attacker). [1, 1000000]
        curriculum: "" (episodes start where the map says) or ``start_rooms``: a reverse
            curriculum over start rooms (:class:`core.data.minigrid.StartRoomCurriculum`):
            training episodes on the member maps first start in the goal's room, then ever
            farther from it, until any room (the true start included). Query rollouts always
            start at the map's own start. Victim and shadows follow the same recipe.
        curriculum_ramp: share of training over which the start moves back to room 0. (0, 1]
    """

    frames: int = bounded(40960, 1, 100_000_000)
    n_envs: int = bounded(16, 1, 256)
    frames_per_env: int = bounded(128, 1, 4096)
    ppo_epochs: int = bounded(4, 1, 100)
    clip_eps: float = bounded(0.2, 0, 1, lo_open=True, hi_open=True)
    gamma: float = bounded(0.99, 0, 1)
    gae_lambda: float = bounded(0.95, 0, 1)
    entropy_coef: float = bounded(0.01, 0, 10)
    value_coef: float = bounded(0.5, 0, 10)
    max_grad_norm: float = bounded(0.5, 0, 1000, lo_open=True)
    recurrence: int = bounded(16, 1, 4096)
    actor_hidden: int = bounded(74, 1, 4096)
    critic_hidden: int = bounded(64, 1, 4096)
    map_pool: int = bounded(1000, 1, 1_000_000)
    curriculum: str = ""
    curriculum_ramp: float = bounded(0.5, 0, 1, lo_open=True)

    #: fields with a fixed set of values (forms show a choice, not free text)
    FIELD_CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"curriculum": CURRICULA}

    def validate(self) -> None:
        """Ranges and types of every field, then that BPTT windows tile each environment's frames
        and that the curriculum is one this task knows."""
        check_fields(self)
        if self.frames_per_env % self.recurrence:
            raise ConfigError(f"frames_per_env ({self.frames_per_env}) must be a multiple of recurrence ({self.recurrence})")
        if self.curriculum not in CURRICULA:
            raise ConfigError(f"curriculum must be one of {', '.join(repr(c) for c in CURRICULA)}, "
                              f"got {self.curriculum!r}")


@dataclass
class MapRecords:
    """The data source: environment id and the map seeds (record i = seed ``seeds[i]``); seeds in
    ``canaries`` are built as audit canaries (:func:`core.data.minigrid.canary_layout`)."""

    env_id: str
    seeds: np.ndarray
    canaries: frozenset[int] = frozenset()


@dataclass(frozen=True)
class MapView:
    """One map as data for crisp drawing (:func:`core.views.map_figures.navigation_map`): the ``role`` of its
    record (member / non-member) and its ``seed``, its ``cells`` (MiniGrid object indices, rows = y, cropped to
    the used area), ``door_open``, the ``start`` (x, y) and ``start_dir``, the ``goal`` (None without one), and
    the seeded query episode's ``path``, ``steps``, return (``episode_return``, JSON ``return``) and whether it
    ``reached_goal``. JSON (the app's map-view cache, core.jobs.mapview) by :meth:`to_dict` / :meth:`from_dict`."""

    role: str
    seed: int
    cells: list[list[int]]
    door_open: list[list[int]]
    start: list[int]
    start_dir: int
    goal: list[int] | None
    path: list[list[int]]
    steps: int
    episode_return: float
    reached_goal: bool

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "seed": self.seed, "cells": self.cells, "door_open": self.door_open,
                "start": self.start, "start_dir": self.start_dir, "goal": self.goal, "path": self.path,
                "steps": self.steps, "return": self.episode_return, "reached_goal": self.reached_goal}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "MapView":
        return cls(str(d["role"]), int(d["seed"]), d["cells"], d["door_open"], d["start"], int(d["start_dir"]),
                   d["goal"], d["path"], int(d["steps"]), float(d["return"]), bool(d["reached_goal"]))


@dataclass(frozen=True)
class MapViews:
    """A run's example maps as data (core.jobs.mapview's cache entry): its architecture, config hash, environment and
    the first member's and first non-member's :class:`MapView`."""

    arch: str
    config_hash: str
    env_id: str
    maps: tuple[MapView, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"arch": self.arch, "config_hash": self.config_hash, "env_id": self.env_id,
                "maps": [m.to_dict() for m in self.maps]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "MapViews":
        return cls(str(d["arch"]), str(d["config_hash"]), str(d["env_id"]), tuple(MapView.from_dict(m) for m in d["maps"]))


def map_view(env_id: str, run: Rollout, role: str) -> MapView:
    """``run``'s map as data for crisp drawing (:class:`MapView`)."""
    env = MapEnv(env_id)
    env.reset(run.seed)
    code = np.asarray(env.env.grid.encode())  # (W, H, 3): object, colour, state
    start = [int(v) for v in env.env.agent_pos]
    start_dir = int(env.env.agent_dir)
    objects = code[..., 0]
    used = np.argwhere(objects != EMPTY)
    (x0, y0), (x1, y1) = (int(v) for v in used.min(0)), (int(v) for v in used.max(0))
    goal = [[int(x) - x0, int(y) - y0] for x, y in np.argwhere(objects == GOAL)]
    return MapView(
        role=role,
        seed=int(run.seed),
        cells=objects[x0 : x1 + 1, y0 : y1 + 1].T.astype(int).tolist(),  # rows = y, columns = x
        door_open=(code[x0 : x1 + 1, y0 : y1 + 1, 2] == 0).T.astype(int).tolist(),
        start=[start[0] - x0, start[1] - y0],
        start_dir=start_dir,
        goal=goal[0] if goal else None,
        path=[[int(x) - x0, int(y) - y0] for x, y in run.path],
        steps=int(run.steps),
        episode_return=float(run.episode_return),
        reached_goal=bool(run.reached),
    )


def updates_per_epoch(cfg: ExperimentConfig) -> int:
    """PPO updates per pipeline epoch: ceil(frames / (epochs · n_envs · frames_per_env))."""
    o: NavigationOptions = cfg.options
    return max(1, math.ceil(o.frames / (cfg.epochs * o.n_envs * o.frames_per_env)))


def total_frames(cfg: ExperimentConfig) -> int:
    """Frames each agent actually trains on: epochs × updates_per_epoch × n_envs × frames_per_env."""
    o: NavigationOptions = cfg.options
    return cfg.epochs * updates_per_epoch(cfg) * o.n_envs * o.frames_per_env


def ppo_settings(cfg: ExperimentConfig) -> PPOSettings:
    o: NavigationOptions = cfg.options
    return PPOSettings(n_envs=o.n_envs, frames_per_env=o.frames_per_env, ppo_epochs=o.ppo_epochs,
                       batch_size=cfg.batch_size, lr=cfg.lr, weight_decay=cfg.weight_decay, gamma=o.gamma,
                       gae_lambda=o.gae_lambda, clip_eps=o.clip_eps, entropy_coef=o.entropy_coef,
                       value_coef=o.value_coef, max_grad_norm=o.max_grad_norm, recurrence=o.recurrence,
                       privacy=PrivacySettings.from_config(cfg))


@dataclass(frozen=True)
class _EpisodeMeans:
    """The victim's mean return, steps and share of episodes that reached the goal over some maps (the examples)."""

    episode_return: float
    steps: float
    success: float


class NavigationTask(Task):
    name = "navigation"
    utility_metric = "return"
    label = "Navigation (deep RL)"
    record_names = ("map", "maps")
    record_id_meaning = "the map's environment seed (victim's half 0..map_pool-1, attacker's map_pool..2·map_pool-1)"
    width_knob = "actor_hidden"
    privacy_unit = "one trajectory window (recurrence frames of one environment in one PPO update)"
    privacy_unit_is_record = False  # a map yields many windows (privacy_caveat)
    sensitivity_samples = 3
    precisions = ("float32",)  # PPO trains in float32
    map_views = True
    privacy_caveat = (
        "**What DP-SGD protects here.** A private sample is one trajectory window (`recurrence` consecutive frames of "
        "one environment within one PPO update), for both agents. ε bounds what training reveals about *one window's "
        "training tuple*, not about a map: a member map is replayed in many windows of many updates, so per-map "
        "privacy would need group privacy over all of them (ε grows roughly with their number) or clipping per map. "
        "The membership attack on this page asks about maps.")
    options_cls = NavigationOptions
    # MiniGrid's "MultiRoom-N4-S5-v0" builds SIX rooms: "-v1" is the 4-room layout the name promises
    datasets = ("MiniGrid-MultiRoom-N2-S4-v0", "MiniGrid-MultiRoom-N4-S5-v1", "MiniGrid-MultiRoom-N4-S5-v0")
    about = ("A record is a floor-map (an environment seed); it is a member if the agent trained on it. A query is "
             "one seeded rollout of the agent on the map, answered by its action distribution at every step. The "
             "reference (label model) is the reward-maximising policy, computed exactly by a shortest-path planner "
             "over the full grid (all optimal actions equally likely) instead of a trained labelling agent. The "
             "attack is an LSTM over the (agent policy, label policy) sequence; LiRA and RMIA compare the agent's mean "
             "confidence in an optimal action on a map with the shadows' on the same map. The quick preset "
             "(MultiRoom-N2-S4, 16 member maps) learns with plain PPO. The paper preset uses the studies' 4-room "
             "layout (MiniGrid's MultiRoom-N4-S5-v1: its '-v0' id builds six rooms) with 16 member maps; plain PPO "
             "never reaches a goal there, so agents train with a start-room curriculum on their member maps "
             "(episodes first start in the goal's room, then ever farther back; queries always start at the map's "
             "own start); the run shown reports how often its agents reach the goal. The curriculum is part of the "
             "training recipe, so the shadows follow it too.")
    presets = {
        # few member maps, each seen many times: memorisation, an attack above chance. 16 + 16 maps, not
        # 8 + 8: one map moves a TPR by 0.0625 instead of 0.125, at the same cost (frames are fixed)
        "quick": dict(dataset="MiniGrid-MultiRoom-N2-S4-v0", n_train=16, n_eval=16, epochs=12, batch_size=256,
                      lr=1e-3, n_shadows=4, attack_epochs=(4, 8), attack_train_epochs=400, attack_hidden=32,
                      frames=122880),
        # the studies' 4-room layout: plain PPO reaches no goal there; the start-room curriculum does, at
        # lr 5e-4 (docs/results.md, "navigation paper preset")
        "paper": dict(dataset="MiniGrid-MultiRoom-N4-S5-v1", n_train=16, n_eval=16, epochs=20, batch_size=256,
                      lr=5e-4, n_shadows=5, attack_epochs=(5, 10, 15), attack_train_epochs=200, attack_hidden=32,
                      frames=819200, curriculum="start_rooms"),
    }

    preset_notes = {
        "quick": "built-in MiniGrid maps (N2-S4), no data folder; 16 + 16 maps (one map moves a TPR by 0.0625), "
                 f"4 shadows, 122,880 frames per agent. Measured times: {PRESET_TIMES}.",
        "paper": "built-in MiniGrid maps (N4-S5, start-room curriculum): the studies' 4-room layout; 16 + 16 maps (one "
                 f"map moves a TPR by 0.0625), 5 shadows, 819,200 frames per agent. Measured times: {PRESET_TIMES}.",
    }

    def __init__(self) -> None:
        self._envs: dict[str, list[MapEnv]] = {}
        self._planner = PlannerCache()

    # ------------------------------------------------------------------ data
    def load(self, cfg: ExperimentConfig) -> TaskData:
        o: NavigationOptions = cfg.options
        probe = self._env_pool(cfg.dataset, 1)[0]
        if o.frames < o.n_envs * o.frames_per_env:
            raise ConfigError(f"frames ({o.frames}) must be at least one PPO update of n_envs × frames_per_env = "
                              f"{o.n_envs * o.frames_per_env} frames")
        if (cfg.arch == "rnn" or cfg.private) and cfg.batch_size % o.recurrence:
            why = "BPTT windows" if cfg.arch == "rnn" else "windows (the samples of DP-SGD)"
            raise ConfigError(f"batch_size ({cfg.batch_size}) must be a multiple of recurrence ({o.recurrence}): "
                              f"a mini-batch is made of whole {why}")
        p = o.map_pool
        records = MapRecords(cfg.dataset, np.arange(2 * p, dtype=np.int64))
        upe = updates_per_epoch(cfg)
        info = {
            "env_id": cfg.dataset, "n_maps": 2 * p, "max_steps": probe.max_steps, "n_actions": 7,
            "observation": "7×7×3 egocentric partial view, one-hot per cell (980 inputs)",
            "updates_per_epoch": upe, "frames_per_update": o.n_envs * o.frames_per_env,
            "frames": total_frames(cfg), "label_model": "shortest-path planner (uniform over optimal actions)",
        }
        if o.curriculum:
            info["curriculum"] = {"kind": o.curriculum, "ramp": o.curriculum_ramp}
        description = (f"{cfg.dataset}: floor-maps = environment seeds, victim seeds [0, {p}), "
                       f"attacker seeds [{p}, {2 * p}); {total_frames(cfg):,} frames per agent" +
                       (f" (start-room curriculum over the first {o.curriculum_ramp:.0%} of training)"
                        if o.curriculum else ""))
        return TaskData(records, np.arange(p), np.arange(p, 2 * p), description, info)

    def _env_pool(self, env_id: str, n: int) -> list[MapEnv]:
        """Reusable query environments (creating a MiniGrid env costs more than resetting one)."""
        pool = self._envs.setdefault(env_id, [])
        while len(pool) < n:
            pool.append(MapEnv(env_id))
        return pool[:n]

    # ------------------------------------------------------------------ models
    def build_model(self, cfg: ExperimentConfig, data: TaskData) -> nn.Module:
        o: NavigationOptions = cfg.options
        return build_agent(cfg.arch, o.actor_hidden, o.critic_hidden, dp=cfg.private)

    def memory_estimate(self, cfg: ExperimentConfig, data: TaskData) -> int:
        """Peak bytes of one experiment, from the config alone (no agent is built): the rollout
        buffers of a PPO update (uint8 views, memories, 6 float scalars per frame) twice
        (buffers and their flattened copies), a mini-batch's one-hot inputs and activations,
        weights with gradients and Adam's two moments; the attack LSTM over the query episodes
        (16 features per step); and the Responses every agent keeps. A few MB at the presets."""
        o: NavigationOptions = cfg.options
        mlp_params = mlp_agent_param_count(o.actor_hidden, o.critic_hidden)
        if cfg.arch == "rnn":
            width = match_lstm_width(mlp_params)
            params, memory = lstm_agent_params(width), 2 * width
        else:
            params, memory = mlp_params, 0
        frames = o.n_envs * o.frames_per_env
        buffers = 2 * frames * (7 * 7 * 3 + FLOAT_BYTES * (memory + 6))
        batch = cfg.batch_size * FLOAT_BYTES * (980 + 8 * max(o.actor_hidden, o.critic_hidden, memory))
        train = buffers + 4 * batch + training_state_bytes(params)
        steps = int(data.info.get("max_steps", 0) or 100)
        attack = attack_training_bytes(cfg, n_features=16, max_steps=steps)
        kept = responses_bytes(cfg, steps_per_record=steps, floats_per_step=20)
        return int(max(train, attack) + kept)

    # ------------------------------------------------------------------ training
    def train(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, train_index: np.ndarray,
              on_epoch: EpochCallback, on_progress: FractionCallback,
              on_batch: BatchCallback | None = None) -> TrainingRecord:
        """PPO on the member maps; one pipeline epoch = ``updates_per_epoch`` PPO updates. The
        optimizer and the DP-SGD wrapper are the shared loop's (:mod:`core.training`); under DP a
        sample is one trajectory window, not a map (:mod:`core.training.ppo`)."""
        o: NavigationOptions = cfg.options
        rec: MapRecords = data.records
        upe = updates_per_epoch(cfg)
        n_updates = cfg.epochs * upe
        # the pipeline seeded torch for this role: derive the map order and action stream from it
        seed = int(torch.initial_seed()) % 2**31
        envs = MapVecEnv(rec.env_id, o.n_envs, rec.seeds[train_index], order_seed=seed + 1, canaries=rec.canaries)
        curriculum = StartRoomCurriculum(o.curriculum_ramp, seed) if o.curriculum == "start_rooms" else None
        envs.curriculum = curriculum

        def on_update(log) -> None:
            on_progress(log.update / n_updates)
            if curriculum is not None:
                curriculum.progress = log.update / n_updates
            if log.update % upe == 0:
                on_epoch(log.update // upe, model)

        start = time.perf_counter()
        privacy = train_ppo(model, envs, ppo_settings(cfg), n_updates, seed, on_update, on_batch)
        steps = n_updates * o.ppo_epochs * -(-(o.n_envs * o.frames_per_env) // cfg.batch_size)
        if privacy is not None:  # the noisy steps DP-SGD took, as its record counts them
            steps = int(privacy.steps)
        return TrainingRecord(n_updates, steps, time.perf_counter() - start, privacy)

    # ------------------------------------------------------------------ audit canaries
    canary_design = ("maps with an unusual layout: unused maps of the victim's half whose goal is moved to a seeded "
                     "free cell of any room and hidden (the agent's view shows floor there; the planner routes to it), "
                     "so nothing the agent sees tells where the goal is; an agent acts well on one only by memorising "
                     "it, and the auditor's score is minus the agent's mean loss against the planner along its query "
                     "rollout")

    def canary_data(self, cfg: ExperimentConfig, data: TaskData, index: np.ndarray,
                    rng: np.random.Generator) -> TaskData:
        """The maps ``index`` built as canaries (:func:`core.data.minigrid.canary_layout`): the same
        seeds, marked, so the training sampler and the query environments build their canary layout.
        Our design choice: another MiniGrid layout (more rooms) would not do, since plain PPO does not
        learn N4 maps (docs/results.md), so an included canary would leave no trace."""
        rec: MapRecords = data.records
        marked = rec.canaries | frozenset(int(s) for s in rec.seeds[np.asarray(index, np.int64)])
        return TaskData(MapRecords(rec.env_id, rec.seeds, marked), data.victim_pool, data.attacker_pool,
                        data.description, data.info)

    # ------------------------------------------------------------------ queries
    def rollouts(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                 reference: bool = False, output_transform: OutputTransform | None = None) -> list[Rollout]:
        """Seeded query episodes of ``model`` on maps ``index`` (in that order)."""
        rec: MapRecords = data.records
        seeds = rec.seeds[np.asarray(index, np.int64)]
        envs = self._env_pool(rec.env_id, len(seeds))
        for env in envs:  # the pool is shared: each query sets whether its data source has canaries
            env.canaries = rec.canaries
        return rollout_maps(model, envs, seeds, self._planner if reference else None, output_transform)

    def utility(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                output_transform: OutputTransform | None = None) -> float:
        """Mean episodic return of one seeded episode per map (acting on the transformed policy, if given)."""
        runs = self.rollouts(cfg, model, data, index, output_transform=output_transform)
        return float(np.mean([r.episode_return for r in runs])) if runs else 0.0

    def epoch_metrics(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, members: np.ndarray,
                      nonmembers: np.ndarray) -> dict[str, float]:
        """Mean return and mean steps per episode on member and on unseen maps (one rollout each)."""
        row = {}
        for split, index in (("train", members), ("val", nonmembers)):
            runs = self.rollouts(cfg, model, data, index)
            row[f"utility_{split}"] = float(np.mean([r.episode_return for r in runs])) if runs else 0.0
            row[f"steps_{split}"] = float(np.mean([r.steps for r in runs])) if runs else 0.0
        return row

    def respond(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                record_features: bool = True) -> Responses:
        """Per map: the agent's action distributions along its query episode, with the label
        model's (planner's) policy at each visited state as the reference (paper 001 §3.2)."""
        runs = self.rollouts(cfg, model, data, index, reference=True)
        probs = np.concatenate([r.probs for r in runs]) if runs else np.zeros((0, 7), np.float32)
        refs = np.concatenate([r.reference for r in runs]) if runs else np.zeros((0, 7), np.float32)
        resp = Responses.from_probs(probs, [r.steps for r in runs], refs)
        resp.record_features["episode"] = np.array([[r.episode_return, r.steps, float(r.reached)] for r in runs],
                                                   np.float32).reshape(len(runs), 3)
        return resp

    # ------------------------------------------------------------------ one record, for the app
    def describe_record(self, cfg: ExperimentConfig, data: TaskData, index: int, victim: VictimLoader | None = None,
                        role: str = "member") -> RecordView:
        """The map with, given a ``victim``, its seeded query episode on it (the one the attack saw):
        :func:`map_view`. Without a victim only the seed (a map is drawn with an agent's path)."""
        rec: MapRecords = data.records
        i = int(index)
        caption = f"map seed {int(rec.seeds[i])} ({role})"
        if victim is None:
            return RecordView("map", caption)
        run = self.rollouts(cfg, victim(), data, np.array([i], np.int64))[0]
        return RecordView("map", caption, answer=map_view(rec.env_id, run, role))

    def slice_labels(self, cfg: ExperimentConfig, data: TaskData, records: np.ndarray,
                     summary: dict[str, Any]) -> dict[str, list[str]]:
        """The map layout is fixed by the environment (rooms and their maximum size), so the query
        episode's length (a map's difficulty for the victim), in terciles."""
        return {"query episode length": quantile_buckets(summary["records"]["length"], 3, " steps")}

    # ------------------------------------------------------------------ showcase
    def examples(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, members: np.ndarray,
                 nonmembers: np.ndarray) -> dict[str, Any]:
        """One member and one non-member map rendered with the victim's query path, plus mean
        return and steps per episode on the evaluation members vs unseen maps.

        Steps of an episode that misses the goal count as the step limit (MiniGrid ends it there).
        """
        rec: MapRecords = data.records
        mem_runs = self.rollouts(cfg, model, data, members)
        non_runs = self.rollouts(cfg, model, data, nonmembers)

        def stats(runs: list[Rollout]) -> _EpisodeMeans:
            if not runs:
                return _EpisodeMeans(0.0, 0.0, 0.0)
            return _EpisodeMeans(float(np.mean([r.episode_return for r in runs])), float(np.mean([r.steps for r in runs])),
                                 float(np.mean([r.reached for r in runs])))

        sm, sn = stats(mem_runs), stats(non_runs)
        maps = []
        for role, runs in (("member", mem_runs), ("non-member", non_runs)):
            if runs:
                r = runs[0]
                maps.append({"role": role, "seed": r.seed, "return": r.episode_return, "steps": r.steps,
                             "reached_goal": r.reached, "png_base64": render_path(rec.env_id, r)})
        return {
            "kind": "navigation",
            "env_id": rec.env_id,
            "maps": maps,
            "steps_to_goal": {"member": sm.steps, "unseen": sn.steps},
            "return": {"member": sm.episode_return, "unseen": sn.episode_return},
            "success_rate": {"member": sm.success, "unseen": sn.success},
            "n_maps": {"member": len(mem_runs), "unseen": len(non_runs)},
        }
