"""Sequence-model membership scores from the per-token log-probabilities of the reference.

For a reference y₁ … y_L the Responses hold per step ℓᵢ = log p(yᵢ | y_<i, x) = −CE, the entropy H(pᵢ)
and the spread Var_{j~pᵢ}[log pᵢⱼ]. Scores are "higher = member" (the mean token loss is the existing
``loss_threshold`` attack):

* **Min-K%** (Shi et al., ICLR 2024): the mean of the ⌈k·L⌉ lowest ℓᵢ (k = 20 %).
* **Min-K%++** (Zhang et al. 2024): each token standardised by the moments of log p under the model's own
  distribution, zᵢ = (ℓᵢ − μᵢ) / σᵢ with μᵢ = −H(pᵢ), σᵢ² = Σⱼ pᵢⱼ (log pᵢⱼ)² − μᵢ², then the mean of the
  ⌈k·L⌉ lowest zᵢ: a training record sits at a local maximum of the likelihood. σᵢ is floored at
  :data:`SIGMA_FLOOR` (a one-hot step has σ = 0).
* **zlib** (Carlini et al., USENIX Security 2021, §5.1): −loss / zlib_bytes of the reference text, since a
  repetitive text is easy for any model but also compresses well.

The **reference ratio** (Carlini et al. 2021 §5.1) needs other models' answers: it is a models-stage attack
(:mod:`core.experiment.model_attacks`) built on :func:`reference_ratio_scores`. Every threshold is fitted on
the shadows' own in/out records.
"""
from __future__ import annotations

import zlib
from typing import Callable

import numpy as np
import torch

from core.attacks.registry import AttackEntry, register
from core.measurement.metrics import best_threshold
from core.measurement.responses import Responses

#: k of Min-K% and Min-K%++: the share of a record's tokens (the least likely ones) averaged
MIN_K = 0.2
#: σ floor of Min-K%++ (in nats): a step whose distribution is (almost) one-hot has σ ≈ 0
SIGMA_FLOOR = 1e-3
#: the record feature holding the zlib-compressed length (bytes) of each record's reference text
ZLIB_FEATURE = "reference_zlib_bytes"


def zlib_length(text: str) -> int:
    """Bytes of ``text`` (UTF-8) compressed by zlib at its default level (Carlini et al. 2021 §5.1)."""
    return len(zlib.compress(text.encode("utf-8")))


def token_log_probs(responses: Responses) -> np.ndarray:
    """(T,) log p of each step's reference token: −CE, kept in float32 as a loss, so a confident
    step's tiny loss is not rounded away as log(ref_prob) in float32 would be near p = 1."""
    if not responses.is_one_hot_reference:
        raise ValueError("token log-probabilities need one reference token per step (a soft reference has none)")
    return -responses.cross_entropy.astype(np.float64)


