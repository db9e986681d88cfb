"""The MiniGrid environment layer of the navigation task: maps as seeded environments.

A *map* is a MiniGrid environment seed: ``MapEnv.reset(seed)`` builds the same floor-map and
start state every time. :class:`MapEnv` computes MiniGrid's 7×7×3 egocentric view with numpy
(cell for cell MiniGrid's own array), :class:`MapSampler` streams member maps
in a seeded order, :class:`MapVecEnv` steps several environments in lock-step for PPO
(:class:`core.training.ppo.VecEnv` protocol), optionally starting episodes by a :class:`StartRoomCurriculum`,
and :class:`Rollout` is one query episode's record. A seed in an environment's ``canaries`` is built
as an audit canary (:func:`canary_layout`: the goal moved and hidden; :mod:`core.analyses.record_views`).
Nothing here knows about agents, attacks or the pipeline (:mod:`core.tasks.navigation` does).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.data.planner import DOOR, WALL
from core.foundations.errors import ConfigError

#: actions that change the grid (pickup, drop, toggle): the cached grid encoding is refreshed
GRID_CHANGING_ACTIONS = frozenset({3, 4, 5})
#: MiniGrid's encoding of a wall: (object "wall", colour "grey", state 0)
WALL_CODE = (WALL, 5, 0)
#: MiniGrid's encoding of an empty cell (also what a canary map's hidden goal looks like)
EMPTY_CODE = (1, 0, 0)


def _make_minigrid(env_id: str, render_mode: str | None = None):
    """The unwrapped MiniGrid env of ``env_id`` (wrappers only add per-step overhead)."""
    import gymnasium as gym
    import minigrid  # noqa: F401  (registers the MiniGrid ids)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "out of date" notices of the -v0 ids the studies use
            env = gym.make(env_id, render_mode=render_mode)
    except gym.error.Error as exc:
        raise ConfigError(f"unknown environment {env_id!r} for the navigation task: {exc}") from None
    env = env.unwrapped
    if not hasattr(env, "grid") or not hasattr(env, "agent_view_size"):
        raise ConfigError(f"{env_id!r} is not a MiniGrid environment")
    return env


class MapEnv:
    """One MiniGrid environment whose observation is computed with numpy.

    MiniGrid builds the agent's view by slicing and rotating a grid of Python objects (most of a
    step). Here the full grid's encoding is cached (per map seed, and updated in the one cell in
    front of the agent after an action that can change the grid: pickup, drop, toggle); the view is
    one gather from it (padded with walls) at offsets precomputed per facing direction, and the
    visibility propagation is MiniGrid's ``Grid.process_vis`` on a 7×7 list. Only for environments
    whose grid changes through the agent's actions alone (all navigation maps).
    """

    #: initial grid encodings by (env id, seed, canary): maps repeat, and encoding a grid again at every reset costs
    #: more than reading it back
    _initial_codes: dict[tuple[str, int, bool], np.ndarray] = {}

    def __init__(self, env_id: str, render_mode: str | None = None):
        self.env_id = env_id
        self.env = _make_minigrid(env_id, render_mode)
        self.view = int(self.env.agent_view_size)
        self.max_steps = int(self.env.max_steps)
        self.grid_code = np.zeros((1, 1, 3), np.uint8)
        self._padded = self.grid_code
        self._seed: int | None = None
        self._changed: tuple[int, int] | None = None  # cell an action may have changed
        #: seeds built as audit canaries (:func:`canary_layout`); the owner sets it
        self.canaries: frozenset[int] = frozenset()
        self._canary = False  # the current map is a canary
        self._hidden: tuple[int, int] | None = None  # its goal cell, drawn as empty floor in the view
        self._view_dx, self._view_dy = _view_offsets(self.env, self.view)
        # instance attribute shadows the method: reset() and step() now call the fast version
        self.env.gen_obs = self._gen_obs

    def _load_grid(self, seed: int) -> None:
        """Encoding of the map freshly reset with ``seed`` (cached by seed), padded with walls."""
        key = (self.env_id, int(seed), self._canary)
        code = self._initial_codes.get(key)
        if code is None:
            if len(self._initial_codes) > 20000:
                self._initial_codes.clear()
            code = self._initial_codes[key] = self.env.grid.encode()
        self.grid_code = code.copy()
        v = self.view
        w, h, _ = code.shape
        padded = np.empty((w + 2 * v, h + 2 * v, 3), np.uint8)
        padded[...] = WALL_CODE  # MiniGrid's slice() fills cells outside the grid with walls
        padded[v : v + w, v : v + h] = code
        if self._hidden is not None:  # the agent sees floor where a canary's goal is; the planner sees the goal
            padded[self._hidden[0] + v, self._hidden[1] + v] = EMPTY_CODE
        self._padded = padded

    def _sync(self) -> None:
        """Bring the cached encoding up to date after a reset or a grid-changing action."""
        if self._seed is not None:
            self._load_grid(self._seed)
            self._seed = None
        if self._changed is not None:
            x, y = self._changed
            obj = self.env.grid.get(x, y)
            self.grid_code[x, y] = obj.encode() if obj is not None else EMPTY_CODE
            if (x, y) != self._hidden:
                self._padded[x + self.view, y + self.view] = self.grid_code[x, y]
            self._changed = None

    def observe(self) -> np.ndarray:
        """The (7, 7, 3) egocentric view, equal to MiniGrid's ``gen_obs()["image"]``."""
        self._sync()
        env, v = self.env, self.view
        d = int(env.agent_dir)
        x, y = int(env.agent_pos[0]) + v, int(env.agent_pos[1]) + v  # in padded coordinates
        view = self._padded[x + self._view_dx[d], y + self._view_dy[d]]
        obj, state = view[..., 0], view[..., 2]
        if env.see_through_walls:
            out = view.copy()
        else:
            opaque = ((obj == WALL) | ((obj == DOOR) & (state != 0))).tolist()
            out = view * _visibility(opaque, v)[..., None]
        ax, ay = v // 2, v - 1
        out[ax, ay] = env.carrying.encode() if env.carrying else EMPTY_CODE  # the agent's own cell
        return out

    def _gen_obs(self) -> dict[str, Any]:
        return {"image": self.observe(), "direction": self.env.agent_dir, "mission": self.env.mission}

    def reset(self, seed: int) -> np.ndarray:
        self._seed, self._canary, self._hidden = int(seed), False, None
        obs, _ = self.env.reset(seed=int(seed))
        if int(seed) not in self.canaries:
            return obs["image"]
        # MiniGrid built the ordinary map (and its view); rebuild both as the canary's
        self._hidden = canary_layout(self.env, int(seed))
        self._seed, self._canary = int(seed), True
        return self.observe()

    @property
    def n_rooms(self) -> int:
        """Rooms of the current map (MultiRoom layouts; 1 for layouts without rooms)."""
        return len(getattr(self.env, "rooms", None) or [None])

    def start_in_room(self, room: int, rng: np.random.Generator) -> np.ndarray:
        """Move the agent of the freshly reset map to a free cell of room ``room`` (0 = the map's
        own start room, rooms numbered along the route to the goal), facing a random direction;
        the doors stay as the map has them. Returns the new view. The start-room curriculum's
        move (:class:`StartRoomCurriculum`); query rollouts never use it."""
        rooms = getattr(self.env, "rooms", None)
        if not rooms or room <= 0:
            return self.observe()
        r = rooms[min(room, len(rooms) - 1)]
        (x, y), (w, h) = r.top, r.size
        free = [(i, j) for i in range(x + 1, x + w - 1) for j in range(y + 1, y + h - 1)
                if self.env.grid.get(i, j) is None]
        if not free:  # cannot happen in MultiRoom (rooms are at least 4×4), but never start in a wall
            return self.observe()
        i, j = free[int(rng.integers(len(free)))]
        self.env.agent_pos = (i, j)
        self.env.agent_dir = int(rng.integers(4))
        return self.observe()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool]:
        """(view, reward, terminated, truncated)."""
        if action in GRID_CHANGING_ACTIONS:
            # pickup, drop and toggle act on the cell in front of the agent only
            fx, fy = self.env.front_pos
            if 0 <= fx < self.grid_code.shape[0] and 0 <= fy < self.grid_code.shape[1]:
                self._changed = (int(fx), int(fy))
        obs, reward, terminated, truncated, _ = self.env.step(int(action))
        return obs["image"], float(reward), bool(terminated), bool(truncated)

    @property
    def agent_state(self) -> tuple[tuple[int, int], int]:
        """((x, y), direction) of the agent."""
        self._sync()
        return (int(self.env.agent_pos[0]), int(self.env.agent_pos[1])), int(self.env.agent_dir)


