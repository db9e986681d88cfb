"""Training defenses: retrain victims and shadows with DP-SGD (a σ or a target-ε grid), an L2 penalty
or PPO's clip ε, FFNN vs RNN; utility loss, attack accuracy and ε at every point.

Every point is an experiment config, trained by the server's job queue (worker processes, progress
per point) and cached like any Train & attack run, so a sweep seen once loads at once.
"""
from __future__ import annotations

import streamlit as st

from core.analyses.repeats import repeat_config
from core.defenses import registry as defense_registry
from core.defenses.sweeps import (
    accuracy_bound_curve,
    collect_points_repeats,
    expected_run_s,
    expected_sweep,
    run_cost_s,
    study_recipe_epsilons,
    sweep_runs,
)
from core.defenses.utility_cost import question as utility_cost_question
from core.defenses.utility_cost import sweep_utility_cost
from core.defenses.utility_cost import table_rows as utility_cost_rows
from core.foundations.config import MAX_REPEATS, ExperimentConfig, config_changes, field_range, parse_values
from core.foundations.errors import MIAError
from core.foundations.names import ARCH_NAMES as ARCH_LABELS
from core.foundations.names import UTILITY_NAMES
from core.measurement.studies import DPSGD_RECIPE
from core.tasks import get_task
from core.views.defense_figures import band_caption
from core.views.plain import plain_markdown
from core.views.training_defense_figures import dpsgd_recipe_table, training_defense_curves, training_defense_table
from ui.nav import format_seconds
from ui.results import show_results
from ui.shared import job_manager, summary_of
from ui.widgets import arch_label, one_architecture_note, remember, remembered, task_label, task_selector

st.title("Training defenses")
st.caption(
    "Defenses that change how victims **and the attacker's shadows** train (the attacker knows the recipe), so every "
    "value is a full retraining, cached like any run. **DP-SGD** (paper 000 eq. 7–8): each record's gradient is "
    "clipped to norm C and Gaussian noise N(0, σ²C²) is added to the batch sum; Opacus' accountants turn σ, the "
    "sampling rate q and the number of steps into (ε, δ). **L2** penalises the weight matrices (paper 000 Fig. 7). "
    "**PPO clip ε** (navigation) limits how far each update moves the policy. The study's question: does the same "
    "ε cost the RNN more utility than the FFNN? The answer, with its interval over the sweep's repeats, is below the "
    "table.")

c1, c2, c3, c4 = st.columns([2, 2, 1, 2])
with c1:
    task_name = task_selector(key="tdef:task")
task = get_task(task_name)
with c2:
    picked = st.multiselect("Architectures", list(task.archs), default=list(task.archs), format_func=arch_label,
                            key="tdef:archs" if len(task.archs) == 2 else f"tdef:archs:{task.archs[0]}")
    one_architecture_note(task)
    archs = [a for a in ("ffnn", "rnn") if a in picked]
with c3:
    preset = st.selectbox("Preset", list(task.presets), key="tdef:preset")
with c4:
    mechanism = st.radio("Defense", defense_registry.training_names(task_name), horizontal=True,
                         format_func=lambda n: defense_registry.get_training(n).label, key=remembered("tdef:mech"))
    remember("tdef:mech")  # the defense picked last, again after a visit to another page
defense = defense_registry.get_training(mechanism)
if not archs:
    st.info("Pick at least one architecture.")
    st.stop()

target_epsilon, clip_norm, delta = False, None, None
bases: dict[str, ExperimentConfig] = {a: task.make_config(a, preset) for a in archs}
if defense.accounted:  # DP-SGD: a grid of σ or of target ε, the clip norm C and δ
    d1, d2, d3 = st.columns([2, 1, 1])
    with d1:
        modes = {p.symbol: p.hint for p in (defense.parameter, defense.target) if p is not None}
        target_epsilon = st.radio("Grid of", list(modes), horizontal=True, key="tdef:mode",
                                  format_func=modes.get) != defense.parameter.symbol
    with d2:
        rng = field_range(ExperimentConfig, "dp_max_grad_norm")
        assert rng is not None  # the config documents the range of its DP-SGD fields
        clip_norm = st.number_input("clip norm C", value=1.0, format="%g", key="tdef:C",
                                    help=f"Each record's gradient is clipped to this L2 norm (the study: 10). "
                                         f"Allowed: {rng.describe()}.")
    with d3:
        rng = field_range(ExperimentConfig, "dp_delta")
        assert rng is not None
        delta = st.number_input("δ", value=1e-4, format="%g", key="tdef:delta",
                                help=f"δ of the reported (ε, δ) (the study: 1e-4). Allowed: {rng.describe()}.")
