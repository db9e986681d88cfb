"""Analyses: do RNNs leak more, and why do the attacks work? Entropy scatter with the attacks' decision boundaries,
vulnerability over training, memorization of early blocks, overtraining and model mismatch —
FFNN and RNN side by side, each with the study's finding and a verdict computed for this run — and
the per-record views: exposure FFNN vs RNN (flips behind a defense), the reference budget,
an audited ε beside the accountant's and vulnerability per slice (computed in core.analyses.record_views)."""
from __future__ import annotations

import json

import streamlit as st

from core.analyses import analyses_view, analysis, record_views
from core.analyses import registry as analysis_registry
from core.analyses.analyses_json import AnalysesResults
from core.analyses.analysis_results import CanaryAudit, ExposureView, Scatter, SlicesView
from core.analyses.repeats import repeat_config
from core.analyses.verdicts import RunVerdict
from core.defenses import registry as defense_registry
from core.defenses.spec import DefenseSpec
from core.experiment.pipeline import load_models
from core.foundations.config import ExperimentConfig
from core.foundations.errors import MIAError
from core.foundations.names import ARCH_NAMES as ARCH_LABELS
from core.foundations.names import ATTACK_NAMES as ATTACK_LABELS
from core.foundations.paths import cache_dir
from core.foundations.version import stamped
from core.measurement import studies
from core.measurement.metrics import EPSILON_HAT_HELP
from core.tasks import get_task
from core.views import analyses_text, analysis_figures, analysis_tables, record_view_figures, report
from core.views.plain import csv_text, plain_markdown
from ui.examples import show_record as draw_record
from ui.nav import format_seconds, job_line
from ui.shared import defender_for, defense_value_key, job_manager, summary_of
from ui.widgets import drawn, task_selector

st.title("Analyses: why do the attacks work?")
st.caption("Every view is computed from the cached runs (the long ones train extra models in a worker process, "
           "once, cancellable from the sidebar). Each states what the studies found and a verdict for this run, "
           "computed from that view's own numbers.")

c1, c2 = st.columns([3, 1])
with c1:
    task_name = task_selector(key="analyses:task")
task = get_task(task_name)
with c2:
    preset = st.selectbox("Preset", list(task.presets), key="analyses:preset")
if len(task.archs) < 2:  # a plugin with one model: every analysis here reads both architectures' runs
    st.info(f"{task.label or task_name} provides the {ARCH_LABELS[task.archs[0]]} only: the analyses compare FFNN "
            "with RNN, so they are unavailable for it. Its runs, attacks and defenses are on the other pages; "
            "the CLI's `analyze --archs` runs the single-model analyses.")
    st.stop()
configs: dict[str, ExperimentConfig] = {a: task.make_config(a, preset) for a in ("ffnn", "rnn")}
found = {a: summary_of(c) for a, c in configs.items()}
missing = [a for a, s in found.items() if s is None]
if missing:
    manager = job_manager()
    names = ", ".join(ARCH_LABELS[a] for a in missing)
    st.info(f"The analyses read trained runs, and {names} of the *{preset}* preset are not in the cache yet.")
    if st.button(f"Train & attack {names} ({preset}) in the background", type="primary"):
        manager.submit([configs[a] for a in missing])
        st.rerun()
    st.stop()
summaries = {a: s for a, s in found.items() if s is not None}  # both: the page stopped above otherwise


def verdict_box(v: RunVerdict | None, finding: str, label: str = "The studies") -> None:
    """The study's finding (or, with ``label``, what is checked) and this run's computed verdict."""
    st.markdown(f"**{label}:** {finding}")
    # the verdict's own word, no ✅/❌: a comparison from one run reads "inconclusive (one repeat)"
    if (line := analyses_text.run_verdict_line(v)) is not None:
        st.markdown(line)


