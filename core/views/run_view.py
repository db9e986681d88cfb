"""The one view of a run: its sections, in order, defined once.

The Train & attack page (:func:`ui.results.show_results`) and the HTML run report
(:func:`core.views.report.run_report_html`) both render the list :func:`run_view` returns, so a section
added here (:func:`register_section`) appears in both, in the same place. A section is an id, a heading and
typed blocks; the renderers decide only *how* a block looks, never *what* a section holds.

Two layout hints, read by the page only: ``tab`` (consecutive tabbed sections are drawn as tabs, and only the
open one is built) and ``collapsed`` (drawn in an expander). Blocks are built on demand (:attr:`Section.blocks`),
so a closed tab costs nothing."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Union, cast

import pandas as pd
import plotly.graph_objects as go

from core.analyses.analysis_results import ReportViews
from core.analyses.comparison_results import ComparisonResult
from core.experiment.fidelity import confounding_warnings, study_comparison
from core.experiment.results import RunSummary
from core.foundations.config import ExperimentConfig
from core.foundations.names import ARCH_NAMES, ATTACK_NAMES
from core.tasks.examples import NavigationExamples, TranslationExamples
from core.tasks.navigation import MapViews
from core.views.map_figures import navigation_map
from core.views.plain import plain_markdown
from core.views.record_view_figures import budget_figure, exposure_figure, slices_figure
from core.views.repeat_figures import (
    MatchedView,
    RepeatsView,
    comparison_table,
    matched_stops_table,
    repeats_table,
    roc_band_figure,
)
from core.views.run_figures import comparison_resolution_note, overview_table, param_gap, resolution_note
from core.views.run_text import (
    MATCHED_NOTE,
    SMALL_N_NOTE,
    RunFigures,
    budget_table,
    exposure_table,
    navigation_stats,
    reproduce_commands,
    run_figures,
    slices_table,
    translation_html,
    verdict_lines,
)


# ---------------------------------------------------------------------------- blocks
@dataclass(frozen=True)
class Text:
    """Markdown (bold, italics, code and line breaks only: both renderers read that much). ``style``:
    ``markdown``, ``caption`` (a muted note), ``info``, ``warning`` or ``subheading``."""
    text: str
    style: str = "markdown"


@dataclass(frozen=True)
class Table:
    """A table; ``precision`` digits for its floats; ``short`` shortens long column names where the
    page is narrow (the full name on hover)."""
    frame: pd.DataFrame
    precision: int = 3
    short: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Figure:
    figure: go.Figure
    caption: str = ""


@dataclass(frozen=True)
class Image:
    """A PNG (base64) the task rendered, with its caption."""
    png_base64: str
    caption: str = ""


@dataclass(frozen=True)
class Row:
    """Figures or images side by side in ``columns`` equal columns (fewer items leave columns empty)."""
    items: tuple[Union[Figure, Image], ...]
    columns: int = 2


@dataclass(frozen=True)
class Html:
    """HTML built and escaped by :mod:`core.views.run_text` (the translations' shaded tokens)."""
    html: str


@dataclass(frozen=True)
class Code:
    text: str
    language: str | None = None


@dataclass(frozen=True)
class Details:
    """Blocks a reader opens when they want them (an expander on the page, a sub-heading in the report)."""
    title: str
    blocks: tuple[Any, ...]


Block = Union[Text, Table, Figure, Image, Row, Html, Code, Details]


@dataclass(frozen=True)
class Section:
    """One section of a run: ``id`` (stable, for code and tests), ``heading`` (what both renderers show),
    ``build`` (its blocks, built when rendered), and the page's layout hints ``tab`` and ``collapsed``."""
    id: str
    heading: str
    build: Callable[[], list[Block]]
    tab: bool = False
    collapsed: bool = False

    @property
    def blocks(self) -> list[Block]:
        return list(self.build())


# ---------------------------------------------------------------------------- what a view is made from
@dataclass
class RunInputs:
    """What a run's view is built from: the typed summaries (repeat 0 of each architecture), and where
    given the configs and their ``--set`` overrides (the reproduce commands), the app's navigation map
    views (arch → views), the repeats view (its ``comparison`` or ``blocks``), the matched-utility view and the
    per-record views (:func:`core.analyses.record_views.report_views`)."""
    summaries: list[RunSummary]
    configs: list[ExperimentConfig] | None = None
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    map_views: dict[str, MapViews] | None = None
    repeats: RepeatsView | None = None
    matched: MatchedView | None = None
    views: ReportViews | None = None
    #: :func:`core.views.run_text.run_figures` of the summaries, where the caller keeps them (the page caches them)
    figures: RunFigures | None = None

    def __post_init__(self) -> None:
        if self.figures is None:
            self.figures = run_figures(self.summaries)

    @property
    def drawn(self) -> RunFigures:
        """The run's figures: the caller's, else those made from the summaries at construction."""
        assert self.figures is not None  # __post_init__ made them
        return self.figures

    @property
    def comparison(self) -> ComparisonResult | None:
        return None if self.repeats is None else self.repeats.comparison


def _name(arch: str) -> str:
    return ARCH_NAMES.get(arch, arch)


# ---------------------------------------------------------------------------- the sections
def overview(run: RunInputs) -> Section:
    """The headline table, what one record is worth and whether the comparison is fair, before any
    number is read; the studies' finding beside this run's direction."""
    def build() -> list[Block]:
        comp, summaries = run.comparison, run.summaries
        # with repeats, repeat 0's numbers say so and the means with their intervals stand beside them
        out: list[Block] = [Table(run.drawn.overview if comp is None else overview_table(summaries, comp))]
        data = summaries[0].data
        if data is not None and data.description:  # what was read (a CSV's missing values among it)
            out.append(Text(f"Data: {plain_markdown(data.description)}", "caption"))  # the user's names, as text
        if (note := resolution_note(summaries)) is not None:  # what one record is worth
            out.append(Text(note, "caption"))
        if (gap := param_gap(summaries)) is not None:
            out.append(Text(f"Parameter counts differ by {gap:.1%} (matched within 5 %, as in the studies).", "caption"))
        # is the comparison fair? (core.experiment.fidelity): said before any number is read
        out += [Text(w, "warning") for w in confounding_warnings(summaries)]
        study = study_comparison(summaries)
        if study is not None:
            if comp is None:  # one seed per architecture: the direction of two point estimates, not a verdict
                verdict = ("inconclusive with one repeat per architecture (the point estimates point "
                           + ("the studies' way" if study.holds else "the other way")
                           + "; set repeats ≥ 3 for an interval)")
                if study.fair is False:
                    verdict += " (utilities too far apart to blame the architecture)"
                line = f"**This run:** {verdict} — {study.text}."
            else:
                n = comp.repeats
                line = (f"**Over {n} repeats:** the verdicts over {n} paired repeats follow "
                        f"below; the sections after them show repeat 1 of {n}.")
            out.append(Text(f"**The studies:** {study.finding}  \n{line}", "info"))
        return out
    return Section("overview", "Overview", build)


def repeats(run: RunInputs) -> Section | None:
    """Over the repeats: the paired verdicts, the means with their intervals and the ROC band."""
    view = run.repeats
    if view is None or (view.comparison is None and not view.blocks):
        return None
    if view.comparison is not None:
        comp = view.comparison

        def build() -> list[Block]:
            out: list[Block] = [Text("  \n".join(verdict_lines(comp))), Table(comparison_table(comp), precision=2)]
            if (note := comparison_resolution_note(comp)) is not None:
                out.append(Text(note, "caption"))
            out += [Figure(roc_band_figure(comp.roc_band or {}, comp.n_nonmembers())), Text(SMALL_N_NOTE, "caption"),
                    Text(f"The sections below show **repeat 1 of {comp.repeats}** (the form's seed); the means over "
                         f"the {comp.repeats} repeats, with their intervals, are in the Overview and the comparison "
                         "above.", "caption")]
            return out
        return Section("repeats", f"FFNN vs RNN over {comp.repeats} paired repeats", build)
    blocks = view.blocks

    def build_blocks() -> list[Block]:
        n_non = {a: b.n_nonmembers for a, b in blocks.items() if b.n_nonmembers is not None}
        bands = {a: b.roc_band for a, b in blocks.items() if b.roc_band is not None}
        return [Table(repeats_table(blocks)), Figure(roc_band_figure(bands, n_non)), Text(SMALL_N_NOTE, "caption")]
    return Section("repeats", "Over repeats", build_blocks)


def matched_by_construction(run: RunInputs) -> Section | None:
    """Each architecture stopped at the same validation utility, and the paired comparison there."""
    view = run.matched
    if view is None:
        return None

    def build() -> list[Block]:
        comp = view.comparison
        out: list[Block] = [Table(matched_stops_table(view)), Text("  \n".join(verdict_lines(comp))),
                            Table(comparison_table(comp), precision=2)]
        if (note := comparison_resolution_note(comp)) is not None:
            out.append(Text(note, "caption"))
        return out + [Text(MATCHED_NOTE, "caption")]
    return Section("matched", "At matched utility (by construction)", build)


def over_training(run: RunInputs) -> Section:
    def build() -> list[Block]:
        f = run.drawn
        out: list[Block] = [Row((Figure(f.utility), Figure(f.attack_by_epoch)))]
        return out + ([Figure(f.steps)] if f.steps is not None else [])
    return Section("over_training", "Over training", build, tab=True)


def attacks(run: RunInputs) -> Section:
    def build() -> list[Block]:
        f = run.drawn
        return [Table(f.metrics),
                Row((Figure(f.roc, "Click a legend entry to show or hide an attack; the primary attack of each "
                                      "architecture is shown."),
                     Figure(f.roc_loglog, "The low false-positive regime on log-log axes (LiRA's convention): an "
                                             "attack that is sure about a few members stands out here, not in the "
                                             "AUC.")))]
    return Section("attacks", "Attacks", build, tab=True)


#: the matched-utility table's long column names, shortened where the page is narrow: at their full widths
#: the last columns, the verdict among them, ran off the page's right edge
MATCHED_SHORT = {"comparison": "pair", "architecture": "arch", "shadow model": "shadow", "loss threshold": "loss",
                 "validation ": "val. ", "utility gap": "gap"}


def strongest(run: RunInputs) -> Section:
    """LiRA and RMIA beside the shadow attack, why attacks work (entropy), the post-hoc matched utility
    and the shadows' fidelity."""
    def build() -> list[Block]:
        f = run.drawn
        out: list[Block] = [
            Text("**The strongest attacks** — offline LiRA (Carlini et al.) and RMIA (Zarifzadeh et al.), with the "
                 "shadows as reference models, beside Shokri's shadow attack (final epoch)"),
            Table(f.strongest),
            Row((Figure(f.entropy, "Why attacks work: models are more certain (lower entropy) on the records they "
                                      "trained on."),))]
        if not f.matched.empty:
            matched = f.matched
            if "utility gap" in matched:  # blank on the reference rows: as text, so no renderer draws "None"
                gap = pd.to_numeric(matched["utility gap"], errors="coerce")
                matched = matched.assign(**{"utility gap": [f"{v:.3f}" if pd.notna(v) else "—" for v in gap]})
            short = {}
            for c in matched.columns:
                s = c
                for long_name, abbreviation in MATCHED_SHORT.items():
                    s = s.replace(long_name, abbreviation)
                short[c] = s
            out += [Text("**At matched utility** — each architecture at the checkpoint whose validation utility is "
                         "closest to the other's final one (the studies compare at similar utility)"),
                    Table(matched, short=short)]
        if not f.fidelity.empty:
            out.append(Details("Do the shadows track the victim? (the attacker's core assumption)", (
                Table(f.fidelity),
                Text("Mean loss of members and non-members, victim vs shadows, per checkpoint; a gap above 25 % means "
                     "thresholds and classifiers fitted on the shadows transfer badly to the victim.", "caption"))))
        return out
    return Section("strongest", "Strongest attacks & why", build, tab=True)


def examples(run: RunInputs) -> Section | None:
    """What the victim does with members vs non-members: translations with each token's probability,
    navigation maps with each agent's path (crisp maps where the app's map views exist, the task's
    rendered images otherwise), any other task's examples as JSON."""
    with_examples = [s for s in run.summaries if s.examples]
    if not with_examples:
        return None

    def build() -> list[Block]:
        out: list[Block] = [Text("What the victim does with members vs non-members", "subheading")]
        nav = [s for s in with_examples if s.example_kind == "navigation"]
        typed = {s.arch: NavigationExamples.from_dict(cast(Mapping[str, Any], s.examples)) for s in nav}  # the summary keeps the JSON
        out += [Text(navigation_stats(typed[s.arch], _name(s.arch))) for s in nav]
        ready = {s.arch: run.map_views[s.arch].maps for s in nav if run.map_views and s.arch in run.map_views}
        if ready:
            figs = [fig for role in ("member", "non-member") if (fig := navigation_map(ready, role)) is not None]
            out += [Row(tuple(Figure(f) for f in figs), columns=max(len(figs), 1)),
                    Text("Each agent's seeded query episode (the one the attack reads): the path runs through the cells "
                         "it visited, × marks where it stopped. Both architectures were trained on the same member "
                         "maps.", "caption")]
        for s in nav:
            maps = typed[s.arch].maps
            if s.arch not in ready and maps:
                out.append(Row(tuple(Image(m.png_base64, f"{_name(s.arch)}, {m.role} map (seed "
                                                          f"{m.seed}): return {m.episode_return:.2f}, "
                                                          f"{'?' if m.steps is None else m.steps} steps"
                                                          + ("" if m.reached_goal else ", goal not reached"))
                                     for m in maps), columns=len(maps)))
        for s in with_examples:
            kind = s.example_kind
            if kind == "translation":
                out.append(Html(translation_html(TranslationExamples.from_dict(cast(Mapping[str, Any], s.examples)),
                                                 _name(s.arch))))
            elif kind != "navigation":
                out.append(Code(json.dumps(s.examples, indent=1, ensure_ascii=False), "json"))
        return out
    return Section("examples", "Examples", build, tab=True)


def per_record(run: RunInputs) -> Section:
    """The per-record views (exposure quadrants, the reference budget, slices) where the caller
    computed them (:func:`core.analyses.record_views.report_views`, which refits LiRA and RMIA for the
    budget: the report computes them on request, the page never in its server), and where they are
    otherwise."""
    views = run.views

    def build() -> list[Block]:
        if views is None:
            return [Text("The per-record views (exposure FFNN vs RNN, the attacker's reference budget, vulnerability "
                         "per slice) are computed from the cached runs by the run report (the page's HTML download, "
                         "`python -m core report`) and on the **Analyses** page; `python -m core analyze --analysis "
                         "exposure,budget,slices` writes their data.", "caption")]
        out: list[Block] = [Text("Computed from the cached runs (per-record scores, the shadows as references); nothing "
                                 "was trained for them. `python -m core analyze --analysis exposure,budget,slices` "
                                 "writes their data as CSV.", "caption")]
        if views.exposure is not None:
            ex = views.exposure
            a, b = ex.archs
            out += [Text(f"Exposure: the same records under {_name(a)} and {_name(b)} "
                         f"({ATTACK_NAMES.get(ex.attack, ex.attack)})", "subheading"),
                    Table(exposure_table(ex)),
                    Text("A member is exposed by an architecture when its score lies above that architecture's "
                         "threshold at the FPR (set on its own non-members). "
                         + (f"Counts over {1 + len(ex.repeat_seeds)} cached repeats: mean with a 95 % t interval."
                            if ex.repeat_seeds else "One repeat cached: no interval over repeats."), "caption")]
            out += [Figure(exposure_figure(ex, fpr)) for fpr in ex.quadrants]
        if views.budget:
            out += [Text("The attacker's reference budget", "subheading"), Table(budget_table(views.budget)),
                    Text("Offline LiRA and RMIA refitted on subsets of the shadows as references; spread: 2.5–97.5 % "
                         "over which references were used; flattens at: the smallest budget within 0.01 AUC of all "
                         "references.", "caption"), Figure(budget_figure(views.budget))]
        if views.slices is not None:
            sl = views.slices
            out += [Text(f"Vulnerability per slice ({ATTACK_NAMES.get(sl.attack, sl.attack)})", "subheading"),
                    Table(slices_table(sl)),
                    Text(f"A slice with fewer than {sl.min_records} members or non-members is marked too small: "
                         "read its interval as inconclusive.", "caption")]
            out += [Figure(slices_figure(sl, name)) for name in sl.slicings]
        if views.skipped:
            out.append(Text("Not shown: " + "; ".join(f"{k} — {v}" for k, v in views.skipped.items()), "caption"))
        return out
    return Section("per_record", "Per-record views", build, tab=True)


def _timings(summary: RunSummary) -> str:
    return ", ".join(f"{k} {v:.1f}" for k, v in summary.timings.items() if isinstance(v, (int, float)))


def configuration(run: RunInputs) -> Section:
    """Each run's config with its hash, what data was read, the device and the timings."""
    def build() -> list[Block]:
        out: list[Block] = []
        for s in run.summaries:
            out += [Text(f"{_name(s.arch)} · config hash `{s.config_hash}`", "subheading"),
                    Code(json.dumps(s.config, indent=2, ensure_ascii=False), "json"),
                    Text(f"data: {plain_markdown(json.dumps({} if s.data is None else s.data.to_dict(), ensure_ascii=False))}  \n"
                         f"device: {s.device} · "
                         f"timings (s): {_timings(s)}", "caption")]
        return out
    return Section("configuration", "Configuration", build, collapsed=True)


def reproduce(run: RunInputs) -> Section | None:
    """The CLI commands that compute the same runs."""
    configs = run.configs
    if not configs:
        return None

    def build() -> list[Block]:
        out: list[Block] = [Code(cmd, "bash") for cmd in reproduce_commands(configs, run.overrides)]
        return out + [
            Text("Config hashes: " + ", ".join(f"{s.arch}: `{s.config_hash}`" for s in run.summaries),
                 "caption")]
    return Section("reproduce", "Reproduce headless", build, collapsed=True)


#: the sections of a run, in the order both renderers draw them: (id, builder → Section or None = absent)
SECTIONS: list[tuple[str, Callable[[RunInputs], Section | None]]] = [
    ("overview", overview), ("repeats", repeats), ("matched", matched_by_construction),
    ("over_training", over_training), ("attacks", attacks), ("strongest", strongest), ("examples", examples),
    ("per_record", per_record), ("configuration", configuration), ("reproduce", reproduce)]


def register_section(section_id: str, builder: Callable[[RunInputs], Section | None],
                     before: str | None = None) -> None:
    """Add a section to every view of a run, before the section ``before`` (default: the end); an id
    already there is replaced in place."""
    ids = [i for i, _ in SECTIONS]
    if section_id in ids:
        SECTIONS[ids.index(section_id)] = (section_id, builder)
        return
    SECTIONS.insert(ids.index(before) if before is not None else len(SECTIONS), (section_id, builder))


def unregister_section(section_id: str) -> None:
    SECTIONS[:] = [(i, b) for i, b in SECTIONS if i != section_id]


def run_view(run: RunInputs) -> list[Section]:
    """The sections of a run, in order (the absent ones left out)."""
    return [s for _, build in SECTIONS if (s := build(run)) is not None]
