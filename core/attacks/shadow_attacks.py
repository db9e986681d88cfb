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

import json
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

import numpy as np
import torch
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors
from torch import nn

from core.attacks.attack_ensemble import FitMember, fit_members
from core.attacks.registry import AttackEntry, register
from core.foundations.device import default_device
from core.foundations.names import ATTACK_NAMES, ATTACK_SHORT
from core.measurement.metrics import AttackMetrics, best_threshold, evaluate_attack
from core.measurement.responses import Responses
from core.models.attack import AttackLSTM, AttackMLP


class Attack(Protocol):
    """What every attack offers."""

    name: str
    threshold: float  # decision: member iff score >= threshold

    def fit(self, responses: Responses, membership: np.ndarray) -> "Attack": ...

    def score(self, responses: Responses) -> np.ndarray: ...

    def boundary(self) -> dict | None: ...

    def state(self) -> tuple[dict[str, torch.Tensor], dict[str, str]]: ...

    def load_state(self, tensors: dict[str, torch.Tensor], meta: dict[str, str]) -> None: ...


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
    """Mini-batch Adam on binary cross-entropy; deterministic given ``train.seed``.

    ``model`` may be a :class:`core.models.attack.JointAttack` of E classifiers (logits (N, E)): the loss is then
    Σₑ of each member's mean cross-entropy, every member seeing the same batches — the batches a
    classifier fitted alone sees (the permutation depends on ``train.seed`` and N only).
    The model trains on the device its parameters are on; ``x`` and ``lengths`` move there.
    """
    device = next(model.parameters()).device
    g = torch.Generator().manual_seed(train.seed)
    target = torch.as_tensor(y, dtype=torch.float32, device=device)
    x = x.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=train.lr)
    loss_fn = nn.BCEWithLogitsLoss(reduction="none")
    n = x.shape[0]
    model.train()
    for _ in range(train.epochs):
        perm = torch.randperm(n, generator=g)
        for start in range(0, n, train.batch_size):
            idx = perm[start : start + train.batch_size]
            opt.zero_grad()
            logits = model(x[idx.to(device)], lengths[idx])
            t = target[idx.to(device)]
            loss = loss_fn(logits, t[:, None].expand_as(logits) if logits.ndim == 2 else t).mean(0).sum()
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

    def prepare(self, responses: Responses) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
        """Fix the standardisation on ``responses`` and build the (seeded, unfitted) classifier:
        (classifier, standardised features, lengths) — what fitting needs, alone or jointly."""
        x, lengths = self.features(responses)
        self._mean = x.reshape(-1, x.shape[-1]).mean(0)
        self._std = x.reshape(-1, x.shape[-1]).std(0).clamp_min(1e-3)
        torch.manual_seed(self.training.seed)
        model = self.build(x.shape[-1], sequential=x.ndim == 3 and x.shape[1] > 1)
        return model, self._standardise(x, lengths), lengths

    def fit(self, responses: Responses, membership: np.ndarray) -> "_LearnedAttack":
        return self.fit_prepared(*self.prepare(responses), membership)

    def fit_prepared(self, model: nn.Module, z: torch.Tensor, lengths: torch.Tensor,
                     membership: np.ndarray) -> "_LearnedAttack":
        """Fit what :meth:`prepare` built (on the GPU when there is one; the fitted model lives on the CPU)."""
        self.model = _fit_classifier(model.to(default_device()), z, lengths, membership, self.training).cpu()
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

    def boundary(self) -> None:
        """A learned attack has no boundary on one signal (plots fit a surrogate instead)."""
        return None

    def state(self) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
        """Fitted classifier weights and standardisation, plus what rebuilds the classifier."""
        if self.model is None:
            raise RuntimeError(f"{self.name}: fit() before state()")
        tensors = {f"model.{k}": v.detach().cpu() for k, v in self.model.state_dict().items()}
        tensors.update(mean=self._mean, std=self._std)
        meta = {"in_dim": str(int(self._mean.shape[0])), "sequential": str(isinstance(self.model, AttackLSTM))}
        return tensors, meta

    def load_state(self, tensors: dict[str, torch.Tensor], meta: dict[str, str]) -> None:
        """Inverse of :meth:`state`; raises ``ValueError`` when names or shapes do not fit."""
        try:
            in_dim, sequential = int(meta["in_dim"]), meta["sequential"] == "True"
            model = self.build(in_dim, sequential)
            model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")}, strict=True)
            mean, std = tensors["mean"], tensors["std"]
        except (KeyError, RuntimeError, ValueError) as exc:
            raise ValueError(f"{self.name}: stored state does not match this attack: {exc}") from None
        if mean.shape != (in_dim,) or std.shape != (in_dim,):
            raise ValueError(f"{self.name}: stored standardisation has the wrong shape")
        self.model, self._mean, self._std = model.eval(), mean, std


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


