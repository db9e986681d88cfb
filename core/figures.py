"""Plotly figures of the analyses (:mod:`core.analysis`), shared by the Analyses page and the CLI's
``analyze`` (which writes each as a self-contained HTML file). Figures only: no Streamlit, no
computation beyond laying out what the analysis returned."""
from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .names import ARCH_NAMES

ARCH_COLOURS = {"ffnn": "#1f77b4", "rnn": "#d62728"}
MEMBER_COLOURS = {True: "#d62728", False: "#1f77b4"}
SIGNAL_AXIS = {"ape": "x", "cross_entropy": "y"}


def _legend_below(fig: go.Figure, height: int = 520) -> go.Figure:
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=60, b=10),
                      legend=dict(orientation="h", yanchor="top", y=-0.14, xanchor="left", x=0))
    return fig


def scatter_figure(scatters: dict[str, dict[str, Any]], attack: str) -> go.Figure:
    """Paper 000 Fig. 5: log APE vs log cross-entropy per record, one panel per architecture with
    shared axes; colour = membership, ○ = the attack got it right, × = wrong; the attack's boundary
    (its real threshold, or a surrogate's 0.5 contour shaded), and the best quadrant (dotted)."""
    archs = list(scatters)
    fig = make_subplots(rows=1, cols=len(archs), shared_xaxes="all", shared_yaxes="all", horizontal_spacing=0.04,
                        subplot_titles=[ARCH_NAMES.get(a, a) for a in archs])
    for col, arch in enumerate(archs, 1):
        sc = scatters[arch]
        x, y = np.asarray(sc["log10_ape"]), np.asarray(sc["log10_cross_entropy"])
        member = np.asarray(sc["membership"], bool)
        entry = sc["attacks"][attack]
        correct = np.asarray(entry["correct"], bool)
        surrogate = entry.get("surrogate")
        if surrogate:
            fig.add_contour(x=surrogate["x"], y=surrogate["y"], z=surrogate["member_probability"], row=1, col=col,
                            contours=dict(start=0.5, end=1.0, size=0.5, coloring="fill"), showscale=False,
                            colorscale=[[0, "rgba(214,39,40,0.0)"], [1, "rgba(214,39,40,0.18)"]], line=dict(width=1.5),
                            hoverinfo="skip", name="surrogate: member region", showlegend=col == 1)
        for is_member in (True, False):
            for ok in (True, False):
                sel = (member == is_member) & (correct == ok)
                idx = np.nonzero(sel)[0]
                fig.add_scatter(
                    x=x[sel], y=y[sel], mode="markers", row=1, col=col,
                    marker=dict(color=MEMBER_COLOURS[is_member], symbol="circle-open" if ok else "x", size=6, opacity=0.7),
                    name=f"{'member' if is_member else 'non-member'}, attack {'right' if ok else 'wrong'}",
                    legendgroup=f"{is_member}{ok}", showlegend=col == 1, customdata=idx,
                    hovertemplate="record %{customdata}<br>log₁₀ APE %{x:.2f}<br>log₁₀ CE %{y:.2f}<extra></extra>")
        boundary = entry.get("boundary")
        if boundary and boundary.get("threshold") is not None:
            t = float(np.log10(max(boundary["threshold"], 1e-12)))
            if boundary["signal"] == "ape":
                fig.add_vline(x=t, line=dict(color="black", dash="dash"), row=1, col=col)
            else:
                fig.add_hline(y=t, line=dict(color="black", dash="dash"), row=1, col=col)
        q = sc["quadrant"]
        qx = np.log10(max(q["entropy_max"], 1e-12)) if q["entropy_max"] is not None else float(x.max())
        qy = np.log10(max(q["cross_entropy_max"], 1e-12)) if q["cross_entropy_max"] is not None else float(y.max())
        fig.add_shape(type="rect", x0=float(min(x.min(), qx)), x1=qx, y0=float(min(y.min(), qy)), y1=qy,
                      line=dict(color="grey", dash="dot"), row=1, col=col)
    fig.update_xaxes(title_text="log₁₀ average prediction entropy")
    fig.update_yaxes(title_text="log₁₀ cross-entropy to the reference", col=1)
    fig.update_layout(title="Entropy vs cross-entropy with the attack's decisions (dashed: threshold; "
                            "shaded: surrogate member region; dotted box: best quadrant)")
    return _legend_below(fig, 560)