def canary_layout(env, seed: int) -> tuple[int, int]:
    """Turn the freshly reset map of ``seed`` into its audit canary; returns the new goal cell.

    The goal moves to a free cell drawn (seeded by the map) uniformly from the interiors of *all*
    rooms except its own cell and the agent's, and the agent's view shows it as empty floor
    (:class:`MapEnv` hides it; reaching it still ends the episode with MiniGrid's reward, and the
    planner, which reads the full grid, routes to it). An ordinary MultiRoom map always has a
    visible goal in its last room; a canary's goal is often in an earlier room and never seen, so
    nothing the agent observes tells where it is: an agent acts well on a canary map only by
    memorising it (the navigation counterpart of a mislabeled image). Needs a layout with rooms.
    """
    rooms = getattr(env, "rooms", None)
    if not rooms:
        raise ConfigError("navigation canaries move the goal between rooms: the layout has no rooms")
    old = tuple(int(c) for c in env.goal_pos)
    agent = tuple(int(c) for c in env.agent_pos)
    free = sorted({(i, j) for r in rooms for i in range(r.top[0] + 1, r.top[0] + r.size[0] - 1)
                   for j in range(r.top[1] + 1, r.top[1] + r.size[1] - 1)
                   if env.grid.get(i, j) is None and (i, j) != agent})
    rng = np.random.default_rng([int(seed), 0xCA7A])
    new = free[int(rng.integers(len(free)))]
    env.grid.set(*new, env.grid.get(*old))
    env.grid.set(*old, None)
    env.goal_pos = new
    return new


