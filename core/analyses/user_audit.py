"""Auditing a model its owner already has (:mod:`core.audit` is the door): one pass from the model, the records and
the member list to every attack with its 95 % interval, the blind baseline and the risk in the owner's terms.

1. **Roles.** The members are the listed records; unless the non-members are given, the others are split (seeded)
   into the audited non-members (as many as the members, at most half of them) and the attacker's pool.
2. **The model is checked first** (:func:`check_fit`): members at chance (their accuracy's Clopper–Pearson interval
   reaches the majority class's share) or significantly below the non-members stop the audit with one line
   ("check the preprocessing") before anything trains.
3. **References.** Where the model can be rebuilt untrained and a recipe (or training function) is given,
   ``references`` copies train on random member-sized subsets of every record, so each audited record is IN some
   and OUT of others (LiRA online and offline, RMIA). An ONNX graph cannot be retrained: LiRA and RMIA then run
   only from reference losses the user supplies (:attr:`AuditOutcome.not_run` says why an attack did not run).
4. **Attacks**: the loss and entropy thresholds, LiRA, RMIA (:func:`core.analyses.scores.score_table`), quantile
   regression (:mod:`core.attacks.quantile`) and the label-only attacks, each with AUC, TPR at low FPR, advantage
   and ε̂ with intervals.
5. **Blind baseline**: a logistic regression on the records alone (pooled inputs, one-hot label), never the model,
   cross-fitted. Its AUC's interval excluding 0.5 says members and non-members differ in distribution, so an
   attack's AUC is not all leakage; each attack's AUC minus the blind one has a paired interval.
6. **Risk** (:class:`RiskFigure`): at a stated FPR, the TPR, the precision at a membership prior π,
   π·TPR / (π·TPR + (1 − π)·FPR), and the members exposed, TPR × members — each with the TPR's interval carried
   through (both are monotone in it).

What-ifs (:func:`dirichlet`, :func:`gaussian`) re-answer the same queries through a defense and re-run every attack
without retraining (the references stay undefended: the naive attacker). A stored audit is its JSON plus
:func:`kept_arrays`; :func:`outcome_from_dict` reads both back and :func:`with_state` restores the what-ifs.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence, cast

import numpy as np
import torch
from torch import nn

from core.analyses.scores import (
    AttackScores,
    AucDifference,
    CrossFittedEpsilon,
    LowFpr,
    ScoresResult,
    attack_scores,
    auc_difference,
    bootstrap_size,
    halves,
    score_table,
)
from core.analyses.scores_file import ScoresTable
from core.attacks.quantile import QuantileRegressor, QuantileTraining, quantile_scores
from core.defenses.dirichlet import sample_probs
from core.defenses.gpm import add_noise, noise_direction
from core.foundations.device import default_device
from core.foundations.errors import ConfigError, ResultFormatError
from core.foundations.progress import ProgressCallback, ProgressTracker
from core.measurement.bootstrap import RocBand, bootstrap_metric
from core.measurement.metrics import clopper_pearson
from core.measurement.reference_math import logit_confidence_from_loss
from core.measurement.slices import SliceResult
from core.measurement.stats import CONFIDENCE, Estimate, is_zero_width
from core.models.kinds.base import LoadedModel, take
from core.models.kinds.preprocess import RawRecords
from core.tasks.image import LABEL_AUGMENTATIONS, augment_image
from core.training.recipe import Recipe, train_by_recipe

#: fewest members and fewest non-members audited (the scores' halves and thresholds need them)
MIN_PER_ROLE = 10
#: fewest pool records for quantile regression (70 % fit, 30 % calibrate)
MIN_POOL = 20
#: the most numbers the blind baseline sees per record (inputs average-pooled down to it)
BLIND_FEATURES = 256
#: the default FPR of the risk figures
RISK_FPR = 0.01
#: descriptions of the attacks added to the scores' own
EXTRA_ATTACKS = {
    "quantile": "quantile regression: the target's logit-scaled confidence minus the (1 − α) quantile a regressor "
                "fitted on the pool's answers predicts for the record (conformalised); no reference models",
    "label_only": "label-only: the number of ten augmented queries (flip, one-pixel shifts) answered correctly",
    "gap": "gap attack: member if the predicted label is right (label only, one query)",
    "blind": "blind baseline: a logistic regression on the records alone (inputs and label), never the model, "
             "cross-fitted — the AUC a split's distribution gives without any leakage",
}
TrainFn = Callable[[nn.Module, Any, np.ndarray, int], nn.Module]
#: the progress stages of an audit besides its references, with their weights (a reference: REFERENCE_WEIGHT)
PREPARE, BLIND, ANSWERS, ATTACKS = "preparing the records", "blind baseline", "answers", "attacks"
REFERENCE_WEIGHT = 4.0
STAGE_WEIGHTS = {PREPARE: 1.0, BLIND: 0.5, ANSWERS: 1.0, ATTACKS: 2.0}


# ---------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Roles:
    """Which records play which part (indices into the records) and how many."""

    members: np.ndarray
    nonmembers: np.ndarray
    pool: np.ndarray
    n_records: int
    nonmembers_given: bool

    def to_dict(self) -> dict[str, Any]:
        return {"records": self.n_records, "members": int(len(self.members)), "nonmembers": int(len(self.nonmembers)),
                "pool": int(len(self.pool)), "nonmembers_given": self.nonmembers_given,
                "rule": "the non-members given" if self.nonmembers_given else
                        "non-members: as many as the members, at most half of the other records (seeded); pool: the rest"}


@dataclass(frozen=True)
class ModelCheck:
    """The model on its own members under the declared preprocessing."""

    member_accuracy: Estimate
    nonmember_accuracy: Estimate
    member_loss: float
    nonmember_loss: float
    chance: float
    stated_accuracy: float | None
    fits: bool
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"member_accuracy": self.member_accuracy.to_dict(), "nonmember_accuracy": self.nonmember_accuracy.to_dict(),
                "member_loss": self.member_loss, "nonmember_loss": self.nonmember_loss, "chance": self.chance,
                "stated_accuracy": self.stated_accuracy, "fits": self.fits, "message": self.message}


@dataclass(frozen=True)
class RiskFigure:
    """One attack's risk at ``fpr`` and membership prior ``prior`` (module docstring, 6)."""

    attack: str
    fpr: float
    prior: float
    tpr: Estimate
    precision: Estimate
    members_exposed: Estimate
    false_flags: float
    resolved: bool

    def to_dict(self) -> dict[str, Any]:
        return {"attack": self.attack, "fpr": self.fpr, "prior": self.prior, "tpr": self.tpr.to_dict(),
                "precision": self.precision.to_dict(), "members_exposed": self.members_exposed.to_dict(),
                "expected_false_flags": self.false_flags, "resolved": self.resolved}


