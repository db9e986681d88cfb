"""Foundations: errors, configuration, paths, devices, progress, locks, file reading.

Imports nothing from the rest of ``core``."""
