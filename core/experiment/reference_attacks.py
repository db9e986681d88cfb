"""The strongest black-box attacks: LiRA (Carlini et al. 2022) and RMIA (Zarifzadeh et al. 2024).

Both compare the victim's answer on a record with *reference models'* answers (the attacker's shadows) on
that same record, so the per-record difficulty that blunts a global loss threshold cancels out.

Signals (per step t of a record, from the Responses):

* confidence cₜ on the reference: p(reference class) for a one-hot reference (an image's label,
  a reference token), the mass on the reference's support Σ_{j: qⱼ>0} pⱼ for a distribution
  reference (navigation: the probability of taking *an* optimal action);
* LiRA's logit-scaled confidence φₜ = log cₜ − log(1 − cₜ), with log cₜ = −CE from the stored
  cross-entropy (computed in float64) and 1 − cₜ as the sum of the other classes' probabilities
  when full vectors are kept (exact where c rounds to 1), else as −expm1(−CE) (top-K Responses:
  exact up to |φ| ≈ 35, where float64 log-softmax itself saturates); for distribution references,
  the log-ratio of the masses on and off the reference's support.

**LiRA, offline** (Carlini et al. 2022, §4 "offline"): every shadow trained on the attacker's
disjoint half, so for the victim's records each shadow is an OUT model. Per record (or per
aligned step, below) a Gaussian N(μ_out, σ²_out) is fitted to the shadows' φ; the score is the
one-sided test statistic z = (φ_target − μ_out)/σ_out (monotone in Carlini's Λ = Φ(z)).
``variance="global"`` pools σ over all records (the paper's advice with few reference models,
and our default); ``"per_example"`` uses each record's own spread (needs many shadows).

**LiRA, online** (:func:`online_lira`): a *stronger threat model*: the attacker holds the candidate
records and trains IN models on them (each on a random half of the victim's evaluation records plus
attacker data), then scores log N(φ; μ_in, σ_in) − log N(φ; μ_out, σ_out).

**RMIA** (Zarifzadeh et al. 2024): with Pr(x|θ) the model's likelihood of record x and
Pr(x) = ½[(1 + a)·mean_ref Pr(x|θ_ref) + (1 − a)] (the offline approximation of the average
over IN and OUT models; a ∈ [0, 1] and a softmax temperature T — for full probability vectors,
as LeakPro's implementation offers — are chosen on the shadows by AUC), the pairwise likelihood ratio
against a population record z is LR(x, z) = [Pr(x|θ)/Pr(x)] / [Pr(z|θ)/Pr(z)], and the score
is the share of population records with LR(x, z) ≥ γ (γ = 1). Population records are
attacker-pool records no shadow trained on, answered by the victim and by every shadow.
The share is a step function of Pr(x|θ)/Pr(x); ties (equal shares) are broken by that ratio
itself, with a term smaller than one step, so the ranking is never coarser than the population.

**Sequences** (translation: one step per reference token; navigation: one per action):

* *aligned steps* — every model answered the same steps with the same references (translation,
  teacher-forced on the reference): LiRA fits one Gaussian per (record, step) and combines the
  steps' z-scores by Stouffer's rule, score = Σₜ zₜ / √L (online: the sum of the steps'
  log-likelihood ratios, i.e. steps treated as independent);
* *unaligned steps* — each model produced its own sequence (navigation: every agent walks its
  own path on the map): the record's signal is the mean over its steps, φ̄ = (1/L) Σₜ φₜ, and one
  Gaussian per record is fitted to the shadows' φ̄.
* RMIA uses the geometric-mean step confidence Pr(x|θ) = exp((1/L) Σₜ log cₜ) in both cases (for
  an image, L = 1 and this is p(label)), so records of different lengths stay comparable.

Steps are aligned when every reference's Responses have the target's lengths and reference classes.

Thresholds (for accuracy and advantage) are fitted on the attacker's own data: each shadow in turn plays
the target on up to :data:`CALIBRATION_RECORDS` in and out records of its own, the other shadows that did
not train on a record its references. The reference attacks need at least two shadows.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import torch

from core.attacks.shadow_attacks import AttackOutcome
from core.experiment.cache import ArtifactCache, tensor_shapes
from core.experiment.roles import (
    TrainedModels,
    cached_answers,
    model_from_weights,
    records_digest,
    reference_answers,
    role_seed,
    train_model,
)
from core.measurement.metrics import best_threshold, evaluate_attack, roc_auc
from core.measurement.reference_math import (  # the array math, shared with core.analyses.scores
    lira_unit_scores,
    logit_confidence_from_loss,
    pooled_variance,
    rmia_from_log_likelihoods,
)
from core.measurement.responses import Responses

#: floors that keep logs finite (float32 cross-entropies and probabilities can be exactly 0)
_TINY = 1e-45
_FLOOR = 1e-30
#: RMIA's a is chosen from this grid on the shadows (the paper tunes it on reference models)
RMIA_A_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
#: and its softmax temperature from this one (full probability vectors only; top-K Responses: 1)
RMIA_T_GRID = (1.0, 2.0, 4.0, 8.0)
#: names of the attacks this module adds to a summary
LIRA, LIRA_ONLINE, RMIA = "lira", "lira_online", "rmia"


# ---------------------------------------------------------------------------- signals
def _reference_distribution(r: Responses) -> tuple[np.ndarray, np.ndarray] | None:
    """(probs, reference) where the reference is a distribution (not one-hot); else None."""
    if r.reference is None or r.is_one_hot_reference:
        return None
    if r.probs is None:  # Responses.validate refuses a reference kept without its probabilities
        raise ValueError("Responses: a reference distribution without its probability vectors")
    return r.probs, r.reference


def step_log_confidence(r: Responses, temperature: float = 1.0) -> np.ndarray:
    """(T,) log cₜ: log p(reference) (one-hot reference) or log of the reference support's mass.

    With ``temperature`` T ≠ 1 (full probability vectors only) the distribution is first
    re-tempered, p ∝ p^(1/T) (= softmax(logits / T)): a softer view of saturated confidences.
    """
    if temperature != 1.0:
        if r.probs is None:
            raise ValueError("a temperature needs full probability vectors; these Responses keep only the top-K")
        logp = np.log(np.maximum(r.probs.astype(np.float64), _TINY))
        distribution = _reference_distribution(r)
        if distribution is None:  # the reference's own log-probability is exact in the cross-entropy
            logp[np.arange(len(logp)), r.ref_index] = -r.cross_entropy.astype(np.float64)
        z = logp / temperature
        z -= z.max(1, keepdims=True)
        logq = z - np.log(np.exp(z).sum(1, keepdims=True))
        if distribution is not None:
            support = distribution[1] > 0
            return np.log(np.maximum(np.where(support, np.exp(logq), 0.0).sum(1), _FLOOR))
        return logq[np.arange(len(logq)), r.ref_index]
    distribution = _reference_distribution(r)
    if distribution is not None:
        probs, reference = distribution
        support = reference > 0
        mass = (probs.astype(np.float64) * support).sum(1)
        return np.log(np.maximum(mass, _FLOOR))
    return -r.cross_entropy.astype(np.float64)


def step_logit_confidence(r: Responses) -> np.ndarray:
    """(T,) LiRA's φₜ = log cₜ − log(1 − cₜ) (see the module docstring for the stable forms)."""
    distribution = _reference_distribution(r)
    if distribution is not None:
        probs, reference = distribution
        support = reference > 0
        p = probs.astype(np.float64)
        inside, outside = (p * support).sum(1), (p * ~support).sum(1)
        return np.log(np.maximum(inside, _FLOOR)) - np.log(np.maximum(outside, _FLOOR))
    ce = r.cross_entropy.astype(np.float64)
    if r.probs is not None:
        # 1 − c as the sum of the other classes' probabilities: exact where c rounds to 1
        p = r.probs.astype(np.float64)
        p[np.arange(r.n_steps), r.ref_index] = 0.0
        others = p.sum(1)
        others = np.where(ce > 1e-3, -np.expm1(-ce), others)  # far from saturation 1 − e^−CE is exact too
        return -ce - np.log(np.maximum(others, _TINY))
    return logit_confidence_from_loss(ce)