#: Per-record signals a threshold attack can read, by the name :meth:`Responses.record_signals` uses.
SIGNALS: dict[str, Callable[[Responses], np.ndarray]] = {
    "cross_entropy": lambda r: r.mean_cross_entropy,
    "ape": lambda r: r.ape,
}


class ThresholdAttack:
    """Member iff ``signal(record) <= signal_threshold``; the threshold is fitted on shadow data.

    ``loss_threshold`` (Yeom et al.): low cross-entropy to the reference ⇒ member.
    ``entropy_threshold``: low average prediction entropy (APE, paper 000 eq. 3) ⇒ member.

    The fitted threshold is kept in the signal's own units (``signal_threshold``), so a plot can
    draw the boundary on the signal's axis; ``score`` = −signal is the "higher = member" score
    the metrics rank, and ``threshold`` the same boundary in score units.
    """

    member_if = "below"

    def __init__(self, name: str, signal: str):
        if signal not in SIGNALS:
            raise ValueError(f"unknown signal {signal!r}; choose one of {sorted(SIGNALS)}")
        self.name = name
        self.signal = signal
        self.signal_threshold = float("nan")

    @property
    def threshold(self) -> float:
        return -self.signal_threshold

    def score(self, responses: Responses) -> np.ndarray:
        return -np.asarray(SIGNALS[self.signal](responses), np.float64)

    def fit(self, responses: Responses, membership: np.ndarray) -> "ThresholdAttack":
        self.signal_threshold = -best_threshold(self.score(responses), membership)
        return self

    def boundary(self) -> dict[str, object]:
        """The decision boundary in the signal's units, for plots: member iff signal ≤ threshold."""
        t = self.signal_threshold
        return {"signal": self.signal, "threshold": t if np.isfinite(t) else None, "member_if": self.member_if}

    def state(self) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
        return {"signal_threshold": torch.tensor([self.signal_threshold], dtype=torch.float64)}, {"signal": self.signal}

    def load_state(self, tensors: dict[str, torch.Tensor], meta: dict[str, str]) -> None:
        if set(tensors) != {"signal_threshold"} or meta.get("signal") != self.signal:
            raise ValueError(f"{self.name}: stored state does not match this attack")
        self.signal_threshold = float(tensors["signal_threshold"][0])


def loss_threshold_attack() -> ThresholdAttack:
    return ThresholdAttack("loss_threshold", "cross_entropy")


def entropy_threshold_attack() -> ThresholdAttack:
    return ThresholdAttack("entropy_threshold", "ape")


@dataclass
class AttackOutcome:
    """Result of one attack plus its per-record scores on the evaluation set."""

    result: AttackMetrics
    scores: np.ndarray


def fit_attacks(attacks: list[Attack], shadow_responses: Responses, shadow_membership: np.ndarray) -> list[Attack]:
    """Fit every attack on the attacker's shadow data (in place); return them."""
    for attack in attacks:
        attack.fit(shadow_responses, shadow_membership)
    return attacks


def fit_attack_sets(attack_sets: Sequence[list[Attack]], responses: Sequence[Responses], membership: np.ndarray,
                    on_progress: Callable[[float], None] | None = None) -> None:
    """Fit ``attack_sets[j]`` on ``responses[j]`` (in place), for answers of the *same records*
    (the shadows' answers at several checkpoint epochs, or under several draws of a defense).

    Every learned classifier of every set — all attacks, all sets — is fitted in one loop, one
    optimiser step for all (:func:`core.attacks.attack_ensemble.fit_members`); the rest (thresholds)
    one by one. Each classifier keeps its own standardisation, seeded initialisation and the batches
    it would see alone, so the result is the one-by-one fit's up to float rounding.
    ``on_progress(fraction)`` is called as the fit goes (fractions in (0, 1)).
    """
    if len(attack_sets) != len(responses):
        raise ValueError(f"{len(attack_sets)} attack sets for {len(responses)} Responses")
    columns = list(zip(*attack_sets))
    for column in columns:
        if len({a.name for a in column}) != 1:
            raise ValueError(f"attack sets list different attacks: {sorted({a.name for a in column})}")
    learned: list[_LearnedAttack] = []
    members: list[FitMember] = []
    for attacks, r in zip(attack_sets, responses):
        for attack in attacks:
            if not isinstance(attack, _LearnedAttack):
                attack.fit(r, membership)
                continue
            model, z, lengths = attack.prepare(r)
            t = attack.training
            members.append(FitMember(model, z, lengths, membership, t.epochs, t.batch_size, t.lr, t.seed))
            learned.append(attack)
    for attack, model in zip(learned, fit_members(members, on_progress=on_progress)):
        attack.model = model


