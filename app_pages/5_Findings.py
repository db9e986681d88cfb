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
    VERDICT_WORDS,
    findings_command,
    findings_frame,
    findings_html,
    findings_markdown,
    findings_short_frame,
    needs_text,
    row_cells,
)
from core.views.plain import plain_markdown
from ui.shared import job_manager

#: the selected row's details under the short table: (label, the column of core.views.findings_report.COLUMNS)
DETAILS = (("verdict", "verdict"), ("measured here (95 % CI, N)", "measured here (95 % CI, N)"),
           ("the paper", "paper"), ("utility gap (train and validation)", "utility gap (train and validation)"),
           ("decidable at · target N", "decidable at · target N"), ("preset · resolution", "preset · resolution"),
           ("declared", "declared: metric · family · test · deviations"), ("made on", "made on"),
           ("repeats to decide", DECIDE))

st.title("Findings: the studies' claims on this machine")
st.caption("Each claim of the two studies beside what this machine measured, read from the cache (nothing trains on "
           "this page): the verdict and the value first, the rest of a row under the table. A missing cell queues "
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
preset_notes = {name: [f"**{t}**: {get_task(t).preset_notes[name]}" for t in tasks
                       if name in get_task(t).presets and get_task(t).preset_notes.get(name)] for name in chosen}
for name, notes in preset_notes.items():
    if notes and name != "quick":  # quick's: in sight under the table
        with st.expander(f"Preset {name}: what it needs and what it costs"):
            st.markdown("\n\n".join(notes))

try:
    with st.spinner("Reading the cached runs…"):
        table = findings_table(tasks, chosen)
except MIAError as e:
    st.error(plain_markdown(e))
    st.stop()
# the verdict and the value in a table narrow enough for 1280 px beside the sidebar (the whole row was 13 columns
# of sentences: its verdict and value were cut at the screen's edge); the rest of the selected row under it
picked = st.dataframe(
    findings_short_frame(table), hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
    key="findings:table",
    column_config={"verdict": st.column_config.TextColumn(width=110, help=VERDICT_WORDS),
                   "finding": st.column_config.TextColumn(width=60),
                   "task": st.column_config.TextColumn(width=90),
                   "preset": st.column_config.TextColumn(width=110),
                   "measured here (95 % CI, N)": st.column_config.TextColumn(
                       width="large", help="FFNN − RNN: the paired difference over the row's N repeats with its 95 % "
                                           "interval (F1a: its primary metric's; F3: the RNN's attack accuracy and "
                                           "utility loss). Both arms' values are in the row's details.")})
st.caption(VERDICT_WORDS)
if preset_notes.get("quick"):  # the default: what its rows are made of (built-in data, tiny sets) in sight, not folded
    st.caption(f"Preset quick — {' · '.join(preset_notes['quick'])}")
chosen_rows = list(picked.selection.rows) if picked is not None and picked.selection else []
index = chosen_rows[0] if chosen_rows else next((i for i, r in enumerate(table.rows) if r.status == "measured"), 0)
if table.rows:
    row, cells = table.rows[index], row_cells(table.rows[index])
    with st.container(border=True):
        st.markdown(f"**{plain_markdown(row.finding)} · {plain_markdown(row.task)} · {plain_markdown(row.preset)}**"
                    f"{'' if chosen_rows else ' (select a row in the table for its details)'}: "
                    f"{plain_markdown(cells['claim'])}")
        # the cells may name a user's folder (a preset's data_dir in the command) or machine: text, never Markdown
        st.markdown("  \n".join(f"**{label}:** {plain_markdown(cells[column])}" for label, column in DETAILS))
        st.code(cells["command / runs needed"], language="bash", wrap_lines=True)
with st.expander("The whole table (every column, as findings.md writes it)"):
    frame = findings_frame(table)
    first = ["finding", "task", "measured here (95 % CI, N)", "verdict", "decidable at · target N", "made on",
             "utility gap (train and validation)", "declared: metric · family · test · deviations",
             "preset · resolution", DECIDE]
    st.dataframe(frame[first + [c for c in frame.columns if c not in first]], hide_index=True, width="stretch")
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
