"""The models-stage attacks of the registry (:mod:`core.attacks.registry`), registered below their definitions.

They need more than the victim's stored answers, so they are fitted once on the trained models at the final
epoch and then score any :class:`~core.attacks.registry.VictimQuery` (:class:`UndefendedQuery` here, a defended
victim in :mod:`core.defenses.defender`).

* ``reference`` — offline LiRA and RMIA (:mod:`core.experiment.reference_attacks`), fitted together.
* ``quantile`` — quantile regression (Bertran et al., NeurIPS 2023): the regressor is fitted on the victim's
  answers on attacker-half records it never trained on, from the records' own features; no shadow model.
  Under a defense the attacker queries the defended victim on its pool and refits (warm-started,
  :data:`DEFENDED_REFIT_STEPS`).
* ``label_only`` — Choquette-Choo et al. 2021: the count of correct labels over augmented queries, the
  threshold fitted on the shadows; and the **gap** attack (correct ⇒ member). Under a defense the labels are
  the argmax of the defended output, the threshold stays the undefended one (the naive attacker).
"""
from __future__ import annotations

import time
from typing import Any, TypeVar

import numpy as np

from core.attacks.augmented_lira import augmented_lira_scores, pooled_covariance
from core.attacks.label_only import GAP_THRESHOLD, LABEL_QUERIES, correct_counts, fit_count_threshold, gap_scores
from core.attacks.quantile import QUANTILE_ALPHA, QuantileRegressor, QuantileTraining, quantile_scores
from core.attacks.registry import AttackEntry, VictimQuery, register, seal_builtins
from core.attacks.sequence_scores import reference_ratio_scores
from core.attacks.shadow_attacks import AttackOutcome
from core.experiment.answer_memo import concat_arrays, take_arrays
from core.experiment.cache import ArtifactCache, tensor_shapes
from core.experiment.reference_attacks import (
    LIRA,
    RMIA,
    ReferenceAttack,
    fit_reference_attacks,
    online_reference_plan,
    record_mean,
    reference_inputs,
    score_reference_attacks,
    step_logit_confidence,
    victim_answers,
)
from core.experiment.roles import TrainedModels, model_from_weights, reference_answers
from core.foundations.errors import ConfigError
from core.measurement.metrics import best_threshold, evaluate_attack
from core.measurement.responses import Responses

#: at most this many attacker-half records form the quantile regressor's non-member pool
QUANTILE_POOL = 2000
#: steps of the refit on a defended victim's pool answers (warm-started; a slider point has up to 8 draws)
DEFENDED_REFIT_STEPS = 150

_T = TypeVar("_T")


def _fitted(value: _T | None, what: str) -> _T:
    """``value``, set by a successful ``fit``: an attack scores only once fitted (a skipped one is not asked)."""
    if value is None:
        raise RuntimeError(f"{what} is asked for its outcomes before a successful fit")
    return value


class UndefendedQuery:
    """The trained victim as the pipeline queries it (answers cached like RMIA's population)."""

    defended = False

    def __init__(self, models: TrainedModels, cache: ArtifactCache | None = None):
        self.models, self.cache = models, cache or ArtifactCache()
        self.eval_index = models.splits.eval_index
        self.membership = models.eval_membership
        self._model: Any = None  # the victim, built on first query

    def eval_responses(self) -> Responses:
        return self.models.victim.responses[self.models.cfg.epochs]

    def respond(self, index: np.ndarray) -> Responses:
        return victim_answers(self.models, index, self.cache)

    def _augmented(self, index: np.ndarray, n: int, which: int) -> np.ndarray:
        if self.models.memo is not None:
            return augmented_answers(self.models, "victim", index, n, which)
        if self._model is None:
            self._model = self.models.model("victim")
        ask = self.models.task.augmented_confidences if which else self.models.task.label_queries
        return ask(self.models.cfg, self._model, self.models.data, index, n)

    def label_queries(self, index: np.ndarray, n: int) -> np.ndarray:
        return self._augmented(index, n, 0)

    def augmented_confidences(self, index: np.ndarray, n: int) -> np.ndarray:
        return self._augmented(index, n, 1)


