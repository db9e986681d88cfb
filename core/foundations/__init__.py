"""Foundations: errors, configuration, the registry implementation and the task registry, paths, devices,
progress, locks, worker processes (:mod:`core.foundations.processes`), file reading, and the typed-result machinery
(:mod:`core.foundations.typed_json`: every layout's ``from_dict`` / ``to_dict``, on any floor above).

Imports nothing from the rest of ``core``."""
