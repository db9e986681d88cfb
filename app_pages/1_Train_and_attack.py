"""Train & attack: victims and shadow models for FFNN and RNN side by side, then the attacks.

Training runs in the server's job queue (worker processes, one job per config): the page only
submits, shows progress and draws results from the cache.
"""
from __future__ import annotations

import dataclasses

import streamlit as st

from core.analyses.matching import matched_plan
from core.analyses.repeats import repeat_config
from core.data import multi30k
from core.experiment.results import RunSummary
from core.foundations.config import MAX_REPEATS
from core.foundations.errors import MIAError
from core.foundations.names import ARCH_NAMES as ARCH_LABELS
from core.foundations.paths import data_root, resolve_data_dir
from core.tasks import available_tasks, get_task
from core.views.plain import plain_markdown
from core.views.repeat_figures import MatchedView
from ui.nav import format_seconds, job_line
from ui.results import cached_repeats_view, matched_view, show_results
from ui.shared import job_manager, map_views_of, summary_of
from ui.widgets import arch_label, config_overrides, one_architecture_note, task_label

st.title("Train & attack")
st.caption("Trains a victim and the attacker's shadow models per architecture, then runs the membership inference "
           "attacks on a balanced evaluation set (chance = 50 %). Results are cached: the same settings load instantly.")

c1, c2, c3 = st.columns([2, 2, 1])
with c1:
    tasks = available_tasks()
    wanted = st.query_params.get("task")  # ?task=navigation links straight to a task
    if wanted in tasks and st.session_state.get("_task_link") != wanted:
        st.session_state["train:task"] = wanted  # a (new) link wins over the last choice
    st.session_state["_task_link"] = wanted
    task_name = st.selectbox("Task", tasks, key="train:task", format_func=task_label)
    if st.query_params.get("task") != task_name:
        st.query_params["task"] = task_name  # the address bar always links to what is shown
        st.session_state["_task_link"] = task_name
task = get_task(task_name)
with c2:
    picked = st.multiselect("Architectures", list(task.archs), default=list(task.archs), format_func=arch_label,
                            help="FFNN and RNN of matched parameter counts, trained and attacked side by side.")
    one_architecture_note(task)
    archs = [a for a in ("ffnn", "rnn") if a in picked]  # the same order whatever the clicks
with c3:
    preset = st.selectbox("Preset", list(task.presets),
                          help=" · ".join(f"{name}: {note}" for name, note in task.preset_notes.items()) or None)

note_slot = st.empty()  # the preset's note, filled once the data source is known (it speaks of the preset's own)
if task.about:
    st.caption(task.about)
if not archs:
    st.info("Pick at least one architecture.")
    st.stop()
bases = {arch: task.make_config(arch, preset) for arch in archs}
base = bases[archs[0]]
prefix = f"{task_name}:{preset}"
d1, d2 = st.columns([1, 3])
with d1:
    datasets = list(task.datasets or [base.dataset])
    dataset = st.selectbox("Data", datasets, index=datasets.index(base.dataset) if base.dataset in datasets else 0,
                           key=f"{prefix}:dataset")
if dataset == base.dataset and task.preset_notes.get(preset):
    note_slot.info(f"**Preset {preset}** — {task.preset_notes[preset]}", icon="⏱️")
elif dataset != base.dataset:  # the preset's note (its data, its sizes, its measured times) describes another source
    note_slot.info(f"**Preset {preset}** on **{dataset}** (the preset's sizes and epochs; the preset itself reads "
                   f"{base.dataset}): time not measured for this combination.", icon="⏱️")
