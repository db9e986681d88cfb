"""Repeats and intervals (:mod:`core.analyses.repeats`): the paired comparison's table with its
verdicts, the means over repeats, the ROC band over repeats and the matched-stops table."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from core.analyses.comparison_results import ComparisonResult
from core.analyses.repeats import METRIC_LABELS
from core.experiment.results import RepeatsBlock
from core.foundations.names import ARCH_NAMES, UTILITY_NAMES
from core.measurement.bootstrap import RocBand
from core.measurement.stats import Estimate
from core.views.run_figures import mark_fpr_floor, resolves, zero_fp_label
from core.views.style import ARCH_COLOURS, layout, with_ci

#: a verdict as printed: its own word only (holds / reversed / inconclusive), no ✅/↩️/❔ mark beside it, so that
#: every page, the report and the CLI read the same three words
VERDICT_MARKS = {"holds": "holds", "reversed": "reversed", "inconclusive": "inconclusive"}


def p_text(v: float | None) -> str:
    return "—" if v is None else (f"{v:.3f}" if v >= 0.001 else "< 0.001")


#: a comparison metric's role (core.analyses.repeats.metric_roles), as the table says it
ROLE_NAMES = {"primary": "primary", "secondary": "secondary (Holm)", "duplicate": "duplicate: no verdict",
              "unresolved": "finer than the data: no verdict", "bound": "per-repeat bounds: no interval, no verdict",
              "utility": "utility: no hypothesis"}
_ROLE_ORDER = {"primary": 0, "secondary": 1, "duplicate": 2, "unresolved": 3, "bound": 4, "utility": 5}


def _per_repeat(e: Estimate | None) -> str:
    """Per-repeat lower bounds as they are: each repeat's, no mean and no interval over them."""
    return "—" if e is None or not e.values else "per repeat: " + ", ".join(f"{v:.3f}" for v in e.values)


def comparison_table(comp: ComparisonResult) -> pd.DataFrame:
    """One row per headline metric of ``core.analyses.repeats.comparison_json``: each architecture's mean and the
    paired difference FFNN − RNN with their 95 % intervals, the p-values (and a secondary metric's Holm-adjusted p),
    Cohen's d_z, the role, the verdict and N. The primary metric comes first; a comparison without roles (schema 1)
    keeps its order and verdicts."""
    rows = []
    items = sorted(comp.metrics.items(), key=lambda kv: _ROLE_ORDER.get(kv[1].role or "", 1))
    for name, m in items:
        d, v, role = m.difference, m.verdict, m.role
        if v:
            word = VERDICT_MARKS[v.value]
        elif role in ("duplicate", "unresolved", "bound"):
            word = "— (no verdict)"
        else:
            word = "(no hypothesis)"
        # the comparison keeps its estimates as JSON (core.analyses.comparison_results): read typed here
        ffnn, rnn = (m.estimate(a) for a in ("ffnn", "rnn"))
        cell = _per_repeat if role == "bound" else with_ci  # bounds side by side, never a mean with an interval
        row: dict[str, Any] = {"metric": m.label or METRIC_LABELS.get(name, name),
               "FFNN mean [95% CI]": cell(Estimate.from_dict(ffnn) if ffnn else None),
               "RNN mean [95% CI]": cell(Estimate.from_dict(rnn) if rnn else None),
               "FFNN − RNN [95% CI]": cell(Estimate.from_dict(d.diff)) if role == "bound" else with_ci(
                   Estimate.from_dict(d.diff), 3),
               "p (paired t)": p_text(d.p_t), "p (sign flip)": p_text(d.p_permutation)}
        if role is not None:
            row["role"] = ROLE_NAMES.get(role, role)
            row["p (sign flip, Holm)"] = p_text(m.p_holm_permutation)
        row.update({"effect d_z": d.effect_size, "verdict: RNN leaks more": word, "N": d.n})
        rows.append(row)
    return pd.DataFrame(rows)


def repeats_table(blocks: dict[str, RepeatsBlock]) -> pd.DataFrame:
    """Per architecture, every headline metric as mean [95 % CI] over its repeats
    (arch → its ``core.analyses.repeats.repeats_block``, typed)."""
    # a TPR at an FPR the non-members cannot resolve is the TPR at 0 false positives, and named so
    # (blocks written before their ``resolution`` keep the plain names)
    ns = [b.n_nonmembers for b in blocks.values() if b.n_nonmembers is not None]
    fprs = {"tpr_at_1pct_fpr": 0.01, "tpr_at_0.1pct_fpr": 0.001}
    unresolved = [m for m, f in fprs.items() if ns and not all(resolves(f, n) for n in ns)]
    rows = []
    for arch, block in blocks.items():
        row: dict[str, Any] = {"architecture": ARCH_NAMES.get(arch, arch), "N": block.n}
        for name, e in block.metrics.items():
            if name in unresolved:  # both unresolved: the same number, one column
                row[zero_fp_label(ns)] = with_ci(block.metrics[unresolved[-1]])
                continue
            row[METRIC_LABELS.get(name, name)] = with_ci(e)
        rows.append(row)
    return pd.DataFrame(rows)


