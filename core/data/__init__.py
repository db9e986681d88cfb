"""Data: corpora, Multi30K, the tasks' readers (CIFAR-10 batches, CSV tables, translation records), the
MiniGrid maps, their planner and renderer.

Imports only ``core.foundations`` and ``core.models`` (the translation models' special token ids)."""
