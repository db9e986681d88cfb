"""Every plotly figure and table of the project, from the JSON the library writes: the run's
results (one summary per architecture, as ``python -m core run`` writes it), the defenses' curves
and tables, the navigation maps, the analyses (:mod:`core.analyses.analysis`) and issue 22's per-record
views. No Streamlit and no computation beyond laying out what the library returned: the pages draw
these figures, and the CLI's reports (:mod:`core.views.report`) write the same ones to HTML, so what the
app shows can always be reproduced headless."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.analyses.repeats import METRIC_LABELS, unresolved_label
from core.measurement import studies
from core.defenses.registry import Mechanism
from core.experiment.fidelity import matched_utility
from core.foundations.names import ARCH_NAMES, ATTACK_NAMES, ATTACK_SHORT, UTILITY_NAMES
from core.data.planner import DOOR, EMPTY, FLOOR, GOAL, LAVA, WALL  # MiniGrid's object indices: one source
from core.tasks import REGISTRY, get_task

ARCH_COLOURS = {"ffnn": "#1f77b4", "rnn": "#d62728"}
ATTACK_DASH = {"shadow": "solid", "loss_threshold": "dash", "entropy_threshold": "dot", "prmia": "dashdot",
               "bleu_feature": "longdash", "lira": "longdashdot", "lira_online": "longdashdot", "rmia": "longdashdot"}


#: legend below the plot, under the x-axis title, in the figure's own margin: it never covers
#: the axes, however many entries it has (the margin grows with the number of rows)
LEGEND_ROW_PX = 22
AXIS_TITLE_PX = 62
#: the side margins a figure starts with: about what its tick labels and axis titles take. Plotly's
#: automargin only ever widens a margin, and each widening redraws the whole figure once more: a
#: figure that starts with its margins wide enough is drawn once, in about 60 % of the browser time
#: (the Defenses page's two charts: 88 → 51 ms and 54 → 33 ms, `bench/sigma_step_probe.py --plotly`)
LEFT_PX, RIGHT_PX, RIGHT_AXIS_PX = 72, 20, 66


def _legend_rows(fig: go.Figure, per_row: int = 2) -> int:
    shown = [t for t in fig.data if t.showlegend is not False and t.name]
    return max(1, math.ceil(len(shown) / per_row)) if shown else 0


def _layout(fig: go.Figure, title: str, x: str, y: str, height: int = 420, per_row: int = 2) -> go.Figure:
    rows = _legend_rows(fig, per_row)
    legend_px = rows * LEGEND_ROW_PX + (8 if rows else 0)
    fig.update_layout(
        title=dict(text=title, x=0, xanchor="left", y=1, yanchor="top", yref="container", pad=dict(t=12, l=4)),
        xaxis_title=x, yaxis_title=y, height=height + legend_px,
        margin=dict(l=LEFT_PX, r=RIGHT_AXIS_PX if "yaxis2" in fig.layout.to_plotly_json() else RIGHT_PX, t=50,
                    b=AXIS_TITLE_PX + legend_px),
        legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", xref="container", x=0, xanchor="left",
                    entrywidth=1.0 / per_row - 0.01, entrywidthmode="fraction", font=dict(size=12),
                    itemclick="toggle", itemdoubleclick="toggleothers"),
    )
    fig.update_xaxes(automargin=True, title_standoff=8)
    fig.update_yaxes(automargin=True, title_standoff=8)
    return fig


def arch_label(s: dict[str, Any]) -> str:
    return f"{ARCH_NAMES.get(s['arch'], s['arch'])} ({s['params']:,} params)"


def _member_vs_unseen_curves(summaries: list[dict[str, Any]], key: str, member: str, unseen: str) -> go.Figure:
    """Per-epoch ``<key>_train`` (solid) and ``<key>_val`` (dashed), one colour per architecture."""
    fig = go.Figure()
    for s in summaries:
        epochs = [r["epoch"] for r in s["per_epoch"]]
        c = ARCH_COLOURS.get(s["arch"])
        name = ARCH_NAMES.get(s["arch"], s["arch"])
        fig.add_scatter(x=epochs, y=[r.get(f"{key}_train") for r in s["per_epoch"]], name=f"{name} {member}",
                        line=dict(color=c))
        fig.add_scatter(x=epochs, y=[r.get(f"{key}_val") for r in s["per_epoch"]], name=f"{name} {unseen}",
                        line=dict(color=c, dash="dash"))
    return fig


def utility_curves(summaries: list[dict[str, Any]]) -> go.Figure:
    """Train (members, solid) and validation (dashed) utility per epoch, one colour per architecture."""
    metric = summaries[0]["utility"]["metric"] if summaries else "accuracy"
    fig = _member_vs_unseen_curves(summaries, "utility", "train (members)", "validation")
    return _layout(fig, f"Utility ({UTILITY_NAMES.get(metric, metric)}) vs epoch", "epoch", UTILITY_NAMES.get(metric, metric))


def attack_accuracy_curve(summaries: list[dict[str, Any]]) -> go.Figure:
    """Accuracy of each attack at each checkpoint epoch (a separate attack per epoch)."""
    fig = go.Figure()
    for s in summaries:
        c = ARCH_COLOURS.get(s["arch"])
        by_epoch = s.get("attacks_by_epoch", {})
        epochs = sorted(int(e) for e in by_epoch)
        names = list(by_epoch[str(epochs[-1])]) if epochs else []
        for attack in names:  # an attack run at some checkpoints only (e.g. the final one) gets those points
            at = [e for e in epochs if attack in by_epoch[str(e)]]
            fig.add_scatter(x=at, y=[by_epoch[str(e)][attack]["accuracy"] for e in at], mode="lines+markers",
                            name=f"{ARCH_NAMES.get(s['arch'])} · {ATTACK_SHORT.get(attack, attack)}",
                            line=dict(color=c, dash=ATTACK_DASH.get(attack, "solid")),
                            visible=True if attack == s["attack"]["name"] else "legendonly")
    fig.add_hline(y=0.5, line=dict(color="grey", dash="dot"), annotation_text="chance")
    fig.update_yaxes(range=[0.3, 1.02])
    return _layout(fig, "Attack accuracy vs training epoch", "epoch", "attack accuracy")


#: the low FPRs of the attack tables, as (the key of ``tpr_at_fpr``, the FPR, the column's name)
LOW_FPR_COLUMNS = (("0.01", 0.01, "TPR @ 1% FPR"), ("0.001", 0.001, "TPR @ 0.1% FPR"))


def resolves(fpr: float, n_nonmembers: int) -> bool:
    """Whether ``n_nonmembers`` non-members can resolve FPR ``fpr``: at least one false positive is
    allowed (⌊fpr·n⌋ ≥ 1). Below that, "TPR at ``fpr``" is the TPR at zero false positives."""
    return n_nonmembers > 0 and math.floor(fpr * n_nonmembers + 1e-12) >= 1


def zero_fp_label(n_nonmembers: list[int]) -> str:
    """The name of the TPR at zero false positives (FPR < 1/n) for these evaluation sets' non-members."""
    ns = sorted(set(int(n) for n in n_nonmembers if n))
    if len(ns) == 1:
        return unresolved_label(ns[0])
    return f"TPR at 0 false positives (FPR < 1/n, n = {', '.join(map(str, ns))} non-members)"


def _zero_fp_tpr(r: dict[str, Any]) -> float | None:
    """The TPR at zero false positives of an attack result: the highest TPR at FPR 0 of its stored ROC
    (every corner is kept at low FPR), else its TPR at a low FPR its non-members cannot resolve."""
    at0 = [t for f, t in zip(r.get("roc_fpr") or [], r.get("roc_tpr") or []) if f <= 0]
    if at0:
        return float(max(at0))
    n0 = int(r.get("n_nonmembers") or 0)
    return next((r["tpr_at_fpr"][k] for k, f, _ in LOW_FPR_COLUMNS[::-1]
                 if k in (r.get("tpr_at_fpr") or {}) and n0 and not resolves(f, n0)), None)


def low_fpr_cells(results: list[dict[str, Any]]) -> list[dict[str, float | None]]:
    """Each attack result's TPR cells for one table (a row each): "TPR @ 1 % / 0.1 % FPR" where every
    row's non-members resolve that FPR (:func:`resolves`), and otherwise one column "TPR at 0 false
    positives (FPR < 1/n)" — with 200 non-members "TPR @ 0.1 % FPR" is that number, not a rate of 0.1 %."""
    ns = [int(r.get("n_nonmembers") or 0) for r in results]
    resolved = [(k, name) for k, f, name in LOW_FPR_COLUMNS if ns and all(resolves(f, n) for n in ns)]
    zero = len(resolved) < len(LOW_FPR_COLUMNS)
    label = zero_fp_label(ns)
    out = []
    for r in results:
        cells = {name: (r.get("tpr_at_fpr") or {}).get(k) for k, name in resolved}
        if zero:
            cells[label] = _zero_fp_tpr(r)
        out.append(cells)
    return out


