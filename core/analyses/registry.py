"""The analysis registry: one registration (:class:`Analysis`) per analysis, read by the CLI, the worker,
the report and the Analyses page.

* ``name`` (``analyze --analysis NAME``, its key in ``analyses.json``, its files ``NAME.csv`` / ``NAME.html``)
  and ``label``;
* ``run(AnalysisRun) → data`` for both architectures (``extras``: other keys it adds beside its own);
* ``reads``: its typed class' reader of one architecture's JSON (``from_dict``; ``whole``: of its one view over
  every architecture); with one, ``run`` returns ``{arch: typed}`` (``whole``: the typed view) and ``verdict_of`` /
  ``repeat.pair`` and its table and figure builders take that; JSON (a job's result, a file) becomes typed once,
  where it is read (:func:`read_result`, :func:`read_results`), and typed data is written as JSON by
  :func:`laid_out`;
* ``verdict`` (its key in ``verdicts``) and ``verdict_of({arch: data}) → Verdict``;
* ``repeat`` (:class:`Repeat`): how it compares FFNN with RNN over paired repeats;
* ``long``: it trains models of its own, so the app runs it as a worker job through
  ``job(config, stage, params)`` (``job_params``: the parameters it reads besides ``name``);
* ``table`` / ``figure``: ``data → DataFrame`` / ``data → plotly Figure`` (``data`` typed where it registers
  ``reads``). This layer never imports the
  views: the view modules register the built-in builders (:func:`table_builder`, :func:`figure_builder`,
  :func:`register_views`); :func:`table_of` / :func:`figure_of` return the one in use.

The built-in analyses register themselves in :mod:`core.analyses.analysis`, loaded on the first look-up.
Only code registers an analysis: a name from a page or a job's parameters is only looked up, never imported.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping, TypeVar

from core.experiment.results import RunSummary
from core.foundations.config import ExperimentConfig
from core.foundations.errors import ConfigError
from core.foundations.registry import Registry

#: the module whose import registers the built-in analyses (loaded on the first look-up)
BUILTIN_MODULE = "core.analyses.analysis"


@dataclass(frozen=True)
class Repeat:
    """How an analysis compares FFNN with RNN over paired repeats: ``pair({arch: data})`` → the
    (FFNN, RNN) numbers of one repeat (None where that repeat has none), the sign the studies
    predict for FFNN − RNN, and what the number is."""

    pair: Callable[[dict[str, Any]], tuple[float, float] | None]
    expected: int
    what: str


@dataclass
class AnalysisRun:
    """What an analysis' ``run`` gets: both architectures' configs and summaries, the cache, the
    progress callback ``say(stage, fraction)`` and the options of ``analyze``."""

    configs: dict[str, ExperimentConfig]
    summaries: dict[str, RunSummary]
    cache: Any
    say: Callable[[str, float], None]
    canaries: int = 100
    defense: tuple[str, float] | None = None
    online_lira: int = 0

    def per_arch(self, fn: Callable[[ExperimentConfig, RunSummary], Any]) -> dict[str, Any]:
        """``{arch: fn(config, summary)}``."""
        return {arch: fn(cfg, self.summaries[arch]) for arch, cfg in self.configs.items()}

    def staged(self, name: str, fn: Callable[..., Any]) -> dict[str, Any]:
        """``{arch: fn(config, cache=…, progress=…)}``, each architecture announced as the stage
        ``"<name> (<arch>)"`` and its fractions reported under it."""
        out = {}
        for arch, cfg in self.configs.items():
            stage = f"{name} ({arch})"
            self.say(stage, 0.0)
            out[arch] = fn(cfg, cache=self.cache, progress=lambda f, s=stage: self.say(s, f))
        return out


@dataclass(frozen=True)
class Analysis:
    """One registered analysis (see the module docstring)."""

    name: str
    label: str
    run: Callable[[AnalysisRun], Any] | None
    verdict: str | None = None
    verdict_of: Callable[[dict[str, Any]], Any] | None = None
    repeat: Repeat | None = None
    reads: Callable[[Mapping[str, Any]], Any] | None = None
    #: its data is one view over every architecture (not ``{arch: data}``): ``reads`` takes all of it
    whole: bool = False
    long: bool = False
    job: Callable[[ExperimentConfig, Callable[[str], Callable[[float], None]], dict[str, Any]], Any] | None = None
    job_params: tuple[str, ...] = ()
    table: Callable[[Any], Any] | None = None
    figure: Callable[[Any], Any] | None = None
    extras: Callable[[AnalysisRun], dict[str, Any]] | None = None
    #: chosen with ``--analysis`` (False: the runs every analysis starts from, whose verdict and
    #: repeat pairing are registered like an analysis' but which is never run or written by name)
    listed: bool = True

    def __post_init__(self) -> None:
        if self.listed and self.run is None:
            raise ValueError(f"analysis {self.name}: a listed analysis needs a run function")
        if self.long and self.job is None:
            raise ValueError(f"analysis {self.name}: a long analysis needs a job function (the worker runs it)")
        for what, builder in (("table", self.table), ("figure", self.figure)):
            if builder is not None and not callable(builder):
                raise ValueError(f"analysis {self.name}: {what} must be a callable (a view registers its own "
                                 f"builder with register_views), got {builder!r}")
        if (self.verdict is None) != (self.verdict_of is None):
            raise ValueError(f"analysis {self.name}: give both verdict (its key) and verdict_of, or neither")


_REGISTRY: Registry[Analysis] = Registry("analysis")
_loaded = False


def _load_builtins() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        importlib.import_module(BUILTIN_MODULE)


def register_analysis(entry: Analysis) -> Analysis:
    """Add ``entry`` (after the built-in ones); a name already taken by another registration is refused."""
    _load_builtins()
    return _REGISTRY.register(entry.name, entry)


def unregister_analysis(name: str) -> None:
    """Remove a registration (a test's toy)."""
    _REGISTRY.unregister(name)


def registered(every: bool = False) -> list[Analysis]:
    """The registered analyses in registration order: the listed ones (``every``: with the runs' entry)."""
    _load_builtins()
    return [a for a in _REGISTRY.values() if every or a.listed]


def names() -> tuple[str, ...]:
    """The names ``--analysis`` accepts, in the order ``analyze`` runs and writes them."""
    return tuple(a.name for a in registered())


def get_analysis(name: str) -> Analysis:
    """The registration of ``name`` (the runs' entry included); an unknown name: :class:`ConfigError`."""
    _load_builtins()
    return _REGISTRY.get(name)


def read_result(name: str, data: Mapping[str, Any]) -> Any:
    """Analysis ``name``'s ``{arch: JSON}`` (a job's result, a file; typed already: kept) read typed by its
    registered ``reads``, once: ``{arch: typed}``, or the typed view of an analysis registered ``whole``; as given
    where it has no reader (an unknown name: as given too)."""
    _load_builtins()
    entry = _REGISTRY.find(name)
    if entry is None or entry.reads is None:
        return dict(data)
    reads = entry.reads
    if entry.whole:
        return reads(data) if isinstance(data, Mapping) else data
    return {arch: reads(v) if isinstance(v, Mapping) else v for arch, v in data.items()}


def read_results(results: Mapping[str, Any]) -> dict[str, Any]:
    """Every analysis' data in ``results`` (``analyses.json``'s analyses, name → its JSON) read typed by
    :func:`read_result`, once, at the file or page boundary: what the table and figure builders take. Other
    entries (the extras, the verdicts) as they are."""
    _load_builtins()
    return {name: read_result(name, data) if _REGISTRY.find(name) is not None and isinstance(data, Mapping)
            else data for name, data in results.items()}


def laid_out(results: Mapping[str, Any]) -> dict[str, Any]:
    """``results`` (name → its data) as their JSON layout: typed data (``{arch: typed}`` or one typed view) written
    by ``to_dict``, a list item by item (the most exposed members), JSON as it is (what ``analyses.json`` holds)."""
    def json_of(v: Any) -> Any:
        if isinstance(v, list):
            return [json_of(x) for x in v]
        return v.to_dict() if hasattr(v, "to_dict") else v

    return {name: {a: json_of(v) for a, v in data.items()} if isinstance(data, Mapping) else json_of(data)
            for name, data in results.items()}


def verdict_keys() -> dict[str, str]:
    """analysis → the key of its verdict (the runs' included)."""
    return {a.name: a.verdict for a in registered(every=True) if a.verdict}


def long_names() -> tuple[str, ...]:
    """The analyses the app runs as worker jobs."""
    return tuple(a.name for a in registered() if a.long)


#: analysis name -> the table / figure builder a view module registered for it (:func:`register_views`)
_VIEW_TABLES: dict[str, Callable[[Any], Any]] = {}
_VIEW_FIGURES: dict[str, Callable[[Any], Any]] = {}


def register_views(name: str, table: Callable[[Any], Any] | None = None,
                   figure: Callable[[Any], Any] | None = None) -> None:
    """Called by a view module beside its builder: ``table`` / ``figure`` draw analysis ``name``'s data
    (``data → DataFrame`` / ``data → plotly Figure``). A second, different builder for the same analysis
    is refused (:class:`ConfigError`), like a taken name."""
    for given, held, what in ((table, _VIEW_TABLES, "table"), (figure, _VIEW_FIGURES, "figure")):
        if given is None:
            continue
        if not callable(given):
            raise ConfigError(f"the {what} builder of analysis {name!r} must be a callable, got {given!r}")
        if held.get(name, given) is not given:
            raise ConfigError(f"analysis {name!r} already has a {what} builder ({held[name].__qualname__})")
        held[name] = given


F = TypeVar("F", bound=Callable[..., Any])


def table_builder(*names: str) -> Callable[[F], F]:
    """Decorator for a view's table builder: it draws the data of the analyses ``names``."""
    def mark(fn: F) -> F:
        for name in names:
            register_views(name, table=fn)
        return fn
    return mark


def figure_builder(*names: str) -> Callable[[F], F]:
    """Decorator for a view's figure builder: it draws the data of the analyses ``names``."""
    def mark(fn: F) -> F:
        for name in names:
            register_views(name, figure=fn)
        return fn
    return mark


def unregister_views(name: str) -> None:
    """Forget the builders a view registered for ``name`` (a test's toy)."""
    _VIEW_TABLES.pop(name, None)
    _VIEW_FIGURES.pop(name, None)


def table_of(entry: Analysis) -> Callable[[Any], Any] | None:
    """The table builder of ``entry``: its own callable, else the one a view registered, else None."""
    return entry.table or _VIEW_TABLES.get(entry.name)


def figure_of(entry: Analysis) -> Callable[[Any], Any] | None:
    """The figure builder of ``entry``: its own callable, else the one a view registered, else None."""
    return entry.figure or _VIEW_FIGURES.get(entry.name)


def int_param(params: dict[str, Any], name: str, default: int, lo: int, hi: int) -> int:
    """A job parameter that must be an integer in ``lo..hi`` (``default`` when absent)."""
    value = params.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise ConfigError(f"{name} must be an integer in {lo}..{hi}, got {value!r}")
    return value
