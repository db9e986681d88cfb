"""The package's version, and the envelope of every JSON file the product writes.

A file the CLI or the app writes starts with ``schema`` (``{"name": "mia-explorer/<layout>", "version": N}``: the
layout and its version; N grows when a key changes meaning or a required key is added, never for an added optional
key) and ``mia_explorer_version`` (the package that wrote it), so a reader knows what it holds without guessing from
its keys. The typed readers (:mod:`core.foundations.typed_json`) take the envelope off before they check a layout:
a file the CLI wrote reads back like a cache entry, which carries no envelope (the cache has its own schema version,
:data:`core.foundations.config.CACHE_SCHEMA_VERSION`, inside its keys), and a file written before the envelope
existed reads as before. Import-light (no third-party import): the CLI prints ``--version`` from here.
"""
from __future__ import annotations

from typing import Any, Mapping, TypeGuard

#: the package version (``pyproject.toml`` reads it from here: one place to bump, CHANGELOG.md beside it)
VERSION = "0.12.0"
#: the distribution's name (``pip install mia-explorer``)
DISTRIBUTION = "mia-explorer"
#: the envelope's keys
SCHEMA_KEY = "schema"
VERSION_KEY = "mia_explorer_version"
#: every JSON layout the product writes, and its version
SCHEMAS: dict[str, int] = {
    "run": 2,               # run (and run --repeats: the summary with its repeats block); 2: the machine block
    "compare": 2,           # compare: FFNN vs RNN over paired repeats; 2: the answer block
    "compare-matched": 1,   # compare --match-utility
    "answer": 1,            # compare --cached: the Home page's answer
    "config": 1,            # config: the resolved config and its hash (run --config reads it back)
    "inspect": 1,           # inspect: what the data source holds and how a run splits it
    "defend": 1,            # defend, after training (dirichlet, gpm) and during training (dpsgd, l2, clip)
    "defend-repeats": 1,    # defend --repeats
    "analyses": 1,          # analyze: analyses.json
    "analyses-printed": 1,  # analyze: what it prints (the verdicts and where the files are)
    "score": 1,             # score: a file of per-record scores
    "findings": 2,          # findings; 2: rows declared before data (decidable_at, target_repeats, matched, machine)
    "runs": 1,              # the app's download of the summaries shown
    "audit": 1,             # the one-run privacy audit (analyze --analysis audit's block)
    "model_audit": 1,       # audit: a model the user already has (python -m core audit, core.audit.audit)
}
_PREFIX = DISTRIBUTION + "/"


def schema_of(name: str) -> dict[str, Any]:
    """The ``schema`` value of layout ``name`` (one of :data:`SCHEMAS`)."""
    return {"name": _PREFIX + name, "version": SCHEMAS[name]}


def stamped(obj: Mapping[str, Any], name: str) -> dict[str, Any]:
    """``obj`` with the envelope first: ``schema`` of layout ``name`` and the package version (an envelope ``obj``
    already carries is replaced, so stamping twice is stamping once). A layout's own ``schema`` key would be
    lost under the envelope: a ``ValueError`` (a layout must name it otherwise)."""
    if SCHEMA_KEY in obj and not is_envelope(obj[SCHEMA_KEY]):
        raise ValueError(f"the {name} layout has a key {SCHEMA_KEY!r} of its own; the envelope needs it")
    return {SCHEMA_KEY: schema_of(name), VERSION_KEY: VERSION,
            **{k: v for k, v in obj.items() if k not in (SCHEMA_KEY, VERSION_KEY)}}


def is_envelope(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """Whether ``value`` is a ``schema`` value this product writes (not a layout's own key of that name)."""
    return isinstance(value, Mapping) and isinstance(value.get("name"), str) and value["name"].startswith(_PREFIX) \
        and isinstance(value.get("version"), int) and not isinstance(value.get("version"), bool)


def envelope_problem(d: Mapping[str, Any]) -> str | None:
    """Why the envelope of ``d`` cannot be read by this version (a layout newer than it knows), or None."""
    value = d.get(SCHEMA_KEY)
    if not is_envelope(value):
        return None
    name = value["name"][len(_PREFIX):]
    known = SCHEMAS.get(name)
    if known is not None and value["version"] > known:
        return (f"{value['name']} version {value['version']} was written by {DISTRIBUTION} "
                f"{d.get(VERSION_KEY, 'of a newer version')}; this is {VERSION}, which reads up to version {known}")
    return None


def unstamped(d: Mapping[str, Any]) -> Mapping[str, Any]:
    """``d`` without its envelope (``d`` itself where it has none)."""
    if not is_envelope(d.get(SCHEMA_KEY)):
        return d
    return {k: v for k, v in d.items() if k not in (SCHEMA_KEY, VERSION_KEY)}