def tab_verdict(name: str) -> None:
    """The finding of analysis ``name`` and the verdict computed from that analysis' data only
    (its registered ``verdict``: no tab shows a verdict another analysis computed); over the cached
    repeats too where they exist (paired FFNN − RNN, its interval and N)."""
    key = analysis_registry.get_analysis(name).verdict
    verdict_box(None if key is None else view.verdicts.get(key), studies.analysis_finding(name))
    if key is not None and (line := analyses_text.repeated_line(repeated, key)) is not None:
        st.markdown(line)


def downloads(name: str, results: dict, fig) -> None:
    """The figure as self-contained HTML and its data (``results``: analyses.json's layout, read typed on the click)
    as CSV, both written on the click only (a self-contained figure carries ~5 MB of plotly.js: building it on every
    rerun delayed the page)."""
    a, b = st.columns(2)
    a.download_button(f"{name}.html", lambda: fig.to_html(include_plotlyjs=True, full_html=True),
                      file_name=f"{name}.html", mime="text/html", key=f"dl-html-{name}", on_click="ignore")
    b.download_button(f"{name}.csv", lambda: csv_text(analysis_tables.tables(
                      analysis_registry.read_results({name: results[name]}))[name]),
                      file_name=f"{name}.csv", mime="text/csv", key=f"dl-csv-{name}", on_click="ignore")


@st.cache_data(max_entries=16, show_spinner=False)
def _cached_analyses(key: tuple[str, ...], _configs: dict[str, ExperimentConfig]) -> dict:
    """:func:`core.analyses.analyses_view.cached_analyses` (the scatter, the most exposed members, the
    vulnerability, typed: cached runs and models only), once per set of runs (``key``: cache folder and hashes)."""
    return analyses_view.cached_analyses(_configs)


def cached_analyses(cfgs: dict[str, ExperimentConfig]) -> dict:
    return _cached_analyses((str(cache_dir()),) + tuple(c.config_hash for c in cfgs.values()), cfgs)


@st.cache_resource(max_entries=4, show_spinner=False)
def task_data(config_hash: str, _cfg: ExperimentConfig):
    """The task's records (images, sentences) for the most exposed members, loaded once per config."""
    return get_task(_cfg.task).load(_cfg)


@st.cache_data(max_entries=256, show_spinner="Asking the victim about the record…")
def record_view(config_hash: str, arch: str, index: int, role: str):
    """One record as the task describes it (Task.describe_record), with ``arch``'s victim's answer
    (loaded only by a task that shows one)."""
    return task.describe_record(configs[arch], task_data(configs["ffnn"].config_hash, configs["ffnn"]), index,
                                lambda: load_models(configs[arch]).model("victim"), role)


manager = job_manager()
#: the long analyses run as worker jobs (core.jobs.worker, kind "analysis"), one per architecture: the registered ones
#: whose job takes no parameter but its name (the audit's and the budget's have their own tabs' controls)
LONG = tuple(a.name for a in analysis_registry.registered() if a.long and not a.job_params)


def long_jobs(name: str):
    return manager.group([configs["ffnn"], configs["rnn"]], "analysis", {"name": name})


def long_repeat_jobs(name: str, r: int):
    rc = repeat_configs[r]
    return manager.group([rc["ffnn"], rc["rnn"]], "analysis", {"name": name})


def job_results(group) -> dict | None:
    """``{arch: result}`` when every job of the (ffnn, rnn) group is done, else None."""
    if all(j is not None and j.state == "done" for j in group.jobs):
        return {a: j.result for a, j in zip(("ffnn", "rnn"), group.jobs)}
    return None


@st.cache_data(ttl=15, max_entries=16, show_spinner=False)
def repeats_cached(key: tuple[str, ...], _configs: dict[str, ExperimentConfig]) -> int:
    """Repeats 0, 1, … cached for both architectures (Train & attack's repeats, `compare --repeats`)."""
    return analyses_view.cached_repeat_count(_configs)


