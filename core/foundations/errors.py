"""Precise exceptions of the library; the app turns each into a clear message.

Every error raised on purpose is a :class:`MIAError`, so callers (the CLI, the pages) catch one
class and print one line; anything else is a bug and keeps its traceback.
"""


class MIAError(Exception):
    """Base class of every error the library raises on purpose."""


class ConfigError(MIAError, ValueError):
    """A configuration field has an invalid value or an unknown name."""


class DatasetNotFoundError(MIAError, FileNotFoundError):
    """A real dataset's folder or one of its files is missing or malformed."""


class CacheCorruptionError(MIAError):
    """A cache entry failed its integrity check (it is discarded and recomputed)."""


class UnsafeCacheEntryError(CacheCorruptionError):
    """A cache row is stored in a form that would need unpickling (refused before any byte is read)."""


class CacheUnusableError(MIAError):
    """The cache folder cannot be used as asked: not a folder, an unreadable database, read-only
    when a run must store, a planted link in its layout (checked before any training)."""


class ResourceLimitError(MIAError):
    """A configuration would not fit in the memory available."""


class LockTimeoutError(MIAError, TimeoutError):
    """Another process held an inter-process lock for longer than the caller agreed to wait."""


class LockFileError(MIAError, OSError):
    """A lock file or the lock folder is not what it must be (a link, a device): refused."""


class OutputPathError(MIAError, OSError):
    """A result file cannot be written where the user asked (missing folder, not writable)."""


class TrainingDivergedError(MIAError, ArithmeticError):
    """A training run produced non-finite weights or outputs (nothing of it is cached)."""


class WorkerFailedError(MIAError, RuntimeError):
    """A job on a process pool or on Ray failed, or its worker died; the jobs that finished were
    delivered (the pipeline's models are cached) and only the rest need a rerun."""


class ResultFormatError(MIAError, ValueError):
    """A result dict (a run's summary, an attack, a defended point) lacks a field or holds one of
    the wrong type (:mod:`core.experiment.results`); the message names the field in one line."""


class NotCachedError(MIAError, LookupError):
    """A run's trained models are not in the cache, and the caller may only read it
    (:func:`core.experiment.pipeline.load_models`: the pages never train)."""
