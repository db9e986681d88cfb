"""The output defenses' (the Defenses page's) figures and tables: attack accuracy and utility loss over
a mechanism's value with their 95 % bands (:func:`band_caption` says over what), the defended
entropy comparison and the table of our measured rows beside the study's."""
from __future__ import annotations

from typing import Callable, Iterable, overload

import pandas as pd
import plotly.graph_objects as go

from core.defenses.registry import Mechanism
from core.experiment.results import DefendedPoint, DefenseBand, DefenseBaseline
from core.foundations.names import ARCH_NAMES
from core.measurement.stats import Estimate
from core.views.run_figures import STRONG_ATTACKS, entropy_figure
from core.views.style import ARCH_COLOURS, layout


def _interval(p: DefendedPoint, metric: str) -> Estimate | None:
    """The point's 95 % interval of ``metric`` (``intervals``, core.analyses.repeats.defense_curve_bands),
    or None where it has none (one repeat and one draw, or a metric not banded)."""
    e = p.interval(metric)
    return e if e is not None and e.ci_low is not None and e.ci_high is not None else None


def _bars(pts: list[DefendedPoint], metric: str, fallback: list[float | None]) -> tuple[list[float], list[float]]:
    """Error bars of a curve's points without an interval: ``fallback`` (± sd over draws); 0 where
    the point has an interval (:func:`add_band` draws that one)."""
    up, down = [], []
    for p, f in zip(pts, fallback):
        v = 0.0 if _interval(p, metric) else (f or 0.0)
        up.append(v)
        down.append(v)
    return up, down


def _band(points: Iterable[DefendedPoint]) -> DefenseBand | None:
    """What the points' intervals are over: the first point's ``band`` that says (None: no point does)."""
    return next((p.band for p in points if p.band is not None), None)


def add_band(fig: go.Figure, pts: list[DefendedPoint], metric: str, colour: str | None, name: str,
             x_of: Callable[[DefendedPoint], float | None] = lambda p: p.value, yaxis: str | None = None) -> None:
    """The 95 % band of ``metric`` over the points that have an interval: one filled polygon
    (upper ends left to right, lower ends back), named with N (repeats or draws)."""
    with_ci = [(x, e) for p in pts if (e := _interval(p, metric)) is not None and (x := x_of(p)) is not None]
    if not with_ci:
        return
    with_ci.sort(key=lambda t: t[0])
    xs = [x for x, _ in with_ci]
    band = _band(pts)
    n = with_ci[0][1].n
    what = ("repeats" if band.over == "repeats" else "draws") if band else "repeats"
    extra = f" × {band.draws} draws" if band and band.over == "repeats" and band.draws > 1 else ""
    fig.add_scatter(x=xs + xs[::-1], y=[e.ci_high for _, e in with_ci] + [e.ci_low for _, e in with_ci][::-1],
                    fill="toself", mode="lines", line=dict(width=0), fillcolor=colour or "#444", opacity=0.18,
                    hoverinfo="skip", name=f"{name} 95% band (N = {n} {what}{extra})", yaxis=yaxis)


@overload
def band_centre(p: DefendedPoint, metric: str, value: float) -> float: ...
@overload
def band_centre(p: DefendedPoint, metric: str, value: float | None) -> float | None: ...
def band_centre(p: DefendedPoint, metric: str, value: float | None) -> float | None:
    """Where a curve's line passes: the interval's mean (over repeats) where the point has one, else ``value``
    (so a point with a value always has a centre)."""
    e = _interval(p, metric)
    return e.mean if e else value


def band_caption(points: dict[str, list[DefendedPoint]]) -> str:
    """One line saying what the curves' bands are over (N repeats × D draws, D draws, or nothing)."""
    b = _band(p for pts in points.values() for p in pts)
    if b is None:
        return "No interval: one repeat and one draw per point (raise draws, or train repeats, for a band)."
    if b.over == "repeats":
        return (f"Bands: 95 % t intervals over N = {b.repeats} repeats (independent victims and shadows; each "
                f"repeat the mean of its {b.draws} draw{'s' if b.draws != 1 else ''}); the line is their mean.")
    if b.over == "draws":
        return (f"Bands: 95 % t intervals over the {b.draws} draws of one repeat (draw noise only: the models' "
                "seed-to-seed spread is not in them — train repeats for that).")
    return "No interval: one repeat and one draw per point (raise draws, or train repeats, for a band)."


