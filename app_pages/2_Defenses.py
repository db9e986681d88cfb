"""Defenses: slide the Dirichlet mechanism's k or the Gaussian privacy module's σ and watch attack
accuracy, utility loss and the privacy guarantee move — on cached models, FFNN and RNN side by side."""
from __future__ import annotations

import dataclasses

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from core.analyses.repeats import cached_repeat_configs, defense_curve_bands, repeat_config
from core.defenses import registry as defense_registry
from core.defenses.dirichlet import saturated_share
from core.defenses.side_by_side import PointCall, PointLanes
from core.defenses.spec import DefenseSpec
from core.experiment.pipeline import config_of
from core.experiment.results import DefendedPoint, DefenseBaseline, RunSummary
from core.foundations.config import MAX_DRAWS, ExperimentConfig, config_changes
from core.foundations.errors import MIAError
from core.foundations.names import ARCH_NAMES as ARCH_LABELS
from core.foundations.names import ATTACK_SHORT, UTILITY_NAMES
from core.measurement import studies
from core.tasks import get_task
from core.views.defense_cards import point_cards
from core.views.defense_figures import (
    NOT_MEASURED,
    band_caption,
    defended_entropy_histogram,
    defense_curves,
    defense_table,
    defense_table_display,
)
from core.views.plain import plain_markdown
from ui import widgets
from ui.nav import job_line
from ui.shared import defender_for, defense_value_key, job_manager, runs_of, summary_of
from ui.widgets import arch_label, drawn, one_architecture_note, task_selector

st.title("Defenses after training")
st.caption("Noise added to a trained model (nothing here retrains): slide it and watch the attacks, the utility and "
           "the guarantee move, FFNN and RNN side by side.")
with st.expander("The two mechanisms and the two attackers"):  # folded: the numbers first on a lecturer's screen
    st.caption("Both mechanisms act on a trained model, so nothing here retrains a victim or a shadow. "
               "**Dirichlet mechanism** (paper 001): every output distribution p is replaced by a sample of Dir(k·p) — "
               "small k scatters the answers. **Gaussian privacy module** (paper 000, Algorithm 1): the trained weights "
               "get N(0, σ²) noise, then the model answers. The *naive* attacker was fitted on undefended shadows "
               "(the studies' setting); the *adaptive* attacker knows the mechanism, applies it to its own shadows "
               "and refits.")

c1, c2, c3, c4 = st.columns([2, 2, 1, 2])
with c1:
    task_name = task_selector()
task = get_task(task_name)
with c2:
    archs = st.multiselect("Architectures", list(task.archs), default=list(task.archs), format_func=arch_label)
    one_architecture_note(task)
with c3:
    preset = st.selectbox("Preset", list(task.presets))
with c4:
    mechanism = st.radio("Mechanism", defense_registry.names(), horizontal=True,
                         format_func=lambda n: defense_registry.get(n).label)
mech = defense_registry.get(mechanism)
param = mech.parameter
if not archs:
    st.info("Pick at least one architecture.")
    st.stop()
archs = [a for a in ("ffnn", "rnn") if a in archs]  # a stable order whatever the clicks
configs: dict[str, ExperimentConfig] = {a: task.make_config(a, preset) for a in archs}


def run_label(summary: RunSummary, base: ExperimentConfig) -> str:
    """A cached run named by its preset and what it changed from that preset."""
    changed = [f"{k}={v}" for k, v in config_changes(base, config_of(summary)).items()]
    return f"{summary.settings.preset}" + (f" · {', '.join(changed)}" if changed else " (as the preset)")


