"""LiRA with augmented queries (Carlini, Chien, Nasr, Song, Terzis & Tramèr, IEEE S&P 2022,
"Membership Inference Attacks From First Principles": the same record queried under the
augmentations the models trained with, one Gaussian per augmentation). Numpy only: the queries
come from the task (:meth:`core.tasks.base.Task.augmented_confidences`), the models from
:mod:`core.experiment.model_attacks`.

Signal. Each model f answers A augmentations a₀ = identity, a₁, …, a_{A−1} of a record (x, y)
(images: a horizontal flip, ±1-pixel shifts and the flip with each shift, the label-only attack's
set, :data:`core.tasks.image.LABEL_AUGMENTATIONS`); per augmentation the logit-scaled confidence of
the true label φₐ = log c − log(1 − c), c = softmax(f(aₐ(x)))_y, so a record gives a vector
φ ∈ ℝᴬ per model.

Gaussians. Per record and per augmentation, the means μ_out ∈ ℝᴬ over the reference models that
did not train on the record (and μ_in over those that did); one covariance Σ shared by all
records (pooled over records: Σ = Σᵢ Σ_r (φ_ri − μᵢ)(φ_ri − μᵢ)ᵀ / Σᵢ (nᵢ − 1), the "global
variance" the paper advises with few reference models), either diagonal (independent per
augmentation, as the paper's reference code scores: the log-densities of the augmentations summed)
or full (``covariance="full"``, correlated augmentations; a ridge of 10⁻⁶·mean(diag Σ) keeps it
invertible).

Scores.

* **Online** (the references include IN models for the record): the joint log-likelihood ratio
  Λ = log N(φ; μ_in, Σ_in) − log N(φ; μ_out, Σ_out), threshold 0 (the likelihood-ratio test at
  equal priors, as plain online LiRA).
* **Offline** (OUT models only): the one-sided test of H₀: φ ~ N(μ_out, Σ_out) against a member's
  shift of every augmentation's confidence upwards. Its most powerful statistic against the shift
  μ_out + δ·1 (Neyman–Pearson) is the projection T = wᵀ(φ − μ_out)/√(wᵀΣw) with w = Σ⁻¹1, which is
  N(0, 1) under H₀ (so T is a z-score; Carlini's Λ = Φ(T)). With one augmentation (the identity)
  T = (φ − μ_out)/σ_out: plain offline LiRA's statistic.

With A = 1 both scores equal :func:`core.measurement.reference_math.lira_unit_scores` (global
variance) on the same φ; the thresholds of the offline attack are fitted on the shadows
(each shadow the target on its own in/out records, the others its OUT references).
"""
from __future__ import annotations

import numpy as np

#: covariance of the per-augmentation Gaussians: independent augmentations, or one full A×A matrix
COVARIANCES = ("diagonal", "full")
_RIDGE = 1e-6


def pooled_covariance(phi: np.ndarray, mask: np.ndarray) -> np.ndarray | None:
    """(A, A) covariance of (R, N, A) signals pooled over the records: per record the deviations
    of the references selected by the (R, N) ``mask`` from their mean; records with < 2 references
    add nothing. None where no record has two."""
    phi = np.asarray(phi, np.float64)
    mask = np.asarray(mask, bool)
    n = mask.sum(0)
    keep = n >= 2
    if not keep.any():
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(mask[..., None], phi, 0.0).sum(0) / np.maximum(n, 1)[:, None]
    dev = np.where((mask & keep[None])[..., None], phi - mean[None], 0.0)
    flat = dev.reshape(-1, dev.shape[-1])
    return flat.T @ flat / float((n[keep] - 1).sum())


def _masked_mean(phi: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = mask.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(mask[..., None], phi, 0.0).sum(0) / n[:, None]
    return mean, n


def _prepare(cov: np.ndarray, covariance: str) -> np.ndarray:
    cov = np.asarray(cov, np.float64)
    if covariance == "diagonal":
        return np.diag(np.maximum(np.diag(cov), 1e-12))
    a = cov.shape[0]
    if a == 1:
        return np.maximum(cov, 1e-12)
    return cov + _RIDGE * max(float(np.trace(cov)) / a, 1e-12) * np.eye(a)


def _log_density(dev: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """(N,) log N(dev; 0, cov) without the 2π term (it cancels in every ratio)."""
    chol = np.linalg.cholesky(cov)
    sol = np.linalg.solve(chol, dev.T)  # (A, N)
    return -0.5 * (sol**2).sum(0) - np.log(np.diag(chol)).sum()


def augmented_lira_scores(phi_target: np.ndarray, phi_refs: np.ndarray, ins: np.ndarray, outs: np.ndarray,
                          covariance: str = "diagonal",
                          shared: tuple[np.ndarray, np.ndarray | None] | None = None
                          ) -> tuple[np.ndarray, np.ndarray]:
    """LiRA with augmented queries per record (see the module docstring).

    Args:
        phi_target: (N, A) the target model's φ per record and augmentation.
        phi_refs: (R, N, A) the reference models' φ on the same records and augmentations.
        ins / outs: (R, N) which references trained / did not train on each record (disjoint).
        covariance: ``"diagonal"`` or ``"full"``.
        shared: (Σ_out, Σ_in) to use instead of pooling them from ``phi_refs`` (Σ_in None: Σ_out).

    Returns ((N,) scores, (N,) online): the log-likelihood ratio where a record has an IN
    reference, else the one-sided z-score T (NaN without OUT references); ``online`` marks the former.
    """
    if covariance not in COVARIANCES:
        raise ValueError(f"covariance must be one of {COVARIANCES}, got {covariance!r}")
    phi_target = np.asarray(phi_target, np.float64)
    phi_refs = np.asarray(phi_refs, np.float64)
    ins, outs = np.asarray(ins, bool), np.asarray(outs, bool)
    if phi_target.ndim != 2 or phi_refs.shape[1:] != phi_target.shape or ins.shape != phi_refs.shape[:2]:
        raise ValueError(f"shapes: target {phi_target.shape}, references {phi_refs.shape}, masks {ins.shape}")
    if shared is None:
        cov_out = pooled_covariance(phi_refs, outs)
        if cov_out is None:
            raise ValueError("LiRA needs at least two reference models on some record to estimate a covariance")
        cov_in = pooled_covariance(phi_refs, ins)
    else:
        cov_out, cov_in = shared
    cov_out = _prepare(cov_out, covariance)
    cov_in = _prepare(cov_in, covariance) if cov_in is not None else cov_out
    mu_out, n_out = _masked_mean(phi_refs, outs)
    mu_in, n_in = _masked_mean(phi_refs, ins)

    # offline: T = wᵀ(φ − μ_out) / √(wᵀΣw), w = Σ⁻¹1
    a = phi_target.shape[1]
    w = np.linalg.solve(cov_out, np.ones(a))
    dev_out = phi_target - mu_out
    with np.errstate(invalid="ignore"):
        z = dev_out @ w / np.sqrt(w @ cov_out @ w)
    z = np.where(n_out > 0, z, np.nan)
    # online: log N(φ; μ_in, Σ_in) − log N(φ; μ_out, Σ_out)
    online = n_in > 0
    llr = np.full(len(phi_target), np.nan)
    ok = online & (n_out > 0)
    if ok.any():
        llr[ok] = _log_density(phi_target[ok] - mu_in[ok], cov_in) - _log_density(dev_out[ok], cov_out)
    return np.where(online, llr, z), online
