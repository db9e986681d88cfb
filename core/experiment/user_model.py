"""A user's trained model as the victim: its member list and its weights, checked.

* :func:`member_index` — the listed records as indices of the task's data source. The list's bytes are cached
  under their sha256, so a cached run reopens after the file moved or changed.
* :func:`user_weights` — the safetensors file's tensors, which must be exactly this architecture's state dict
  and finite (:func:`core.models.state_dict.fitted_state_dict`).

Both refuse with one :class:`~core.foundations.errors.ConfigError` line before any model trains.
"""
from __future__ import annotations

import numpy as np
import torch

from core.experiment.cache import ArtifactCache
from core.foundations.config import ExperimentConfig
from core.foundations.user_files import (
    MAX_MEMBERS_BYTES,
    MAX_WEIGHTS_BYTES,
    parse_member_ids,
    read_bound_file,
    sha256_hex,
)
from core.models.state_dict import fitted_state_dict
from core.tasks.base import Task, TaskData


def member_index(task: Task, cfg: ExperimentConfig, data: TaskData, cache: ArtifactCache) -> np.ndarray:
    """The indices of the records the user's model trained on, in the list's order.

    The list's bytes come from the cache (content-addressed by the config's ``members_sha256``), else
    from the file, checked against that sha256 and cached once they map to records.

    Raises:
        ConfigError: the file changed, or the list is not one id a line, names an id twice or a
            record the task does not have.
    """
    key = cache.key("user_file", cfg.members_sha256)
    payload = cache.get_bytes(key)
    if payload is not None and sha256_hex(payload) == cfg.members_sha256:
        from_file = False
    else:
        payload, from_file = read_bound_file(cfg.members, "members", MAX_MEMBERS_BYTES, cfg.members_sha256), True
    index = task.record_indices(cfg, data, parse_member_ids(payload))
    if from_file and not cache.read_only:
        cache.put_bytes(key, payload)
    return index


def user_weights(task: Task, cfg: ExperimentConfig, data: TaskData) -> dict[str, torch.Tensor]:
    """The user's weights, as the state dict of the model of ``cfg`` (floating tensors cast to the
    model's dtype: a float16 or float64 export loads as the float32 model).

    Raises:
        ConfigError: the file changed since the config was made, is not safetensors, or its tensors
            are not this architecture's (a name missing or extra, a shape or a kind differing), or
            hold NaN or infinite values (after the cast to the model's dtype).
    """
    payload = read_bound_file(cfg.target_weights, "target_weights", MAX_WEIGHTS_BYTES, cfg.target_weights_sha256)
    torch.manual_seed(0)  # construction only: every value is replaced by the user's
    expected = task.build_model(cfg, data).state_dict()
    return fitted_state_dict(payload, expected, what="target_weights", source=cfg.target_weights,
                             model=f"the {cfg.task}/{cfg.arch} model of this config",
                             export_hint="export with safetensors.torch.save_file(model.state_dict(), path)",
                             names_hint="arch and the size options must be those the model was built with")