def record_mean(r: Responses, per_step: np.ndarray) -> np.ndarray:
    """(N,) mean of a (T,) float64 per-step array over each record's steps (0 for empty records)."""
    if r.n_steps == 0:
        return np.zeros(len(r))
    sums = np.add.reduceat(per_step, r.offsets[:-1])
    return np.where(r.lengths > 0, sums, 0.0) / np.maximum(r.lengths, 1)


def aligned(target: Responses, references: list[Responses]) -> bool:
    """True when every reference answered the target's steps: same lengths, same reference classes."""
    return all(
        len(ref) == len(target) and np.array_equal(ref.lengths, target.lengths)
        and np.array_equal(ref.ref_index, target.ref_index) for ref in references
    )


# ---------------------------------------------------------------------------- LiRA
def lira_signals(target: Responses, references: list[Responses]) -> tuple[np.ndarray, np.ndarray, bool]:
    """(target φ (M,), references φ (n_refs, M), aligned): M = steps when aligned, else records."""
    steps = aligned(target, references)
    phi_t = step_logit_confidence(target)
    phis = [step_logit_confidence(r) for r in references]
    if not steps:
        phi_t = record_mean(target, phi_t)
        phis = [record_mean(r, p) for r, p in zip(references, phis)]
    return phi_t, (np.stack(phis) if phis else np.zeros((0, len(phi_t)))), steps