def vulnerability_figure(vulns: dict[str, dict[str, Any]]) -> go.Figure:
    """Paper 000 Fig. 4: utility (train solid, validation dashed), APE of members (solid) and
    non-members (dashed, log scale) and attack accuracy over epochs; the best-validation epoch marked."""
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=["utility", "average prediction entropy (log scale)", "attack accuracy"])
    for arch, v in vulns.items():
        c, name = ARCH_COLOURS.get(arch), ARCH_NAMES.get(arch, arch)
        rows = v["rows"]
        e = [r["epoch"] for r in rows]
        fig.add_scatter(x=e, y=[r["utility_train"] for r in rows], name=f"{name} train", line=dict(color=c), row=1, col=1)
        fig.add_scatter(x=e, y=[r["utility_val"] for r in rows], name=f"{name} validation", line=dict(color=c, dash="dash"),
                        row=1, col=1)
        ck = [r for r in rows if "ape_members" in r]
        fig.add_scatter(x=[r["epoch"] for r in ck], y=[max(r["ape_members"], 1e-12) for r in ck], mode="lines+markers",
                        name=f"{name} APE members", line=dict(color=c), row=2, col=1)
        fig.add_scatter(x=[r["epoch"] for r in ck], y=[max(r["ape_non_members"], 1e-12) for r in ck], mode="lines+markers",
                        name=f"{name} APE non-members", line=dict(color=c, dash="dash"), row=2, col=1)
        at = [r for r in rows if r.get("attack_accuracy") is not None]
        fig.add_scatter(x=[r["epoch"] for r in at], y=[r["attack_accuracy"] for r in at], mode="lines+markers",
                        name=f"{name} attack accuracy", line=dict(color=c), row=3, col=1)
        if v.get("best_val_epoch"):
            fig.add_vline(x=v["best_val_epoch"], line=dict(color=c, dash="dot", width=1))
    fig.add_hline(y=0.5, line=dict(color="grey", dash="dot", width=1), row=3, col=1)
    fig.update_yaxes(type="log", row=2, col=1)
    fig.update_xaxes(title_text="epoch", row=3, col=1)
    fig.update_layout(title="Vulnerability over training (dotted vertical: best validation epoch)")
    return _legend_below(fig, 820)


def mismatch_figure(results: dict[str, dict[str, Any]]) -> go.Figure:
    """Paper 001 A.3: primary attack accuracy with shadows of the victim's size (scale 1) and others."""
    fig = go.Figure()
    for arch, m in results.items():
        fig.add_bar(x=[f"×{r['scale']:g} ({m['knob']}={r[m['knob']]})" for r in m["rows"]],
                    y=[r["accuracy"][m["attack"]] for r in m["rows"]], name=ARCH_NAMES.get(arch, arch),
                    marker_color=ARCH_COLOURS.get(arch))
    fig.add_hline(y=0.5, line=dict(color="grey", dash="dot", width=1))
    fig.update_layout(title="Model mismatch: shadows of another size than the victim", barmode="group",
                      yaxis=dict(title="attack accuracy", range=[0.4, 1.0]), xaxis_title="shadow size")
    return _legend_below(fig, 460)