def roc_band_figure(bands: dict[str, RocBand], n_nonmembers: dict[str, int] | None = None) -> go.Figure:
    """Each architecture's mean ROC curve over its repeats with the pointwise 95 % band (log FPR).
    With ``n_nonmembers`` (arch → its evaluation set's non-members) the band is drawn only down to
    FPR = 1/n and a dotted line marks it: below it the grid reads the TPR at zero false positives."""
    fig = go.Figure()
    floor = 1e-3
    ns = n_nonmembers or {}
    for arch, b in bands.items():
        c = ARCH_COLOURS.get(arch, "#444")
        n0 = ns.get(arch)
        keep = [i for i, v in enumerate(b.fpr) if (v >= 1.0 / n0 - 1e-12 if n0 else True)]
        x = [max(b.fpr[i], floor) for i in keep]
        hi, lo, tpr = [b.hi[i] for i in keep], [b.lo[i] for i in keep], [b.tpr[i] for i in keep]
        fig.add_scatter(x=x + x[::-1], y=hi + lo[::-1], fill="toself", mode="lines",
                        line=dict(width=0), fillcolor=c, opacity=0.18, hoverinfo="skip", showlegend=False)
        fig.add_scatter(x=x, y=tpr, mode="lines", line=dict(color=c),
                        name=f"{ARCH_NAMES.get(arch, arch)}: mean of N = {b.n}" + (", 95% band" if b.n > 1 else ""))
    diagonal = [floor * (1 / floor) ** (i / 50) for i in range(51)]
    fig.add_scatter(x=diagonal, y=diagonal, mode="lines", line=dict(color="grey", dash="dot"), name="chance")
    mark_fpr_floor(fig, [n for n in ns.values() if n and 1 / n > floor])
    fig.update_xaxes(type="log", range=[-3, 0], tickvals=[1e-3, 1e-2, 1e-1, 1], ticktext=["0.1%", "1%", "10%", "100%"])
    fig.update_yaxes(range=[0, 1])
    return layout(fig, "ROC of the primary attack over repeats", "false positive rate", "true positive rate")


@dataclass(frozen=True)
class MatchedStop:
    """One architecture's run of one repeat stopped at the matched utility (:func:`core.analyses.matching.matched_plan`):
    the ``epoch`` it stops at and whether it ``reached`` the target there, the full run's ``final_epoch`` and
    ``final_utility``, and the stopped run's measured ``utility_at_stop`` and primary attack's accuracy and AUC."""

    epoch: int
    reached: bool
    final_epoch: int
    final_utility: float | None
    utility_at_stop: float | None
    attack_accuracy: float
    attack_auc: float


@dataclass(frozen=True)
class MatchedRepeat:
    """One repeat of the matched-utility section: its index, the utility ``target`` and each architecture's stop."""

    repeat: int
    target: float
    stops: dict[str, MatchedStop]


@dataclass(frozen=True)
class MatchedView:
    """The matched-utility section's data (the page builds it: ``ui.results.matched_view``): the utility
    ``metric``, each repeat's stops and the paired comparison of the stopped runs."""

    metric: str
    rows: tuple[MatchedRepeat, ...]
    comparison: ComparisonResult


@dataclass(frozen=True)
class RepeatsView:
    """What the repeats section shows, typed where it is computed (the page: ``ui.results.repeats_view``; the
    report: :func:`core.views.report.cached_comparison`): with FFNN and RNN at the same number of repeats their
    paired ``comparison`` (:func:`core.analyses.repeats.comparison_json`, read), else each architecture's
    ``blocks`` (:func:`core.analyses.repeats.repeats_block`, read: mean [95 % CI] per headline metric)."""

    comparison: ComparisonResult | None = None
    blocks: dict[str, RepeatsBlock] = field(default_factory=dict)


def matched_stops_table(view: MatchedView) -> pd.DataFrame:
    """Per repeat and architecture: the target, the epoch the victim first reached it (or that it
    did not), its measured utility there and the primary attack's accuracy and AUC there."""
    metric = UTILITY_NAMES.get(view.metric, view.metric)
    rows = []
    for row in view.rows:
        for arch in ("ffnn", "rnn"):
            p = row.stops[arch]
            rows.append({"repeat": row.repeat + 1, "architecture": ARCH_NAMES.get(arch, arch),
                         f"target {metric}": row.target,
                         "stopped at epoch": p.epoch if p.reached else f"{p.epoch} (target not reached)",
                         "of epochs": p.final_epoch, f"{metric} at stop": p.utility_at_stop,
                         f"final {metric}": p.final_utility, "attack accuracy": p.attack_accuracy,
                         "attack AUC": p.attack_auc})
    return pd.DataFrame(rows)
