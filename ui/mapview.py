"""Navigation example maps as data (grid, the agent's path, start and goal), for crisp drawing.

The task's ``examples`` block carries small rendered PNGs; the page draws the maps itself from
this data instead (vector shapes, a legend, both architectures' paths). Computed in a worker
process (:mod:`ui.worker`, job kind ``mapview``) from the cached victim: the same seeded query
episodes as the examples, so the paths are the ones the PNGs show. No Streamlit here.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from core.cache import ArtifactCache
from core.config import ExperimentConfig
from core.envs.minigrid import MapEnv
from core.pipeline import trained_models
from core.planner import EMPTY, GOAL  # MiniGrid's object indices: one source (core/planner.py)

#: bump when the layout of a map view changes (older entries are then recomputed)
VERSION = 1


def cache_key(cfg: ExperimentConfig) -> str:
    return ArtifactCache.key("ui-mapview", cfg.config_hash, VERSION)


def cached_map_views(cfg: ExperimentConfig, cache: ArtifactCache | None = None) -> dict[str, Any] | None:
    """The stored map views of ``cfg``, or None."""
    cache = cache or ArtifactCache()
    value = cache.get_json(cache_key(cfg))
    return value if isinstance(value, dict) and isinstance(value.get("maps"), list) else None


def _map_view(env_id: str, run, role: str) -> dict[str, Any]:
    env = MapEnv(env_id)
    env.reset(run.seed)
    code = np.asarray(env.env.grid.encode())  # (W, H, 3): object, colour, state
    start = [int(v) for v in env.env.agent_pos]
    start_dir = int(env.env.agent_dir)
    objects = code[..., 0]
    used = np.argwhere(objects != EMPTY)
    (x0, y0), (x1, y1) = (int(v) for v in used.min(0)), (int(v) for v in used.max(0))
    goal = [[int(x) - x0, int(y) - y0] for x, y in np.argwhere(objects == GOAL)]
    return {
        "role": role,
        "seed": int(run.seed),
        "cells": objects[x0 : x1 + 1, y0 : y1 + 1].T.astype(int).tolist(),  # rows = y, columns = x
        "door_open": (code[x0 : x1 + 1, y0 : y1 + 1, 2] == 0).T.astype(int).tolist(),
        "start": [start[0] - x0, start[1] - y0],
        "start_dir": start_dir,
        "goal": goal[0] if goal else None,
        "path": [[int(x) - x0, int(y) - y0] for x, y in run.path],
        "steps": int(run.steps),
        "return": float(run.episode_return),
        "reached_goal": bool(run.reached),
    }


def compute_map_views(cfg: ExperimentConfig, progress=None, models=None, cache: ArtifactCache | None = None) -> dict[str, Any]:
    """Map views of the first member and the first non-member map of ``cfg``'s evaluation set,
    with the victim's seeded query path on each; stored in the cache and returned."""
    cache = cache or ArtifactCache()
    models = models if models is not None else trained_models(cfg, progress=progress, cache=cache)
    task, splits = models.task, models.splits
    model = models.model("victim")
    picks = [("member", splits.eval_members[:1]), ("non-member", splits.victim_nonmembers[:1])]
    maps = []
    for role, index in picks:
        if len(index):
            run = task.rollouts(cfg, model, models.data, index)[0]
            maps.append(_map_view(models.data.records.env_id, run, role))
    views = {"arch": cfg.arch, "config_hash": cfg.config_hash, "env_id": models.data.records.env_id, "maps": maps}
    cache.put_json(cache_key(cfg), views)
    return views


def record_map_views(models, index: list[int] | np.ndarray, role: str = "member") -> list[dict[str, Any]]:
    """Map views of arbitrary records (dataset indices) of a trained run: the map of each record with
    the victim's seeded query path on it — the same episodes the attack was given. Used to show
    the records an analysis singles out (e.g. the most exposed members); cheap (one rollout per map)."""
    index = np.asarray(index, dtype=np.int64)
    if not len(index):
        return []
    runs = models.task.rollouts(models.cfg, models.model("victim"), models.data, index)
    return [_map_view(models.data.records.env_id, run, role) for run in runs]
