"""The project's one report builder: every HTML (and CSV) file the app and the CLI write.

* **The analyses**: one CSV (the data) and one self-contained HTML (the figure, plotly inlined so
  it opens offline) per analysis, plus ``analyses.json`` with everything and the verdicts
  (``python -m core analyze``, the Analyses page's downloads), and one HTML page of them all
  (:func:`html_report`, the Analyses page's export).
* **The run report** (:func:`run_report_html`): one self-contained HTML page of a run, FFNN and
  RNN side by side — overview, attacks table, ROC curves, examples, repeats and matched-utility
  sections where given, and issue 22's per-record views (exposure quadrants, the reference
  budget, slices; :func:`core.analyses.record_views.report_views`) — the Train & attack page's download
  and ``python -m core report`` (:func:`run_report`, which reads cached runs only) write the same
  page. Figures come from the figure modules of :mod:`core.views`, nothing here draws with Streamlit.
"""
from __future__ import annotations

import datetime as _dt
import html
import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from core.views import analysis_figures
from core.views.comparison_tables import matched_utility_table, shadow_fidelity_table, strongest_attacks_table
from core.views.map_figures import navigation_map
from core.views.record_view_figures import (audit_guesses_figure, budget_figure, exposure_figure, quadrant_names,
                                            slices_figure)
from core.views.repeat_figures import (METRIC_NAMES, VERDICT_MARKS, comparison_table, matched_stops_table, p_text,
                                       repeats_table, roc_band_figure)
from core.views.run_figures import (attack_accuracy_curve, comparison_resolution_note, entropy_comparison,
                                    metrics_table, overview_table, param_gap, resolution_note, roc_curves, roc_loglog,
                                    steps_curves, utility_curves)
from core.views.analysis_tables import tables
from core.views.style import with_ci
from core.measurement.exposure import fpr_label
from core.measurement.stats import is_zero_width
from core.analyses import registry as analysis_registry
from core.analyses.verdicts import repeated_verdict_sentence
from core.analyses.registry import resolve
from core.experiment.cache import ArtifactCache
from core.foundations.config import ExperimentConfig
from core.foundations.errors import ConfigError
from core.experiment.fidelity import confounding_warnings, matched_utility, study_comparison
from core.foundations.fileio import write_json_atomically, write_text_atomically
from core.foundations.names import ARCH_NAMES, ATTACK_NAMES
from core.experiment.pipeline import cached_summary
from core.analyses.record_views import report_views


def scatter_figure(scatter: dict[str, Any], attack: str | None = None) -> go.Figure:
    """The entropy scatter's figure for ``attack`` (default: the shadow-model attack, else the first)."""
    first = next(iter(scatter.values()))
    name = attack or ("shadow" if "shadow" in first["attacks"] else next(iter(first["attacks"])))
    return analysis_figures.scatter_figure(scatter, name)


def figures_of(results: dict[str, Any]) -> dict[str, go.Figure]:
    """One figure per analysis present in ``results``: its registered ``figure`` builder on its data
    (and the audit's guesses beside its bounds)."""
    out: dict[str, go.Figure] = {a.name: resolve(a.figure)(results[a.name]) for a in analysis_registry.registered()
                                 if a.name in results and a.figure is not None}
    if any(v.get("estimators") for v in results.get("audit", {}).values()):
        out["audit_guesses"] = audit_guesses_figure(results["audit"])
    return out


def write_analyses(results: dict[str, Any], folder: str | Path) -> list[Path]:
    """``<name>.csv`` and ``<name>.html`` per analysis and ``analyses.json``, each written atomically
    and only as a regular file (a link or device planted in the folder is refused, never written
    through: :mod:`core.foundations.fileio`); returns the paths."""
    folder = Path(folder)
    written = []
    for name, df in tables(results).items():
        path = folder / f"{name}.csv"
        write_text_atomically(path, df.to_csv(index=False))
        written.append(path)
    for name, fig in figures_of(results).items():
        path = folder / f"{name}.html"
        write_text_atomically(path, fig.to_html(include_plotlyjs=True, full_html=True))  # inlined: opens offline
        written.append(path)
    path = folder / "analyses.json"
    write_json_atomically(path, results)
    written.append(path)
    return written


