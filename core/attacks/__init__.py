"""Attacks fitted on the attacker's shadow responses and scored on the victim's.

Imports ``core.foundations``, ``core.measurement``, ``core.models``."""
