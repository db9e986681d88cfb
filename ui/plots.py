"""Plotly figures and tables built from the CLI's JSON summaries (one summary per architecture).

Everything here is drawn from the same JSON that ``python -m core run`` writes, so what the
app shows can always be reproduced headless.
"""
from __future__ import annotations

import math
from typing import Any

import pandas as pd
import plotly.graph_objects as go

ARCH_COLOURS = {"ffnn": "#1f77b4", "rnn": "#d62728"}
ARCH_NAMES = {"ffnn": "FFNN", "rnn": "RNN"}
ATTACK_DASH = {"shadow": "solid", "loss_threshold": "dash", "entropy_threshold": "dot", "prmia": "dashdot", "bleu_feature": "longdash"}
ATTACK_NAMES = {
    "shadow": "Shadow-model classifier",
    "loss_threshold": "Loss threshold (Yeom)",
    "entropy_threshold": "Entropy threshold",
    "prmia": "PRMIA (rank histogram)",
    "bleu_feature": "BLEU features (Hisamoto)",
}
UTILITY_NAMES = {"accuracy": "accuracy", "bleu": "BLEU", "return": "mean return"}


def _layout(fig: go.Figure, title: str, x: str, y: str) -> go.Figure:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, height=470, margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", yanchor="top", y=-0.18, xanchor="left", x=0))
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
        for attack in names:
            fig.add_scatter(x=epochs, y=[by_epoch[str(e)][attack]["accuracy"] for e in epochs], mode="lines+markers",
                            name=f"{ARCH_NAMES.get(s['arch'])} · {ATTACK_NAMES.get(attack, attack)}",
                            line=dict(color=c, dash=ATTACK_DASH.get(attack, "solid")),
                            visible=True if attack == s["attack"]["name"] else "legendonly")
    fig.add_hline(y=0.5, line=dict(color="grey", dash="dot"), annotation_text="chance")
    fig.update_yaxes(range=[0.3, 1.02])
    return _layout(fig, "Attack accuracy vs training epoch", "epoch", "attack accuracy")


def roc_curves(summaries: list[dict[str, Any]]) -> go.Figure:
    """ROC curves of every attack, log-scale FPR as in the literature (Carlini et al.)."""
    fig = go.Figure()
    floor = 1e-3
    for s in summaries:
        c = ARCH_COLOURS.get(s["arch"])
        for name, r in s["attacks"].items():
            fpr = [max(v, floor) for v in r["roc_fpr"]]
            fig.add_scatter(x=fpr, y=r["roc_tpr"], mode="lines", line=dict(color=c, dash=ATTACK_DASH.get(name, "solid")),
                            name=f"{ARCH_NAMES.get(s['arch'])} · {ATTACK_NAMES.get(name, name)} (AUC {r['auc']:.2f})",
                            visible=True if name == s["attack"]["name"] else "legendonly")
    diagonal = [floor * (1 / floor) ** (i / 50) for i in range(51)]  # y = x is a curve on a log x-axis
    fig.add_scatter(x=diagonal, y=diagonal, mode="lines", line=dict(color="grey", dash="dot"), name="chance")
    fig.update_xaxes(type="log", range=[-3, 0], tickvals=[1e-3, 1e-2, 1e-1, 1], ticktext=["0.1%", "1%", "10%", "100%"])
    fig.update_yaxes(range=[0, 1])
    return _layout(fig, "ROC of the attacks (log FPR)", "false positive rate", "true positive rate")