def html_report(results: dict[str, Any], configs: dict[str, dict], title: str) -> str:
    """One self-contained HTML page: the configs, the computed verdicts (and, where ``results``
    holds ``repeats``, the verdicts over the paired repeats of :func:`core.analyses.verdicts.repeated_verdicts`
    with their intervals and N) and every figure (plotly's script inlined once, so the file opens
    offline)."""
    parts = [f"<h1>{html.escape(title)}</h1>", "<h2>Verdicts (computed from this run)</h2><ul>"]
    for name, v in results.get("verdicts", {}).items():
        # one run: a comparison is "inconclusive (one repeat)" in its text; the word is the verdict's own
        parts.append(f"<li><b>{html.escape(name.replace('_', ' '))}</b>: {html.escape(str(v['value']))} — "
                     f"{html.escape(v['text'])}</li>")
    parts.append("</ul>")
    repeated = results.get("repeats") or {}
    if repeated.get("verdicts"):  # verdicts.repeated_verdicts: the paired FFNN − RNN over the cached repeats
        parts.append(f"<h2>Verdicts over {int(repeated['n'])} paired repeats</h2><p>Repeat r of FFNN and RNN on one "
                     "split; 95 % t interval of the paired difference; <i>holds</i> or <i>reversed</i> only where it excludes 0 "
                     "and the exact sign-flip test agrees, else <i>inconclusive</i>.</p><ul>")
        for key, v in repeated["verdicts"].items():
            line = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html.escape(repeated_verdict_sentence(v)))
            parts.append(f"<li><b>{html.escape(key.replace('_', ' '))}</b> ({html.escape(str(v.get('analysis', '')))}): "
                         f"{line}</li>")
        parts.append("</ul>")
        if repeated.get("missing"):
            parts.append("<p>" + html.escape("; ".join(map(str, repeated["missing"].values()))) + "</p>")
    for i, (name, fig) in enumerate(figures_of(results).items()):
        parts.append(f"<h2>{html.escape(name)}</h2>")
        parts.append(fig.to_html(include_plotlyjs=(i == 0), full_html=False))
    parts.append("<h2>Configs</h2><pre>" + html.escape(json.dumps(configs, indent=2)) + "</pre>")
    body = "\n".join(parts)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>body{{font-family:sans-serif;max-width:1200px;margin:auto}}</style></head><body>{body}</body></html>")