n_rep = repeats_cached((str(cache_dir()),) + tuple(c.config_hash for c in configs.values()), configs)
repeat_configs = [{a: repeat_config(c, r) for a, c in configs.items()} for r in range(n_rep)]
# the long analyses whose worker jobs finished, for this run and for each cached repeat: each job's JSON read once,
# typed (core.analyses.registry.read_result)
long_results = {name: analysis_registry.read_result(name, done) for name in LONG
                if (done := job_results(long_jobs(name))) is not None}
repeat_results = {r: {name: analysis_registry.read_result(name, done) for name in LONG
                      if (done := job_results(long_repeat_jobs(name, r))) is not None}
                  for r in range(1, n_rep)}
try:  # one core call: the page draws what it returns (core.analyses.analyses_view; nothing trains)
    view = analyses_view.analyses_view(configs, long_results, n_rep, repeat_results, compute=cached_analyses)
except MIAError as exc:  # a summary whose models are gone from the cache: said, never retrained here
    st.error(f"Could not load the trained models: {plain_markdown(exc)}")
    st.stop()
base = view.typed  # what the tabs draw: each analysis' data typed (the exports hold its JSON, all_results)
#: what the downloads and the export hold: this view's results, plus the per-record views whose tabs ran
all_results = view.to_dict()
repeated = view.repeats
if repeated is not None:
    text, missing_note = analyses_text.repeated_summary(repeated, n_rep)
    st.markdown(text)
    if missing_note:
        st.caption(missing_note)

# only the open tab runs (on_change="rerun": switching tabs reruns the page): a hidden tab's views are
# neither computed nor sent to the browser, which drew every tab's figures on each visit before
tabs = st.tabs(["Entropy scatter", "Over training", "Memorization", "Overtraining", "Model mismatch",
                "Exposure per record", "Reference budget", "Audited ε", "Slices"], key="analyses:tab",
               on_change="rerun")


# ---------------------------------------------------------------------------- scatter
def defended_scatter(mechanism: str, value: float) -> dict[str, Scatter]:
    """The scatter of both architectures' outputs behind a defense (naive attacker: its thresholds
    and boundaries unchanged, its scores on the defended outputs): the Defenses page's points."""
    points = {arch: defender_for(cfg).point(DefenseSpec(mechanism, value), "naive", utility=False, quantile=True)
              for arch, cfg in configs.items()}
    return analyses_view.defended_scatter(view.summaries, points)  # typed, as the undefended scatter beside it


@st.cache_resource(max_entries=32, show_spinner=False)
def scatter_figure(key: tuple, _scatter: dict[str, Scatter], attack: str, scale: str):
    """The scatter's figure, built once per (runs, outputs, defense value) × attack × scale and shared
    read-only: a rerun (a selection, another tab) does not lay out its contours and histograms again."""
    return analysis_figures.scatter_figure(_scatter, attack, scale)