param = defense.parameter_of(target_epsilon)
grid_key = f"{mechanism}_{param.name}" if target_epsilon else mechanism  # "dpsgd", "dpsgd_epsilon", "l2"
name = param.symbol
text = st.text_input(f"{name} grid (comma-separated)", value=",".join(f"{v:g}" for v in param.grid),
                     key=f"tdef:grid:{grid_key}")
try:  # every value checked for every architecture before anything is shown or submitted
    runs: dict[str, list[tuple[float | None, ExperimentConfig]]] = sweep_runs(
        bases, mechanism, parse_values(text, f"the {name} grid"), target_epsilon, clip_norm, delta)
except MIAError as exc:
    st.error(plain_markdown(exc))
    st.stop()
values = [v for v, _ in next(iter(runs.values()))[1:]]

if defense.accounted and task.privacy_caveat:
    st.warning(task.privacy_caveat)

# ---------------------------------------------------------------------------- the runs
summaries = {(arch, v): summary_of(cfg) for arch, rs in runs.items() for v, cfg in rs}


def cached_repeat_count() -> int:
    """Repeats 0, 1, … of every run of the sweep that are cached (the default of the repeats box)."""
    n = 1
    while n < MAX_REPEATS and all(summary_of(repeat_config(cfg, n)) is not None for rs in runs.values() for _, cfg in rs):
        n += 1
    return n


n_repeats = int(st.number_input(
    # keyed by the grid too: its default (the repeats cached for this grid) follows a new grid
    "repeats", 1, MAX_REPEATS, cached_repeat_count(), key=f"tdef:repeats:{grid_key}:{text}",
    help="Every point (and the undefended run) N times, with seeds derived from the preset's seed (repeat r of every "
         "point shares its split); with N ≥ 2 the curves show the mean and its 95 % interval over the repeats. "
         "Repeats beyond the first train as further runs of the sweep."))
# repeat r of every run of the sweep: the same config with core.analyses.repeats' derived seed (repeat 0 = the run)
repeat_runs = [runs] + [{arch: [(v, repeat_config(cfg, r)) for v, cfg in rs] for arch, rs in runs.items()}
                        for r in range(1, n_repeats)]
repeat_summaries = [summaries] + [{(arch, v): summary_of(cfg) for arch, rs in rr.items() for v, cfg in rs}
                                  for rr in repeat_runs[1:]]
#: (repeat, arch, value, config, summary or None) of every run the sweep needs
all_runs = [(r, arch, v, cfg, repeat_summaries[r][(arch, v)])
            for r, rr in enumerate(repeat_runs) for arch, rs in rr.items() for v, cfg in rs]
missing = [cfg for _, _, _, cfg, s in all_runs if s is None]
manager = job_manager()

# what this machine measured: the cost of every cached point of this sweep and of the undefended runs
# (core.defenses.sweeps.run_cost_s), the basis of the time announced before the click and left during the sweep
measured_points = {arch: [run_cost_s(known) for v, _ in rs[1:] if (known := summaries[(arch, v)]) is not None]
                   for arch, rs in runs.items()}
measured_baseline = {arch: None if (known := summaries[(arch, None)]) is None else run_cost_s(known)
                     for arch in runs}


def sweep_left_s() -> tuple[float | None, bool]:
    """Seconds left of the sweep's active jobs: a running job's own measured-rate ETA (its
    expected cost less its elapsed time before it has one), the expected cost of each queued job;
    with the flag "a lower bound" when a DP-SGD point was estimated from an undefended run."""
    left, lower = 0.0, False
    for _, arch, v, cfg, summary in all_runs:
        job = manager.job(cfg) if summary is None else None
        if job is None or not job.active:
            continue
        expected, lb = expected_run_s(arch, v is None, measured_points, measured_baseline, mechanism)
        if job.state == "running" and job.eta_s is not None:
            left += job.eta_s
            continue
        if expected is None:
            return None, False
        left += max(expected - (job.elapsed_s if job.state == "running" else 0.0), 0.0)
        lower = lower or lb
    return left, lower


def run_label(v: float | None) -> str:
    return "undefended" if v is None else f"{name} = {v:g}"