def score_attacks(attacks: list[Attack], target_responses: Responses, target_membership: np.ndarray) -> dict[str, AttackOutcome]:
    """Evaluate fitted attacks on any target Responses (undefended or defended) with known membership."""
    out: dict[str, AttackOutcome] = {}
    for attack in attacks:
        scores = attack.score(target_responses)
        result = evaluate_attack(attack.name, scores, target_membership, attack.threshold)
        result.boundary = attack.boundary()
        out[attack.name] = AttackOutcome(result, scores)
    return out


def safetensors_metadata(blob: bytes) -> dict[str, str]:
    """The ``__metadata__`` of a safetensors blob: its header is 8 bytes of length, then JSON."""
    size = int.from_bytes(blob[:8], "little")
    if size <= 0 or size > len(blob) - 8:
        raise ValueError("not a safetensors blob")
    meta = json.loads(blob[8 : 8 + size]).get("__metadata__") or {}
    if not isinstance(meta, dict):
        raise ValueError("safetensors metadata is not a mapping")
    return {str(k): str(v) for k, v in meta.items()}


def attack_to_bytes(attack: Attack) -> bytes:
    """A fitted attack as a safetensors blob (weights, thresholds; no pickle)."""
    tensors, meta = attack.state()
    return save_safetensors({k: v.contiguous() for k, v in tensors.items()}, metadata={"name": attack.name, **meta})


def load_attack_bytes(attack: Attack, blob: bytes) -> Attack:
    """Restore a fitted ``attack`` (built the same way as the one saved) from :func:`attack_to_bytes`.

    Raises ``ValueError`` when the blob is not a stored state of this attack.
    """
    try:
        tensors = load_safetensors(blob)
        metadata = safetensors_metadata(blob)
    except Exception as exc:  # safetensors raises its own error types for malformed headers
        raise ValueError(f"{attack.name}: not a stored attack: {exc}") from None
    if metadata.get("name") != attack.name:
        raise ValueError(f"stored attack is {metadata.get('name')!r}, expected {attack.name!r}")
    attack.load_state(tensors, metadata)
    return attack


# ---------------------------------------------------------------------------- registered (core.attacks imports this module)
_NOT_TRANSLATION = "reads a translation's reference-token ranks or its own decoding; other tasks have neither"
register(AttackEntry("shadow", ATTACK_NAMES["shadow"], ATTACK_SHORT["shadow"], "shadows", "responses",
                     lambda training: ShadowModelAttack(training), cite="Shokri et al. 2017"))
register(AttackEntry("loss_threshold", ATTACK_NAMES["loss_threshold"], ATTACK_SHORT["loss_threshold"], "shadows",
                     "responses", lambda training: loss_threshold_attack(), cite="Yeom et al. 2018"))
register(AttackEntry("entropy_threshold", ATTACK_NAMES["entropy_threshold"], ATTACK_SHORT["entropy_threshold"],
                     "shadows", "responses", lambda training: entropy_threshold_attack(), cite="paper 000 eq. 3"))
register(AttackEntry("prmia", ATTACK_NAMES["prmia"], ATTACK_SHORT["prmia"], "shadows", "responses",
                     lambda training: RankHistogramAttack(training), tasks=("translation",),
                     not_for=(("image", _NOT_TRANSLATION), ("navigation", _NOT_TRANSLATION)),
                     cite="Song & Shmatikov 2019"))
register(AttackEntry("bleu_feature", ATTACK_NAMES["bleu_feature"], ATTACK_SHORT["bleu_feature"], "shadows",
                     "responses",
                     lambda training: RecordFeatureAttack("bleu_features", name="bleu_feature", training=training),
                     tasks=("translation",), not_for=(("image", _NOT_TRANSLATION), ("navigation", _NOT_TRANSLATION)),
                     cite="Hisamoto et al. 2020"))
