"""The results of a run (FFNN and RNN side by side) on the Train & attack page: figures cached per
config hash and the page's sections. The figures come from :mod:`core.views` (``run_figures``,
``repeat_figures``, ``map_figures``) and the HTML report from :mod:`core.views.report` (the one builder,
which the CLI's ``report`` also calls)."""
from __future__ import annotations

import json
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.views.map_figures import navigation_map
from core.views.repeat_figures import comparison_table, matched_stops_table, repeats_table, roc_band_figure
from core.views.run_figures import comparison_resolution_note, overview_table, param_gap, resolution_note
from core.views import report
from core.foundations.config import ExperimentConfig
from core.experiment.fidelity import confounding_warnings, study_comparison
from core.foundations.names import ARCH_NAMES
from core.foundations.paths import cache_dir
from core.views.report import MATCHED_NOTE, SMALL_N_NOTE, reproduce_commands, verdict_lines  # noqa: F401  (pages read them here)
from core.analyses.repeats import comparison_json, repeats_block
from core.experiment.results import RunSummary, dicts
from ui.examples import navigation_stats, show_examples, show_map_images
from ui.widgets import drawn


def _key(summaries: list[RunSummary]) -> tuple[str, ...]:
    return (str(cache_dir()),) + tuple(s.config_hash for s in summaries)


@st.cache_resource(max_entries=24, show_spinner=False)
def _figures(key: tuple[str, ...], _summaries: list[RunSummary]) -> dict[str, Any]:
    """:func:`core.views.report.run_figures` (which reads the summaries' JSON), once per set of config
    hashes (figures are read-only once built, so every session can share them)."""
    return report.run_figures(dicts(_summaries))


def figures(summaries: list[RunSummary]) -> dict[str, Any]:
    return _figures(_key(summaries), summaries)


@st.cache_resource(max_entries=24, show_spinner=False)
def _map_figures(key: tuple[str, ...], _views: dict[str, dict[str, Any]]) -> list[go.Figure]:
    return [f for role in ("member", "non-member") if (f := navigation_map(_views, role)) is not None]


def map_figures(views: dict[str, dict[str, Any]]) -> list[go.Figure]:
    return _map_figures((str(cache_dir()),) + tuple(v["config_hash"] for v in views.values()), views)


def show_navigation_maps(summaries: list[RunSummary], views: dict[str, dict[str, Any]]) -> None:
    """Crisp maps with every architecture's path when their map views exist; the task's own
    rendered images (and a note that the maps are being drawn) otherwise."""
    for s in summaries:
        if s.example_kind == "navigation":
            st.markdown(navigation_stats(s.examples, ARCH_NAMES.get(s.arch, s.arch)))
    ready = {s.arch: views[s.arch] for s in summaries if s.arch in views}
    if ready:
        figs = map_figures(ready)
        cols = st.columns(max(len(figs), 1))
        for col, fig in zip(cols, figs):
            with col:
                st.plotly_chart(fig, width="stretch", config={"displayModeBar": False})
        st.caption("Each agent's seeded query episode (the one the attack reads): the path runs through the cells it "
                   "visited, × marks where it stopped. Both architectures were trained on the same member maps.")
    missing = [s for s in summaries if s.arch not in views and s.example_kind and s.examples.get("maps")]
    for s in missing:
        show_map_images(s.examples, ARCH_NAMES.get(s.arch, s.arch))


