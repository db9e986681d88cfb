"""Attacks fitted on the attacker's shadow responses and scored on the victim's.

Importing this package imports the built-in responses-stage attacks below, each of which registers itself in
:mod:`core.attacks.registry` beside its definition; a new built-in attack module is one more name in :data:`BUILTIN_MODULES`
(the models-stage attacks, which need trained models, register in :mod:`core.experiment.model_attacks`).

Imports ``core.foundations``, ``core.measurement``, ``core.models``."""
import importlib

from core.attacks import registry

#: the modules of the built-in attacks, in the order their attacks appear in a run's results
BUILTIN_MODULES = ("core.attacks.shadow_attacks", "core.attacks.sequence_scores")
for _module in BUILTIN_MODULES:
    importlib.import_module(_module)  # each registers its attacks beside their definitions
registry.seal_builtins()
