"""Task registry: ``get_task(name)`` imports a task module only when it is first used."""
from __future__ import annotations

import importlib

from ..errors import ConfigError
from .base import Task, TaskData

#: task name -> "module:class"
REGISTRY: dict[str, str] = {
    "image": "core.tasks.image:ImageTask",
    "translation": "core.tasks.translation:TranslationTask",
    "navigation": "core.tasks.navigation:NavigationTask",
}

_instances: dict[str, Task] = {}


def available_tasks() -> list[str]:
    return list(REGISTRY)


def get_task(name: str) -> Task:
    """The (singleton) Task object of ``name``."""
    if name not in REGISTRY:
        raise ConfigError(f"unknown task {name!r}; available: {', '.join(REGISTRY)}")
    if name not in _instances:
        module, cls = REGISTRY[name].split(":")
        _instances[name] = getattr(importlib.import_module(module), cls)()
    return _instances[name]


__all__ = ["Task", "TaskData", "available_tasks", "get_task"]
