"""Streamlit-side helpers: background jobs and plotly figures. ``core`` never imports this."""