for _ in drawn(tabs[0]):
    o1, o2, o3 = st.columns([2, 3, 2])
    with o1:
        # "undefended", then every registered mechanism as "<short name> <parameter symbol>" ("Dirichlet k")
        mechanisms = {f"{m.short} {m.parameter.symbol}": m for m in defense_registry.all_mechanisms()}
        outputs = st.radio("Outputs", ["undefended", *mechanisms], horizontal=True,
                           key="analyses:outputs", help="the records as the attack sees them behind a defense "
                                                        "of the Defenses page (naive attacker)")
    scatter = base["scatter"]
    if outputs != "undefended":
        shown_mech = mechanisms[outputs]
        mechanism, values = shown_mech.name, list(shown_mech.parameter.slider)
        chosen = st.session_state.get(defense_value_key(task_name, mechanism), shown_mech.parameter.slider_default)
        chosen = min(values, key=lambda v: abs(v - chosen))
        with o2:
            value = st.select_slider(shown_mech.parameter.symbol, options=values, value=chosen,
                                     key=f"analyses:{mechanism}", format_func=lambda v: f"{v:g}",
                                     help="starts at the value last chosen on the Defenses page")
        try:
            scatter = defended_scatter(mechanism, float(value))
        except MIAError as exc:
            st.error(f"Could not defend these runs: {plain_markdown(exc)}")
    attacks, default = analyses_text.scatter_attacks(base["scatter"], scatter)
    with o3:
        attack = st.selectbox("Attack", attacks, index=default, format_func=lambda n: ATTACK_LABELS.get(n, n))
        scale = st.radio("Axes", analysis_figures.SCALES, horizontal=True, key="analyses:scale",
                         help="log₁₀ of both signals (records clipped at 1e-12 drawn on a strip below the axis), "
                              "or the signals themselves")
    fig = scatter_figure((tuple(c.config_hash for c in configs.values()), outputs,
                          None if outputs == "undefended" else float(value)), scatter, attack, scale)
    event = st.plotly_chart(fig, width="stretch", on_select="rerun", selection_mode=("box", "lasso"), key="scatter")
    cols = st.columns(2)
    for col, arch in zip(cols, ("ffnn", "rnn")):
        heading, notes = analyses_text.scatter_notes(arch, scatter[arch], attack)
        with col:
            st.markdown(heading)
            for note in notes:
                st.caption(note)
    # the sentence read off what the figure shows at this scale (log: the clouds' centres; linear: the means)
    st.markdown(analyses_text.scatter_separation(scatter, scale))
    tab_verdict("scatter")
    points = (event.selection.points if event and getattr(event, "selection", None) else []) or []
    if points:
        st.markdown(f"**Selected records** ({len(points)})")
        rows = []
        for p in points[:50]:
            i = p.get("customdata")
            if i is None:
                continue
            i = int(i[0] if isinstance(i, list) else i)
            rows.append({"record": i, "log10 APE": p.get("x"), "log10 CE": p.get("y")})
        st.dataframe(rows, hide_index=True)
    st.markdown("**Most exposed members** (highest primary-attack score)")
    for col, arch in zip(st.columns(2), ("ffnn", "rnn")):
        with col:
            st.caption(ARCH_LABELS[arch])
            for index, label in analyses_text.exposed_members(base["most_exposed"][arch],
                                                              3 if task.map_views else 5):  # maps take room
                draw_record({arch: record_view(configs[arch].config_hash, arch, index, "member")},
                            key=f"exposed-{arch}-{index}", note=label, width=96)
    downloads("scatter", all_results, fig)

# ---------------------------------------------------------------------------- over training
for _ in drawn(tabs[1]):
    fig = analysis_figures.vulnerability_figure(base["vulnerability"])
    st.plotly_chart(fig, width="stretch")
    for note in analyses_text.vulnerability_notes(base["vulnerability"]):
        st.caption(note)
    tab_verdict("vulnerability")
    downloads("vulnerability", all_results, fig)


def group_unfinished(group, what: str) -> bool:
    """Draw a job group's state (queued/running, failed, cancelled); True while it is unfinished."""
    jobs = [j for j in group.jobs if j is not None]
    if jobs and not group.done:
        running = group.running
        st.info(f"{what} in a worker: {job_line(running) if running else 'queued'} — cancel it in the sidebar; "
                "the page updates when it finishes.")
        return True
    for j in jobs:
        if j.state == "failed":
            st.error(f"The last run failed ({plain_markdown(j.label)}): {plain_markdown(j.error)}")
        elif j.state == "cancelled":
            st.caption(f"{plain_markdown(j.label)} was cancelled (models already trained stay cached).")
    return False


