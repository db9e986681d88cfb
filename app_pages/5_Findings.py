"""Findings: each claim of the two studies beside what this machine measured — N, 95 % interval, verdict,
utility gap and the command — read from the cache; missing cells queue exactly the runs they need."""
from __future__ import annotations

import json

import streamlit as st

from core.analyses.findings import findings_table, missing_jobs
from core.analyses.findings_base import FINDINGS, TASKS
from core.foundations.errors import MIAError
from core.foundations.version import stamped
from core.tasks import get_task
from core.views.findings_report import (
    DECIDE,
    findings_command,
    findings_frame,
    findings_html,
    findings_markdown,
    needs_text,
)
from ui.shared import job_manager

st.title("Findings: the studies' claims on this machine")
st.caption("One row per finding × task: the paper's value, this machine's value with N repeats and its 95 % interval, "
           "the verdict (holds / reversed / inconclusive from the row's declared test; not comparable where utility is not "
           "matched on train and validation; uninformative where both arms sit at a ceiling or floor), the preset and its resolution, the utility gap and the command that "
           "reproduces it. Everything is read from the cache; nothing trains on this page. A missing cell queues "
           "exactly the runs it needs in the background (cached repeats are kept: adding repeats narrows an interval).")

presets = list(dict.fromkeys(p for t in TASKS for p in get_task(t).presets))
c1, c2 = st.columns([1, 1])
with c1:
    tasks = st.multiselect("Tasks", TASKS, default=list(TASKS), key="findings:tasks")
with c2:
    chosen = st.multiselect("Presets", presets, default=["quick"] if "quick" in presets else presets[:1],
                            key="findings:presets",
                            help="one row per finding × task × preset the task has: quick (built-in data), the "
                                 "real-data presets (cifar_cpu, multi30k_cpu; folder_quick / pairs_cpu on your "
                                 "own folders) and paper (the studies' sizes, for a GPU). A preset with nothing "
                                 "cached says 'not run'.")
if not tasks or not chosen:
    st.info("Pick at least one task and one preset.")
    st.stop()
for name in chosen:
    notes = [f"**{t}**: {get_task(t).preset_notes[name]}" for t in tasks
             if name in get_task(t).presets and get_task(t).preset_notes.get(name)]
    if notes and name != "quick":
        with st.expander(f"Preset {name}: what it needs and what it costs"):
            st.markdown("\n\n".join(notes))

try:
    with st.spinner("Reading the cached runs…"):
        table = findings_table(tasks, chosen)
except MIAError as e:
    st.error(str(e))
    st.stop()
frame = findings_frame(table)
first = ["finding", "task", "measured here (95 % CI, N)", "verdict", "decidable at · target N", "made on",
         "utility gap (train and validation)", "declared: metric · family · test · deviations", "preset · resolution",
         DECIDE]
st.dataframe(frame[first + [c for c in frame.columns if c not in first]], hide_index=True, use_container_width=True)
st.caption(f"Commit {table.commit}. The same table: `{findings_command(table)} --out findings.json --markdown "
           "findings.md`. Each row's target N is its own (≥ its decidable N: the sign-flip floor × its Holm family; "
           "≥ 80 % power at the paper's effect, else the measured one). Rows that cannot decide even when run (not "
           "comparable, uninformative) or that already read their data at a decidable N queue nothing.")

d1, d2, d3 = st.columns(3)
d1.download_button("findings.json", json.dumps(stamped(table.to_dict(), "findings"), indent=2, allow_nan=False), "findings.json",
                   "application/json")
d2.download_button("findings.md", findings_markdown(table), "findings.md", "text/markdown")
d3.download_button("findings.html (report)", findings_html(table), "findings.html", "text/html")


def queue(jobs) -> int:
    """Submit the missing computations, one job per (config, kind, parameters); returns how many."""
    manager = job_manager()
    groups: dict[tuple[str, str], tuple[str, dict | None, list]] = {}
    for m in jobs:
        key = (m.kind, json.dumps(m.params, sort_keys=True))
        groups.setdefault(key, (m.kind, m.params, []))[2].append(m.config)
    for kind, params, configs in groups.values():
        manager.submit(configs, kind, params)
    return sum(len(c) for _, _, c in groups.values())


st.subheader("Missing runs")
everything = missing_jobs(table)
if not everything:
    st.success("Every row has its target number of repeats cached.")
else:
    if st.button(f"Queue every missing run of this table ({len(everything)} jobs)", key="findings:queue-all"):
        st.success(f"Queued {queue(everything)} jobs: follow them in the sidebar.")
    for i, row in enumerate(table.rows):
        needs = needs_text(row)
        if not needs:
            continue
        title = f"{row.finding} · {row.task} · {row.preset} — {row.status}, N = {row.n}: needs {needs}"
        with st.expander(title):
            st.markdown(f"**{FINDINGS[row.finding].claim}** ({row.source.cite()})")
            st.code(row.command, language="bash")
            st.markdown("\n".join(f"- {m.what} (`{m.config.config_hash}`, {m.kind})" for m in row.missing))
            jobs = missing_jobs(table, i)
            if st.button(f"Queue these {len(jobs)} jobs", key=f"findings:queue-{i}"):
                st.success(f"Queued {queue(jobs)} jobs: follow them in the sidebar.")
