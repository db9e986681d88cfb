"""The figures and tables of one run's results (one typed :class:`RunSummary` per architecture): utility and
attack accuracy over training, ROC curves (each drawn only down to FPR = 1/n), the attacks and overview tables,
the entropy comparison and the navigation steps. No Streamlit and no computation: the Train & attack page and
the run report draw the same ones."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.analyses.comparison_results import ComparisonResult
from core.analyses.repeats import unresolved_label
from core.experiment.results import AttackResult, RunRecords, RunSummary
from core.foundations.names import ARCH_NAMES, ATTACK_NAMES, ATTACK_SHORT, UTILITY_NAMES
from core.measurement.bootstrap import delong_auc
from core.measurement.metrics import Resolution
from core.measurement.stats import Estimate
from core.tasks import REGISTRY, get_task
from core.views.style import ARCH_COLOURS, ATTACK_DASH, AXIS_TITLE_PX, layout, with_ci


def _member_vs_unseen_curves(summaries: list[RunSummary], key: str, member: str, unseen: str) -> go.Figure:
    """Per-epoch ``<key>_train`` (solid) and ``<key>_val`` (dashed), one colour per architecture."""
    fig = go.Figure()
    for s in summaries:
        epochs = [r.epoch for r in s.per_epoch]
        c = ARCH_COLOURS.get(s.arch)
        name = ARCH_NAMES.get(s.arch, s.arch)
        # a column by name: utility_* are typed, navigation's steps_* are the task's own (EpochRecord.get)
        fig.add_scatter(x=epochs, y=[r.get(f"{key}_train") for r in s.per_epoch], name=f"{name} {member}",
                        line=dict(color=c))
        fig.add_scatter(x=epochs, y=[r.get(f"{key}_val") for r in s.per_epoch], name=f"{name} {unseen}",
                        line=dict(color=c, dash="dash"))
    return fig


def utility_curves(summaries: list[RunSummary]) -> go.Figure:
    """Train (members, solid) and validation (dashed) utility per epoch, one colour per architecture."""
    metric = summaries[0].utility.metric if summaries else "accuracy"
    fig = _member_vs_unseen_curves(summaries, "utility", "train (members)", "validation")
    return layout(fig, f"Utility ({UTILITY_NAMES.get(metric, metric)}) vs epoch", "epoch", UTILITY_NAMES.get(metric, metric))


def attack_accuracy_curve(summaries: list[RunSummary]) -> go.Figure:
    """Accuracy of each attack at each checkpoint epoch (a separate attack per epoch). One legend entry per attack,
    which shows or hides it for every architecture (the colour is the architecture): one per attack and
    architecture would be too many for a half-width column."""
    fig = go.Figure()
    listed: set[str] = set()
    for s in summaries:
        c = ARCH_COLOURS.get(s.arch)
        by_epoch = s.attacks_by_epoch or {}
        epochs = sorted(int(e) for e in by_epoch)
        names = list(by_epoch[str(epochs[-1])]) if epochs else []
        for attack in names:  # an attack run at some checkpoints only (e.g. the final one) gets those points
            at = [e for e in epochs if attack in by_epoch[str(e)]]
            fig.add_scatter(x=at, y=[by_epoch[str(e)][attack].accuracy for e in at], mode="lines+markers",
                            name=ATTACK_SHORT.get(attack, attack), legendgroup=attack,
                            showlegend=attack not in listed,
                            hovertemplate=f"{ARCH_NAMES.get(s.arch)} · {ATTACK_SHORT.get(attack, attack)}: "
                                          "%{y:.3f} at epoch %{x}<extra></extra>",
                            line=dict(color=c, dash=ATTACK_DASH.get(attack, "solid")),
                            visible=True if attack == s.primary else "legendonly")
            listed.add(attack)
    fig.add_hline(y=0.5, line=dict(color="grey", dash="dot"), annotation_text="chance")
    fig.update_yaxes(range=[0.3, 1.02])
    colours = " · ".join(f"<span style='color:{ARCH_COLOURS.get(s.arch)}'>{ARCH_NAMES.get(s.arch)}</span>"
                         for s in summaries)
    return layout(fig, f"Attack accuracy vs training epoch ({colours})", "epoch", "attack accuracy")


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


def zero_fp_tpr(r: AttackResult) -> float | None:
    """The TPR at zero false positives of an attack result: the highest TPR at FPR 0 of its stored ROC
    (every corner is kept at low FPR), else its TPR at a low FPR its non-members cannot resolve."""
    at0 = [t for f, t in zip(r.roc_fpr or (), r.roc_tpr or ()) if f <= 0]
    if at0:
        return float(max(at0))
    n0 = int(r.n_nonmembers or 0)
    return next((r.tpr_at_fpr[k] for k, f, _ in LOW_FPR_COLUMNS[::-1]
                 if k in r.tpr_at_fpr and n0 and not resolves(f, n0)), None)


def low_fpr_cells(results: list[AttackResult]) -> list[dict[str, float | None]]:
    """Each attack result's TPR cells for one table (a row each): "TPR @ 1 % / 0.1 % FPR" where every
    row's non-members resolve that FPR (:func:`resolves`), and otherwise one column "TPR at 0 false
    positives (FPR < 1/n)" — with 200 non-members "TPR @ 0.1 % FPR" is that number, not a rate of 0.1 %."""
    ns = [int(r.n_nonmembers or 0) for r in results]
    # a rate that allows one or two false positives rests on that many highest non-members: flagged in its name
    resolved = [(k, name if min(math.floor(f * n + 1e-12) for n in ns) > 2 else
                 f"{name} (≤ {min(math.floor(f * n + 1e-12) for n in ns)} FP: biased up)")
                for k, f, name in LOW_FPR_COLUMNS if ns and all(resolves(f, n) for n in ns)]
    zero = len(resolved) < len(LOW_FPR_COLUMNS)
    label = zero_fp_label(ns)
    out = []
    for r in results:
        cells = {name: r.tpr_at_fpr.get(k) for k, name in resolved}
        if zero:
            cells[label] = zero_fp_tpr(r)
        out.append(cells)
    return out