# any cached run can be defended: the preset's by default, or one trained with other settings
runs = {a: runs_of(task_name, a) for a in archs}
# folded: on a projector the numbers below are what the class should see first; it holds the repeats' box too
settings = st.expander("Trained runs and repeats", expanded=False) if any(runs.values()) else None
if settings is not None:
    with settings:
        cols = st.columns(len(archs))
        for col, arch in zip(cols, archs):
            options = {s.config_hash: s for s in runs[arch]}
            if not options:
                continue
            default = configs[arch].config_hash
            keys = [default] if default in options else []
            keys += [k for k in options if k != default]
            # plain string options (labels carry the hash): stable across reruns and testable
            labels = {f"{run_label(options[k], configs[arch])} [{k[:6]}]": k for k in keys}
            chosen = labels[col.selectbox(f"{ARCH_LABELS[arch]} run", list(labels), key=f"run:{task_name}:{arch}")]
            try:
                configs[arch] = config_of(options[chosen])
            except MIAError as exc:
                col.error(f"This run cannot be reloaded: {plain_markdown(exc)}")

# ---------------------------------------------------------------------------- trained models?
missing = [a for a, c in configs.items() if summary_of(c) is None]
if missing:
    manager = job_manager()
    todo = [configs[a] for a in missing]
    job = manager.get(manager.key_of(todo))
    names = ", ".join(ARCH_LABELS[a] for a in missing)
    if job is not None and not job.done:
        running = job.running
        st.info(f"Training {names} ({task_name}, {preset}) in the background…")
        # the same figure as the sidebar's (ui.nav.job_line: the whole job's fraction)
        st.progress(running.fraction if running else 0.0, text=job_line(running) if running else "queued…")
        st.button("Refresh")
        st.stop()
    if job is not None and job.error:
        st.error(f"The last run failed: {plain_markdown(job.error)}")
    st.info(f"Defenses act on trained models, and {names} of the *{preset}* preset are not in the cache yet. "
            f"Run Train & attack for them first (it runs in the background; this page picks them up).")
    if st.button(f"Train & attack {names} ({preset})", type="primary"):
        manager.submit(todo)
        st.rerun()
    st.page_link("app_pages/1_Train_and_attack.py", label="or open Train & attack →")
    st.stop()


try:
    defenders = {a: defender_for(c) for a, c in configs.items()}
except MIAError as exc:
    st.error(f"Could not load the trained models: {plain_markdown(exc)}")
    st.stop()


@st.cache_data(ttl=15, max_entries=32, show_spinner=False)
def repeats_cached(config_hash: str, _cfg: ExperimentConfig) -> int:
    """How many repeats (0, 1, …) of a run are cached: what the curves can band over without training."""
    return len(cached_repeat_configs(_cfg))


available = min(repeats_cached(c.config_hash, c) for c in configs.values())
n_repeats = 1
if available >= 2:
    # in the folded box with the runs: the class sees the numbers first (the cards' heading says the repeats)
    n_repeats = int((settings or st).number_input(
        "repeats in the curves' bands", 1, available, available, key=f"repeats:{task_name}:{preset}",
        help=f"{available} repeats of {'these runs' if len(configs) > 1 else 'this run'} are cached (seeds derived "
             "from the run's seed; Train & attack's repeats, or `python -m core compare --repeats N`): the curves "
             "below show the 95 % interval over them (each repeat the mean of its draws). Each repeat re-scores "
             "its own cached models."))
repeat_defenders: dict[str, list] = {}
try:
    for a, c in configs.items():
        # repeats_cached already counted them: no cache reads on a slider step (repeat_config is pure)
        repeat_defenders[a] = [defenders[a]] + [defender_for(repeat_config(c, r)) for r in range(1, n_repeats)]
except MIAError as exc:
    st.error(f"Could not load a repeat's models: {plain_markdown(exc)}")
    repeat_defenders = {a: [d] for a, d in defenders.items()}


def job_allows_submit(job, what: str) -> bool:
    """Draw where a worker job of this page stands (none, failed, cancelled, queued or running); True when
    no job is under way, so a (re)submit button may show."""
    if job is None:
        return True
    if job.state == "failed":
        st.error(f"{what} failed: {plain_markdown(job.error)}")
        return True
    if job.state == "cancelled":
        st.caption(f"{what} was cancelled (pairs and models already computed stay cached).")
        return True
    if job.active:
        ev = job.event
        st.caption(f"{what}: {'queued' if job.state == 'queued' else 'running in a worker'}"
                   + (f" · {job.fraction:.0%}" if ev else "") + " — cancel it in the sidebar; the page updates when "
                   "it finishes.")
    return False