def status_rows() -> list[dict]:
    rows = []
    for r, arch, v, cfg, summary in all_runs:
        if summary is not None:
            state = "cached ✓"
        else:
            job = manager.job(cfg)
            if job is None:
                state = "not trained"
            elif job.state == "running":
                eta = f", ~{job.eta_s:.0f} s left" if job.eta_s is not None else ""
                state = f"training {job.fraction:.0%}{eta}"
            elif job.error:
                state = f"failed: {job.error}"  # a table cell: text as it is
            else:
                state = job.state
        rows.append({"arch": ARCH_LABELS[arch], "run": run_label(v) + (f" (repeat {r + 1})" if r else ""),
                     "status": state})
    return rows


if missing:
    group = manager.group(missing)
    active = [j for j in group.jobs if j is not None and j.active]
    if active:
        st.info(f"Training {len(active)} of {len(missing)} missing runs in the background (one job per point; "
                f"the victim and every shadow train with the point's recipe).")

        @st.fragment(run_every=2.0)
        def _progress() -> None:
            if not any(j is not None and j.active for j in manager.group(missing).jobs):
                st.rerun()
            left, lower = sweep_left_s()
            if left is not None:
                shared = f", shared by {manager.n_workers} workers" if manager.n_workers > 1 else ""
                st.caption(f"Sweep: {'at least ' if lower else 'about '}{format_seconds(left)} left{shared} "
                           "(running runs: their measured-rate ETA; queued runs: what this machine measured for "
                           "this sweep's points so far).")
            st.dataframe(status_rows(), hide_index=True, width="stretch")

        _progress()
    else:
        if group.error:
            st.error(f"Some runs failed: {plain_markdown(group.error)}")
        st.dataframe(status_rows(), hide_index=True, width="stretch")
        todo = [(arch, v is None) for _, arch, v, _, summary in all_runs if summary is None]
        estimate = expected_sweep(todo, measured_points, measured_baseline, mechanism)
        if estimate.seconds is not None:
            expected = f"{'at least ' if estimate.lower_bound else 'about '}{format_seconds(estimate.seconds)}"
            st.caption(f"Expected time: {expected} with one worker — {estimate.basis}.")
        else:
            st.caption(f"Expected time: not known yet — {estimate.basis}; the job panel shows the time left once "
                       "the first run has started.")
        if st.button(f"Run the sweep ({len(missing)} run{'s' if len(missing) != 1 else ''} to train"
                     + (f", {'≥ ' if estimate.lower_bound else '~'}{format_seconds(estimate.seconds)}"
                        if estimate.seconds is not None else "") + ")", type="primary"):
            manager.submit(missing)
            st.rerun()

# ---------------------------------------------------------------------------- results
# repeat 0's points; with repeats, each with its mean and 95 % interval over the repeats cached so far
baselines, points = collect_points_repeats(runs, repeat_summaries, mechanism, target_epsilon)
if not any(points.values()):
    st.caption("Results appear here point by point as the runs finish.")
    st.stop()

st.subheader("FFNN vs RNN over the grid")
log_x = param.log_scale
left, right = st.columns(2)
with left:
    st.plotly_chart(training_defense_curves(points, baselines, "utility_loss", "value", name, log_x), width="stretch")
with right:
    st.plotly_chart(training_defense_curves(points, baselines, "attack_accuracy", "value", name, log_x),
                    width="stretch")
if defense.accounted:
    eps_values = [e for pts in points.values() for p in pts if p.dpsgd for e in p.dpsgd.epsilons.values() if e]
    bound = None
    if eps_values:
        assert delta is not None  # the δ box above, drawn for every accounted defense
        bound = accuracy_bound_curve(max(eps_values), delta)
    left, right = st.columns(2)
    with left:
        st.plotly_chart(training_defense_curves(points, baselines, "utility_loss", "epsilon_rdp", "ε",
                                                      log_x=True), width="stretch")
        st.caption("Utility loss at each ε (solid: RDP accountant, dotted: PRV): where the RNN's curve lies above the "
                   "FFNN's, the same privacy costs the RNN more utility (paper 000 Fig. 8).")
    with right:
        st.plotly_chart(training_defense_curves(points, baselines, "attack_accuracy", "epsilon_rdp", "ε",
                                                      bound=bound), width="stretch")
        st.caption("Grey: the highest balanced accuracy any attack can reach against an (ε, δ)-DP learner, "
                   "½·(1 + δ + (1 − δ)·tanh(ε/2)). A measured attack above it would mean a broken guarantee.")

if n_repeats > 1:
    st.caption(band_caption(points) if any(p.band for pts in points.values() for p in pts) else
               "No band yet: a point gets its 95 % interval once at least two of its repeats (and their undefended "
               "runs) are cached.")
