"""Streamlit-side helpers of the pages (session, navigation, widgets, shared state); the job queue they hold is
:mod:`core.jobs`, which never imports Streamlit."""