def measured_roc(fpr: Sequence[float], tpr: Sequence[float], n_nonmembers: int | None) -> tuple[list[float], list[float]]:
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


def thin_roc(fpr: Sequence[float], tpr: Sequence[float], max_points: int = 240) -> tuple[list[float], list[float]]:
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


def roc_curves(summaries: list[RunSummary]) -> go.Figure:
    """ROC curves of every attack, log-scale FPR as in the literature (Carlini et al.); the primary
    attack of each architecture is shown, the others are one click on their legend entry away."""
    fig = go.Figure()
    floor = 1e-3
    ns = []
    for s in summaries:
        c = ARCH_COLOURS.get(s.arch)
        for name, r in s.attacks.items():
            n0 = r.n_nonmembers
            ns.append(n0)
            fpr, tpr = measured_roc(*thin_roc(r.roc_fpr or (), r.roc_tpr or ()), n0)
            fig.add_scatter(x=fpr, y=tpr, mode="lines",
                            line=dict(color=c, dash=ATTACK_DASH.get(name, "solid")),
                            name=f"{ARCH_NAMES.get(s.arch)} · {ATTACK_SHORT.get(name, name)} · AUC {r.auc:.2f}",
                            visible=True if name == s.primary else "legendonly")
    diagonal = [floor * (1 / floor) ** (i / 50) for i in range(51)]  # y = x is a curve on a log x-axis
    fig.add_scatter(x=diagonal, y=diagonal, mode="lines", line=dict(color="grey", dash="dot"), name="chance")
    mark_fpr_floor(fig, [n for n in ns if n and 1 / n > floor])
    fig.update_xaxes(type="log", range=[-3, 0], tickvals=[1e-3, 1e-2, 1e-1, 1], ticktext=["0.1%", "1%", "10%", "100%"])
    fig.update_yaxes(range=[0, 1])
    return layout(fig, "ROC of the attacks (log FPR)", "false positive rate", "true positive rate",
                   per_row=1)  # long entries: one a row


def auc_interval(summary: RunSummary, attack: str) -> str | None:
    """An attack's AUC in one run with its 95 % interval over the evaluation records (DeLong's variance of the run's
    stored per-record scores), as "[low, high]"; None where the run stores no scores."""
    if not summary.records:
        return None
    scores = summary.per_record.scores_of(attack)
    membership = summary.per_record.membership
    if scores is None or not membership or len(scores) != len(membership) or any(x is None for x in scores):
        return None
    s, y = np.asarray(scores, np.float64), np.asarray(membership, bool)
    if not np.isfinite(s).all() or y.all() or not y.any():
        return None
    e = delong_auc(s, y)
    return f"[{e.ci_low:.3f}, {e.ci_high:.3f}]"


def metrics_table(summaries: list[RunSummary]) -> pd.DataFrame:
    """One row per (architecture, attack) with the common AttackResult metrics; the AUC with its 95 % interval over
    the evaluation records where the run stores the attack's per-record scores (one run: no interval over seeds)."""
    pairs = [(s, name, r) for s in summaries for name, r in s.attacks.items()]
    rows = []
    for (s, name, r), tprs in zip(pairs, low_fpr_cells([r for _, _, r in pairs])):
        rows.append({
            "architecture": ARCH_NAMES.get(s.arch, s.arch),
            "attack": ATTACK_NAMES.get(name, name),
            "accuracy": r.accuracy,
            "advantage (TPR−FPR)": r.advantage,
            "AUC": r.auc,
            "AUC 95 % CI (records)": auc_interval(s, name),
            **tprs,  # "TPR @ 0.1% FPR" only where the non-members resolve it (low_fpr_cells)
            "eval records": None if r.n_members is None or r.n_nonmembers is None else r.n_members + r.n_nonmembers,
        })
    return pd.DataFrame(rows)


