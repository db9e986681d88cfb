"""Precise exceptions of the library; the app turns each into a clear message."""


class MIAError(Exception):
    """Base class of every error the library raises on purpose."""


class ConfigError(MIAError, ValueError):
    """A configuration field has an invalid value or an unknown name."""


class DatasetNotFoundError(MIAError, FileNotFoundError):
    """A real dataset's folder or one of its files is missing or malformed."""


class CacheCorruptionError(MIAError):
    """A cache entry failed its integrity check (it is discarded and recomputed)."""


class ResourceLimitError(MIAError):
    """A configuration would not fit in the memory available."""