def long_tab(name: str, draw, explain: str) -> None:
    if name in long_results:
        fig = draw(long_results[name])
        st.plotly_chart(fig, width="stretch")
        tab_verdict(name)
        downloads(name, all_results, fig)
        if analysis_registry.get_analysis(name).repeat is not None and n_rep >= 2:
            groups = [long_repeat_jobs(name, r) for r in range(1, n_rep)]
            todo = [c for g, r in zip(groups, range(1, n_rep))
                    for c, j in zip((repeat_configs[r]["ffnn"], repeat_configs[r]["rnn"]), g.jobs)
                    if j is None or j.state in ("failed", "cancelled")]
            if any(not g.done for g in groups):
                st.caption(f"The {name} analysis runs on the other repeats in a worker; the verdict over repeats "
                           "appears when they finish.")
            elif todo and st.button(f"Run the {name} analysis on the other {n_rep - 1} cached repeat"
                                    f"{'s' if n_rep > 2 else ''} (in a worker): a verdict over {n_rep} repeats",
                                    key=f"run-rep-{name}"):
                manager.submit(todo, "analysis", {"name": name})
                st.rerun()
        return
    st.markdown(f"**The studies:** {studies.analysis_finding(name)}")
    st.caption(explain)
    group = long_jobs(name)
    if group_unfinished(group, "Running"):
        return
    # a time on the button: these runs' own measured training times scaled by the work the analysis
    # repeats, widened by how far real runs fell from that scaling (core.analyses.analysis.time_range)
    span = analysis.time_range(name, [summaries["ffnn"], summaries["rnn"]])
    about = f" — about {format_seconds(span[0])} to {format_seconds(span[1])}" if span is not None else ""
    if st.button(f"Run the {name} analysis (in a worker){about}", key=f"run-{name}",
                 help="Both architectures, one after another. The time is scaled from how long these runs' own "
                      "training took when they were trained (their summaries' timings) by the work the analysis "
                      "repeats, then widened by the range real runs took against that scaling "
                      "(docs/performance.md). It grows with the machine's load." if span is not None else
                      "No time estimate: these runs carry no measured training time."):
        todo = [c for c, j in zip((configs["ffnn"], configs["rnn"]), group.jobs) if j is None or j.state != "done"]
        manager.submit(todo, "analysis", {"name": name})
        st.rerun()


for _ in drawn(tabs[2]):
    long_tab("memorization", analysis_figures.memorization_figure,
             "Victim and shadows learn their members in 4 disjoint blocks, one after another (a quarter of the "
             "preset's epochs each); every block is then attacked on its own. Trains 1 + n_shadows models per "
             "architecture.")
for _ in drawn(tabs[3]):
    long_tab("overtraining", analysis_figures.overtraining_figure,
             "The same run for 3× the preset's epochs, attacked at 8 checkpoints (a longer run, cached).")
for _ in drawn(tabs[4]):
    long_tab("mismatch", analysis_figures.mismatch_figure,
             "Shadows with half and double the task's width knob attack the unchanged victim.")

# ---------------------------------------------------------------------------- per-record views
HASHES = tuple(c.config_hash for c in configs.values())


@st.cache_data(max_entries=32, show_spinner=False)
def exposure_of(hashes: tuple[str, ...], attack: str | None, mechanism: str | None, value: float | None,
                _configs: dict[str, ExperimentConfig]) -> ExposureView:
    """The exposure view (quadrants at both FPRs, flips behind a defense): reads cached scores only."""
    points = None
    if mechanism is not None:
        assert value is not None  # a mechanism comes with its value
        # every attack's per-record scores, quantile regression's too (the slider's fast point leaves it out)
        points = {a: defender_for(c).point(DefenseSpec(mechanism, value), "naive", utility=False, quantile=True)
                  for a, c in _configs.items()}
    # the page's cached runs (``_configs`` is the page's ``configs``)
    return record_views.exposure_view(_configs, {a: summaries[a] for a in _configs}, attack,
                                      defended=points, repeats=record_views.cached_repeats(_configs))


@st.cache_data(max_entries=16, show_spinner=False)
def slices_of(hashes: tuple[str, ...], attack: str | None, _configs: dict[str, ExperimentConfig]) -> SlicesView:
    return record_views.slices_view(_configs, {a: summaries[a] for a in _configs}, attack)


