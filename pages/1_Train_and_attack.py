"""Train & attack: victims and shadow models for FFNN and RNN side by side, then the attacks."""
from __future__ import annotations

import streamlit as st

from core import multi30k
from core.errors import MIAError
from core.paths import data_root, resolve_data_dir
from core.pipeline import cached_summary
from core.tasks import available_tasks, get_task
from ui import plots
from ui.examples import show_examples
from ui.shared import job_manager
from ui.nav import sidebar
from ui.widgets import config_overrides



st.set_page_config(page_title="Train & attack · MIA Explorer", page_icon="🎯", layout="wide")
sidebar()


TASK_LABELS = {"image": "Image classification", "translation": "Machine translation", "navigation": "Navigation (deep RL)"}
ARCH_LABELS = {"ffnn": "FFNN", "rnn": "RNN"}

st.title("Train & attack")
st.caption("Trains a victim and the attacker's shadow models per architecture, then runs the membership inference "
           "attacks on a balanced evaluation set (chance = 50 %). Results are cached: the same settings load instantly.")

c1, c2, c3 = st.columns([2, 2, 1])
with c1:
    tasks = available_tasks()
    wanted = st.query_params.get("task", tasks[0])  # ?task=navigation links straight to a task
    task_name = st.selectbox("Task", tasks, index=tasks.index(wanted) if wanted in tasks else 0,
                             format_func=lambda t: TASK_LABELS.get(t, t))
task = get_task(task_name)
with c2:
    archs = st.multiselect("Architectures", ["ffnn", "rnn"], default=["ffnn", "rnn"], format_func=ARCH_LABELS.get,
                           help="FFNN and RNN of matched parameter counts, trained and attacked side by side.")
with c3:
    preset = st.selectbox("Preset", list(task.presets), help="quick: minutes on 2 CPU cores · paper: the studies' sizes")

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
data_dir = base.data_dir
if dataset in task.real_datasets:
    with d2:
        data_dir = st.text_input(f"Local {dataset} folder", value=base.data_dir, key=f"{prefix}:data_dir",
                                 help="CIFAR-10: the extracted 'cifar-10-batches-py' folder (data_batch_1 … data_batch_5). "
                                      "Multi30K: the folder with train.{en,de,fr}.gz, val.*.gz, test_2016_flickr.*.gz. "
                                      f"It must lie under the data root {str(data_root())!r} (set MIA_DATA_ROOT to change it).")
    if data_dir.strip():
        try:  # folders typed here are confined to the data root (the page may be served on a network)
            data_dir = str(resolve_data_dir(data_dir))
        except MIAError as exc:
            st.error(str(exc))
            st.stop()
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
    st.warning(f"The folder {cfg.data_dir!r} lacks {', '.join(needed)}. Put the files from data/task1/raw/ of the "
               "Multi30K repository there, or download them (needs an internet connection).")
    if st.button(f"Download Multi30K ({'/'.join(langs)}) into this folder"):
        with st.status("Downloading Multi30K…", expanded=True) as status:
            try:
                fetched = multi30k.download_multi30k(cfg.data_dir, langs, root=data_root(),
                                                     on_file=lambda name, k, n: st.write(f"{name} ({k + 1}/{n})"))
            except MIAError as exc:  # offline, a broken file, or a folder outside the data root
                status.update(label="Download failed", state="error")
                st.error(str(exc))
                st.stop()
            status.update(label=f"Downloaded {len(fetched)} files", state="complete")
        st.rerun()
    st.stop()


try:
    configs = [task.make_config(arch, preset, overrides[arch]) for arch in archs]
except MIAError as exc:
    st.error(f"Invalid settings: {exc}")
    st.stop()

if dataset == "multi30k":
    multi30k_folder_check(configs[0])

manager = job_manager()
key = manager.key_of(configs)
job = manager.get(key)
summaries = [cached_summary(c) for c in configs]


def show_results(results: list[dict]) -> None:
    st.subheader("Overview")
    st.dataframe(plots.overview_table(results), hide_index=True, width="stretch")
    gap = plots.param_gap(results)
    if gap is not None:
        st.caption(f"Parameter counts differ by {gap:.1%} (matched within 5 %, as in the studies).")
    left, right = st.columns(2)
    with left:
        st.plotly_chart(plots.utility_curves(results), width="stretch")
    with right:
        st.plotly_chart(plots.attack_accuracy_curve(results), width="stretch")
    steps = plots.steps_curves(results)
    if steps is not None:
        st.plotly_chart(steps, width="stretch")
    st.subheader("Attacks")
    st.dataframe(plots.metrics_table(results).style.format(precision=3), hide_index=True, width="stretch")
    left, right = st.columns(2)
    with left:
        st.plotly_chart(plots.roc_curves(results), width="stretch")
    with right:
        st.plotly_chart(plots.entropy_histogram(results), width="stretch")
        st.caption("Why attacks work: models are more certain (lower entropy) on the records they trained on.")
    with_examples = [s for s in results if s.get("examples")]
    if with_examples:
        st.subheader("What the victim does with members vs non-members")
        for s in with_examples:
            show_examples(s["examples"], plots.ARCH_NAMES.get(s["arch"], s["arch"]))
    with st.expander("Reproduce headless"):
        for c in configs:
            sets = " ".join(f"--set {k}={v}" for k, v in overrides[c.arch].items())
            st.code(f"python -m core run --task {c.task} --arch {c.arch} --preset {c.preset} {sets} --out {c.arch}.json".strip())
        st.caption("Config hashes: " + ", ".join(f"{s['arch']}: `{s['config_hash']}`" for s in results))


if all(s is not None for s in summaries):
    show_results(summaries)  # type: ignore[arg-type]
    st.stop()

if job is None or (job.done and job.error):
    if job is not None and job.error:
        st.error(f"The last run failed: {job.error}")
    missing = [ARCH_LABELS[c.arch] for c, s in zip(configs, summaries) if s is None]
    st.info(f"Not in the cache yet: {', '.join(missing)}. Training runs in the background; the page stays usable.")
    if st.button("Train & attack", type="primary"):
        manager.submit(configs)
        st.rerun()
    st.stop()


@st.fragment(run_every=1.0)
def progress_panel() -> None:
    current = manager.get(key)
    if current is None or current.done:
        st.rerun()
        return
    ev = current.event
    if ev is None:
        st.progress(0.0, text=f"{current.label}: starting…")
        return
    eta = f" · about {ev.eta_s:.0f} s left" if ev.eta_s is not None else ""
    st.progress(min(ev.overall_fraction, 1.0), text=f"{current.label} — {ev.stage} ({ev.stage_fraction:.0%}){eta}")
    st.caption(f"elapsed {ev.elapsed_s:.0f} s")


if not job.done:
    with st.status("Training victims and shadow models…", expanded=True):
        progress_panel()
    st.stop()

show_results(job.summaries)
