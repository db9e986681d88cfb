"""The task registry: task name → Task class, imported only when first used (``get_task``).

It sits at the bottom of the library (it imports only the errors and the plugins' loader), so that the config can check a
task's name, and the CLI every argument, before any task module — and torch — is imported. The
Task interface lives in :mod:`core.tasks.base`; :mod:`core.tasks` re-exports these names.

Plugins (:mod:`core.foundations.plugins`: the files ``$MIA_PLUGINS`` lists, the ``mia_explorer.tasks``
entry points) are loaded here, lazily: on the first listing of the tasks and on a lookup of an
unknown name, so a process started later with the same environment (a pool worker, the app's job
worker) finds the same tasks."""
from __future__ import annotations

import importlib
import os
import re
import sys
from pathlib import Path
from typing import Any

from core.foundations import plugins
from core.foundations.errors import ConfigError
from core.foundations.registry import Registry

#: a :class:`core.tasks.base.Task` (not imported here: the interface imports torch, and this module
#: stays under everything that checks a task's name)
Task = Any

#: task name -> "module:class" (the class is imported on the first :func:`get_task`)
REGISTRY: Registry[str] = Registry("task")
for _name, _where in (("image", "core.tasks.image:ImageTask"),
                      ("translation", "core.tasks.translation:TranslationTask"),
                      ("navigation", "core.tasks.navigation:NavigationTask"),
                      ("tabular", "core.tasks.tabular:TabularTask")):
    REGISTRY.register(_name, _where)
REGISTRY.seal()

_BUILTIN = REGISTRY.names()
_instances: dict[str, Task] = {}
#: plugin files executed in this process (absolute paths) -> the tasks each registered
_plugin_files: dict[str, list[str]] = {}
#: the tasks the installed entry points registered
_entry_point_tasks: list[str] = []
#: whether the installed entry points were loaded (once per process)
_entry_points_loaded = False
#: whether plugins are being loaded now (a plugin importing the registry must not load itself again)
_loading = False
#: a task name must be a word (it appears in cache keys, file names and links)
TASK_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


def builtin_tasks() -> tuple[str, ...]:
    """The tasks that ship with the explorer (a plugin's are the others of :func:`available_tasks`)."""
    return _BUILTIN


def available_tasks() -> list[str]:
    """The built-in and the registered tasks' names, the configured plugins' included."""
    load_plugins()
    return list(REGISTRY)


def _origin(name: str) -> str:
    """Where task ``name`` came from, for a message: a plugin file, or its ``module:class``."""
    if name in _BUILTIN:
        return f"a built-in task, {REGISTRY[name]}"
    for path, names in _plugin_files.items():
        if name in names:
            return f"by plugin {path}"
    return REGISTRY[name]


def register_task(cls: type) -> type:
    """Register a Task class (a plugin's, a test's toy task) under its ``name``; usable as a
    decorator. A name already taken (a built-in task's, another plugin's) is refused in one line;
    registering the same class again is a no-op."""
    name = getattr(cls, "name", None)
    if not isinstance(cls, type) or not isinstance(name, str) or not TASK_NAME.fullmatch(name):
        raise ConfigError(f"register_task expects a Task class whose name is lowercase letters, digits and _ "
                          f"(at most 40, a letter first), got {cls!r} with name {name!r}")
    archs = getattr(cls, "archs", ("ffnn", "rnn"))
    if not isinstance(archs, tuple) or not archs or not set(archs) <= {"ffnn", "rnn"} or len(set(archs)) < len(archs):
        raise ConfigError(f"task {name!r}: archs must be ('ffnn', 'rnn'), ('ffnn',) or ('rnn',), got {archs!r}")
    where = f"{cls.__module__}:{cls.__qualname__}"
    taken = REGISTRY.find(name)
    if taken is not None and taken != where:
        raise ConfigError(f"task name {name!r} is already taken ({_origin(name)}): give the task another name")
    if name in _instances and taken == where:
        return cls
    REGISTRY.register(name, where)
    try:
        _instances[name] = cls()
    except Exception:
        if taken is None:  # (a built-in name keeps its entry: its class may still load on first use)
            REGISTRY.unregister(name)
        raise
    return cls