def show_record(position: int, view: ExposureView) -> None:
    """One evaluated record as each architecture sees it: the record itself, its scores, loss and entropy."""
    index, member, title, notes = analyses_text.record_notes(view, position)
    st.markdown(title)
    for col, (arch, note) in zip(st.columns(2), notes.items()):
        col.caption(note)
    role = "member" if member else "non-member"
    draw_record({arch: record_view(configs[arch].config_hash, arch, index, role) for arch in notes},
                key=f"record-{index}")


for _ in drawn(tabs[5]):
    st.caption("The same evaluated records under both architectures (same seed, same split): each record's "
               "membership score under the FFNN against the RNN, with each one's threshold at the chosen FPR (set "
               "on its own non-members). Reads the cached scores; nothing trains.")
    e1, e2, e3 = st.columns([2, 2, 3])
    with e1:
        fpr = st.radio("FPR", ["0.01", "0.001"], format_func=lambda f: f"{float(f):.1%}", horizontal=True,
                       key="exposure:fpr")
    strongest = [a for a in record_views.STRONGEST if all(s.per_record.has_scores(a) for s in summaries.values())]
    with e2:
        attack_x = st.selectbox("Attack", strongest, format_func=lambda n: ATTACK_LABELS.get(n, str(n)),
                                key="exposure:attack") if strongest else None
    with e3:
        # "none", then every registered mechanism as "<short name> <parameter symbol>" ("Dirichlet k")
        defended = {f"{m.short} {m.parameter.symbol}": m for m in defense_registry.all_mechanisms()}
        behind = st.radio("Flips behind a defense", ["none", *defended], horizontal=True,
                          key="exposure:defense", help="members that stop or start being exposed at the Defenses "
                                                       "page's current value (naive attacker)")
    mech = val = None
    if behind != "none":
        param = defended[behind].parameter
        mech, values = defended[behind].name, list(param.slider)
        chosen = st.session_state.get(defense_value_key(task_name, mech), param.slider_default)
        val = st.select_slider(param.symbol, options=values,
                               value=min(values, key=lambda v: abs(v - chosen)), key=f"exposure:{mech}",
                               format_func=lambda v: f"{v:g}")
    exposed: ExposureView | None
    try:
        exposed = exposure_of(HASHES, attack_x, mech, float(val) if val is not None else None, configs)
    except MIAError as exc:
        st.error(f"Could not compute the exposure view: {plain_markdown(exc)}")
        exposed = None
    if exposed is not None:
        all_results["exposure"] = exposed.to_dict()  # the exports' layout (analyses.json)
        fig = record_view_figures.exposure_figure(exposed, fpr)
        event = st.plotly_chart(fig, width="stretch", on_select="rerun", selection_mode=("points",),
                                key="exposure-scatter")
        quadrants = record_view_figures.quadrant_names(list(exposed.archs))
        st.dataframe(analyses_text.quadrant_rows(exposed, fpr, quadrants), hide_index=True)
        st.caption(analyses_text.exposure_caption(exposed, fpr))
        for line in analyses_text.flip_lines(exposed, fpr, behind, val if val is not None else 0.0):
            st.markdown(line)
        picked = [p for p in ((event.selection.points if event and getattr(event, "selection", None) else []) or [])
                  if p.get("customdata") is not None]
        first = picked[0]["customdata"] if picked else analyses_text.first_record(exposed, fpr)
        first = int(first[0] if isinstance(first, list) else first)
        position = st.number_input("Record (position in the evaluated set; click a point to pick it)", 0,
                                   len(exposed.records) - 1, first, key=f"exposure:record:{first}")
        show_record(int(position), exposed)
        downloads("exposure", all_results, fig)

