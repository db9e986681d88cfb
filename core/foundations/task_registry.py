"""The task registry: task name → Task class, imported only when first used (``get_task``).

It sits at the bottom of the library (it imports only the errors), so that the config can check a
task's name, and the CLI every argument, before any task module — and torch — is imported. The
Task interface lives in :mod:`core.tasks.base`; :mod:`core.tasks` re-exports these names."""
from __future__ import annotations

import importlib
from typing import Any

from core.foundations.errors import ConfigError

#: a :class:`core.tasks.base.Task` (not imported here: the interface imports torch, and this module
#: stays under everything that checks a task's name)
Task = Any

#: task name -> "module:class"
REGISTRY: dict[str, str] = {
    "image": "core.tasks.image:ImageTask",
    "translation": "core.tasks.translation:TranslationTask",
    "navigation": "core.tasks.navigation:NavigationTask",
    "tabular": "core.tasks.tabular:TabularTask",
}

_BUILTIN = tuple(REGISTRY)
_instances: dict[str, Task] = {}


def available_tasks() -> list[str]:
    return list(REGISTRY)


def register_task(cls: type) -> type:
    """Register a Task class defined elsewhere (a test's toy task) under its ``name``; usable as a
    decorator. A built-in name is refused."""
    where = f"{cls.__module__}:{cls.__qualname__}"
    if REGISTRY.get(cls.name, where) != where:
        raise ValueError(f"task {cls.name!r} is already registered ({REGISTRY[cls.name]})")
    REGISTRY[cls.name] = where
    _instances[cls.name] = cls()
    return cls


def unregister_task(name: str) -> None:
    """Remove a task registered with :func:`register_task` (built-in ones stay)."""
    if name in _BUILTIN:
        raise ValueError(f"{name!r} is a built-in task")
    REGISTRY.pop(name, None)
    _instances.pop(name, None)


def get_task(name: str) -> Task:
    """The (singleton) Task object of ``name``."""
    if name not in REGISTRY:
        raise ConfigError(f"unknown task {name!r}; available: {', '.join(REGISTRY)}")
    if name not in _instances:
        module, cls = REGISTRY[name].split(":")
        _instances[name] = getattr(importlib.import_module(module), cls)()
    return _instances[name]


__all__ = ["REGISTRY", "available_tasks", "get_task", "register_task", "unregister_task"]
