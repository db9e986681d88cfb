"""The tasks: one module per task (``image``, ``translation``, ``navigation``), the interface in
:mod:`core.tasks.base`. The registry itself is :mod:`core.task_registry` (its names are re-exported here)."""
from ..task_registry import REGISTRY, available_tasks, get_task, register_task, unregister_task

__all__ = ["REGISTRY", "available_tasks", "get_task", "register_task", "unregister_task"]
