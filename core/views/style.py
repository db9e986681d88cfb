"""What every figure of :mod:`core.views` shares: the architectures' colours, the attacks' dashes, the
margins a figure starts with (``LEFT_PX`` …), the layout of a titled figure with its legend below
(:func:`layout`, :func:`legend_below`) and the text of an estimate with its interval (:func:`with_ci`,
:func:`ci_text`, :func:`estimate_text`)."""
from __future__ import annotations

import math

import plotly.graph_objects as go

from core.measurement.stats import Estimate, is_zero_width

ARCH_COLOURS = {"ffnn": "#1f77b4", "rnn": "#d62728"}
ATTACK_DASH = {"shadow": "solid", "loss_threshold": "dash", "entropy_threshold": "dot", "prmia": "dashdot",
               "bleu_feature": "longdash", "lira": "longdashdot", "lira_online": "longdashdot", "rmia": "longdashdot"}


#: legend below the plot, under the x-axis title, in the figure's own margin: it never covers
#: the axes, however many entries it has (the margin grows with the number of rows)
LEGEND_ROW_PX = 22
AXIS_TITLE_PX = 62
#: the side margins a figure starts with: about what its tick labels and axis titles take. Plotly's
#: automargin only ever widens a margin, each widening redrawing the figure: wide enough, it is drawn once
LEFT_PX, RIGHT_PX, RIGHT_AXIS_PX = 72, 20, 66


def legend_rows(fig: go.Figure, per_row: int = 2) -> int:
    shown = [t for t in fig.data if t.showlegend is not False and t.name]
    return max(1, math.ceil(len(shown) / per_row)) if shown else 0


#: the longest legend name two entries a row hold in a half-width column at 1280 px: beyond it, one entry a row
TWO_A_ROW_CHARS = 20


def layout(fig: go.Figure, title: str, x: str, y: str, height: int = 420, per_row: int = 2) -> go.Figure:
    names = [t.name for t in fig.data if t.showlegend is not False and t.name]
    if per_row > 1 and names and max(len(n) for n in names) > TWO_A_ROW_CHARS:
        per_row = 1
    rows = legend_rows(fig, per_row)
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


def with_ci(e: Estimate | None, digits: int = 3) -> str:
    """``mean [ci_low, ci_high]`` of an estimate (the mean alone when N = 1; "—" without one or without a mean:
    :meth:`Estimate.from_dict` reads a JSON null mean as NaN)."""
    if e is None or not math.isfinite(e.mean):
        return "—"
    if e.ci_low is None or e.ci_high is None:
        return f"{e.mean:.{digits}f} (N = 1)"
    if is_zero_width(e.ci_low, e.ci_high, e.mean):  # every repeat equal: no spread, not certainty
        n = f" in N = {e.n}" if e.n else ""
        return f"{e.mean:.{digits}f} (no spread{n})"
    return f"{e.mean:.{digits}f} [{e.ci_low:.{digits}f}, {e.ci_high:.{digits}f}]"


def ci_text(value: float | None, low: float | None, high: float | None, digits: int = 3) -> str:
    """``value [low, high]``; ``—`` without a value, the value alone without both ends."""
    if value is None:
        return "—"
    if low is None or high is None:
        return f"{value:.{digits}f}"
    if is_zero_width(low, high, value):  # every value equal: no spread to show, not certainty
        return f"{value:.{digits}f} (no spread)"
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def finite(x: float | None) -> float | None:
    """``x``, or None where it is not a finite number (as :meth:`Estimate.to_dict` writes it)."""
    return None if x is None or not math.isfinite(x) else float(x)


def estimate_text(e: Estimate | None, digits: int = 3) -> str:
    """:func:`ci_text` of an estimate, its non-finite parts read as missing (as the JSON has them)."""
    return "—" if e is None else ci_text(finite(e.mean), finite(e.ci_low), finite(e.ci_high), digits)


#: the right margin a legend beside the plot takes (its entries' names wrap no further than this)
LEGEND_BESIDE_PX = 230


def legend_beside(fig: go.Figure, height: int = 420) -> go.Figure:
    """The legend in a column right of the plot, inside the figure (a wide figure with many entries: below the plot
    they pushed it a screen down); the figure keeps ``height``, and entries beyond it scroll in the legend."""
    fig.update_layout(height=height, margin=dict(l=LEFT_PX, r=LEGEND_BESIDE_PX, t=50, b=AXIS_TITLE_PX),
                      legend=dict(orientation="v", yref="paper", y=1, yanchor="top", xref="paper", x=1.02,
                                  xanchor="left", entrywidth=0, entrywidthmode="pixels", font=dict(size=11),
                                  itemclick="toggle", itemdoubleclick="toggleothers"))
    return fig


def legend_below(fig: go.Figure, height: int = 520, bottom: int = AXIS_TITLE_PX + 2 * LEGEND_ROW_PX) -> go.Figure:
    """The legend under the plot; ``bottom``: the margin it starts with (LEFT_PX: room enough, drawn once)."""
    fig.update_layout(height=height, margin=dict(l=LEFT_PX, r=RIGHT_PX, t=60, b=bottom),
                      legend=dict(orientation="h", yanchor="top", y=-0.14, xanchor="left", x=0))
    return fig
