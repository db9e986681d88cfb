"""The ``mia-explorer`` console command: ``mia-explorer run|compare|defend|analyze|score|findings|report|config|
inspect ...`` is ``python -m core ...`` (:mod:`core.cli.main`), with ``core`` bound to the installed library
(:mod:`mia_explorer`); ``mia-explorer app [STREAMLIT OPTIONS]`` serves the Streamlit app shipped with it."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Sequence

from mia_explorer import HOME

#: the command's name in its messages
PROG = "mia-explorer"
#: environment variables holding paths: made absolute before the app's server starts in its own folder
PATH_VARIABLES = ("MIA_CACHE_DIR", "MIA_DATA_ROOT")
LIST_VARIABLES = ("MIA_PLUGINS",)
APP_HELP = ("mia-explorer app [STREAMLIT OPTIONS]: serve the Streamlit app on http://127.0.0.1:8501 (loopback only; "
            "--server.port N for another port; README, 'Exposing the app')")


def app_root() -> Path:
    """The folder of the app's entry script: inside the installed package, else the checkout's root."""
    installed = Path(__file__).resolve().parent / "app"
    return installed if (installed / "app.py").is_file() else HOME


def _absolute(text: str) -> str:
    return os.path.abspath(os.path.expanduser(text)) if text.strip() else text


def app_command(root: Path, extra: Sequence[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that serve the app in ``root``.

    The server runs in ``root`` so that Streamlit reads the shipped ``.streamlit/config.toml`` (loopback only, no
    usage statistics); paths the user gave relative to their own folder are made absolute first. ``-P``: the
    server's working directory is not put on ``sys.path`` (only the app's folder is, by Streamlit)."""
    env = dict(env)
    for name in PATH_VARIABLES:
        if env.get(name):
            env[name] = _absolute(env[name])
    for name in LIST_VARIABLES:
        if env.get(name):
            env[name] = os.pathsep.join(_absolute(p) for p in env[name].split(os.pathsep) if p)
    return [sys.executable, "-P", "-m", "streamlit", "run", str(root / "app.py"), *extra], env


def serve_app(extra: Sequence[str]) -> int:
    """Replace this process with the Streamlit server (Ctrl-C and the exit status are the server's own)."""
    root = app_root()
    if not (root / "app.py").is_file():
        print(f"error: the app is not installed with this package (no {root / 'app.py'})", file=sys.stderr)
        return 2
    command, env = app_command(root, extra, dict(os.environ))
    os.chdir(root)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(command[0], command, env)
    return 0  # pragma: no cover - execve does not return


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["app"]:
        return serve_app(args[1:])
    from core.cli.main import main as core_main

    return core_main(args, prog=PROG, epilog=APP_HELP)