def min_k_mean(per_step: np.ndarray, lengths: np.ndarray, k: float = MIN_K) -> np.ndarray:
    """(N,) per record: the mean of its ⌈k·L⌉ lowest per-step values (at least one; an empty record: 0)."""
    if not 0.0 < k <= 1.0:
        raise ValueError(f"k must lie in (0, 1], got {k}")
    out = np.zeros(len(lengths), np.float64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    for i, n in enumerate(np.asarray(lengths, np.int64)):
        if n == 0:
            continue
        m = max(1, int(np.ceil(k * n)))
        out[i] = np.partition(per_step[offsets[i] : offsets[i + 1]], m - 1)[:m].mean()
    return out


def min_k_scores(responses: Responses, k: float = MIN_K) -> np.ndarray:
    """Min-K% (Shi et al. 2024): mean of the k·100 % lowest reference-token log-probabilities."""
    return min_k_mean(token_log_probs(responses), responses.lengths, k)


def standardised_log_probs(responses: Responses) -> np.ndarray:
    """(T,) zᵢ = (ℓᵢ − μᵢ)/σᵢ of Min-K%++ with μᵢ = −H(pᵢ), σᵢ² = Var_{j~pᵢ}[log pᵢⱼ] (floored at SIGMA_FLOOR)."""
    if responses.logp_var is None:
        raise ValueError(MISSING_MOMENTS)
    mu = -responses.entropy.astype(np.float64)
    sigma = np.maximum(np.sqrt(np.maximum(responses.logp_var.astype(np.float64), 0.0)), SIGMA_FLOOR)
    return (token_log_probs(responses) - mu) / sigma


def min_k_plus_plus_scores(responses: Responses, k: float = MIN_K) -> np.ndarray:
    """Min-K%++ (Zhang et al. 2024): mean of the k·100 % lowest standardised token log-probabilities."""
    return min_k_mean(standardised_log_probs(responses), responses.lengths, k)


def zlib_scores(responses: Responses) -> np.ndarray:
    """−loss / zlib bytes of the reference text (Carlini et al. 2021): higher = member."""
    if ZLIB_FEATURE not in responses.record_features:
        raise ValueError(MISSING_ZLIB)
    size = np.asarray(responses.record_features[ZLIB_FEATURE], np.float64).reshape(len(responses))
    return -responses.mean_cross_entropy.astype(np.float64) / np.maximum(size, 1.0)


def reference_ratio_scores(victim_loss: np.ndarray, reference_losses: np.ndarray,
                           reference_out: np.ndarray) -> np.ndarray:
    """−(victim loss − mean loss of the reference models that did not train on the record).

    ``reference_losses`` (R, N) the R references' mean token NLL on the N records; ``reference_out``
    (R, N) whether reference r did *not* train on record n. A record no reference is out on gets NaN.
    """
    losses = np.asarray(reference_losses, np.float64)
    out = np.asarray(reference_out, bool)
    count = out.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(out, losses, 0.0).sum(0) / count
    return np.where(count > 0, -(np.asarray(victim_loss, np.float64) - mean), np.nan)


MISSING_MOMENTS = ("these Responses lack the spread of log p per step (logp_var): they were stored before it was "
                   "kept (retrain the models to compute it), or a mechanism did not recompute it")
MISSING_ZLIB = (f"these Responses lack the reference texts' zlib lengths (record feature {ZLIB_FEATURE!r}): they were "
                "stored before the task provided them (retrain the models to compute it)")


def lacks_moments(responses: Responses) -> str | None:
    """Why Min-K%++ cannot run on ``responses`` (None when it can)."""
    return MISSING_MOMENTS if responses.logp_var is None else None


def lacks_zlib(responses: Responses) -> str | None:
    """Why the zlib attack cannot run on ``responses`` (None when it can)."""
    return None if ZLIB_FEATURE in responses.record_features else MISSING_ZLIB


class SequenceScoreAttack:
    """Member iff score(record) ≥ threshold, the threshold fitted on the shadows (module docstring).

    ``score_fn`` maps Responses to an (N,) "higher = member" score (Min-K%, Min-K%++, zlib).
    """

    def __init__(self, name: str, score_fn: Callable[[Responses], np.ndarray]):
        self.name = name
        self.score_fn = score_fn
        self.threshold = float("nan")

    def score(self, responses: Responses) -> np.ndarray:
        return np.asarray(self.score_fn(responses), np.float64)

    def fit(self, responses: Responses, membership: np.ndarray) -> "SequenceScoreAttack":
        self.threshold = best_threshold(self.score(responses), np.asarray(membership, bool))
        return self

    def boundary(self) -> None:
        """No boundary on a signal the record plots show (the score is the attack's own)."""
        return None

    def state(self) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
        return {"threshold": torch.tensor([self.threshold], dtype=torch.float64)}, {"score": self.name}

    def load_state(self, tensors: dict[str, torch.Tensor], meta: dict[str, str]) -> None:
        if set(tensors) != {"threshold"} or meta.get("score") != self.name:
            raise ValueError(f"{self.name}: stored state does not match this attack")
        self.threshold = float(tensors["threshold"][0])


def min_k_attack(k: float = MIN_K) -> SequenceScoreAttack:
    return SequenceScoreAttack("min_k", lambda r: min_k_scores(r, k))


def min_k_plus_plus_attack(k: float = MIN_K) -> SequenceScoreAttack:
    return SequenceScoreAttack("min_k_pp", lambda r: min_k_plus_plus_scores(r, k))


def zlib_attack() -> SequenceScoreAttack:
    return SequenceScoreAttack("zlib", zlib_scores)


# ---------------------------------------------------------------------------- registered (core.attacks imports this module)
_NOT_SEQUENCE = (("image", "one answer per record: the lowest k % of one token's log-probability is the loss threshold"),
                 ("tabular", "one answer per record: the lowest k % of one token's log-probability is the loss threshold"),
                 ("navigation", "the reference of a step is the label model's policy (a distribution), not one token "
                                "whose log-probability could be ranked"))
register(AttackEntry("min_k", "Min-K% (lowest token log-probs)", "Min-K%", "shadows", "responses",
                     lambda training: min_k_attack(), tasks=("translation",), not_for=_NOT_SEQUENCE,
                     cite="Shi et al., ICLR 2024"))
register(AttackEntry("min_k_pp", "Min-K%++ (standardised token log-probs)", "Min-K%++", "shadows", "responses",
                     lambda training: min_k_plus_plus_attack(), tasks=("translation",), not_for=_NOT_SEQUENCE,
                     requires=lacks_moments, cite="Zhang et al. 2024"))
register(AttackEntry("zlib", "Loss / zlib length of the reference", "zlib", "shadows", "responses",
                     lambda training: zlib_attack(), tasks=("translation",),
                     not_for=(("image", "an image has no text to compress"),
                              ("navigation", "a map's reference is a policy, not a text to compress"),
                              ("tabular", "a table row has no text to compress")),
                     requires=lacks_zlib, cite="Carlini et al., USENIX Security 2021"))
