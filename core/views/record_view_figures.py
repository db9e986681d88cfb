"""The per-record views (:mod:`core.analyses.record_views`): exposure quadrants, the attacker's
reference budget, the audited ε (and its estimators against the number of guesses) and AUC per slice, each from its
typed view (:mod:`core.analyses.analysis_results`)."""
from __future__ import annotations

import math
from typing import Mapping

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.analyses.analysis_results import AuditView, BoundCurve, BudgetView, ExposureView, SliceRow, SlicesView
from core.analyses.registry import figure_builder
from core.foundations.names import ARCH_NAMES
from core.measurement.exposure import fpr_label
from core.views.plain import plain_plotly
from core.views.style import ARCH_COLOURS, legend_below

MEMBER_COLOURS = {True: "#d62728", False: "#1f77b4"}


QUADRANT_NAMES = {"both": "both", "only_b": "only {b}", "only_a": "only {a}", "neither": "neither"}


def quadrant_names(archs: list[str]) -> dict[str, str]:
    """The exposure quadrants' display names for the two architectures ``archs`` (a, b): "only RNN", …"""
    a, b = archs
    return {k: v.format(a=ARCH_NAMES.get(a, a), b=ARCH_NAMES.get(b, b)) for k, v in QUADRANT_NAMES.items()}


@figure_builder("exposure")
def exposure_figure(ex: ExposureView, fpr: str = "0.01") -> go.Figure:
    """Each evaluated record's membership score under the two architectures (x: the first, y: the
    second), members and non-members marked, with each architecture's threshold at ``fpr`` (from its
    non-members): the four quadrants of exposure, their member counts in the title."""
    a, b = ex.archs
    q = ex.quadrants[fpr]
    x, y = np.asarray(ex.scores[a]), np.asarray(ex.scores[b])
    member = np.asarray(ex.membership, bool)
    fig = go.Figure()
    for is_member in (True, False):
        idx = np.nonzero(member == is_member)[0]
        fig.add_scatter(x=x[idx], y=y[idx], mode="markers", customdata=idx,
                        marker=dict(color=MEMBER_COLOURS[is_member], size=6, opacity=0.65,
                                    symbol="circle" if is_member else "circle-open"),
                        name="member" if is_member else "non-member",
                        hovertemplate=f"record %{{customdata}}<br>{ARCH_NAMES.get(a, a)} %{{x:.3g}}<br>"
                                      f"{ARCH_NAMES.get(b, b)} %{{y:.3g}}<extra></extra>")
    fig.add_vline(x=q.a.threshold, line=dict(color=ARCH_COLOURS.get(a), dash="dash"))
    fig.add_hline(y=q.b.threshold, line=dict(color=ARCH_COLOURS.get(b), dash="dash"))
    names = quadrant_names([a, b])
    counts = ", ".join(f"{names[c.name]} {c.count}" for c in q.members)
    n0 = len(member) - int(member.sum())
    label = ex.extra.get("fpr_labels", {}).get(fpr) or fpr_label(float(fpr), n0)  # "0 false positives" below 1/n
    fig.update_layout(title=f"{ex.attack} score per record at {label} — members exposed: {counts} "
                            f"(of {q.members[0].n})",
                      xaxis_title=f"{ARCH_NAMES.get(a, a)} score", yaxis_title=f"{ARCH_NAMES.get(b, b)} score")
    return legend_below(fig, 560)


def _budget_tpr_name(budgets: Mapping[str, BudgetView], attack: str) -> str:
    """"TPR at 1 % FPR", or where the evaluated non-members cannot resolve 1 % (fewer than 100), what it is."""
    counts = []
    for v in budgets.values():
        if attack in v.curves:
            n_non_members = v.curves[attack].n_non_members
            if n_non_members is None:  # every budget curve the product writes carries it
                raise ValueError(f"the {attack} budget curve lacks n_non_members, which its TPR's label reads")
            counts.append(int(n_non_members))
    n0 = min(counts)
    return "TPR at 1 % FPR" if math.floor(0.01 * n0 + 1e-9) >= 1 else f"TPR at 0 false positives (FPR < 1/{n0})"


