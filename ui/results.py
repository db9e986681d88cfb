"""The results of a run (FFNN and RNN side by side): figures cached per config hash, the page's
sections, and the self-contained HTML report."""
from __future__ import annotations

import datetime as _dt
import html
import json
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from core.config import ExperimentConfig
from core.paths import cache_dir
from core.fidelity import confounding_warnings, study_comparison
from core.repeats import comparison_json, repeats_block
from ui import plots
from ui.examples import navigation_stats, show_examples, show_map_images, translation_html


def _key(summaries: list[dict[str, Any]]) -> tuple[str, ...]:
    return (str(cache_dir()),) + tuple(s["config_hash"] for s in summaries)


def build_figures(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Every figure and table of the results, from the summaries alone."""
    return {
        "overview": plots.overview_table(summaries),
        "utility": plots.utility_curves(summaries),
        "attack_by_epoch": plots.attack_accuracy_curve(summaries),
        "steps": plots.steps_curves(summaries),
        "metrics": plots.metrics_table(summaries),
        "roc": plots.roc_curves(summaries),
        "roc_loglog": plots.roc_loglog(summaries),
        "strongest": plots.strongest_attacks_table(summaries),
        "fidelity": plots.shadow_fidelity_table(summaries),
        "matched": plots.matched_utility_table(summaries),
        "entropy": plots.entropy_comparison(summaries),
    }


@st.cache_resource(max_entries=24, show_spinner=False)
def _figures(key: tuple[str, ...], _summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """:func:`build_figures`, once per set of config hashes (figures are read-only once built, so
    every session can share them)."""
    return build_figures(_summaries)


def figures(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    return _figures(_key(summaries), summaries)


@st.cache_resource(max_entries=24, show_spinner=False)
def _map_figures(key: tuple[str, ...], _views: dict[str, dict[str, Any]]) -> list[go.Figure]:
    return [f for role in ("member", "non-member") if (f := plots.navigation_map(_views, role)) is not None]


def map_figures(views: dict[str, dict[str, Any]]) -> list[go.Figure]:
    return _map_figures((str(cache_dir()),) + tuple(v["config_hash"] for v in views.values()), views)


def reproduce_commands(configs: list[ExperimentConfig], overrides: dict[str, dict[str, Any]]) -> list[str]:
    cmds = []
    for c in configs:
        sets = " ".join(f"--set {k}={','.join(map(str, v)) if isinstance(v, tuple) else v}"
                        for k, v in overrides.get(c.arch, {}).items())
        cmds.append(f"python -m core run --task {c.task} --arch {c.arch} --preset {c.preset} {sets} --out {c.arch}.json"
                    .replace("  ", " "))
    return cmds


def show_navigation_maps(summaries: list[dict[str, Any]], views: dict[str, dict[str, Any]]) -> None:
    """Crisp maps with every architecture's path when their map views exist; the task's own
    rendered images (and a note that the maps are being drawn) otherwise."""
    for s in summaries:
        if s.get("examples", {}).get("kind") == "navigation":
            st.markdown(navigation_stats(s["examples"], plots.ARCH_NAMES.get(s["arch"], s["arch"])))
    ready = {s["arch"]: views[s["arch"]] for s in summaries if s["arch"] in views}
    if ready:
        figs = map_figures(ready)
        cols = st.columns(max(len(figs), 1))
        for col, fig in zip(cols, figs):
            with col:
                st.plotly_chart(fig, width="stretch", config={"displayModeBar": False})
        st.caption("Each agent's seeded query episode (the one the attack reads): the path runs through the cells it "
                   "visited, × marks where it stopped. Both architectures were trained on the same member maps.")
    missing = [s for s in summaries if s["arch"] not in views and s.get("examples", {}).get("maps")]
    for s in missing:
        show_map_images(s["examples"], plots.ARCH_NAMES.get(s["arch"], s["arch"]))


def show_results(summaries: list[dict[str, Any]], configs: list[ExperimentConfig],
                 overrides: dict[str, dict[str, Any]], views: dict[str, dict[str, Any]] | None = None,
                 repeats: dict[str, Any] | None = None, matched: dict[str, Any] | None = None) -> None:
    """The results sections of the Train & attack page (``summaries``: repeat 0 of each
    architecture; ``repeats``: a :func:`repeats_view` of every repeat, when there are several;
    ``matched``: a :func:`matched_view` when ``match_utility`` is on)."""
    f = figures(summaries)
    st.subheader("Overview")
    st.dataframe(f["overview"], hide_index=True, width="stretch")
    gap = plots.param_gap(summaries)
    if gap is not None:
        st.caption(f"Parameter counts differ by {gap:.1%} (matched within 5 %, as in the studies).")
    # is the comparison fair? (core.fidelity: models that did not learn, utilities far apart, shadows
    # that do not track their victim) — said before any number is read
    for warning in confounding_warnings(summaries):
        st.warning(warning, icon="⚠️")
    study = study_comparison(summaries)
    if study is not None:
        # one seed per architecture: the direction of two point estimates, not a verdict (core.stats)
        verdict = ("❔ inconclusive with one repeat per architecture (the point estimates point "
                   + ("the studies' way" if study["holds"] else "the other way") + "; set repeats ≥ 3 for an interval)")
        if study["fair"] is False:
            verdict += " (utilities too far apart to blame the architecture)"
        if repeats is None or "comparison" not in repeats:
            st.info(f"**The studies:** {study['finding']}  \n**This run:** {verdict} — {study['text']}.")
        else:
            st.info(f"**The studies:** {study['finding']}  \n**Over {repeats['comparison']['repeats']} repeats:** see "
                    "the verdicts below (repeat 0's numbers fill the rest of the page).")
    if repeats is not None:
        show_repeats(repeats)
    if matched is not None:
        show_matched(matched)
    left, right = st.columns(2)
    with left:
        st.plotly_chart(f["utility"], width="stretch")
    with right:
        st.plotly_chart(f["attack_by_epoch"], width="stretch")
    if f["steps"] is not None:
        st.plotly_chart(f["steps"], width="stretch")
    st.subheader("Attacks")
    st.dataframe(f["metrics"].style.format(precision=3), hide_index=True, width="stretch")
    if (note := plots.resolution_note(summaries)) is not None:
        st.caption(note)
    left, right = st.columns(2)
    with left:
        st.plotly_chart(f["roc"], width="stretch")
        st.caption("Click a legend entry to show or hide an attack; the primary attack of each architecture is shown.")
    with right:
        st.plotly_chart(f["roc_loglog"], width="stretch")
        st.caption("The low false-positive regime on log-log axes (LiRA's convention): an attack that is sure about "
                   "a few members stands out here, not in the AUC.")
    st.markdown("**The strongest attacks** — offline LiRA (Carlini et al.) and RMIA (Zarifzadeh et al.), with the "
                "shadows as reference models, beside Shokri's shadow attack (final epoch)")
    st.dataframe(f["strongest"].style.format(precision=3), hide_index=True, width="stretch")
    left, right = st.columns(2)
    with left:
        st.plotly_chart(f["entropy"], width="stretch")
        st.caption("Why attacks work: models are more certain (lower entropy) on the records they trained on.")
    with right:
        if not f["matched"].empty:
            st.markdown("**At matched utility** — each architecture at the checkpoint whose validation utility is "
                        "closest to the other's final one (the studies compare at similar utility)")
            st.dataframe(f["matched"].style.format(precision=3, na_rep="—"), hide_index=True, width="stretch")
    if not f["fidelity"].empty:
        with st.expander("Do the shadows track the victim? (the attacker's core assumption)"):
            st.dataframe(f["fidelity"].style.format(precision=3, na_rep="—"), hide_index=True, width="stretch")
            st.caption("Mean loss of members and non-members, victim vs shadows, per checkpoint; a gap above 25 % "
                       "means thresholds and classifiers fitted on the shadows transfer badly to the victim.")
    with_examples = [s for s in summaries if s.get("examples")]
    if with_examples:
        st.subheader("What the victim does with members vs non-members")
        if any(s["examples"].get("kind") == "navigation" for s in with_examples):
            show_navigation_maps([s for s in with_examples if s["examples"].get("kind") == "navigation"], views or {})
        for s in with_examples:
            if s["examples"].get("kind") != "navigation":
                show_examples(s["examples"], plots.ARCH_NAMES.get(s["arch"], s["arch"]))
    e1, e2 = st.columns([1, 3])
    with e1:
        name = "_".join([summaries[0]["task"], summaries[0].get("preset") or "custom"] + [s["arch"] for s in summaries])
        st.download_button("Download report (HTML)", data=lambda: report_html(summaries, configs, overrides, views, repeats, matched),
                           file_name=f"mia_{name}.html", mime="text/html", on_click="ignore", icon="📄",
                           help="One self-contained HTML file: config, tables and interactive figures (works offline).")
    with e2:
        st.download_button("Download summaries (JSON)", data=lambda: json.dumps(summaries, indent=1),
                           file_name=f"mia_{name}.json", mime="application/json", on_click="ignore",
                           help="The full summaries (full ROC curves and per-record signals), as the CLI writes them.")
    with st.expander("Reproduce headless"):
        for cmd in reproduce_commands(configs, overrides):
            st.code(cmd)
        st.caption("Config hashes: " + ", ".join(f"{s['arch']}: `{s['config_hash']}`" for s in summaries))


# ---------------------------------------------------------------------------- repeats
def repeats_view(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """What the repeats section shows, computed by ``core.repeats``: with FFNN and RNN at the same
    number of repeats the paired comparison (``comparison``), else each architecture's
    mean [95 % CI] per headline metric (``blocks``)."""
    if set(runs) == {"ffnn", "rnn"} and len(runs["ffnn"]) == len(runs["rnn"]):
        return {"comparison": comparison_json(runs["ffnn"], runs["rnn"])}
    return {"blocks": {a: repeats_block(ss, n_boot=500) for a, ss in runs.items()}}


@st.cache_resource(max_entries=24, show_spinner=False)
def _repeats_view(key: tuple[str, ...], _runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return repeats_view(_runs)


def cached_repeats_view(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """:func:`repeats_view` once per set of config hashes."""
    return _repeats_view(_key([s for a in sorted(runs) for s in runs[a]]), runs)


def verdict_lines(comparison: dict[str, Any], metrics: tuple[str, ...] = ("attack_accuracy", "attack_auc", "lira_auc")
                  ) -> list[str]:
    """One markdown line per headline leakage metric: the three-valued verdict, effect, CI, N."""
    lines = []
    for name in metrics:
        m = comparison["metrics"].get(name)
        if not m or not m.get("verdict"):
            continue
        v, d = m["verdict"], m["difference"]
        dz = f", d_z = {d['effect_size']:.2f}" if d.get("effect_size") is not None else ""
        lines.append(f"**{plots.METRIC_NAMES.get(name, name)}**: {plots.VERDICT_MARKS[v['value']]} — FFNN − RNN "
                     f"{plots.with_ci(d['diff'])}{dz}, p (paired t) {plots._p(d.get('p_t'))}, N = {v['n']}")
    return lines


SMALL_N_NOTE = ("Intervals are 95 % Student-t intervals over repeats (seeds: split, initialisation, batch order); "
                "the difference is paired by repeat (same seed, same split for both architectures). **holds**: the "
                "interval of FFNN − RNN lies below 0 (the RNN leaks more, as in the studies); **reversed**: above 0; "
                "**inconclusive**: it contains 0. With N = 3 the t interval is wide (t₂ = 4.30) and the sign-flip "
                "test cannot go below p = 0.25; N ≥ 6 reaches 0.031.")


def show_repeats(view: dict[str, Any]) -> None:
    """The repeats section: verdicts, the table of means with intervals, the ROC band."""
    if "comparison" in view:
        comp = view["comparison"]
        st.subheader(f"FFNN vs RNN over {comp['repeats']} paired repeats")
        st.markdown("  \n".join(verdict_lines(comp)))
        st.dataframe(plots.comparison_table(comp).style.format(precision=2, na_rep="—"), hide_index=True,
                     width="stretch")
        st.plotly_chart(plots.roc_band_figure(comp["roc_band"]), width="stretch")
    else:
        st.subheader("Over repeats")
        st.dataframe(plots.repeats_table(view["blocks"]), hide_index=True, width="stretch")
        st.plotly_chart(plots.roc_band_figure({a: b["roc_band"] for a, b in view["blocks"].items()}), width="stretch")
    st.caption(SMALL_N_NOTE)


def repeats_html(view: dict[str, Any]) -> list[str]:
    """The repeats section of the HTML report."""
    if "comparison" in view:
        comp = view["comparison"]
        lines = [html.escape(line.replace("**", "")) for line in verdict_lines(comp)]
        return [f"<h2>FFNN vs RNN over {comp['repeats']} paired repeats</h2>", "<p>" + "<br>".join(lines) + "</p>",
                _table(plots.comparison_table(comp)), f"<p class='muted'>{html.escape(SMALL_N_NOTE.replace('**', ''))}</p>"]
    return ["<h2>Over repeats</h2>", _table(plots.repeats_table(view["blocks"])),
            f"<p class='muted'>{html.escape(SMALL_N_NOTE.replace('**', ''))}</p>"]


def matched_view(plan: list[dict[str, Any]], stopped: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The matched-utility section's data: per repeat the target and each architecture's stopping
    point (``core.matching.matched_plan``) with its stopped run's measured utility and attack, and
    the paired comparison of the stopped runs (``stopped``: config hash → summary)."""
    rows, runs = [], {"ffnn": [], "rnn": []}
    for row in plan:
        out = {"repeat": row["repeat"], "target": row["target"]}
        for arch in ("ffnn", "rnn"):
            s = stopped[row[arch]["config"].config_hash]
            point = {k: v for k, v in row[arch].items() if k != "config"}
            out[arch] = {**point, "utility_at_stop": s["utility"]["val"], "attack_accuracy": s["attack"]["accuracy"],
                         "attack_auc": s["attack"]["auc"]}
            runs[arch].append(s)
        rows.append(out)
    return {"metric": runs["ffnn"][0]["utility"]["metric"], "rows": rows,
            "comparison": comparison_json(runs["ffnn"], runs["rnn"])}


MATCHED_NOTE = ("Each architecture's victim and shadows train until the victim's validation utility first reaches the "
                "target, then stop (the shadows stop at the victim's epoch: the attacker copies its recipe). The full "
                "runs above are kept; the post-hoc matched view compares checkpoints of them.")


def show_matched(view: dict[str, Any]) -> None:
    """The matched-utility-by-construction section: stopping epochs, then the comparison there."""
    st.subheader("At matched utility (by construction)")
    st.dataframe(plots.matched_stops_table(view).style.format(precision=3, na_rep="—"), hide_index=True,
                 width="stretch")
    comp = view["comparison"]
    st.markdown("  \n".join(verdict_lines(comp)))
    st.dataframe(plots.comparison_table(comp).style.format(precision=2, na_rep="—"), hide_index=True, width="stretch")
    st.caption(MATCHED_NOTE)


# ---------------------------------------------------------------------------- the report
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


def _table(df) -> str:
    return df.to_html(index=False, classes="df", float_format=lambda v: f"{v:.3f}", border=0, na_rep="—")


def report_html(summaries: list[dict[str, Any]], configs: list[ExperimentConfig] | None = None,
                overrides: dict[str, dict[str, Any]] | None = None,
                views: dict[str, dict[str, Any]] | None = None, repeats: dict[str, Any] | None = None,
                matched: dict[str, Any] | None = None) -> str:
    """One self-contained HTML file of a run: config, tables, figures (plotly.js embedded once,
    so it opens offline), examples and how to reproduce it; with ``repeats`` (a
    :func:`repeats_view`) the means with intervals, paired differences and verdicts."""
    f = build_figures(summaries)
    first = [True]

    def fig_html(fig: go.Figure | None) -> str:
        if fig is None:
            return ""
        out = fig.to_html(full_html=False, include_plotlyjs=first[0], config={"displaylogo": False})
        first[0] = False
        return f"<div>{out}</div>"

    task = summaries[0]["task"]
    archs = ", ".join(plots.ARCH_NAMES.get(s["arch"], s["arch"]) for s in summaries)
    when = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>MIA Explorer report: {html.escape(task)} ({html.escape(archs)})</title><style>{_CSS}</style></head><body>",
        f"<h1>MIA Explorer — {html.escape(task)}: {html.escape(archs)}</h1>",
        f"<p class='muted'>Report written {when}. Every number comes from the cached run summaries below "
        "(the same JSON that <code>python -m core run</code> writes).</p>",
        "<h2>Overview</h2>", _table(f["overview"]),
    ]
    gap = plots.param_gap(summaries)
    if gap is not None:
        parts.append(f"<p class='muted'>Parameter counts differ by {gap:.1%}.</p>")
    for warning in confounding_warnings(summaries):
        parts.append(f"<p><b>Warning:</b> {html.escape(warning)}</p>")
    study = study_comparison(summaries)
    if study is not None:
        one = ("inconclusive with one repeat per architecture (the point estimates point "
               + ("the studies' way" if study["holds"] else "the other way") + ")")
        if repeats and "comparison" in repeats:
            one = f"repeat 0 below; the verdicts over {repeats['comparison']['repeats']} paired repeats follow"
        parts.append(f"<p><b>The studies:</b> {html.escape(study['finding'].replace('*', ''))}<br><b>This run:</b> "
                     f"{html.escape(one)} — {html.escape(study['text'])}.</p>")
    if repeats:
        parts += repeats_html(repeats)
        if "comparison" in repeats:
            parts.append(fig_html(plots.roc_band_figure(repeats["comparison"]["roc_band"])))
    if matched:
        parts += ["<h2>At matched utility (by construction)</h2>", _table(plots.matched_stops_table(matched)),
                  "<p>" + "<br>".join(html.escape(x.replace("**", "")) for x in verdict_lines(matched["comparison"]))
                  + "</p>", _table(plots.comparison_table(matched["comparison"])),
                  f"<p class='muted'>{html.escape(MATCHED_NOTE)}</p>"]
    parts += ["<div class='grid'>", fig_html(f["utility"]), fig_html(f["attack_by_epoch"]), "</div>"]
    if f["steps"] is not None:
        parts.append(fig_html(f["steps"]))
    note = plots.resolution_note(summaries)
    parts += ["<h2>Attacks</h2>", _table(f["metrics"]), f"<p class='muted'>{html.escape(note)}</p>" if note else "",
              "<div class='grid'>", fig_html(f["roc"]), fig_html(f["roc_loglog"]), "</div>",
              "<h3>The strongest attacks (LiRA, RMIA) beside the shadow attack</h3>", _table(f["strongest"]),
              fig_html(f["entropy"])]
    if not f["matched"].empty:
        parts += ["<h3>At matched utility</h3>", _table(f["matched"])]
    if not f["fidelity"].empty:
        parts += ["<h3>Shadow fidelity</h3>", _table(f["fidelity"])]
    examples = [s for s in summaries if s.get("examples")]
    if examples:
        parts.append("<h2>What the victim does with members vs non-members</h2>")
        nav = [s for s in examples if s["examples"].get("kind") == "navigation"]
        for s in nav:
            parts.append("<p>" + html.escape(navigation_stats(s["examples"], plots.ARCH_NAMES.get(s["arch"], s["arch"])))
                         .replace("**", "") + "</p>")
        ready = {s["arch"]: views[s["arch"]] for s in nav if views and s["arch"] in views}
        if ready:
            parts += ["<div class='grid'>"] + [fig_html(fig) for role in ("member", "non-member")
                                               if (fig := plots.navigation_map(ready, role)) is not None] + ["</div>"]
        for s in nav:
            if s["arch"] not in ready:
                for m in s["examples"].get("maps", []):
                    parts.append(f"<figure><img alt='map' src='data:image/png;base64,{m['png_base64']}'>"
                                 f"<figcaption>{html.escape(plots.ARCH_NAMES.get(s['arch'], s['arch']))}, "
                                 f"{html.escape(str(m.get('role')))} map (seed {m.get('seed')})</figcaption></figure>")
        for s in examples:
            if s["examples"].get("kind") == "translation":
                parts.append(translation_html(s["examples"], plots.ARCH_NAMES.get(s["arch"], s["arch"])))
    parts.append("<h2>Configuration</h2>")
    for s in summaries:
        parts.append(f"<h3>{html.escape(plots.ARCH_NAMES.get(s['arch'], s['arch']))} · config hash "
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
