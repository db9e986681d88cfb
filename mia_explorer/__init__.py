"""MIA Explorer as an installed tool: the name a user imports, and the ``mia-explorer`` command.

The library's folder is ``core/`` (the design fixes it), and ``core`` is a common name: a script run next to its
own ``core/`` folder, or a working directory holding one, would import that folder instead, since Python puts the
script's folder (or, for ``python -m`` and ``python -c``, the working directory) first on ``sys.path``. Importing
``mia_explorer`` first loads ``core`` from the folder beside this one, whatever ``sys.path`` holds, and refuses
(one ``ImportError`` naming both) when another ``core`` was imported already::

    import mia_explorer                      # binds core to the installed library
    from core.experiment.pipeline import run_experiment

``mia_explorer.core`` is the same module. The console command and ``mia-explorer app`` go through here too.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

#: the folder holding ``core/`` and this package (site-packages when installed, the checkout otherwise)
HOME = Path(__file__).resolve().parent.parent
LIBRARY = HOME / "core"


def _bind_core() -> ModuleType:
    """``core`` loaded from :data:`LIBRARY` and registered under its name (its submodules then load from there)."""
    loaded = sys.modules.get("core")
    if loaded is not None:
        where = Path(getattr(loaded, "__file__", "") or "").resolve().parent
        if where != LIBRARY:
            raise ImportError(f"another module named core was imported first (from {where}); MIA Explorer's library "
                              f"is {LIBRARY}: import mia_explorer before it, or rename that folder")
        return loaded
    spec = importlib.util.spec_from_file_location("core", LIBRARY / "__init__.py",
                                                  submodule_search_locations=[str(LIBRARY)])
    if spec is None or spec.loader is None:  # pragma: no cover - the file is part of this distribution
        raise ImportError(f"MIA Explorer's library is missing at {LIBRARY}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["core"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["core"]
        raise
    return module


core = _bind_core()

from core.foundations.version import VERSION as __version__  # noqa: E402  (after core is bound, on purpose)

__all__ = ["core", "__version__"]