for _ in drawn(tabs[6]):
    st.caption("Offline LiRA and RMIA using only some of the shadows as reference models, refitted per subset; "
               "bars: 2.5–97.5 % over which references were used (every subset when there are few). More references "
               "need more shadows (train a preset with a larger n_shadows).")
    budgets = None
    online_n = st.select_slider("Online LiRA: extra IN/OUT reference models (trained on request in a worker, "
                                "cached; a stronger threat model)", [0, 2, 4, 8], value=0, key="budget:online")
    if online_n == 0:
        if st.toggle("Compute the budget curves (refits both attacks on every subset of references; cached)",
                     key="budget:on"):
            # the refits run in a worker (the analysis job kind "budget", no online models): never in the server
            params = {"name": "budget", "online": 0}
            group = manager.group([configs["ffnn"], configs["rnn"]], "analysis", params)
            budgets = job_results(group)
            if budgets is None and not group_unfinished(group, "Refitting LiRA and RMIA on each subset of references"):
                todo = [c for c, j in zip((configs["ffnn"], configs["rnn"]), group.jobs)
                        if j is None or j.state not in ("done", "failed", "cancelled")]
                if todo:
                    manager.submit(todo, "analysis", params)
                    st.rerun()
                elif st.button("Refit the budget curves again (in a worker)", key="rerun-budget"):
                    manager.submit([c for c, j in zip((configs["ffnn"], configs["rnn"]), group.jobs)
                                    if j is None or j.state != "done"], "analysis", params)
                    st.rerun()
    else:
        params = {"name": "budget", "online": online_n}
        group = manager.group([configs["ffnn"], configs["rnn"]], "analysis", params)
        budgets = job_results(group)
        if budgets is None and not group_unfinished(group, "Training the online references") and st.button(
                f"Train {online_n} online references per architecture and draw the curves (in a worker)",
                key="run-budget"):
            todo = [c for c, j in zip((configs["ffnn"], configs["rnn"]), group.jobs) if j is None or j.state != "done"]
            manager.submit(todo, "analysis", params)
            st.rerun()
    if budgets:
        all_results["budget"] = budgets  # each job's result arrives as its JSON layout (analyses.json's)
        budget_views = analysis_registry.read_result("budget", budgets)  # read once, typed
        fig = record_view_figures.budget_figure(budget_views)
        st.plotly_chart(fig, width="stretch")
        for note in analyses_text.budget_notes(budget_views):
            st.caption(note)
        downloads("budget", all_results, fig)