def measured_roc(fpr: list[float], tpr: list[float], n_nonmembers: int | None) -> tuple[list[float], list[float]]:
    """The points of a ROC curve a log FPR axis can draw as measured: FPR ≥ 1/n (one non-member);
    FPR 0 has no place on a log axis, and drawing it at an axis floor such as 10⁻³ shows a rate the
    data never measured (with n unknown, the positive FPRs)."""
    low = 1.0 / n_nonmembers if n_nonmembers else 0.0
    keep = [(f, t) for f, t in zip(fpr, tpr) if f > 0 and f >= low - 1e-12]
    return [f for f, _ in keep], [t for _, t in keep]


def mark_fpr_floor(fig: go.Figure, n_nonmembers: list[int]) -> None:
    """A vertical dotted line at FPR = 1/n for each evaluation set's n non-members: nothing left of it
    is measured (the first false positive costs 1/n of FPR)."""
    for n in sorted(set(int(n) for n in n_nonmembers if n)):
        fig.add_vline(x=1.0 / n, line=dict(color="grey", dash="dot", width=1),
                      annotation_text=f"1/n = 1/{n}", annotation_position="top left")


def thin_roc(fpr: list[float], tpr: list[float], max_points: int = 240) -> tuple[list[float], list[float]]:
    """At most about ``max_points`` points of a ROC curve for drawing (the full curve stays in the
    summary and in downloads): the first and last points, points spaced evenly in log FPR (the
    low-FPR end matters most) and in FPR, each keeping the highest TPR reached at that FPR."""
    n = len(fpr)
    if n <= max_points:
        return list(fpr), list(tpr)
    f, t = np.asarray(fpr, float), np.asarray(tpr, float)
    order = np.argsort(f, kind="stable")
    f, t = f[order], np.maximum.accumulate(t[order])
    lo = max(f[f > 0].min() if (f > 0).any() else 1e-4, 1e-6)
    grid = np.unique(np.r_[np.geomspace(lo, 1.0, max_points // 2), np.linspace(0, 1, max_points // 2)])
    idx = np.unique(np.r_[0, np.clip(np.searchsorted(f, grid, side="right") - 1, 0, n - 1), n - 1])
    return f[idx].tolist(), t[idx].tolist()


def roc_curves(summaries: list[dict[str, Any]]) -> go.Figure:
    """ROC curves of every attack, log-scale FPR as in the literature (Carlini et al.); the primary
    attack of each architecture is shown, the others are one click on their legend entry away."""
    fig = go.Figure()
    floor = 1e-3
    ns = []
    for s in summaries:
        c = ARCH_COLOURS.get(s["arch"])
        for name, r in s["attacks"].items():
            n0 = r.get("n_nonmembers")
            ns.append(n0)
            fpr, tpr = measured_roc(*thin_roc(r["roc_fpr"], r["roc_tpr"]), n0)
            fig.add_scatter(x=fpr, y=tpr, mode="lines",
                            line=dict(color=c, dash=ATTACK_DASH.get(name, "solid")),
                            name=f"{ARCH_NAMES.get(s['arch'])} · {ATTACK_SHORT.get(name, name)} · AUC {r['auc']:.2f}",
                            visible=True if name == s["attack"]["name"] else "legendonly")
    diagonal = [floor * (1 / floor) ** (i / 50) for i in range(51)]  # y = x is a curve on a log x-axis
    fig.add_scatter(x=diagonal, y=diagonal, mode="lines", line=dict(color="grey", dash="dot"), name="chance")
    mark_fpr_floor(fig, [n for n in ns if n and 1 / n > floor])
    fig.update_xaxes(type="log", range=[-3, 0], tickvals=[1e-3, 1e-2, 1e-1, 1], ticktext=["0.1%", "1%", "10%", "100%"])
    fig.update_yaxes(range=[0, 1])
    return _layout(fig, "ROC of the attacks (log FPR)", "false positive rate", "true positive rate",
                   per_row=1)  # as roc_loglog: the entries "FFNN · entropy threshold · AUC 0.74" overlapped two a row


def metrics_table(summaries: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per (architecture, attack) with the common AttackResult metrics."""
    pairs = [(s, name, r) for s in summaries for name, r in s["attacks"].items()]
    rows = []
    for (s, name, r), tprs in zip(pairs, low_fpr_cells([r for _, _, r in pairs])):
        rows.append({
            "architecture": ARCH_NAMES.get(s["arch"], s["arch"]),
            "attack": ATTACK_NAMES.get(name, name),
            "accuracy": r["accuracy"],
            "advantage (TPR−FPR)": r["advantage"],
            "AUC": r["auc"],
            **tprs,  # "TPR @ 0.1% FPR" only where the non-members resolve it (low_fpr_cells)
            "eval records": r["n_members"] + r["n_nonmembers"],
        })
    return pd.DataFrame(rows)


def overview_table(summaries: list[dict[str, Any]], comparison: dict[str, Any] | None = None) -> pd.DataFrame:
    """Parameters, utility and headline attack numbers per architecture. With ``comparison`` (the
    paired comparison over N ≥ 2 repeats, :func:`core.analyses.repeats.comparison_json`) the numbers
    of ``summaries`` are labelled "repeat 1 of N" and the means over the repeats with their 95 %
    intervals stand beside them, so no single repeat reads as the result."""
    n = int(comparison["repeats"]) if comparison else 1
    one = f" (repeat 1 of {n})" if n > 1 else ""
    rows = []
    for s in summaries:
        t = s["timings"]
        utility = UTILITY_NAMES.get(s["utility"]["metric"])
        row = {"architecture": ARCH_NAMES.get(s["arch"], s["arch"]), "parameters": s["params"]}
        if n > 1:  # the means first: a wide table scrolls, and the result must not be the part out of sight
            for name, label in (("attack_accuracy", "attack accuracy"), ("attack_auc", "attack AUC"),
                                ("utility_val", f"{utility} validation")):
                m = (comparison["metrics"].get(name) or {}).get(s["arch"])
                row[f"{label}, mean of {n} [95 % CI]"] = with_ci(m) if m else "—"
        row.update({
            f"{utility} train{one}": s["utility"]["train"],
            f"{utility} validation{one}": s["utility"]["val"],
            f"attack accuracy{one}": s["attack"]["accuracy"],
            f"attack AUC{one}": s["attack"]["auc"],
        })
        row.update({"compute time (s)": round(t["total_s"], 1), "from cache": "yes" if s.get("cache_hit") else "no"})
        rows.append(row)
    return pd.DataFrame(rows)


def record_names(task: str) -> tuple[str, str]:
    """What one record of ``task`` is called, singular and plural (:attr:`core.tasks.base.Task.record_names`)."""
    return get_task(task).record_names if task in REGISTRY else ("record", "records")


def resolution_note(summaries: list[dict[str, Any]]) -> str | None:
    """One line: how much TPR / FPR / accuracy one evaluation record is worth in each run (the
    summary's ``resolution``, or its config's ``n_eval`` for summaries written before it)."""
    parts = []
    for s in summaries:
        res = s.get("resolution") or {}
        n_in = int(res.get("n_members") or s.get("config", {}).get("n_eval") or 0)
        n_out = int(res.get("n_nonmembers") or n_in)
        if not n_in or not n_out:
            continue
        one, many = record_names(s.get("task", ""))
        parts.append(f"{ARCH_NAMES.get(s['arch'], s['arch'])}: {n_in} + {n_out} {many}, one {one} = "
                     f"{1 / n_in:.3g} of TPR, {1 / n_out:.3g} of FPR, {1 / (n_in + n_out):.3g} of accuracy")
    if not parts:
        return None
    return "Resolution — " + "; ".join(parts) + ". Differences of a step or two are one or two records, not an architecture."


def comparison_resolution_note(comparison: dict[str, Any]) -> str | None:
    """:func:`resolution_note` of a comparison (``core.analyses.repeats.comparison_json``'s ``resolution``
    block; None for a comparison written before it)."""
    res = comparison.get("resolution") or {}
    return resolution_note([{"task": comparison.get("task", ""), "arch": arch, "resolution": r}
                            for arch, r in res.items()])


def param_gap(summaries: list[dict[str, Any]]) -> float | None:
    """Relative difference of the two architectures' parameter counts (None with one arch)."""
    counts = [s["params"] for s in summaries]
    if len(counts) < 2:
        return None
    return abs(counts[0] - counts[1]) / max(counts)


#: at most this many records per (architecture, membership) group are drawn as single dots
DOTS_UP_TO = 60


def _log_ape(values: list[float]) -> np.ndarray:
    # log scale: a confident model's entropies span many orders of magnitude near 0
    return np.log10(np.maximum(np.asarray(values, float), 1e-12))


def ecdf_points(values: np.ndarray, max_points: int = 200) -> tuple[list[float], list[float]]:
    """The empirical CDF of ``values`` as a step curve of at most ``max_points`` points."""
    v = np.sort(np.asarray(values, float))
    n = len(v)
    if n == 0:
        return [], []
    y = np.arange(1, n + 1) / n
    if n > max_points:
        idx = np.unique(np.r_[np.linspace(0, n - 1, max_points).round().astype(int), n - 1])
        v, y = v[idx], y[idx]
    return v.tolist(), y.tolist()


def entropy_comparison(summaries: list[dict[str, Any]]) -> go.Figure:
    """Average prediction entropy (APE, paper 000 eq. 3) of members vs non-members, per architecture.

    A model that is more certain on its training records than on unseen ones gives the attacks their
    signal. Many records: one empirical CDF per group (members solid, non-members dashed; the further
    apart the two curves of one colour, the easier the attack). Few records (navigation's maps): every
    record as a dot, one row per architecture and group, so a handful of values is not a few spikes.
    """
    groups = []
    for s in summaries:
        rec = s.get("records")
        if not rec:
            continue
        ape = _log_ape(rec["ape"])
        member = np.asarray(rec["membership"], bool)
        groups.append((s["arch"], ape[member], ape[~member]))
    fig = go.Figure()
    if not groups:
        return _layout(fig, "Prediction entropy: members vs non-members", "log₁₀ average prediction entropy (nats)", "")
    small = max(max(len(m), len(n)) for _, m, n in groups) <= DOTS_UP_TO
    if small:
        labels = []
        for arch, mem, non in groups:
            name = ARCH_NAMES.get(arch, arch)
            c = ARCH_COLOURS.get(arch)
            for values, label, symbol in ((mem, "members", "circle"), (non, "non-members", "circle-open")):
                row = len(labels)
                labels.append(f"{name} {label} ({len(values)})")
                k = np.arange(len(values))
                jitter = ((k * 0.618034) % 1.0 - 0.5) * 0.4  # deterministic spread: equal values stay visible
                fig.add_scatter(x=values.tolist(), y=(row + jitter).tolist(), mode="markers", name=labels[-1],
                                marker=dict(color=c, symbol=symbol, size=10, line=dict(width=2, color=c)),
                                hovertemplate="log₁₀ APE %{x:.2f}<extra>" + labels[-1] + "</extra>")
                if len(values):  # the group's median
                    med = float(np.median(values))
                    fig.add_scatter(x=[med, med], y=[row - 0.35, row + 0.35], mode="lines", showlegend=False,
                                    hoverinfo="skip", line=dict(color="black", width=2))
        fig.update_yaxes(tickvals=list(range(len(labels))), ticktext=labels, autorange="reversed", showgrid=False,
                         zeroline=False)
        fig = _layout(fig, "Prediction entropy per record (black bar = median)", "log₁₀ average prediction entropy (nats)",
                      "", height=110 + 48 * len(labels))
        fig.update_layout(showlegend=False, margin=dict(b=AXIS_TITLE_PX), height=110 + 48 * len(labels))
        return fig
    for arch, mem, non in groups:
        name = ARCH_NAMES.get(arch, arch)
        c = ARCH_COLOURS.get(arch)
        for values, label, dash in ((mem, "members", "solid"), (non, "non-members", "dash")):
            x, y = ecdf_points(values)
            fig.add_scatter(x=x, y=y, mode="lines", line=dict(color=c, dash=dash, shape="hv", width=2.5),
                            name=f"{name} {label} ({len(values)})")
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%")
    everything = np.concatenate([np.r_[m, n] for _, m, n in groups])
    if len(everything):  # a few saturated (zero-entropy) records must not squeeze the rest to a line
        lo, hi = float(np.percentile(everything, 2)), float(everything.max())
        pad = max(0.05 * (hi - lo), 0.1)
        fig.update_xaxes(range=[lo - pad, hi + pad])
    return _layout(fig, "Prediction entropy: members vs non-members (cumulative)",
                   "log₁₀ average prediction entropy (nats)", "records at or below")


#: the former name (a histogram), kept for callers
entropy_histogram = entropy_comparison


def steps_curves(summaries: list[dict[str, Any]]) -> go.Figure | None:
    """Mean steps per episode on member (solid) vs unseen (dashed) maps over training, or None
    when the task reports no steps (only navigation does)."""
    if not any("steps_train" in r for s in summaries for r in s["per_epoch"]):
        return None
    fig = _member_vs_unseen_curves(summaries, "steps", "member maps", "unseen maps")
    return _layout(fig, "Steps per episode vs epoch (fewer = more direct)", "epoch", "mean steps per episode")


# ---------------------------------------------------------------------------- defenses
def _interval(p: dict[str, Any], metric: str) -> dict[str, Any] | None:
    """The point's 95 % interval of ``metric`` (``intervals``, core.analyses.repeats.defense_curve_bands),
    or None where it has none (one repeat and one draw, or a metric not banded)."""
    e = (p.get("intervals") or {}).get(metric)
    return e if e and e.get("ci_low") is not None and e.get("ci_high") is not None else None


def _bars(pts: list[dict[str, Any]], metric: str, fallback: list[float]) -> tuple[list[float], list[float]]:
    """Error bars of a curve's points without an interval: ``fallback`` (± sd over draws); 0 where
    the point has an interval (:func:`_band` draws that one)."""
    up, down = [], []
    for p, f in zip(pts, fallback):
        v = 0.0 if _interval(p, metric) else (f or 0.0)
        up.append(v)
        down.append(v)
    return up, down


def _band(fig: go.Figure, pts: list[dict[str, Any]], metric: str, colour: str | None, name: str,
          x_of=lambda p: p["value"], yaxis: str | None = None) -> None:
    """The 95 % band of ``metric`` over the points that have an interval: one filled polygon
    (upper ends left to right, lower ends back), named with N (repeats or draws)."""
    with_ci = [(x_of(p), e) for p in pts if (e := _interval(p, metric)) is not None and x_of(p) is not None]
    if not with_ci:
        return
    with_ci.sort(key=lambda t: t[0])
    xs = [x for x, _ in with_ci]
    band = next((p.get("band") for p in pts if p.get("band")), None) or {}
    n = with_ci[0][1]["n"]
    what = ("repeats" if band.get("over") == "repeats" else "draws") if band else "repeats"
    extra = f" × {band['draws']} draws" if band.get("over") == "repeats" and band.get("draws", 1) > 1 else ""
    fig.add_scatter(x=xs + xs[::-1], y=[e["ci_high"] for _, e in with_ci] + [e["ci_low"] for _, e in with_ci][::-1],
                    fill="toself", mode="lines", line=dict(width=0), fillcolor=colour or "#444", opacity=0.18,
                    hoverinfo="skip", name=f"{name} 95% band (N = {n} {what}{extra})", yaxis=yaxis)


def _centre(p: dict[str, Any], metric: str, value: float | None) -> float | None:
    """Where a curve's line passes: the interval's mean (over repeats) where the point has one."""
    e = _interval(p, metric)
    return e["mean"] if e else value


def band_caption(points: dict[str, list[dict[str, Any]]]) -> str:
    """One line saying what the curves' bands are over (N repeats × D draws, D draws, or nothing)."""
    bands = [p["band"] for pts in points.values() for p in pts if p.get("band")]
    if not bands:
        return "No interval: one repeat and one draw per point (raise draws, or train repeats, for a band)."
    b = bands[0]
    if b["over"] == "repeats":
        return (f"Bands: 95 % t intervals over N = {b['repeats']} repeats (independent victims and shadows; each "
                f"repeat the mean of its {b['draws']} draw{'s' if b['draws'] != 1 else ''}); the line is their mean.")
    if b["over"] == "draws":
        return (f"Bands: 95 % t intervals over the {b['draws']} draws of one repeat (draw noise only: the models' "
                "seed-to-seed spread is not in them — train repeats for that).")
    return "No interval: one repeat and one draw per point (raise draws, or train repeats, for a band)."


def defense_curves(points: dict[str, list[dict[str, Any]]], baselines: dict[str, dict[str, Any]], value_name: str,
                   current: float | None, log_x: bool) -> go.Figure:
    """Attack accuracy (solid) and utility loss (dotted, right axis) over the mechanism's value,
    one colour per architecture; the slider's value is marked, the undefended accuracy dashed.
    Where points carry ``intervals`` (core.analyses.repeats.defense_curve_bands: over repeats × draws, or
    over the draws of one repeat) the line passes through their means and a shaded 95 % band
    is drawn; elsewhere error bars show ± sd over draws."""
    fig = go.Figure()
    for arch, pts in points.items():
        pts = sorted(pts, key=lambda p: p["value"])
        c = ARCH_COLOURS.get(arch)
        name = ARCH_NAMES.get(arch, arch)
        xs = [p["value"] for p in pts]
        acc = [_centre(p, "attack_accuracy", p["attack"]["accuracy"]) for p in pts]
        up, down = _bars(pts, "attack_accuracy", [p["attack"].get("accuracy_std", 0.0) for p in pts])
        _band(fig, pts, "attack_accuracy", c, f"{name} attack accuracy")
        fig.add_scatter(x=xs, y=acc, name=f"{name} attack accuracy", line=dict(color=c), mode="lines+markers",
                        error_y=dict(type="data", array=up, arrayminus=down, visible=any(v > 0 for v in up + down)))
        strongest = [p for p in pts if any(n in p.get("attacks", {}) for n in STRONG_ATTACKS)]
        if strongest:  # the best of LiRA/RMIA: what survives a defense the shadow MLP no longer sees
            fig.add_scatter(x=[p["value"] for p in strongest],
                            y=[max(_centre(p, f"{n}_auc", p["attacks"][n]["auc"]) for n in STRONG_ATTACKS
                                   if n in p["attacks"]) for p in strongest],
                            name=f"{name} LiRA/RMIA AUC (best)", line=dict(color=c, dash="dashdot", width=1.5),
                            mode="lines")
        with_u = [p for p in pts if p.get("utility_loss") is not None]
        if with_u:
            up, down = _bars(with_u, "utility_loss", [0.0] * len(with_u))
            _band(fig, with_u, "utility_loss", c, f"{name} utility loss", yaxis="y2")
            fig.add_scatter(x=[p["value"] for p in with_u], y=[_centre(p, "utility_loss", p["utility_loss"]) for p in with_u],
                            yaxis="y2", name=f"{name} utility loss", line=dict(color=c, dash="dot"), mode="lines+markers",
                            error_y=dict(type="data", array=up, arrayminus=down, visible=any(v > 0 for v in up + down)))
        base = baselines.get(arch)
        if base and xs:
            fig.add_scatter(x=[min(xs), max(xs)], y=[base["attack"]["accuracy"]] * 2, mode="lines",
                            name=f"{name} undefended", line=dict(color=c, dash="dash", width=1))
    if current is not None:
        fig.add_vline(x=current, line=dict(color="grey", width=1))
    fig.add_hline(y=0.5, line=dict(color="grey", dash="dot", width=1))
    losses = []
    for pts in points.values():
        for p in pts:
            if p.get("utility_loss") is not None:
                e = _interval(p, "utility_loss")
                losses += [p["utility_loss"], *((e["ci_low"], e["ci_high"]) if e else ())]
    top = max([0.2] + [1.1 * v for v in losses])
    fig.update_layout(yaxis=dict(range=[0.4, 1.02]),
                      yaxis2=dict(title="utility loss", overlaying="y", side="right", tickformat=".0%",
                                  range=[min([-0.05] + losses), top], showgrid=False))
    if log_x:
        fig.update_xaxes(type="log")
    return _layout(fig, f"Attack accuracy and utility loss vs {value_name}", value_name,
                   "attack accuracy / AUC (chance = 0.5)")


def defended_entropy_histogram(points: dict[str, dict[str, Any]]) -> go.Figure:
    """The entropy comparison of :func:`entropy_comparison` on the defended outputs of each architecture."""
    return entropy_comparison([{"arch": arch, "records": p["records"]} for arch, p in points.items()])


def _best_strong_auc(point: dict[str, Any] | None) -> float | None:
    """The AUC of the stronger of LiRA and RMIA in a point (None when neither was scored)."""
    attacks = (point or {}).get("attacks") or {}
    aucs = [attacks[n]["auc"] for n in STRONG_ATTACKS if n in attacks]
    return max(aucs) if aucs else None


def defense_table(task: str, mechanism: Mechanism, rows: dict[str, list[dict[str, Any]]],
                  baselines: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Our measured naive / adaptive attack, utility and guarantee per value of the mechanism's
    grid (:attr:`Parameter.grid`; Dir_k: k = 100 … 0.01), one row per (architecture, value),
    ``source`` "ours". The study's own rows (``mechanism.study_rows``: for Dir_k
    :data:`core.measurement.studies.DIRICHLET`, 001 Tables 1–2) follow as separate rows, ``source`` naming the
    paper and table, on the architecture the study reports them for (no study figure on an FFNN row)."""
    symbol = mechanism.parameter.symbol
    out = []
    values = [None, *mechanism.parameter.grid]

    def label(v: float | None) -> str:
        return "no protection" if v is None else f"{v:g}"

    for arch, pts in rows.items():
        name = ARCH_NAMES.get(arch, arch)
        by_value = {p["value"]: p for p in pts}
        for v in values:
            p = by_value.get(v) if v is not None else None
            base = baselines[arch]
            out.append({"source": "ours (this preset)", "arch": name, symbol: label(v),
                        "attack acc (naive)": base["attack"]["accuracy"] if v is None else (p["attack"]["accuracy"] if p else None),
                        "attack acc (adaptive)": (p["adaptive_attack"]["accuracy"] if p and p.get("adaptive_attack") else None),
                        "LiRA/RMIA AUC (best)": _best_strong_auc(base if v is None else p),
                        "utility": base["utility"] if v is None else (p.get("utility") if p else None),
                        "utility loss": 0.0 if v is None else (p.get("utility_loss") if p else None),
                        "ε (theory)": None if v is None or not p else p.get("epsilon"),
                        "guarantee": "" if v is None or not p else (p.get("guarantee") or "")})
    for arch in rows:
        study = mechanism.study_rows(task, arch)
        if not study:
            continue
        base_util = study["rows"][None][2]
        for v in values:
            if v not in study["rows"]:
                continue
            acc, _, util, _ = study["rows"][v]
            out.append({"source": f"study ({study['source'].cite()}: {study['model']}, {study['metric']})",
                        "arch": ARCH_NAMES.get(arch, arch), symbol: label(v),
                        "attack acc (naive)": acc / 100, "attack acc (adaptive)": None, "LiRA/RMIA AUC (best)": None,
                        "utility": util, "utility loss": 1.0 - util / base_util, "ε (theory)": None,
                        "guarantee": ""})
    df = pd.DataFrame(out)
    for col in df.columns[3:-1]:  # numbers: a missing one is NaN (shown as "—"), not the string None
        df[col] = pd.to_numeric(df[col], errors="coerce")
    return df


#: a cell of our own rows that a press of "Measure" (or the adaptive attacker's job) would fill
NOT_MEASURED = "not measured"
#: the columns of :func:`defense_table` that are empty on our rows only until measured (ε is empty when there is no
#: bound, which the guarantee column says; the study rows' blanks are what the paper does not report)
MEASURABLE_COLUMNS = ("attack acc (adaptive)", "LiRA/RMIA AUC (best)", "utility", "utility loss")


def defense_table_display(df: pd.DataFrame, precision: int = 3) -> pd.DataFrame:
    """:func:`defense_table` as text for the page: numbers to ``precision`` decimals, a blank of our rows'
    measurable columns "not measured", every other blank "—" (Streamlit draws a NaN as "None" whatever a
    Styler's ``na_rep`` says, so the cells are written out; the CLI's and the report's frame keeps numbers)."""
    # the undefended row has nothing more to measure (no mechanism for an adaptive attacker to know)
    ours = df["source"].str.startswith("ours") & (df[df.columns[2]] != "no protection")
    out = df.astype(object).copy()
    for col in df.columns[3:-1]:
        blank = NOT_MEASURED if col in MEASURABLE_COLUMNS else "—"
        out[col] = [f"{v:.{precision}f}" if pd.notna(v) else (blank if mine else "—")
                    for v, mine in zip(df[col], ours)]
    return out


# ---------------------------------------------------------------------------- navigation maps
#: MiniGrid object index -> (name, colour) of the cells drawn
CELL_STYLE = {EMPTY: ("floor", "#f5f5f0"), FLOOR: ("floor", "#f5f5f0"), WALL: ("wall", "#4d4d4d"),
              DOOR: ("door", "#c8963e"), GOAL: ("goal", "#2ca02c"), LAVA: ("lava", "#ff7f0e")}
#: MiniGrid's agent direction -> marker pointing that way (0 = +x, 1 = +y (down), 2 = −x, 3 = −y)
DIR_SYMBOL = {0: "triangle-right", 1: "triangle-down", 2: "triangle-left", 3: "triangle-up"}


def _dedup(path: list[list[int]]) -> list[list[int]]:
    out: list[list[int]] = []
    for p in path:
        if not out or out[-1] != p:
            out.append(p)
    return out


def navigation_map(views: dict[str, dict[str, Any]], role: str) -> go.Figure | None:
    """One example map (``role`` = "member" or "non-member") drawn cell by cell, with the query path
    of each architecture's victim on it (when the architectures' maps differ, the first one's map
    is drawn and only agents on that map are shown), the start (triangle: facing direction),
    the goal and where each agent stopped; ``views`` maps architecture -> :mod:`ui.mapview` data."""
    maps = {arch: next((m for m in v["maps"] if m["role"] == role), None) for arch, v in views.items()}
    maps = {a: m for a, m in maps.items() if m is not None}
    if not maps:
        return None
    base = next(iter(maps.values()))
    same = {a: m for a, m in maps.items() if m["seed"] == base["seed"] and m["cells"] == base["cells"]}
    cells = np.asarray(base["cells"])
    kinds = sorted({int(v) for v in np.unique(cells)} & set(CELL_STYLE))
    order = {k: i for i, k in enumerate(kinds)}
    z = np.vectorize(lambda v: order.get(int(v), 0))(cells)
    colours = [CELL_STYLE[k][1] for k in kinds]
    n = max(len(kinds), 1)
    scale = []
    for i, c in enumerate(colours):
        scale += [[i / n, c], [(i + 1) / n, c]]
    fig = go.Figure()
    fig.add_heatmap(z=z, colorscale=scale, zmin=0, zmax=n, showscale=False, xgap=1, ygap=1, hoverinfo="skip",
                    name="map", showlegend=False)
    for name, colour in dict(CELL_STYLE[k] for k in kinds).items():  # legend keys of the cell kinds
        fig.add_scatter(x=[None], y=[None], mode="markers", name=name,
                        marker=dict(symbol="square", size=13, color=colour, line=dict(width=1, color="#999")))
    offsets = {"ffnn": -0.14, "rnn": 0.14}
    for arch, m in same.items():
        c = ARCH_COLOURS.get(arch)
        d = offsets.get(arch, 0.0) if len(same) > 1 else 0.0
        path = _dedup(m["path"])
        outcome = "goal reached" if m["reached_goal"] else "goal not reached"
        fig.add_scatter(x=[p[0] + d for p in path], y=[p[1] + d for p in path], mode="lines+markers",
                        line=dict(color=c, width=3), marker=dict(size=6, color=c),
                        name=f"{ARCH_NAMES.get(arch, arch)} path: {m['steps']} steps, {outcome}",
                        hovertemplate="(%{x:.0f}, %{y:.0f})<extra>" + ARCH_NAMES.get(arch, arch) + "</extra>")
        end = path[-1]
        fig.add_scatter(x=[end[0] + d], y=[end[1] + d], mode="markers", showlegend=False, hoverinfo="skip",
                        marker=dict(symbol="x", size=13, color=c, line=dict(width=1, color="white")))
    sx, sy = base["start"]
    fig.add_scatter(x=[sx], y=[sy], mode="markers", name="start (facing)",
                    marker=dict(symbol=DIR_SYMBOL.get(base["start_dir"], "triangle-up"), size=18, color="black"))
    if base.get("goal"):
        gx, gy = base["goal"]
        fig.add_scatter(x=[gx], y=[gy], mode="markers", name="goal", showlegend=False,
                        marker=dict(symbol="star", size=18, color="white", line=dict(width=1.5, color="#145214")))
    fig.add_scatter(x=[None], y=[None], mode="markers", name="where the agent stopped",
                    marker=dict(symbol="x", size=12, color="grey"))
    h, w = cells.shape
    cell_px = max(22, min(44, int(420 / max(h, w))))
    fig.update_xaxes(range=[-0.5, w - 0.5], showgrid=False, zeroline=False, showticklabels=False, ticks="", constrain="domain")
    fig.update_yaxes(range=[h - 0.5, -0.5], showgrid=False, zeroline=False, showticklabels=False, ticks="", scaleanchor="x",
                     constrain="domain")
    title = f"{'Member' if role == 'member' else 'Unseen'} map (seed {base['seed']})"
    fig = _layout(fig, title, "", "", height=90 + cell_px * h)
    fig.update_layout(plot_bgcolor="white", margin=dict(l=10, r=10, t=50, b=30 + _legend_rows(fig) * LEGEND_ROW_PX))
    return fig


# ---------------------------------------------------------------------------- training defenses
def _point_y(p: dict[str, Any], metric: str) -> float | None:
    return p["attack"]["accuracy"] if metric == "attack_accuracy" else p.get(metric)


def _point_x(p: dict[str, Any], x: str) -> float | None:
    """The x of a sweep point: its swept value, or ε by an accountant (``epsilon_rdp``/``_prv``/``_gdp``)."""
    if x == "value":
        return p["value"]
    block = p.get("dpsgd") or {}
    return (block.get("epsilons") or {}).get(x.split("_", 1)[1]) if x.startswith("epsilon_") else p.get(x)


def training_defense_curves(points: dict[str, list[dict[str, Any]]], baselines: dict[str, dict[str, Any]],
                            metric: str, x: str, x_title: str, log_x: bool = False,
                            bound: list[tuple[float, float]] | None = None) -> go.Figure:
    """One sweep metric (``utility_loss`` or ``attack_accuracy``) over the swept value or over ε,
    one colour per architecture (FFNN vs RNN). Over ε the PRV points are drawn dotted beside the
    RDP ones; ``bound`` (x, y) pairs draw a reference curve (the DP bound on attack accuracy);
    the undefended attack accuracy is dashed. Points with ``intervals`` (repeats of the sweep:
    core.defenses.sweeps.collect_points_repeats) put the line at the mean over repeats and draw the 95 % band."""
    fig = go.Figure()
    xs_all: list[float] = []
    for arch, pts in points.items():
        c, name = ARCH_COLOURS.get(arch), ARCH_NAMES.get(arch, arch)
        variants = [(x, "solid", "")] if x != "epsilon_rdp" else [("epsilon_rdp", "solid", " (RDP ε)"),
                                                                   ("epsilon_prv", "dot", " (PRV ε)")]
        for key, dash, suffix in variants:
            rows = sorted((xv, yv) for p in pts if (xv := _point_x(p, key)) is not None
                          and (yv := _centre(p, metric, _point_y(p, metric))) is not None)
            if rows:
                xs_all += [r[0] for r in rows]
                if dash == "solid":  # one band per architecture (over the RDP ε or the swept value)
                    _band(fig, pts, metric, c, name, x_of=lambda p, k=key: _point_x(p, k))
                fig.add_scatter(x=[r[0] for r in rows], y=[r[1] for r in rows], mode="lines+markers",
                                name=f"{name}{suffix}", line=dict(color=c, dash=dash))
        base = baselines.get(arch)
        if metric == "attack_accuracy" and base and xs_all:
            fig.add_scatter(x=[min(xs_all), max(xs_all)], y=[base["attack"]["accuracy"]] * 2, mode="lines",
                            name=f"{name} undefended", line=dict(color=c, dash="dash", width=1))
    if bound:
        fig.add_scatter(x=[b[0] for b in bound], y=[b[1] for b in bound], mode="lines", name="(ε, δ)-DP bound",
                        line=dict(color="grey", dash="dashdot", width=1))
    if metric == "attack_accuracy":
        fig.add_hline(y=0.5, line=dict(color="grey", dash="dot", width=1))
        y_title, what = "attack accuracy (chance = 0.5)", "Attack accuracy"
    else:
        ys = [p.get("utility_loss") for pts in points.values() for p in pts if p.get("utility_loss") is not None]
        narrow = bool(ys) and max(ys) - min(ys) < 0.05  # e.g. 98.6–100 %: whole percents would repeat
        fig.update_yaxes(tickformat=".1%" if narrow else ".0%")
        y_title, what = "utility loss 1 − M/M₀", "Utility loss"
    if log_x:
        fig.update_xaxes(type="log")
    return _layout(fig, f"{what} vs {x_title}", x_title, y_title)


def training_defense_table(points: dict[str, list[dict[str, Any]]], baselines: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per architecture and value: utility, utility loss, attack accuracy and AUC, and for
    DP-SGD σ, ε (RDP / PRV / GDP), q and steps; the undefended run first."""
    rows = []
    for arch, pts in points.items():
        base = baselines.get(arch)
        if base:
            rows.append({"arch": ARCH_NAMES.get(arch, arch), "value": "undefended", "utility": base["utility"],
                         "utility loss": 0.0, "attack acc": base["attack"]["accuracy"], "AUC": base["attack"]["auc"]})
        for p in sorted(pts, key=lambda p: p["value"]):
            row = {"arch": ARCH_NAMES.get(arch, arch), "value": f"{p.get('value_name', '')} = {p['value']:g}",
                   "utility": p["utility"], "utility loss": p["utility_loss"], "attack acc": p["attack"]["accuracy"],
                   "AUC": p["attack"]["auc"]}
            block = p.get("dpsgd")
            if block:
                eps = block["epsilons"]
                row.update({"σ": block["noise_multiplier"], "C": block["max_grad_norm"], "ε RDP": eps.get("rdp"),
                            "ε PRV": eps.get("prv"), "ε GDP": eps.get("gdp"), "δ": block["delta"],
                            "q": block["sample_rate"], "steps": block["steps"]})
            rows.append(row)
    return pd.DataFrame(rows)


def dpsgd_recipe_table(study: dict[str, Any], study_eps: list[dict[str, Any]],
                       ours: dict[str, list[dict[str, Any]]]) -> pd.DataFrame:
    """The study's DP-SGD recipe for the task (:data:`core.measurement.studies.DPSGD_RECIPE`, paper 000 Table 2)
    with the ε *we* compute for that recipe at each of our σ (the paper prints none; the ``source``
    says so), beside the recipe and ε of our measured points."""
    rows = []
    for e in study_eps:
        rows.append({"source": f"study's recipe ({studies.DPSGD_RECIPE_SOURCE.cite()}, {study['task']}); "
                               "ε computed by us at our σ", "|D|": str(study["train_size"]),
                     "batch": study["batch"], "epochs": study["epochs"], "C": study["clip_norm"], "δ": study["delta"],
                     "σ": e["sigma"], "q": e["sample_rate"], "steps": e["steps"], "ε RDP": e["epsilon_rdp"],
                     "ε PRV": e["epsilon_prv"], "utility loss": None})
    for arch, pts in ours.items():
        for p in sorted(pts, key=lambda p: p["dpsgd"]["noise_multiplier"]):
            b = p["dpsgd"]
            rows.append({"source": f"ours ({ARCH_NAMES.get(arch, arch)})", "|D|": str(b["n_samples"]),
                         "batch": b["expected_batch_size"], "epochs": round(b["steps"] * b["sample_rate"]),
                         "C": b["max_grad_norm"], "δ": b["delta"],
                         "σ": b["noise_multiplier"], "q": b["sample_rate"], "steps": b["steps"],
                         "ε RDP": b["epsilons"].get("rdp"), "ε PRV": b["epsilons"].get("prv"),
                         "utility loss": p["utility_loss"]})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------- strongest attacks, honest comparisons
# (LiRA / RMIA from core.experiment.reference_attacks; shadow fidelity and matched utility from core.experiment.fidelity)
#: attacks drawn (not legend-only) by default in the log-log ROC
STRONG_ATTACKS = ("lira", "rmia")


def roc_loglog(summaries: list[dict[str, Any]]) -> go.Figure:
    """ROC curves of every attack on log-log axes (the convention of the LiRA paper): the low-FPR
    regime, where an attack that confidently identifies a few members differs from one that is
    merely above chance on average. The primary attack, LiRA and RMIA are shown; the others are a
    click on the legend away. Each curve is drawn only down to FPR = 1/n (its n non-members:
    :func:`measured_roc`), a dotted line marks that floor, and nothing left of it is drawn as if
    measured; TPR 0 is drawn at the axis floor. The legend's TPR is at 1 % FPR, or at 0 false
    positives where 1/n > 1 %."""
    fig = go.Figure()
    floor = 1e-3
    ns = []
    for s in summaries:
        c = ARCH_COLOURS.get(s["arch"])
        for name, r in s["attacks"].items():
            fpr, tpr = r.get("roc_fpr") or [], r.get("roc_tpr") or []
            if not fpr:
                continue
            n0 = int(r.get("n_nonmembers") or 0) or None
            ns.append(n0)
            lo = 0.5 / (n0 or 1000)
            floor = min(floor, lo)
            fpr, tpr = measured_roc(fpr, tpr, n0)
            if n0 and not resolves(0.01, n0):
                low = f"TPR@0FP (FPR < 1/{n0}) {_zero_fp_tpr(r) or 0:.2f}"
            else:
                low = f"TPR@1% {r['tpr_at_fpr'].get('0.01', float('nan')):.2f}"
            fig.add_scatter(
                x=fpr, y=[max(v, lo) for v in tpr], mode="lines",
                line=dict(color=c, dash=ATTACK_DASH.get(name, "solid"), width=3 if name in STRONG_ATTACKS else 2),
                name=f"{ARCH_NAMES.get(s['arch'], s['arch'])} · {ATTACK_SHORT.get(name, name)} · {low}",
                visible=True if name in STRONG_ATTACKS or name == s["attack"]["name"] else "legendonly")
    lo_exp = math.floor(math.log10(floor))
    diagonal = [10 ** (lo_exp + (-lo_exp) * i / 50) for i in range(51)]
    fig.add_scatter(x=diagonal, y=diagonal, mode="lines", line=dict(color="grey", dash="dot"), name="chance (TPR = FPR)")
    mark_fpr_floor(fig, [n for n in ns if n])
    ticks = [10.0 ** k for k in range(lo_exp, 1)]
    text = [f"{100 * t:g}%" for t in ticks]
    fig.update_xaxes(type="log", range=[lo_exp, 0], tickvals=ticks, ticktext=text)
    fig.update_yaxes(type="log", range=[lo_exp, 0], tickvals=ticks, ticktext=text)
    # one legend entry a row: two a row overlapped and clipped "… · TPR@1% 0." in the page's half-width column
    return _layout(fig, "ROC on log-log axes (low false-positive rates)", "false positive rate", "true positive rate",
                   per_row=1)


def strongest_attacks_table(summaries: list[dict[str, Any]]) -> pd.DataFrame:
    """Per architecture: Shokri's shadow attack beside LiRA and RMIA (AUC, TPR at 1 % and 0.1 % FPR)."""
    pairs = [(s, name, s["attacks"][name]) for s in summaries
             for name in ("shadow", "loss_threshold", "lira", "rmia", "lira_online") if name in s["attacks"]]
    rows = []
    for (s, name, r), tprs in zip(pairs, low_fpr_cells([r for _, _, r in pairs])):
        rows.append({"architecture": ARCH_NAMES.get(s["arch"], s["arch"]), "attack": ATTACK_NAMES.get(name, name),
                     "AUC": r["auc"], "accuracy": r["accuracy"], **tprs, "non-members": r["n_nonmembers"]})
    return pd.DataFrame(rows)


def shadow_fidelity_table(summaries: list[dict[str, Any]]) -> pd.DataFrame:
    """Per architecture and checkpoint: the victim's and the shadows' mean member / non-member loss
    and the relative gaps (core.experiment.fidelity; above 25 % the shadows do not track the victim)."""
    rows = []
    for s in summaries:
        block = s.get("shadow_fidelity")
        if not block:
            continue
        tol = block.get("loss_tolerance", 0.25)
        for c in block["checkpoints"]:
            v, sh = c["victim"], c["shadows"]
            gaps = [g for g in (c["member_loss_gap"], c["nonmember_loss_gap"]) if g is not None]
            # the epoch as text: the column also holds "final utility", and a mixed column makes Arrow fail and
            # Streamlit fall back (logging a traceback) on every rerun of the page
            rows.append({"architecture": ARCH_NAMES.get(s["arch"], s["arch"]), "epoch": str(c["epoch"]),
                         "victim member loss": v["member_loss"], "shadows member loss": sh.get("member_loss"),
                         "member gap": c["member_loss_gap"],
                         "victim non-member loss": v["nonmember_loss"], "shadows non-member loss": sh.get("nonmember_loss"),
                         "non-member gap": c["nonmember_loss_gap"],
                         "tracks the victim": "yes" if gaps and max(gaps) <= tol else "no"})
        u = block.get("utility", {})
        metric = UTILITY_NAMES.get(u.get("metric"), u.get("metric"))
        if u.get("shadow_mean"):
            rows.append({"architecture": ARCH_NAMES.get(s["arch"], s["arch"]), "epoch": "final utility",
                         "victim member loss": None, "shadows member loss": None, "member gap": None,
                         "victim non-member loss": None, "shadows non-member loss": None, "non-member gap": None,
                         "tracks the victim": (f"{metric} train/val: victim {u['victim'].get('train'):.3g}/"
                                               f"{u['victim'].get('val'):.3g}, shadows {u['shadow_mean'].get('train'):.3g}/"
                                               f"{u['shadow_mean'].get('val'):.3g}")
                         if u["victim"].get("train") is not None else ""})
    return pd.DataFrame(rows)


def matched_utility_table(summaries: list[dict[str, Any]], attacks: tuple[str, ...] = ("shadow", "loss_threshold")
                          ) -> pd.DataFrame:
    """The matched-utility view (core.experiment.fidelity.matched_utility): for each architecture, the checkpoint
    whose validation utility is closest to the other's final one, beside the other at its final epoch,
    with each attack's AUC and TPR@1 % at those epochs and which architecture leaks more there."""
    view = matched_utility(summaries)
    rows = []
    if not view:
        return pd.DataFrame(rows)
    metric = UTILITY_NAMES.get(view["metric"], view["metric"])
    for k, pair in enumerate(view["pairs"], 1):
        for side in ("matched", "reference"):
            m = pair[side]
            row = {"comparison": k, "architecture": ARCH_NAMES.get(m["arch"], m["arch"]), "epoch": m["epoch"],
                   f"validation {metric}": m["utility_val"]}
            for name in attacks:
                a = m["attacks"].get(name)
                row[f"{ATTACK_SHORT.get(name, name)} AUC"] = a["auc"] if a else None
                row[f"{ATTACK_SHORT.get(name, name)} TPR@1%"] = a["tpr_at_1pct"] if a else None
            if side == "matched":
                verdict = ", ".join(f"{ATTACK_SHORT.get(n, n)}: {ARCH_NAMES.get(w, w)}"
                                    for n, w in pair["more_leaky"].items() if n in attacks)
                row["utility gap"] = pair["utility_gap"]
                row["leaks more (AUC)"] = verdict if pair["within_tolerance"] else f"no fair match ({verdict})"
            else:
                row["utility gap"], row["leaks more (AUC)"] = None, ""
            rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------- repeats and intervals
#: headline metrics of core.analyses.repeats, as the pages name them (one list: the comparison JSON's labels)
METRIC_NAMES = METRIC_LABELS
#: a verdict as printed: its own word only (holds / reversed / inconclusive), no ✅/↩️/❔ mark beside it, so that
#: every page, the report and the CLI read the same three words (issue 32)
VERDICT_MARKS = {"holds": "holds", "reversed": "reversed", "inconclusive": "inconclusive"}


def with_ci(e: dict[str, Any] | None, digits: int = 3) -> str:
    """``mean [ci_low, ci_high]`` of an estimate's JSON (the mean alone when N = 1)."""
    if not e or e.get("mean") is None:
        return "—"
    if e.get("ci_low") is None:
        return f"{e['mean']:.{digits}f} (N = 1)"
    return f"{e['mean']:.{digits}f} [{e['ci_low']:.{digits}f}, {e['ci_high']:.{digits}f}]"


def _p(v: float | None) -> str:
    return "—" if v is None else (f"{v:.3f}" if v >= 0.001 else "< 0.001")


#: a comparison metric's role (core.analyses.repeats.metric_roles), as the table says it
ROLE_NAMES = {"primary": "primary", "secondary": "secondary (Holm)", "duplicate": "duplicate: no verdict",
              "unresolved": "finer than the data: no verdict", "utility": "utility: no hypothesis"}
_ROLE_ORDER = {"primary": 0, "secondary": 1, "duplicate": 2, "unresolved": 3, "utility": 4}


def comparison_table(comparison: dict[str, Any]) -> pd.DataFrame:
    """One row per headline metric of ``core.analyses.repeats.comparison_json``: each architecture's mean
    with its 95 % interval, the paired difference FFNN − RNN with its interval, both p-values (and,
    for a secondary metric, the Holm-adjusted sign-flip p), Cohen's d_z, the metric's role, the verdict
    on "the RNN leaks more" (none for a duplicate or a rate finer than the data) and N. The primary
    metric comes first; a comparison written before roles (schema 1) keeps its order and verdicts."""
    rows = []
    items = sorted(comparison["metrics"].items(), key=lambda kv: _ROLE_ORDER.get(kv[1].get("role", ""), 1))
    for name, m in items:
        d = m["difference"]
        v = m.get("verdict")
        role = m.get("role")
        if v:
            word = VERDICT_MARKS[v["value"]]
        elif role in ("duplicate", "unresolved"):
            word = "— (no verdict)"
        else:
            word = "(no hypothesis)"
        row = {"metric": m.get("label") or METRIC_NAMES.get(name, name), "FFNN mean [95% CI]": with_ci(m["ffnn"]),
               "RNN mean [95% CI]": with_ci(m["rnn"]), "FFNN − RNN [95% CI]": with_ci(d["diff"], 3),
               "p (paired t)": _p(d.get("p_t")), "p (sign flip)": _p(d.get("p_permutation"))}
        if role is not None:
            row["role"] = ROLE_NAMES.get(role, role)
            row["p (sign flip, Holm)"] = _p((m.get("p_holm") or {}).get("p_permutation"))
        row.update({"effect d_z": d.get("effect_size"), "verdict: RNN leaks more": word, "N": d["n"]})
        rows.append(row)
    return pd.DataFrame(rows)


def repeats_table(blocks: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Per architecture, every headline metric as mean [95 % CI] over its repeats
    (``blocks``: arch → ``core.analyses.repeats.repeats_block``)."""
    # a TPR at an FPR the non-members cannot resolve is the TPR at 0 false positives, and named so
    # (blocks written before their ``resolution`` keep the plain names)
    ns = [int(b["resolution"]["n_nonmembers"]) for b in blocks.values() if b.get("resolution")]
    fprs = {"tpr_at_1pct_fpr": 0.01, "tpr_at_0.1pct_fpr": 0.001}
    unresolved = [m for m, f in fprs.items() if ns and not all(resolves(f, n) for n in ns)]
    rows = []
    for arch, block in blocks.items():
        row: dict[str, Any] = {"architecture": ARCH_NAMES.get(arch, arch), "N": block["n"]}
        for name, e in block["metrics"].items():
            if name in unresolved:  # both unresolved: the same number, one column
                row[zero_fp_label(ns)] = with_ci(block["metrics"][unresolved[-1]])
                continue
            row[METRIC_NAMES.get(name, name)] = with_ci(e)
        rows.append(row)
    return pd.DataFrame(rows)


def roc_band_figure(bands: dict[str, dict[str, Any]], n_nonmembers: dict[str, int] | None = None) -> go.Figure:
    """Each architecture's mean ROC curve over its repeats with the pointwise 95 % band (log FPR).
    With ``n_nonmembers`` (arch → its evaluation set's non-members) the band is drawn only down to
    FPR = 1/n and a dotted line marks it: below it the grid reads the TPR at zero false positives."""
    fig = go.Figure()
    floor = 1e-3
    ns = n_nonmembers or {}
    for arch, b in bands.items():
        c = ARCH_COLOURS.get(arch, "#444")
        n0 = ns.get(arch)
        keep = [i for i, v in enumerate(b["fpr"]) if (v >= 1.0 / n0 - 1e-12 if n0 else True)]
        x = [max(b["fpr"][i], floor) for i in keep]
        hi, lo, tpr = [b["hi"][i] for i in keep], [b["lo"][i] for i in keep], [b["tpr"][i] for i in keep]
        fig.add_scatter(x=x + x[::-1], y=hi + lo[::-1], fill="toself", mode="lines",
                        line=dict(width=0), fillcolor=c, opacity=0.18, hoverinfo="skip", showlegend=False)
        fig.add_scatter(x=x, y=tpr, mode="lines", line=dict(color=c),
                        name=f"{ARCH_NAMES.get(arch, arch)}: mean of N = {b['n']}"
                             + (", 95% band" if b["n"] > 1 else ""))
    diagonal = [floor * (1 / floor) ** (i / 50) for i in range(51)]
    fig.add_scatter(x=diagonal, y=diagonal, mode="lines", line=dict(color="grey", dash="dot"), name="chance")
    mark_fpr_floor(fig, [n for n in ns.values() if n and 1 / n > floor])
    fig.update_xaxes(type="log", range=[-3, 0], tickvals=[1e-3, 1e-2, 1e-1, 1], ticktext=["0.1%", "1%", "10%", "100%"])
    fig.update_yaxes(range=[0, 1])
    return _layout(fig, "ROC of the primary attack over repeats", "false positive rate", "true positive rate")


def matched_stops_table(view: dict[str, Any]) -> pd.DataFrame:
    """Per repeat and architecture: the target, the epoch the victim first reached it (or that it
    did not), its measured utility there and the primary attack's accuracy and AUC there."""
    metric = UTILITY_NAMES.get(view["metric"], view["metric"])
    rows = []
    for row in view["rows"]:
        for arch in ("ffnn", "rnn"):
            p = row[arch]
            rows.append({"repeat": row["repeat"] + 1, "architecture": ARCH_NAMES.get(arch, arch),
                         f"target {metric}": row["target"],
                         "stopped at epoch": p["epoch"] if p["reached"] else f"{p['epoch']} (target not reached)",
                         "of epochs": p["final_epoch"], f"{metric} at stop": p["utility_at_stop"],
                         f"final {metric}": p["final_utility"], "attack accuracy": p["attack_accuracy"],
                         "attack AUC": p["attack_auc"]})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------- the analyses (core.analyses.analysis)
MEMBER_COLOURS = {True: "#d62728", False: "#1f77b4"}
SIGNAL_AXIS = {"ape": "x", "cross_entropy": "y"}


def _legend_below(fig: go.Figure, height: int = 520, bottom: int = AXIS_TITLE_PX + 2 * LEGEND_ROW_PX) -> go.Figure:
    """The legend under the plot; ``bottom``: the margin it starts with (LEFT_PX: room enough, drawn once)."""
    fig.update_layout(height=height, margin=dict(l=LEFT_PX, r=RIGHT_PX, t=60, b=bottom),
                      legend=dict(orientation="h", yanchor="top", y=-0.14, xanchor="left", x=0))
    return fig


#: member / non-member colours of the scatter: an orange / blue pair that colour-blind readers tell apart
POPULATION_COLOURS = {True: "#e66100", False: "#3b6fb6"}
POPULATION_NAMES = {True: "members", False: "non-members"}
SCALES = ("log", "linear")


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def scatter_box(sc: dict[str, Any], scale: str = "log") -> dict[str, tuple[float, float]]:
    """The plotted box of one panel in the figure's units: in ``log`` the records' log₁₀ range
    (``range``, :func:`core.analyses.analysis.data_range`) from the strip (``strip``) of clipped records below it to its top, padded
    by 3 %; in ``linear`` from 0 to the largest value. The surrogate region, the threshold and the
    best quadrant are drawn inside this box only."""
    box = {}
    for key, clipped in (("log10_ape", "clipped_ape"), ("log10_cross_entropy", "clipped_cross_entropy")):
        lo, hi = sc["range"][key]
        if scale == "log":
            bottom = sc["strip"][key] if any(sc.get(clipped, ())) else lo  # the strip only when it holds records
            pad = 0.03 * (hi - bottom)
            box[key] = (bottom - pad, hi + pad)
        else:
            top = 10.0 ** hi
            box[key] = (-0.03 * top, 1.03 * top)
    return box


def _in_units(values, scale: str) -> np.ndarray:
    v = np.asarray(values, np.float64)
    return v if scale == "log" else 10.0 ** v


def scatter_figure(scatters: dict[str, dict[str, Any]], attack: str, scale: str = "log") -> go.Figure:
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
        member = np.asarray(sc["membership"], bool)
        cx = np.asarray(sc.get("clipped_ape", [False] * len(member)), bool)
        cy = np.asarray(sc.get("clipped_cross_entropy", [False] * len(member)), bool)
        x, y = _in_units(sc["log10_ape"], scale), _in_units(sc["log10_cross_entropy"], scale)
        if log:  # clipped records on the strip below the records' range
            x = np.where(cx, sc["strip"]["log10_ape"], x)
            y = np.where(cy, sc["strip"]["log10_cross_entropy"], y)
        entry = sc["attacks"][attack]
        correct = np.asarray(entry["correct"], bool)
        first = i == 0
        surrogate = entry.get("surrogate")
        if surrogate:
            fig.add_contour(x=_in_units(surrogate["x"], scale), y=_in_units(surrogate["y"], scale),
                            z=surrogate["member_probability"], row=2, col=col,
                            contours=dict(start=0.5, end=1.0, size=0.5, coloring="fill"), showscale=False,
                            colorscale=[[0, "rgba(0,0,0,0)"], [1, "rgba(120,120,120,0.16)"]],
                            line=dict(width=2, color="#333"), hoverinfo="skip",
                            name="attack's member side (surrogate on these two signals)", showlegend=first)
        if log:  # the strips where clipped records lie, labelled as such
            if cx.any():
                fig.add_shape(type="rect", x0=bx[0], x1=sc["strip"]["log10_ape"] + 0.02 * (bx[1] - bx[0]), y0=by[0],
                              y1=by[1], fillcolor="rgba(0,0,0,0.06)", line_width=0, layer="below", row=2, col=col)
                fig.add_annotation(x=sc["strip"]["log10_ape"], y=by[1], text="APE ≤ 1e-12 (clipped)", textangle=-90,
                                   showarrow=False, xanchor="center", yanchor="top", font=dict(size=10, color="#555"),
                                   row=2, col=col)
            if cy.any():
                fig.add_shape(type="rect", y0=by[0], y1=sc["strip"]["log10_cross_entropy"] + 0.02 * (by[1] - by[0]),
                              x0=bx[0], x1=bx[1], fillcolor="rgba(0,0,0,0.06)", line_width=0, layer="below",
                              row=2, col=col)
                fig.add_annotation(x=bx[1], y=sc["strip"]["log10_cross_entropy"], text="CE ≤ 1e-12 (clipped)",
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
                name=f"{POPULATION_NAMES[is_member]}, clipped at {sc.get('floor', 1e-12):g}",
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
        boundary = entry.get("boundary")
        if boundary and boundary.get("threshold") is not None:
            t = max(float(boundary["threshold"]), 1e-12)
            t = float(np.log10(t)) if log else t
            vertical = boundary["signal"] == "ape"
            lo, hi = bx if vertical else by
            if lo <= t <= hi:
                line = dict(color="black", dash="dash", width=2)
                if vertical:
                    fig.add_shape(type="line", x0=t, x1=t, y0=by[0], y1=by[1], line=line, row=2, col=col)
                else:
                    fig.add_shape(type="line", y0=t, y1=t, x0=bx[0], x1=bx[1], line=line, row=2, col=col)
            else:
                side = "below" if t < lo else "above"
                fig.add_annotation(text=f"threshold {boundary['threshold']:.3g} lies {side} every record",
                                   xref=f"x{'' if col + 2 * n == 1 else col + 2 * n} domain",
                                   yref=f"y{'' if col + 2 * n == 1 else col + 2 * n} domain",
                                   x=0.5, y=0.98, showarrow=False, font=dict(size=11))
        q = sc["quadrant"]
        qx = float(np.log10(max(q["entropy_max"], 1e-12)) if log else q["entropy_max"]) \
            if q["entropy_max"] is not None else bx[1]
        qy = float(np.log10(max(q["cross_entropy_max"], 1e-12)) if log else q["cross_entropy_max"]) \
            if q["cross_entropy_max"] is not None else by[1]
        qx, qy = min(max(qx, bx[0]), bx[1]), min(max(qy, by[0]), by[1])
        fig.add_shape(type="rect", x0=bx[0], x1=qx, y0=by[0], y1=qy, line=dict(color="#222", dash="dot", width=2),
                      row=2, col=col)
        fig.add_annotation(x=qx, y=qy, text=f"best quadrant · acc {q['accuracy']:.2f}", showarrow=False,
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
                                 if any("boundary" in scatters[a]["attacks"][attack] for a in archs) else
                                 "solid line: the attack's boundary (surrogate), shaded: its member side")
                                 + " · dotted: best quadrant", font=dict(size=14)))
    fig.update_xaxes(showgrid=True, gridcolor="#eee", zeroline=False)
    fig.update_yaxes(showgrid=True, gridcolor="#eee", zeroline=False)
    _legend_below(fig, 640)
    # room for the y axis' ticks and title, and for the legend below (LEFT_PX: drawn once)
    fig.update_layout(margin=dict(l=88, r=RIGHT_PX, t=70, b=AXIS_TITLE_PX + 3 * LEGEND_ROW_PX + 6))
    return fig


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
    return _legend_below(fig, 820, bottom=150)  # its ten entries take three rows, 0.14 of 820 px below the axis


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


def quadrant_names(archs: list[str]) -> dict[str, str]:
    """The exposure quadrants' display names for the two architectures ``archs`` (a, b): "only RNN", …"""
    a, b = archs
    return {k: v.format(a=ARCH_NAMES.get(a, a), b=ARCH_NAMES.get(b, b)) for k, v in QUADRANT_NAMES.items()}


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
    names = quadrant_names([a, b])
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


#: the audit's estimators: colour per estimator (:func:`audit_guesses_figure`)
AUDIT_COLOURS = {"steinke": "#2ca02c", "fdp": "#ff7f0e", "gdp": "#17becf", "rdp": "#7f7f7f", "prv": "#bcbd22"}


def audit_guesses_figure(audits: dict[str, dict[str, Any]]) -> go.Figure:
    """Per architecture (one panel each): the ε lower bound of each one-run estimator against the
    number of guesses k on the most confident canaries (Steinke et al.; the f-DP bound of
    Mahloujifar et al., Gaussian family), each point a 95 % bound on its own; the Gaussian-DP
    estimate (an estimate, not a bound) as a dotted line with its bootstrap band; the accountant's
    ε (RDP, PRV) as dashed lines where DP-SGD ran (:mod:`core.measurement.audit_estimators`)."""
    archs = [a for a in audits if audits[a].get("estimators")]
    fig = make_subplots(rows=1, cols=max(1, len(archs)), shared_yaxes=True,
                        subplot_titles=[ARCH_NAMES.get(a, a) for a in archs])
    for col, arch in enumerate(archs, 1):
        est = audits[arch]["estimators"]
        curve, gdp = est["curve"], est["gdp_estimate"]
        ks = curve["k"]
        for key, ys, name in (("steinke", curve["steinke_epsilon"], "Steinke et al. bound (ε)"),
                              ("fdp", curve["fdp_epsilon"], "f-DP bound, Gaussian family (ε)")):
            fig.add_scatter(x=ks, y=ys, mode="lines+markers", name=name, legendgroup=key, showlegend=col == 1,
                            line=dict(color=AUDIT_COLOURS[key]), row=1, col=col,
                            customdata=list(zip(curve["correct"], curve["fdp_mu"])),
                            hovertemplate="k = %{x}: %{customdata[0]} correct, ε ≥ %{y:.3g}"
                                          + (" (μ ≥ %{customdata[1]:.3g})" if key == "fdp" else "") + "<extra></extra>")
        # no finite estimate (every member above every non-member) or upper end: the band runs to the panel's top
        top = gdp["epsilon_high"] if gdp["epsilon_high"] is not None else 1.25 * max(
            [*curve["steinke_epsilon"], *curve["fdp_epsilon"], gdp["epsilon_low"] or 0.0, 1.0])
        fig.add_scatter(x=[ks[0], ks[-1], ks[-1], ks[0]], y=[gdp["epsilon_low"] or 0.0] * 2 + [top] * 2,
                        fill="toself", mode="none", fillcolor="rgba(23, 190, 207, 0.15)", legendgroup="gdp",
                        name="Gaussian-DP estimate (not a bound; 95 % bootstrap band)",
                        showlegend=col == 1 and gdp["epsilon"] is None, hoverinfo="skip", row=1, col=col)
        if gdp["epsilon"] is not None:
            high = "∞" if gdp["epsilon_high"] is None else f"{gdp['epsilon_high']:.3g}"
            fig.add_scatter(x=[ks[0], ks[-1]], y=[gdp["epsilon"]] * 2, mode="lines", legendgroup="gdp",
                            name="Gaussian-DP estimate (not a bound; 95 % bootstrap band)", showlegend=col == 1,
                            line=dict(color=AUDIT_COLOURS["gdp"], dash="dot"), row=1, col=col,
                            hovertemplate=f"GDP estimate ε̂ {gdp['epsilon']:.3g} [{gdp['epsilon_low']:.3g}, {high}], "
                                          f"μ̂ {gdp['mu']:.3g}<extra></extra>")
        for key in ("rdp", "prv"):
            value = (audits[arch].get("accountant_epsilon") or {}).get(key)
            if value is not None:
                fig.add_scatter(x=[ks[0], ks[-1]], y=[value] * 2, mode="lines", name=f"accountant ε ({key.upper()})",
                                legendgroup=key, showlegend=col == 1, line=dict(color=AUDIT_COLOURS[key], dash="dash"),
                                row=1, col=col, hovertemplate=f"accountant ε ({key.upper()}) {value:.3g}<extra></extra>")
        fig.update_xaxes(title_text="guesses k on the most confident canaries", row=1, col=col)
    first = audits[archs[0]] if archs else {"delta": float("nan"), "m": 0}
    fig.update_yaxes(title_text="ε at δ", row=1, col=1)
    fig.update_layout(title=f"One-run audit: ε against the number of guesses (δ = {first['delta']:g}, m = {first['m']} "
                            "canaries; each point 95 % on its own)")
    return _legend_below(fig, 480)


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