def metrics_table(summaries: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per (architecture, attack) with the common AttackResult metrics."""
    rows = []
    for s in summaries:
        for name, r in s["attacks"].items():
            rows.append({
                "architecture": ARCH_NAMES.get(s["arch"], s["arch"]),
                "attack": ATTACK_NAMES.get(name, name),
                "accuracy": r["accuracy"],
                "advantage (TPR−FPR)": r["advantage"],
                "AUC": r["auc"],
                "TPR @ 1% FPR": r["tpr_at_fpr"]["0.01"],
                "TPR @ 0.1% FPR": r["tpr_at_fpr"]["0.001"],
                "eval records": r["n_members"] + r["n_nonmembers"],
            })
    return pd.DataFrame(rows)


def overview_table(summaries: list[dict[str, Any]]) -> pd.DataFrame:
    """Parameters, utility and headline attack numbers per architecture."""
    rows = []
    for s in summaries:
        t = s["timings"]
        rows.append({
            "architecture": ARCH_NAMES.get(s["arch"], s["arch"]),
            "parameters": s["params"],
            f"{UTILITY_NAMES.get(s['utility']['metric'])} train": s["utility"]["train"],
            f"{UTILITY_NAMES.get(s['utility']['metric'])} validation": s["utility"]["val"],
            "attack accuracy": s["attack"]["accuracy"],
            "attack AUC": s["attack"]["auc"],
            "compute time (s)": round(t["total_s"], 1),
            "from cache": "yes" if s.get("cache_hit") else "no",
        })
    return pd.DataFrame(rows)


def param_gap(summaries: list[dict[str, Any]]) -> float | None:
    """Relative difference of the two architectures' parameter counts (None with one arch)."""
    counts = [s["params"] for s in summaries]
    if len(counts) < 2:
        return None
    return abs(counts[0] - counts[1]) / max(counts)


def entropy_histogram(summaries: list[dict[str, Any]]) -> go.Figure:
    """Average prediction entropy (APE, paper 000 eq. 3) of members vs non-members per architecture.

    A model that is more certain on its training records than on unseen ones gives the attacks
    their signal: the further apart the two histograms, the higher the attack accuracy.
    """
    fig = go.Figure()
    for s in summaries:
        rec = s.get("records")
        if not rec:
            continue
        c = ARCH_COLOURS.get(s["arch"])
        name = ARCH_NAMES.get(s["arch"], s["arch"])
        for member, opacity, label in ((True, 0.75, "members"), (False, 0.35, "non-members")):
            # log scale: a confident model's entropies span many orders of magnitude near 0
            values = [math.log10(max(a, 1e-12)) for a, m in zip(rec["ape"], rec["membership"]) if m == member]
            fig.add_histogram(x=values, name=f"{name} {label}", marker_color=c, opacity=opacity, nbinsx=40,
                              histnorm="probability")
    fig.update_layout(barmode="overlay")
    return _layout(fig, "Prediction entropy: members vs non-members", "log₁₀ average prediction entropy (nats)",
                   "fraction of records")


def steps_curves(summaries: list[dict[str, Any]]) -> go.Figure | None:
    """Mean steps per episode on member (solid) vs unseen (dashed) maps over training, or None
    when the task reports no steps (only navigation does)."""
    if not any("steps_train" in r for s in summaries for r in s["per_epoch"]):
        return None
    fig = _member_vs_unseen_curves(summaries, "steps", "member maps", "unseen maps")
    return _layout(fig, "Steps per episode vs epoch (fewer = more direct)", "epoch", "mean steps per episode")


# ---------------------------------------------------------------------------- defenses
#: 001 Tables 1–2: attack accuracy and utility under Dir_k as the study reports them
STUDY_DIRICHLET = {
    "navigation": {"metric": "total reward", "rows": {None: (99.19, 0.9095), 100.0: (98.74, 0.9047), 10.0: (55.87, 0.8960),
                                                      1.0: (50.59, 0.8936), 0.1: (50.00, 0.8843), 0.01: (50.00, 0.8783)}},
    "translation": {"metric": "BLEU", "rows": {None: (81.02, 46.74), 100.0: (67.53, 46.53), 10.0: (55.98, 46.02),
                                               1.0: (53.42, 44.57), 0.1: (50.42, 43.961), 0.01: (50.34, 43.74)}},
}


def defense_curves(points: dict[str, list[dict[str, Any]]], baselines: dict[str, dict[str, Any]], value_name: str,
                   current: float | None, log_x: bool) -> go.Figure:
    """Attack accuracy (solid) and utility loss (dotted, right axis) over the mechanism's value,
    one colour per architecture; the slider's value is marked, the undefended accuracy dashed."""
    fig = go.Figure()
    for arch, pts in points.items():
        pts = sorted(pts, key=lambda p: p["value"])
        c = ARCH_COLOURS.get(arch)
        name = ARCH_NAMES.get(arch, arch)
        xs = [p["value"] for p in pts]
        acc = [p["attack"]["accuracy"] for p in pts]
        std = [p["attack"].get("accuracy_std", 0.0) for p in pts]
        fig.add_scatter(x=xs, y=acc, name=f"{name} attack accuracy", line=dict(color=c), mode="lines+markers",
                        error_y=dict(type="data", array=std, visible=any(s > 0 for s in std)))
        with_u = [p for p in pts if p.get("utility_loss") is not None]
        if with_u:
            fig.add_scatter(x=[p["value"] for p in with_u], y=[p["utility_loss"] for p in with_u], yaxis="y2",
                            name=f"{name} utility loss", line=dict(color=c, dash="dot"), mode="lines+markers")
        base = baselines.get(arch)
        if base and xs:
            fig.add_scatter(x=[min(xs), max(xs)], y=[base["attack"]["accuracy"]] * 2, mode="lines",
                            name=f"{name} undefended", line=dict(color=c, dash="dash", width=1))
    if current is not None:
        fig.add_vline(x=current, line=dict(color="grey", width=1))
    fig.add_hline(y=0.5, line=dict(color="grey", dash="dot", width=1))
    losses = [p["utility_loss"] for pts in points.values() for p in pts if p.get("utility_loss") is not None]
    top = max([0.2] + [1.1 * v for v in losses])
    fig.update_layout(yaxis=dict(range=[0.4, 1.02]),
                      yaxis2=dict(title="utility loss", overlaying="y", side="right", tickformat=".0%",
                                  range=[min([-0.05] + losses), top], showgrid=False))
    if log_x:
        fig.update_xaxes(type="log")
    return _layout(fig, f"Attack accuracy and utility loss vs {value_name}", value_name, "attack accuracy (chance = 0.5)")


def defended_entropy_histogram(points: dict[str, dict[str, Any]]) -> go.Figure:
    """The entropy histogram of :func:`entropy_histogram` on the defended outputs of each architecture."""
    return entropy_histogram([{"arch": arch, "records": p["records"]} for arch, p in points.items()])


def dirichlet_table(task: str, rows: dict[str, list[dict[str, Any]]], baselines: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """The studies' rows (k = 100 … 0.01) beside the measured naive / adaptive attack and utility."""
    study = STUDY_DIRICHLET.get(task)
    out = []
    for arch, pts in rows.items():
        name = ARCH_NAMES.get(arch, arch)
        by_k = {p["value"]: p for p in pts}
        for k in [None, 100.0, 10.0, 1.0, 0.1, 0.01]:
            p = by_k.get(k) if k is not None else None
            base = baselines[arch]
            row = {"arch": name, "k": "no protection" if k is None else f"{k:g}",
                   "attack acc (naive)": base["attack"]["accuracy"] if k is None else (p["attack"]["accuracy"] if p else None),
                   "attack acc (adaptive)": (p["adaptive_attack"]["accuracy"] if p and p.get("adaptive_attack") else None),
                   "utility": base["utility"] if k is None else (p.get("utility") if p else None),
                   "utility loss": 0.0 if k is None else (p.get("utility_loss") if p else None)}
            if study:
                acc, util = study["rows"][k]
                row[f"study: attack acc"] = acc / 100
                row[f"study: {study['metric']}"] = util
            out.append(row)
    df = pd.DataFrame(out)
    for col in df.columns[2:]:  # numbers: a missing one is NaN (shown as "—"), not the string None
        df[col] = pd.to_numeric(df[col], errors="coerce")
    return df