def memorization_figure(results: dict[str, dict[str, Any]]) -> go.Figure:
    """Paper 000 Fig. 6: attack accuracy per block in the order the blocks were learned (block 1 first),
    and the saw-tooth of train/validation utility during sequential training."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=["attack accuracy per block (learned first → last)",
                                                        "utility during sequential training"])
    for arch, m in results.items():
        c, name = ARCH_COLOURS.get(arch), ARCH_NAMES.get(arch, arch)
        fig.add_scatter(x=[b["block"] for b in m["blocks"]], y=[b["attack_accuracy"] for b in m["blocks"]],
                        mode="lines+markers", name=f"{name} attack accuracy", line=dict(color=c), row=1, col=1)
        curve = m["curve"]
        fig.add_scatter(x=[r["step"] for r in curve], y=[r["utility_current_block"] for r in curve],
                        name=f"{name} current block", line=dict(color=c), row=1, col=2)
        fig.add_scatter(x=[r["step"] for r in curve], y=[r["utility_val"] for r in curve],
                        name=f"{name} validation", line=dict(color=c, dash="dash"), row=1, col=2)
    fig.add_hline(y=0.5, line=dict(color="grey", dash="dot", width=1), row=1, col=1)
    fig.update_xaxes(title_text="block (order of learning)", row=1, col=1, dtick=1)
    fig.update_xaxes(title_text="epoch of sequential training", row=1, col=2)
    return _legend_below(fig, 480)


def overtraining_figure(results: dict[str, dict[str, Any]]) -> go.Figure:
    """Attack accuracy (solid) and validation utility (dashed, right axis) far past the best epoch."""
    fig = go.Figure()
    for arch, v in results.items():
        c, name = ARCH_COLOURS.get(arch), ARCH_NAMES.get(arch, arch)
        at = [r for r in v["rows"] if r.get("attack_accuracy") is not None]
        fig.add_scatter(x=[r["epoch"] for r in at], y=[r["attack_accuracy"] for r in at], mode="lines+markers",
                        name=f"{name} attack accuracy", line=dict(color=c))
        fig.add_scatter(x=[r["epoch"] for r in v["rows"]], y=[r["utility_val"] for r in v["rows"]], yaxis="y2",
                        name=f"{name} validation utility", line=dict(color=c, dash="dash"))
        if v.get("best_val_epoch"):
            fig.add_vline(x=v["best_val_epoch"], line=dict(color=c, dash="dot", width=1))
        fig.add_vline(x=v["preset_epochs"], line=dict(color="grey", width=1))
    fig.update_layout(title="Overtraining (grey: the preset's epochs; dotted: best validation epoch)",
                      xaxis_title="epoch", yaxis=dict(title="attack accuracy", range=[0.4, 1.02]),
                      yaxis2=dict(title="validation utility", overlaying="y", side="right", showgrid=False))
    return _legend_below(fig, 480)


# ---------------------------------------------------------------------------- issue 22's views
QUADRANT_NAMES = {"both": "both", "only_b": "only {b}", "only_a": "only {a}", "neither": "neither"}


def exposure_figure(view: dict[str, Any], fpr: str = "0.01") -> go.Figure:
    """Each evaluated record's membership score under the two architectures (x: the first, y: the
    second), members and non-members marked, with each architecture's threshold at ``fpr`` (from its
    non-members): the four quadrants of exposure, their member counts in the title."""
    a, b = view["archs"]
    q = view["quadrants"][fpr]
    x, y = np.asarray(view["scores"][a]), np.asarray(view["scores"][b])
    member = np.asarray(view["membership"], bool)
    fig = go.Figure()
    for is_member in (True, False):
        idx = np.nonzero(member == is_member)[0]
        fig.add_scatter(x=x[idx], y=y[idx], mode="markers", customdata=idx,
                        marker=dict(color=MEMBER_COLOURS[is_member], size=6, opacity=0.65,
                                    symbol="circle" if is_member else "circle-open"),
                        name="member" if is_member else "non-member",
                        hovertemplate=f"record %{{customdata}}<br>{ARCH_NAMES.get(a, a)} %{{x:.3g}}<br>"
                                      f"{ARCH_NAMES.get(b, b)} %{{y:.3g}}<extra></extra>")
    fig.add_vline(x=q["a"]["threshold"], line=dict(color=ARCH_COLOURS.get(a), dash="dash"))
    fig.add_hline(y=q["b"]["threshold"], line=dict(color=ARCH_COLOURS.get(b), dash="dash"))
    names = {k: v.format(a=ARCH_NAMES.get(a, a), b=ARCH_NAMES.get(b, b)) for k, v in QUADRANT_NAMES.items()}
    counts = ", ".join(f"{names[c['name']]} {c['count']}" for c in q["members"])
    fig.update_layout(title=f"{view['attack']} score per record at FPR {float(fpr):.1%} — members exposed: {counts} "
                            f"(of {q['members'][0]['n']})",
                      xaxis_title=f"{ARCH_NAMES.get(a, a)} score", yaxis_title=f"{ARCH_NAMES.get(b, b)} score")
    return _legend_below(fig, 560)


def budget_figure(budgets: dict[str, dict[str, Any]]) -> go.Figure:
    """AUC (top) and TPR at 1 % FPR (bottom) against the number of reference models, one panel per
    attack, per architecture; bars: 2.5–97.5 % over which references were drawn; ▼: where it flattens."""
    attacks = list(next(iter(budgets.values()))["curves"])
    fig = make_subplots(rows=2, cols=len(attacks), shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=[f"{n} AUC" for n in attacks] + [f"{n} TPR at 1 % FPR" for n in attacks])
    for arch, view in budgets.items():
        c, name = ARCH_COLOURS.get(arch), ARCH_NAMES.get(arch, arch)
        for col, attack in enumerate(attacks, 1):
            curve = view["curves"][attack]
            pts = curve["points"]
            n = [p["n_references"] for p in pts]
            for row, (get, lo, hi) in enumerate(((lambda p: p["auc"], lambda p: p["auc_low"], lambda p: p["auc_high"]),
                                                 (lambda p: p["tpr_at_fpr"]["0.01"], lambda p: p["tpr_low"]["0.01"],
                                                  lambda p: p["tpr_high"]["0.01"])), 1):
                ys = [get(p) for p in pts]
                fig.add_scatter(x=n, y=ys, mode="lines+markers", line=dict(color=c), name=name, legendgroup=arch,
                                showlegend=row == 1 and col == 1, row=row, col=col,
                                error_y=dict(type="data", symmetric=False, array=[hi(p) - get(p) for p in pts],
                                             arrayminus=[get(p) - lo(p) for p in pts]))
            if curve["flattens_at"] is not None:
                at = next(p for p in pts if p["n_references"] == curve["flattens_at"])
                fig.add_scatter(x=[at["n_references"]], y=[at["auc"]], mode="markers", row=1, col=col,
                                marker=dict(symbol="triangle-down", size=13, color=c), showlegend=False,
                                hovertemplate=f"{name}: flattens at %{{x}} references<extra></extra>")
    fig.update_xaxes(title_text="reference models used", row=2)
    fig.update_layout(title="The attacker's reference budget (▼: within 0.01 AUC of all references)")
    return _legend_below(fig, 640)


def audit_figure(audits: dict[str, dict[str, Any]]) -> go.Figure:
    """Per architecture: the audited ε (one run, canaries), the accountant's ε (RDP, PRV; DP-SGD
    runs only) and the attack-derived ε̂ of the cached run, side by side."""
    fig = go.Figure()
    archs = list(audits)
    labels = [ARCH_NAMES.get(a, a) for a in archs]
    fig.add_bar(x=labels, y=[audits[a]["audited_epsilon"] for a in archs], name="audited ε (one run, canaries)",
                marker_color="#2ca02c")
    for key, colour in (("rdp", "#7f7f7f"), ("prv", "#bcbd22")):
        values = [(audits[a]["accountant_epsilon"] or {}).get(key) for a in archs]
        if any(v is not None for v in values):
            fig.add_bar(x=labels, y=values, name=f"accountant ε ({key.upper()})", marker_color=colour)
    fig.add_bar(x=labels, y=[audits[a]["attack_epsilon_lower_bound"] for a in archs],
                name="attack ε̂ (cached run)", marker_color="#9467bd")
    first = audits[archs[0]]
    fig.update_layout(title=f"Audited ε beside the accountant's (δ = {first['delta']:g}, m = {first['m']} canaries, "
                            f"{first['audit']['confidence']:.0%} confidence)", barmode="group", yaxis_title="ε")
    return _legend_below(fig, 460)


def slices_figure(view: dict[str, Any], slicing: str | None = None) -> go.Figure:
    """AUC per slice, per architecture, with bootstrap 95 % bars; slices with too few records faded."""
    fig = go.Figure()
    for arch, by in view["archs"].items():
        name = slicing or next(iter(by))
        rows = by[name]
        fig.add_bar(x=[r["slice"] for r in rows], y=[r["auc"] for r in rows], name=ARCH_NAMES.get(arch, arch),
                    marker=dict(color=ARCH_COLOURS.get(arch), opacity=[0.35 if r["too_small"] else 1.0 for r in rows]),
                    error_y=dict(type="data", symmetric=False,
                                 array=[(r["auc_high"] - r["auc"]) if r["auc"] is not None else 0 for r in rows],
                                 arrayminus=[(r["auc"] - r["auc_low"]) if r["auc"] is not None else 0 for r in rows]),
                    customdata=[[r["n_members"], r["n_non_members"]] for r in rows],
                    hovertemplate="%{x}: AUC %{y:.3f}<br>%{customdata[0]} members, %{customdata[1]} non-members"
                                  "<extra></extra>")
        slicing = name
    fig.add_hline(y=0.5, line=dict(color="grey", dash="dot", width=1))
    fig.update_layout(title=f"{view['attack']} AUC per slice ({slicing}); faded: fewer than {view['min_records']} "
                            "members or non-members", barmode="group", yaxis=dict(title="AUC", range=[0.0, 1.02]))
    return _legend_below(fig, 460)
