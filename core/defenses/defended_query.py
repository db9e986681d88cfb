"""The defended victim as the models-stage attacks query it (:class:`DefendedQuery`), and the model wrapper
that remembers a model's outputs by input content (:class:`RememberingModel`), both used by
:class:`core.defenses.defender.Defender`."""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import torch

from core.defenses.registry import OutputMechanism
from core.defenses.spec import DefenseSpec
from core.experiment.reference_attacks import victim_answers as undefended_answers
from core.measurement.responses import Responses


class RememberingModel(torch.nn.Module):
    """``model`` whose outputs are kept in ``store`` by the input's content (shape, dtype and a SHA-256 of
    its bytes) and returned again for the same input (:meth:`core.defenses.defender.Defender._remembering`)."""

    def __init__(self, model: torch.nn.Module, store: dict[bytes, torch.Tensor]):
        super().__init__()
        self.model, self.store = model, store

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = x.detach().contiguous().cpu()
        key = hashlib.sha256(f"{tuple(c.shape)}/{c.dtype}".encode() + c.view(torch.uint8).numpy().tobytes()
                             if c.numel() else f"{tuple(c.shape)}/{c.dtype}".encode()).digest()
        if key not in self.store:
            with torch.no_grad():
                self.store[key] = self.model(x).detach().clone()
        return self.store[key].clone()


class DefendedQuery:
    """The victim behind ``spec``'s mechanism (draw ``draw``) as a models-stage attack queries it
    (:class:`core.attacks.registry.VictimQuery`): its defended answers on the evaluation set, on any
    other records (through the same mechanism), and its labels under augmentations — the argmax of
    the defended output (an output mechanism's noisy distribution, or the noisy-weight model's)."""

    defended = True  # ``defender``: the core.defenses.defender.Defender that builds the query (Any: no import back up)

    def __init__(self, defender: Any, spec: DefenseSpec, draw: int, eval_answers: Responses):
        self.defender, self.spec, self.draw, self._eval = defender, spec, draw, eval_answers
        self.eval_index = defender.models.splits.eval_index
        self.membership = defender.membership
        self._answered: dict[str, Responses] = {}  # respond's answers by the records asked (one query, one draw)
        #: the same point's draws' queries (:meth:`draws`), this one's place among them, and what they computed
        #: together (under an output mechanism an augmented query is answered once for every draw)
        self._together: list["DefendedQuery"] = [self]
        self._position = 0
        self._shared: dict[tuple, np.ndarray] = {}

    @classmethod
    def draws(cls, defender: Any, spec: DefenseSpec, answers: list[Responses], start: int = 0) -> list["DefendedQuery"]:
        """The queries of draws ``start``, ``start`` + 1, … of one point (``answers``: each draw's defended
        evaluation answers), sharing the label and augmented queries they ask alike (each asked once per point)."""
        queries = [cls(defender, spec, d, r) for d, r in enumerate(answers, start)]
        shared: dict[tuple, np.ndarray] = {}
        for i, q in enumerate(queries):
            q._together, q._position, q._shared = queries, i, shared
        return queries

    def _for_every_draw(self, mech: OutputMechanism, kind: str, index: np.ndarray, n: int, run: Any) -> np.ndarray:
        """This draw's part of ``run(transforms)`` — the task's ``*_under`` with every draw's transform of
        ``mech`` (the spec's output mechanism; role ``victim/<kind>``, each from its draw's own generator, as a
        draw alone makes it) — computed once for the draws together; a copy (a caller may write to it)."""
        key = (kind, hashlib.sha256(np.asarray(index, np.int64).tobytes()).hexdigest(), n)
        if key not in self._shared:
            d, spec = self.defender, self.spec
            self._shared[key] = run([mech.torch_transform(spec, d._torch_generator(spec, q.draw, f"victim/{kind}"))
                                     for q in self._together])
        return self._shared[key][self._position].copy()

    def eval_responses(self) -> Responses:
        return self._eval

    def respond(self, index: np.ndarray) -> Responses:
        """The defended victim's answers on ``index`` (this draw); the same records asked again get the same
        answers without another pass (they are one draw's: the noise is seeded by the records and the draw)."""
        d, spec, mech = self.defender, self.spec, self.spec.mechanism_class
        index = np.asarray(index, np.int64)
        digest = hashlib.sha256(index.tobytes()).hexdigest()
        if digest in self._answered:
            return self._answered[digest]
        role = "victim/query/" + digest[:16]
        if isinstance(mech, OutputMechanism):
            out = mech.transform(undefended_answers(d.models, index, d.cache), spec, d._rng(spec, self.draw, role))
        else:
            model = d._noisy("victim", d._victim_model(), d.models.victim.weights, spec, self.draw)
            out = d.task.respond(d.cfg, model, d.models.data, index, record_features=False)
        self._answered[digest] = out
        return out

    def _model(self) -> torch.nn.Module:
        """The model the task's queries run: the undefended victim under an output mechanism (the noise is
        applied to its outputs), else this draw's noisy victim; remembered per input (the defender's ``_remembering``)."""
        d, spec = self.defender, self.spec
        if isinstance(spec.mechanism_class, OutputMechanism):
            return d._remembering(("victim",), d._victim_model())
        model = d._noisy("victim", d._victim_model(), d.models.victim.weights, spec, self.draw)
        return d._remembering((spec.draw_key, "victim", self.draw), model)

    def _augmented(self, kind: str, index: np.ndarray, n: int) -> np.ndarray:
        """The task's ``labels`` or ``augmented`` queries of the defended victim."""
        d = self.defender
        task = d.task
        plain, under = ((task.label_queries, task.label_queries_under) if kind == "labels"
                        else (task.augmented_confidences, task.augmented_confidences_under))
        mech = self.spec.mechanism_class
        if isinstance(mech, OutputMechanism):
            return self._for_every_draw(mech, kind, index, n, lambda transforms: under(
                d.cfg, self._model(), d.models.data, index, n, transforms))
        return plain(d.cfg, self._model(), d.models.data, index, n)

    def label_queries(self, index: np.ndarray, n: int) -> np.ndarray:
        return self._augmented("labels", index, n)

    def augmented_confidences(self, index: np.ndarray, n: int) -> np.ndarray:
        """LiRA's φ under augmented queries of the defended output (the same draw's noise as its labels)."""
        return self._augmented("augmented", index, n)
