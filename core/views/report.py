"""The project's one report builder: every HTML (and CSV) file the app and the CLI write.

* **The analyses**: one CSV and one self-contained HTML (plotly inlined, so it opens offline) per analysis,
  plus ``analyses.json`` (:func:`write_analyses`), and one HTML page of them all (:func:`html_report`).
* **The run report** (:func:`run_report_html`): one self-contained HTML page of a run, FFNN and RNN side by
  side, with the sections of :func:`core.views.run_view.run_view` that the Train & attack page draws;
  :func:`run_report` builds it from cached runs only. This module decides only how a block looks in HTML.
"""
from __future__ import annotations

import datetime as _dt
import html
import json
import re
from pathlib import Path
from typing import Any, Callable, Mapping, cast

import pandas as pd
import plotly.graph_objects as go

from core.analyses import registry as analysis_registry
from core.analyses.analyses_json import AnalysesResults
from core.analyses.analyses_view import cached_runs
from core.analyses.analysis_results import AuditView, ReportViews
from core.analyses.comparison_results import ComparisonResult
from core.analyses.record_views import report_views
from core.analyses.repeats import cached_repeat_configs, comparison_json
from core.analyses.verdicts import repeated_verdict_sentence
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import cached_run
from core.experiment.results import RunSummary
from core.foundations.config import ExperimentConfig
from core.foundations.errors import ConfigError
from core.foundations.fileio import write_json_atomically, write_text_atomically
from core.foundations.names import ARCH_NAMES
from core.foundations.version import stamped
from core.tasks.navigation import MapViews
from core.views import analysis_figures, run_view  # noqa: F401 (analysis_figures registers the figure builders)
from core.views.analysis_tables import tables
from core.views.plain import csv_text, protect_escapes, unescape_to_html
from core.views.record_view_figures import audit_guesses_figure
from core.views.repeat_figures import MatchedView, RepeatsView


def figures_of(results: Mapping[str, Any]) -> dict[str, go.Figure]:
    """One figure per analysis present in ``results`` (name → its data typed, as
    :func:`core.analyses.registry.read_results` reads ``analyses.json``'s): its registered ``figure`` builder on its
    data (and the audit's guesses beside its bounds)."""
    out: dict[str, go.Figure] = {a.name: cast("Callable[[Any], Any]", analysis_registry.figure_of(a))(results[a.name])
                                 for a in analysis_registry.registered()
                                 if a.name in results and analysis_registry.figure_of(a) is not None}
    audits: Mapping[str, AuditView] = results.get("audit") or {}
    if audits:  # every audit view carries its estimators
        out["audit_guesses"] = audit_guesses_figure(audits)
    return out


def write_analyses(results: AnalysesResults, folder: str | Path) -> list[Path]:
    """``<name>.csv`` and ``<name>.html`` per analysis (drawn from its data read typed once,
    :func:`core.analyses.registry.read_results`) and ``analyses.json`` (``results.to_dict()``), each written atomically
    and only as a regular file (a link or device planted in the folder is refused, never written
    through: :mod:`core.foundations.fileio`); returns the paths."""
    folder = Path(folder)
    written = []
    typed = analysis_registry.read_results(results.analyses)
    for name, df in tables(typed).items():
        path = folder / f"{name}.csv"
        write_text_atomically(path, csv_text(df))  # a user's names: never a spreadsheet formula
        written.append(path)
    for name, fig in figures_of(typed).items():
        path = folder / f"{name}.html"
        write_text_atomically(path, fig.to_html(include_plotlyjs=True, full_html=True))  # inlined: opens offline
        written.append(path)
    path = folder / "analyses.json"
    write_json_atomically(path, stamped(results.to_dict(), "analyses"))
    written.append(path)
    return written


