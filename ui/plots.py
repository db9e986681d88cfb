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
