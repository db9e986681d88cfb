"""The analyses' figures (:mod:`core.analyses.analysis`): paper 000 Fig. 5's entropy vs cross-entropy
scatter (per-population density contours, marginal histograms, clipped records on a strip,
log / linear axes), vulnerability over training, model mismatch, memorization and overtraining — each from its
analysis' typed results (:mod:`core.analyses.analysis_results`, :mod:`core.analyses.own_models`)."""
from __future__ import annotations

from typing import Mapping, TypeVar

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.analyses.analysis_results import Scatter, Vulnerability
from core.analyses.own_models import Memorization, Mismatch
from core.analyses.registry import figure_builder
from core.foundations.names import ARCH_NAMES
from core.views.style import ARCH_COLOURS, AXIS_TITLE_PX, LEGEND_ROW_PX, RIGHT_PX, legend_below

#: member / non-member colours of the scatter: an orange / blue pair that colour-blind readers tell apart
POPULATION_COLOURS = {True: "#e66100", False: "#3b6fb6"}
POPULATION_NAMES = {True: "members", False: "non-members"}
SCALES = ("log", "linear")
T = TypeVar("T")


def scatter_box(sc: Scatter, scale: str = "log") -> dict[str, tuple[float, float]]:
    """The plotted box of one panel in the figure's units: in ``log`` the records' log₁₀ range
    (``range``, :func:`core.analyses.analysis.data_range`) from the strip (``strip``) of clipped records below it to its top, padded
    by 3 %; in ``linear`` from 0 to the largest value. The surrogate region, the threshold and the
    best quadrant are drawn inside this box only."""
    box = {}
    spans, strip = _required(sc.range, "range"), _required(sc.strip, "strip")
    for key, clipped in (("log10_ape", sc.clipped_ape), ("log10_cross_entropy", sc.clipped_cross_entropy)):
        lo, hi = spans[key]
        if scale == "log":
            bottom = strip[key] if any(clipped or ()) else lo  # the strip only when it holds records
            pad = 0.03 * (hi - bottom)
            box[key] = (bottom - pad, hi + pad)
        else:
            top = 10.0 ** hi
            box[key] = (-0.03 * top, 1.03 * top)
    return box


def _required(value: T | None, what: str) -> T:
    """A scatter's ``what``, which the figure cannot be drawn without: None (a layout without it) is a ValueError
    naming it."""
    if value is None:
        raise ValueError(f"this scatter has no {what}: it cannot be drawn")
    return value


def _in_units(values, scale: str) -> np.ndarray:
    v = np.asarray(values, np.float64)
    return v if scale == "log" else 10.0 ** v