def show_results(summaries: list[RunSummary], configs: list[ExperimentConfig],
                 overrides: dict[str, dict[str, Any]], views: dict[str, dict[str, Any]] | None = None,
                 repeats: dict[str, Any] | None = None, matched: dict[str, Any] | None = None) -> None:
    """The results sections of the Train & attack page (``summaries``: repeat 0 of each
    architecture; ``repeats``: a :func:`repeats_view` of every repeat, when there are several;
    ``matched``: a :func:`matched_view` when ``match_utility`` is on)."""
    f = figures(summaries)
    raw = dicts(summaries)  # what the figure and report builders read
    comp = (repeats or {}).get("comparison")
    st.subheader("Overview")
    # with repeats, repeat 0's numbers say so and the means with their intervals stand beside them (issue 32)
    st.dataframe(f["overview"] if comp is None else overview_table(raw, comp), hide_index=True, width="stretch")
    if summaries[0].data and summaries[0].data.get("description"):  # what was read (a CSV's missing values among it)
        st.caption(f"Data: {summaries[0].data['description']}")
    if (note := resolution_note(raw)) is not None:  # what one record is worth, before any number is compared
        st.caption(note)
    gap = param_gap(raw)
    if gap is not None:
        st.caption(f"Parameter counts differ by {gap:.1%} (matched within 5 %, as in the studies).")
    # is the comparison fair? (core.experiment.fidelity: models that did not learn, utilities far apart, shadows
    # that do not track their victim) — said before any number is read
    for warning in confounding_warnings(summaries):
        st.warning(warning, icon="⚠️")
    study = study_comparison(summaries)
    if study is not None:
        # one seed per architecture: the direction of two point estimates, not a verdict (core.measurement.stats)
        verdict = ("inconclusive with one repeat per architecture (the point estimates point "
                   + ("the studies' way" if study["holds"] else "the other way") + "; set repeats ≥ 3 for an interval)")
        if study["fair"] is False:
            verdict += " (utilities too far apart to blame the architecture)"
        if repeats is None or "comparison" not in repeats:
            st.info(f"**The studies:** {study['finding']}  \n**This run:** {verdict} — {study['text']}.")
        else:
            st.info(f"**The studies:** {study['finding']}  \n**Over {repeats['comparison']['repeats']} repeats:** see "
                    f"the verdicts below (the tabs under them show repeat 1 of {repeats['comparison']['repeats']}).")
    if repeats is not None:
        show_repeats(repeats)
    if matched is not None:
        show_matched(matched)
    # the rest in tabs of which only the open one runs (on_change="rerun"): a page open then sends the
    # browser two or three charts instead of seven, and drawing them was most of a visit's time (issue 23)
    with_examples = [s for s in summaries if s.examples]
    names = ["Over training", "Attacks", "Strongest attacks & why"] + (["Examples"] if with_examples else [])
    if comp is not None:  # the tabs draw one run: say which, beside the means above
        st.caption(f"The tabs below show **repeat 1 of {comp['repeats']}** (the form's seed); the means over the "
                   f"{comp['repeats']} repeats, with their intervals, are in the Overview and the comparison above.")
    tabs = st.tabs(names, key="train:results_tab", on_change="rerun")
    for _ in drawn(tabs[0]):
        left, right = st.columns(2)
        with left:
            st.plotly_chart(f["utility"], width="stretch")
        with right:
            st.plotly_chart(f["attack_by_epoch"], width="stretch")
        if f["steps"] is not None:
            st.plotly_chart(f["steps"], width="stretch")
    for _ in drawn(tabs[1]):
        st.subheader("Attacks")
        st.dataframe(f["metrics"].style.format(precision=3), hide_index=True, width="stretch")
        left, right = st.columns(2)
        with left:
            st.plotly_chart(f["roc"], width="stretch")
            st.caption("Click a legend entry to show or hide an attack; the primary attack of each architecture is "
                       "shown.")
        with right:
            st.plotly_chart(f["roc_loglog"], width="stretch")
            st.caption("The low false-positive regime on log-log axes (LiRA's convention): an attack that is sure "
                       "about a few members stands out here, not in the AUC.")
    for _ in drawn(tabs[2]):
        st.markdown("**The strongest attacks** — offline LiRA (Carlini et al.) and RMIA (Zarifzadeh et al.), with "
                    "the shadows as reference models, beside Shokri's shadow attack (final epoch)")
        st.dataframe(f["strongest"].style.format(precision=3), hide_index=True, width="stretch")
        left, _ = st.columns(2)
        with left:
            st.plotly_chart(f["entropy"], width="stretch")
            st.caption("Why attacks work: models are more certain (lower entropy) on the records they trained on.")
        if not f["matched"].empty:  # full width: its ten columns were cut off in the half-width column beside
            st.markdown("**At matched utility** — each architecture at the checkpoint whose validation utility "
                        "is closest to the other's final one (the studies compare at similar utility)")
            matched = f["matched"]
            if "utility gap" in matched:  # blank on the reference rows: Streamlit draws a blank "None", so as text
                gap = pd.to_numeric(matched["utility gap"], errors="coerce")
                matched = matched.assign(**{"utility gap": [f"{v:.3f}" if pd.notna(v) else "—" for v in gap]})
            # short headers (the full name on hover): at their full widths the last columns, the verdict among
            # them, ran off the page's right edge
            short = {"comparison": "pair", "architecture": "arch", "shadow model": "shadow", "loss threshold": "loss",
                     "validation ": "val. ", "utility gap": "gap"}

            def header(c: str) -> str:
                for long_name, abbreviation in short.items():
                    c = c.replace(long_name, abbreviation)
                return c

            st.dataframe(matched.style.format(precision=3, na_rep="—"), hide_index=True, width="stretch",
                         column_config={c: st.column_config.Column(header(c), help=c) for c in matched.columns})
        if not f["fidelity"].empty:
            with st.expander("Do the shadows track the victim? (the attacker's core assumption)"):
                st.dataframe(f["fidelity"].style.format(precision=3, na_rep="—"), hide_index=True, width="stretch")
                st.caption("Mean loss of members and non-members, victim vs shadows, per checkpoint; a gap above "
                           "25 % means thresholds and classifiers fitted on the shadows transfer badly to the victim.")
    if with_examples:
        for _ in drawn(tabs[3]):
            st.subheader("What the victim does with members vs non-members")
            if any(s.example_kind == "navigation" for s in with_examples):
                show_navigation_maps([s for s in with_examples if s.example_kind == "navigation"], views or {})
            for s in with_examples:
                if s.example_kind != "navigation":
                    show_examples(s.examples, ARCH_NAMES.get(s.arch, s.arch))
    e1, e2 = st.columns([1, 3])
    with e1:
        name = "_".join([summaries[0].task, summaries[0].preset or "custom"] + [s.arch for s in summaries])
        # core.views.report.run_report: the one builder (python -m core report writes the same page), on the click only
        st.download_button("Download report (HTML)",
                           data=lambda: report.run_report({c.arch: c for c in configs}, overrides=overrides,
                                                          map_views=views, repeats=repeats, matched=matched,
                                                          summaries={s.arch: d for s, d in zip(summaries, raw)}),
                           file_name=f"mia_{name}.html", mime="text/html", on_click="ignore", icon="📄",
                           help="One self-contained HTML file: config, tables, interactive figures and the "
                                "per-record views (works offline).")
    with e2:
        st.download_button("Download summaries (JSON)", data=lambda: json.dumps(raw, indent=1),
                           file_name=f"mia_{name}.json", mime="application/json", on_click="ignore",
                           help="The full summaries (full ROC curves and per-record signals), as the CLI writes them.")
    with st.expander("Reproduce headless"):
        for cmd in reproduce_commands(configs, overrides):
            st.code(cmd)
        st.caption("Config hashes: " + ", ".join(f"{s.arch}: `{s.config_hash}`" for s in summaries))