def defense_curves(points: dict[str, list[DefendedPoint]], baselines: dict[str, DefenseBaseline], value_name: str,
                   current: float | None, log_x: bool) -> go.Figure:
    """Attack accuracy (solid) and utility loss (dotted, right axis) over the mechanism's value,
    one colour per architecture; the slider's value is marked, the undefended accuracy dashed.
    Where points carry ``intervals`` (core.analyses.repeats.defense_curve_bands: over repeats × draws, or
    over the draws of one repeat) the line passes through their means and a shaded 95 % band
    is drawn; elsewhere error bars show ± sd over draws."""
    fig = go.Figure()
    for arch, pts in points.items():
        pts = sorted(pts, key=lambda p: p.value)
        c = ARCH_COLOURS.get(arch)
        name = ARCH_NAMES.get(arch, arch)
        xs = [p.value for p in pts]
        acc = [band_centre(p, "attack_accuracy", p.attack.accuracy) for p in pts]
        up, down = _bars(pts, "attack_accuracy", [p.attack.accuracy_std for p in pts])
        add_band(fig, pts, "attack_accuracy", c, f"{name} attack accuracy")
        fig.add_scatter(x=xs, y=acc, name=f"{name} attack accuracy", line=dict(color=c), mode="lines+markers",
                        error_y=dict(type="data", array=up, arrayminus=down, visible=any(v > 0 for v in up + down)))
        strongest = [p for p in pts if any(n in p.attacks for n in STRONG_ATTACKS)]
        if strongest:  # the best of LiRA/RMIA: what survives a defense the shadow MLP no longer sees
            fig.add_scatter(x=[p.value for p in strongest],
                            y=[max(band_centre(p, f"{n}_auc", p.attacks[n].auc) for n in STRONG_ATTACKS
                                   if n in p.attacks) for p in strongest],
                            name=f"{name} LiRA/RMIA AUC (best)", line=dict(color=c, dash="dashdot", width=1.5),
                            mode="lines")
        with_u = [p for p in pts if p.utility_loss is not None]
        if with_u:
            up, down = _bars(with_u, "utility_loss", [0.0] * len(with_u))
            add_band(fig, with_u, "utility_loss", c, f"{name} utility loss", yaxis="y2")
            fig.add_scatter(x=[p.value for p in with_u],
                            y=[band_centre(p, "utility_loss", p.utility_loss) for p in with_u],
                            yaxis="y2", name=f"{name} utility loss", line=dict(color=c, dash="dot"), mode="lines+markers",
                            error_y=dict(type="data", array=up, arrayminus=down, visible=any(v > 0 for v in up + down)))
        base = baselines.get(arch)
        if base and xs:
            fig.add_scatter(x=[min(xs), max(xs)], y=[base.attack.accuracy] * 2, mode="lines",
                            name=f"{name} undefended", line=dict(color=c, dash="dash", width=1))
    if current is not None:
        fig.add_vline(x=current, line=dict(color="grey", width=1))
    fig.add_hline(y=0.5, line=dict(color="grey", dash="dot", width=1))
    losses = []
    for pts in points.values():
        for p in pts:
            if p.utility_loss is not None:
                e = _interval(p, "utility_loss")
                losses += [p.utility_loss, *((e.ci_low, e.ci_high) if e else ())]
    top = max([0.2] + [1.1 * v for v in losses])
    fig.update_layout(yaxis=dict(range=[0.4, 1.02]),
                      yaxis2=dict(title="utility loss", overlaying="y", side="right", tickformat=".0%",
                                  range=[min([-0.05] + losses), top], showgrid=False))
    if log_x:
        fig.update_xaxes(type="log")
    return layout(fig, f"Attack accuracy and utility loss vs {value_name}", value_name,
                   "attack accuracy / AUC (chance = 0.5)")


def defended_entropy_histogram(points: dict[str, DefendedPoint]) -> go.Figure:
    """The entropy comparison of :func:`core.views.run_figures.entropy_figure` on the defended outputs of each architecture."""
    return entropy_figure([(arch, p.per_record) for arch, p in points.items()])


def _best_strong_auc(point: DefendedPoint | DefenseBaseline | None) -> float | None:
    """The AUC of the stronger of LiRA and RMIA in a point (None when neither was scored)."""
    attacks = point.attacks if point is not None else {}
    aucs = [attacks[n].auc for n in STRONG_ATTACKS if n in attacks]
    return max(aucs) if aucs else None


def defense_table(task: str, mechanism: Mechanism, rows: dict[str, list[DefendedPoint]],
                  baselines: dict[str, DefenseBaseline]) -> pd.DataFrame:
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
        by_value = {p.value: p for p in pts}
        for v in values:
            p = by_value.get(v) if v is not None else None
            base = baselines[arch]
            out.append({"source": "ours (this preset)", "arch": name, symbol: label(v),
                        "attack acc (naive)": base.attack.accuracy if v is None else (p.attack.accuracy if p else None),
                        "attack acc (adaptive)": (p.adaptive_attack.accuracy if p and p.adaptive_attack else None),
                        "LiRA/RMIA AUC (best)": _best_strong_auc(base if v is None else p),
                        "utility": base.utility if v is None else (p.utility if p else None),
                        "utility loss": 0.0 if v is None else (p.utility_loss if p else None),
                        "ε (theory)": None if v is None or not p else p.epsilon,
                        "guarantee": "" if v is None or not p else (p.guarantee or "")})
    for arch in rows:
        study = mechanism.study_rows(task, arch)
        if not study:
            continue
        base_util = study.rows[None][2]
        for v in values:
            if v not in study.rows:
                continue
            acc, _, util, _ = study.rows[v]
            out.append({"source": f"study ({study.source.cite()}: {study.model}, {study.metric})",
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