def scatter_figure(scatters: Mapping[str, Scatter], attack: str, scale: str = "log") -> go.Figure:
    """Paper 000 Fig. 5: average prediction entropy vs cross-entropy per record (``scale`` ``log``:
    log₁₀ of both, or ``linear``), one panel per architecture.

    The populations are told apart by colour (members orange, non-members blue), by a density
    contour per population over the translucent points, and by their marginal histograms (top:
    entropy, right: cross-entropy, each normalised to its population). × = the attack got that
    record wrong. Records clipped at 1e-12 are drawn as triangles on a grey strip below (left of)
    the axis, not as a row of data at −12. The attack's boundary — its real threshold (dashed) or a
    surrogate's 0.5 contour (solid, its member side lightly shaded) — and the best quadrant
    (dotted) are clipped to the records' range; each panel spans its own records."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    archs = list(scatters)
    n = len(archs)
    titles = []
    for arch in archs:
        titles += [ARCH_NAMES.get(arch, arch), ""]
    titles += [""] * (2 * n)
    fig = make_subplots(rows=2, cols=2 * n, column_widths=[0.82 / n, 0.18 / n] * n, row_heights=[0.18, 0.82],
                        horizontal_spacing=0.012, vertical_spacing=0.02, subplot_titles=titles)
    log = scale == "log"
    in_legend: set[str] = set()
    boxes = []
    for i, arch in enumerate(archs):
        col = 2 * i + 1
        sc = scatters[arch]
        # each panel on its own records' box: a shared one squeezed the architecture with the narrower
        # spread into a corner (the tick labels carry the comparison)
        box = scatter_box(sc, scale)
        bx, by = box["log10_ape"], box["log10_cross_entropy"]
        boxes.append((bx, by))
        member = np.asarray(_required(sc.membership, "membership"), bool)
        cx = np.asarray(sc.clipped_ape if sc.clipped_ape is not None else [False] * len(member), bool)
        cy = np.asarray(sc.clipped_cross_entropy if sc.clipped_cross_entropy is not None else [False] * len(member),
                        bool)
        x = _in_units(_required(sc.log10_ape, "log10_ape"), scale)
        y = _in_units(_required(sc.log10_cross_entropy, "log10_cross_entropy"), scale)
        strip = _required(sc.strip, "strip")
        if log:  # clipped records on the strip below the records' range
            x = np.where(cx, strip["log10_ape"], x)
            y = np.where(cy, strip["log10_cross_entropy"], y)
        entry = sc.attacks[attack]
        correct = np.asarray(entry.correct, bool)
        first = i == 0
        surrogate = entry.surrogate
        if surrogate is not None:
            fig.add_contour(x=_in_units(surrogate.x, scale), y=_in_units(surrogate.y, scale),
                            z=surrogate.member_probability, row=2, col=col,
                            contours=dict(start=0.5, end=1.0, size=0.5, coloring="fill"), showscale=False,
                            colorscale=[[0, "rgba(0,0,0,0)"], [1, "rgba(120,120,120,0.16)"]],
                            line=dict(width=2, color="#333"), hoverinfo="skip",
                            name="attack's member side (surrogate on these two signals)", showlegend=first)
        if log:  # the strips where clipped records lie, labelled as such
            if cx.any():
                fig.add_shape(type="rect", x0=bx[0], x1=strip["log10_ape"] + 0.02 * (bx[1] - bx[0]), y0=by[0],
                              y1=by[1], fillcolor="rgba(0,0,0,0.06)", line_width=0, layer="below", row=2, col=col)
                fig.add_annotation(x=strip["log10_ape"], y=by[1], text="APE ≤ 1e-12 (clipped)", textangle=-90,
                                   showarrow=False, xanchor="center", yanchor="top", font=dict(size=10, color="#555"),
                                   row=2, col=col)
            if cy.any():
                fig.add_shape(type="rect", y0=by[0], y1=strip["log10_cross_entropy"] + 0.02 * (by[1] - by[0]),
                              x0=bx[0], x1=bx[1], fillcolor="rgba(0,0,0,0.06)", line_width=0, layer="below",
                              row=2, col=col)
                fig.add_annotation(x=bx[1], y=strip["log10_cross_entropy"], text="CE ≤ 1e-12 (clipped)",
                                   showarrow=False, xanchor="right", yanchor="bottom", font=dict(size=10, color="#555"),
                                   row=2, col=col)
        for is_member in (False, True):  # members on top: the smaller, denser population
            colour = POPULATION_COLOURS[is_member]
            pop = member == is_member
            kept = pop & ~cx & ~cy
            if kept.sum() >= 10:
                fig.add_histogram2dcontour(
                    x=x[kept], y=y[kept], row=2, col=col, ncontours=5, showscale=False, hoverinfo="skip",
                    contours=dict(coloring="none"), line=dict(color=colour, width=1.6),
                    name=f"density of {POPULATION_NAMES[is_member]}", legendgroup=f"density{is_member}",
                    showlegend=first)
            for ok in (True, False):
                sel = pop & (correct == ok) & ~cx & ~cy
                idx = np.nonzero(sel)[0]
                fig.add_scatter(
                    x=x[sel], y=y[sel], mode="markers", row=2, col=col,
                    marker=dict(color=colour, symbol="circle" if ok else "x-thin-open", size=5 if ok else 6,
                                opacity=0.35 if ok else 0.8, line=dict(width=1.2, color=colour) if not ok else None),
                    name=(POPULATION_NAMES[is_member] if ok else f"{POPULATION_NAMES[is_member]}, attack wrong (×)"),
                    legendgroup=f"{is_member}{ok}", showlegend=first, customdata=idx,
                    hovertemplate="record %{customdata}<br>APE %{x:.3g}<br>CE %{y:.3g}<extra></extra>" if not log else
                    "record %{customdata}<br>log₁₀ APE %{x:.2f}<br>log₁₀ CE %{y:.2f}<extra></extra>")
            clipped = pop & (cx | cy)
            idx = np.nonzero(clipped)[0]
            fig.add_scatter(
                x=x[clipped], y=y[clipped], mode="markers", row=2, col=col,
                marker=dict(color=colour, symbol="triangle-down", size=7, opacity=0.6),
                name=f"{POPULATION_NAMES[is_member]}, clipped at {1e-12 if sc.floor is None else sc.floor:g}",
                legendgroup=f"clipped{is_member}", customdata=idx,
                showlegend=bool(clipped.any()) and f"clipped{is_member}" not in in_legend,
                hovertemplate="record %{customdata}: a signal ≤ 1e-12 (clipped)<extra></extra>")
            if clipped.any():  # listed once, by the first panel that has such records
                in_legend.add(f"clipped{is_member}")
            # marginal histograms, each normalised to its own population (the two have different sizes)
            # the same 40 bins for both populations, so that the bars compare bin by bin
            fig.add_histogram(x=x[pop & ~cx], row=1, col=col, marker_color=colour, opacity=0.5, histnorm="probability",
                              xbins=dict(start=bx[0], end=bx[1], size=(bx[1] - bx[0]) / 40), showlegend=False,
                              hoverinfo="skip", legendgroup=f"density{is_member}")
            fig.add_histogram(y=y[pop & ~cy], row=2, col=col + 1, marker_color=colour, opacity=0.5,
                              histnorm="probability", ybins=dict(start=by[0], end=by[1], size=(by[1] - by[0]) / 40),
                              showlegend=False, hoverinfo="skip", legendgroup=f"density{is_member}")
        boundary = entry.boundary
        if boundary is not None and boundary.threshold is not None:
            t = max(float(boundary.threshold), 1e-12)
            t = float(np.log10(t)) if log else t
            vertical = boundary.signal == "ape"
            lo, hi = bx if vertical else by
            if lo <= t <= hi:
                line = dict(color="black", dash="dash", width=2)
                if vertical:
                    fig.add_shape(type="line", x0=t, x1=t, y0=by[0], y1=by[1], line=line, row=2, col=col)
                else:
                    fig.add_shape(type="line", y0=t, y1=t, x0=bx[0], x1=bx[1], line=line, row=2, col=col)
            else:
                side = "below" if t < lo else "above"
                fig.add_annotation(text=f"threshold {boundary.threshold:.3g} lies {side} every record",
                                   xref=f"x{'' if col + 2 * n == 1 else col + 2 * n} domain",
                                   yref=f"y{'' if col + 2 * n == 1 else col + 2 * n} domain",
                                   x=0.5, y=0.98, showarrow=False, font=dict(size=11))
        q = sc.quadrant
        qx = float(np.log10(max(q.entropy_max, 1e-12)) if log else q.entropy_max) if q.entropy_max is not None else bx[1]
        qy = float(np.log10(max(q.cross_entropy_max, 1e-12)) if log else q.cross_entropy_max) \
            if q.cross_entropy_max is not None else by[1]
        qx, qy = min(max(qx, bx[0]), bx[1]), min(max(qy, by[0]), by[1])
        fig.add_shape(type="rect", x0=bx[0], x1=qx, y0=by[0], y1=qy, line=dict(color="#222", dash="dot", width=2),
                      row=2, col=col)
        # held out: chosen on half the records, scored on the other (one chosen on all records overstates)
        quadrant = (f"best quadrant · held-out acc {q.accuracy:.2f}" if q.n_scored is not None
                    else f"best quadrant · acc {q.accuracy:.2f} (chosen on these records)")
        fig.add_annotation(x=qx, y=qy, text=quadrant, showarrow=False,
                           xanchor="right" if qx > (bx[0] + bx[1]) / 2 else "left", yanchor="bottom", font=dict(size=11, color="#222"),
                           bgcolor="rgba(255,255,255,0.7)", row=2, col=col)
    # axes: every main panel on one box; each marginal follows its main panel's axis
    unit = "log₁₀ " if log else ""
    for i, (bx, by) in enumerate(boxes):
        col = 2 * i + 1
        fig.update_xaxes(range=list(bx), row=2, col=col, title_text=f"{unit}average prediction entropy (APE)")
        fig.update_yaxes(range=list(by), row=2, col=col, title_text=f"{unit}cross-entropy to the reference" if i == 0 else None)
        fig.update_xaxes(matches=f"x{2 * n + col}", row=1, col=col, showticklabels=False)
        fig.update_yaxes(row=1, col=col, showticklabels=False, title_text=None)
        fig.update_yaxes(matches=f"y{2 * n + col}", row=2, col=col + 1, showticklabels=False)
        fig.update_xaxes(row=2, col=col + 1, showticklabels=False)
        fig.update_xaxes(row=1, col=col + 1, visible=False)
        fig.update_yaxes(row=1, col=col + 1, visible=False)
    fig.update_layout(barmode="overlay", plot_bgcolor="white",
                      title=dict(text="Entropy vs cross-entropy per record · " + ("dashed: the attack's threshold"
                                 if any(scatters[a].attacks[attack].boundary is not None
                                        for a in archs) else
                                 "solid line: the attack's boundary (surrogate), shaded: its member side")
                                 + " · dotted: best quadrant", font=dict(size=14)))
    fig.update_xaxes(showgrid=True, gridcolor="#eee", zeroline=False)
    fig.update_yaxes(showgrid=True, gridcolor="#eee", zeroline=False)
    legend_below(fig, 640)
    # room for the y axis' ticks and title, and for the legend below (LEFT_PX: drawn once)
    fig.update_layout(margin=dict(l=88, r=RIGHT_PX, t=70, b=AXIS_TITLE_PX + 3 * LEGEND_ROW_PX + 6))
    return fig


@figure_builder("scatter")
def default_scatter_figure(scatters: Mapping[str, Scatter]) -> go.Figure:
    """The entropy scatter's figure for the shadow-model attack (else the first attack), log scale."""
    first = next(iter(scatters.values())).attacks
    return scatter_figure(scatters, "shadow" if "shadow" in first else next(iter(first)))