@figure_builder("budget")
def budget_figure(views: Mapping[str, BudgetView]) -> go.Figure:
    """AUC (top) and TPR at 1 % FPR (bottom) against the number of reference models, one panel per
    attack, per architecture; bars: 2.5–97.5 % over which references were drawn; ▼: where it flattens."""
    attacks = list(next(iter(views.values())).curves)
    fig = make_subplots(rows=2, cols=len(attacks), shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=[f"{n} AUC" for n in attacks] + [f"{n} {_budget_tpr_name(views, n)}" for n in attacks])
    for arch, view in views.items():
        c, name = ARCH_COLOURS.get(arch), ARCH_NAMES.get(arch, arch)
        for col, attack in enumerate(attacks, 1):
            curve = view.curves[attack]
            pts = curve.points
            n = [p.n_references for p in pts]
            for row, (get, lo, hi) in enumerate(((lambda p: p.auc, lambda p: p.auc_low, lambda p: p.auc_high),
                                                 (lambda p: p.tpr_at_fpr["0.01"], lambda p: p.tpr_low["0.01"],
                                                  lambda p: p.tpr_high["0.01"])), 1):
                ys = [get(p) for p in pts]
                fig.add_scatter(x=n, y=ys, mode="lines+markers", line=dict(color=c), name=name, legendgroup=arch,
                                showlegend=row == 1 and col == 1, row=row, col=col,
                                error_y=dict(type="data", symmetric=False, array=[hi(p) - get(p) for p in pts],
                                             arrayminus=[get(p) - lo(p) for p in pts]))
            if curve.flattens_at is not None:
                at = next(p for p in pts if p.n_references == curve.flattens_at)
                fig.add_scatter(x=[at.n_references], y=[at.auc], mode="markers", row=1, col=col,
                                marker=dict(symbol="triangle-down", size=13, color=c), showlegend=False,
                                hovertemplate=f"{name}: flattens at %{{x}} references<extra></extra>")
    fig.update_xaxes(title_text="reference models used", row=2)
    fig.update_layout(title="The attacker's reference budget (▼: within 0.01 AUC of all references)")
    return legend_below(fig, 640)


def _accountant(v: AuditView, key: str) -> float | None:
    """The accountant's ε by ``key`` (``rdp``, ``prv``), None without DP-SGD."""
    return None if v.accountant_epsilon is None else getattr(v.accountant_epsilon, key)


@figure_builder("audit")
def audit_figure(views: Mapping[str, AuditView]) -> go.Figure:
    """Per architecture: the audited ε (one run, canaries), the accountant's ε (RDP, PRV; DP-SGD
    runs only) and the attack-derived ε̂ of the cached run, side by side."""
    fig = go.Figure()
    archs = list(views)
    labels = [ARCH_NAMES.get(a, a) for a in archs]
    fig.add_bar(x=labels, y=[views[a].audited_epsilon for a in archs], name="audited ε (one run, canaries)",
                marker_color="#2ca02c")
    for key, colour in (("rdp", "#7f7f7f"), ("prv", "#bcbd22")):
        values = [_accountant(views[a], key) for a in archs]
        if any(v is not None for v in values):
            fig.add_bar(x=labels, y=values, name=f"accountant ε ({key.upper()})", marker_color=colour)
    fig.add_bar(x=labels, y=[views[a].attack_epsilon_lower_bound for a in archs],
                name="attack ε̂ (cached run)", marker_color="#9467bd")
    first = views[archs[0]]
    fig.update_layout(title=f"Audited ε beside the accountant's (δ = {first.delta:g}, m = {first.m} canaries, "
                            f"{first.audit.confidence:.0%} confidence)", barmode="group", yaxis_title="ε")
    return legend_below(fig, 460)


#: the audit's estimators: colour per estimator (:func:`audit_guesses_figure`)
AUDIT_COLOURS = {"steinke": "#2ca02c", "fdp": "#ff7f0e", "gdp": "#17becf", "rdp": "#7f7f7f", "prv": "#bcbd22"}


def _bound_epsilons(arch: str, curve: BoundCurve) -> list[float]:
    """Steinke et al.'s ε and the f-DP ε at every k of ``arch``'s curve (each a number: the bounds are capped)."""
    out = []
    for epsilon in (*curve.steinke_epsilon, *curve.fdp_epsilon):
        if epsilon is None:
            raise ValueError(f"the {arch} audit's bound curve has an ε of null; every bound the audit writes is a number")
        out.append(epsilon)
    return out


