"""Process-wide UI resources shared by every page and browser session of one server."""
from __future__ import annotations

import streamlit as st

from ui.jobs import BackgroundRunner, JobManager


@st.cache_resource
def job_manager() -> JobManager:
    """One registry of training jobs per server process: jobs survive reruns and are shared by tabs."""
    return JobManager()


@st.cache_resource
def background_runner() -> BackgroundRunner:
    """One runner of background computations (adaptive attacker, SensitivitySampler) per server."""
    return BackgroundRunner()
