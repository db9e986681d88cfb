"""MIA Explorer — entry point and navigation. Run with ``make app`` (or ``streamlit run app.py``)."""
import streamlit as st

st.set_page_config(page_title="MIA Explorer", page_icon="🔍", layout="wide")
nav = st.navigation(
    [
        st.Page("pages/0_Home.py", title="Home", default=True),
        st.Page("pages/1_Train_and_attack.py", title="Train & attack", url_path="train"),
    ]
)
nav.run()
