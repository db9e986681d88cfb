"""What a model answers for N records, in one layout shared by every task.

Each record is answered by a *sequence* of L probability vectors over m classes (L = 1 for an
image, one per target token for translation, one per step of a rollout for navigation),
together with the *reference* the model should have produced (a one-hot label, the reference
token, or the label model's policy).

Sequences are stored ragged: the steps of all records are concatenated along the first axis
(T = Σ L) and ``lengths`` says where each record ends. Full probability vectors are kept only
when m is small (:data:`FULL_VECTOR_LIMIT`); otherwise only per-step signals and the top-K
probabilities are kept.

Per-step signals (paper 000, §4 and eq. 3):
    entropy        H(p) = −Σⱼ pⱼ log pⱼ
    cross_entropy  CE(q, p) = −Σⱼ qⱼ log pⱼ   (q the reference distribution)
    ref_prob       ⟨q, p⟩ (for a one-hot q: the probability of the reference class)
    ref_rank       rank of the reference class in p (0 = the model's top choice)
    logp_var       Var_{j~p}[log pⱼ] = Σⱼ pⱼ (log pⱼ)² − (Σⱼ pⱼ log pⱼ)²: the spread of the model's own
                   log-probabilities at the step, taken over the *full* vector before any top-K reduction
                   (its mean Σⱼ pⱼ log pⱼ is −H(p)); Min-K%++ standardises the reference's log-probability
                   by these two moments (Zhang et al. 2024). None on Responses stored before it was kept.
Per-record signals average them over the record's steps; the average entropy is the APE
H_APE = −(1/L) Σᵢ Σⱼ pⱼ⁽ⁱ⁾ log pⱼ⁽ⁱ⁾ (paper 000, eq. 3).
"""
from __future__ import annotations

import dataclasses
import io
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np
import torch

#: Keep full probability vectors when the number of classes is at most this.
FULL_VECTOR_LIMIT = 64
#: Number of largest probabilities kept per step.
TOP_K = 10
_EPS = 1e-12


def _numpy(t: torch.Tensor) -> np.ndarray:
    """A tensor's values as a NumPy array, from whichever device holds them."""
    return t.cpu().numpy()


