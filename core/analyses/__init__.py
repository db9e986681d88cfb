"""Analyses over runs: repeats and their verdicts, the Home page's answer, the studies' findings table, matched
utility, the analyses, per-record views.

Imports ``core.defenses`` and below."""
