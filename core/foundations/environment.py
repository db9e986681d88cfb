"""The ``MIA_*`` environment variables: one rule for all of them.

A bad value is one clear :class:`ConfigError` at start — the CLI before it parses its options, the
app before it draws a page — never a default taken silently and never a worker process that dies
at start and is started again. An unset or empty variable means the default. Light (no torch): the CLI
checks before its imports.

The paths (``MIA_CACHE_DIR``, ``MIA_DATA_ROOT``) are checked where they are resolved
(:mod:`core.foundations.paths`); here, for them, only what can be told from the text.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable, Mapping

from core.foundations.config import EXECUTORS
from core.foundations.errors import ConfigError


@dataclass(frozen=True)
class Variable:
    """One ``MIA_*`` variable: what it sets and the check of a non-empty value (raises ValueError)."""

    name: str
    meaning: str
    check: Callable[[str], object]


def whole_number(lo: int, hi: int) -> Callable[[str], int]:
    """A check: a whole number in lo..hi."""

    def check(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(f"expected a whole number in {lo}..{hi}") from None
        if not lo <= value <= hi:
            raise ValueError(f"expected a whole number in {lo}..{hi}")
        return value
    return check


def one_of(choices: tuple[str, ...]) -> Callable[[str], str]:
    """A check: one of ``choices``."""

    def check(text: str) -> str:
        if text.strip() not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return text.strip()
    return check


def device_name(text: str) -> str:
    """A check of ``MIA_DEVICE``'s spelling (whether the GPU exists is checked where torch is loaded)."""
    if not re.fullmatch(r"cpu|mps|cuda(:\d{1,3})?", text.strip()):
        raise ValueError("expected cpu, cuda or cuda:N")
    return text.strip()


def path_text(text: str) -> str:
    """A check of a path's text: no NUL byte, at most 4096 characters."""
    if "\x00" in text or len(text) > 4096:
        raise ValueError("expected a path (at most 4096 characters, no NUL byte)")
    return text


def names_list(text: str) -> tuple[str, ...]:
    """A check: comma-separated log-in names (no blanks inside a name, at most 256 characters each)."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names or any(len(n) > 256 or not n.isprintable() or " " in n for n in names):
        raise ValueError("expected log-in names separated by commas")
    return names


def header_name(text: str) -> str:
    """A check: an HTTP header name (letters, digits and hyphens)."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9-]{0,63}", text.strip()):
        raise ValueError("expected an HTTP header name such as X-Forwarded-User")
    return text.strip()


#: every MIA_* variable the project reads, with its check
VARIABLES: tuple[Variable, ...] = (
    Variable("MIA_CACHE_DIR", "the cache folder", path_text),
    Variable("MIA_DATA_ROOT", "the folder real datasets are looked up under", path_text),
    Variable("MIA_DEVICE", "where tensors live", device_name),
    Variable("MIA_EXECUTOR", "where the CLI's trainings run", one_of(EXECUTORS)),
    Variable("MIA_RAY_ADDRESS", "the Ray cluster's address", path_text),
    Variable("MIA_JOB_WORKERS", "the app's training slots", whole_number(1, 64)),
    Variable("MIA_JOB_QUOTA", "queued or running app jobs per browser session", whole_number(1, 10000)),
    Variable("MIA_LECTURERS", "log-in names that see and cancel every app job", names_list),
    Variable("MIA_USER_HEADER", "the HTTP header the reverse proxy puts the log-in name in", header_name),
    Variable("MIA_WORKER_THREADS", "torch threads of each app worker", whole_number(1, 1024)),
    Variable("MIA_WORKER_NICE", "niceness added to each app worker", whole_number(0, 19)),
)
_BY_NAME = {v.name: v for v in VARIABLES}


def env_value(name: str, environ: Mapping[str, str] | None = None) -> object | None:
    """The checked value of ``name`` (None when unset or empty).

    Raises:
        ConfigError: one line naming the variable, its value and what it must be.
    """
    variable = _BY_NAME[name]
    text = (os.environ if environ is None else environ).get(name, "")
    if not text.strip():
        return None
    try:
        return variable.check(text)
    except ValueError as exc:
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise ConfigError(f"{name}={shown!r} is not valid ({variable.meaning}): {exc}; fix it or unset it") from None


def env_whole_number(name: str) -> int | None:
    """The checked value of a whole-number variable (:func:`whole_number`), None when unset or empty."""
    value = env_value(name)
    if value is not None and not isinstance(value, int):
        raise TypeError(f"{name} is not a whole-number variable")  # a caller's mistake, never a user's value
    return value


def check_environment(environ: Mapping[str, str] | None = None) -> None:
    """Check every ``MIA_*`` variable (:data:`VARIABLES`); raise :class:`ConfigError` at the first bad one."""
    for variable in VARIABLES:
        env_value(variable.name, environ)
