"""The CLI's reusable pieces: the parser that refuses in one line (:class:`OneLineErrorParser`), options given once
(:class:`Once`, :func:`given`), :func:`guarded` (every fixable failure one ``error: ...`` line and exit status 2,
Ctrl-C 130) and ``--set key=value`` (:func:`parse_sets`, :func:`check_named_sets`). No torch at import."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Any, Callable, NoReturn, Sequence

from core.foundations.errors import ConfigError, MIAError

#: printed (alone) when a run is interrupted with Ctrl-C
INTERRUPTED = "interrupted; cached models are kept"


#: exit status of an interrupted run (128 + SIGINT, as shells report it)
EXIT_INTERRUPTED = 130


#: exit status of every error the user can fix
EXIT_ERROR = 2


class OneLineErrorParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one ``error: ...`` line (exit 2), like the library's.

    argparse prints its whole usage block before the message; for an unknown ``--task`` that
    buries the one line that matters. ``--help`` still shows the usage.
    """

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"error: {message} (see {self.prog} --help)\n")


class Once(argparse.Action):
    """Store an option's value, refusing a second occurrence: with argparse's default the last of
    ``--task image --task translation`` wins silently, which hides a typo (as with ``--set``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        given = getattr(namespace, "_given", None)
        if given is None:
            given = set()
            setattr(namespace, "_given", given)
        if self.dest in given:
            parser.error(f"{option_string} given twice ({option_string} {getattr(namespace, self.dest)}, "
                         f"{option_string} {values}): give it once")
        given.add(self.dest)
        setattr(namespace, self.dest, values)


def positive_int(text: str) -> int:
    """argparse type: an integer ≥ 1 (``--workers 0`` is refused, not clamped)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def one_line(exc: BaseException) -> str:
    """The exception's message on one line (newlines would break the one-line contract)."""
    return " ".join(str(exc).split()) or type(exc).__name__


class CtrlC:
    """A Ctrl-C that cannot be lost. Python's default handler raises ``KeyboardInterrupt`` wherever
    the main thread is, and an exception raised inside a finalizer or inside code a library runs
    under a catch-all is dropped ("Exception ignored in …"), so a run could go on after Ctrl-C.
    This handler also remembers it, and every progress report (:meth:`check`) raises it again."""

    pending = False

    @classmethod
    def handler(cls, signum: int, frame: Any) -> None:
        cls.pending = True
        raise KeyboardInterrupt

    @classmethod
    def check(cls) -> None:
        if cls.pending:
            raise KeyboardInterrupt


def guarded(command: Callable[..., int], *args: Any, **kwargs: Any) -> int:
    """Run a CLI command and turn expected failures into an exit status.

    :class:`MIAError` → ``error: <message>`` and 2; Ctrl-C (KeyboardInterrupt) → the one line
    :data:`INTERRUPTED` and 130 (finished cache entries are committed atomically, so nothing
    half-written is left). Anything else is a bug and keeps its traceback.
    """
    previous = None
    # only where Ctrl-C would interrupt anyway: a parent that set SIGINT to be ignored keeps it so
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous = signal.signal(signal.SIGINT, CtrlC.handler)
    try:
        return command(*args, **kwargs)
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `python -m core run ... | head`: the reader left, nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except MIAError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        CtrlC.pending = False
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def parse_sets(pairs: Sequence[str]) -> dict[str, str]:
    """``["k=v", ...]`` → ``{k: v}``; a pair without ``=``, an empty key or a key given twice is a
    :class:`ConfigError` (silently keeping the last of two values hides a typo)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set expects key=value, got {pair!r}")
        if key in out:
            raise ConfigError(f"--set {key} given twice ({key}={out[key]}, {key}={value.strip()}): give each key once")
        out[key] = value.strip()
    return out


#: config keys that name what ``--task``/``--arch``/``--preset`` already chose
NAMED_BY_FLAGS = {"task": "--task", "arch": "--arch", "preset": "--preset"}


def check_named_sets(sets: dict[str, str], args: argparse.Namespace) -> dict[str, str]:
    """``sets`` without keys that repeat ``--task``/``--arch``/``--preset``; a key that
    contradicts its flag (``--task image --set task=translation``) is a :class:`ConfigError`."""
    out = dict(sets)
    for key, flag in NAMED_BY_FLAGS.items():
        if key in out:
            if out[key] != getattr(args, key):
                raise ConfigError(f"--set {key}={out[key]} contradicts {flag} {getattr(args, key)}: choose the {key} with {flag}")
            del out[key]
    return out


def given(args: argparse.Namespace) -> set[str]:
    """The options given on the command line (recorded by :class:`Once`), by their ``dest``."""
    return set(getattr(args, "_given", set()))
