"""The array math of LiRA and RMIA, without models or Responses (numpy only).

:mod:`core.experiment.reference_attacks` turns the victim's and the reference models' answers
into per-unit signals and calls these; :mod:`core.analyses.scores` calls them on the losses a
user brings in a file ("Just the scores"), where no model exists. The formulas and
their sources are in :mod:`core.experiment.reference_attacks`' docstring.

* LiRA's signal of a one-step record from its loss ℓ = −log c: φ = log c − log(1 − c)
  = −ℓ − log(−expm1(−ℓ)) (:func:`logit_confidence_from_loss`);
* LiRA: per unit, OUT (and IN) Gaussians from the reference signals; the offline z-score or the
  online log-likelihood ratio (:func:`lira_unit_scores`);
* RMIA: the share of population records z with LR(x, z) ≥ γ from log-likelihoods
  (:func:`rmia_from_log_likelihoods`).
"""
from __future__ import annotations

import numpy as np

#: the floor that keeps log(1 − c) finite where a float loss is exactly 0
_TINY = 1e-45


def logit_confidence_from_loss(loss: np.ndarray) -> np.ndarray:
    """φ = log c − log(1 − c) for c = exp(−``loss``), stable: exact up to |φ| ≈ 35, where a
    float64 loss itself saturates (a loss of 0 is floored at 1e-45)."""
    ce = np.maximum(np.asarray(loss, np.float64), _TINY)
    return -ce - np.log(-np.expm1(-ce))


def masked_mean_std(values: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column of (n_refs, M) ``values`` over the rows where ``mask``: mean, unbiased variance
    (NaN with < 2 rows) and the row count."""
    n = mask.sum(0)
    v = np.where(mask, values, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = v.sum(0) / n
        dev = np.where(mask, values - mean, 0.0)
        var = (dev**2).sum(0) / (n - 1)
    var = np.where(n >= 2, var, np.nan)
    return mean, var, n


def pooled_variance(values: np.ndarray, mask: np.ndarray) -> float:
    """σ² pooled over every column: Σ (x − column mean)² / Σ (n_col − 1), columns with ≥ 2 rows."""
    mean, _, n = masked_mean_std(values, mask)
    dev = np.where(mask & (n >= 2), values - np.where(np.isfinite(mean), mean, 0.0), 0.0)
    dof = np.maximum(n - 1, 0)[n >= 2].sum()
    if dof <= 0:
        raise ValueError("LiRA needs at least two reference models on some record to estimate a variance")
    return float((dev**2).sum() / dof)


def lira_unit_scores(phi_target: np.ndarray, phi_refs: np.ndarray, ins: np.ndarray, outs: np.ndarray,
                     variance: str = "global", global_var: tuple[float, float] | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """LiRA per unit (a record, or an aligned step) from its signals.

    Args:
        phi_target: (M,) the target model's φ.
        phi_refs: (n_refs, M) the reference models' φ on the same units.
        ins / outs: (n_refs, M) which references trained / did not train on each unit (disjoint).
        variance: ``"global"`` (σ pooled over the units) or ``"per_example"`` (each unit's own σ,
            the pooled one where a unit has fewer than two models).
        global_var: (σ²_out, σ²_in) to use instead of pooling them.

    Returns ((M,) scores, (M,) online): the one-sided z = (φ − μ_out)/σ_out where a unit has no IN
    model (NaN without OUT models), the log-likelihood ratio log N(φ; μ_in, σ²_in) −
    log N(φ; μ_out, σ²_out) where it has; ``online`` marks the latter.
    """
    mu_out, var_out_ex, n_out = masked_mean_std(phi_refs, outs)
    mu_in, var_in_ex, n_in = masked_mean_std(phi_refs, ins)
    if global_var is None:
        g_out = pooled_variance(phi_refs, outs)
        g_in = pooled_variance(phi_refs, ins) if (ins.sum(0) >= 2).any() else g_out
    else:
        g_out, g_in = global_var
    g_out, g_in = max(g_out, 1e-12), max(g_in, 1e-12)
    if variance == "per_example":
        var_out = np.where(np.isfinite(var_out_ex), np.maximum(var_out_ex, 1e-12), g_out)
        var_in = np.where(np.isfinite(var_in_ex), np.maximum(var_in_ex, 1e-12), g_in)
    else:
        var_out, var_in = np.full_like(mu_out, g_out), np.full_like(mu_out, g_in)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (phi_target - mu_out) / np.sqrt(var_out)
        llr = (-0.5 * (phi_target - mu_in) ** 2 / var_in - 0.5 * np.log(var_in)) \
            - (-0.5 * (phi_target - mu_out) ** 2 / var_out - 0.5 * np.log(var_out))
    z = np.where(n_out > 0, z, np.nan)
    online = n_in > 0
    return np.where(online, llr, z), online


def log_marginal(ref_loglik: np.ndarray, mask: np.ndarray | None, a: float) -> np.ndarray:
    """log Pr(x) = log(½[(1 + a)·mean_ref Pr(x|θ_ref) + (1 − a)]) from (n_refs, N) log-likelihoods."""
    if mask is None:
        mask = np.ones_like(ref_loglik, bool)
    n = mask.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(mask, np.exp(ref_loglik), 0.0).sum(0) / n
    pr = 0.5 * ((1 + a) * mean + (1 - a))
    return np.where(n > 0, np.log(np.maximum(pr, 1e-300)), np.nan)


def rmia_from_log_likelihoods(lx: np.ndarray, ref_x: np.ndarray, lz: np.ndarray, ref_z: np.ndarray,
                              a: float = 0.5, gamma: float = 1.0, mask: np.ndarray | None = None,
                              mask_z: np.ndarray | None = None) -> np.ndarray:
    """RMIA scores ("higher = member") from log-likelihoods log Pr(·|θ).

    Args:
        lx: (N,) the target model's on the scored records; ref_x: (n_refs, N) the references'.
        lz: (Z,) the target model's on population records z; ref_z: (n_refs, Z) the references'.
        a, gamma: the offline scaling of the reference average and the pairwise threshold.
        mask / mask_z: (n_refs, N) / (n_refs, Z) which references may be used per record
            (default: all).

    Returns (N,) scores in [0, 1]: the share of z with LR(x, z) ≥ γ plus a tie-break below one
    step (the record's own ratio Pr(x|θ)/Pr(x) through a sigmoid); NaN where no reference is usable.
    """
    ratio_x = lx - log_marginal(ref_x, mask, a)
    ratio_z = lz - log_marginal(ref_z, mask_z, a)
    ratio_z = np.sort(ratio_z[np.isfinite(ratio_z)])
    n_z = len(ratio_z)
    if n_z == 0:
        raise ValueError("RMIA needs population records")
    # LR(x, z) ≥ γ  ⟺  ratio_z ≤ ratio_x − log γ: count by binary search
    share = np.searchsorted(ratio_z, ratio_x - np.log(gamma), side="right") / n_z
    tie = 1.0 / (1.0 + np.exp(-np.clip(ratio_x, -50, 50))) / (n_z + 1)
    return np.where(np.isfinite(ratio_x), share + tie, np.nan)