@figure_builder("vulnerability")
def vulnerability_figure(vulns: Mapping[str, Vulnerability]) -> go.Figure:
    """Paper 000 Fig. 4: utility (train solid, validation dashed), APE of members (solid) and
    non-members (dashed, log scale) and attack accuracy over epochs; the best-validation epoch marked."""
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=["utility", "average prediction entropy (log scale)", "attack accuracy"])
    for arch, v in vulns.items():
        c, name = ARCH_COLOURS.get(arch), ARCH_NAMES.get(arch, arch)
        rows = v.rows or ()
        e = [r.epoch for r in rows]
        fig.add_scatter(x=e, y=[r.utility_train for r in rows], name=f"{name} train", line=dict(color=c), row=1, col=1)
        fig.add_scatter(x=e, y=[r.utility_val for r in rows], name=f"{name} validation", line=dict(color=c, dash="dash"),
                        row=1, col=1)
        # the checkpoints: (epoch, members' APE, non-members' APE), both APEs measured there
        ck = [(r.epoch, m, nm) for r in rows if (m := r.ape_members) is not None and (nm := r.ape_non_members) is not None]
        fig.add_scatter(x=[e for e, _, _ in ck], y=[max(m, 1e-12) for _, m, _ in ck], mode="lines+markers",
                        name=f"{name} APE members", line=dict(color=c), row=2, col=1)
        fig.add_scatter(x=[e for e, _, _ in ck], y=[max(nm, 1e-12) for _, _, nm in ck], mode="lines+markers",
                        name=f"{name} APE non-members", line=dict(color=c, dash="dash"), row=2, col=1)
        at = [r for r in rows if r.attack_accuracy is not None]
        fig.add_scatter(x=[r.epoch for r in at], y=[r.attack_accuracy for r in at], mode="lines+markers",
                        name=f"{name} attack accuracy", line=dict(color=c), row=3, col=1)
        if v.best_val_epoch:
            fig.add_vline(x=v.best_val_epoch, line=dict(color=c, dash="dot", width=1))
    fig.add_hline(y=0.5, line=dict(color="grey", dash="dot", width=1), row=3, col=1)
    fig.update_yaxes(type="log", row=2, col=1)
    fig.update_xaxes(title_text="epoch", row=3, col=1)
    fig.update_layout(title="Vulnerability over training (dotted vertical: best validation epoch)")
    return legend_below(fig, 820, bottom=150)  # its ten entries take three rows, 0.14 of 820 px below the axis