data_dir = base.data_dir
if dataset in task.real_datasets:
    try:  # MIA_DATA_ROOT may name nothing that resolves ("~nosuchuser"): say so, no traceback
        root_text = str(data_root())
    except MIAError as exc:
        st.error(plain_markdown(exc))
        st.stop()
    with d2:
        data_dir = st.text_input(f"Local {dataset} {'file' if dataset == 'csv' else 'folder'}", value=base.data_dir,
                                 key=f"{prefix}:data_dir",
                                 help="CIFAR-10: the extracted 'cifar-10-batches-py' folder (data_batch_1 … data_batch_5). "
                                      "Multi30K: the folder with train.{en,de,fr}.gz, val.*.gz, test_2016_flickr.*.gz. "
                                      "CSV: a .csv file with a header row; name its label column under label below. "
                                      "folder: one sub-folder of PNG/JPEG images per class. pairs: <name>.<src> and "
                                      "<name>.<tgt>, one sentence a line (docs/your_data.md). "
                                      f"It must lie under the data root {root_text!r} (set MIA_DATA_ROOT to change it).")
    if data_dir.strip():
        try:  # folders typed here are confined to the data root (the page may be served on a network)
            data_dir = str(resolve_data_dir(data_dir))
        except MIAError as exc:
            st.error(plain_markdown(exc))
            st.stop()
# a folder that cannot be read is said now, under its box, with Train disabled — not after a worker failed on it
data_problem = task.data_problem(dataclasses.replace(base, dataset=dataset, data_dir=data_dir))
if data_problem:
    st.warning(data_problem)
overrides = config_overrides(bases, prefix)
for arch in archs:
    if dataset != base.dataset:
        overrides[arch]["dataset"] = dataset
    if data_dir != base.data_dir:
        overrides[arch]["data_dir"] = data_dir

def multi30k_folder_check(cfg) -> None:
    """Say which Multi30K files are missing, and offer to fetch them (only on a click: no network otherwise)."""
    langs = (cfg.options.src_lang, cfg.options.tgt_lang)
    if not cfg.data_dir:
        st.warning("Multi30K is read from a local folder: enter it above. It must hold "
                   f"train.{langs[0]}.gz and train.{langs[1]}.gz (plus val.* and test_2016_flickr.*) from "
                   "data/task1/raw/ of the Multi30K repository.")
        st.stop()
    needed = [f for f in multi30k.missing_files(cfg.data_dir, langs) if f.startswith("train.")]
    if not needed:
        return
    st.warning(f"The folder {plain_markdown(repr(cfg.data_dir))} lacks {', '.join(needed)}. Put the files from data/task1/raw/ of the "
               "Multi30K repository there, or download them (needs an internet connection).")
    if st.button(f"Download Multi30K ({'/'.join(langs)}) into this folder"):
        with st.status("Downloading Multi30K…", expanded=True) as status:
            try:
                fetched = multi30k.download_multi30k(cfg.data_dir, langs, root=data_root(),
                                                     on_file=lambda name, k, n: st.write(f"{plain_markdown(name)} ({k + 1}/{n})"))
            except MIAError as exc:  # offline, a broken file, or a folder outside the data root
                status.update(label="Download failed", state="error")
                st.error(plain_markdown(exc))
                st.stop()
            status.update(label=f"Downloaded {len(fetched)} files", state="complete")
        st.rerun()
    st.stop()


try:
    configs = [task.make_config(arch, preset, overrides[arch]) for arch in archs]
except MIAError as exc:
    st.error(f"Invalid settings: {plain_markdown(exc)}")
    st.stop()

if dataset == "multi30k":
    multi30k_folder_check(configs[0])

manager = job_manager()
summaries = {c.arch: summary_of(c) for c in configs}
jobs = {c.arch: manager.job(c) for c in configs}
for c in configs:  # a job that finished but whose result cannot be read back from the cache
    finished = jobs[c.arch]
    if summaries[c.arch] is None and finished is not None and finished.summary is not None:
        try:
            summaries[c.arch] = RunSummary.from_dict(finished.summary)
        except MIAError as exc:  # checked like a cached one: a malformed result is said, not drawn
            st.error(f"The result of {ARCH_LABELS[c.arch]} cannot be shown: {plain_markdown(exc)}")
