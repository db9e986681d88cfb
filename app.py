"""MIA Explorer — the entry script: page set-up, navigation and the job panel shared by every page.

Run with ``make app`` (or ``.venv/bin/streamlit run app.py``). The pages live in ``app_pages/`` and
are registered in :mod:`ui.nav`; this script runs before each of them.
"""
import streamlit as st

from ui.nav import jobs_sidebar, navigation
from ui.shared import preload_page_modules

st.set_page_config(page_title="MIA Explorer", page_icon="🔍", layout="wide")
preload_page_modules()  # once per server: the other pages' imports start in the background now
page = navigation()
jobs_sidebar()
page.run()