def audit_guesses_figure(views: Mapping[str, AuditView]) -> go.Figure:
    """Per architecture (one panel each): the ε lower bound of each one-run estimator against the
    number of guesses k on the most confident canaries (Steinke et al.; the f-DP bound of
    Mahloujifar et al., Gaussian family), each point a 95 % bound on its own; the Gaussian-DP
    estimate (an estimate, not a bound) as a dotted line with its bootstrap band; the accountant's
    ε (RDP, PRV) as dashed lines where DP-SGD ran (:mod:`core.measurement.audit_estimators`)."""
    curves = {a: v.estimators.curve for a, v in views.items() if v.estimators.curve is not None}
    archs = list(curves)
    fig = make_subplots(rows=1, cols=max(1, len(archs)), shared_yaxes=True,
                        subplot_titles=[ARCH_NAMES.get(a, a) for a in archs])
    for col, arch in enumerate(archs, 1):
        est = views[arch].estimators
        curve, gdp = curves[arch], est.gdp_estimate
        ks = list(curve.k)
        for key, ys, name in (("steinke", list(curve.steinke_epsilon), "Steinke et al. bound (ε)"),
                              ("fdp", list(curve.fdp_epsilon), "f-DP bound, Gaussian family (ε)")):
            fig.add_scatter(x=ks, y=ys, mode="lines+markers", name=name, legendgroup=key, showlegend=col == 1,
                            line=dict(color=AUDIT_COLOURS[key]), row=1, col=col,
                            customdata=list(zip(curve.correct, curve.fdp_mu)),
                            hovertemplate="k = %{x}: %{customdata[0]} correct, ε ≥ %{y:.3g}"
                                          + (" (μ ≥ %{customdata[1]:.3g})" if key == "fdp" else "") + "<extra></extra>")
        # no finite estimate (every member above every non-member) or upper end: the band runs to the panel's top
        top = gdp.epsilon_high if gdp.epsilon_high is not None else 1.25 * max(
            [*_bound_epsilons(arch, curve), gdp.epsilon_low or 0.0, 1.0])
        fig.add_scatter(x=[ks[0], ks[-1], ks[-1], ks[0]], y=[gdp.epsilon_low or 0.0] * 2 + [top] * 2,
                        fill="toself", mode="none", fillcolor="rgba(23, 190, 207, 0.15)", legendgroup="gdp",
                        name="Gaussian-DP estimate (not a bound; 95 % bootstrap band)",
                        showlegend=col == 1 and gdp.epsilon is None, hoverinfo="skip", row=1, col=col)
        if gdp.epsilon is not None:
            high = "∞" if gdp.epsilon_high is None else f"{gdp.epsilon_high:.3g}"
            fig.add_scatter(x=[ks[0], ks[-1]], y=[gdp.epsilon] * 2, mode="lines", legendgroup="gdp",
                            name="Gaussian-DP estimate (not a bound; 95 % bootstrap band)", showlegend=col == 1,
                            line=dict(color=AUDIT_COLOURS["gdp"], dash="dot"), row=1, col=col,
                            hovertemplate=f"GDP estimate ε̂ {gdp.epsilon:.3g} [{gdp.epsilon_low:.3g}, {high}], "
                                          f"μ̂ {gdp.mu:.3g}<extra></extra>")
        for key in ("rdp", "prv"):
            value = _accountant(views[arch], key)
            if value is not None:
                fig.add_scatter(x=[ks[0], ks[-1]], y=[value] * 2, mode="lines", name=f"accountant ε ({key.upper()})",
                                legendgroup=key, showlegend=col == 1, line=dict(color=AUDIT_COLOURS[key], dash="dash"),
                                row=1, col=col, hovertemplate=f"accountant ε ({key.upper()}) {value:.3g}<extra></extra>")
        fig.update_xaxes(title_text="guesses k on the most confident canaries", row=1, col=col)
    delta, m = (views[archs[0]].delta, views[archs[0]].m) if archs else (float("nan"), 0)
    fig.update_yaxes(title_text="ε at δ", row=1, col=1)
    fig.update_layout(title=f"One-run audit: ε against the number of guesses (δ = {delta:g}, m = {m} "
                            "canaries; each point 95 % on its own)")
    return legend_below(fig, 480)


def _auc_bar(r: SliceRow) -> tuple[float, float]:
    """The AUC's bootstrap bar of a slice, (above, below) the AUC; 0 for a slice without an AUC."""
    if r.auc is None:
        return 0, 0
    if r.auc_low is None or r.auc_high is None:  # every slice with an AUC is written with its interval
        raise ValueError(f"slice {r.slice!r} has an AUC without its bootstrap interval")
    return r.auc_high - r.auc, r.auc - r.auc_low


@figure_builder("slices")
def slices_figure(sv: SlicesView, slicing: str | None = None) -> go.Figure:
    """AUC per slice, per architecture, with bootstrap 95 % bars; slices with too few records faded. A slice's name
    may be the user's (a CSV's class): Plotly reads it as text (:func:`core.views.plain.plain_plotly`)."""
    fig = go.Figure()
    for arch, by in sv.archs.items():
        name = slicing or next(iter(by))
        rows: tuple[SliceRow, ...] = by[name]
        fig.add_bar(x=[plain_plotly(r.slice) for r in rows], y=[r.auc for r in rows], name=ARCH_NAMES.get(arch, arch),
                    marker=dict(color=ARCH_COLOURS.get(arch), opacity=[0.35 if r.too_small else 1.0 for r in rows]),
                    error_y=dict(type="data", symmetric=False, array=[_auc_bar(r)[0] for r in rows],
                                 arrayminus=[_auc_bar(r)[1] for r in rows]),
                    customdata=[[r.n_members, r.n_non_members] for r in rows],
                    hovertemplate="%{x}: AUC %{y:.3f}<br>%{customdata[0]} members, %{customdata[1]} non-members"
                                  "<extra></extra>")
        slicing = name
    fig.add_hline(y=0.5, line=dict(color="grey", dash="dot", width=1))
    fig.update_layout(title=f"{plain_plotly(sv.attack)} AUC per slice ({plain_plotly(slicing)}); faded: fewer than {sv.min_records} "
                            "members or non-members", barmode="group", yaxis=dict(title="AUC", range=[0.0, 1.02]))
    return legend_below(fig, 460)
