"""Foundations: errors, configuration, the registry implementation and the task registry, paths, devices,
progress, locks, file reading.

Imports nothing from the rest of ``core``."""