def html_report(typed: AnalysesResults, configs: dict[str, dict], title: str) -> str:
    """One self-contained HTML page: the configs, the computed verdicts (and, where ``typed``
    holds ``repeats``, the verdicts over the paired repeats of :func:`core.analyses.verdicts.repeated_verdicts`
    with their intervals and N) and every figure (each analysis' data read typed once,
    :func:`core.analyses.registry.read_results`; plotly's script inlined once, so the file opens offline)."""
    parts = [f"<h1>{html.escape(title)}</h1>", "<h2>Verdicts (computed from this run)</h2><ul>"]
    for name, v in (typed.verdicts or {}).items():
        # one run: a comparison is "inconclusive (one repeat)" in its text; the word is the verdict's own
        parts.append(f"<li><b>{html.escape(name.replace('_', ' '))}</b>: {html.escape(v.value)} — "
                     f"{html.escape(v.text)}</li>")
    parts.append("</ul>")
    repeated = typed.repeats
    if repeated is not None and repeated.verdicts:  # verdicts.repeated_verdicts: the paired FFNN − RNN over the repeats
        parts.append(f"<h2>Verdicts over {repeated.n} paired repeats</h2><p>Repeat r of FFNN and RNN on one "
                     "split; 95 % t interval of the paired difference; <i>holds</i> or <i>reversed</i> only where it excludes 0 "
                     "and the exact sign-flip test agrees, else <i>inconclusive</i>.</p><ul>")
        for key, rv in repeated.verdicts.items():
            line = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html.escape(repeated_verdict_sentence(rv)))
            parts.append(f"<li><b>{html.escape(key.replace('_', ' '))}</b> ({html.escape(rv.analysis)}): {line}</li>")
        parts.append("</ul>")
        if repeated.missing:
            parts.append("<p>" + html.escape("; ".join(map(str, repeated.missing.values()))) + "</p>")
    for i, (name, fig) in enumerate(figures_of(analysis_registry.read_results(typed.analyses)).items()):
        parts.append(f"<h2>{html.escape(name)}</h2>")
        parts.append(fig.to_html(include_plotlyjs=(i == 0), full_html=False))
    parts.append("<h2>Configs</h2><pre>" + html.escape(json.dumps(configs, indent=2)) + "</pre>")
    body = "\n".join(parts)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>body{{font-family:sans-serif;max-width:1200px;margin:auto}}</style></head><body>{body}</body></html>")


# ---------------------------------------------------------------------------- the run report
_CSS = """
body { font-family: -apple-system, Segoe UI, Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; padding: 0 1em; }
h1 { margin-bottom: 0.2em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table.df { border-collapse: collapse; font-size: 0.9em; margin: 0.5em 0; }
table.df th, table.df td { border: 1px solid #ddd; padding: 4px 8px; text-align: right; }
table.df th { background: #f4f4f4; }
.grid { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
.muted { color: #666; font-size: 0.9em; }
.info { background: #eef5fc; padding: 0.6em; border-radius: 4px; }
"""


def _table(df: pd.DataFrame, precision: int = 3) -> str:
    return df.to_html(index=False, classes="df", float_format=lambda v: f"{v:.{precision}f}", border=0, na_rep="—")


def markdown_html(text: str) -> str:
    """The Markdown a section's text uses (bold, italics, code, line breaks) as escaped HTML; a backslash-escaped
    character (a user's string, :func:`core.views.plain.plain_markdown`) is that character, never markup."""
    out = html.escape(protect_escapes(text))
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    out = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<i>\1</i>", out)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return unescape_to_html(out.replace("  \n", "<br>").replace("\n", "<br>"))


def block_html(block: run_view.Block, fig_html: Callable[[go.Figure], str]) -> str:
    """One block of a run's view (:mod:`core.views.run_view`) as HTML (``fig_html`` inlines plotly.js once)."""
    if isinstance(block, run_view.Text):
        text = markdown_html(block.text)
        return {"subheading": f"<h3>{text}</h3>", "caption": f"<p class='muted'>{text}</p>",
                "warning": f"<p><b>Warning:</b> {text}</p>", "info": f"<p class='info'>{text}</p>"}.get(
                    block.style, f"<p>{text}</p>")
    if isinstance(block, run_view.Table):
        return _table(block.frame, block.precision)
    if isinstance(block, run_view.Figure):
        caption = f"<p class='muted'>{markdown_html(block.caption)}</p>" if block.caption else ""
        return f"<div>{fig_html(block.figure)}{caption}</div>"
    if isinstance(block, run_view.Image):
        return (f"<figure><img alt='{html.escape(block.caption, quote=True)}' src='data:image/png;base64,"
                f"{html.escape(block.png_base64, quote=True)}'><figcaption>{html.escape(block.caption)}</figcaption>"
                "</figure>")
    if isinstance(block, run_view.Row):
        return ("<div class='grid'>" + "".join(block_html(b, fig_html) for b in block.items)
                + "<div></div>" * (len(block.items) < 2) + "</div>")
    if isinstance(block, run_view.Html):
        return block.html
    if isinstance(block, run_view.Code):
        return f"<pre>{html.escape(block.text)}</pre>"
    if isinstance(block, run_view.Details):
        return f"<h3>{html.escape(block.title)}</h3>" + "".join(block_html(b, fig_html) for b in block.blocks)
    raise TypeError(f"no HTML for a {type(block).__name__} block")


