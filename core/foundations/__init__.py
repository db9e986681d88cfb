"""Foundations: errors, configuration, the registry implementation and the task registry, paths, devices,
progress, locks, worker processes (:mod:`core.foundations.processes`), file reading.

Imports nothing from the rest of ``core``."""
