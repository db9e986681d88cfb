"""Task registry: ``get_task(name)`` imports a task module only when it is first used.

Importing this package imports no torch (the Task interface lives in :mod:`core.tasks.base`), so
the CLI can check a task's name, and every other argument, before the heavy imports."""
from __future__ import annotations

import importlib

from ..errors import ConfigError

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


__all__ = ["REGISTRY", "available_tasks", "get_task"]
