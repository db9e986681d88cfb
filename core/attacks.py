"""Membership-inference attacks. They consume :class:`Responses` only, never models.

Every attack is fitted on the attacker's shadow data (responses of shadow models to their own
members and non-members, with known membership) and then scores the victim's responses.
Scores are "higher = member"; each attack also fixes a decision threshold on shadow data.

* :class:`ShadowModelAttack` — Shokri et al.'s attack as used in paper 000 §3.2: a classifier
  on (model output, reference output). An MLP when every record is answered by one
  prediction, an LSTM over the step sequence otherwise (translation: PVMIA, paper 001 A.2).
* :class:`ThresholdAttack` — loss threshold (Yeom et al.) and entropy threshold baselines on
  per-record signals; the threshold maximises accuracy on shadow data.
* :class:`RankHistogramAttack` — PRMIA (Song & Shmatikov 2019): a classifier on the histogram
  of the reference tokens' ranks in the model's output.
* :class:`RecordFeatureAttack` — a classifier on task-provided per-record features (e.g. the
  BLEU-feature attack of Hisamoto et al. 2020).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np
import torch
from torch import nn

from .metrics import AttackResult, best_threshold, evaluate_attack
from .models.attack import AttackLSTM, AttackMLP
from .responses import Responses


class Attack(Protocol):
    """What every attack offers."""

    name: str
    threshold: float

    def fit(self, responses: Responses, membership: np.ndarray) -> "Attack": ...

    def score(self, responses: Responses) -> np.ndarray: ...


@dataclass
class AttackTraining:
    """Hyper-parameters of a learned attack classifier."""

    hidden: int = 64
    epochs: int = 80
    lr: float = 1e-3
    batch_size: int = 128
    seed: int = 0


def _fit_classifier(
    model: nn.Module, x: torch.Tensor, lengths: torch.Tensor, y: np.ndarray, train: AttackTraining
) -> nn.Module:
    """Mini-batch Adam on binary cross-entropy; deterministic given ``train.seed``."""
    g = torch.Generator().manual_seed(train.seed)
    target = torch.as_tensor(y, dtype=torch.float32)
    opt = torch.optim.Adam(model.parameters(), lr=train.lr)
    loss_fn = nn.BCEWithLogitsLoss()
    n = x.shape[0]
    model.train()
    for _ in range(train.epochs):
        perm = torch.randperm(n, generator=g)
        for start in range(0, n, train.batch_size):
            idx = perm[start : start + train.batch_size]
            opt.zero_grad()
            loss = loss_fn(model(x[idx], lengths[idx]), target[idx])
            loss.backward()
            opt.step()
    model.eval()
    return model


def _predict(model: nn.Module, x: torch.Tensor, lengths: torch.Tensor) -> np.ndarray:
    with torch.no_grad():
        return torch.sigmoid(torch.cat([model(x[i : i + 1024], lengths[i : i + 1024]) for i in range(0, x.shape[0], 1024)])).numpy()


def padded_step_features(responses: Responses) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, L_max, F) zero-padded per-step features and (N,) lengths."""
    feats = responses.step_features()
    lengths = responses.lengths
    n, l_max = len(responses), max(int(lengths.max()), 1) if len(responses) else 1
    out = np.zeros((n, l_max, feats.shape[1]), np.float32)
    off = responses.offsets
    for i in range(n):
        out[i, : lengths[i]] = feats[off[i] : off[i + 1]]
    return torch.from_numpy(out), torch.as_tensor(lengths, dtype=torch.long)