#: one card: (row, method, args, kwargs) — row "r1", "r2" or "strong" (a row of columns) or "" (full width)
Card = tuple[str, str, tuple, dict]


def cards_of(point: DefendedPoint, base: DefenseBaseline, n_nonmembers: int) -> list[Card]:
    """One architecture's attack cards at ``point`` (draw 1's or every draw's: the caller labels), their 95 %
    intervals' line and the guarantee's caption, as data (:func:`core.views.defense_cards.point_cards`): drawn by
    :func:`draw_cards`, replaced one by one where they changed by :func:`redraw_cards`. Draw 1's and every draw's
    point of one value give the same cards in the same order (the same attacks): only the numbers differ. What cannot
    move with the slider at a value (ε in theory, δ, γ) is a caption, not a card."""
    cards, intervals, guarantee = point_cards(point, base, n_nonmembers)
    out: list[Card] = [(c.row, "metric", (c.label, c.value, c.delta),
                        {"delta_color": "inverse", "help": c.help}) for c in cards]
    out.append(("", "caption", (intervals,), {}))
    out.append(("", "caption", (guarantee,), {}))
    return out


def draw_cards(cards: list[Card]) -> list[DeltaGenerator]:
    """Draw ``cards`` (each row of columns side by side); returns each card's element, which
    :func:`redraw_cards` replaces in place (an element's own DeltaGenerator, not an ``st.empty``: a placeholder
    would clear and rebuild the cards in the browser on every script run)."""
    elements: list[DeltaGenerator] = []
    i = 0
    while i < len(cards):
        row = cards[i][0]
        n = next((j for j in range(i, len(cards)) if cards[j][0] != row), len(cards)) - i if row else 1
        places = st.columns(n) if row else [st]
        for place, (_, method, args, kwargs) in zip(places, cards[i:i + n]):
            elements.append(getattr(place, method)(*args, **kwargs))
        i += n
    return elements


def redraw_cards(elements: list[DeltaGenerator], old: list[Card], new: list[Card]) -> None:
    """Replace, in place, the cards' ``elements`` (as :func:`draw_cards` drew ``old``) whose content ``new`` changes:
    only the numbers that moved are sent to the browser (the same cards in the same order, :func:`cards_of`)."""
    for element, was, now in zip(elements, old, new):
        if was != now:
            getattr(element, now[1])(*now[2], **now[3])


def draw_utility(point: DefendedPoint, base: DefenseBaseline) -> None:
    """One architecture's utility cards at ``point`` (its utility measured)."""
    name = base.utility_metric  # the defender's task's metric
    metric = None if name is None else UTILITY_NAMES.get(name, name)
    u1, u2 = st.columns(2)
    u = point.utility
    u1.metric(f"utility ({metric}, unseen records)", "—" if u is None else f"{u:.3f}",
              None if u is None or base.utility is None else f"{u - base.utility:+.3f}")
    loss = point.utility_loss
    u2.metric("utility loss", "—" if loss is None else f"{loss:.1%}",
              help="1 − M(defended)/M(undefended) (paper 000, Def. 4)")


def quantile_caption(points: dict[str, DefendedPoint]) -> str | None:
    """Why quantile regression has no number at the slider's point, where one of ``points`` left it out."""
    if not any("quantile" in (p.skipped_attacks or ()) for p in points.values()):
        return None
    return ("Quantile regression is not computed at the slider's point (it refits a regressor on every draw's "
            "defended answers); its number under the defense is in the full point: “Measure” below caches it, "
            "and the `python -m core defend` command under “Reproduce headless” writes it.")


