"""MIA Explorer — the entry script: page set-up, navigation and the job panel shared by every page.

Run with ``make app`` (or ``.venv/bin/streamlit run app.py``). The pages live in ``app_pages/`` and
are registered in :mod:`ui.nav`; this script runs before each of them.
"""
import streamlit as st
import torch

#: the server process's torch threads: one. The pages' work is many small products (a slider step's defended
#: points); on a loaded machine two threads wait on each other at every one of them, and a Dir_k step to a new k
#: took many times longer in the browser with the default two than with one (docs/performance.md, "… the server
#: on one torch thread"). Not through OMP_NUM_THREADS: the worker processes (core.jobs.worker, spawned) size their own
#: pools (core.foundations.device.configure_threads) and would inherit it.
SERVER_TORCH_THREADS = 1
if torch.get_num_threads() != SERVER_TORCH_THREADS:
    torch.set_num_threads(SERVER_TORCH_THREADS)

from core.foundations.environment import check_environment
from core.foundations.errors import ConfigError
from core.tasks import available_tasks
from core.views.plain import plain_markdown
from core.jobs.manager import JobQuotaError

from ui.nav import jobs_sidebar, navigation
from ui.shared import preload_page_modules

st.set_page_config(page_title="MIA Explorer", page_icon="🔍", layout="wide")
try:  # a bad MIA_* value: one message before any page or worker starts (the CLI's rule too)
    check_environment()
except ConfigError as exc:
    st.error(plain_markdown(exc))
    st.stop()
try:  # the plugins the server was configured with ($MIA_PLUGINS, installed entry points), never the browser
    available_tasks()
except ConfigError as exc:
    st.error(f"The server's task plugins cannot be loaded: {plain_markdown(exc)}. Fix or remove it in $MIA_PLUGINS and restart "
             "the server (docs/your_data.md, 'Your architecture').")
    st.stop()
preload_page_modules()  # once per server: the other pages' imports start in the background now
page = navigation()
jobs_sidebar()
try:
    page.run()
except JobQuotaError as exc:  # a click that would queue past this session's quota: one message, nothing queued
    st.error(plain_markdown(exc))
