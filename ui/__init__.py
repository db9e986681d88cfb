"""Streamlit-side helpers (pages, job queue, figures); ui/worker.py and ui/mapview.py never import Streamlit."""
