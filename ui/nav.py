"""Sidebar navigation shared by every page (the automatic page list is hidden in config.toml so
that the entry page reads "Home" rather than its file name)."""
import streamlit as st

PAGES = [("app.py", "Home"), ("pages/1_Train_and_attack.py", "Train & attack"), ("pages/2_Defenses.py", "Defenses")]


def sidebar() -> None:
    with st.sidebar:
        st.markdown("### MIA Explorer")
        for path, label in PAGES:
            st.page_link(path, label=label)
