"""Defenses that act after training, evaluated on cached models.

A defended *point* is one mechanism at one value (Dir_k's k, the GPM's σ), described by a :class:`DefenseSpec`
that is not part of the experiment config: its key joins the config hash in the cache, so sliding a value
never retrains a model. A point carries:

* attack numbers on the defended victim's evaluation answers, by the **naive** attacker (fitted on undefended
  shadows, the studies' setting) and on request the **adaptive** one (applies the mechanism to its own shadows
  and refits); offline LiRA and RMIA score every point too;
* utility and utility loss L = 1 − M(defended)/M(undefended) (paper 000, Def. 4);
* the guarantee (001 Lemma 1 for Dir_k; 000 eq. 12–13 for the GPM) beside the attack's lower bound ε̂.
"""
from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import asdict
from typing import Any, Callable

import numpy as np
import torch

from core.attacks import registry as attack_registry
from core.attacks.registry import ModelAttack
from core.attacks.shadow_attacks import Attack, RecordFeatureAttack, score_attacks
from core.defenses import dirichlet, gpm  # noqa: F401  (each registers its mechanism)
from core.defenses.adaptive_answers import adaptive_shadow_answers, defended_reference_inputs
from core.defenses.defended_query import DefendedQuery, RememberingModel
from core.defenses.defense_results import DefenseRun, mean_std, per_record_for_json, summarise_draws
from core.defenses.registry import OutputMechanism, WeightMechanism
from core.defenses.sensitivity import SensitivityEstimate, cached_sensitivity, sample_sensitivity
from core.defenses.spec import ATTACKERS, NAIVE_FIELDS, DefenseSpec
from core.experiment.cache import ArtifactCache
from core.experiment.model_attacks import QuantileAttack, UndefendedQuery
from core.experiment.pipeline import ATTACK_FIT_VERSION, AttackVariant, fitted_attack_variants, fitted_attacks
from core.experiment.reference_attacks import (
    ReferenceAttack,
    ReferenceInputs,
    fit_reference_attacks,
    reference_inputs,
    score_reference_attacks,
)
from core.experiment.results import DefendedPoint, DefenseBaseline
from core.experiment.roles import TrainedModels
from core.foundations.errors import ConfigError
from core.measurement.metrics import empirical_epsilon, pooled_empirical_epsilon, utility_loss
from core.measurement.responses import Responses
from core.tasks.base import LogitClassifier

#: part of the cached set-up's key (the baseline and the run's models-stage attacks): raise it when that changes
SETUP_VERSION = "setup1"
#: seconds before a point found missing on disk is looked up again (another session or a worker may store it)
MISS_RECHECK_S = 5.0


def _check_setup(value: Any) -> None:
    """Validate a cached Defender set-up: a typed baseline and {names, quantile} per models-stage attack."""
    if not isinstance(value, dict) or not isinstance(value.get("model_attacks"), list):
        raise ValueError("not a Defender set-up")
    DefenseBaseline.from_dict(value["baseline"])
    for m in value["model_attacks"]:
        if not (isinstance(m, dict) and isinstance(m.get("names"), list) and all(isinstance(n, str) for n in m["names"])
                and isinstance(m.get("quantile"), bool)):
            raise ValueError("a models-stage attack entry is not {names, quantile}")