@dataclass(frozen=True)
class BlindBaseline:
    auc: Estimate
    differs: bool
    warning: str

    def to_dict(self) -> dict[str, Any]:
        return {"auc": self.auc.to_dict(), "differs": self.differs, "warning": self.warning,
                "features": f"prepared inputs average-pooled to at most {BLIND_FEATURES} numbers + one-hot label"}


@dataclass
class AuditState:
    """What the what-ifs re-use (never written to JSON): the model, the prepared inputs, the references' losses."""

    model: LoadedModel
    inputs: Any
    labels: np.ndarray
    audit_index: np.ndarray
    member: np.ndarray
    pool_index: np.ndarray
    ref_loss: np.ndarray
    ref_in: np.ndarray
    ref_in_given: bool
    blind_scores: np.ndarray
    blind_features: np.ndarray
    half: np.ndarray
    n_boot: int
    seed: int
    prior: float
    fpr: float
    n_members_population: int
    n_population: int


@dataclass(frozen=True)
class AuditOutcome:
    """Everything an audit measured; :meth:`to_dict` is the JSON every door writes."""

    model: dict[str, Any]
    preprocess: dict[str, Any] | None
    recipe: dict[str, Any] | None
    roles: Roles
    check: ModelCheck
    scores: ScoresResult
    blind: BlindBaseline
    risk: tuple[RiskFigure, ...]
    not_run: dict[str, str]
    utility: dict[str, float]
    defense: dict[str, Any] | None
    notes: tuple[str, ...]
    method: dict[str, Any]
    state: AuditState | None = field(default=None, repr=False, compare=False)
    #: per audited record (members, then non-members), whether the model answered its label (never written to JSON)
    correct: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def attacks(self) -> tuple[AttackScores, ...]:
        return self.scores.attacks

    def attack(self, name: str) -> AttackScores:
        return self.scores.attack(name)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "audit", "model": self.model, "preprocess": self.preprocess, "recipe": self.recipe,
                "roles": self.roles.to_dict(), "check": self.check.to_dict(), "defense": self.defense,
                "utility": self.utility, "attacks": {a.name: a.to_dict() for a in self.scores.attacks},
                "ran": [a.name for a in self.scores.attacks], "not_run": dict(self.not_run),
                "blind_baseline": self.blind.to_dict(), "comparisons": [c.to_dict() for c in self.scores.comparisons],
                "risk": [r.to_dict() for r in self.risk], "slices": self.scores.slice_rows(),
                "notes": list(self.notes), "method": dict(self.method)}


# ---------------------------------------------------------------------------- roles
def member_positions(records: RawRecords, ids: Sequence[str], what: str = "members") -> np.ndarray:
    """The indices of ``ids`` among the records' ids; one line naming an id the records do not hold."""
    position = {r: i for i, r in enumerate(records.ids)}
    out = []
    for r in ids:
        if r not in position:
            example = ", ".join(repr(x) for x in records.ids[:3])
            raise ConfigError(f"{what}: {str(r)[:80]!r} is not a record of {records.source or 'the data'} (ids look "
                              f"like {example})")
        out.append(position[r])
    if len(set(out)) != len(out):
        raise ConfigError(f"{what}: a record is listed twice")
    return np.asarray(out, np.int64)