# ---------------------------------------------------------------------------- repeats
def repeats_view(runs: dict[str, list[RunSummary]]) -> dict[str, Any]:
    """What the repeats section shows, computed by ``core.analyses.repeats``: with FFNN and RNN at the same
    number of repeats the paired comparison (``comparison``), else each architecture's
    mean [95 % CI] per headline metric (``blocks``)."""
    if set(runs) == {"ffnn", "rnn"} and len(runs["ffnn"]) == len(runs["rnn"]):
        return {"comparison": comparison_json(runs["ffnn"], runs["rnn"])}
    return {"blocks": {a: repeats_block(ss, n_boot=500) for a, ss in runs.items()}}


@st.cache_resource(max_entries=24, show_spinner=False)
def _repeats_view(key: tuple[str, ...], _runs: dict[str, list[RunSummary]]) -> dict[str, Any]:
    return repeats_view(_runs)


def cached_repeats_view(runs: dict[str, list[RunSummary]]) -> dict[str, Any]:
    """:func:`repeats_view` once per set of config hashes."""
    return _repeats_view(_key([s for a in sorted(runs) for s in runs[a]]), runs)


def show_repeats(view: dict[str, Any]) -> None:
    """The repeats section: verdicts, the table of means with intervals, the ROC band."""
    if "comparison" in view:
        comp = view["comparison"]
        st.subheader(f"FFNN vs RNN over {comp['repeats']} paired repeats")
        st.markdown("  \n".join(verdict_lines(comp)))
        st.dataframe(comparison_table(comp).style.format(precision=2, na_rep="—"), hide_index=True,
                     width="stretch")
        if (note := comparison_resolution_note(comp)) is not None:
            st.caption(note)
        st.plotly_chart(roc_band_figure(comp["roc_band"], {a: r["n_nonmembers"] for a, r in
                                                                 (comp.get("resolution") or {}).items()}),
                        width="stretch")
    else:
        st.subheader("Over repeats")
        st.dataframe(repeats_table(view["blocks"]), hide_index=True, width="stretch")
        st.plotly_chart(roc_band_figure({a: b["roc_band"] for a, b in view["blocks"].items()},
                                              {a: b["resolution"]["n_nonmembers"] for a, b in view["blocks"].items()
                                               if b.get("resolution")}), width="stretch")
    st.caption(SMALL_N_NOTE)


def matched_view(plan: list[dict[str, Any]], stopped: dict[str, RunSummary]) -> dict[str, Any]:
    """The matched-utility section's data: per repeat the target and each architecture's stopping
    point (``core.analyses.matching.matched_plan``) with its stopped run's measured utility and attack, and
    the paired comparison of the stopped runs (``stopped``: config hash → summary)."""
    rows, runs = [], {"ffnn": [], "rnn": []}
    for row in plan:
        out = {"repeat": row["repeat"], "target": row["target"]}
        for arch in ("ffnn", "rnn"):
            s = stopped[row[arch]["config"].config_hash]
            point = {k: v for k, v in row[arch].items() if k != "config"}
            out[arch] = {**point, "utility_at_stop": s.utility.val, "attack_accuracy": s.attack.accuracy,
                         "attack_auc": s.attack.auc}
            runs[arch].append(s)
        rows.append(out)
    return {"metric": runs["ffnn"][0].utility.metric, "rows": rows,
            "comparison": comparison_json(runs["ffnn"], runs["rnn"])}


def show_matched(view: dict[str, Any]) -> None:
    """The matched-utility-by-construction section: stopping epochs, then the comparison there."""
    st.subheader("At matched utility (by construction)")
    st.dataframe(matched_stops_table(view).style.format(precision=3, na_rep="—"), hide_index=True,
                 width="stretch")
    comp = view["comparison"]
    st.markdown("  \n".join(verdict_lines(comp)))
    st.dataframe(comparison_table(comp).style.format(precision=2, na_rep="—"), hide_index=True, width="stretch")
    if (note := comparison_resolution_note(comp)) is not None:
        st.caption(note)
    st.caption(MATCHED_NOTE)
