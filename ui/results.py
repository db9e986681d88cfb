"""The results of a run (FFNN and RNN side by side) on the Train & attack page (and on Your model and
Training defenses): the sections of :func:`core.views.run_view.run_view` drawn with Streamlit — the same
list, in the same order, that the HTML run report (:mod:`core.views.report`) renders — with the run's
figures cached per config hash, and the repeats and matched-utility views the page computes."""
from __future__ import annotations

import base64
import itertools
import json
from typing import Any

import streamlit as st

from core.analyses.comparison_results import ComparisonResult
from core.analyses.matching import PlannedRepeat
from core.analyses.repeats import comparison_json, repeats_block
from core.experiment.results import RepeatsBlock, RunSummary
from core.foundations.config import ExperimentConfig
from core.foundations.paths import cache_dir
from core.foundations.version import stamped
from core.tasks.navigation import MapViews
from core.views import report
from core.views.repeat_figures import MatchedRepeat, MatchedStop, MatchedView, RepeatsView
from core.views.run_text import RunFigures, run_figures
from core.views.run_view import (
    Block,
    Code,
    Details,
    Figure,
    Html,
    Image,
    Row,
    RunInputs,
    Section,
    Table,
    Text,
    run_view,
)
from ui.widgets import drawn


def _key(summaries: list[RunSummary]) -> tuple[str, ...]:
    return (str(cache_dir()),) + tuple(s.config_hash for s in summaries)


@st.cache_resource(max_entries=24, show_spinner=False)
def _figures(key: tuple[str, ...], _summaries: list[RunSummary]) -> RunFigures:
    """:func:`core.views.run_text.run_figures`, once per set of config hashes (figures are read-only once
    built, so every session can share them)."""
    return run_figures(_summaries)


def figures(summaries: list[RunSummary]) -> RunFigures:
    return _figures(_key(summaries), summaries)


def draw_block(block: Block, key: str) -> None:
    """One block of a run's view as Streamlit draws it (``key``: unique per block, for the charts)."""
    if isinstance(block, Text):
        if block.style == "caption":
            st.caption(block.text)
        elif block.style == "info":
            st.info(block.text)
        elif block.style == "warning":
            st.warning(block.text, icon="⚠️")
        elif block.style == "subheading":
            st.markdown(f"**{block.text}**")
        else:
            st.markdown(block.text)
    elif isinstance(block, Table):
        frame = block.frame
        config = ({c: st.column_config.Column(s, help=c) for c, s in block.short.items()} if block.short else None)
        st.dataframe(frame.style.format(precision=block.precision, na_rep="—"), hide_index=True, width="stretch",
                     column_config=config)
    elif isinstance(block, Figure):
        st.plotly_chart(block.figure, width="stretch", key=key)
        if block.caption:
            st.caption(block.caption)
    elif isinstance(block, Image):
        st.image(base64.b64decode(block.png_base64), caption=block.caption)
    elif isinstance(block, Row):
        for i, (col, item) in enumerate(zip(st.columns(block.columns), block.items)):
            with col:
                draw_block(item, f"{key}-{i}")
    elif isinstance(block, Html):  # built and escaped by core.views.run_text (the translations' shaded tokens)
        st.markdown(block.html, unsafe_allow_html=True)
    elif isinstance(block, Code):
        st.code(block.text, language=block.language)
    elif isinstance(block, Details):
        with st.expander(block.title):
            for i, b in enumerate(block.blocks):
                draw_block(b, f"{key}-{i}")
    else:
        raise TypeError(f"no drawing for a {type(block).__name__} block")


def draw_section(section: Section, heading: bool = True) -> None:
    if heading:
        st.subheader(section.heading)
    for i, block in enumerate(section.blocks):
        draw_block(block, f"run:{section.id}:{i}")


def show_results(summaries: list[RunSummary], configs: list[ExperimentConfig],
                 overrides: dict[str, dict[str, Any]], views: dict[str, MapViews] | None = None,
                 repeats: RepeatsView | None = None, matched: MatchedView | None = None) -> None:
    """The results of a run (``summaries``: repeat 0 of each architecture; ``repeats``: a
    :func:`repeats_view` of every repeat, when there are several; ``matched``: a :func:`matched_view` when
    ``match_utility`` is on; ``views``: arch → navigation map views): the sections of
    :func:`core.views.run_view.run_view`, the list the HTML report renders too, then the downloads.
    Consecutive tabbed sections are tabs of which only the open one is built and drawn (on_change="rerun":
    a visit then sends the browser two or three charts instead of all of them); collapsed
    sections are expanders."""
    sections = run_view(RunInputs(summaries, configs, overrides, views, repeats, matched, figures=figures(summaries)))
    downloads_drawn, tab_groups = False, 0
    for tabbed, grouped in itertools.groupby(sections, key=lambda s: s.tab):
        group = list(grouped)
        if tabbed:  # one group today; a section registered between untabbed ones would start a second
            key = "train:results_tab" + (f":{tab_groups}" if tab_groups else "")
            tab_groups += 1
            tabs = st.tabs([s.heading for s in group], key=key, on_change="rerun")
            for tab, section in zip(tabs, group):
                for _ in drawn(tab):
                    draw_section(section)
            continue
        for section in group:
            if section.collapsed:
                if not downloads_drawn:
                    show_downloads(summaries, configs, overrides, views, repeats, matched)
                    downloads_drawn = True
                with st.expander(section.heading):
                    draw_section(section, heading=False)
            else:
                draw_section(section)
    if not downloads_drawn:
        show_downloads(summaries, configs, overrides, views, repeats, matched)