# ---------------------------------------------------------------------------- the slider and all it moves
# A fragment: a slider step (or draws, the adaptive toggle, a grid button) reruns this part alone, not the
# page above it nor the app's navigation and sidebar; the browser redraws only what is in it, so a σ step stays
# quick (docs/performance.md). A choice above it (task, runs, mechanism, repeats) reruns the whole page.
@st.fragment
def defended_view(repeat_defenders: dict[str, list], n_repeats: int) -> None:
    # ---------------------------------------------------------------------------- the slider
    s1, s2, s3 = st.columns([4, 1, 2])
    with s1:
        value = st.select_slider(param.hint or param.symbol, options=list(param.slider), value=param.slider_default,
                                 key=f"{param.name}:{task_name}", format_func=lambda v: f"{v:g}")
    with s2:
        draws = st.number_input("draws", 1, MAX_DRAWS, mech.default_draws, key=f"draws:{mechanism}",
                                help="independent draws of the mechanism; numbers are their mean (± std)")
    with s3:
        show_adaptive = st.toggle("adaptive attacker", value=False,
                                  help="Refits the attack on the attacker's own shadows behind the same mechanism "
                                       "(a job in a worker process, cancellable in the sidebar; the slider never waits for it).")
    spec = DefenseSpec(mechanism, float(value), draws=int(draws))


    st.session_state[defense_value_key(task_name, mechanism)] = float(value)  # the Analyses page's default
    manager = job_manager()


    if mech.needs_sensitivity:
        n_pairs = task.sensitivity_samples
        for arch, d in defenders.items():
            if d.sensitivity_estimate(n_pairs, compute=False) is None:
                params = {"pairs": n_pairs}
                job = manager.job(configs[arch], "sensitivity", params)
                if job_allows_submit(job, f"SensitivitySampler ({ARCH_LABELS[arch]})"):
                    if st.button(f"Estimate the sensitivity of {ARCH_LABELS[arch]} (SensitivitySampler, n = {n_pairs} "
                                 f"pairs = {2 * n_pairs} trainings, in a worker)", key=f"sens:{arch}:{n_pairs}"):
                        manager.submit([configs[arch]], "sensitivity", params)
                        st.rerun()

    # ---------------------------------------------------------------------------- numbers
    st.subheader(f"{spec.value_name} = {value:g}")
    notice = st.empty()  # while the draws after the first are computing, says so above the numbers
    ticker = st.empty()  # always here and always empty: what the wait below writes to between its slices
    # every architecture's fast point, then its utility card's point, in its own lane (a thread per architecture,
    # the architectures at once). A value whose points are known shows them at once; any other first by draw 1
    # alone, then, in this same script run, the mean over every draw in the same places, so the slider never waits
    # for every draw; a step to another value cancels this session's calls not started yet
    # (core.defenses.side_by_side.PointLanes)
    lanes = st.session_state.get("defenses:lanes")
    if lanes is None:
        lanes = st.session_state["defenses:lanes"] = PointLanes()
    # draw 1 alone without the registry's attacks (label-only, gap, quantile regression): its cards show none of them
    calls = [PointCall(utility=False), PointCall(utility=True, quantile=False)]
    step = lanes.step(defenders, spec, calls, first_calls=[PointCall(**c, registry=False) for c in calls])
    shown = {a: step.shown(a) for a in archs}  # decided once: the full points where they are in already
    one_draw = [a for a in archs if shown[a][1]]
    columns = st.columns(len(archs))
    cards: dict[str, list[Card]] = {}  # per architecture: its cards as drawn, and their elements (replaced in place
    elements: dict[str, list[DeltaGenerator]] = {}  # where they change when every draw is in)
    slots: dict[str, DeltaGenerator] = {}  # per architecture: where its utility appears once measured
    adaptive: dict[str, DeltaGenerator] = {}  # per architecture: the adaptive attacker's card or its job
    fast: dict[str, DefendedPoint] = {}
    for col, arch in zip(columns, archs):
        d = defenders[arch]
        with col:
            st.markdown(f"**{ARCH_LABELS[arch]}** · {d.models.victim.params:,} parameters"
                        # the cards read repeat 0's models; the curves below band over every repeat
                        + (f" · cards: **repeat 1 of {n_repeats}** (the curves: means over the {n_repeats} repeats)"
                           if n_repeats > 1 else ""))
            try:
                point = shown[arch][0][0].result()
            except (MIAError, ValueError) as exc:
                st.error(plain_markdown(exc))
                continue
            fast[arch] = point
            cards[arch] = cards_of(point, d.baseline, int((~d.membership.astype(bool)).sum()))
            elements[arch] = draw_cards(cards[arch])
            slots[arch] = st.empty()
            with slots[arch].container():
                st.caption("measuring utility…")
            adaptive[arch] = st.container()  # below the utility, drawn once: it reads the spec, not the draws
    one_draw = [a for a in one_draw if a in fast]
    if one_draw:
        # the cards are draw 1's numbers alone: no mean, no spread over draws (the bands below are the other values'
        # points over every draw); never shown as the mean of the draws
        notice.info(f"**1 of {spec.draws} draws — the rest are computing** "
                    f"({', '.join(ARCH_LABELS[a] for a in one_draw)}): these numbers are draw 1's alone, with no "
                    f"spread over draws yet; the mean over the {spec.draws} draws replaces them by itself.")
    full: dict[str, DefendedPoint] = {}
    for arch in fast:
        # the utility card: the fast point's numbers and the utility, still without quantile regression (its
        # refits on every draw are the slider's largest cost); a full point measured before is shown whole
        full[arch] = shown[arch][0][1].result()
        with slots[arch].container():
            draw_utility(full[arch], defenders[arch].baseline)
        d, base = defenders[arch], defenders[arch].baseline
        with adaptive[arch]:  # it reads the spec, not the draws: drawn once
            if show_adaptive:
                cached = d.cached_point(spec, "both")
                if cached is not None and cached.adaptive_attack is not None:
                    ad = cached.adaptive_attack
                    st.metric("adaptive attack accuracy", f"{ad.accuracy:.3f}",
                              f"{ad.accuracy - base.attack.accuracy:+.3f}", delta_color="inverse")
                    strong = {n: r for n, r in (cached.adaptive_attacks or {}).items() if n in ("lira", "rmia")}
                    if strong:
                        st.caption("adaptive " + " · ".join(f"{ATTACK_SHORT.get(n, n)} AUC {r.auc:.3f}"
                                                            for n, r in strong.items()))
                else:
                    # the refit on defended shadows runs in a worker (core.jobs.worker, job kind "adaptive"); the
                    # point it caches on disk is what `cached_point` reads on the rerun after it finishes
                    params = {"spec": dataclasses.asdict(spec)}
                    job = manager.job(configs[arch], "adaptive", params)
                    if job is None:
                        manager.submit([configs[arch]], "adaptive", params)
                        st.caption("adaptive attacker: queued to refit on defended shadows in a worker…")
                    elif job_allows_submit(job, "adaptive attacker") and st.button(
                            "Refit the adaptive attacker again", key=f"adaptive:{arch}:{spec.key}"):
                        manager.submit([configs[arch]], "adaptive", params)
                        st.rerun()
    # drawn before any wait: its spot is never blank while draw 1 stands alone (an element, not an st.empty filled
    # after: a placeholder clears its spot in the browser at every run)
    quantile_text = quantile_caption(full)
    quantile = st.caption(quantile_text) if quantile_text else st.empty()

    if mechanism == "dirichlet":
        # LiRA/RMIA AUCs that rise under Dir_k (the RNN's at k = 10) or fall at almost no noise come from the
        # logit scaling of saturated answers, not the naive attacker's undefended references — said with the share
        # of this run's records it concerns and the measurement behind it
        shares = {a: saturated_share(defenders[a].victim_responses, defenders[a].membership, spec.eta) for a in fast}
        hit = {a: sh for a, sh in shares.items() if sh.most >= 0.05}
        if hit:
            floor = next(iter(shares.values())).floor
            st.caption(
                "**Why LiRA/RMIA AUC can rise under Dir_k even at the strongest noise:** "
                + "; ".join(f"{ARCH_LABELS[a]} {sh.members:.0%} of members / {sh.non_members:.0%} of non-members"
                            for a, sh in hit.items())
                + f" answer almost surely (1 − c below {floor:.0e}); the draw's scatter of that tiny 1 − c moves LiRA's "
                "logit by many units, so these AUCs move either way, even at large k (docs/defenses.md measures it).")

    failed = None
    if one_draw:
        # draw 1's numbers are on screen; wait here for the full points (in slices that yield to a slider step
        # meanwhile) and put them in the same places — only the cards, the utility and the label change; one
        # script run, not a rerun that would draw the whole fragment a second time. What is below
        # stays as the last run drew it until the wait ends: drawn now, the curves would be drawn twice
        failed = widgets.wait_yielding([f for a in one_draw for f in step.full[a]], ticker)
        if failed is not None:
            notice.warning(f"**1 of {spec.draws} draws**: these numbers are draw 1's alone — the mean over the "
                           f"{spec.draws} draws could not be computed: {failed}")
        else:
            for arch in one_draw:
                fast[arch], full[arch] = (f.result() for f in step.full[arch])
                now = cards_of(fast[arch], defenders[arch].baseline,
                               int((~defenders[arch].membership.astype(bool)).sum()))
                redraw_cards(elements[arch], cards[arch], now)
                cards[arch] = now
                with slots[arch].container():
                    draw_utility(full[arch], defenders[arch].baseline)
            notice.empty()
            if (text := quantile_caption(full)) != quantile_text:  # only where it changed
                if text:
                    quantile.caption(text)
                else:
                    quantile.empty()
    alone = failed is not None  # draw 1 still stands alone for some architecture: the curves leave its value out

    # ---------------------------------------------------------------------------- curves over the grid
    st.subheader("Over the whole range")
    # the mechanism's curve grid (Dir_k re-samples cached answers: a fine grid; the GPM re-queries a noisy
    # model per point and draw: its table's coarse grid); points whose utility was measured carry its loss
    # with repeats cached, every repeat's curve (its own models, the same spec) and the band over them
    # (core.analyses.repeats.defense_curve_bands: over repeats × draws; with one repeat over the draws)
    # where draw 1 still stands alone (the mean over the draws failed), the curves leave this value out and draw
    # only points known already (the page thread computes nothing a lane may be computing on the same Defender)
    curve_values = [*param.curve] if alone else [*param.curve, value]
    curves_known = not alone or all(
        d.cached_point(spec.at(v), disk=False) or d.cached_point(spec.at(v), utility=False)
        for arch in fast for d in repeat_defenders[arch] for v in curve_values)
    if not curves_known:
        st.caption(f"The curves are drawn once the {spec.draws} draws of this value are in.")
    else:
        curve_points = {arch: defense_curve_bands([d.curve(spec, curve_values) for d in repeat_defenders[arch]],
                                                  spec.draws, [d.baseline.utility for d in repeat_defenders[arch]])
                        for arch in fast}
        st.plotly_chart(defense_curves(curve_points, {a: defenders[a].baseline for a in fast}, spec.value_name, value,
                                       log_x=param.log_scale), width="stretch")
        st.caption(band_caption(curve_points))
    st.caption("Solid: naive attack accuracy; dotted: utility loss where it was measured (visited values and the "
               "table's rows; with repeats, where every repeat measured it); dashed: undefended accuracy (repeat 1); "
               "dash-dot: the AUC of the stronger of LiRA and RMIA (naive) — where it stays above the accuracy line, the "
               "shadow MLP understates the leak. One draw scatters (translation quick: validation BLEU's sd over draws "
               "is 1.1–2.7 points under Dirichlet noise, docs/defenses.md) — read a bend only where the bands do not "
               "overlap; `python -m core defend --repeats N --draws D` writes the same intervals.")

    # two tabs of which only the open one runs (on_change="rerun"): a σ step redraws one chart, not two
    # (the browser's share of a step is mostly Plotly drawing its charts anew)
    grid_tab, entropy_tab = st.tabs(["Table over the grid", "Defended outputs' entropy"],
                                    key=f"defenses:below:{mechanism}", on_change="rerun")
    for _ in drawn(entropy_tab):
        st.plotly_chart(defended_entropy_histogram(full), width="stretch")
        st.caption("The defended outputs' entropy: when members and non-members overlap, the attack has nothing to read.")
    for _ in drawn(grid_tab):
        if not curves_known:  # as the curves: its rows are the curve's points (Defender.table_rows)
            st.caption(f"The table is drawn once the {spec.draws} draws of this value are in.")
            continue
        grid_text = ", ".join(f"{v:g}" for v in param.grid)
        studied = {a: mech.study_rows(task_name, a) for a in fast}
        reported = {a: t for a, t in studied.items() if t}  # arch → the studies' table on it
        st.markdown(f"**{mech.short}: {'the studies’ rows beside ours' if reported else 'the grid'}**")
        # "Measure": one worker job per architecture and repeat (core.jobs.worker, kind "defense_grid"), cancellable in
        # the sidebar; each full point is cached on disk as it finishes, where the table below reads it
        grid_params = {"spec": dataclasses.asdict(spec.at(float(param.grid[0]))), "values": [float(v) for v in param.grid]}
        grid_configs = [d.cfg for arch in fast for d in repeat_defenders[arch]]
        grid = manager.group(grid_configs, "defense_grid", grid_params)
        grid_jobs = [j for j in grid.jobs if j is not None]
        if grid_jobs and not grid.done:
            running = grid.running
            st.progress(sum(j.fraction for j in grid_jobs) / len(grid_configs),
                        text=f"Measuring in a worker: {job_line(running) if running else 'queued'} — cancel it in the "
                             "sidebar; the table fills in as the values land.")
        else:
            for j in grid_jobs:
                if j.state == "failed":
                    st.error(f"The last measurement failed ({plain_markdown(j.label)}): {plain_markdown(j.error)}")
                elif j.state == "cancelled":
                    st.caption(f"{plain_markdown(j.label)} was cancelled (the values already measured stay cached).")
            if st.button(f"Measure {param.symbol} = {grid_text} (utility included"
                         + (f", on {n_repeats} repeats" if n_repeats > 1 else "") + ")"):
                manager.submit(grid_configs, "defense_grid", grid_params)
                st.rerun()
        # every row shows what is known: the curve's fast point (naive attack, guarantee) until "Measure" adds
        # utility, and the adaptive attacker once its worker job (or the CLI) measured it; the rest "not measured"
        rows = {a: defenders[a].table_rows(spec, list(param.grid)) for a in fast}
        table = defense_table(task_name, mech, rows, {a: defenders[a].baseline for a in fast})
        st.dataframe(defense_table_display(table), hide_index=True, width="stretch",
                     column_config={"source": st.column_config.TextColumn(width="small")})  # the guarantee fits
        if table[table["source"].str.startswith("ours")]["utility"].isna().any():
            st.caption(f"*{NOT_MEASURED}*: the curve above measures the attack and the guarantee alone; "
                       "utility needs the button above, the adaptive attacker its toggle.")
        if reported:
            st.caption("Rows marked *study* are the paper's figures (their models and data), on the architecture the "
                       "paper reports them for: " + "; ".join(
                           f"{ARCH_LABELS[a]} — {t.source.note}" for a, t in reported.items())
                       + ". Rows marked *ours* are measured on this preset.")
        elif mech.needs_sensitivity:
            st.caption(studies.sensitivity_sentence(task_name))
        else:
            st.caption(f"The studies report no {mech.short} table for this task.")

    with st.expander("Reproduce headless"):
        values = ",".join(f"{v:g}" for v in param.grid)
        for arch in fast:
            st.code(f"python -m core defend --task {task_name} --arch {arch} --preset {preset} --mechanism {mechanism} "
                    f"--values {values} --attacker both --draws {int(draws)}"
                    + (f" --repeats {n_repeats}" if n_repeats > 1 else "") + f" --out defend_{arch}.json")


defended_view(repeat_defenders, n_repeats)