def _view_offsets(env, v: int) -> tuple[np.ndarray, np.ndarray]:
    """Per facing direction d, (4, v, v) offsets from the agent's cell of the cells MiniGrid puts
    at each position of the view: its slice (``get_view_exts``) rotated left d+1 times
    (``Grid.rotate_left`` is ``np.rot90`` by −90° on (x, y) arrays). Precomputed once so a view
    is one fancy-indexing gather."""
    ii, jj = np.meshgrid(np.arange(v), np.arange(v), indexing="ij")
    dxs, dys = [], []
    saved = env.agent_pos, env.agent_dir
    for d in range(4):
        env.agent_pos, env.agent_dir = (0, 0), d
        top_x, top_y, _, _ = env.get_view_exts(v)
        dxs.append(np.rot90(ii + top_x, k=-((d + 1) % 4)))
        dys.append(np.rot90(jj + top_y, k=-((d + 1) % 4)))
    env.agent_pos, env.agent_dir = saved
    return np.stack(dxs), np.stack(dys)


def _visibility(opaque: list[list[bool]], size: int) -> np.ndarray:
    """MiniGrid's ``Grid.process_vis`` on the rotated view (agent at the bottom centre): light
    spreads row by row away from the agent, sideways and one row up, and stops at opaque cells
    (walls, closed doors)."""
    mask = [[False] * size for _ in range(size)]
    mask[size // 2][size - 1] = True
    for j in reversed(range(size)):
        for i in range(size - 1):
            if not mask[i][j] or opaque[i][j]:
                continue
            mask[i + 1][j] = True
            if j > 0:
                mask[i + 1][j - 1] = True
                mask[i][j - 1] = True
        for i in reversed(range(1, size)):
            if not mask[i][j] or opaque[i][j]:
                continue
            mask[i - 1][j] = True
            if j > 0:
                mask[i - 1][j - 1] = True
                mask[i][j - 1] = True
    return np.array(mask, dtype=np.uint8)


class MapSampler:
    """Endless seeded stream of map seeds: every map once per cycle, each cycle shuffled."""

    def __init__(self, seeds: np.ndarray, order_seed: int):
        self.seeds = np.asarray(seeds, np.int64)
        if len(self.seeds) == 0:
            raise ConfigError("the navigation agent needs at least one training map")
        self.rng = np.random.default_rng(order_seed)
        self._queue: list[int] = []

    def next(self) -> int:
        if not self._queue:
            self._queue = self.rng.permutation(self.seeds).tolist()
        return int(self._queue.pop())


class StartRoomCurriculum:
    """A reverse curriculum over start rooms (Florensa et al. 2017, "Reverse curriculum
    generation", with rooms as the distance to the goal): a training episode on a map of R rooms
    starts in a room drawn uniformly from [f, R), the *frontier* f moving from the goal's room
    R − 1 to the true start room 0 over the first ``ramp`` share of training:
    f = round((R − 1)·(1 − min(1, progress/ramp))). Afterwards episodes start in any room
    (room 0 included), so no stage is forgotten. The maps are the agent's member maps all along;
    only where an episode starts changes. The owner sets ``progress`` (0 → 1) as training goes.
    """

    def __init__(self, ramp: float, seed: int):
        if not 0 < ramp <= 1:
            raise ConfigError(f"the curriculum's ramp must lie in (0, 1], got {ramp!r}")
        self.ramp = ramp
        self.progress = 0.0
        self.rng = np.random.default_rng([int(seed), 0xC0A1])

    def frontier(self, n_rooms: int) -> int:
        return max(0, int(round((n_rooms - 1) * (1 - min(1.0, self.progress / self.ramp)))))

    def start(self, env: "MapEnv") -> np.ndarray:
        """Draw the start room of ``env``'s freshly reset map and move the agent there."""
        n = env.n_rooms
        room = int(self.rng.integers(self.frontier(n), n))
        return env.start_in_room(room, self.rng)


class MapVecEnv:
    """``n_envs`` :class:`MapEnv` stepped in lock-step in this process (a step costs less than handing it
    to a worker); a finished episode restarts at once on the next map of the :class:`MapSampler` (the
    :class:`core.training.ppo.VecEnv` protocol)."""

    def __init__(self, env_id: str, n_envs: int, seeds: np.ndarray, order_seed: int,
                 curriculum: StartRoomCurriculum | None = None, canaries: frozenset[int] = frozenset()):
        self.n_envs = n_envs
        self.envs = [MapEnv(env_id) for _ in range(n_envs)]
        for env in self.envs:  # canary maps join the member maps in the sampler's order, built as canaries
            env.canaries = frozenset(int(c) for c in canaries)
        self.sampler = MapSampler(seeds, order_seed)
        self.curriculum = curriculum
        self._obs = np.zeros((n_envs, 7, 7, 3), np.uint8)

    def _restart(self, env: MapEnv) -> np.ndarray:
        obs = env.reset(self.sampler.next())
        return self.curriculum.start(env) if self.curriculum is not None else obs

    def reset(self) -> np.ndarray:
        for i, env in enumerate(self.envs):
            self._obs[i] = self._restart(env)
        return self._obs.copy()

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rewards = np.zeros(self.n_envs)
        done = np.zeros(self.n_envs, bool)
        for i, (env, a) in enumerate(zip(self.envs, actions.tolist())):
            obs, r, term, trunc = env.step(a)
            rewards[i] = r
            if term or trunc:
                done[i] = True
                obs = self._restart(env)
            self._obs[i] = obs
        return self._obs.copy(), rewards, done


@dataclass
class Rollout:
    """One seeded query episode of an agent on one map."""

    seed: int
    probs: np.ndarray  # (L, 7) the agent's action distributions
    reference: np.ndarray | None  # (L, 7) the label model's policy at the visited states
    actions: list[int] = field(default_factory=list)
    path: list[tuple[int, int]] = field(default_factory=list)  # agent cell before each step, then the last
    episode_return: float = 0.0
    reached: bool = False

    @property
    def steps(self) -> int:
        return int(self.probs.shape[0])


def query_stream(seed: int, length: int) -> np.ndarray:
    """The uniforms the query rollout on map ``seed`` samples its actions with."""
    return np.random.default_rng([int(seed), 0x5EED]).random(length)