@figure_builder("mismatch")
def mismatch_figure(results: Mapping[str, Mismatch]) -> go.Figure:
    """Paper 001 A.3: primary attack accuracy with shadows of the victim's size (scale 1) and others."""
    fig = go.Figure()
    for arch, m in results.items():
        fig.add_bar(x=[f"×{r.scale:g} ({m.knob}={r.width})" for r in m.rows],
                    y=[r.accuracy[m.attack] for r in m.rows], name=ARCH_NAMES.get(arch, arch),
                    marker_color=ARCH_COLOURS.get(arch))
    fig.add_hline(y=0.5, line=dict(color="grey", dash="dot", width=1))
    fig.update_layout(title="Model mismatch: shadows of another size than the victim", barmode="group",
                      yaxis=dict(title="attack accuracy", range=[0.4, 1.0]), xaxis_title="shadow size")
    return legend_below(fig, 460)


@figure_builder("memorization")
def memorization_figure(results: Mapping[str, Memorization]) -> go.Figure:
    """Paper 000 Fig. 6: attack accuracy per block in the order the blocks were learned (block 1 first),
    and the saw-tooth of train/validation utility during sequential training."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=["attack accuracy per block (learned first → last)",
                                                        "utility during sequential training"])
    for arch, m in results.items():
        c, name = ARCH_COLOURS.get(arch), ARCH_NAMES.get(arch, arch)
        fig.add_scatter(x=[b.block for b in m.blocks], y=[b.attack_accuracy for b in m.blocks],
                        mode="lines+markers", name=f"{name} attack accuracy", line=dict(color=c), row=1, col=1)
        fig.add_scatter(x=[r.step for r in m.curve], y=[r.utility_current_block for r in m.curve],
                        name=f"{name} current block", line=dict(color=c), row=1, col=2)
        fig.add_scatter(x=[r.step for r in m.curve], y=[r.utility_val for r in m.curve],
                        name=f"{name} validation", line=dict(color=c, dash="dash"), row=1, col=2)
    fig.add_hline(y=0.5, line=dict(color="grey", dash="dot", width=1), row=1, col=1)
    fig.update_xaxes(title_text="block (order of learning)", row=1, col=1, dtick=1)
    fig.update_xaxes(title_text="epoch of sequential training", row=1, col=2)
    return legend_below(fig, 480)


@figure_builder("overtraining")
def overtraining_figure(results: Mapping[str, Vulnerability]) -> go.Figure:
    """Attack accuracy (solid) and validation utility (dashed, right axis) far past the best epoch."""
    fig = go.Figure()
    for arch, v in results.items():
        c, name = ARCH_COLOURS.get(arch), ARCH_NAMES.get(arch, arch)
        rows = v.rows or ()
        at = [r for r in rows if r.attack_accuracy is not None]
        fig.add_scatter(x=[r.epoch for r in at], y=[r.attack_accuracy for r in at], mode="lines+markers",
                        name=f"{name} attack accuracy", line=dict(color=c))
        fig.add_scatter(x=[r.epoch for r in rows], y=[r.utility_val for r in rows], yaxis="y2",
                        name=f"{name} validation utility", line=dict(color=c, dash="dash"))
        if v.best_val_epoch:
            fig.add_vline(x=v.best_val_epoch, line=dict(color=c, dash="dot", width=1))
        fig.add_vline(x=v.preset_epochs, line=dict(color="grey", width=1))
    fig.update_layout(title="Overtraining (grey: the preset's epochs; dotted: best validation epoch)",
                      xaxis_title="epoch", yaxis=dict(title="attack accuracy", range=[0.4, 1.02]),
                      yaxis2=dict(title="validation utility", overlaying="y", side="right", showgrid=False))
    return legend_below(fig, 480)
