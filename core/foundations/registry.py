"""One registry implementation for every kind of thing the explorer looks up by name.

Tasks (:mod:`core.foundations.task_registry`), defenses (:mod:`core.defenses.registry`), attacks
(:mod:`core.attacks.registry`), analyses (:mod:`core.analyses.registry`) and the app's job kinds
(:mod:`core.jobs.worker`) each keep one :class:`Registry`; what differs between them stays in their own
module. An unknown name never falls back to another; ``lazy`` names are imported on the first ``get``, so
that listing and checking names does not load torch. Imports nothing but the errors.
"""
from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

from core.foundations.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Items of one kind by name, in registration order.

    Not a ``dict``: :meth:`get` raises for an unknown name instead of answering None (use
    :meth:`find` for "None when unknown"), and only :meth:`register` / :meth:`unregister` change it,
    so every registry refuses a taken name the same way.
    """

    def __init__(self, kind: str, lazy: Mapping[str, str] | None = None) -> None:
        #: what one item is, in messages ("task", "mechanism", "job kind")
        self.kind = kind
        self._items: dict[str, T] = {}
        #: name -> the module whose import registers it (imported on the first :meth:`get`)
        self._lazy: dict[str, str] = dict(lazy or {})
        self._builtin: frozenset[str] = frozenset()

    # ------------------------------------------------------------------ changing it
    def register(self, name: str, item: T, replace: bool = False) -> T:
        """Add ``item`` under ``name`` and return it. A name another item holds is a
        :class:`ConfigError` unless ``replace`` (the caller decided the two are the same thing,
        e.g. the same class registered again); the same (or an equal) item again is a no-op."""
        if not isinstance(name, str) or not name:
            raise ConfigError(f"a {self.kind} needs a non-empty name, got {name!r}")
        if name in self._items and not replace:
            taken = self._items[name]
            if taken is not item and taken != item:
                raise ConfigError(f"{self.kind} {name!r} is already registered")
        self._items[name] = item
        return item

    def unregister(self, name: str) -> T | None:
        """Remove ``name`` (a test's toy) and return what it held (None if nothing); a built-in
        name (:meth:`seal`) is refused with a ``ValueError``."""
        if name in self._builtin:
            raise ValueError(f"{name!r} is a built-in {self.kind}")
        return self._items.pop(name, None)

    def seal(self) -> None:
        """Mark every name registered or lazy so far as built-in: :meth:`unregister` refuses them."""
        self._builtin = frozenset(self._items) | frozenset(self._lazy)

    # ------------------------------------------------------------------ reading it
    def names(self) -> tuple[str, ...]:
        """Every name, the lazy (built-in) ones first, then in registration order; imports nothing."""
        return tuple(dict.fromkeys([*self._lazy, *self._items]))

    def get(self, name: str) -> T:
        """The item called ``name`` (its lazy module imported on first use); an unknown name is a
        one-line :class:`ConfigError` that lists the known ones."""
        if isinstance(name, str) and name not in self._items and name in self._lazy:
            importlib.import_module(self._lazy[name])  # the module registers its item
            if name not in self._items:
                raise RuntimeError(f"{self._lazy[name]} did not register a {self.kind} {name!r}")
        if not isinstance(name, str) or name not in self._items:
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}")
        return self._items[name]

    def find(self, name: str) -> T | None:
        """The item called ``name`` if it is registered (loaded), else None; imports nothing."""
        return self._items.get(name) if isinstance(name, str) else None

    def values(self) -> list[T]:
        """Every item, in :meth:`names` order (lazy ones imported)."""
        return [self.get(n) for n in self.names()]

    def items(self) -> list[tuple[str, T]]:
        return [(n, self.get(n)) for n in self.names()]

    def __getitem__(self, name: str) -> T:
        """``registry[name]``: like :meth:`get`, but an unknown name is a ``KeyError`` (mapping use)."""
        if name not in self:
            raise KeyError(name)
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._items or name in self._lazy)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self.names())})"


__all__ = ["Registry"]
