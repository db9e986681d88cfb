"""The label model of the navigation attack: an exact shortest-path planner on a MiniGrid map.

Paper 001 §3.2 (and paper 000 §3.2) attack a reinforcement-learning agent by comparing the
victim's policy at every visited state with the policy of a *label model*, "a separate model
[...] to find the optimal policy" on the queried map. The studies train a second PPO agent for
that; on MiniGrid navigation maps the reward-maximising policy is known in closed form, so the
default label model here is a planner:

* MiniGrid's reward for reaching the goal at step t is r = 1 − 0.9·t/T (paper 000, eq. 2), so
  maximising the return is exactly minimising the number of actions to the goal.
* The state is (x, y, d) with d the facing direction (0 = east, 1 = south, 2 = west, 3 = north,
  MiniGrid's ``DIR_TO_VEC``). Actions: ``left`` d ← d−1, ``right`` d ← d+1, ``forward`` moves to
  the front cell if it can be entered (empty, floor, open door, goal), ``toggle`` opens a closed,
  unlocked door in front (MultiRoom's doors are closed but unlocked).
* Opening a door and walking through costs 2 actions (toggle, forward); a shortest path never
  opens a door it does not walk through, so the distance to the goal is the fixed point of the
  Bellman equation

      D(x, y, d) = min( 1 + D(x, y, d−1),  1 + D(x, y, d+1),  c(x, y, d) + D(front, d) ),

  with D = 0 on goal cells and c = 1 into an enterable cell, 2 into a closed door, ∞ otherwise.
  It is computed by vectorised value iteration over the whole grid (at most a few hundred sweeps).
* The label policy at a state is uniform over all actions that attain the minimum
  (``optimal_policy``); it is a distribution over MiniGrid's 7 actions.

Maps are given as MiniGrid's full-grid encoding (W, H, 3): (object index, colour, state) per cell.
"""
from __future__ import annotations

import numpy as np

#: MiniGrid's object indices (minigrid.core.constants.OBJECT_TO_IDX) and door states.
UNSEEN, EMPTY, WALL, FLOOR, DOOR, KEY, BALL, BOX, GOAL, LAVA, AGENT = range(11)
DOOR_OPEN, DOOR_CLOSED, DOOR_LOCKED = 0, 1, 2
#: MiniGrid's action indices.
LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE, DONE = range(7)
N_ACTIONS = 7
#: (dx, dy) of the four facing directions (minigrid.core.constants.DIR_TO_VEC).
DIR_TO_VEC = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]])