missing = [c for c in configs if summaries[c.arch] is None]
active = [c for c, j in ((c, jobs[c.arch]) for c in missing) if j is not None and j.active]
idle = [c for c in missing if c not in active]


@st.fragment(run_every=2.0)
def progress_panel(cfgs) -> None:
    """The selection's jobs, refreshed every 2 s from the worker's events; when one ends, the whole
    page reruns and draws its results from the cache."""
    current = [manager.job(c) for c in cfgs]
    if any(j is None or j.done for j in current):  # one ended: its results (or its error) belong on the page
        st.rerun(scope="app")
        return
    for job in current:
        if job is None:
            continue
        cols = st.columns([6, 1])
        with cols[0]:
            if job.state == "running":
                ev = job.event
                if ev is None:
                    st.progress(0.0, text=f"{plain_markdown(job.label)}: starting the worker…")
                else:
                    # one progress figure: the bar, its text and the sidebar all read job.fraction (the whole
                    # job), never the running stage's own fraction (else one line could read "18 %", "(71 %)" and
                    # a bar at 20 % at once)
                    st.progress(job.fraction, text=f"{plain_markdown(job.label)} — {job_line(job)}")
                    st.caption(f"running for {format_seconds(job.elapsed_s)} in worker process {job.worker_pid}; "
                               "the ETA extrapolates the measured rate")
            elif job.state == "queued":
                place = manager.place(job)
                running = [plain_markdown(j.label) for j in manager.active() if j.state == "running"]
                st.progress(0.0, text=f"{plain_markdown(job.label)}: queued, #{place} in line"
                                      + (f" (running now: {', '.join(running)})" if running else ""))
            else:
                st.progress(1.0, text=f"{plain_markdown(job.label)}: {job.state}")
        with cols[1]:
            if job.active and st.button("Cancel", key=f"cancel-{job.id}",
                                        help="Stops this job; models already trained stay cached, so training it "
                                             "again resumes from them."):
                manager.cancel(job)
                st.rerun(scope="app")


if missing:
    for c in idle:
        job = jobs[c.arch]
        if job is not None and job.state == "failed":
            st.error(f"The last run of {ARCH_LABELS[c.arch]} failed: {plain_markdown(job.error)}")
        elif job is not None and job.state == "cancelled":
            st.warning(f"{ARCH_LABELS[c.arch]} was cancelled. Models it had finished are cached: training it again "
                       "resumes from them.")
    if idle:
        idle_names = ", ".join(ARCH_LABELS[c.arch] for c in idle)
        st.info(f"Not in the cache yet: {idle_names}. Training runs in a background worker process; the page stays "
                "usable and every page shows the job queue in the sidebar.")
        manager.prewarm()  # a worker process starts now, so the click trains at once
        label = "Train & attack" if not active else f"Train & attack {idle_names} too"
        if st.button(label, type="primary", disabled=bool(data_problem),
                     help="Fix the data folder above first" if data_problem else None):
            manager.submit(idle)
            st.rerun()
    if active:
        with st.container(border=True):
            st.markdown(f"**Training {', '.join(ARCH_LABELS[c.arch] for c in active)} in the background** — you can "
                        "change settings or pages meanwhile; this job keeps running.")
            progress_panel(active)

available = [s for s in (summaries[c.arch] for c in configs) if s is not None]
if not available:
    st.stop()
if missing:
    coming = [ARCH_LABELS[c.arch] for c in active]
    untrained = [ARCH_LABELS[c.arch] for c in idle]
    st.caption(f"Results so far: {', '.join(ARCH_LABELS[s.arch] for s in available)} ("
               + "; ".join(filter(None, [f"{', '.join(coming)} still to come" if coming else "",
                                         f"{', '.join(untrained)} not trained yet" if untrained else ""])) + ").")
views = {}
if task.map_views:
    wanted_views = []
    for c in configs:
        if summaries[c.arch] is None:
            continue
        v = map_views_of(c)
        if v is not None:
            views[c.arch] = v
        else:
            mj = manager.job(c, "mapview")
            if mj is None:  # cached runs from before the crisp maps: draw them once, in the worker
                wanted_views.append(c)
    if wanted_views:
        manager.submit(wanted_views, kind="mapview")


