"""Where files live: the cache folder, and folders typed in the browser, confined to a data root.

Once the app is served on a network, anyone who reaches the page could make the server read (or, with
the download button, write) wherever the server's user may. So every folder typed in the app goes
through :func:`resolve_data_dir`, which only accepts folders under the data root:

* ``$MIA_DATA_ROOT`` when set (``MIA_DATA_ROOT=/`` lifts the restriction on purpose);
* otherwise the home directory of the user running the app (``~``), less its hidden files and folders: a
  path with a component that starts with ``.`` below the home (``~/.ssh/id_ed25519``, ``~/.aws/credentials``,
  ``~/.cache/...``) is refused (:func:`refuse_hidden`), since a reader's preview and messages show a file's
  column names and lines. With ``$MIA_DATA_ROOT`` set the operator chose the root, and nothing under it is
  refused for its name.

The check happens on the fully resolved path (``~`` expanded, relative paths taken from the
root, ``..`` and symbolic links resolved), so neither ``root/../etc`` nor a symlink inside the
root that points outside it escapes. The CLI does not use this for CIFAR-10 and Multi30K: a user on
the command line may read any folder they can. The readers of a user's own layouts (class folders,
text pairs: :mod:`core.data.image_folder`, :mod:`core.data.text_pairs`) confine every caller, the CLI
included, since the same config may arrive from the app.
"""
from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from core.foundations.errors import ConfigError

#: environment variable naming the data root
DATA_ROOT_ENV = "MIA_DATA_ROOT"
#: the folder holding ``core/``: a checkout's root, or site-packages where the package is installed
HOME = Path(__file__).resolve().parents[2]  # this file: <home>/core/foundations/
#: a checkout (its ``pyproject.toml`` beside ``core/``; an editable install is one too) keeps its cache in
#: ``<checkout>/cache``, as before it could be installed; an installed package must not write into site-packages
IS_CHECKOUT = (HOME / "pyproject.toml").is_file()
#: the cache folder unless ``$MIA_CACHE_DIR`` names another: the checkout's ``cache/``, else the user's cache
#: folder for the application (``$XDG_CACHE_HOME/mia-explorer``, by default ``~/.cache/mia-explorer`` on Linux)
DEFAULT_CACHE_DIR = HOME / "cache" if IS_CHECKOUT else Path(platformdirs.user_cache_dir("mia-explorer", appauthor=False))
#: longest folder path accepted from the browser
MAX_PATH_CHARS = 4096


def cache_dir() -> Path:
    """The cache folder: ``$MIA_CACHE_DIR``, else :data:`DEFAULT_CACHE_DIR` (lives here, import-light, so
    that :mod:`core.foundations.locks` need not import torch through :mod:`core.experiment.cache`)."""
    return Path(os.environ.get("MIA_CACHE_DIR") or DEFAULT_CACHE_DIR)


def data_root() -> Path:
    """The resolved data root: ``$MIA_DATA_ROOT``, else the home directory.

    Raises:
        ConfigError: ``$MIA_DATA_ROOT`` (or the home directory) cannot be resolved — ``~user`` of
            no such user, a symbolic link loop, a NUL byte. There is no fallback on purpose: a
            root wider than the one configured would let the browser reach more than intended,
            and a narrower one would hide the user's data without saying why.
    """
    configured = os.environ.get(DATA_ROOT_ENV, "").strip()
    try:
        root = Path(configured).expanduser() if configured else Path.home()
        return root.resolve()
    except (RuntimeError, OSError, ValueError) as exc:  # no such user / no home, a loop, a NUL byte
        named = f"{DATA_ROOT_ENV}={configured!r}" if configured else "the home directory (the default data root)"
        raise ConfigError(f"{named} cannot be resolved ({' '.join(str(exc).split()) or type(exc).__name__}): "
                          f"set {DATA_ROOT_ENV} to an existing folder") from None


def resolve_data_dir(user_text: str, root: str | os.PathLike | None = None) -> Path:
    """The absolute, resolved folder ``user_text`` names, if it lies under the data root.

    Args:
        user_text: a folder as typed (absolute, ``~/...`` or relative to the root).
        root: the data root (default :func:`data_root`).

    Raises:
        ConfigError: empty, too long, a NUL byte, or outside the root (``..`` escapes and
            symbolic links pointing outside included). The message names the root and
            ``MIA_DATA_ROOT``.
    """
    text = (user_text or "").strip()
    if not text:
        raise ConfigError("enter a data folder")
    if len(text) > MAX_PATH_CHARS or "\x00" in text:
        raise ConfigError(f"the data folder must be a path of at most {MAX_PATH_CHARS} characters without NUL bytes")
    base = Path(root).expanduser().resolve() if root is not None else data_root()
    try:
        path = Path(text).expanduser()
    except RuntimeError:  # "~nobody/x": no such user
        raise ConfigError(f"data folder {text!r}: no such home directory") from None
    if not path.is_absolute():
        path = base / path
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise ConfigError(f"data folder {text!r} cannot be resolved: {exc}") from None
    if not resolved.is_relative_to(base):
        raise ConfigError(
            f"data folder {text!r} lies outside the data root {str(base)!r}: put the data under it, "
            f"or start the app with {DATA_ROOT_ENV} set to a folder that holds it"
        )
    refuse_hidden(resolved, base, f"data folder {text!r}")
    return resolved


def refuse_hidden(path: Path, root: Path, what: str) -> None:
    """Without ``$MIA_DATA_ROOT`` (the root is the home directory): refuse a ``path`` below ``root`` through a
    hidden file or folder (a name starting with ``.``: the home's keys, credentials, caches and settings).

    Raises:
        ConfigError: one line naming the hidden component and ``MIA_DATA_ROOT``.
    """
    if os.environ.get(DATA_ROOT_ENV, "").strip():
        return
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return
    hidden = next((p for p in parts if p.startswith(".") and p not in (".", "..")), None)
    if hidden is not None:
        raise ConfigError(f"{what} passes through the hidden {hidden!r}: without {DATA_ROOT_ENV} the data root is the "
                          f"home folder less its hidden files and folders; move the data, or set {DATA_ROOT_ENV}")
