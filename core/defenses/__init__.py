"""Defenses: the mechanism registry, the defender (after-training mechanisms on cached models), the mechanisms, and the training-time sweeps.

Imports ``core.experiment`` and below."""