def _unit_mask(target: Responses, mask: np.ndarray | None, n_refs: int, steps: bool) -> np.ndarray:
    """(n_refs, M) mask from a per-record (n_refs, N) mask (all True when None)."""
    if mask is None:
        mask = np.ones((n_refs, len(target)), bool)
    mask = np.asarray(mask, bool)
    return np.repeat(mask, target.lengths, axis=1) if steps else mask


def lira_scores(
    target: Responses,
    references: list[Responses],
    in_mask: np.ndarray | None = None,
    out_mask: np.ndarray | None = None,
    variance: str = "global",
    global_var: tuple[float, float] | None = None,
) -> np.ndarray:
    """LiRA scores of the records of ``target`` ("higher = member"), reference models' answers on
    the same records in ``references``.

    Args:
        in_mask: (n_refs, N) which reference models trained on each record (online LiRA); None
            or no True entry for a record: the offline test on that record.
        out_mask: (n_refs, N) which reference models may serve as OUT models for each record
            (default: every model not IN). A record with no OUT model scores NaN.
        variance: ``"global"`` (σ pooled over every record, Carlini et al.'s choice with few
            reference models) or ``"per_example"`` (each record's own σ; records with fewer than
            two OUT models fall back to the global one).
        global_var: (σ²_out, σ²_in) to use instead of pooling them from ``references``.

    Returns (N,) scores: offline, Stouffer-combined z-scores (see the module docstring); a record
    with IN models, the summed log-likelihood ratio of its steps.
    """
    if variance not in ("global", "per_example"):
        raise ValueError(f"variance must be 'global' or 'per_example', got {variance!r}")
    n_refs = len(references)
    phi_t, phis, steps = lira_signals(target, references)
    ins = _unit_mask(target, in_mask if in_mask is not None else np.zeros((n_refs, len(target)), bool), n_refs, steps)
    outs = _unit_mask(target, out_mask, n_refs, steps) & ~ins if out_mask is not None else ~ins
    unit_score, online = lira_unit_scores(phi_t, phis, ins, outs, variance, global_var)
    if not steps:
        return unit_score
    record = np.repeat(np.arange(len(target)), target.lengths)
    total = np.zeros(len(target))
    np.add.at(total, record, unit_score)
    any_online = np.zeros(len(target), bool)
    np.logical_or.at(any_online, record, online)
    # offline: Stouffer's combination of the steps' z-scores; online: summed log-likelihood ratios
    return np.where(any_online, total, total / np.sqrt(np.maximum(target.lengths, 1)))


def lira_global_variance(target: Responses, references: list[Responses]) -> float:
    """σ²_out pooled over the records (or aligned steps) of ``target`` from reference OUT models."""
    _, phis, steps = lira_signals(target, references)
    return pooled_variance(phis, np.ones_like(phis, bool))


# ---------------------------------------------------------------------------- RMIA
def record_log_likelihood(r: Responses, temperature: float = 1.0) -> np.ndarray:
    """(N,) log Pr(x|θ) as RMIA uses it: the mean log step confidence (geometric mean, see above)."""
    return record_mean(r, step_log_confidence(r, temperature))