def repeats_section(cfgs) -> dict | None:
    """Every repeat of the shown configs (repeat 0 is the run above): repeats 1 … N−1 are trained on
    request in the job queue like any run. Returns ``{arch: [summary of repeat r]}`` once all are
    cached (None while any is missing: then the offer to train them is drawn)."""
    n = cfgs[0].repeats
    if n < 2:
        # repeats cached beyond the form's setting (Home's "Add repeats", `compare --repeats N`, a visit before a
        # reload) are shown with their intervals rather than repeat 0 alone, in the page and its report alike
        found = {c.arch: [summaries[c.arch]] for c in cfgs}
        # (not under matched utility: its plan is per repeat of the form's setting)
        for r in range(1, MAX_REPEATS if cfgs[0].match_utility == "off" else 1):
            more = {c.arch: summary_of(repeat_config(c, r)) for c in cfgs}
            if any(s is None for s in more.values()):
                break
            for a, s in more.items():
                found[a].append(s)
        return found
    extra = [repeat_config(c, r) for r in range(1, n) for c in cfgs]
    have = {c.config_hash: summary_of(c) for c in extra}
    lacking = [c for c in extra if have[c.config_hash] is None]
    if lacking:
        offer_runs(lacking, "repeats", f"**Repeats**: {len(extra) - len(lacking)} of the {len(extra)} further runs "
                   f"(repeats 2…{n}, other seeds: other splits, initialisation and batch order) are cached. Means with "
                   "95 % intervals and the FFNN-vs-RNN verdicts appear when all are.", "missing repeat run(s)")
        return None
    return {c.arch: [summaries[c.arch]] + [have[repeat_config(c, r).config_hash] for r in range(1, n)] for c in cfgs}


def offer_runs(lacking, key: str, text: str, what: str) -> None:
    """A box saying which runs are missing, with a button that queues them and their progress."""
    running = [c for c in lacking if (j := manager.job(c)) is not None and j.active]
    waiting = [c for c in lacking if c not in running]
    with st.container(border=True):
        st.markdown(text)
        if waiting and st.button(f"Train the {len(waiting)} {what}", key=f"train:{key}"):
            manager.submit(waiting)
            st.rerun()
        if running:
            progress_panel(running)


def matched_section(cfgs, runs) -> MatchedView | None:
    """``match_utility``: where each architecture's victim first reaches the target (core.analyses.matching),
    the runs stopped there (trained on request), and the comparison at those epochs."""
    plan = matched_plan(runs, {c.arch: c for c in cfgs})
    stopped = [row.stops[a].config for row in plan for a in ("ffnn", "rnn")]
    have = {c.config_hash: summary_of(c) for c in stopped}
    lacking = [c for c in stopped if have[c.config_hash] is None]
    if lacking:
        offer_runs(lacking, "matched", f"**Matched utility** ({cfgs[0].match_utility}): {len(lacking)} of the "
                   f"{len(stopped)} runs stopped at the target are not trained yet.", "stopped run(s)")
        return None
    return matched_view(plan, {h: s for h, s in have.items() if s is not None})


runs = None
matched = None
shown_cfgs = [c for c in configs if summaries[c.arch] is not None]
if not missing:
    runs = repeats_section(shown_cfgs)
    if runs is not None and shown_cfgs[0].match_utility != "off" and {c.arch for c in shown_cfgs} == {"ffnn", "rnn"}:
        matched = matched_section(shown_cfgs, runs)
    elif runs is not None and shown_cfgs[0].match_utility != "off":
        st.info("Matched utility compares FFNN and RNN: select both architectures.")
repeats_view = cached_repeats_view(runs) if runs is not None and max(map(len, runs.values())) > 1 else None
show_results(available, shown_cfgs, overrides, views, repeats_view, matched)