# ---------------------------------------------------------------------------- the run report
def run_figures(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Every figure and table of a run's results, from the summaries alone (the Train & attack page
    draws these; the run report writes them)."""
    return {
        "overview": overview_table(summaries),
        "utility": utility_curves(summaries),
        "attack_by_epoch": attack_accuracy_curve(summaries),
        "steps": steps_curves(summaries),
        "metrics": metrics_table(summaries),
        "roc": roc_curves(summaries),
        "roc_loglog": roc_loglog(summaries),
        "strongest": strongest_attacks_table(summaries),
        "fidelity": shadow_fidelity_table(summaries),
        "matched": matched_utility_table(matched_utility(summaries)),
        "entropy": entropy_comparison(summaries),
    }


def reproduce_commands(configs: list[ExperimentConfig], overrides: dict[str, dict[str, Any]]) -> list[str]:
    """The CLI commands that produce each run (``overrides``: arch → the ``--set`` fields)."""
    cmds = []
    for c in configs:
        sets = " ".join(f"--set {k}={','.join(map(str, v)) if isinstance(v, tuple) else v}"
                        for k, v in overrides.get(c.arch, {}).items())
        cmds.append(f"python -m core run --task {c.task} --arch {c.arch} --preset {c.preset} {sets} --out {c.arch}.json"
                    .replace("  ", " "))
    return cmds


def _verdict_line(name: str, m: dict[str, Any], title: str) -> str:
    v, d = m["verdict"], m["difference"]
    dz = f", d_z = {d['effect_size']:.2f}" if d.get("effect_size") is not None else ""
    return (f"**{title}**: {VERDICT_MARKS[v['value']]} — FFNN − RNN {with_ci(d['diff'])}{dz}, "
            f"p (paired t) {p_text(d.get('p_t'))}, p (sign flip) {p_text(d.get('p_permutation'))}, N = {v['n']}")


def verdict_lines(comparison: dict[str, Any], metrics: tuple[str, ...] = ("attack_accuracy", "attack_auc", "lira_auc")
                  ) -> list[str]:
    """The headline of a comparison in markdown: the **primary** metric's verdict (effect, CI, p, N)
    and why it is primary, then one line with the secondary metrics' verdicts and Holm-adjusted
    p-values, then what gets no verdict. A comparison written before roles (no ``primary`` key)
    gets one line per metric of ``metrics``, as then."""
    if "primary" not in comparison:
        return [_verdict_line(n, comparison["metrics"][n], METRIC_NAMES.get(n, n))
                for n in metrics if (comparison["metrics"].get(n) or {}).get("verdict")]
    metrics_ = comparison["metrics"]
    lines = []
    primary = comparison.get("primary")
    if primary and metrics_.get(primary["metric"], {}).get("verdict"):
        lines.append(_verdict_line(primary["metric"], metrics_[primary["metric"]], f"Primary — {primary['label']}")
                     + f" — primary: {primary['why']}")
    secondary = [n for n in comparison.get("secondary", {}).get("metrics", []) if metrics_.get(n, {}).get("verdict")]
    if secondary:
        parts = [f"{metrics_[n]['label']} {metrics_[n]['verdict']['value']} (Holm p "
                 f"{p_text((metrics_[n].get('p_holm') or {}).get('p_permutation'))})" for n in secondary]
        lines.append(f"Secondary, sign-flip p Holm-adjusted over {len(secondary)}: " + "; ".join(parts))
    no = comparison.get("no_verdict") or {}
    dup = [f"{metrics_[n]['label']} ({why})" for n, why in no.items() if metrics_[n].get("role") == "duplicate"]
    fine = [n for n in no if metrics_[n].get("role") == "unresolved"]
    if fine:  # the same number under each name: said once
        dup.append(" and ".join(METRIC_NAMES.get(n, n) for n in fine) + f": {metrics_[fine[0]]['label']}, a "
                   "rate finer than the data")
    if dup:
        lines.append("No verdict: " + "; ".join(dup))
    return lines


SMALL_N_NOTE = ("Intervals are 95 % Student-t intervals over repeats (seeds: split, initialisation, batch order); "
                "the difference is paired by repeat (same seed, same split for both architectures). **holds**: the "
                "interval of FFNN − RNN lies below 0 (the RNN leaks more, as in the studies) and the exact sign-flip "
                "test agrees; **reversed**: both say above 0; **inconclusive**: otherwise. With N = 3 the t interval "
                "is wide (t₂ = 4.30) and the sign-flip test cannot go below p = 0.25; N ≥ 6 reaches 0.031. One "
                "**primary** metric, declared before any number is read (LiRA AUC where LiRA ran, else RMIA AUC, else "
                "the shadow attack's AUC), carries the headline verdict; the other leakage metrics are secondary, "
                "their p-values Holm-adjusted over that family. Advantage (= 2·accuracy − 1 on a balanced set) and a "
                "TPR at an FPR below 1/non-members (the TPR at 0 false positives) are shown without a verdict.")

MATCHED_NOTE = ("Each architecture's victim and shadows train until the victim's validation utility first reaches the "
                "target, then stop (the shadows stop at the victim's epoch: the attacker copies its recipe). The full "
                "runs above are kept; the post-hoc matched view compares checkpoints of them.")


def _token_html(tokens: list[str], probs: list[float]) -> str:
    """Reference tokens shaded by the probability the model gave them (green = confident)."""
    spans = []
    for tok, p in zip(tokens, probs):
        alpha = 0.15 + 0.75 * float(p)
        spans.append(f'<span title="p={p:.3f}" style="background: rgba(46,160,67,{alpha:.2f}); padding:1px 3px; '
                     f'border-radius:3px; margin-right:2px">{html.escape(tok)}</span>')
    return " ".join(spans)


def translation_html(examples: dict[str, Any], arch_name: str) -> str:
    """The translation examples of one architecture as HTML (the page and the report use it)."""
    parts = []
    for group, title in ((True, "Members (in the victim's training set)"), (False, "Non-members")):
        parts.append(f"<p><b>{html.escape(arch_name)} — {title}</b></p>")
        for ex in [e for e in examples.get("sentences", []) if bool(e.get("member")) == group]:
            tokens = ex.get("tokens", [])
            mean_p = sum(t["prob"] for t in tokens) / max(len(tokens), 1)
            parts.append(
                f"<p><small>source:</small> {html.escape(ex.get('source', ''))}<br>"
                f"<small>victim's translation (sentence BLEU {ex.get('sentence_bleu', 0):.0f}):</small> "
                f"{html.escape(ex.get('translation', ''))}<br>"
                f"<small>reference, each token shaded by the probability the victim gives it "
                f"(mean {mean_p:.2f}):</small> "
                f"{_token_html([t['token'] for t in tokens], [t['prob'] for t in tokens])}</p>")
    return "\n".join(parts)


def navigation_stats(examples: dict[str, Any], arch_name: str) -> str:
    """One Markdown line: steps, return and success on member vs unseen maps."""
    steps = examples.get("steps_to_goal", {})
    ret = examples.get("return", {})
    success = examples.get("success_rate", {})
    n = examples.get("n_maps", {})
    maps = f" ({n.get('member', '?')} vs {n.get('unseen', '?')} maps)" if n else ""
    return (f"**{arch_name}**{maps} — mean steps to goal: member maps **{steps.get('member', float('nan')):.1f}**, "
            f"unseen maps **{steps.get('unseen', float('nan')):.1f}** · mean return {ret.get('member', 0):.3f} vs "
            f"{ret.get('unseen', 0):.3f} · goal reached {success.get('member', 0):.0%} vs {success.get('unseen', 0):.0%}")


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
"""


