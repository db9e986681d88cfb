"""The analyses' flat tables (one row per record, epoch, block, budget point, slice …): what
``python -m core analyze`` writes as ``<name>.csv`` and the Analyses page downloads. Each
builder here is registered for its analyses (``@table_builder(name)``, :mod:`core.analyses.registry`) and takes
their data typed (as the registry reads it: :func:`core.analyses.registry.read_results`); :func:`tables` applies them.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, cast

import pandas as pd

from core.analyses import registry as analysis_registry
from core.analyses.analysis_results import AuditView, BudgetView, ExposureView, Scatter, SlicesView, Vulnerability
from core.analyses.own_models import Memorization, Mismatch
from core.analyses.registry import table_builder
from core.measurement.budget import BudgetPoint


def tables(results: Mapping[str, Any]) -> dict[str, pd.DataFrame]:
    """One flat table per analysis present in ``results`` (name → its data typed, as
    :func:`core.analyses.registry.read_results` reads ``analyses.json``'s): its registered ``table`` builder
    (:mod:`core.analyses.registry`) on its data."""
    return {a.name: cast("Callable[[Any], Any]", analysis_registry.table_of(a))(results[a.name])
            for a in analysis_registry.registered()
            if a.name in results and analysis_registry.table_of(a) is not None}


@table_builder("scatter")
def scatter_table(scatter: Mapping[str, Scatter]) -> pd.DataFrame:
    """The entropy scatter's records, one row per (architecture, record)."""
    rows = []
    for arch, sc in scatter.items():
        for i, (x, y, m) in enumerate(zip(sc.log10_ape or (), sc.log10_cross_entropy or (), sc.membership or ())):
            row = {"arch": arch, "record": i, "member": m, "log10_ape": x, "log10_cross_entropy": y,
                   # −12 means "at or below 1e-12": flagged, so a reader does not take it for a value
                   "clipped_ape": None if sc.clipped_ape is None else sc.clipped_ape[i],
                   "clipped_cross_entropy": None if sc.clipped_cross_entropy is None else sc.clipped_cross_entropy[i]}
            row.update({f"{name}_decision": (a.decision or ())[i] for name, a in sc.attacks.items()})
            rows.append(row)
    return pd.DataFrame(rows)


@table_builder("vulnerability", "overtraining")
def rows_table(data: Mapping[str, Vulnerability]) -> pd.DataFrame:
    """The per-epoch rows of vulnerability or overtraining, one row per (architecture, epoch): each row's JSON."""
    return pd.DataFrame([{"arch": arch, **r.to_dict()} for arch, v in data.items() for r in v.rows or ()])


@table_builder("memorization")
def memorization_table(data: Mapping[str, Memorization]) -> pd.DataFrame:
    """One row per (architecture, block): each block's JSON but its per-attack accuracies."""
    return pd.DataFrame([{"arch": arch, **{k: v for k, v in b.to_dict().items() if k != "accuracies"}}
                         for arch, m in data.items() for b in m.blocks])


@table_builder("mismatch")
def mismatch_table(data: Mapping[str, Mismatch]) -> pd.DataFrame:
    return pd.DataFrame([{"arch": arch, "scale": r.scale, m.knob: r.width, "attack": name, "accuracy": acc}
                         for arch, m in data.items() for r in m.rows for name, acc in r.accuracy.items()])


@table_builder("exposure")
def exposure_records_table(ex: ExposureView) -> pd.DataFrame:
    """The per-record exposure view (:mod:`core.analyses.record_views`), one row per record."""
    rows = []
    for i, (index, m) in enumerate(zip(ex.records, ex.membership)):
        row: dict[str, Any] = {"record": i, "dataset_index": index, "member": m, "attack": ex.attack}
        for arch in ex.archs:
            row[f"score_{arch}"] = ex.scores[arch][i]
            row[f"cross_entropy_{arch}"] = ex.cross_entropy[arch][i]
        for fpr, q in ex.quadrants.items():
            row[f"quadrant_at_fpr_{fpr}"] = q.quadrant[i]
        for arch, by_fpr in (ex.flips or {}).items():
            for fpr, f in by_fpr.items():
                row[f"flip_{arch}_at_fpr_{fpr}"] = ("stopped" if i in (f.stopped or ()) else
                                                    "started" if i in (f.started or ()) else "")
        rows.append(row)
    return pd.DataFrame(rows)


@table_builder("budget")
def budget_points_table(budget: Mapping[str, BudgetView]) -> pd.DataFrame:
    """One row per budget point; the spread over reference subsets only where there were two or more (one
    subset — all references — has no spread: empty cells, not a low = high "interval")."""
    def spread(p: BudgetPoint, value: Any) -> Any:
        return value if p.draws > 1 else None

    return pd.DataFrame([
        {"arch": arch, "attack": name, "n_references": p.n_references, "draws": p.draws, "auc": p.auc,
         "auc_low": spread(p, p.auc_low), "auc_high": spread(p, p.auc_high),
         **{f"tpr_at_fpr_{f}": v for f, v in p.tpr_at_fpr.items()},
         **{f"tpr_low_{f}": spread(p, v) for f, v in p.tpr_low.items()},
         **{f"tpr_high_{f}": spread(p, v) for f, v in p.tpr_high.items()}, "flattens_at": c.flattens_at}
        for arch, view in budget.items() for name, c in view.curves.items() for p in c.points])


@table_builder("audit")
def audit_table(views: Mapping[str, AuditView]) -> pd.DataFrame:
    return pd.DataFrame([
        {"arch": arch, "m": v.m, "delta": v.delta, "k": k.k, "correct": k.correct,
         "accuracy": k.accuracy, "epsilon_at_k": k.epsilon, "audited_epsilon": v.audited_epsilon,
         "best_k": v.audit.best_k, "accountant_rdp": None if v.accountant_epsilon is None else v.accountant_epsilon.rdp,
         "accountant_prv": None if v.accountant_epsilon is None else v.accountant_epsilon.prv,
         "attack_epsilon_lower_bound": v.attack_epsilon_lower_bound, **_audit_estimator_columns(v, k.k)}
        for arch, v in views.items() for k in v.audit.per_k or ()])


@table_builder("slices")
def slices_rows_table(sv: SlicesView) -> pd.DataFrame:
    return pd.DataFrame([{"arch": arch, "attack": sv.attack, **r.to_dict()}
                         for arch, by in sv.archs.items() for rows in by.values() for r in rows])


def _audit_estimator_columns(v: AuditView, k: int) -> dict[str, Any]:
    """The audit's other estimators on a row of its table (:mod:`core.measurement.audit_estimators`):
    the f-DP bound at this k and the headlines."""
    gdp, fdp = v.estimators.gdp_estimate, v.estimators.fdp_bound
    at = fdp.at(k)
    return {"fdp_mu_at_k": None if at is None else at.mu, "fdp_epsilon_at_k": None if at is None else at.epsilon,
            "fdp_mu": fdp.mu, "fdp_epsilon": fdp.epsilon, "fdp_best_k": fdp.best_k, "gdp_mu_estimate": gdp.mu,
            "gdp_mu_low": gdp.mu_low, "gdp_mu_high": gdp.mu_high, "gdp_epsilon_estimate": gdp.epsilon,
            "gdp_epsilon_low": gdp.epsilon_low, "gdp_epsilon_high": gdp.epsilon_high}