def rmia_scores(
    target: Responses,
    references: list[Responses],
    target_population: Responses,
    reference_population: list[Responses],
    a: float = 0.5,
    gamma: float = 1.0,
    mask: np.ndarray | None = None,
    temperature: float = 1.0,
) -> np.ndarray:
    """RMIA scores of the records of ``target`` ("higher = member").

    Args:
        references: reference models' answers on the target's records (same order).
        target_population / reference_population: the target model's and the same reference
            models' answers on population records z (attacker data none of them trained on).
        a: offline scaling of the reference average (Zarifzadeh et al., App. "offline").
        gamma: the pairwise threshold on LR(x, z).
        mask: (n_refs, N) which references may be used for each target record (default: all).
        temperature: softmax temperature of Pr(x|θ) (full probability vectors only).

    Returns (N,) scores in [0, 1]: the share of z with LR(x, z) ≥ γ plus a tie-break below one
    step (the record's own ratio Pr(x|θ)/Pr(x) through a sigmoid); NaN where no reference is usable.
    """
    t = temperature
    lx = record_log_likelihood(target, t)
    ref_x = np.stack([record_log_likelihood(r, t) for r in references])
    lz = record_log_likelihood(target_population, t)
    ref_z = np.stack([record_log_likelihood(r, t) for r in reference_population])
    return rmia_from_log_likelihoods(lx, ref_x, lz, ref_z, a, gamma, mask)


# ---------------------------------------------------------------------------- attack objects
@dataclass
class ReferenceAttack:
    """A fitted reference-model attack in the shape of :class:`core.attacks.shadow_attacks.Attack`; it scores
    only the records it was bound to (:meth:`bind`: the references' answers on them, and RMIA's population).
    """

    name: str
    kind: str  # "lira" or "rmia"
    variance: str = "global"
    a: float = 0.5
    gamma: float = 1.0
    temperature: float = 1.0
    threshold: float = float("nan")
    global_var: float = float("nan")
    _bound: dict = field(default_factory=dict, repr=False)

    def bind(self, references: list[Responses], population: Responses | None = None,
             reference_population: list[Responses] | None = None) -> "ReferenceAttack":
        self._bound = {"references": references, "population": population, "reference_population": reference_population}
        return self

    def fit(self, responses: Responses, membership: np.ndarray) -> "ReferenceAttack":
        """Threshold maximising accuracy of the bound records' scores (an attacker's own data)."""
        s = self.score(responses)
        ok = np.isfinite(s)
        self.threshold = best_threshold(s[ok], np.asarray(membership, bool)[ok])
        return self

    def score(self, responses: Responses) -> np.ndarray:
        b = self._bound
        if not b:
            raise RuntimeError(f"{self.name}: bind() the reference models' answers before score()")
        if self.kind == "lira":
            gv = None if not np.isfinite(self.global_var) else (self.global_var, self.global_var)
            return lira_scores(responses, b["references"], variance=self.variance, global_var=gv)
        return rmia_scores(responses, b["references"], b["population"], b["reference_population"], self.a, self.gamma,
                           temperature=self.temperature)

    def boundary(self) -> None:
        return None

    def state(self) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
        values = torch.tensor([self.threshold, self.a, self.gamma, self.global_var, self.temperature], dtype=torch.float64)
        return {"params": values}, {"kind": self.kind, "variance": self.variance}

    def load_state(self, tensors: dict[str, torch.Tensor], meta: dict[str, str]) -> None:
        if set(tensors) != {"params"} or tensors["params"].shape != (5,) or meta.get("kind") != self.kind:
            raise ValueError(f"{self.name}: stored state does not match this attack")
        self.threshold, self.a, self.gamma, self.global_var, self.temperature = (float(v) for v in tensors["params"])
        self.variance = meta.get("variance", self.variance)


# ---------------------------------------------------------------------------- from trained models
def victim_answers(models: TrainedModels, index: np.ndarray, cache: ArtifactCache | None = None) -> Responses:
    """The final victim answering records ``index`` (e.g. RMIA's population), cached like the shadows'
    :func:`core.experiment.roles.reference_answers`."""
    return cached_answers(models, "victim", np.asarray(index, np.int64), cache or ArtifactCache())