def assign_roles(records: RawRecords, member_ids: Sequence[str], nonmember_ids: Sequence[str] | None,
                 seed: int) -> Roles:
    """Module docstring, 1. Raises :class:`ConfigError` when a role is too small."""
    members = member_positions(records, member_ids)
    n = len(records)
    rest = np.setdiff1d(np.arange(n), members)
    if nonmember_ids is not None:
        non = member_positions(records, nonmember_ids, "non-members")
        if np.intersect1d(non, members).size:
            raise ConfigError("non-members: a record is listed both as a member and as a non-member")
        pool = np.setdiff1d(rest, non)
    else:
        order = np.random.default_rng([seed, 0xA0D1]).permutation(rest)
        n_non = min(len(members), len(rest) // 2) if len(rest) >= 2 * MIN_PER_ROLE else len(rest)
        non, pool = np.sort(order[:n_non]), np.sort(order[n_non:])
    if len(members) < MIN_PER_ROLE or len(non) < MIN_PER_ROLE:
        raise ConfigError(f"{len(records)} records give {len(members)} members and {len(non)} non-members to audit; "
                          f"at least {MIN_PER_ROLE} of each are needed (list fewer members, or add records the model "
                          f"did not train on)")
    return Roles(members, non, pool, n, nonmember_ids is not None)


# ---------------------------------------------------------------------------- the check
def _accuracy(correct: np.ndarray) -> Estimate:
    k, n = int(correct.sum()), int(len(correct))
    low, high = clopper_pearson(k, n, CONFIDENCE)
    return Estimate(k / max(n, 1), float(low), float(high), n, (), "clopper-pearson")


def check_fit(logp: np.ndarray, labels: np.ndarray, member: np.ndarray, stated: float | None = None) -> ModelCheck:
    """Module docstring, 2 (``logp`` the audited records' log-probabilities, ``member`` their roles)."""
    correct = logp.argmax(1) == labels
    acc_in, acc_out = _accuracy(correct[member]), _accuracy(correct[~member])
    loss = -logp[np.arange(len(labels)), labels]
    chance = float(np.bincount(labels[member]).max() / max(member.sum(), 1))
    if cast(float, acc_in.ci_low) <= chance:
        fits, message = False, (f"the model does not fit its own members: check the preprocessing (accuracy on the "
                                f"members {acc_in.mean:.3f} [{acc_in.ci_low:.3f}, {acc_in.ci_high:.3f}], chance "
                                f"{chance:.3f})")
    elif cast(float, acc_in.ci_high) < cast(float, acc_out.ci_low):
        fits, message = False, (f"the model does not fit its own members: check the preprocessing (accuracy on the "
                                f"members {acc_in.mean:.3f} [{acc_in.ci_low:.3f}, {acc_in.ci_high:.3f}] lies below the "
                                f"non-members' {acc_out.mean:.3f} [{acc_out.ci_low:.3f}, {acc_out.ci_high:.3f}]: is the "
                                f"member list right?)")
    else:
        fits, message = True, (f"accuracy on the members {acc_in.mean:.3f} [{acc_in.ci_low:.3f}, {acc_in.ci_high:.3f}], "
                               f"on the non-members {acc_out.mean:.3f} [{acc_out.ci_low:.3f}, {acc_out.ci_high:.3f}]")
        if stated is not None and not cast(float, acc_in.ci_low) <= stated <= cast(float, acc_in.ci_high):
            message += (f"; the stated training accuracy {stated:.3f} lies outside the measured interval: check the "
                        f"preprocessing")
    return ModelCheck(acc_in, acc_out, float(loss[member].mean()), float(loss[~member].mean()), chance, stated, fits,
                      message)


# ---------------------------------------------------------------------------- pieces
def _log_probs(model: LoadedModel, inputs: Any, module: nn.Module | None = None) -> np.ndarray:
    lp = model.log_probs(inputs, module)
    if lp.ndim != 2 or lp.shape[1] != model.n_classes:
        raise ConfigError(f"{model.spec}: the model answers {lp.shape[-1] if lp.ndim == 2 else lp.shape} scores per "
                          f"record, the data has {model.n_classes} classes")
    return np.maximum(lp, -1e4)  # a float32 log-softmax of −inf (probability exactly 0) kept finite


def _pooled(x: np.ndarray) -> np.ndarray:
    """(N, ≤ BLIND_FEATURES) average-pooled flattened features."""
    flat = x.reshape(len(x), -1).astype(np.float64)
    d = flat.shape[1]
    if d <= BLIND_FEATURES:
        return flat
    edges = np.linspace(0, d, BLIND_FEATURES + 1).astype(int)
    return np.add.reduceat(flat, edges[:-1], axis=1) / np.diff(edges)


def record_features(inputs: Any, labels: np.ndarray, n_classes: int) -> np.ndarray:
    """What the blind baseline and the quantile regressor see of a record: its pooled inputs and one-hot label."""
    if isinstance(inputs, dict):  # text: token ids are not magnitudes; their counts per position bucket are kept
        x = np.asarray(inputs["input_ids"], np.float64)
    else:
        x = inputs.numpy() if isinstance(inputs, torch.Tensor) else np.asarray(inputs)
    return np.concatenate([_pooled(np.asarray(x, np.float64)), np.eye(n_classes)[labels]], 1)


def blind_scores(features: np.ndarray, member: np.ndarray, half: np.ndarray, seed: int) -> np.ndarray:
    """Cross-fitted P(member | features): a logistic regression fitted on one half scores the other."""
    from sklearn.linear_model import LogisticRegression  # noqa: PLC0415  (optional heavy)
    from sklearn.preprocessing import StandardScaler  # noqa: PLC0415
    out = np.zeros(len(member))
    for h in (0, 1):
        fit, score = half != h, half == h
        scaler = StandardScaler().fit(features[fit])
        clf = LogisticRegression(C=0.1, max_iter=2000, random_state=seed).fit(scaler.transform(features[fit]),
                                                                              member[fit])
        out[score] = clf.decision_function(scaler.transform(features[score]))
    return out


def _named(name: str, scores: np.ndarray, member: np.ndarray, half: np.ndarray, n_boot: int, seed: int) -> AttackScores:
    base = attack_scores("loss", scores, member, half, n_boot, seed)
    return replace(base, name=name, description=EXTRA_ATTACKS[name])


def _label_queries(model: LoadedModel, inputs: Any, module: nn.Module | None,
                   transform: Callable[[np.ndarray], np.ndarray] | None) -> np.ndarray:
    """(N, 10, m) log-probabilities of the augmented queries (images only)."""
    x = inputs if isinstance(inputs, torch.Tensor) else torch.as_tensor(np.asarray(inputs))
    out = []
    for flip, dy, dx in LABEL_AUGMENTATIONS:
        q = augment_image(x, flip, dy, dx)
        lp = model.log_probs(q if model.run is None else q.numpy(), module)
        out.append(transform(lp) if transform is not None else lp)
    return np.stack(out, 1)


def risk_figures(attacks: Sequence[AttackScores], member: np.ndarray, prior: float, fpr: float, n_members: int,
                 n_population: int, n_boot: int, seed: int) -> tuple[RiskFigure, ...]:
    """Module docstring, 6."""
    n0 = int((~member).sum())
    out = []
    for a in attacks:
        if len(a.scores) != len(member):  # scored on the records that have its references only: not comparable
            continue
        tpr = bootstrap_metric(a.scores, member, f"tpr@{fpr}", n_boot=n_boot, seed=seed)

        def precision(t: float | None) -> float | None:
            if t is None:
                return None
            flagged = prior * t + (1 - prior) * fpr
            return prior * t / flagged if flagged > 0 else 0.0

        exposed = (lambda t: None if t is None else t * n_members)
        out.append(RiskFigure(a.name, fpr, prior, tpr,
                              Estimate(cast(float, precision(tpr.mean)), precision(tpr.ci_low), precision(tpr.ci_high),
                                       tpr.n, (), tpr.method, tpr.confidence, "the TPR's interval carried through"),
                              Estimate(cast(float, exposed(tpr.mean)), exposed(tpr.ci_low), exposed(tpr.ci_high),
                                       tpr.n, (), tpr.method, tpr.confidence,
                                       "TPR × members; the TPR's interval carried through"),
                              fpr * (n_population - n_members), math.floor(fpr * n0 + 1e-12) >= 1))
    return tuple(out)


# ---------------------------------------------------------------------------- the attacks on given answers
def _attacks(state: AuditState, logp: np.ndarray, logp_pool: np.ndarray | None, queries: np.ndarray | None,
             tick: Callable[[float], None] | None = None
             ) -> tuple[ScoresResult, BlindBaseline, tuple[RiskFigure, ...], dict[str, str], list[str]]:
    """Every attack on the given answers; ``tick(fraction)`` after each step (a progress report)."""
    tick = tick or (lambda _f: None)
    member, labels = state.member, state.labels[state.audit_index]
    loss = -logp[np.arange(len(labels)), labels]
    p = np.exp(logp)
    entropy = -(p * logp).sum(1)
    table = ScoresTable(state.model.spec, member, loss, "logits", entropy, labels, state.ref_loss, state.ref_in,
                        state.ref_in_given, None, state.model.n_classes)
    result = score_table(table, state.n_boot, state.seed)
    tick(0.5)
    notes, not_run = list(result.notes), {}
    extra = []
    n_boot, seed, half = state.n_boot, state.seed, state.half
    if logp_pool is not None and len(logp_pool) >= MIN_POOL:
        pool_labels = state.labels[state.pool_index]
        pool_phi = logit_confidence_from_loss(-logp_pool[np.arange(len(pool_labels)), pool_labels])
        features = state.blind_features
        q = QuantileRegressor(training=QuantileTraining(seed=seed)).fit(features[len(member):], pool_phi)
        phi = logit_confidence_from_loss(loss)
        extra.append(_named("quantile", quantile_scores(phi, q.predict(features[:len(member)])), member, half,
                            n_boot, seed))
    else:
        not_run["quantile"] = (f"the pool holds {0 if logp_pool is None else len(logp_pool)} records; quantile "
                               f"regression needs {MIN_POOL} the model did not train on (add records or give fewer "
                               f"non-members)")
    if queries is not None:
        correct = queries.argmax(2) == labels[:, None]
        extra.append(_named("label_only", correct.sum(1).astype(np.float64), member, half, n_boot, seed))
    else:
        not_run["label_only"] = (f"the augmented queries (flip, shifts) are defined for images; these records are "
                                 f"{state.model.modality}")
    extra.append(_named("gap", (logp.argmax(1) == labels).astype(np.float64), member, half, n_boot, seed))
    blind = _named("blind", state.blind_scores, member, half, n_boot, seed)
    tick(0.75)
    attacks = tuple(result.attacks) + tuple(extra)
    comparisons = list(result.comparisons)
    for a in attacks:
        if a.name in ("loss", "entropy", "lira_offline", "lira_online", "rmia", "quantile", "label_only", "gap") \
                and len(a.scores) == len(member):
            diff = auc_difference(a.scores, state.blind_scores, member, n_boot, seed)
            verdict = ("inconclusive" if is_zero_width(diff.ci_low, diff.ci_high, diff.mean) else
                       f"{a.name} higher" if cast(float, diff.ci_low) > 0 else
                       "blind higher" if cast(float, diff.ci_high) < 0 else "inconclusive")
            comparisons.append(AucDifference(a.name, "blind", diff, verdict))
    differs = blind.auc.excludes(0.5)
    warning = ("your members and non-members differ in distribution — an attack's AUC is not all leakage: compare it "
               "with the blind baseline's" if differs else "")
    if differs:
        notes.insert(0, warning)
    result = replace(result, attacks=attacks + (blind,), comparisons=tuple(comparisons), notes=tuple(notes))
    tick(0.9)
    risk = risk_figures(attacks, member, state.prior, state.fpr, state.n_members_population, state.n_population,
                        n_boot, seed)
    tick(1.0)
    return result, BlindBaseline(blind.auc, differs, warning), risk, not_run, notes


def _utility(logp: np.ndarray, labels: np.ndarray, member: np.ndarray) -> dict[str, float]:
    correct = logp.argmax(1) == labels
    return {"member_accuracy": float(correct[member].mean()), "nonmember_accuracy": float(correct[~member].mean())}


def _answers(state: AuditState, module: nn.Module | None = None,
             transform: Callable[[np.ndarray], np.ndarray] | None = None, tick: Callable[[float], None] | None = None
             ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The model's answers on the audited records, the pool and (images) the augmented queries; ``tick(fraction)``
    after each."""
    tick = tick or (lambda _f: None)
    model = state.model
    logp = _log_probs(model, take(state.inputs, state.audit_index), module)
    tick(0.25)
    pool = _log_probs(model, take(state.inputs, state.pool_index), module) if len(state.pool_index) else None
    tick(0.4)
    queries = (_label_queries(model, take(state.inputs, state.audit_index), module, transform)
               if model.modality == "image" else None)
    tick(1.0)
    if transform is not None:
        logp = transform(logp)
        pool = None if pool is None else transform(pool)
    return logp, pool, queries


# ---------------------------------------------------------------------------- the audit
def run_audit(model: LoadedModel, records: RawRecords, member_ids: Sequence[str], *,
              nonmember_ids: Sequence[str] | None = None, recipe: Recipe | None = None, train_fn: TrainFn | None = None,
              reference_losses: np.ndarray | None = None, reference_in: np.ndarray | None = None,
              stated_accuracy: float | None = None, prior: float | None = None, fpr: float = RISK_FPR,
              seed: int = 0, n_boot: int | None = None,
              progress: Callable[[str], None] | None = None,
              on_progress: ProgressCallback | None = None) -> AuditOutcome:
    """The whole audit (module docstring). Raises :class:`ConfigError` (one line) on bad input, before training.
    ``progress(message)`` says each step in words; ``on_progress`` gets its :class:`ProgressEvent` (stage, fraction,
    ETA) — module docstring, Progress."""
    say = progress or (lambda _m: None)
    if not 0 < fpr < 1:
        raise ConfigError(f"fpr must lie in (0, 1), got {fpr}")
    if prior is not None and not 0 < prior < 1:
        raise ConfigError(f"prior must lie in (0, 1), got {prior}")
    if model.modality != records.modality:
        raise ConfigError(f"{model.spec} takes {model.modality} records; the data holds {records.modality} records")
    n_classes_data = len(records.classes)
    if n_classes_data > model.n_classes or int(records.labels.max()) >= model.n_classes:
        raise ConfigError(f"the data has {n_classes_data} classes, the model {model.n_classes} outputs")
    roles = assign_roles(records, member_ids, nonmember_ids, seed)
    audit_index = np.concatenate([roles.members, roles.nonmembers])
    member = np.zeros(len(audit_index), bool)
    member[:len(roles.members)] = True
    trains = reference_losses is None and (recipe is not None or train_fn is not None) and model.retrainable
    if trains:
        recipe = recipe or Recipe(source="train_fn")
    k_refs = recipe.references if trains and recipe is not None else 0
    references = [f"reference {k + 1}/{k_refs}" for k in range(k_refs)]
    tracker = ProgressTracker([(PREPARE, STAGE_WEIGHTS[PREPARE])] + [(r, REFERENCE_WEIGHT) for r in references]
                              + [(s, STAGE_WEIGHTS[s]) for s in (BLIND, ANSWERS, ATTACKS)], on_progress)

    def stage(name: str) -> Callable[[float], None]:
        """Begin stage ``name`` (one report at 0); its fraction callback reports the rest."""
        tracker.update(name, 0.0, force=True)
        return lambda fraction: tracker.update(name, fraction)

    device = default_device()  # a GPU where there is one (MIA_DEVICE=cpu forces the CPU); inputs stay on the CPU
    if model.module is not None:
        model.module.to(device)
    say("preparing the records with the declared preprocessing")
    stage(PREPARE)
    inputs = model.prepare(records)
    labels = np.asarray(records.labels, np.int64)
    logp = _log_probs(model, take(inputs, audit_index))
    check = check_fit(logp, labels[audit_index], member, stated_accuracy)
    if not check.fits:
        raise ConfigError(check.message)
    tracker.finish(PREPARE)
    notes = list(model.notes)
    not_run: dict[str, str] = {}
    ref_loss = np.zeros((len(audit_index), 0))
    ref_in = np.zeros((len(audit_index), 0), bool)
    ref_in_given = False
    if reference_losses is not None:
        ref_loss = np.asarray(reference_losses, np.float64)
        if ref_loss.ndim != 2 or len(ref_loss) != len(audit_index) or not np.isfinite(ref_loss).all() \
                or (ref_loss < 0).any():
            raise ConfigError(f"reference losses must be a finite, non-negative (records × references) array with one "
                              f"row per audited record ({len(audit_index)}: members then non-members)")
        ref_in_given = reference_in is not None
        ref_in = (np.asarray(reference_in, bool) if ref_in_given else np.zeros(ref_loss.shape, bool))
        if ref_in.shape != ref_loss.shape:
            raise ConfigError("reference_in must have the shape of the reference losses")
        notes.append(f"{ref_loss.shape[1]} reference models' losses supplied by the user")
    elif trains and recipe is not None:
        population = np.concatenate([audit_index, roles.pool])
        size = min(len(roles.members), len(population) // 2)
        rng = np.random.default_rng([seed, 0x5EF])
        ref_loss = np.zeros((len(audit_index), k_refs))
        ref_in = np.zeros((len(audit_index), k_refs), bool)
        audit_pos = {int(r): i for i, r in enumerate(audit_index)}
        for k in range(k_refs):
            say(f"training reference {k + 1} of {k_refs} ({size} records, {recipe.epochs} epochs)")
            fraction = stage(references[k])
            chosen = rng.choice(population, size=size, replace=False)
            module = model.fresh(seed * 1000 + k).to(device)
            if train_fn is not None:
                module = train_fn(module, take(inputs, chosen), labels[chosen], seed * 1000 + k)
            else:
                train_by_recipe(module, take(inputs, chosen), labels[chosen], recipe, seed * 1000 + k,
                                on_epoch=lambda done, epochs: fraction(done / epochs))  # used in this iteration
            lp = _log_probs(model, take(inputs, audit_index), module)
            ref_loss[:, k] = -lp[np.arange(len(audit_index)), labels[audit_index]]
            for r in chosen:
                if int(r) in audit_pos:
                    ref_in[audit_pos[int(r)], k] = True
            tracker.finish(references[k])
        ref_in_given = True
    else:
        why = (model.why_not_retrainable if not model.retrainable else
               "no recipe or training function was given (--recipe FILE, or recipe= / train_fn= in Python)")
        for name in ("lira_offline", "lira_online", "rmia"):
            not_run[name] = f"needs reference models: {why}"
    n_boot = bootstrap_size(len(audit_index)) if n_boot is None else int(n_boot)
    half = halves(member, seed)
    features = record_features(take(inputs, np.concatenate([audit_index, roles.pool])),
                               labels[np.concatenate([audit_index, roles.pool])], model.n_classes)
    say("blind baseline")
    stage(BLIND)
    blind = blind_scores(features[:len(audit_index)], member, half, seed)
    tracker.finish(BLIND)
    state = AuditState(model, inputs, labels, audit_index, member, roles.pool, ref_loss, ref_in, ref_in_given, blind,
                       features, half, n_boot, seed,
                       prior if prior is not None else len(roles.members) / roles.n_records, fpr, len(roles.members),
                       roles.n_records)
    say("attacks")
    logp, pool, queries = _answers(state, tick=stage(ANSWERS))
    tracker.finish(ANSWERS)
    result, blind_baseline, risk, more_not_run, extra_notes = _attacks(state, logp, pool, queries, stage(ATTACKS))
    tracker.finish(ATTACKS)
    if ref_loss.shape[1] and not any(a.name.startswith(("lira", "rmia")) for a in result.attacks):
        not_run["lira_offline"] = not_run["rmia"] = "; ".join(n for n in result.notes if "LiRA" in n) or "too few references"
    not_run.update(more_not_run)
    if ref_in_given and "lira_online" not in {a.name for a in result.attacks}:
        not_run.setdefault("lira_online", "; ".join(n for n in result.notes if "online" in n) or
                           "too few records with both IN and OUT references")
    method = {**result.method, "references": int(ref_loss.shape[1]),
              "references_trained": k_refs, "risk_fpr": fpr, "prior": state.prior,
              "prior_rule": "given" if prior is not None else "members / all records",
              "check": "Clopper-Pearson accuracy on members vs chance and vs non-members"}
    model_info = {"spec": model.spec, "kind": model.kind, "n_classes": model.n_classes, "modality": model.modality,
                  "retrainable": model.retrainable, "notes": list(model.notes)}
    return AuditOutcome(model_info, model.preprocess.to_dict() if model.preprocess else None,
                        recipe.to_dict() if recipe is not None and k_refs else None, roles, check, result,
                        blind_baseline, risk, not_run, _utility(logp, labels[audit_index], member), None,
                        tuple(notes + [n for n in extra_notes if n not in notes]), method, state,
                        logp.argmax(1) == labels[audit_index])


# ---------------------------------------------------------------------------- what-ifs
def _rerun(outcome: AuditOutcome, logp: np.ndarray, pool: np.ndarray | None, queries: np.ndarray | None,
           defense: dict[str, Any]) -> AuditOutcome:
    state = cast(AuditState, outcome.state)  # set by run_audit on every outcome a what-if reruns
    result, blind, risk, more, extra_notes = _attacks(state, logp, pool, queries)
    utility = _utility(logp, state.labels[state.audit_index], state.member)
    undefended = outcome.utility["nonmember_accuracy"]
    defense = {**defense, "utility_loss": (1 - utility["nonmember_accuracy"] / undefended) if undefended > 0 else None,
               "attacker": "naive: the references and the pool's regressor are fitted on undefended answers"}
    not_run = {k: v for k, v in outcome.not_run.items() if k not in {a.name for a in result.attacks}}
    return replace(outcome, scores=result, blind=blind, risk=risk, not_run={**not_run, **more}, utility=utility,
                   defense=defense, correct=logp.argmax(1) == state.labels[state.audit_index])


def dirichlet(outcome: AuditOutcome, k: float, eta: float = 1e-6, seed: int = 0) -> AuditOutcome:
    """The audit again with every answer of the model drawn from Dir(k·p̃) (paper 001's mechanism), no retraining."""
    if outcome.state is None:
        raise ConfigError("this audit result holds no model (read from JSON): run the audit again for what-ifs")
    if not (math.isfinite(k) and k > 0):
        raise ConfigError(f"k must be a positive number, got {k!r}")
    calls = [0]  # each answer set (audited records, pool, each augmented query) gets its own draws

    def transform(lp: np.ndarray) -> np.ndarray:
        calls[0] += 1
        rng = np.random.default_rng([int(seed), 0xD1C, calls[0]])
        shape = lp.shape
        flat = lp.reshape(-1, shape[-1])
        return np.maximum(sample_probs(np.exp(flat), k, eta, rng), -1e4).reshape(shape)

    logp, pool, queries = _answers(outcome.state, transform=transform)
    return _rerun(outcome, logp, pool, queries, {"mechanism": "dirichlet", "k": float(k), "eta": eta, "seed": seed})


def gaussian(outcome: AuditOutcome, sigma: float, seed: int = 0) -> AuditOutcome:
    """The audit again with the weights θ + σ·z (the Gaussian privacy module, one draw), no retraining."""
    state = outcome.state
    if state is None:
        raise ConfigError("this audit result holds no model (read from JSON): run the audit again for what-ifs")
    if state.model.module is None:
        raise ConfigError(f"{state.model.spec}: σ perturbs a torch model's weights; an ONNX graph is run, not "
                          f"perturbed here (the Dirichlet k acts on any model's outputs)")
    if not (math.isfinite(sigma) and sigma >= 0):
        raise ConfigError(f"sigma must be a finite number ≥ 0, got {sigma!r}")
    module = copy.deepcopy(state.model.module)
    base = {n: p.detach().clone() for n, p in module.named_parameters()}
    add_noise(module, base, noise_direction(module, seed), sigma)
    logp, pool, queries = _answers(state, module)
    return _rerun(outcome, logp, pool, queries, {"mechanism": "gaussian", "sigma": float(sigma), "seed": seed})


# ---------------------------------------------------------------------------- utility with intervals
def utility_estimates(outcome: AuditOutcome) -> dict[str, Estimate] | None:
    """The members' and the non-members' accuracy (of the defended answers, for a what-if), each with its
    Clopper–Pearson interval; None for an outcome without per-record answers."""
    state, correct = outcome.state, outcome.correct
    if state is None or correct is None:
        return None
    return {"member_accuracy": _accuracy(correct[state.member]), "nonmember_accuracy": _accuracy(correct[~state.member])}


def utility_loss_estimate(undefended: AuditOutcome, defended: AuditOutcome, n_boot: int | None = None,
                          seed: int = 0) -> Estimate | None:
    """The what-if's utility loss L = 1 − acc(defended) / acc(undefended) on the non-members (the number in
    ``defended.defense``), with a paired percentile bootstrap interval over the non-member records (each resample
    answers both accuracies on the same records; the defense's draw is the one the what-if made). None where the
    data does not allow one: no per-record answers, fewer than :data:`MIN_PER_ROLE` non-members, or the undefended
    model right on none of them."""
    state = undefended.state
    if state is None or undefended.correct is None or defended.correct is None:
        return None
    before = undefended.correct[~state.member].astype(np.float64)
    after = defended.correct[~state.member].astype(np.float64)
    n = len(before)
    if n < MIN_PER_ROLE or before.mean() == 0:
        return None
    b = state.n_boot if n_boot is None else int(n_boot)
    rows = np.random.default_rng([int(seed), 0x0717]).integers(0, n, (b, n))
    base = before[rows].mean(1)
    ok = base > 0  # a resample with no non-member answered right has no ratio
    losses = 1.0 - after[rows][ok].mean(1) / base[ok]
    alpha = 1 - CONFIDENCE
    low, high = np.quantile(losses, [alpha / 2, 1 - alpha / 2]) if len(losses) else (None, None)
    note = "paired bootstrap over the non-members, one draw of the defense"
    if ok.sum() < b:
        note += f"; {int(b - ok.sum())} resamples without a right answer left out"
    return Estimate(float(1.0 - after.mean() / before.mean()), None if low is None else float(low),
                    None if high is None else float(high), n, (), "bootstrap-percentile", CONFIDENCE, note)


# ---------------------------------------------------------------------------- a stored audit
def kept_arrays(outcome: AuditOutcome) -> dict[str, np.ndarray]:
    """What the audit's JSON leaves out and a stored audit needs back (module docstring): the roles' record indices,
    each attack's per-record scores (``scores_<name>``), the references' losses and IN flags, the blind baseline's
    scores, the halves and the per-record answers' correctness. Only an outcome :func:`run_audit` made (or
    :func:`with_state` restored) has them."""
    state = outcome.state
    if state is None or outcome.correct is None:
        raise ConfigError("this audit result holds no per-record arrays (read from JSON alone): run the audit again")
    roles = outcome.roles
    out = {"members": roles.members, "nonmembers": roles.nonmembers, "pool": roles.pool, "ref_loss": state.ref_loss,
           "ref_in": state.ref_in, "ref_in_given": np.asarray(state.ref_in_given), "blind_scores": state.blind_scores,
           "half": state.half, "correct": outcome.correct}
    out.update({f"scores_{a.name}": np.asarray(a.scores) for a in outcome.attacks})
    return {k: np.asarray(v) for k, v in out.items()}


def _estimate(d: Mapping[str, Any]) -> Estimate:
    return Estimate.from_dict(d)


def _threshold(v: Any) -> float:
    return float("nan") if v is None else float(v)  # JSON null: a threshold that was not finite


def _attack_from_dict(d: Mapping[str, Any], scores: np.ndarray) -> AttackScores:
    thresholds = d["thresholds"]
    return AttackScores(
        str(d["name"]), str(d["description"]), _estimate(d["auc"]),
        tuple(LowFpr(float(r["fpr"]), str(r["label"]), _estimate(r), bool(r["resolved"]), r["verdict"])
              for r in d["tpr_at_low_fpr"]),
        _estimate(d["advantage"]),
        (_threshold(thresholds["fitted_on_half_0"]), _threshold(thresholds["fitted_on_half_1"])),
        CrossFittedEpsilon(**d["epsilon"]), tuple(d["roc_fpr"]), tuple(d["roc_tpr"]), RocBand.from_dict(d["roc_band"]),
        str(d["finding"]), str(d["reason"]), scores)


def _pair(of: str) -> tuple[str, str]:
    """``"a - b"`` → (a, b)."""
    a, sep, b = of.partition(" - ")
    if not sep:
        raise ValueError(f"a comparison {of[:40]!r} is not 'a - b'")
    return a, b


def outcome_from_dict(doc: Mapping[str, Any], kept: Mapping[str, np.ndarray]) -> AuditOutcome:
    """A stored audit read back typed from its JSON (:meth:`AuditOutcome.to_dict`, envelope or not) and its
    :func:`kept_arrays`, without a model (its what-ifs need :func:`with_state`). ``to_dict`` of the result is the
    JSON read. The :class:`ScoresResult` inside carries what the JSON holds: the model's spec as its source, the
    audited records' counts, the audit's notes and method.

    Raises:
        ResultFormatError: one line, when the JSON or the arrays are not an audit's.
    """
    try:
        roles_d = doc["roles"]
        members, nonmembers, pool = (np.asarray(kept[k], np.int64) for k in ("members", "nonmembers", "pool"))
        roles = Roles(members, nonmembers, pool, int(roles_d["records"]), bool(roles_d["nonmembers_given"]))
        if roles.to_dict() != roles_d:
            raise ValueError("the kept roles do not match the JSON's counts")
        if set(doc["ran"]) != set(doc["attacks"]):
            raise ValueError("'ran' does not name the attacks")
        attacks = tuple(_attack_from_dict(doc["attacks"][name], np.asarray(kept[f"scores_{name}"], np.float64))
                        for name in doc["ran"])  # in the order they ran (a JSON object's keys may come back sorted)
        comparisons = tuple(AucDifference(*_pair(str(c["of"])), _estimate(c), str(c["verdict"]))
                            for c in doc["comparisons"])
        slices = tuple((str(r["attack"]), SliceResult(**{k: v for k, v in r.items() if k != "attack"}))
                       for r in doc["slices"])
        method = dict(doc["method"])
        scores = ScoresResult(str(doc["model"]["spec"]), len(members) + len(nonmembers), len(members), len(nonmembers),
                              (), int(method.get("references", 0)), attacks, comparisons, slices,
                              tuple(doc["notes"]), method)
        c = doc["check"]
        check = ModelCheck(_estimate(c["member_accuracy"]), _estimate(c["nonmember_accuracy"]), float(c["member_loss"]),
                           float(c["nonmember_loss"]), float(c["chance"]), c["stated_accuracy"], bool(c["fits"]),
                           str(c["message"]))
        b = doc["blind_baseline"]
        blind = BlindBaseline(_estimate(b["auc"]), bool(b["differs"]), str(b["warning"]))
        risk = tuple(RiskFigure(str(r["attack"]), float(r["fpr"]), float(r["prior"]), _estimate(r["tpr"]),
                                _estimate(r["precision"]), _estimate(r["members_exposed"]),
                                float(r["expected_false_flags"]), bool(r["resolved"])) for r in doc["risk"])
        outcome = AuditOutcome(dict(doc["model"]), doc["preprocess"], doc["recipe"], roles, check, scores, blind, risk,
                               dict(doc["not_run"]), dict(doc["utility"]), doc["defense"], tuple(doc["notes"]), method,
                               None, np.asarray(kept["correct"], bool))
        written = outcome.to_dict()
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ResultFormatError(f"a stored audit cannot be read back ({type(exc).__name__}: {exc})") from None
    if written != {k: v for k, v in doc.items() if k in written} or set(doc) - set(written) - {"schema",
                                                                                             "mia_explorer_version"}:
        raise ResultFormatError("a stored audit cannot be read back: its JSON is not the layout this version writes")
    return outcome


def with_state(outcome: AuditOutcome, model: LoadedModel, records: RawRecords,
               kept: Mapping[str, np.ndarray]) -> AuditOutcome:
    """A stored audit (:func:`outcome_from_dict`) with its what-ifs back: ``model`` and ``records`` loaded anew, the
    references' losses, the blind baseline's scores and the halves from ``kept`` (nothing retrained or refitted).
    The model's answers on the audited records must be right exactly where they were.

    Raises:
        ConfigError: one line, when the records or the model are not the ones audited.
    """
    roles, method = outcome.roles, outcome.method
    changed = "the model or the records changed since this audit: run it again"
    if roles.n_records != len(records) or model.modality != outcome.model.get("modality") \
            or model.n_classes != outcome.model.get("n_classes"):
        raise ConfigError(changed)
    audit_index = np.concatenate([roles.members, roles.nonmembers])
    member = np.zeros(len(audit_index), bool)
    member[:len(roles.members)] = True
    if model.module is not None:
        model.module.to(default_device())
    inputs = model.prepare(records)
    labels = np.asarray(records.labels, np.int64)
    logp = _log_probs(model, take(inputs, audit_index))
    correct = logp.argmax(1) == labels[audit_index]
    if outcome.correct is None or not np.array_equal(correct, outcome.correct):
        raise ConfigError(changed)
    everyone = np.concatenate([audit_index, roles.pool])
    state = AuditState(model, inputs, labels, audit_index, member, roles.pool, np.asarray(kept["ref_loss"], np.float64),
                       np.asarray(kept["ref_in"], bool), bool(kept["ref_in_given"]),
                       np.asarray(kept["blind_scores"], np.float64),
                       record_features(take(inputs, everyone), labels[everyone], model.n_classes),
                       np.asarray(kept["half"]), int(method["bootstrap"]), int(method["seed"]), float(method["prior"]),
                       float(method["risk_fpr"]), len(roles.members), roles.n_records)
    return replace(outcome, state=state, correct=correct)
