"""The tasks: one module per task (``image``, ``translation``, ``navigation``), the interface in
:mod:`core.tasks.base`. The registry itself is :mod:`core.foundations.task_registry` (its names are re-exported here).

Imports ``core.training``, ``core.attacks`` and the floors below them."""
from core.foundations.task_registry import REGISTRY, available_tasks, get_task, register_task, unregister_task

__all__ = ["REGISTRY", "available_tasks", "get_task", "register_task", "unregister_task"]