def run_report_html(summaries: list[RunSummary], configs: list[ExperimentConfig] | None = None,
                    overrides: dict[str, dict[str, Any]] | None = None,
                    map_views: dict[str, MapViews] | None = None, repeats: RepeatsView | None = None,
                    matched: MatchedView | None = None, views: ReportViews | None = None) -> str:
    """One self-contained HTML file of a run: every section of :func:`core.views.run_view.run_view`, in the page's
    order, plotly.js embedded once so it opens offline. ``repeats``: the repeats view (its ``comparison`` or
    ``blocks``); ``matched``: the matched-utility view; ``map_views``: crisp navigation maps instead of the summaries'
    PNGs; ``views``: the per-record views (:func:`core.analyses.record_views.report_views`)."""
    first = [True]

    def fig_html(fig: go.Figure) -> str:
        out = fig.to_html(full_html=False, include_plotlyjs=first[0], config={"displaylogo": False})
        first[0] = False
        return out

    task = summaries[0].task
    archs = ", ".join(ARCH_NAMES.get(s.arch, s.arch) for s in summaries)
    when = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>MIA Explorer report: {html.escape(task)} ({html.escape(archs)})</title><style>{_CSS}</style></head><body>",
        f"<h1>MIA Explorer — {html.escape(task)}: {html.escape(archs)}</h1>",
        f"<p class='muted'>Report written {when}. Every number comes from the cached run summaries below "
        "(the same JSON that <code>python -m core run</code> writes).</p>"]
    view = run_view.run_view(run_view.RunInputs(summaries, configs, overrides or {}, map_views, repeats, matched, views))
    for section in view:
        parts.append(f"<h2>{html.escape(section.heading)}</h2>")
        parts += [block_html(b, fig_html) for b in section.blocks]
    parts.append("</body></html>")
    return "\n".join(parts)


def cached_comparison(configs: dict[str, ExperimentConfig], cache: ArtifactCache | None = None
                      ) -> RepeatsView | None:
    """The comparison over every repeat cached for both architectures (with the one answer,
    :func:`core.analyses.repeats.comparison_json`, read typed here), as the report's repeats view; None below two
    repeats."""
    cached = {a: cached_repeat_configs(c, cache=cache) for a, c in configs.items()}
    n = min(len(v) for v in cached.values())
    if n < 2:
        return None
    runs_ = {a: [cast(RunSummary, cached_run(c, cache)) for c in v[:n]] for a, v in cached.items()}  # cached
    return RepeatsView(comparison=ComparisonResult.from_dict(comparison_json(runs_["ffnn"], runs_["rnn"])))


def run_report(configs: dict[str, ExperimentConfig], cache: ArtifactCache | None = None,
               overrides: dict[str, dict[str, Any]] | None = None, map_views: dict[str, MapViews] | None = None,
               repeats: RepeatsView | None = None, matched: MatchedView | None = None,
               budget: bool = True, summaries: dict[str, RunSummary] | None = None) -> str:
    """The run report of ``configs`` (arch → config) from the cache, as :func:`run_report_html`: their summaries
    (``summaries`` where the caller holds them; not cached: :class:`ConfigError`) and the per-record views the
    cached runs allow (``budget``: include the reference budget, which refits LiRA and RMIA per subset)."""
    cache = cache or ArtifactCache()
    summaries = summaries if summaries is not None else cached_runs(configs, cache, ConfigError)
    if repeats is None and set(configs) == {"ffnn", "rnn"}:
        repeats = cached_comparison(configs, cache)
    views = report_views(configs, summaries, cache, budget=budget)
    return run_report_html(list(summaries.values()), list(configs.values()), overrides, map_views, repeats, matched,
                           views)
