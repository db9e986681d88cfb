"""Navigation example maps as data (grid, the agent's path, start and goal), for crisp drawing.

The task's ``examples`` block carries small rendered PNGs; the page draws the maps itself from
this data instead (vector shapes, a legend, both architectures' paths). Computed in a worker
process (:mod:`core.jobs.worker`, job kind ``mapview``) from the cached victim: the same seeded query
episodes as the examples, so the paths are the ones the PNGs show. No Streamlit here.
"""
from __future__ import annotations

from typing import Any

from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import load_models
from core.foundations.config import ExperimentConfig
from core.tasks.navigation import (  # a map as data: the task's (its records' view, Task.describe_record)
    MapViews,
    map_view,
)

#: bump when the layout of a map view changes (older entries are then recomputed)
VERSION = 1


def cache_key(cfg: ExperimentConfig) -> str:
    return ArtifactCache.key("ui-mapview", cfg.config_hash, VERSION)


def cached_map_views(cfg: ExperimentConfig, cache: ArtifactCache | None = None) -> MapViews | None:
    """The stored map views of ``cfg``, read typed, or None."""
    cache = cache or ArtifactCache()
    value = cache.get_json(cache_key(cfg))
    return MapViews.from_dict(value) if isinstance(value, dict) and isinstance(value.get("maps"), list) else None


def compute_map_views(cfg: ExperimentConfig, models: Any = None, cache: ArtifactCache | None = None) -> MapViews:
    """Map views of the first member and the first non-member map of ``cfg``'s evaluation set,
    with the victim's seeded query path on each; stored in the cache and returned. ``models``: the
    run's :class:`~core.experiment.roles.TrainedModels` when in memory, else the cached ones
    (:func:`~core.experiment.pipeline.load_models`: a run not cached is a ``NotCachedError``, never trained)."""
    cache = cache or ArtifactCache()
    models = models if models is not None else load_models(cfg, cache=cache)
    task, splits = models.task, models.splits
    model = models.model("victim")
    picks = [("member", splits.eval_members[:1]), ("non-member", splits.victim_nonmembers[:1])]
    maps = []
    for role, index in picks:
        if len(index):
            run = task.rollouts(cfg, model, models.data, index)[0]
            maps.append(map_view(models.data.records.env_id, run, role))
    views = MapViews(cfg.arch, cfg.config_hash, models.data.records.env_id, tuple(maps))
    cache.put_json(cache_key(cfg), views.to_dict())
    return views