@dataclass
class Responses:
    """Ragged per-step answers of one model to N records (see module docstring).

    Attributes:
        lengths: (N,) steps per record.
        n_classes: m, size of each probability vector.
        top_probs: (T, K) the K largest probabilities of each step, descending.
        ref_index: (T,) reference class of each step (argmax of the reference distribution).
        ref_prob: (T,) ⟨q, p⟩.
        ref_rank: (T,) rank of ``ref_index`` in p, 0 = top.
        entropy: (T,) H(p).
        cross_entropy: (T,) CE(q, p).
        logp_var: (T,) Var_{j~p}[log pⱼ] over the full vector, or None (Responses cached before it was
            kept, or a mechanism that could not recompute it).
        probs: (T, m) full vectors, or None when m > FULL_VECTOR_LIMIT.
        reference: (T, m) reference distributions, or None when ``probs`` is None.
        record_features: task-specific per-record feature arrays, (N, F) each (e.g. the
            BLEU-feature attack's n-gram precisions of the model's own translation).
    """

    lengths: np.ndarray
    n_classes: int
    top_probs: np.ndarray
    ref_index: np.ndarray
    ref_prob: np.ndarray
    ref_rank: np.ndarray
    entropy: np.ndarray
    cross_entropy: np.ndarray
    probs: np.ndarray | None = None
    reference: np.ndarray | None = None
    record_features: dict[str, np.ndarray] = field(default_factory=dict)
    logp_var: np.ndarray | None = None

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_logits(
        cls,
        logits: torch.Tensor,
        lengths: Iterable[int],
        reference: torch.Tensor | np.ndarray,
        keep_full: bool | None = None,
    ) -> "Responses":
        """Build from (T, m) unnormalised scores; preferred over :meth:`from_probs`.

        The log-softmax is taken in float64, so a confident model's loss on its reference
        (−log p ≈ 1e-9) is not rounded to 0: rounding would tie many members and
        non-members at a zero loss and blunt the threshold attacks. It runs where the logits
        are: only the per-step signals and the top-K leave the device, not the (T, m) matrix.
        """
        logp = torch.log_softmax(torch.as_tensor(logits).detach().double(), dim=-1)
        return cls._build(logp, lengths, reference, keep_full)

    @classmethod
    def from_probs(
        cls,
        probs: torch.Tensor | np.ndarray,
        lengths: Iterable[int],
        reference: torch.Tensor | np.ndarray,
        keep_full: bool | None = None,
    ) -> "Responses":
        """Build from concatenated steps.

        Args:
            probs: (T, m) probability vectors (rows sum to 1).
            lengths: steps per record, summing to T.
            reference: (T,) reference class indices, or (T, m) reference distributions.
            keep_full: keep the full vectors; default: when m <= FULL_VECTOR_LIMIT.
        """
        p = torch.as_tensor(probs).detach().cpu().double()
        return cls._build(torch.log(p.clamp_min(_EPS)), lengths, reference, keep_full)

    @classmethod
    def _build(cls, logp: torch.Tensor, lengths: Iterable[int], reference: torch.Tensor | np.ndarray,
               keep_full: bool | None) -> "Responses":
        if logp.ndim != 2:
            raise ValueError(f"probabilities must be (T, m), got shape {tuple(logp.shape)}")
        lengths = np.asarray(list(lengths), dtype=np.int64)
        if lengths.sum() != logp.shape[0]:
            raise ValueError(f"lengths sum to {lengths.sum()} but there are {logp.shape[0]} steps")
        p = logp.exp()
        m = p.shape[1]
        ref = torch.as_tensor(reference).detach().to(logp.device)
        entropy = -(p * logp).sum(1)
        # the second moment of log p under p, before the top-K reduction below (p·log p → 0 as p → 0:
        # a zero probability's log is −inf, its term 0)
        plogp2 = torch.where(p > 0, p * logp.square(), torch.zeros_like(p)).sum(1)
        logp_var = (plogp2 - entropy.square()).clamp_min(0.0)
        if ref.ndim == 1:
            ref_index = ref.long()
            ref_dist = None
            ref_prob = p.gather(1, ref_index[:, None])[:, 0]
            cross_entropy = -logp.gather(1, ref_index[:, None])[:, 0]
        else:
            ref_dist = ref.double()
            ref_index = ref_dist.argmax(1)
            ref_prob = (p * ref_dist).sum(1)
            cross_entropy = -(ref_dist * logp).sum(1)
        # rank = number of classes strictly more probable than the reference class
        # compared in log space: probabilities that underflow to 0 would all tie with a tiny reference
        ref_logp = logp.gather(1, ref_index[:, None])
        ref_rank = (logp > ref_logp).sum(1)
        k = min(TOP_K, m)
        top = torch.topk(p, k, dim=1).values
        if keep_full is None:
            keep_full = m <= FULL_VECTOR_LIMIT
        full = ref_full = None
        if keep_full:
            full = _numpy(p).astype(np.float32)
            if ref_dist is None:
                ref_full = np.zeros((p.shape[0], m), np.float32)
                ref_full[np.arange(p.shape[0]), _numpy(ref_index)] = 1.0
            else:
                ref_full = _numpy(ref_dist).astype(np.float32)
        return cls(
            lengths=lengths,
            n_classes=int(m),
            top_probs=_numpy(top).astype(np.float32),
            ref_index=_numpy(ref_index).astype(np.int64),
            ref_prob=_numpy(ref_prob).astype(np.float32),
            ref_rank=_numpy(ref_rank).astype(np.int32),
            entropy=_numpy(entropy).astype(np.float32),
            cross_entropy=_numpy(cross_entropy).astype(np.float32),
            probs=full,
            reference=ref_full,
            logp_var=_numpy(logp_var).astype(np.float32),
        )

    @classmethod
    def concat(cls, parts: list["Responses"]) -> "Responses":
        """Concatenate the records of several Responses (same n_classes)."""
        if not parts:
            raise ValueError("nothing to concatenate")
        m = parts[0].n_classes
        if any(r.n_classes != m for r in parts):
            raise ValueError("cannot concatenate Responses with different n_classes")
        full = all(r.probs is not None for r in parts)
        names = set(parts[0].record_features)
        for i, r in enumerate(parts[1:], 1):
            if set(r.record_features) != names:
                # dropping a feature silently would disable the attack that reads it
                raise ValueError(f"cannot concatenate Responses with different record features: part 0 has "
                                 f"{sorted(names)}, part {i} has {sorted(r.record_features)}")
        k = min(r.top_probs.shape[1] for r in parts)
        return cls(
            lengths=np.concatenate([r.lengths for r in parts]),
            n_classes=m,
            top_probs=np.concatenate([r.top_probs[:, :k] for r in parts]),
            ref_index=np.concatenate([r.ref_index for r in parts]),
            ref_prob=np.concatenate([r.ref_prob for r in parts]),
            ref_rank=np.concatenate([r.ref_rank for r in parts]),
            entropy=np.concatenate([r.entropy for r in parts]),
            cross_entropy=np.concatenate([r.cross_entropy for r in parts]),
            probs=np.concatenate([r.probs for r in parts]) if full else None,
            reference=np.concatenate([r.reference for r in parts]) if full else None,
            record_features={name: np.concatenate([r.record_features[name] for r in parts]) for name in names},
            # kept only when every part has it (a part cached before it was kept has none)
            logp_var=(np.concatenate([r.logp_var for r in parts]) if all(r.logp_var is not None for r in parts)
                      else None),
        )

    # ------------------------------------------------------------------ new answers, same records
    def with_log_probs(self, log_probs: torch.Tensor | np.ndarray) -> "Responses":
        """The same records and references answered by new (T, m) log-probability vectors.

        Every per-step signal is recomputed from the new vectors; ``lengths``, the references and
        ``record_features`` are kept (a copy of the dict). Used by output defenses (the Dirichlet
        mechanism): sampling in log space keeps tiny probabilities exact instead of rounding them
        to 0. Only for Responses that keep full vectors (the reference must be known in full).
        """
        if self.reference is None:
            raise ValueError("with_log_probs needs full probability vectors; these Responses keep only the top-K")
        logp = torch.as_tensor(log_probs).detach().cpu().double()
        if tuple(logp.shape) != (self.n_steps, self.n_classes):
            raise ValueError(f"expected ({self.n_steps}, {self.n_classes}) log-probabilities, got {tuple(logp.shape)}")
        ref = torch.from_numpy(self.reference.astype(np.float64))
        if self.is_one_hot_reference:
            ref = torch.from_numpy(self.ref_index)
        out = self._build(logp, self.lengths, ref, keep_full=True)
        out.record_features = dict(self.record_features)
        return out.validate()

    def with_step_signals(self, **arrays: np.ndarray) -> "Responses":
        """A copy with some per-step arrays replaced (e.g. ``top_probs``, ``ref_prob``, ``entropy``),
        validated. For mechanisms that recompute the signals of top-K Responses directly."""
        unknown = set(arrays) - set(self._ARRAYS)
        if unknown:
            raise ValueError(f"unknown Responses arrays {sorted(unknown)}")
        # per-step arrays by field name (checked above), or None for an optional one
        changes: dict[str, Any] = dict(arrays)
        if "logp_var" not in arrays and {"top_probs", "entropy", "probs"} & set(arrays):
            changes["logp_var"] = None  # new distributions: the old spread of log p would be stale
        return dataclasses.replace(self, record_features=dict(self.record_features), **changes).validate()

    @property
    def is_one_hot_reference(self) -> bool:
        """True when every step's reference is a single class (a label or a token)."""
        if self.reference is None:
            return True  # top-K Responses are only built for token references
        return bool(np.all(self.reference.max(1) == 1.0))

    def validate(self) -> "Responses":
        """Check shapes, ranges and finiteness; raise ``ValueError`` naming the first problem.

        Called on everything a mechanism produces and on what the cache returns, so a bad array
        fails here instead of as a NaN deep inside an attack.
        """
        lengths = np.asarray(self.lengths)
        if lengths.ndim != 1 or (len(lengths) and lengths.min() < 0):
            raise ValueError("Responses: lengths must be a 1-D array of non-negative step counts")
        t, n = int(lengths.sum()), len(lengths)
        for name in ("top_probs", "ref_index", "ref_prob", "ref_rank", "entropy", "cross_entropy", "probs", "reference",
                     "logp_var"):
            a = getattr(self, name)
            if a is None:
                continue
            if a.shape[0] != t:
                raise ValueError(f"Responses: {name} has {a.shape[0]} steps, lengths sum to {t}")
            if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
                raise ValueError(f"Responses: {name} holds non-finite values")
        if (self.probs is None) != (self.reference is None):
            raise ValueError("Responses: probs and reference must both be kept or both be dropped")
        if self.probs is not None and self.probs.shape[1] != self.n_classes:
            raise ValueError(f"Responses: probs have {self.probs.shape[1]} classes, n_classes is {self.n_classes}")
        for name in ("top_probs", "ref_prob", "probs"):
            a = getattr(self, name)
            if a is not None and a.size and (a.min() < 0 or a.max() > 1 + 1e-5):
                raise ValueError(f"Responses: {name} must lie in [0, 1]")
        if self.entropy.size and self.entropy.min() < -1e-5:
            raise ValueError("Responses: entropy must be >= 0")
        if self.cross_entropy.size and self.cross_entropy.min() < -1e-5:
            raise ValueError("Responses: cross_entropy must be >= 0")
        if self.logp_var is not None and self.logp_var.size and self.logp_var.min() < -1e-5:
            raise ValueError("Responses: logp_var must be >= 0")
        if self.ref_index.size and (self.ref_index.min() < 0 or self.ref_index.max() >= self.n_classes):
            raise ValueError("Responses: ref_index out of range")
        for name, a in self.record_features.items():
            if a.shape[0] != n:
                raise ValueError(f"Responses: record feature {name!r} has {a.shape[0]} rows for {n} records")
            if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
                raise ValueError(f"Responses: record feature {name!r} holds non-finite values")
        return self

    # ------------------------------------------------------------------ shape helpers
    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    @property
    def offsets(self) -> np.ndarray:
        """(N+1,) start of each record's steps; record i spans offsets[i]:offsets[i+1]."""
        return np.concatenate([[0], np.cumsum(self.lengths)])

    @property
    def n_steps(self) -> int:
        return int(self.lengths.sum())

    def subset(self, index: np.ndarray | list[int]) -> "Responses":
        """Records ``index`` (in that order)."""
        index = np.asarray(index, dtype=np.int64)
        off = self.offsets
        steps = np.concatenate([np.arange(off[i], off[i + 1]) for i in index]) if len(index) else np.zeros(0, np.int64)

        def take(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[steps]

        return Responses(
            lengths=self.lengths[index],
            n_classes=self.n_classes,
            top_probs=self.top_probs[steps],
            ref_index=self.ref_index[steps],
            ref_prob=self.ref_prob[steps],
            ref_rank=self.ref_rank[steps],
            entropy=self.entropy[steps],
            cross_entropy=self.cross_entropy[steps],
            probs=take(self.probs),
            reference=take(self.reference),
            record_features={name: a[index] for name, a in self.record_features.items()},
            logp_var=take(self.logp_var),
        )

    def record_mean(self, per_step: np.ndarray) -> np.ndarray:
        """Average a (T,) per-step array over each record's steps -> (N,)."""
        sums = np.add.reduceat(per_step.astype(np.float64), self.offsets[:-1]) if self.n_steps else np.zeros(0)
        sums = np.where(self.lengths > 0, sums, 0.0)
        return (sums / np.maximum(self.lengths, 1)).astype(np.float32)

    # ------------------------------------------------------------------ per-record signals
    @property
    def ape(self) -> np.ndarray:
        """Average prediction entropy per record (paper 000, eq. 3)."""
        return self.record_mean(self.entropy)

    @property
    def mean_cross_entropy(self) -> np.ndarray:
        """Mean cross-entropy to the reference per record (the per-record loss)."""
        return self.record_mean(self.cross_entropy)

    @property
    def mean_ref_prob(self) -> np.ndarray:
        """Mean probability of the reference per record."""
        return self.record_mean(self.ref_prob)

    @property
    def mean_ref_rank(self) -> np.ndarray:
        """Mean rank of the reference per record (0 = always the top prediction)."""
        return self.record_mean(self.ref_rank.astype(np.float32))

    def record_signals(self) -> dict[str, np.ndarray]:
        """All per-record signals by name (for tables, plots and threshold attacks)."""
        return {
            "ape": self.ape,
            "cross_entropy": self.mean_cross_entropy,
            "ref_prob": self.mean_ref_prob,
            "ref_rank": self.mean_ref_rank,
            "length": self.lengths.astype(np.float32),
        }

    # ------------------------------------------------------------------ attack features
    def step_features(self) -> np.ndarray:
        """(T, F) features of each step for a learned attack.

        With full vectors: [p, q, log CE, log H] — the model's confidence vector and the
        reference, the 3-tuple layout of the shadow-model attack (paper 000, §3.2; Shokri et al.),
        plus the log of the step's cross-entropy and entropy (functions of p and q that stay
        informative where p saturates at 1 in float32).
        Otherwise (large vocabularies, PVMIA of paper 001 A.2): [top-K probabilities,
        reference probability, mass outside the top-K, log reference probability, log(1+rank)].
        """
        if self.probs is not None:
            # plus the two threshold signals on a log scale, which a saturated probability hides
            signals = np.log(np.maximum(np.stack([self.cross_entropy, self.entropy], 1), 1e-30)) / 10.0
            return np.concatenate([self.probs, self.reference, signals], axis=1).astype(np.float32)
        rest = np.clip(1.0 - self.top_probs.sum(1, keepdims=True), 0.0, 1.0)
        return np.concatenate(
            [
                self.top_probs,
                self.ref_prob[:, None],
                rest,
                np.log(np.maximum(self.ref_prob, _EPS))[:, None] / 10.0,
                np.log1p(self.ref_rank.astype(np.float32))[:, None] / 10.0,
            ],
            axis=1,
        ).astype(np.float32)

    # ------------------------------------------------------------------ (de)serialisation
    #: the first seven are required in an archive; ``logp_var`` (added later) is optional, so Responses
    #: cached before it was kept still load (with ``logp_var`` None)
    _ARRAYS = ("lengths", "top_probs", "ref_index", "ref_prob", "ref_rank", "entropy", "cross_entropy", "probs", "reference",
               "logp_var")

    def to_bytes(self) -> bytes:
        """Serialise to an ``.npz`` byte string (no pickle)."""
        buf = io.BytesIO()
        arrays = {name: getattr(self, name) for name in self._ARRAYS if getattr(self, name) is not None}
        arrays.update({f"rf_{name}": a for name, a in self.record_features.items()})
        np.savez(buf, n_classes=np.array(self.n_classes), **arrays)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "Responses":
        """Inverse of :meth:`to_bytes`; never unpickles (``allow_pickle=False``)."""
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            # the arrays by field name (None: not stored; the required ones are checked next)
            kwargs: dict[str, Any] = {name: (z[name] if name in z.files else None) for name in cls._ARRAYS}
            missing = [n for n in cls._ARRAYS[:7] if kwargs[n] is None] + ([] if "n_classes" in z.files else ["n_classes"])
            if missing:
                raise ValueError(f"Responses archive lacks {', '.join(missing)}")
            extra = {name[3:]: z[name] for name in z.files if name.startswith("rf_")}
            return cls(n_classes=int(z["n_classes"]), record_features=extra, **kwargs).validate()

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays, in bytes."""
        arrays = sum(getattr(self, n).nbytes for n in self._ARRAYS if getattr(self, n) is not None)
        return arrays + sum(a.nbytes for a in self.record_features.values())