def overview_table(summaries: list[RunSummary], comp: ComparisonResult | None = None) -> pd.DataFrame:
    """Parameters, utility and headline attack numbers per architecture. With ``comp`` (the
    paired comparison over N ≥ 2 repeats, :func:`core.analyses.repeats.comparison_json`) the numbers
    of ``summaries`` are labelled "repeat 1 of N" and the means over the repeats with their 95 %
    intervals stand beside them, so no single repeat reads as the result."""
    n = int(comp.repeats or 1) if comp else 1
    one = f" (repeat 1 of {n})" if n > 1 else ""
    rows = []
    for s in summaries:
        utility = UTILITY_NAMES.get(s.utility.metric)
        row = {"architecture": ARCH_NAMES.get(s.arch, s.arch), "parameters": s.params}
        if comp is not None and n > 1:  # the means first: a wide table scrolls, and the result must not be the part out of sight
            for name, label in (("attack_accuracy", "attack accuracy"), ("attack_auc", "attack AUC"),
                                ("utility_val", f"{utility} validation")):
                mc = comp.metrics.get(name)
                m = mc.estimate(s.arch) if mc else None
                row[f"{label}, mean of {n} [95 % CI]"] = with_ci(Estimate.from_dict(m)) if m else "—"
        row.update({
            f"{utility} train{one}": s.utility.train,
            f"{utility} validation{one}": s.utility.val,
            f"attack accuracy{one}": s.attack.accuracy,
            f"attack AUC{one}": s.attack.auc,
        })
        row.update({"compute time (s)": round(s.timings["total_s"], 1), "from cache": "yes" if s.cache_hit else "no"})
        rows.append(row)
    return pd.DataFrame(rows)


def record_names(task: str) -> tuple[str, str]:
    """What one record of ``task`` is called, singular and plural (:attr:`core.tasks.base.Task.record_names`)."""
    return get_task(task).record_names if task in REGISTRY else ("record", "records")


def _resolution_line(runs: list[tuple[str, str, Resolution | None, float | None]]) -> str | None:
    """The resolution note of (task, arch, resolution block — None in a summary written before it —, the
    config's ``n_eval``, which a summary without the block falls back on) per run."""
    parts = []
    for task, arch, res, n_eval in runs:
        n_in = int((res.n_members if res else 0) or n_eval or 0)
        n_out = int((res.n_nonmembers if res else 0) or n_in)
        if not n_in or not n_out:
            continue
        one, many = record_names(task)
        parts.append(f"{ARCH_NAMES.get(arch, arch)}: {n_in} + {n_out} {many}, one {one} = "
                     f"{1 / n_in:.3g} of TPR, {1 / n_out:.3g} of FPR, {1 / (n_in + n_out):.3g} of accuracy")
    if not parts:
        return None
    return "Resolution — " + "; ".join(parts) + ". Differences of a step or two are one or two records, not an architecture."


def resolution_note(summaries: list[RunSummary]) -> str | None:
    """One line: how much TPR / FPR / accuracy one evaluation record is worth in each run (the
    summary's ``resolution``, or its config's ``n_eval`` for summaries written before it)."""
    return _resolution_line([(s.task, s.arch, s.resolution, s.settings.n_eval) for s in summaries])


def comparison_resolution_note(comp: ComparisonResult) -> str | None:
    """:func:`resolution_note` of a comparison (``core.analyses.repeats.comparison_json``'s ``resolution``
    block; None for a comparison written before it)."""
    return _resolution_line([(comp.task or "", arch, r, None) for arch, r in (comp.resolution or {}).items()])


def param_gap(summaries: list[RunSummary]) -> float | None:
    """Relative difference of the two architectures' parameter counts (None with one arch)."""
    counts = [s.params for s in summaries]
    if len(counts) < 2:
        return None
    return abs(counts[0] - counts[1]) / max(counts)


#: at most this many records per (architecture, membership) group are drawn as single dots
DOTS_UP_TO = 60


def _log_ape(values: Sequence[float]) -> np.ndarray:
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


def entropy_comparison(summaries: list[RunSummary]) -> go.Figure:
    """Average prediction entropy (APE, paper 000 eq. 3) of members vs non-members, per architecture.

    A model that is more certain on its training records than on unseen ones gives the attacks their
    signal. Many records: one empirical CDF per group (members solid, non-members dashed; the further
    apart the two curves of one colour, the easier the attack). Few records (navigation's maps): every
    record as a dot, one row per architecture and group, so a handful of values is not a few spikes.
    """
    return entropy_figure([(s.arch, s.per_record if s.records else None) for s in summaries])