def population_index(models: TrainedModels) -> np.ndarray:
    """RMIA's population: a seeded choice of max(n_eval, 100) attacker-pool records no shadow trained on (at
    most what the pool holds). Its size sets the resolution of the share, not the ranking."""
    cfg, splits = models.cfg, models.splits
    used = np.concatenate(splits.shadow_in) if splits.shadow_in else np.zeros(0, np.int64)
    free = np.setdiff1d(models.data.attacker_pool, used)
    size = max(cfg.n_eval, 100)
    rng = np.random.default_rng([cfg.seed, 0x2A1A])
    return np.sort(rng.permutation(free)[: min(size, len(free))]).astype(np.int64)


#: each shadow plays the target on at most this many of its in records and as many out records
CALIBRATION_RECORDS = 100


@dataclass
class Calibration:
    """Each shadow as a pseudo-target on its own in/out records, the others as its references.

    ``queries[k]`` are the dataset indices shadow k plays the target on (its first m in records,
    then m out records); ``targets[k]`` its answers on them; ``references[k]`` the other shadows'
    answers on the same records, usable where ``out_masks[k]`` says they did not train on them."""

    queries: list[np.ndarray]
    targets: list[Responses]
    references: list[list[Responses]]
    out_masks: list[np.ndarray]
    membership: np.ndarray

    def mapped(self, target_fn, reference_fn) -> "Calibration":
        """The same calibration with every answer passed through ``target_fn(k, r)`` (shadow k as
        target) and ``reference_fn(j, k, r)`` (shadow j answering shadow k's records) — e.g. a
        defense applied to the attacker's own models."""
        n = len(self.targets)
        refs = [[reference_fn(j, k, r) for j, r in zip([j for j in range(n) if j != k], self.references[k])]
                for k in range(n)]
        return Calibration(self.queries, [target_fn(k, t) for k, t in enumerate(self.targets)], refs,
                           self.out_masks, self.membership)


def _calibration(models: TrainedModels, cache: ArtifactCache) -> Calibration:

    cfg, splits = models.cfg, models.splits
    n = len(models.shadows)
    m = min(cfg.n_eval, CALIBRATION_RECORDS)
    keep = np.r_[np.arange(m), cfg.n_eval + np.arange(m)]  # positions in a shadow's query set: m in, m out
    queries = [models.shadow_query_index(i)[keep] for i in range(n)]
    cross = reference_answers(models, np.concatenate(queries), cache)  # every shadow on every query record
    q = 2 * m
    targets, refs, masks = [], [], []
    for k in range(n):
        others = [j for j in range(n) if j != k]
        targets.append(models.shadows[k].responses[cfg.epochs].subset(keep))
        refs.append([cross[j].subset(np.arange(k * q, (k + 1) * q)) for j in others])
        trained = [np.isin(queries[k], splits.shadow_in[j]) for j in others]
        masks.append(~np.stack(trained))
    membership = np.concatenate([np.r_[np.ones(m, bool), np.zeros(m, bool)]] * n)
    return Calibration(queries, targets, refs, masks, membership)


@dataclass
class ReferenceInputs:
    """Everything LiRA and RMIA read, as answers (no models): the target's answers on the attacked
    records, each reference model's (shadow's) answers on the same records, the target's and the
    references' answers on RMIA's population, and the shadows' calibration for the thresholds.
    A defense evaluated against these attacks swaps in defended answers (:mod:`core.defenses`)."""

    target: Responses
    references: list[Responses]
    population_target: Responses
    population_references: list[Responses]
    calibration: Calibration
    population_index: np.ndarray
    eval_index: np.ndarray

    def subset(self, keep: tuple[int, ...] | list[int]) -> "ReferenceInputs":
        """The same inputs with only the reference models (shadows) at positions ``keep``: what an
        attacker holding just those references would use (the reference budget,
        :mod:`core.measurement.budget`). The calibration keeps those shadows as pseudo-targets, each with the
        others of ``keep`` as its references. Needs at least two positions."""
        keep = sorted({int(k) for k in keep})
        n = len(self.references)
        if len(keep) < 2 or keep[0] < 0 or keep[-1] >= n:
            raise ValueError(f"a reference subset needs at least two of the {n} references, got {keep}")
        cal = self.calibration
        q = len(cal.membership) // n  # each shadow's block of calibration records

        def others_of(k: int) -> list[int]:  # positions in cal.references[k] of the kept shadows j ≠ k
            return [j if j < k else j - 1 for j in keep if j != k]

        sub_cal = Calibration(
            [cal.queries[k] for k in keep], [cal.targets[k] for k in keep],
            [[cal.references[k][p] for p in others_of(k)] for k in keep],
            [cal.out_masks[k][others_of(k)] for k in keep],
            np.concatenate([cal.membership[k * q:(k + 1) * q] for k in keep]))
        return replace(self, references=[self.references[k] for k in keep],
                       population_references=[self.population_references[k] for k in keep], calibration=sub_cal)