def show_downloads(summaries: list[RunSummary], configs: list[ExperimentConfig], overrides: dict[str, dict[str, Any]],
                   views: dict[str, MapViews] | None, repeats: RepeatsView | None,
                   matched: MatchedView | None) -> None:
    """The run as one HTML report (the same sections as above, plus the per-record views) and as JSON."""
    e1, e2 = st.columns([1, 3])
    with e1:
        name = "_".join([summaries[0].task, summaries[0].preset or "custom"] + [s.arch for s in summaries])
        # core.views.report.run_report: the one builder (python -m core report writes the same page), on the click only
        st.download_button("Download report (HTML)",
                           data=lambda: report.run_report({c.arch: c for c in configs}, overrides=overrides,
                                                          map_views=views, repeats=repeats, matched=matched,
                                                          summaries={s.arch: s for s in summaries}),
                           file_name=f"mia_{name}.html", mime="text/html", on_click="ignore", icon="📄",
                           help="One self-contained HTML file: config, tables, interactive figures and the "
                                "per-record views (works offline).")
    with e2:
        # the JSON the CLI writes: to_dict gives back exactly the summary that was read
        st.download_button("Download summaries (JSON)", data=lambda: json.dumps(stamped({"runs": [s.to_dict() for s in summaries]}, "runs"), indent=1),
                           file_name=f"mia_{name}.json", mime="application/json", on_click="ignore",
                           help="The full summaries (full ROC curves and per-record signals), as the CLI writes them.")


# ---------------------------------------------------------------------------- repeats
def repeats_view(runs: dict[str, list[RunSummary]]) -> RepeatsView:
    """What the repeats section shows, computed by ``core.analyses.repeats`` and read typed here: with FFNN and
    RNN at the same number of repeats the paired comparison (``comparison``), else each architecture's
    mean [95 % CI] per headline metric (``blocks``)."""
    if set(runs) == {"ffnn", "rnn"} and len(runs["ffnn"]) == len(runs["rnn"]):
        return RepeatsView(comparison=ComparisonResult.from_dict(comparison_json(runs["ffnn"], runs["rnn"])))
    return RepeatsView(blocks={a: RepeatsBlock.from_dict(repeats_block(ss, n_boot=500)) for a, ss in runs.items()})


@st.cache_resource(max_entries=24, show_spinner=False)
def _repeats_view(key: tuple[str, ...], _runs: dict[str, list[RunSummary]]) -> RepeatsView:
    return repeats_view(_runs)


def cached_repeats_view(runs: dict[str, list[RunSummary]]) -> RepeatsView:
    """:func:`repeats_view` once per set of config hashes."""
    return _repeats_view(_key([s for a in sorted(runs) for s in runs[a]]), runs)


def matched_view(plan: list[PlannedRepeat], stopped: dict[str, RunSummary]) -> MatchedView:
    """The matched-utility section's data: per repeat the target and each architecture's stopping
    point (``core.analyses.matching.matched_plan``) with its stopped run's measured utility and attack, and
    the paired comparison of the stopped runs (``stopped``: config hash → summary), typed as it is built."""
    rows: list[MatchedRepeat] = []
    runs: dict[str, list[RunSummary]] = {"ffnn": [], "rnn": []}
    for row in plan:
        stops: dict[str, MatchedStop] = {}
        for arch in ("ffnn", "rnn"):
            stop = row.stops[arch]  # matched_plan's stopping point of this architecture, with its config
            s, point = stopped[stop.config.config_hash], stop.point
            stops[arch] = MatchedStop(point.epoch, point.reached, point.final_epoch, point.final_utility,
                                      s.utility.val, s.attack.accuracy, s.attack.auc)
            runs[arch].append(s)
        rows.append(MatchedRepeat(row.repeat, row.target, stops))
    return MatchedView(runs["ffnn"][0].utility.metric, tuple(rows),
                       ComparisonResult.from_dict(comparison_json(runs["ffnn"], runs["rnn"])))