def entropy_figure(records: list[tuple[str, RunRecords | None]]) -> go.Figure:
    """:func:`entropy_comparison` of (architecture, per-record signals: APE and membership) pairs: a run's
    ``records`` or a defended point's, typed (the Defenses page draws the defended outputs with it); a pair
    without them is left out."""
    groups = []
    for arch, rec in records:
        if rec is None or rec.ape is None or rec.membership is None:
            continue
        ape = _log_ape(rec.ape)
        member = np.asarray(rec.membership, bool)
        groups.append((arch, ape[member], ape[~member]))
    fig = go.Figure()
    if not groups:
        return layout(fig, "Prediction entropy: members vs non-members", "log₁₀ average prediction entropy (nats)", "")
    small = max(max(len(m), len(n)) for _, m, n in groups) <= DOTS_UP_TO
    if small:
        labels: list[str] = []
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
        fig = layout(fig, "Prediction entropy per record (black bar = median)", "log₁₀ average prediction entropy (nats)",
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
    return layout(fig, "Prediction entropy: members vs non-members (cumulative)",
                   "log₁₀ average prediction entropy (nats)", "records at or below")


def steps_curves(summaries: list[RunSummary]) -> go.Figure | None:
    """Mean steps per episode on member (solid) vs unseen (dashed) maps over training, or None
    when the task reports no steps (only navigation does)."""
    if not any("steps_train" in r.extra for s in summaries for r in s.per_epoch):  # a task-specific column
        return None
    fig = _member_vs_unseen_curves(summaries, "steps", "member maps", "unseen maps")
    return layout(fig, "Steps per episode vs epoch (fewer = more direct)", "epoch", "mean steps per episode")


#: attacks drawn (not legend-only) by default in the log-log ROC
STRONG_ATTACKS = ("lira", "rmia")


def roc_loglog(summaries: list[RunSummary]) -> go.Figure:
    """ROC curves of every attack on log-log axes (LiRA's convention: the low-FPR regime, where an attack that
    confidently identifies a few members differs from one merely above chance). The primary attack, LiRA and RMIA
    are shown, the others a legend click away. Each curve is drawn only down to FPR = 1/n (:func:`measured_roc`),
    a dotted line marks that floor; the legend's TPR is at 1 % FPR, or at 0 false positives where 1/n > 1 %."""
    fig = go.Figure()
    floor = 1e-3
    ns = []
    for s in summaries:
        c = ARCH_COLOURS.get(s.arch)
        for name, r in s.attacks.items():
            if not r.roc_fpr:
                continue
            n0 = int(r.n_nonmembers or 0) or None
            ns.append(n0)
            lo = 0.5 / (n0 or 1000)
            floor = min(floor, lo)
            fpr, tpr = measured_roc(r.roc_fpr, r.roc_tpr or (), n0)
            if n0 and not resolves(0.01, n0):
                low = f"TPR@0FP (FPR < 1/{n0}) {zero_fp_tpr(r) or 0:.2f}"
            else:
                low = f"TPR@1% {r.tpr_at_fpr.get('0.01', float('nan')):.2f}"
            fig.add_scatter(
                x=fpr, y=[max(v, lo) for v in tpr], mode="lines",
                line=dict(color=c, dash=ATTACK_DASH.get(name, "solid"), width=3 if name in STRONG_ATTACKS else 2),
                name=f"{ARCH_NAMES.get(s.arch, s.arch)} · {ATTACK_SHORT.get(name, name)} · {low}",
                visible=True if name in STRONG_ATTACKS or name == s.primary else "legendonly")
    lo_exp = math.floor(math.log10(floor))
    diagonal = [10 ** (lo_exp + (-lo_exp) * i / 50) for i in range(51)]
    fig.add_scatter(x=diagonal, y=diagonal, mode="lines", line=dict(color="grey", dash="dot"), name="chance (TPR = FPR)")
    mark_fpr_floor(fig, [n for n in ns if n])
    ticks = [10.0 ** k for k in range(lo_exp, 1)]
    text = [f"{100 * t:g}%" for t in ticks]
    fig.update_xaxes(type="log", range=[lo_exp, 0], tickvals=ticks, ticktext=text)
    fig.update_yaxes(type="log", range=[lo_exp, 0], tickvals=ticks, ticktext=text)
    # one legend entry a row: two overlap in the page's half-width column
    return layout(fig, "ROC on log-log axes (low false-positive rates)", "false positive rate", "true positive rate",
                   per_row=1)
