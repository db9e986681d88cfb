"""The adaptive attacker's answers (:class:`core.defenses.defender.Defender`, ``attacker`` "adaptive" or "both"): the
attacker knows the mechanism and its value, so its own shadows answer through the same mechanism, draw by draw —
on the shadow attack's records (:func:`adaptive_shadow_answers`) and on LiRA's and RMIA's attacked, population and
calibration records (:func:`defended_reference_inputs`); the attacks are then refitted on them."""
from __future__ import annotations

from typing import Any

import numpy as np

from core.defenses.registry import OutputMechanism
from core.defenses.spec import DefenseSpec
from core.experiment.reference_attacks import Calibration, ReferenceInputs
from core.measurement.responses import Responses


def adaptive_shadow_answers(defender: Any, spec: DefenseSpec, draw: int) -> Responses:
    """The adaptive attacker's shadows answering through the same mechanism (draw ``draw``)."""
    parts = []
    mech = spec.mechanism_class
    for i, shadow in enumerate(defender.models.shadows):
        role = f"shadow_{i}"
        query = defender.models.shadow_query_index(i)
        if isinstance(mech, OutputMechanism):
            part = mech.transform(shadow.responses[defender.cfg.epochs], spec, defender._rng(spec, draw, role))
            transform = mech.torch_transform(spec, defender._torch_generator(spec, draw, role))
            part.record_features.update(defender.task.record_features_under(
                defender.cfg, defender._shadow_model(i), defender.models.data, query, transform))
        else:
            model = defender._noisy(role, defender._shadow_model(i), shadow.weights, spec, draw)
            part = defender.task.respond(defender.cfg, model, defender.models.data, query)
        parts.append(part)
    return Responses.concat(parts)


def defended_reference_inputs(defender: Any, spec: DefenseSpec, draw: int, target: Responses,
                              population_target: Responses) -> ReferenceInputs:
    """The adaptive attacker's LiRA/RMIA inputs: every shadow answer (on the attacked records, the
    population and the calibration records) through the same mechanism, draw ``draw``."""
    inputs = defender.reference_inputs
    cal = inputs.calibration
    n = len(inputs.references)
    mech = spec.mechanism_class
    if isinstance(mech, OutputMechanism):
        def through(r: Responses, role: str) -> Responses:
            return mech.transform(r, spec, defender._rng(spec, draw, role))

        refs = [through(r, f"shadow_{i}/eval") for i, r in enumerate(inputs.references)]
        pop_refs = [through(r, f"shadow_{i}/population") for i, r in enumerate(inputs.population_references)]
        cal = cal.mapped(lambda k, r: through(r, f"shadow_{k}/calibration"),
                         lambda j, k, r: through(r, f"shadow_{j}/calibration_{k}"))
    else:
        # each noisy shadow answers every record it is asked about once, then the answers are split
        parts = [inputs.eval_index, inputs.population_index, *cal.queries]
        bounds = np.cumsum([0] + [len(p) for p in parts])
        everything = np.concatenate(parts)
        refs, pop_refs, per_query = [], [], []
        for i, shadow in enumerate(defender.models.shadows):
            model = defender._noisy(f"shadow_{i}", defender._shadow_model(i), shadow.weights, spec, draw)
            r = defender.task.respond(defender.cfg, model, defender.models.data, everything, record_features=False)
            split = [r.subset(np.arange(bounds[p], bounds[p + 1])) for p in range(len(parts))]
            refs.append(split[0])
            pop_refs.append(split[1])
            per_query.append(split[2:])  # shadow i on shadow k's calibration records
        cal = Calibration(cal.queries, [per_query[k][k] for k in range(n)],
                          [[per_query[j][k] for j in range(n) if j != k] for k in range(n)],
                          cal.out_masks, cal.membership)
    return ReferenceInputs(target, refs, population_target, pop_refs, cal, inputs.population_index,
                           inputs.eval_index)