st.dataframe(training_defense_table(points, baselines).style.format(precision=4, na_rep="—"),
             hide_index=True, width="stretch")
utility_metric = next(iter(baselines.values())).utility_metric
metric = "utility" if utility_metric is None else UTILITY_NAMES.get(utility_metric, "utility")
st.caption(f"Utility: {metric} on unseen records; utility loss 1 − M(defended)/M(undefended) (paper 000 Def. 4). "
           "Attack: the task's primary attack, fitted on shadows trained with the same recipe.")

# ---------------------------------------------------------------------------- the page's question, answered
st.subheader(utility_cost_question(mechanism, target_epsilon))
if set(archs) >= {"ffnn", "rnn"}:
    cost = sweep_utility_cost(runs, repeat_summaries, mechanism, target_epsilon)
    st.markdown(f"**Answer** — {cost.summary}.")
    if cost.note:
        st.info(f"{cost.note}: choose *{defense.target.hint}* under *Grid of* above." if defense.target
                else cost.note)
    if cost.values:
        st.dataframe(utility_cost_rows(cost), hide_index=True, width="stretch")
    st.caption("FFNN − RNN of the utility loss L at each value, paired over the repeats cached for both "
               "architectures (each repeat against its own undefended run); **holds** = below 0 = the RNN loses more "
               "utility (the study's claim, paper 000 Fig. 8). A verdict needs the 95 % t interval and the exact "
               "sign-flip test to agree (N ≥ 6 pairs); one repeat gives the difference and "
               "\"inconclusive (one repeat)\". Each value is its own test. *Not comparable*: a model at that value "
               "(or undefended) did not learn — its utility at chance — so its loss says nothing about the defense.")
else:
    st.caption("Pick both FFNN and RNN to compare their utility loss at the same value.")

if defense.accounted and task_name in DPSGD_RECIPE:  # the studies' tasks only (a tabular task has no recipe)
    st.markdown("**DP-SGD recipes: the study's (paper 000 Table 2; ε computed by us) beside ours**")
    dp_points = {a: [p for p in pts if p.dpsgd] for a, pts in points.items()}
    sigmas = sorted({p.dpsgd.noise_multiplier for pts in dp_points.values() for p in pts if p.dpsgd})
    study = DPSGD_RECIPE[task_name]
    st.dataframe(dpsgd_recipe_table(study, study_recipe_epsilons(task_name, sigmas), dp_points)
                 .style.format(precision=4, na_rep="—"), hide_index=True, width="stretch")
    st.caption(f"The study's rows: its recipe (|D|, batch, epochs, δ, C = {study.clip_norm:g}) with the ε that we "
               "compute for it with Opacus' accountants at our σ values — not the paper's numbers (it shows ε and "
               "utility loss only as figures, Figs. 8–9). "
               f"A sample is {task.privacy_unit}. Our quick runs have far fewer records, so at the same σ their q is "
               "larger and ε higher.")

# ---------------------------------------------------------------------------- one point in full
st.subheader("One point in full")
choices = [v for v in values if all(summaries[(a, v)] is not None for a in archs)]
if choices:
    chosen = st.selectbox("Point", choices, format_func=lambda v: run_label(v), key=f"tdef:point:{grid_key}")
    # every one cached: a point is a choice once every selected architecture ran it
    shown = [s for s in (summaries[(a, chosen)] for a in archs) if s is not None]
    cfgs = [cfg for a in archs for v, cfg in runs[a] if v == chosen]
    overrides = {a: config_changes(bases[a], cfg) for a, cfg in zip(archs, cfgs)}
    st.page_link("app_pages/1_Train_and_attack.py", label=f"Open Train & attack for {task_label(task_name)} →",
                 query_params={"task": task_name})
    show_results(shown, cfgs, overrides)
else:
    st.caption("A point appears here once every selected architecture has run it.")

with st.expander("Reproduce headless"):
    grid_text = ",".join(f"{v:g}" for v in values)
    extra = ""
    if defense.accounted:
        extra = (" --target-epsilon" if target_epsilon else "") + f" --set dp_max_grad_norm={clip_norm:g} --set dp_delta={delta:g}"
    for arch in archs:
        st.code(f"python -m core defend --task {task_name} --arch {arch} --preset {preset} --mechanism {mechanism} "
                f"--values {grid_text}{extra} --out {mechanism}_{arch}.json")
    if defense.accounted:
        st.caption("Each point's `dpsgd` block records σ, C, q, steps, δ and the accountant history, so ε can be "
                   "recomputed with Opacus directly.")
