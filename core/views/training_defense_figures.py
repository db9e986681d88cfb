"""The training-time defenses' (the Training defenses page's) figures and tables: a sweep metric over the
swept value or over ε (RDP / PRV) with bands over repeats, the sweep's table and the study's DP-SGD
recipe beside ours."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import pandas as pd
import plotly.graph_objects as go

from core.experiment.results import DefendedPoint, DefenseBaseline
from core.foundations.names import ARCH_NAMES
from core.measurement import studies
from core.measurement.studies import DpsgdRecipe
from core.views.defense_figures import add_band, band_centre
from core.views.style import ARCH_COLOURS, layout

if TYPE_CHECKING:  # a type only: the sweeps load the pipeline (torch), which these figures do not need
    from core.defenses.sweeps import RecipeEpsilon


def _point_y(p: DefendedPoint, metric: str) -> float | None:
    """A sweep point's ``attack_accuracy`` or ``utility_loss``."""
    return p.attack.accuracy if metric == "attack_accuracy" else p.utility_loss


def _point_x(p: DefendedPoint, x: str) -> float | None:
    """The x of a sweep point: its swept value (``value``), or ε by an accountant (``epsilon_rdp``/``_prv``/``_gdp``;
    None without a DP-SGD block)."""
    if x == "value":
        return p.value
    if x.startswith("epsilon_"):
        return p.dpsgd.epsilon_by(x.split("_", 1)[1]) if p.dpsgd is not None else None
    if x == "epsilon":  # the point's guarantee
        return p.epsilon
    raise ValueError(f"a sweep point's x is its value or epsilon_<accountant>, not {x!r}")


def _x_of(x: str) -> Callable[[DefendedPoint], float | None]:
    """:func:`_point_x` with the x fixed (a band's ``x_of``)."""
    def x_of(p: DefendedPoint) -> float | None:
        return _point_x(p, x)
    return x_of


def training_defense_curves(points: dict[str, list[DefendedPoint]], baselines: dict[str, DefenseBaseline],
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
                          and (yv := band_centre(p, metric, _point_y(p, metric))) is not None)
            if rows:
                xs_all += [r[0] for r in rows]
                if dash == "solid":  # one band per architecture (over the RDP ε or the swept value)
                    add_band(fig, pts, metric, c, name, x_of=_x_of(key))
                fig.add_scatter(x=[r[0] for r in rows], y=[r[1] for r in rows], mode="lines+markers",
                                name=f"{name}{suffix}", line=dict(color=c, dash=dash))
        base = baselines.get(arch)
        if metric == "attack_accuracy" and base and xs_all:
            fig.add_scatter(x=[min(xs_all), max(xs_all)], y=[base.attack.accuracy] * 2, mode="lines",
                            name=f"{name} undefended", line=dict(color=c, dash="dash", width=1))
    if bound:
        fig.add_scatter(x=[b[0] for b in bound], y=[b[1] for b in bound], mode="lines", name="(ε, δ)-DP bound",
                        line=dict(color="grey", dash="dashdot", width=1))
    if metric == "attack_accuracy":
        fig.add_hline(y=0.5, line=dict(color="grey", dash="dot", width=1))
        y_title, what = "attack accuracy (chance = 0.5)", "Attack accuracy"
    else:
        ys = [p.utility_loss for pts in points.values() for p in pts if p.utility_loss is not None]
        narrow = bool(ys) and max(ys) - min(ys) < 0.05  # e.g. 98.6–100 %: whole percents would repeat
        fig.update_yaxes(tickformat=".1%" if narrow else ".0%")
        y_title, what = "utility loss 1 − M/M₀", "Utility loss"
    if log_x:
        fig.update_xaxes(type="log")
    return layout(fig, f"{what} vs {x_title}", x_title, y_title)


def training_defense_table(points: dict[str, list[DefendedPoint]], baselines: dict[str, DefenseBaseline]) -> pd.DataFrame:
    """One row per architecture and value: utility, utility loss, attack accuracy and AUC, and for
    DP-SGD σ, ε (RDP / PRV / GDP), q and steps; the undefended run first."""
    rows = []
    for arch, pts in points.items():
        base = baselines.get(arch)
        if base:
            rows.append({"arch": ARCH_NAMES.get(arch, arch), "value": "undefended", "utility": base.utility,
                         "utility loss": 0.0, "attack acc": base.attack.accuracy, "AUC": base.attack.auc})
        for p in sorted(pts, key=lambda p: p.value):
            row = {"arch": ARCH_NAMES.get(arch, arch), "value": f"{p.value_name or ''} = {p.value:g}",
                   "utility": p.utility, "utility loss": p.utility_loss, "attack acc": p.attack.accuracy,
                   "AUC": p.attack.auc}
            b = p.dpsgd
            if b is not None:
                row.update({"σ": b.noise_multiplier, "C": b.max_grad_norm, "ε RDP": b.epsilon_by("rdp"),
                            "ε PRV": b.epsilon_by("prv"), "ε GDP": b.epsilon_by("gdp"), "δ": b.delta,
                            "q": b.sample_rate, "steps": b.steps})
            rows.append(row)
    return pd.DataFrame(rows)


def dpsgd_recipe_table(study: DpsgdRecipe, study_eps: list[RecipeEpsilon],
                       ours: dict[str, list[DefendedPoint]]) -> pd.DataFrame:
    """The study's DP-SGD recipe for the task (:data:`core.measurement.studies.DPSGD_RECIPE`, paper 000 Table 2)
    with the ε *we* compute for that recipe at each of our σ (the paper prints none; the ``source``
    says so), beside the recipe and ε of our measured points."""
    rows = []
    for e in study_eps:
        rows.append({"source": f"study's recipe ({studies.DPSGD_RECIPE_SOURCE.cite()}, {study.task}); "
                               "ε computed by us at our σ", "|D|": str(study.train_size),
                     "batch": study.batch, "epochs": study.epochs, "C": study.clip_norm, "δ": study.delta,
                     "σ": e.sigma, "q": e.sample_rate, "steps": e.steps, "ε RDP": e.epsilon_rdp,
                     "ε PRV": e.epsilon_prv, "utility loss": None})
    for arch, pts in ours.items():
        with_block = [(p, p.dpsgd) for p in pts if p.dpsgd is not None]
        for p, b in sorted(with_block, key=lambda pb: pb[1].noise_multiplier):
            rows.append({"source": f"ours ({ARCH_NAMES.get(arch, arch)})", "|D|": str(b.n_samples),
                         "batch": b.expected_batch_size, "epochs": round(b.steps * b.sample_rate),
                         "C": b.max_grad_norm, "δ": b.delta,
                         "σ": b.noise_multiplier, "q": b.sample_rate, "steps": b.steps,
                         "ε RDP": b.epsilon_by("rdp"), "ε PRV": b.epsilon_by("prv"),
                         "utility loss": p.utility_loss})
    return pd.DataFrame(rows)
