"""The HTML report of a scores file ("Just the scores" on the Your model page): one self-contained page, built from
:class:`core.analyses.scores.ScoresResult` alone, plotly's script inlined once so the file opens offline. Kept
apart from :mod:`core.views.report` (which loads torch): ``python -m core score`` never imports torch.
"""
from __future__ import annotations

import datetime as _dt
import html
import json
import math

import plotly.graph_objects as go

from core.analyses.scores import ScoresResult
from core.views.style import ci_text, estimate_text

_CSS = """
body { font-family: -apple-system, Segoe UI, Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; padding: 0 1em; }
h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: right; } th { background: #f4f4f4; }
td:first-child, th:first-child { text-align: left; } .muted { color: #666; font-size: 0.9em; }
"""
#: a colour per attack (the same attack, the same colour, on every page)
COLOURS = {"loss": "#1f77b4", "entropy": "#2ca02c", "lira_offline": "#d62728", "lira_online": "#9467bd",
           "rmia": "#ff7f0e"}


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def roc_loglog_figure(result: ScoresResult) -> go.Figure:
    """Every attack's ROC on log-log axes with its pointwise 95 % bootstrap band; FPR or TPR 0 is
    drawn at the floor 1/(2·non-members), the lowest rate the records can show."""
    floor = 0.5 / max(result.n_nonmembers, 1)
    lo_exp = math.floor(math.log10(floor))
    fig = go.Figure()
    for a in result.attacks:
        colour = COLOURS.get(a.name, "#444")
        band = a.roc_band
        keep = [i for i, f in enumerate(band.fpr) if f > 0]
        fpr = [band.fpr[i] for i in keep]
        fig.add_scatter(x=fpr + fpr[::-1], y=[max(band.hi[i], floor) for i in keep] + [max(band.lo[i], floor)
                                                                                       for i in keep][::-1],
                        fill="toself", fillcolor=colour, opacity=0.15, line=dict(width=0), hoverinfo="skip",
                        showlegend=False, name=f"{a.name} 95 % band")
        fig.add_scatter(x=[max(v, floor) for v in a.roc_fpr], y=[max(v, floor) for v in a.roc_tpr], mode="lines",
                        line=dict(color=colour, width=2), name=f"{a.name} · AUC {estimate_text(a.auc)}")
    diagonal = [10 ** (lo_exp + (-lo_exp) * i / 50) for i in range(51)]
    fig.add_scatter(x=diagonal, y=diagonal, mode="lines", line=dict(color="grey", dash="dot"), name="chance (TPR = FPR)")
    ticks = [10.0 ** k for k in range(lo_exp, 1)]
    text = [f"{100 * t:g}%" for t in ticks]
    fig.update_xaxes(type="log", range=[lo_exp, 0], tickvals=ticks, ticktext=text, title="false positive rate")
    fig.update_yaxes(type="log", range=[lo_exp, 0], tickvals=ticks, ticktext=text, title="true positive rate")
    fig.update_layout(title="ROC on log-log axes, 95 % bootstrap bands", height=560, template="plotly_white",
                      legend=dict(orientation="h", y=-0.2))
    return fig


def scores_report_html(result: ScoresResult) -> str:
    """The whole page (module docstring)."""
    when = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>MIA Explorer: scores of {html.escape(result.source)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Membership inference from scores: {html.escape(result.source)}</h1>",
        f"<p class='muted'>Written {when} by <code>python -m core score</code>. {result.n_records} records "
        f"({result.n_members} members, {result.n_nonmembers} non-members); columns: "
        f"{html.escape(', '.join(result.columns))}. No model was run: every number comes from the file.</p>",
        "<h2>Findings</h2><ul>",
    ]
    for a in result.attacks:
        parts.append(f"<li><b>{html.escape(a.name)}</b>: <b>{html.escape(a.finding)}</b> — {html.escape(a.reason)}</li>")
    parts.append("</ul><p class='muted'>A finding needs its interval: <i>leak</i> when the AUC's 95 % interval lies "
                 "above 0.5, <i>inconclusive</i> when it contains 0.5.</p>")
    rows = []
    for a in result.attacks:
        tprs = "; ".join(f"{r.label}: {estimate_text(r.estimate)}" + (f" ({r.verdict})" if r.verdict else " (no verdict)")
                         for r in a.low_fpr)
        rows.append([a.name, estimate_text(a.auc), tprs, estimate_text(a.advantage), f"{a.epsilon.lower_bound:.3f}", str(a.auc.n)])
    parts += ["<h2>Attacks</h2>",
              _table(["attack", "AUC [95 % CI]", "TPR at low FPR [95 % CI]", "advantage TPR − FPR (cross-fitted)",
                      "ε̂ (95 % lower bound)", "N"], rows),
              "<ul class='muted'>" + "".join(f"<li><b>{html.escape(a.name)}</b>: {html.escape(a.description)}</li>"
                                              for a in result.attacks) + "</ul>"]
    if result.comparisons:
        parts += ["<h2>Reference attacks against the loss threshold</h2>",
                  _table(["difference", "AUC difference [95 % CI]", "N", "verdict"],
                         [[f"{c.a} - {c.b}", estimate_text(c.difference), str(c.difference.n), c.verdict]
                          for c in result.comparisons]),
                  "<p class='muted'>Paired: both attacks on the same resampled records.</p>"]
    parts += ["<h2>ROC</h2>", roc_loglog_figure(result).to_html(full_html=False, include_plotlyjs=True,
                                                                 config={"displaylogo": False})]
    if result.slices:
        rows = [[attack, s.slicing, s.slice, str(s.n_members), str(s.n_non_members),
                 "too few to read" if s.too_small else "", ci_text(s.auc, s.auc_low, s.auc_high),
                 ci_text(s.tpr_at_1pct, s.tpr_low, s.tpr_high)]
                for attack, s in result.slices]
        parts += ["<h2>Slices</h2>", _table(["attack", "slicing", "slice", "members", "non-members", "", "AUC [95 % CI]",
                                             "TPR at 1 % FPR [95 % CI]"], rows)]
    if result.notes:
        parts += ["<h2>Notes</h2><ul>"] + [f"<li>{html.escape(n)}</li>" for n in result.notes] + ["</ul>"]
    parts += ["<h2>Method</h2><pre>" + html.escape(json.dumps(result.method, indent=2, ensure_ascii=False)) + "</pre>",
              "</body></html>"]
    return "\n".join(parts)