def reference_inputs(models: TrainedModels, cache: ArtifactCache | None = None) -> ReferenceInputs | None:
    """The undefended inputs of the final epoch (None with fewer than 2 shadows); the shadows'
    answers come from :func:`core.experiment.roles.reference_answers`, the victim's on the population from
    :func:`victim_answers`, all cached: nothing retrains."""

    cache = cache or ArtifactCache()
    if len(models.shadows) < 2:
        return None
    pop = population_index(models)
    return ReferenceInputs(models.victim.responses[models.cfg.epochs], reference_answers(models, None, cache),
                           victim_answers(models, pop, cache), reference_answers(models, pop, cache),
                           _calibration(models, cache), pop, models.splits.eval_index)


def fit_reference_attacks(inputs: ReferenceInputs, variance: str = "global") -> list[ReferenceAttack]:
    """Offline LiRA and RMIA fitted on the attacker's side of ``inputs`` (σ²_out from the references
    on the attacked records — no labels needed; RMIA's a and T and both thresholds on the shadows'
    calibration) and bound to the references' answers: ready to ``score(target answers)``."""
    cal, refs = inputs.calibration, inputs.references
    target = inputs.target

    # ---- LiRA: σ²_out from the shadows on the victim's records, threshold from the shadows
    sigma2 = lira_global_variance(target, refs)
    cal_lira = np.concatenate([
        lira_scores(t, r, out_mask=m, variance=variance, global_var=(sigma2, sigma2))
        for t, r, m in zip(cal.targets, cal.references, cal.out_masks)])
    lira = ReferenceAttack(LIRA, "lira", variance=variance, global_var=sigma2).bind(refs)
    ok = np.isfinite(cal_lira)
    lira.threshold = best_threshold(cal_lira[ok], cal.membership[ok])

    # ---- RMIA: a, T and the threshold from the shadows
    pop_refs = inputs.population_references
    n = len(refs)

    def calibration_scores(a: float, t: float) -> np.ndarray:
        out = []
        for k in range(n):
            others = [j for j in range(n) if j != k]
            out.append(rmia_scores(cal.targets[k], cal.references[k], pop_refs[k], [pop_refs[j] for j in others],
                                   a=a, mask=cal.out_masks[k], temperature=t))
        return np.concatenate(out)

    temperatures = RMIA_T_GRID if target.probs is not None else (1.0,)
    best, best_auc, best_scores = (RMIA_A_GRID[0], 1.0), -1.0, None
    for t in temperatures:
        for a in RMIA_A_GRID:
            s = calibration_scores(a, t)
            ok = np.isfinite(s)
            auc = roc_auc(s[ok], cal.membership[ok]) if ok.any() else 0.5
            if auc > best_auc + 1e-9:
                best, best_auc, best_scores = (a, t), auc, s
    assert best_scores is not None  # the grid's first point beats best_auc = −1 (an AUC lies in [0, 1])
    rmia = ReferenceAttack(RMIA, "rmia", a=best[0], temperature=best[1]).bind(refs, inputs.population_target, pop_refs)
    ok = np.isfinite(best_scores)
    rmia.threshold = best_threshold(best_scores[ok], cal.membership[ok])
    return [lira, rmia]


def score_reference_attacks(attacks: list[ReferenceAttack], target: Responses, membership: np.ndarray,
                            population_target: Responses | None = None) -> dict[str, AttackOutcome]:
    """Score ``target`` (answers on the bound records) with fitted reference attacks; RMIA reads the
    target's answers on the population, ``population_target`` when given (e.g. a defended victim's)."""
    out: dict[str, AttackOutcome] = {}
    for attack in attacks:
        if population_target is not None and attack.kind == "rmia":
            b = attack._bound
            attack = replace(attack).bind(b["references"], population_target, b["reference_population"])
        scores = attack.score(target)
        out[attack.name] = AttackOutcome(evaluate_attack(attack.name, scores, membership, attack.threshold), scores)
    return out