def _timings(summary: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:.1f}" for k, v in summary.get("timings", {}).items() if isinstance(v, (int, float)))


def _table(df: pd.DataFrame) -> str:
    return df.to_html(index=False, classes="df", float_format=lambda v: f"{v:.3f}", border=0, na_rep="—")


def _md(text: str) -> str:
    """A Markdown line as HTML text (the bold marks dropped, the rest escaped)."""
    return html.escape(text.replace("**", ""))


def repeats_html(view: dict[str, Any]) -> list[str]:
    """The repeats section of the run report (``view``: ``comparison`` = :func:`core.analyses.repeats.comparison_json`,
    or ``blocks`` = arch → :func:`core.analyses.repeats.repeats_block`)."""
    if "comparison" in view:
        comp = view["comparison"]
        note = comparison_resolution_note(comp)
        return [f"<h2>FFNN vs RNN over {comp['repeats']} paired repeats</h2>",
                "<p>" + "<br>".join(_md(line) for line in verdict_lines(comp)) + "</p>",
                _table(comparison_table(comp)), f"<p class='muted'>{html.escape(note)}</p>" if note else "",
                f"<p class='muted'>{_md(SMALL_N_NOTE)}</p>"]
    return ["<h2>Over repeats</h2>", _table(repeats_table(view["blocks"])),
            f"<p class='muted'>{_md(SMALL_N_NOTE)}</p>"]


