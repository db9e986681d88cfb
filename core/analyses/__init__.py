"""Analyses over runs: repeats and their verdicts, matched utility, the analyses, per-record views.

Imports ``core.defenses`` and below."""
