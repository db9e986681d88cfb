"""MIA Explorer core: tasks, models, shadow-model membership inference attacks, cache, CLI.

This package knows nothing of Streamlit; the app's pages only call it and draw.
"""
from core.foundations.config import ExperimentConfig
from core.foundations.errors import CacheCorruptionError, ConfigError, DatasetNotFoundError, MIAError

__all__ = ["ExperimentConfig", "ConfigError", "DatasetNotFoundError", "CacheCorruptionError", "MIAError"]
