"""Data: corpora, Multi30K, the MiniGrid maps, their planner and renderer.

Imports only ``core.foundations``."""