def augmented_answers(models: TrainedModels, role: str, index: np.ndarray, n: int, which: int) -> np.ndarray:
    """``role``'s model on the ``n`` augmented queries of records ``index`` through the memo: ``which`` 0, the
    correct labels (:meth:`~core.tasks.base.Task.label_queries`), 1, φ
    (:meth:`~core.tasks.base.Task.augmented_confidences`); both from one pass where the task can."""
    task, cfg, data, memo = models.task, models.cfg, models.data, models.memo
    if memo is None:
        raise RuntimeError("augmented_answers reads through the answer memo, and this run has none")
    if task.augmented_in_one_pass:
        def both(records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return task.augmented_answers(cfg, models.model(role), data, records, n)

        return memo.rows(("augmented", role, n), index, both, concat_arrays, take_arrays)[which]
    ask = task.augmented_confidences if which else task.label_queries

    def one(records: np.ndarray) -> tuple[np.ndarray]:
        return (ask(cfg, models.model(role), data, records, n),)

    return memo.rows(("augmented", which, role, n), index, one, concat_arrays, take_arrays)[0]


def record_score(r: Responses) -> np.ndarray:
    """(N,) the per-record score the quantile attack thresholds: LiRA's logit-scaled confidence of
    the reference, averaged over the record's steps (one step for an image)."""
    return record_mean(r, step_logit_confidence(r))


# ---------------------------------------------------------------------------- LiRA and RMIA
class ReferenceFamily:
    """Offline LiRA and RMIA as one models-stage attack (they share the reference answers)."""

    names = (LIRA, RMIA)

    def __init__(self) -> None:
        self.skipped, self.fit_s = "", 0.0
        self.attacks: list[ReferenceAttack] = []
        self.population_index: np.ndarray | None = None

    def fit(self, models: TrainedModels, cache: Any) -> bool:
        t = time.perf_counter()
        inputs = reference_inputs(models, cache)
        if inputs is None:
            self.skipped = "LiRA and RMIA need at least two shadow (reference) models"
            return False
        self.attacks, self.population_index = fit_reference_attacks(inputs), inputs.population_index
        self.fit_s = time.perf_counter() - t
        return True

    def outcomes(self, query: VictimQuery) -> dict[str, AttackOutcome]:
        population = (query.respond(_fitted(self.population_index, "LiRA and RMIA"))
                      if getattr(query, "defended", True) else None)
        return score_reference_attacks(self.attacks, query.eval_responses(), query.membership, population)


# ---------------------------------------------------------------------------- quantile regression
def quantile_pool(models: TrainedModels, size: int = QUANTILE_POOL) -> np.ndarray:
    """The non-member pool: a seeded choice of up to ``size`` attacker-half records (the victim never
    trained on the attacker's half; with a user's model its listed members are removed from it)."""
    pool = np.asarray(models.data.attacker_pool, np.int64)
    rng = np.random.default_rng([models.cfg.seed, 0x0A17])
    return np.sort(rng.permutation(pool)[: min(size, len(pool))])


class QuantileAttack:
    """Quantile regression against the victim; member iff its score exceeds the predicted (1 − α) quantile."""

    names = ("quantile",)

    def __init__(self, alpha: float = QUANTILE_ALPHA) -> None:
        self.alpha = alpha
        self.skipped, self.fit_s = "", 0.0
        self.regressor: QuantileRegressor | None = None

    def _fit_on(self, pool_answers: Responses) -> QuantileRegressor:
        return QuantileRegressor(self.alpha, QuantileTraining(seed=self.seed)).fit(
            self.pool_features, record_score(pool_answers))

    def fit(self, models: TrainedModels, cache: Any) -> bool:
        t = time.perf_counter()
        task, cfg, data = models.task, models.cfg, models.data
        self.pool = quantile_pool(models)
        self.seed = cfg.seed
        features = task.attack_features(cfg, data, self.pool)
        if features is None:
            self.skipped = (f"the {task.name} task offers no model-independent record features "
                            "(Task.attack_features) for the regressor")
            return False
        self.pool_features = features
        eval_features = task.attack_features(cfg, data, models.splits.eval_index)
        if eval_features is None:
            raise ValueError(f"the {task.name} task gave record features (Task.attack_features) for the attacker's "
                             "pool but none for the evaluation records")
        self.eval_features = eval_features
        self.regressor = self._fit_on(victim_answers(models, self.pool, cache))
        self.fit_s = time.perf_counter() - t
        return True

    def outcomes(self, query: VictimQuery) -> dict[str, AttackOutcome]:
        # a defended victim is what the attacker can query: it refits on the defended answers on its pool
        regressor = _fitted(self.regressor, "quantile regression")
        if getattr(query, "defended", True):  # from the undefended fit's weights: the same objective, fewer steps
            regressor = regressor.refit(self.pool_features, record_score(query.respond(self.pool)), DEFENDED_REFIT_STEPS)
        scores = quantile_scores(record_score(query.eval_responses()), regressor.predict(self.eval_features))
        scores = np.where(np.isfinite(scores), scores, -np.inf)
        return {"quantile": AttackOutcome(evaluate_attack("quantile", scores, query.membership, 0.0), scores)}


# ---------------------------------------------------------------------------- label-only and the gap attack
class LabelOnlyAttack:
    """The correct-label count over augmented queries (threshold from the shadows) and the gap attack."""

    names = ("label_only", "gap")

    def __init__(self, n: int = LABEL_QUERIES) -> None:
        self.n = n
        self.skipped, self.fit_s = "", 0.0
        self.threshold = float("nan")

    def fit(self, models: TrainedModels, cache: Any) -> bool:
        t = time.perf_counter()
        if not models.shadows:
            self.skipped = "the label-only threshold is fitted on shadow models; this run has none"
            return False
        def correct_of(i: int) -> np.ndarray:
            if models.memo is not None:
                return augmented_answers(models, f"shadow_{i}", models.shadow_query_index(i), self.n, 0)
            return models.task.label_queries(models.cfg, models.model(f"shadow_{i}"), models.data,
                                             models.shadow_query_index(i), self.n)

        try:
            correct = np.concatenate([correct_of(i) for i in range(len(models.shadows))])
        except ConfigError as exc:  # the task offers no label queries: say why
            self.skipped = str(exc)
            return False
        self.threshold = fit_count_threshold(correct, models.shadow_membership)
        self.fit_s = time.perf_counter() - t
        return True

    def outcomes(self, query: VictimQuery) -> dict[str, AttackOutcome]:
        correct = query.label_queries(query.eval_index, self.n)
        counts, gap = correct_counts(correct), gap_scores(correct)
        return {"label_only": AttackOutcome(evaluate_attack("label_only", counts, query.membership, self.threshold),
                                            counts),
                "gap": AttackOutcome(evaluate_attack("gap", gap, query.membership, GAP_THRESHOLD), gap)}


# ---------------------------------------------------------------------------- the reference ratio
class ReferenceRatioAttack:
    """The victim's mean token NLL minus the mean NLL of the shadows that did not train on the record
    (Carlini et al. 2021 §5.1). The threshold is fitted with each shadow in turn as the target on its own
    in/out records and the others as its references; under a defense the references stay undefended.
    """

    names = ("reference_ratio",)

    def __init__(self) -> None:
        self.skipped, self.fit_s = "", 0.0
        self.threshold = float("nan")
        self.reference_loss: np.ndarray | None = None
        self.reference_out: np.ndarray | None = None

    @staticmethod
    def _out_mask(models: TrainedModels, index: np.ndarray, exclude: int | None = None) -> np.ndarray:
        return np.stack([~np.isin(index, models.splits.shadow_in[k]) & (k != exclude)
                         for k in range(len(models.shadows))])

    def fit(self, models: TrainedModels, cache: Any) -> bool:
        t = time.perf_counter()
        if len(models.shadows) < 2:
            self.skipped = ("the reference ratio's threshold is fitted with one shadow as the target and the others "
                            "as its references: it needs at least two shadow models")
            return False
        epoch, scores, membership = models.cfg.epochs, [], []
        n = 2 * models.cfg.n_eval
        for j in range(len(models.shadows)):
            query = models.shadow_query_index(j)
            refs = np.stack([r.mean_cross_entropy for r in reference_answers(models, query, cache)])
            own = models.shadows[j].responses[epoch].mean_cross_entropy
            scores.append(reference_ratio_scores(own, refs, self._out_mask(models, query, exclude=j)))
            membership.append(np.asarray(models.shadow_membership[j * n : (j + 1) * n], bool))
        scores_all, member_all = np.concatenate(scores), np.concatenate(membership)
        ok = np.isfinite(scores_all)
        if ok.sum() == 0 or member_all[ok].all() or not member_all[ok].any():
            self.skipped = "no shadow record has another shadow that did not train on it and both classes"
            return False
        self.threshold = best_threshold(scores_all[ok], member_all[ok])
        eval_index = models.splits.eval_index
        self.reference_loss = np.stack([r.mean_cross_entropy for r in reference_answers(models, eval_index, cache)])
        self.reference_out = self._out_mask(models, eval_index)
        self.fit_s = time.perf_counter() - t
        return True

    def outcomes(self, query: VictimQuery) -> dict[str, AttackOutcome]:
        scores = reference_ratio_scores(query.eval_responses().mean_cross_entropy,
                                        _fitted(self.reference_loss, "the reference ratio"),
                                        _fitted(self.reference_out, "the reference ratio"))
        scores = np.where(np.isfinite(scores), scores, -np.inf)
        return {"reference_ratio": AttackOutcome(
            evaluate_attack("reference_ratio", scores, query.membership, self.threshold), scores)}


# ---------------------------------------------------------------------------- LiRA with augmented queries
#: the offline one's name, and the online one's (IN references: the online LiRA models, when trained)
LIRA_AUGMENTED, LIRA_AUGMENTED_ONLINE = "lira_augmented", "lira_augmented_online"
#: the most online reference models looked up in the cache (``--online-lira`` allows 2..64)
ONLINE_LOOKUP = 64
#: |φ| beyond this is clipped in the target's signal (a defended output of exactly 0 or 1)
_PHI_CLIP = 1e4


def _phi(task: Any, models: TrainedModels, model: Any, index: np.ndarray, n: int, role: str | None = None) -> np.ndarray:
    """φ of ``model`` on the augmented queries of ``index``; a shadow's (``role``) through the memo when set."""
    if role is not None and models.memo is not None:
        return augmented_answers(models, role, index, n, 1)
    return task.augmented_confidences(models.cfg, model, models.data, index, n)


class AugmentedLiRA:
    """Offline LiRA with augmented queries (:mod:`core.attacks.augmented_lira`): the shadows (all OUT) give
    μ_out and Σ_out on the victim's evaluation records; the threshold is fitted on the shadows as for plain
    offline LiRA. Under a defense references and threshold stay undefended (the naive attacker)."""

    names = (LIRA_AUGMENTED,)

    def __init__(self, n: int = LABEL_QUERIES, covariance: str = "diagonal") -> None:
        self.n, self.covariance = n, covariance
        self.skipped, self.fit_s = "", 0.0
        self.threshold = float("nan")

    def _shadow_models(self, models: TrainedModels) -> list[Any]:
        if models.memo is not None:  # built when a question needs them (none may: answers read back)
            return [None] * len(models.shadows)
        return [models.model(f"shadow_{i}") for i in range(len(models.shadows))]

    def fit(self, models: TrainedModels, cache: Any) -> bool:
        t = time.perf_counter()
        if len(models.shadows) < 2:
            self.skipped = ("LiRA with augmented queries needs at least two shadow (reference) models: one shadow as "
                            "the target and the others as its references fit the threshold")
            return False
        task, eval_index = models.task, models.splits.eval_index
        shadows = self._shadow_models(models)
        try:
            self.refs = np.stack([_phi(task, models, m, eval_index, self.n, f"shadow_{i}")
                                  for i, m in enumerate(shadows)])
        except ConfigError as exc:  # the task offers no augmented queries: say why
            self.skipped = str(exc)
            return False
        self.outs = np.ones(self.refs.shape[:2], bool)
        cov = pooled_covariance(self.refs, self.outs)
        if cov is None:  # every shadow is OUT on every record (≥ 2 of them): only without evaluation records
            raise ValueError("LiRA with augmented queries needs evaluation records: the victim has none")
        self.cov = cov
        # the threshold: each shadow the target on its own query records, the others its OUT references
        queries = [models.shadow_query_index(k) for k in range(len(shadows))]
        union = np.unique(np.concatenate(queries))
        phi_union = [_phi(task, models, m, union, self.n, f"shadow_{i}") for i, m in enumerate(shadows)]
        scores = []
        for k, q in enumerate(queries):
            pos = np.searchsorted(union, q)
            refs = np.stack([phi_union[j][pos] for j in range(len(shadows)) if j != k])
            outs = np.stack([~np.isin(q, models.splits.shadow_in[j]) for j in range(len(shadows)) if j != k])
            s, _ = augmented_lira_scores(phi_union[k][pos], refs, np.zeros_like(outs), outs, self.covariance,
                                         shared=(cov, None))
            scores.append(s)
        cal, member = np.concatenate(scores), np.asarray(models.shadow_membership, bool)
        ok = np.isfinite(cal)
        if not ok.any() or member[ok].all() or not member[ok].any():
            self.skipped = "no shadow record has another shadow that did not train on it, in both classes"
            return False
        self.threshold = best_threshold(cal[ok], member[ok])
        self.fit_s = time.perf_counter() - t
        return True

    def score(self, phi_target: np.ndarray, refs: np.ndarray, ins: np.ndarray, outs: np.ndarray,
              shared: tuple[np.ndarray, np.ndarray | None]) -> np.ndarray:
        scores, _ = augmented_lira_scores(np.clip(phi_target, -_PHI_CLIP, _PHI_CLIP), refs, ins, outs,
                                          self.covariance, shared=shared)
        return np.where(np.isfinite(scores), scores, -np.inf)

    def outcomes(self, query: VictimQuery) -> dict[str, AttackOutcome]:
        phi = query.augmented_confidences(query.eval_index, self.n)
        scores = self.score(phi, self.refs, np.zeros_like(self.outs), self.outs, (self.cov, None))
        return {LIRA_AUGMENTED: AttackOutcome(
            evaluate_attack(LIRA_AUGMENTED, scores, query.membership, self.threshold), scores)}


def cached_online_models(models: TrainedModels, cache: Any, limit: int = ONLINE_LOOKUP
                         ) -> list[tuple[Any, np.ndarray]]:
    """The cached online LiRA reference models of this run (model 0, 1, … until the first missing one), each
    with its (N,) mask of the evaluation records it trained on. Nothing is trained here."""
    cache = cache or ArtifactCache()
    plan = online_reference_plan(models, cache)
    expected = tensor_shapes(models.task.build_model(models.cfg, models.data).state_dict())
    out = []
    for m in range(limit):
        _, _, chosen, key_w = plan(m)
        weights = cache.get_tensors(key_w, expected=expected, require_finite=True)
        if weights is None:
            break
        mask = np.zeros(len(models.splits.eval_index), bool)
        mask[chosen] = True
        out.append((model_from_weights(models.task, models.cfg, weights, models.data), mask))
    return out


class AugmentedLiRAOnline(AugmentedLiRA):
    """Online LiRA with augmented queries (online LiRA's stronger threat model): the references are the cached
    online LiRA models (``--online-lira N``, IN for about half the evaluation records) and the shadows (OUT);
    the joint log-likelihood ratio, threshold 0. It trains nothing: without those models it is skipped."""

    names = (LIRA_AUGMENTED_ONLINE,)

    def fit(self, models: TrainedModels, cache: Any) -> bool:
        t = time.perf_counter()
        task, eval_index = models.task, models.splits.eval_index
        online = cached_online_models(models, cache)
        if len(online) < 2:
            self.skipped = ("needs the online LiRA reference models (IN models trained on the victim's evaluation "
                            "records), which this run has not trained: run with --online-lira N (N ≥ 2) first; "
                            "they are cached and this attack then reads them")
            return False
        try:
            phis = [_phi(task, models, m, eval_index, self.n) for m, _ in online]
            phis += [_phi(task, models, m, eval_index, self.n, f"shadow_{i}")
                     for i, m in enumerate(self._shadow_models(models))]
        except ConfigError as exc:
            self.skipped = str(exc)
            return False
        self.refs = np.stack(phis)
        n_sh = len(phis) - len(online)
        self.ins = np.r_[np.stack([mask for _, mask in online]), np.zeros((n_sh, len(eval_index)), bool)]
        self.outs = ~self.ins
        cov_out = pooled_covariance(self.refs, self.outs)
        self.cov_in = pooled_covariance(self.refs, self.ins)
        if cov_out is None:
            self.skipped = "no evaluation record has two reference models that did not train on it"
            return False
        self.cov_out = cov_out
        self.threshold = 0.0
        self.fit_s = time.perf_counter() - t
        return True

    def outcomes(self, query: VictimQuery) -> dict[str, AttackOutcome]:
        phi = query.augmented_confidences(query.eval_index, self.n)
        scores = self.score(phi, self.refs, self.ins, self.outs, (self.cov_out, self.cov_in))
        return {LIRA_AUGMENTED_ONLINE: AttackOutcome(
            evaluate_attack(LIRA_AUGMENTED_ONLINE, scores, query.membership, self.threshold), scores)}


_NOT_TOKENS = ("one answer per record: the victim's loss minus the references' mean loss is offline LiRA's "
               "signal without its Gaussian; the reference ratio is registered for token sequences")
_NO_LABELS = {
    "translation": "a translation's 'label' is a whole token sequence and no augmentation of a sentence keeps its "
                   "reference translation; the sequence-model scores (Min-K%, zlib) are its label-free attacks",
    "navigation": "the actions alone without policy probabilities are not implemented yet: a map "
                  "has no augmentation that keeps its optimal actions",
}
_NO_FEATURES = {
    "translation": "no model-independent per-record features are defined for sentence pairs yet",
    "navigation": "no model-independent per-record features are defined for maps yet",
}

register(AttackEntry("reference", "LiRA and RMIA (reference models)", "LiRA/RMIA", "references", "models",
                     ReferenceFamily, outputs=(LIRA, RMIA), under_defenses="reference",
                     cite="Carlini et al. 2022; Zarifzadeh et al. 2024"))
register(AttackEntry("quantile", "Quantile regression (Bertran, no shadows)", "quantile regression", "non-members",
                     "models", QuantileAttack, not_for=tuple(_NO_FEATURES.items()),
                     cite="Bertran et al., NeurIPS 2023"))
register(AttackEntry("label_only", "Label-only, augmentations (Choquette-Choo)", "label-only", "labels", "models",
                     LabelOnlyAttack, not_for=tuple(_NO_LABELS.items()), outputs=("label_only", "gap"),
                     cite="Choquette-Choo et al., ICML 2021; gap attack: Yeom et al. 2018"))
register(AttackEntry("reference_ratio", "Reference ratio (loss − shadows' loss)", "ref. ratio", "references", "models",
                     ReferenceRatioAttack, tasks=("translation",),
                     not_for=(("image", _NOT_TOKENS), ("tabular", _NOT_TOKENS),
                              ("navigation", "a step's reference is a policy (a distribution), not a token sequence "
                                             "whose loss the references could be compared on")),
                     cite="Carlini et al., USENIX Security 2021 §5.1"))
_NO_AUGMENTATIONS = {
    "translation": "no augmentation of a sentence keeps its reference translation, so there is nothing to query "
                   "the record 'the same, shifted' with; plain LiRA reads the record itself",
    "navigation": "no augmentation of a map keeps its optimal actions (a flipped or shifted map is another map); "
                  "plain LiRA reads the record itself",
    "tabular": "a table row has no label-preserving augmentation (no flip or shift of its features keeps its "
               "meaning); plain LiRA reads the record itself",
}
register(AttackEntry(LIRA_AUGMENTED, "LiRA, augmented queries (offline)", "LiRA aug.", "references", "models",
                     AugmentedLiRA, not_for=tuple(_NO_AUGMENTATIONS.items()),
                     cite="Carlini et al., IEEE S&P 2022 (augmented queries)"))
register(AttackEntry(LIRA_AUGMENTED_ONLINE, "LiRA, augmented queries (online)", "LiRA aug. online", "references",
                     "models", AugmentedLiRAOnline, not_for=tuple(_NO_AUGMENTATIONS.items()),
                     cite="Carlini et al., IEEE S&P 2022 (augmented queries, online)"))
seal_builtins()