for _ in drawn(tabs[7]):
    st.caption("Steinke, Nasr & Jagielski (2023): one training run of the victim's recipe with m canaries, each "
               "included with probability ½; the auditor guesses on the canaries it is most confident about and the "
               "number of correct guesses proves a lower bound on ε at δ (95 % confidence, Bonferroni over the "
               "number of guesses). Beside it: Opacus' accountant ε of the same run (DP-SGD presets only) and the "
               "attack-derived ε̂ of the cached run: " + EPSILON_HAT_HELP)
    design = task.canary_design
    if design is None:
        st.info("This task has no audit canaries yet; the design is in docs/record_views.md.")
    else:
        st.markdown(f"**Canaries:** {design}. Cost: one extra training per architecture (cached).")
        m = st.select_slider("Canaries m", [20, 50, 100, 200], value=100, key="audit:m")
        params = {"name": "audit", "canaries": m}
        group = manager.group([configs["ffnn"], configs["rnn"]], "analysis", params)
        done = job_results(group)
        if done is not None:
            # each job's canary audit arrives as its JSON layout: read once, typed
            audits = {a: record_views.audit_beside(CanaryAudit.from_dict(entry), summaries[a])
                      for a, entry in done.items()}
            view = view.with_results(audit=audits)  # its verdict joins the others
            all_results.update(audit=view.results["audit"],  # analyses.json's layout
                               verdicts={k: v.to_dict() for k, v in view.verdicts.items()})
            fig = record_view_figures.audit_figure(audits)
            st.plotly_chart(fig, width="stretch")
            st.dataframe(analyses_text.audit_rows(audits), hide_index=True)
            if analyses_text.audit_saturated(audits):
                st.caption("Every guess at the best k was right: the bound is then set by the number of canaries, not "
                           "by the model; audit with more canaries to prove more.")
            st.plotly_chart(record_view_figures.audit_guesses_figure(audits), width="stretch")
            st.dataframe(analyses_text.estimator_rows(audits), hide_index=True)
            st.caption("f-DP bound: Mahloujifar, Melis & Chaudhuri 2024, Gaussian family, 95 % (Bonferroni over k); its "
                       "ε assumes a Gaussian trade-off curve. Gaussian-DP estimate: μ̂ = √2·Φ⁻¹(AUC) of the canaries "
                       "with a bootstrap interval — an estimate, not a bound (Dong, Roth & Su 2019, Cor. 2.13 for ε); "
                       "∞: more resamples than the interval's tail split the canaries perfectly.")
            audit_key = analysis_registry.get_analysis("audit").verdict
            verdict_box(None if audit_key is None else view.verdicts.get(audit_key),
                        "an audited ε is a lower bound: it must never exceed the accountant's upper bound (DP-SGD "
                        "runs).", label="The check")
            downloads("audit", all_results, fig)
        elif not group_unfinished(group, "Training the canary runs") and st.button(
                f"Audit both architectures with {m} canaries (in a worker)", key="run-audit"):
            todo = [c for c, j in zip((configs["ffnn"], configs["rnn"]), group.jobs) if j is None or j.state != "done"]
            manager.submit(todo, "analysis", params)
            st.rerun()

for _ in drawn(tabs[8]):
    sliced: SlicesView | None
    try:
        sliced = slices_of(HASHES, None, configs)
    except MIAError as exc:
        st.error(f"Could not slice the records: {plain_markdown(exc)}")
        sliced = None
    if sliced:
        all_results["slices"] = sliced.to_dict()
        slicings = sliced.slicings
        slicing = st.radio("Slice by", slicings, horizontal=True, key="slices:by") if len(slicings) > 1 else slicings[0]
        fig = record_view_figures.slices_figure(sliced, slicing)
        st.plotly_chart(fig, width="stretch")
        st.dataframe(analyses_text.slice_rows(sliced, slicing), hide_index=True)
        st.caption(analyses_text.slices_caption(sliced))
        downloads("slices", all_results, fig)


def exported() -> dict:
    """What the exports hold: this run's results, and the per-record views that read cached scores only
    (exposure at its default attack, slices) where their tab was not open in this run: computed on the
    click, from the same caches the tabs use."""
    out = dict(all_results)  # with the verdicts over the cached repeats, as `analyze --repeats N` writes them
    try:
        if "exposure" not in out:
            out["exposure"] = exposure_of(HASHES, None, None, None, configs).to_dict()
        if "slices" not in out:
            out["slices"] = slices_of(HASHES, None, configs).to_dict()
    except MIAError:  # a view these runs cannot give (e.g. different records): the rest is exported
        pass
    return out


with st.expander("Reproduce headless · export"):
    st.code(f"python -m core analyze --task {task_name} --preset {preset} --analysis all --out analyses/")
    # both written on the click only (every figure's HTML and the records' JSON, on every rerun otherwise)
    st.download_button("Export report (one self-contained HTML: config, verdicts, every figure computed so far)",
                       lambda: report.html_report(AnalysesResults.from_dict(exported()),
                                                  {a: c.to_dict() for a, c in configs.items()},
                                                  f"MIA Explorer analyses — {task_name}, {preset}"),
                       file_name=f"analyses_{task_name}_{preset}.html", mime="text/html", on_click="ignore")
    st.download_button("analyses.json", lambda: json.dumps(stamped(exported(), "analyses"), default=str),
                       file_name="analyses.json", mime="application/json", on_click="ignore")