class Defender:
    """Defended points of one trained config; points with utility are cached on disk, all memoised in memory.

    * :meth:`point` — one defended point, computed or read (memory, then disk);
    * :meth:`cached_point` — the same point if it is memoised or stored, else None: never computes;
    * :meth:`curve` — the slider's curve: each value's fast point, sorted (a utility measured before included);
    * :meth:`table_rows` — each value's best-known point, in order (the full one where it was measured);
    * :meth:`full_points` — the full point (utility included, cached) at each value, in order;
    * :meth:`sensitivity_estimate` — the SensitivitySampler's S for the mechanisms that need it.

    ``baseline`` (the undefended numbers) and ``sensitivity`` (the last estimate) are plain attributes.
    """

    def __init__(self, models: TrainedModels, cache: ArtifactCache | None = None):
        self.models = models
        self.cfg = models.cfg
        self.task = models.task
        self.cache = cache or ArtifactCache()
        self.primary = self.task.primary_attack()
        self.naive_attacks: list[Attack] = fitted_attacks(models, cache=self.cache)
        self.victim_responses: Responses = models.victim.responses[self.cfg.epochs]
        self.membership = models.eval_membership
        self._victim: torch.nn.Module | None = None
        self._shadow_models: dict[int, torch.nn.Module] = {}
        self._directions: dict[tuple[str, str, int, int], Any] = {}
        self._noisy_models: dict[str, dict[tuple[str, int], torch.nn.Module]] = {}
        self._memo: dict[tuple, DefendedPoint] = {}
        self._missing: dict[tuple, float] = {}  # points looked up on disk and not found: when (time.monotonic)
        #: per (value, record features, registry's attacks): the draws' answers, naive outcomes and queries
        self._answers: dict[tuple, tuple[list[Responses], list[dict], list["DefendedQuery"]]] = {}
        self._parts: dict[tuple, dict[str, Any]] = {}
        self._population: dict[tuple, Responses] = {}
        self._utilities: dict[tuple[str, int], tuple[float, float]] = {}  # (members, non-members) per value and draw
        #: forward-pass outputs by input content, per model: see :meth:`_remembering`
        self._forwards: dict[tuple, dict[bytes, torch.Tensor]] = {}
        self.sensitivity: SensitivityEstimate | None = None
        # LiRA and RMIA (need ≥ 2 shadows): inputs and fits from undefended shadows, once
        self.reference_inputs: ReferenceInputs | None = reference_inputs(models, self.cache)
        self.reference_attacks: list[ReferenceAttack] = (
            fit_reference_attacks(self.reference_inputs) if self.reference_inputs is not None else [])
        #: the registry's models-stage attacks (quantile regression, label-only, gap), fitted on first need; their
        #: names are cached with the baseline, so a warm Defender opens without fitting them
        self._model_attacks: list[ModelAttack] | None = None
        self._model_lock = threading.Lock()
        setup_key = self.cache.key("defender_setup", self.cfg.config_hash, ATTACK_FIT_VERSION, SETUP_VERSION)
        stored = self.cache.get_json(setup_key, validate=_check_setup)
        if stored is not None:
            self._model_names: list[tuple[tuple[str, ...], bool]] = [
                (tuple(m["names"]), bool(m["quantile"])) for m in stored["model_attacks"]]
            #: the undefended numbers (``defend``'s ``baseline``)
            self.baseline: DefenseBaseline = DefenseBaseline.from_dict(stored["baseline"])
            return
        last = models.victim.per_epoch[-1]  # typed when it was read (roles: EpochRecord.from_dict)
        undefended = score_attacks(self.naive_attacks, self.victim_responses, self.membership)
        if self.reference_attacks:
            undefended.update(score_reference_attacks(self.reference_attacks, self.victim_responses, self.membership))
        for attack in self._fitted_model_attacks():
            undefended.update(attack.outcomes(UndefendedQuery(models, self.cache)))
        self._model_names = [(tuple(a.names), isinstance(a, QuantileAttack)) for a in self._fitted_model_attacks()]
        self.baseline = DefenseBaseline.from_dict({
            "attack": {"name": self.primary, **undefended[self.primary].result.to_dict(include_roc=False)},
            "attacks": {n: o.result.to_dict(include_roc=False) for n, o in undefended.items()},
            "utility": last.utility_val,
            "utility_train": last.utility_train,
            "utility_metric": self.task.utility_metric,
            "epsilon_lower_bound": empirical_epsilon(undefended[self.primary].scores, self.membership),
        })
        if not self.cache.read_only:
            self.cache.put_json(setup_key, {"baseline": self.baseline.to_dict(), "model_attacks": [
                {"names": list(names), "quantile": q} for names, q in self._model_names]}, allow_nan=False)

    def _fitted_model_attacks(self) -> list[ModelAttack]:
        """The registry's models-stage attacks this run has, fitted once under a lock (page lanes share a Defender)."""
        if self._model_attacks is None:
            with self._model_lock:
                if self._model_attacks is None:
                    fitted = []
                    for entry in attack_registry.entries(self.task.name, "models"):
                        if entry.under_defenses == "registry" and (attack := entry.factory()).fit(self.models,
                                                                                                   self.cache):
                            fitted.append(attack)
                    self._model_attacks = fitted
        return self._model_attacks

    # ------------------------------------------------------------------ models
    def _victim_model(self) -> torch.nn.Module:
        if self._victim is None:
            self._victim = self.models.model("victim")
        return self._victim

    def _shadow_model(self, i: int) -> torch.nn.Module:
        if i not in self._shadow_models:
            self._shadow_models[i] = self.models.model(f"shadow_{i}")
        return self._shadow_models[i]

    def _noisy(self, role: str, model: torch.nn.Module, weights: dict[str, torch.Tensor], spec: DefenseSpec,
               draw: int) -> torch.nn.Module:
        """A copy of ``model`` behind a weight mechanism (for the GPM θ + σ·z_draw); what does not
        depend on the value (the GPM's direction) is fixed per (mechanism, seed, draw, role)."""
        mech = spec.mechanism_class
        if not isinstance(mech, WeightMechanism):
            raise TypeError(f"the {spec.mechanism!r} mechanism does not change weights: its victim is not noisy")
        noisy = self._noisy_models.get(spec.draw_key)
        if noisy is None:
            # one perturbed copy per (role, draw) serves answers, RMIA's population and utility; only the
            # latest value's are kept (a slider visits one value at a time)
            self._noisy_models = {spec.draw_key: {}}
            noisy = self._noisy_models[spec.draw_key]
        if (role, draw) in noisy:
            return noisy[(role, draw)]
        key = (spec.mechanism, role, spec.seed, draw)
        if key not in self._directions:
            seed = int.from_bytes(hashlib.sha256(f"{spec.seed}/{draw}/{role}".encode()).digest()[:8], "little")
            self._directions[key] = mech.prepare(model, seed)
        noisy[(role, draw)] = mech.perturb(model, weights, self._directions[key], spec).eval()
        return noisy[(role, draw)]

    # ------------------------------------------------------------------ sensitivity
    def sensitivity_estimate(self, n: int, compute: bool = True, on_pair=None, executor=None
                             ) -> SensitivityEstimate | None:
        """S from ``n`` SensitivitySampler pairs: from the cache, else trained when ``compute`` (the pairs on
        ``executor`` when given: a process pool or Ray), else None; kept as ``sensitivity`` for the guarantees."""
        if self.sensitivity is not None and self.sensitivity.n == n:
            return self.sensitivity
        est = cached_sensitivity(self.cfg, n, self.cache)
        if est is None and compute:
            est = sample_sensitivity(self.cfg, n, self.cache, on_pair=on_pair, executor=executor)
        self.sensitivity = est
        return est

    # ------------------------------------------------------------------ one point
    def _rng(self, spec: DefenseSpec, draw: int, role: str) -> np.random.Generator:
        return np.random.default_rng([spec.seed, draw, int(hashlib.sha256(role.encode()).hexdigest()[:8], 16)])

    def _torch_generator(self, spec: DefenseSpec, draw: int, role: str) -> torch.Generator:
        return torch.Generator().manual_seed(int(self._rng(spec, draw, role + "/torch").integers(2**62)))

    def _victim_answers(self, spec: DefenseSpec, draw: int, with_record_features: bool) -> Responses:
        """The victim's defended answers on its evaluation set (draw ``draw``)."""
        mech = spec.mechanism_class
        if isinstance(mech, OutputMechanism):
            out = mech.transform(self.victim_responses, spec, self._rng(spec, draw, "victim"))
            if with_record_features:
                transform = mech.torch_transform(spec, self._torch_generator(spec, draw, "victim"))
                out.record_features.update(self.task.record_features_under(
                    self.cfg, self._victim_model(), self.models.data, self.models.splits.eval_index, transform))
            return out
        model = self._noisy("victim", self._victim_model(), self.models.victim.weights, spec, draw)
        # the same records as the label-only attack's first (identity) query of this draw: remembered
        return self.task.respond(self.cfg, self._remembering((spec.draw_key, "victim", draw), model), self.models.data,
                                 self.models.splits.eval_index)

    def _population_answers(self, spec: DefenseSpec, draw: int) -> Responses:
        """The defended victim's answers on RMIA's population (the attacker queries it too);
        memoised per (spec, draw), so the naive and the adaptive attacker share one query."""
        key = (spec.draw_key, draw)
        if key not in self._population:
            inputs = self.reference_inputs
            if inputs is None:
                raise RuntimeError("RMIA's population is asked for, but this run has no reference models "
                                   "(LiRA and RMIA need at least two shadows)")
            mech = spec.mechanism_class
            if isinstance(mech, OutputMechanism):
                out = mech.transform(inputs.population_target, spec, self._rng(spec, draw, "victim/population"))
            else:
                model = self._noisy("victim", self._victim_model(), self.models.victim.weights, spec, draw)
                out = self.task.respond(self.cfg, model, self.models.data, inputs.population_index,
                                        record_features=False)
            if len(self._population) > 64:  # a long slider session: keep memory bounded
                self._population.clear()
            self._population[key] = out
        return self._population[key]

    def _utility(self, spec: DefenseSpec, draw: int) -> tuple[float, float]:
        """(members, non-members) utility of the defended victim on the learning curve's records."""
        splits = self.models.splits
        mech = spec.mechanism_class
        if isinstance(mech, OutputMechanism):
            model = self._victim_model()
            transform = mech.torch_transform(spec, self._torch_generator(spec, draw, "utility"))
            model = self._remembering(("victim",), model)
            return (self.task.utility(self.cfg, model, self.models.data, splits.eval_members, transform),
                    self.task.utility(self.cfg, model, self.models.data, splits.victim_nonmembers, transform))
        # the noisy victim answered these very records for the attack (eval_index = members ++
        # non-members, same draw): where the task reads its utility off answers, no model run again
        answered = self._answers.get((spec.key, True, True)) or self._answers.get((spec.key, True, False))
        n = len(splits.eval_members)
        if answered is not None and draw < len(answered[0]) and np.array_equal(
                splits.eval_index, np.concatenate([splits.eval_members, splits.victim_nonmembers])):
            r = answered[0][draw]
            members = self.task.utility_of_responses(self.cfg, r.subset(np.arange(n)))
            nonmembers = self.task.utility_of_responses(self.cfg, r.subset(np.arange(n, len(r))))
            if members is not None and nonmembers is not None:
                return members, nonmembers
        model = self._noisy("victim", self._victim_model(), self.models.victim.weights, spec, draw)
        return (self.task.utility(self.cfg, model, self.models.data, splits.eval_members),
                self.task.utility(self.cfg, model, self.models.data, splits.victim_nonmembers))

    def _draw_utility(self, spec: DefenseSpec, draw: int) -> tuple[float, float]:
        """:meth:`_utility`, remembered per (value, draw): a full point reuses the one-draw point's draw 0."""
        key = (spec.draw_key, draw)
        if key not in self._utilities:
            if len(self._utilities) > 512:  # a long slider session: keep memory bounded
                self._utilities.clear()
            self._utilities[key] = self._utility(spec, draw)
        return self._utilities[key]

    def _remembering(self, key: tuple, model: torch.nn.Module) -> torch.nn.Module:
        """``model`` answering a forward pass it saw before (same input bytes) from memory.

        A point's draws ask the same model the same inputs; the stored outputs are the tensors the model
        computed, so no number changes. Only for :class:`LogitClassifier` tasks: translation and navigation
        feed each noisy decision back as the next input, so their models run.
        """
        if not isinstance(self.task, LogitClassifier):
            return model
        store = self._forwards.get(key)
        if store is None:
            if len(self._forwards) > 24:  # a long slider session: keep memory bounded
                self._forwards.clear()
            store = self._forwards[key] = {}
        return RememberingModel(model, store)

    def _guarantee(self, spec: DefenseSpec) -> dict[str, Any]:
        """The mechanism's theoretical guarantee at ``spec``'s value."""
        return spec.mechanism_class.guarantee(spec, self.victim_responses.n_classes, self.sensitivity)

    def _full_point_known(self, spec: DefenseSpec, attacker: str = "naive", disk: bool = True
                          ) -> DefendedPoint | None:
        """The full point (with utility) if memoised or (``disk``) cached; never computes."""
        memo = self._memo.get((spec.key, attacker, True))
        if memo is None and not disk:
            return None
        if memo is None:
            stored = self._stored_point(self.cache.key("defended", self.cfg.config_hash, spec.key, attacker), spec)
            if stored is None:
                return None
            memo = self._memo[(spec.key, attacker, True)] = stored
        # the guarantee is cheap and may have changed since (a sensitivity estimated later)
        return memo.with_json(self._guarantee(spec))

    def _stored_point(self, key: str, spec: DefenseSpec) -> DefendedPoint | None:
        """The point cached under ``key`` if it is at ``spec``'s value, typed; else None."""
        stored = self.cache.get_json(key, validate=DefendedPoint.from_dict)
        if not isinstance(stored, dict):
            return None
        point = DefendedPoint.from_dict(stored)
        return point if point.value == spec.value else None

    def _naive(self, spec: DefenseSpec, with_features: bool, quantile: bool = True, registry: bool = True
               ) -> tuple[list[Responses], dict[str, Any]]:
        """The victim's defended answers (one per draw) and the naive attacker's numbers on them, memoised so a
        full point reuses the fast point's work. ``quantile`` / ``registry``: include quantile regression / the
        registry's models-stage attacks (the costly parts); a later call with them adds only theirs."""
        key = (spec.key, with_features, registry)
        if key not in self._answers:
            draws = self._draws(spec, with_features, registry)
            if len(self._answers) > 64:  # a long slider session: keep memory bounded
                self._answers.clear()
                self._parts.clear()
            self._answers[key] = draws
        part_key = (*key, bool(quantile and registry and any(q for _, q in self._model_names)))
        if part_key not in self._parts:
            answers, outcomes, queries = self._answers[key]
            if part_key[-1]:
                outcomes = [dict(out) for out in outcomes]
                for query, out in zip(queries, outcomes):
                    for quantile_attack in self._quantile_attacks():
                        out.update(quantile_attack.outcomes(query))
            attack, attacks = summarise_draws([{n: o.result for n, o in out.items()} for out in outcomes], self.primary)
            # one 95 % lower bound over every draw's trials pooled (the mean of per-draw bounds is no bound)
            eps_hat = pooled_empirical_epsilon(np.stack([out[self.primary].scores for out in outcomes]),
                                               self.membership)
            # the fields of NAIVE_FIELDS, in their order
            self._parts[part_key] = {
                "attack": attack, "attacks": attacks,
                "epsilon_lower_bound": eps_hat.lower_bound,
                "epsilon_lower_bound_detail": eps_hat,
                "records": {"ape": per_record_for_json(answers[0].ape),
                            "cross_entropy": per_record_for_json(answers[0].mean_cross_entropy),
                            "membership": np.asarray(self.membership, bool).tolist(),
                            # the naive attacks' per-record scores on draw 0 (the "why" scatter under defense)
                            "scores": {n: per_record_for_json(o.scores) for n, o in outcomes[0].items()}}}
        return self._answers[key][0], self._parts[part_key]

    def _draws(self, spec: DefenseSpec, with_features: bool, registry: bool
               ) -> tuple[list[Responses], list[dict[str, Any]], list[DefendedQuery]]:
        """Every draw's defended answers, naive outcomes (with ``registry`` the registry's attacks but quantile
        regression) and queries. Earlier work is reused: the same draws without the registry's attacks, or the
        one-draw point's draw 0 (a draw's noise is seeded by (seed, draw, role), not by the number of draws)."""
        earlier = [(spec.key, False)] if registry else []
        if spec.draws > 1:
            earlier += [(spec.draw_key, registry)] + ([(spec.draw_key, False)] if registry else [])
        answers: list[Responses] = []
        outcomes: list[dict[str, Any]] = []
        queries: list[DefendedQuery] = []
        scored = 0  # how many of the draws carry the registry's attacks' outcomes
        for k, with_registry in earlier:
            if (prior := self._answers.get((k, with_features, with_registry))) is not None:
                answers, outcomes, queries = list(prior[0]), [dict(o) for o in prior[1]], list(prior[2])
                scored = len(answers) if with_registry else 0
                break
        start = len(answers)
        # an output mechanism changes output-dependent record features: the model re-runs
        features = isinstance(spec.mechanism_class, OutputMechanism) and with_features
        new = [self._victim_answers(spec, d, features) for d in range(start, spec.draws)]
        attacks = [a for a in self.naive_attacks if with_features or not isinstance(a, RecordFeatureAttack)]
        outcomes += [score_attacks(attacks, r, self.membership) for r in new]
        if self.reference_attacks:
            for d, r in enumerate(new, start):
                outcomes[d].update(score_reference_attacks(self.reference_attacks, r, self.membership,
                                                           self._population_answers(spec, d)))
        # the draws' label and augmented queries asked together (the victim answers each once for all draws)
        queries += DefendedQuery.draws(self, spec, new, start)
        answers += new
        if registry:
            for query, out in zip(queries[scored:], outcomes[scored:]):
                for attack in self._fitted_model_attacks():
                    if not isinstance(attack, QuantileAttack):
                        out.update(attack.outcomes(query))
        return answers, outcomes, queries

    def _quantile_attacks(self) -> list[ModelAttack]:
        """The fitted quantile-regression attacks (none where the task offers no record features for it)."""
        return [a for a in self._fitted_model_attacks() if isinstance(a, QuantileAttack)]

    def _flags(self, spec: DefenseSpec, attacker: str, utility: bool, quantile: bool | None, registry: bool
               ) -> tuple[bool, bool]:
        """``spec`` and ``attacker`` checked, and whether quantile regression and the registry's attacks are scored
        (:meth:`point`'s rule)."""
        spec.validate()
        if attacker not in ATTACKERS:
            raise ConfigError(f"attacker must be one of {', '.join(ATTACKERS)}, got {attacker!r}")
        quantile = utility if quantile is None else bool(quantile)
        has_quantile = any(q for _, q in self._model_names)
        if self.primary == "quantile" or not has_quantile:
            quantile = True  # nothing to leave out (or the headline attack itself)
        registry = bool(registry) or not self._model_names or any(self.primary in n for n, _ in self._model_names)
        return (quantile and registry) or not has_quantile, registry

    def _known(self, spec: DefenseSpec, attacker: str, utility: bool, quantile: bool, registry: bool = True,
               disk: bool = True) -> tuple[tuple, str | None, DefendedPoint | None]:
        """(memo key, the fast point's disk key or None, the point if memoised or (``disk``) stored, else None)."""
        memo_key: tuple[str | bool, ...]
        memo_key = (spec.key, attacker, utility) if quantile == utility else (spec.key, attacker, utility, quantile)
        memo_key += () if registry else ("no registry",)
        if memo_key in self._memo:
            return memo_key, None, self._memo[memo_key].with_json(self._guarantee(spec))
        if utility and (stored := self._full_point_known(spec, attacker, disk)) is not None:
            return memo_key, None, stored
        # the slider's fast points and the utility card's point are cached too, each variant under its own key,
        # so a new session reads a curve instead of recomputing it
        if utility and not quantile and registry and attacker == "naive":
            fast_key: str | None = self.cache.key("defended_utility_noquantile", self.cfg.config_hash, spec.key)
        else:
            fast_key = (self.cache.key("defended_fast_noregistry" if not registry else
                                       "defended_fast" if quantile else "defended_fast_noquantile", self.cfg.config_hash,
                                       spec.key)
                        if not utility and attacker == "naive" else None)
        if fast_key is not None and disk and (stored := self._stored_point(fast_key, spec)) is not None:
            self._memo[memo_key] = stored
            return memo_key, fast_key, stored.with_json(self._guarantee(spec))
        return memo_key, fast_key, None

    def cached_point(self, spec: DefenseSpec, attacker: str = "naive", utility: bool = True,
                     quantile: bool | None = None, registry: bool = True, disk: bool = True) -> DefendedPoint | None:
        """:meth:`point`'s answer (same arguments) if memoised or, with ``disk``, stored; else None. Never computes."""
        quantile, registry = self._flags(spec, attacker, utility, quantile, registry)
        return self._known(spec, attacker, utility, quantile, registry, disk)[2]

    def point(self, spec: DefenseSpec, attacker: str = "naive", utility: bool = True,
              quantile: bool | None = None, registry: bool = True) -> DefendedPoint:
        """Attack numbers, utility and guarantees at one defended point.

        ``attacker``: ``naive``, ``adaptive`` or ``both``. ``utility=False`` is the slider's fast path: no utility,
        and attacks on output-dependent record features are skipped. ``quantile`` (default: ``utility``) scores
        quantile regression; ``registry=False`` leaves out every registry models-stage attack. Skipped attacks are
        listed in ``skipped_attacks``; only the full point (utility, quantile, registry) is cached as ``defended``.
        """
        quantile, registry = self._flags(spec, attacker, utility, quantile, registry)
        memo_key, fast_key, known = self._known(spec, attacker, utility, quantile, registry)
        if known is not None:
            return known
        disk_key = self.cache.key("defended", self.cfg.config_hash, spec.key, attacker)
        timings: dict[str, float] = {}
        t = time.perf_counter()
        has_features = any(isinstance(a, RecordFeatureAttack) for a in self.naive_attacks)
        # under an output mechanism (Dir_k), record features (BLEU of a noisy decoding) need the model
        # re-run: only with utility; a weight mechanism's model answers them as it answers anyway
        with_features = isinstance(spec.mechanism_class, WeightMechanism) or utility or not has_features
        skip = set() if with_features else {a.name for a in self.naive_attacks if isinstance(a, RecordFeatureAttack)}
        if not quantile:
            skip |= {n for names, q in self._model_names if q for n in names}
        if not registry:
            skip |= {n for names, _ in self._model_names for n in names}
        # a known fast point with the same naive numbers (none skipped that this point scores): compute utility only
        fast = next((p for k in ((spec.key, "naive", False), (spec.key, "naive", False, True))
                     if (p := self._memo.get(k)) is not None and set(p.skipped_attacks or ()) <= skip), None)
        computed = (spec.key, with_features, registry) in self._answers
        answers: list[Responses]
        if utility and attacker == "naive" and fast is not None and not computed:
            stored = fast.to_dict()
            answers, naive_part = [], {k: stored[k] for k in NAIVE_FIELDS if k in stored}
        else:
            answers, naive_part = self._naive(spec, with_features, quantile, registry)
        point: dict[str, Any] = {"value": spec.value, "mechanism": spec.mechanism, "draws": spec.draws, **naive_part}
        if attacker == "adaptive":
            point.pop("attack"), point.pop("attacks")
        timings["attack_s"] = time.perf_counter() - t
        point.update(adaptive_attack=None)
        if attacker in ("adaptive", "both"):
            t = time.perf_counter()
            per_draw = []
            # the draws' attacks are fitted together (the same shadow records under each draw)
            fitted = fitted_attack_variants(self.models, [
                AttackVariant(tag=f"{spec.key}/draw{d}", shadow_responses=adaptive_shadow_answers(self, spec, d))
                for d in range(spec.draws)], cache=self.cache)
            for d in range(spec.draws):
                attacks = [a for a in fitted[d] if a.name not in skip]
                outcome = score_attacks(attacks, answers[d], self.membership)
                if self.reference_attacks:
                    inputs = defended_reference_inputs(self, spec, d, answers[d], self._population_answers(spec, d))
                    outcome.update(score_reference_attacks(fit_reference_attacks(inputs), answers[d], self.membership))
                per_draw.append({n: o.result for n, o in outcome.items()})
            adaptive_attack, adaptive_attacks = summarise_draws(per_draw, self.primary)
            point.update(adaptive_attack=adaptive_attack, adaptive_attacks=adaptive_attacks)
            if attacker == "adaptive":
                point.update(attack=adaptive_attack, attacks=adaptive_attacks)
            timings["adaptive_s"] = time.perf_counter() - t
        point.update(self._guarantee(spec))
        if utility:
            t = time.perf_counter()
            values = [self._draw_utility(spec, d) for d in range(spec.draws)]
            u_train, u_train_std = mean_std([v[0] for v in values])
            u_val, u_val_std = mean_std([v[1] for v in values])
            point.update(utility_train=u_train, utility_train_std=u_train_std, utility=u_val, utility_std=u_val_std,
                         utility_loss=utility_loss(u_val, self.baseline.utility),
                         utility_loss_train=utility_loss(u_train, self.baseline.utility_train))
            timings["utility_s"] = time.perf_counter() - t
        else:
            point.update(utility=None, utility_train=None, utility_loss=None, utility_loss_train=None)
        # what this point leaves out and does not carry (a fast point read for the utility card may carry more)
        point.update(timings=timings, skipped_attacks=sorted(skip - set(point.get("attacks") or ())))
        # typed as it is born: checked against the layout before it is stored or returned
        typed = DefendedPoint.from_dict(point)
        if utility and quantile and registry:
            self.cache.put_json(disk_key, typed.to_dict(), allow_nan=False)
        elif fast_key is not None and not self.cache.read_only:  # a read-only cache still serves the slider
            self.cache.put_json(fast_key, typed.to_dict(), allow_nan=False)
        self._memo[memo_key] = typed
        return typed

    # ------------------------------------------------------------------ over a grid
    def curve(self, spec: DefenseSpec, values: list[float]) -> list[DefendedPoint]:
        """The fast (naive, no utility) point at every value, sorted; a full point known in memory instead."""
        return [self._full_point_known(spec.at(v), disk=False) or self._slider_utility(spec.at(v))
                or self.point(spec.at(v), "naive", utility=False) for v in sorted(set(values))]

    def full_points(self, spec: DefenseSpec, values: list[float], attacker: str = "naive",
                    on_point: Callable[[int, int], None] | None = None) -> list[DefendedPoint]:
        """The full point (utility included, cached) at every value, in order; ``on_point(i, n)`` after each."""
        out = []
        for i, v in enumerate(values):
            out.append(self.point(spec.at(v).validate(), attacker, utility=True))
            if on_point is not None:
                on_point(i + 1, len(values))
        return out

    def table_rows(self, spec: DefenseSpec, values: list[float]) -> list[DefendedPoint]:
        """Every value's best-known point, in order: the full one (with the adaptive attacker where known), else
        the fast point (computed if no session did)."""
        return [self._full_point_known(spec.at(v), "both") or self._full_point_known(spec.at(v))
                or self._slider_utility(spec.at(v)) or self.point(spec.at(v), "naive", utility=False) for v in values]

    def _slider_utility(self, spec: DefenseSpec) -> DefendedPoint | None:
        """The utility card's point of ``spec`` (utility, no quantile regression) if memoised or cached, else None."""
        memo_key = (spec.key, "naive", True, False)
        memo = self._memo.get(memo_key)
        if memo is None:
            # a value no session visited is looked up again only after a while (a curve asks every value each step)
            missed = self._missing.get(memo_key)
            if missed is not None and time.monotonic() - missed < MISS_RECHECK_S:
                return None
            memo = self._stored_point(self.cache.key("defended_utility_noquantile", self.cfg.config_hash, spec.key),
                                      spec)
            if memo is None:
                if len(self._missing) > 4096:
                    self._missing.clear()
                self._missing[memo_key] = time.monotonic()
                return None
            self._memo[memo_key] = memo
        return memo.with_json(self._guarantee(spec))


def defense_run(models: TrainedModels, mechanism: str, values: list[float], attacker: str = "naive", draws: int = 1,
                sensitivity_samples: int = 0, cache: ArtifactCache | None = None, seed: int = 0,
                on_point=None, on_pair=None, executor=None) -> DefenseRun:
    """The CLI's ``defend`` result, typed: the baseline and one point per value (see README)."""
    defender = Defender(models, cache)
    spec = DefenseSpec(mechanism, float(values[0]) if values else 1.0, draws=draws, seed=seed).validate()
    if spec.mechanism_class.needs_sensitivity and sensitivity_samples > 0:
        defender.sensitivity_estimate(sensitivity_samples, on_pair=on_pair, executor=executor)
    points = defender.full_points(spec, list(values), attacker, on_point)
    cfg = models.cfg
    return DefenseRun.from_dict({
        "task": cfg.task, "arch": cfg.arch, "preset": cfg.preset, "mechanism": mechanism, "attacker": attacker,
        "config_hash": cfg.config_hash, "training_hash": cfg.training_hash, "spec": asdict(spec),
        "sensitivity": defender.sensitivity.to_dict() if defender.sensitivity else None,
        "baseline": defender.baseline.to_dict(), "points": [p.to_dict() for p in points]})