class _LearnedAttack:
    """Shared fit/score of attacks that train a classifier on a feature tensor."""

    name = "learned"
    threshold = 0.5

    def __init__(self, training: AttackTraining | None = None):
        self.training = training or AttackTraining()
        self.model: nn.Module | None = None

    def features(self, responses: Responses) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def build(self, in_dim: int, sequential: bool) -> nn.Module:
        return AttackLSTM(in_dim, self.training.hidden) if sequential else AttackMLP(in_dim, self.training.hidden)

    def fit(self, responses: Responses, membership: np.ndarray) -> "_LearnedAttack":
        x, lengths = self.features(responses)
        self._mean = x.reshape(-1, x.shape[-1]).mean(0)
        self._std = x.reshape(-1, x.shape[-1]).std(0).clamp_min(1e-3)
        torch.manual_seed(self.training.seed)
        self.model = self.build(x.shape[-1], sequential=x.ndim == 3 and x.shape[1] > 1)
        _fit_classifier(self.model, self._standardise(x, lengths), lengths, membership, self.training)
        return self

    def _standardise(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        z = (x - self._mean) / self._std
        if z.ndim == 3:  # keep padding at zero
            mask = torch.arange(z.shape[1])[None, :] < lengths[:, None]
            z = z * mask[..., None]
        return z

    def score(self, responses: Responses) -> np.ndarray:
        if self.model is None:
            raise RuntimeError(f"{self.name}: fit() before score()")
        x, lengths = self.features(responses)
        return _predict(self.model, self._standardise(x, lengths), lengths)


class ShadowModelAttack(_LearnedAttack):
    """Shokri et al.'s classifier on per-step (output, reference) features.

    With one step per record it is an MLP on [p, one-hot label]; with sequences it is an LSTM
    over the steps (PVMIA when the features are probability values, paper 001 A.2).
    """

    def __init__(self, training: AttackTraining | None = None, name: str = "shadow"):
        super().__init__(training)
        self.name = name

    def features(self, responses: Responses) -> tuple[torch.Tensor, torch.Tensor]:
        return padded_step_features(responses)


#: Rank bins of the PRMIA histogram: rank 0, 1, 2, 3–4, 5–9, 10–99, ≥ 100.
RANK_BINS = np.array([0, 1, 2, 3, 5, 10, 100, np.iinfo(np.int32).max])


def rank_histogram(responses: Responses) -> np.ndarray:
    """(N, B) normalised histogram of each record's reference ranks (Song & Shmatikov 2019)."""
    bins = np.digitize(responses.ref_rank, RANK_BINS[1:-1])
    record = np.repeat(np.arange(len(responses)), responses.lengths)
    hist = np.zeros((len(responses), len(RANK_BINS) - 1), np.float32)
    np.add.at(hist, (record, bins), 1.0)
    return (hist / np.maximum(responses.lengths[:, None], 1)).astype(np.float32)


class RankHistogramAttack(_LearnedAttack):
    """PRMIA: an MLP on the histogram of reference-token ranks (plus the record's length)."""

    name = "prmia"

    def features(self, responses: Responses) -> tuple[torch.Tensor, torch.Tensor]:
        hist = rank_histogram(responses)
        x = np.concatenate([hist, np.log1p(responses.lengths[:, None].astype(np.float32))], axis=1)
        return torch.from_numpy(x), torch.ones(len(responses), dtype=torch.long)


class RecordFeatureAttack(_LearnedAttack):
    """An MLP on task-provided per-record features ``responses.record_features[feature]``."""

    def __init__(self, feature: str, name: str | None = None, training: AttackTraining | None = None):
        super().__init__(training)
        self.feature = feature
        self.name = name or feature

    def features(self, responses: Responses) -> tuple[torch.Tensor, torch.Tensor]:
        if self.feature not in responses.record_features:
            raise KeyError(f"responses carry no record feature {self.feature!r}")
        x = np.asarray(responses.record_features[self.feature], np.float32)
        return torch.from_numpy(x.reshape(len(responses), -1)), torch.ones(len(responses), dtype=torch.long)


class ThresholdAttack:
    """Member iff ``sign · signal(record) >= threshold``; threshold fitted on shadow data.

    ``loss_threshold`` (Yeom et al.): low cross-entropy to the reference ⇒ member.
    ``entropy_threshold``: low average prediction entropy (APE, paper 000 eq. 3) ⇒ member.
    """

    def __init__(self, name: str, signal: Callable[[Responses], np.ndarray], sign: float = -1.0):
        self.name = name
        self.signal = signal
        self.sign = sign
        self.threshold = float("nan")

    def score(self, responses: Responses) -> np.ndarray:
        return self.sign * np.asarray(self.signal(responses), np.float64)

    def fit(self, responses: Responses, membership: np.ndarray) -> "ThresholdAttack":
        self.threshold = best_threshold(self.score(responses), membership)
        return self


def loss_threshold_attack() -> ThresholdAttack:
    return ThresholdAttack("loss_threshold", lambda r: r.mean_cross_entropy)


def entropy_threshold_attack() -> ThresholdAttack:
    return ThresholdAttack("entropy_threshold", lambda r: r.ape)


def standard_attacks(training: AttackTraining, extra: list[Attack] | None = None) -> list[Attack]:
    """The attacks every task runs: shadow-model classifier and the two threshold baselines."""
    return [ShadowModelAttack(training), loss_threshold_attack(), entropy_threshold_attack(), *(extra or [])]


@dataclass
class AttackOutcome:
    """Result of one attack plus its per-record scores on the evaluation set."""

    result: AttackResult
    scores: np.ndarray


def run_attacks(
    attacks: list[Attack],
    shadow_responses: Responses,
    shadow_membership: np.ndarray,
    target_responses: Responses,
    target_membership: np.ndarray,
) -> dict[str, AttackOutcome]:
    """Fit each attack on shadow data and evaluate it on the target's balanced evaluation set."""
    out: dict[str, AttackOutcome] = {}
    for attack in attacks:
        attack.fit(shadow_responses, shadow_membership)
        scores = attack.score(target_responses)
        out[attack.name] = AttackOutcome(evaluate_attack(attack.name, scores, target_membership, attack.threshold), scores)
    return out