def load_plugins() -> None:
    """Load the plugin files ``$MIA_PLUGINS`` lists that this process has not loaded yet, then (once)
    the installed entry points. A file that cannot be loaded or registers no task, or a name
    clash: one-line :class:`ConfigError` (raised again on the next call: nothing is half-loaded
    silently)."""
    global _entry_points_loaded, _loading
    if _loading:  # a plugin that lists the tasks while it is being imported sees those loaded so far
        return
    _loading = True
    try:
        for path in plugins.configured_paths():
            load_plugin_file(path)
        if not _entry_points_loaded:
            for ep in plugins.installed_entry_points():
                _load_entry_point(ep)
            _entry_points_loaded = True
    finally:
        _loading = False


def load_plugin_file(path: str) -> list[str]:
    """Execute the plugin file ``path`` (once per process) and return the names of the tasks it
    registered; a file that registers none is refused."""
    key = os.path.abspath(os.path.expanduser(path))
    if key in _plugin_files:  # loaded: not checked again (a file removed since is no new error)
        return _plugin_files[key]
    checked = plugins.check_plugin_file(path)
    before = set(REGISTRY)
    plugins.execute_plugin_file(checked)
    added = [n for n in REGISTRY if n not in before]
    if not added:
        raise ConfigError(f"plugin {path} registers no task: define a Task subclass and call "
                          "register_task(YourTask) in it (docs/your_data.md, 'Your architecture')")
    _plugin_files[key] = added
    return added


def _load_entry_point(ep: Any) -> None:
    """Load one installed entry point: a Task class (registered here) or a module that registers its
    tasks when imported."""
    before = set(REGISTRY)
    obj = plugins.load_entry_point(ep)
    if isinstance(obj, type):
        try:
            register_task(obj)
        except ConfigError as exc:
            raise ConfigError(f"plugin entry point {ep.name} = {ep.value}: {exc}") from None
    else:
        module = getattr(obj, "__name__", "")
        if set(REGISTRY) == before and not any(w.startswith(f"{module}:") or w.startswith(f"{module}.")
                                               for w in REGISTRY.values()):
            raise ConfigError(f"plugin entry point {ep.name} = {ep.value} registers no task: point it at a Task "
                              "class, or call register_task in the module")
    _entry_point_tasks.extend(n for n in REGISTRY if n not in before)


def unload_plugins() -> None:
    """Forget every task a plugin registered and every plugin loaded (tests; a process that changed
    ``$MIA_PLUGINS``): the next listing loads the configured ones again."""
    global _entry_points_loaded
    for name in [n for names in _plugin_files.values() for n in names] + _entry_point_tasks:
        REGISTRY.unregister(name)
        _instances.pop(name, None)
    _entry_point_tasks.clear()
    for path in _plugin_files:
        sys.modules.pop(plugins.module_name_of(Path(path)), None)
    _plugin_files.clear()
    _entry_points_loaded = False


def unregister_task(name: str) -> None:
    """Remove a task registered with :func:`register_task` (a built-in one: ``ValueError``)."""
    REGISTRY.unregister(name)
    _instances.pop(name, None)


def get_task(name: str) -> Task:
    """The (singleton) Task object of ``name``."""
    if name not in REGISTRY:
        load_plugins()  # a task of a configured plugin this process has not loaded yet
    where = REGISTRY.get(name)  # an unknown name: ConfigError "unknown task 'x'; known: …"
    if name not in _instances:
        module, cls = where.split(":")
        _instances[name] = getattr(importlib.import_module(module), cls)()
    return _instances[name]


__all__ = ["REGISTRY", "available_tasks", "get_task", "load_plugin_file", "load_plugins", "register_task",
           "unload_plugins", "unregister_task"]