# ---------------------------------------------------------------------------- online LiRA (option)
def online_lira(models: TrainedModels, n_models: int = 4) -> AttackOutcome:
    """Online LiRA on the victim's evaluation set — **a stronger threat model**: the attacker is
    assumed to hold the candidate records and to train on them.

    Trains ``n_models`` extra reference models (cached, like shadows, under the training hash):
    model m trains on a seeded random half of the victim's 2·n_eval evaluation records plus
    n_train − n_eval attacker records, so each target record is IN for about half of them. The
    shadows are added as OUT models. Score: per record, the log-likelihood ratio of φ under
    N(μ_in, σ²_in) and N(μ_out, σ²_out); threshold 0 (the likelihood-ratio test at equal priors).
    """
    refs, in_mask = online_references(models, n_models)
    target = models.victim.responses[models.cfg.epochs]
    scores = lira_scores(target, refs, in_mask=in_mask)
    result = evaluate_attack(LIRA_ONLINE, scores, models.eval_membership, 0.0)
    return AttackOutcome(result, scores)


def online_reference_plan(models: TrainedModels, cache: ArtifactCache):
    """``plan(m)`` → (role, train_index, chosen, weights key) of online reference model m: its
    training records (a seeded half of the victim's evaluation records, positions ``chosen`` in
    ``eval_index``, plus attacker records) and the cache key of its weights. Model m is the same
    whatever the number of models, so a later attack finds the ones an online run trained."""
    cfg, splits, data = models.cfg, models.splits, models.data
    eval_index, n_eval = splits.eval_index, cfg.n_eval
    used = np.concatenate(splits.shadow_in) if splits.shadow_in else np.zeros(0, np.int64)
    spare = np.setdiff1d(data.attacker_pool, np.r_[used, population_index(models)])
    extra = cfg.n_train - n_eval
    if extra > len(spare):
        spare = data.attacker_pool  # small pools: reuse attacker records (they are never scored)

    def plan(m: int) -> tuple[str, np.ndarray, np.ndarray, str]:
        rng = np.random.default_rng([cfg.seed, 0x11AA, m])
        chosen = rng.permutation(len(eval_index))[:n_eval]
        train_index = np.concatenate([eval_index[chosen], rng.permutation(spare)[:extra]]).astype(np.int64)
        role = f"lira_in_{m}"
        return role, train_index, chosen, cache.key("model", cfg.training_hash, role, records_digest(train_index), "weights")

    return plan


def online_references(models: TrainedModels, n_models: int = 4, cache: ArtifactCache | None = None
                      ) -> tuple[list[Responses], np.ndarray]:
    """Online LiRA's references on the victim's evaluation records: the ``n_models`` extra models
    (trained once and cached, see :func:`online_lira`), then the shadows; and the (n_refs, N) mask
    of which reference trained on which record (the shadows on none)."""
    cache = cache or ArtifactCache()
    cfg, splits, task, data = models.cfg, models.splits, models.task, models.data
    eval_index = splits.eval_index
    answers, in_mask = [], []
    expected = tensor_shapes(task.build_model(cfg, data).state_dict())
    plan = online_reference_plan(models, cache)
    for m in range(n_models):
        role, train_index, chosen, key_w = plan(m)
        key_a = cache.key("model", cfg.training_hash, role, records_digest(train_index), "answers",
                          records_digest(eval_index))
        resp = cache.get_responses(key_a)
        if resp is None or len(resp) != len(eval_index):
            weights = cache.get_tensors(key_w, expected=expected, require_finite=True)
            if weights is None:
                model = train_model(task, cfg, data, train_index, role_seed(cfg, f"shadow_{100 + m}"))
                weights = {k: v.detach().cpu() for k, v in model.state_dict().items()}
                cache.put_tensors(key_w, weights)
            model = model_from_weights(task, cfg, weights, data)
            resp = task.respond(cfg, model, data, eval_index, record_features=False).validate()
            cache.put_responses(key_a, resp)
        answers.append(resp)
        mask = np.zeros(len(eval_index), bool)
        mask[chosen] = True
        in_mask.append(mask)
    shadows = reference_answers(models, None, cache)
    in_mask = np.r_[np.stack(in_mask), np.zeros((len(shadows), len(eval_index)), bool)]
    return answers + shadows, in_mask