def cell_kinds(grid: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Masks (W, H) of cells the agent can enter now, closed doors it can open, and goals.

    Keys, balls and boxes block the way (they cannot be overlapped); lava ends the episode with
    no reward, so it is never part of a reward-maximising path and is treated as blocked; a
    locked door needs a key (not in navigation maps) and is treated as a wall.
    """
    obj, state = grid[..., 0], grid[..., 2]
    goal = obj == GOAL
    enterable = (obj == EMPTY) | (obj == FLOOR) | goal | ((obj == DOOR) & (state == DOOR_OPEN))
    closed = (obj == DOOR) & (state == DOOR_CLOSED)
    return enterable, closed, goal


def distance_map(grid: np.ndarray) -> np.ndarray:
    """D (W, H, 4): the fewest actions from (x, y) facing d to the goal (∞ if unreachable).

    Value iteration of the Bellman equation in the module docstring; exact because all costs
    are positive integers and the iteration runs to its fixed point.
    """
    enterable, closed, goal = cell_kinds(grid)
    w, h = enterable.shape
    # states the agent can be in before the episode ends; a closed door is stood on only after
    # the toggle that opens it, which the cost-2 move into it accounts for
    standable = (enterable | closed) & ~goal
    # cost of a forward move from (x, y) facing d: 1 into an enterable cell, 2 through a closed door
    step_cost = np.full((w, h, 4), np.inf)
    for d, (dx, dy) in enumerate(DIR_TO_VEC):
        src = (slice(max(0, -dx), w - max(0, dx)), slice(max(0, -dy), h - max(0, dy)))
        dst = (slice(max(0, dx), w - max(0, -dx)), slice(max(0, dy), h - max(0, -dy)))
        step_cost[src + (d,)] = np.where(enterable[dst], 1.0, np.where(closed[dst], 2.0, np.inf))
    step_cost[~standable] = np.inf
    dist = np.full((w, h, 4), np.inf)
    dist[goal] = 0.0
    while True:
        # value of the front cell: D(front, d); goal cells are 0 (the episode ends on entry)
        front = np.full((w, h, 4), np.inf)
        for d, (dx, dy) in enumerate(DIR_TO_VEC):
            src = (slice(max(0, -dx), w - max(0, dx)), slice(max(0, -dy), h - max(0, dy)))
            dst = (slice(max(0, dx), w - max(0, -dx)), slice(max(0, dy), h - max(0, -dy)))
            front[src + (d,)] = dist[dst + (d,)]
        turn = 1.0 + np.minimum(np.roll(dist, 1, axis=2), np.roll(dist, -1, axis=2))
        new = np.minimum(turn, step_cost + front)
        new[~standable] = np.inf
        new[goal] = 0.0
        if np.array_equal(new, dist):
            return dist
        dist = new


def optimal_actions(grid: np.ndarray, dist: np.ndarray, pos: tuple[int, int], direction: int) -> list[int]:
    """All actions that start a shortest path from ``pos`` facing ``direction`` (may be empty)."""
    x, y = int(pos[0]), int(pos[1])
    d = int(direction)
    here = dist[x, y, d]
    if not np.isfinite(here):
        return []
    enterable, closed, goal = cell_kinds(grid)
    out = []
    if dist[x, y, (d - 1) % 4] + 1 == here:
        out.append(LEFT)
    if dist[x, y, (d + 1) % 4] + 1 == here:
        out.append(RIGHT)
    fx, fy = x + DIR_TO_VEC[d][0], y + DIR_TO_VEC[d][1]
    if 0 <= fx < grid.shape[0] and 0 <= fy < grid.shape[1]:
        if enterable[fx, fy] and (0.0 if goal[fx, fy] else dist[fx, fy, d]) + 1 == here:
            out.append(FORWARD)
        if closed[fx, fy] and dist[fx, fy, d] + 2 == here:
            out.append(TOGGLE)
    return out


def optimal_policy(grid: np.ndarray, dist: np.ndarray, pos: tuple[int, int], direction: int) -> np.ndarray:
    """The label model's action distribution (7,): uniform over the optimal actions.

    Where no action leads to the goal (it is unreachable) the distribution is uniform over all
    seven actions: the label model has no preference.
    """
    best = optimal_actions(grid, dist, pos, direction)
    p = np.zeros(N_ACTIONS, np.float32)
    if best:
        p[best] = 1.0 / len(best)
    else:
        p[:] = 1.0 / N_ACTIONS
    return p


class PlannerCache:
    """Distance maps memoised by grid content: a map's doors change state only a few times per
    episode, so a whole rollout needs one or two value iterations."""

    def __init__(self, max_entries: int = 4096):
        self._cache: dict[bytes, np.ndarray] = {}
        self.max_entries = max_entries

    def distances(self, grid: np.ndarray) -> np.ndarray:
        key = grid.tobytes() + bytes(grid.shape[:2])
        dist = self._cache.get(key)
        if dist is None:
            if len(self._cache) >= self.max_entries:
                self._cache.clear()
            dist = self._cache[key] = distance_map(grid)
        return dist

    def policy(self, grid: np.ndarray, pos: tuple[int, int], direction: int) -> np.ndarray:
        return optimal_policy(grid, self.distances(grid), pos, direction)