def _ci(value: float | None, low: float | None, high: float | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    if low is None or high is None:
        return f"{value:.{digits}f}"
    if is_zero_width(low, high, value):  # every value equal: no spread to show, not certainty
        return f"{value:.{digits}f} (no spread)"
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def exposure_table(view: dict[str, Any]) -> pd.DataFrame:
    """Per FPR and quadrant of :func:`core.analyses.record_views.exposure_view`: members (share with its 95 %
    Clopper–Pearson interval, and the mean count over repeats where repeats are cached) and the
    non-members in the same quadrant (false alarms)."""
    names = quadrant_names(view["archs"])
    rows = []
    n0 = len(view["membership"]) - sum(view["membership"])
    for fpr, q in view["quadrants"].items():
        label = view.get("fpr_labels", {}).get(fpr) or fpr_label(float(fpr), n0)
        for c in q["members"]:
            rows.append({"FPR": label, "exposed by": names[c["name"]], "members": c["count"], "of": c["n"],
                         "share [95 % CI]": f"{c['share']:.1%} [{c['share_low']:.1%}, {c['share_high']:.1%}]",
                         "repeats": c.get("repeats", 1),
                         "mean count over repeats [95 % CI]": (_ci(c["mean_count"], c["count_low"], c["count_high"], 1)
                                                               if c.get("repeats", 1) > 1 else "—"),
                         "non-members (false alarms)": next(n["count"] for n in q["non_members"]
                                                            if n["name"] == c["name"])})
    return pd.DataFrame(rows)


def budget_table(budgets: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Per architecture, attack and number of references: AUC and TPR at 1 % FPR with their
    2.5–97.5 % spread over which references were used (:func:`core.analyses.record_views.budget_view`)."""
    return pd.DataFrame([
        {"architecture": ARCH_NAMES.get(arch, arch), "attack": ATTACK_NAMES.get(name, name),
         "references": p["n_references"], "of": c["n_available"], "subsets": p["draws"],
         # one subset (all references): no spread to show, not a zero-width interval
         "AUC [spread]": _ci(p["auc"], *((p["auc_low"], p["auc_high"]) if p["draws"] > 1 else (None, None))),
         "TPR @ 1% FPR [spread]": _ci(p["tpr_at_fpr"]["0.01"], *((p["tpr_low"]["0.01"], p["tpr_high"]["0.01"])
                                                                 if p["draws"] > 1 else (None, None)))
         # fewer than 100 non-members cannot resolve 1 %: the number is the TPR at 0 false positives, named so
         + ("" if math.floor(0.01 * c["n_non_members"] + 1e-9) >= 1
            else f" — TPR at 0 false positives (FPR < 1/{c['n_non_members']})"),
         "flattens at": c["flattens_at"] if c["flattens_at"] is not None else "—"}
        for arch, view in budgets.items() for name, c in view["curves"].items() for p in c["points"]])


def slice_tpr_cell(r: dict[str, Any]) -> str:
    """A slice's TPR at 1 % FPR with its interval, or, where its n non-members cannot resolve 1 %
    (``tpr_resolved`` false), the same number named for what it is: the TPR at 0 false positives."""
    cell = _ci(r["tpr_at_1pct"], r["tpr_low"], r["tpr_high"])
    if r.get("tpr_resolved", True) or r["tpr_at_1pct"] is None:
        return cell
    return f"{cell} — TPR at 0 false positives (FPR < 1/{r['n_non_members']})"


def slices_table(view: dict[str, Any]) -> pd.DataFrame:
    """Per architecture, slicing and slice of :func:`core.analyses.record_views.slices_view`: records, AUC and
    TPR at 1 % FPR with their bootstrap 95 % intervals, and whether the slice is too small to read; a
    slice whose non-members cannot resolve 1 % FPR says that its TPR is the TPR at 0 false positives."""
    return pd.DataFrame([
        {"architecture": ARCH_NAMES.get(arch, arch), "slicing": name, "slice": r["slice"], "members": r["n_members"],
         "non-members": r["n_non_members"], "AUC [95 % CI]": _ci(r["auc"], r["auc_low"], r["auc_high"]),
         "TPR @ 1% FPR [95 % CI]": slice_tpr_cell(r),
         "too small": "yes" if r["too_small"] else ""}
        for arch, by in view["archs"].items() for name, rows in by.items() for r in rows])


def record_views_html(views: dict[str, Any], fig_html: Any) -> list[str]:
    """Issue 22's per-record views of a run (:func:`core.analyses.record_views.report_views`): the exposure
    quadrants, the reference budget and the slices, each as its table and figure, and the views that
    the cached runs could not give, with the reason."""
    parts = ["<h2>Per-record views</h2>",
             "<p class='muted'>Computed from the cached runs (per-record scores, the shadows as references); "
             "nothing was trained for them. <code>python -m core analyze --analysis exposure,budget,slices</code> "
             "writes their data as CSV.</p>"]
    if "exposure" in views:
        ex = views["exposure"]
        a, b = ex["archs"]
        parts += [f"<h3>Exposure: the same records under {html.escape(ARCH_NAMES.get(a, a))} and "
                  f"{html.escape(ARCH_NAMES.get(b, b))} ({html.escape(ATTACK_NAMES.get(ex['attack'], ex['attack']))})</h3>",
                  _table(exposure_table(ex)),
                  "<p class='muted'>A member is exposed by an architecture when its score lies above that "
                  "architecture's threshold at the FPR (set on its own non-members). "
                  + (f"Counts over {1 + len(ex['repeat_seeds'])} cached repeats: mean with a 95 % t interval."
                     if ex["repeat_seeds"] else "One repeat cached: no interval over repeats.") + "</p>"]
        parts += [fig_html(exposure_figure(ex, fpr)) for fpr in ex["quadrants"]]
    if "budget" in views:
        parts += ["<h3>The attacker's reference budget</h3>", _table(budget_table(views["budget"])),
                  "<p class='muted'>Offline LiRA and RMIA refitted on subsets of the shadows as references; spread: "
                  "2.5–97.5 % over which references were used; flattens at: the smallest budget within 0.01 AUC of "
                  "all references.</p>", fig_html(budget_figure(views["budget"]))]
    if "slices" in views:
        sl = views["slices"]
        parts += [f"<h3>Vulnerability per slice ({html.escape(ATTACK_NAMES.get(sl['attack'], sl['attack']))})</h3>",
                  _table(slices_table(sl)),
                  f"<p class='muted'>A slice with fewer than {sl['min_records']} members or non-members is marked too "
                  "small: read its interval as inconclusive.</p>"]
        slicings = list(next(iter(sl["archs"].values()))) if sl["archs"] else []
        parts += [fig_html(slices_figure(sl, name)) for name in slicings]
    if views.get("skipped"):
        parts.append("<p class='muted'>Not shown: " + "; ".join(f"{html.escape(k)} — {html.escape(v)}"
                                                                for k, v in views["skipped"].items()) + "</p>")
    return parts


def run_report_html(summaries: list[dict[str, Any]], configs: list[ExperimentConfig] | None = None,
                    overrides: dict[str, dict[str, Any]] | None = None,
                    map_views: dict[str, dict[str, Any]] | None = None, repeats: dict[str, Any] | None = None,
                    matched: dict[str, Any] | None = None, views: dict[str, Any] | None = None) -> str:
    """One self-contained HTML file of a run: config, tables, figures (plotly.js embedded once,
    so it opens offline), examples and how to reproduce it; with ``repeats`` (``comparison`` or
    ``blocks``, as :func:`repeats_html` takes) the means with intervals, paired differences and
    verdicts; with ``matched`` the matched-utility section; with ``map_views`` (arch → the app's
    navigation map views) crisp maps instead of the summary's rendered PNGs; with ``views``
    (:func:`core.analyses.record_views.report_views`) the per-record views."""
    f = run_figures(summaries)
    first = [True]

    def fig_html(fig: go.Figure | None) -> str:
        if fig is None:
            return ""
        out = fig.to_html(full_html=False, include_plotlyjs=first[0], config={"displaylogo": False})
        first[0] = False
        return f"<div>{out}</div>"

    def name(arch: str) -> str:
        return ARCH_NAMES.get(arch, arch)

    task = summaries[0]["task"]
    archs = ", ".join(name(s["arch"]) for s in summaries)
    when = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>MIA Explorer report: {html.escape(task)} ({html.escape(archs)})</title><style>{_CSS}</style></head><body>",
        f"<h1>MIA Explorer — {html.escape(task)}: {html.escape(archs)}</h1>",
        f"<p class='muted'>Report written {when}. Every number comes from the cached run summaries below "
        "(the same JSON that <code>python -m core run</code> writes).</p>",
        "<h2>Overview</h2>",
        _table(f["overview"] if not (repeats and "comparison" in repeats)
               else overview_table(summaries, repeats["comparison"])),
    ]
    gap = param_gap(summaries)
    if gap is not None:
        parts.append(f"<p class='muted'>Parameter counts differ by {gap:.1%}.</p>")
    for warning in confounding_warnings(summaries):
        parts.append(f"<p><b>Warning:</b> {html.escape(warning)}</p>")
    study = study_comparison(summaries)
    if study is not None:
        one = ("inconclusive with one repeat per architecture (the point estimates point "
               + ("the studies' way" if study["holds"] else "the other way") + ")")
        if repeats and "comparison" in repeats:
            n = repeats['comparison']['repeats']
            one = (f"the verdicts over {n} paired repeats follow; the tables and figures after them show repeat 1 of "
                   f"{n}")
        parts.append(f"<p><b>The studies:</b> {html.escape(study['finding'].replace('*', ''))}<br><b>This run:</b> "
                     f"{html.escape(one)} — {html.escape(study['text'])}.</p>")
    if repeats:
        parts += repeats_html(repeats)
        if "comparison" in repeats:
            parts.append(fig_html(roc_band_figure(
                repeats["comparison"]["roc_band"],
                {a: r["n_nonmembers"] for a, r in (repeats["comparison"].get("resolution") or {}).items()})))
    if matched:
        parts += ["<h2>At matched utility (by construction)</h2>", _table(matched_stops_table(matched)),
                  "<p>" + "<br>".join(_md(x) for x in verdict_lines(matched["comparison"])) + "</p>",
                  _table(comparison_table(matched["comparison"])),
                  *([f"<p class='muted'>{html.escape(note)}</p>"]
                    if (note := comparison_resolution_note(matched["comparison"])) else []),
                  f"<p class='muted'>{html.escape(MATCHED_NOTE)}</p>"]
    parts += ["<div class='grid'>", fig_html(f["utility"]), fig_html(f["attack_by_epoch"]), "</div>"]
    if f["steps"] is not None:
        parts.append(fig_html(f["steps"]))
    note = resolution_note(summaries)
    parts += ["<h2>Attacks</h2>", _table(f["metrics"]), f"<p class='muted'>{html.escape(note)}</p>" if note else "",
              "<div class='grid'>", fig_html(f["roc"]), fig_html(f["roc_loglog"]), "</div>",
              "<h3>The strongest attacks (LiRA, RMIA) beside the shadow attack</h3>", _table(f["strongest"]),
              fig_html(f["entropy"])]
    if not f["matched"].empty:
        parts += ["<h3>At matched utility</h3>", _table(f["matched"])]
    if not f["fidelity"].empty:
        parts += ["<h3>Shadow fidelity</h3>", _table(f["fidelity"])]
    if views:
        parts += record_views_html(views, fig_html)
    examples = [s for s in summaries if s.get("examples")]
    if examples:
        parts.append("<h2>What the victim does with members vs non-members</h2>")
        nav = [s for s in examples if s["examples"].get("kind") == "navigation"]
        for s in nav:
            parts.append(f"<p>{_md(navigation_stats(s['examples'], name(s['arch'])))}</p>")
        ready = {s["arch"]: map_views[s["arch"]] for s in nav if map_views and s["arch"] in map_views}
        if ready:
            parts += ["<div class='grid'>"] + [fig_html(fig) for role in ("member", "non-member")
                                               if (fig := navigation_map(ready, role)) is not None] + ["</div>"]
        for s in nav:
            if s["arch"] not in ready:
                for m in s["examples"].get("maps", []):
                    parts.append(f"<figure><img alt='map' src='data:image/png;base64,{m['png_base64']}'>"
                                 f"<figcaption>{html.escape(name(s['arch']))}, "
                                 f"{html.escape(str(m.get('role')))} map (seed {m.get('seed')})</figcaption></figure>")
        for s in examples:
            if s["examples"].get("kind") == "translation":
                parts.append(translation_html(s["examples"], name(s["arch"])))
    parts.append("<h2>Configuration</h2>")
    for s in summaries:
        parts.append(f"<h3>{html.escape(name(s['arch']))} · config hash "
                     f"<code>{html.escape(s['config_hash'])}</code></h3>"
                     f"<pre>{html.escape(json.dumps(s['config'], indent=2, ensure_ascii=False))}</pre>"
                     f"<p class='muted'>data: {html.escape(json.dumps(s.get('data', {}), ensure_ascii=False))}<br>device: "
                     f"{html.escape(str(s.get('device')))} · timings (s): "
                     f"{html.escape(_timings(s))}</p>")
    if configs:
        parts.append("<h3>Reproduce headless</h3><pre>" + html.escape("\n".join(reproduce_commands(configs, overrides or {})))
                     + "</pre>")
    parts.append("</body></html>")
    return "\n".join(parts)


def cached_summaries(configs: dict[str, ExperimentConfig], cache: ArtifactCache | None = None) -> dict[str, dict[str, Any]]:
    """The cached summary of each config; a :class:`ConfigError` naming the command that computes
    the first one missing (a report reads runs, it never trains)."""
    out = {}
    for arch, cfg in configs.items():
        s = cached_summary(cfg, cache)
        if s is None:
            raise ConfigError(f"the {arch} run of task {cfg.task}, preset {cfg.preset} (config {cfg.config_hash[:12]}) "
                              f"is not cached; compute it first: python -m core run --task {cfg.task} --arch {arch} "
                              f"--preset {cfg.preset} (with the same --set options)")
        out[arch] = s
    return out


def run_report(configs: dict[str, ExperimentConfig], cache: ArtifactCache | None = None,
               overrides: dict[str, dict[str, Any]] | None = None, map_views: dict[str, dict[str, Any]] | None = None,
               repeats: dict[str, Any] | None = None, matched: dict[str, Any] | None = None,
               budget: bool = True, summaries: dict[str, dict[str, Any]] | None = None) -> str:
    """The run report of ``configs`` (arch → config) from the cache: their summaries (``summaries``
    where the caller holds them, else :func:`cached_summaries`: not cached → :class:`ConfigError`)
    and the per-record views the cached
    runs allow (:func:`core.analyses.record_views.report_views`; ``budget``: include the reference budget,
    which refits LiRA and RMIA per subset of references), as :func:`run_report_html`. The app's
    download and ``python -m core report`` both call this."""
    cache = cache or ArtifactCache()
    summaries = summaries if summaries is not None else cached_summaries(configs, cache)
    views = report_views(configs, summaries, cache, budget=budget)
    return run_report_html(list(summaries.values()), list(configs.values()), overrides, map_views, repeats, matched,
                           views)
