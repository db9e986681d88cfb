"""Task plugins: Python files (``--plugin FILE.py``, ``$MIA_PLUGINS``) and installed packages (the
``mia_explorer.tasks`` entry-point group) that define a task and register it.

This module holds the mechanics only — where plugins are configured, which file may be executed,
running it as a module, finding the entry points — and knows nothing of the registry: the
registry (:mod:`core.foundations.task_registry`) does the bookkeeping (which tasks a plugin
added, name clashes) and calls these lazily, on the first listing of the tasks or lookup of an
unknown name, so that worker processes started later see the same tasks as their parent.

Code is loaded only from the server's own configuration (its environment, its command line, its
installed packages), never from a path that came through the browser. Every failure is a one-line
:class:`ConfigError` naming the file or the entry point, without a traceback.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import stat
import sys
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType

from core.foundations.errors import ConfigError

#: the environment variable listing plugin files, separated by ``os.pathsep`` (":" on Linux)
PLUGIN_ENV = "MIA_PLUGINS"
#: the entry-point group an installed package declares its tasks under
ENTRY_POINT_GROUP = "mia_explorer.tasks"
#: the prefix of the module names plugin files are imported as (``sys.modules``)
MODULE_PREFIX = "mia_plugin_"


def one_line(exc: BaseException) -> str:
    """An exception as ``Type: message`` on one line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def configured_paths() -> list[str]:
    """The plugin files ``$MIA_PLUGINS`` lists, in order, empty entries skipped."""
    value = os.environ.get(PLUGIN_ENV, "")
    return [p for p in value.split(os.pathsep) if p.strip()]


def check_plugin_file(path: str) -> Path:
    """``path`` as an absolute path if it names a regular ``.py`` file that is not a symbolic link;
    otherwise a one-line :class:`ConfigError`. A link is refused because what it points at can
    change after the server was configured (the file executed would not be the one named)."""
    p = Path(path).expanduser()
    shown = str(path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        raise ConfigError(f"plugin {shown} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"plugin {shown} cannot be read: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise ConfigError(f"plugin {shown} is a symbolic link: name the file itself")
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"plugin {shown} is not a regular file")
    if p.suffix != ".py":
        raise ConfigError(f"plugin {shown} is not a Python file (*.py)")
    return Path(os.path.abspath(p))


def module_name_of(path: Path) -> str:
    """The module name a plugin file is imported as: stable for one file (so a second process, or a
    second load, registers the same ``module:class``), distinct for two files of one name."""
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:10]
    stem = re.sub(r"\W", "_", path.stem)
    return f"{MODULE_PREFIX}{stem}_{digest}"


def execute_plugin_file(path: Path) -> ModuleType:
    """Import the (checked) plugin file ``path`` as a module and return it. An exception raised by
    its code becomes one line naming the file and the exception; a :class:`ConfigError` it raises
    (a refused registration: a name clash) keeps its message behind the file's name."""
    name = module_name_of(path)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"plugin {path} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it: dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except ConfigError as exc:
        del sys.modules[name]
        raise ConfigError(f"plugin {path}: {' '.join(str(exc).split())}") from None
    except (Exception, SystemExit) as exc:  # the user's code: any exception, reported in one line
        del sys.modules[name]
        raise ConfigError(f"plugin {path} raised {one_line(exc)} while being imported") from None
    return module


def installed_entry_points() -> list[EntryPoint]:
    """The entry points installed packages declare in :data:`ENTRY_POINT_GROUP`."""
    return list(entry_points(group=ENTRY_POINT_GROUP))


def load_entry_point(ep: EntryPoint) -> object:
    """The object ``ep`` names (a module that registers its tasks, or a Task class); an exception
    becomes one line naming the entry point."""
    try:
        return ep.load()
    except ConfigError as exc:
        raise ConfigError(f"plugin entry point {ep.name} = {ep.value}: {' '.join(str(exc).split())}") from None
    except (Exception, SystemExit) as exc:
        raise ConfigError(f"plugin entry point {ep.name} = {ep.value} ({ENTRY_POINT_GROUP}) raised {one_line(exc)} "
                          "while being imported") from None


__all__ = ["ENTRY_POINT_GROUP", "MODULE_PREFIX", "PLUGIN_ENV", "check_plugin_file", "configured_paths",
           "execute_plugin_file", "installed_entry_points", "load_entry_point", "module_name_of"]
