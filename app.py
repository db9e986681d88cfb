"""MIA Explorer — home page. Run with ``make app`` (or ``streamlit run app.py``)."""
import streamlit as st

from ui.nav import sidebar

st.set_page_config(page_title="MIA Explorer", page_icon="🔍", layout="wide")
sidebar()

st.title("MIA Explorer")
st.markdown(
    """
How much does a trained neural network leak about its training data? **Membership inference attacks**
(MIAs) guess whether a record was in a model's training set from the model's answers alone.
This explorer trains victims and the attacker's *shadow models*, attacks them, and shows how
**recurrent networks (RNNs)** and **feed-forward networks (FFNNs)** of the same size compare.

* **Tasks** — image classification (residual CNN vs ReNet-style LSTM), machine translation (Transformer vs
  LSTM with attention) and navigation by deep RL (PPO agents, MLP vs MLP+LSTM).
* **Attacks** — Shokri et al.'s shadow-model attack (an MLP on one prediction, an LSTM over output
  sequences) with loss- and entropy-threshold baselines; accuracy, membership advantage (TPR − FPR),
  ROC AUC and TPR at low FPR, at every checkpoint epoch.
* **Everything is cached**: a second visit with the same settings loads in about a second, and every
  number on a page can be reproduced headless with `python -m core run ... --out result.json`.
"""
)
st.page_link("pages/1_Train_and_attack.py", label="Train & attack →")
st.caption(
    "Reproduced studies: *Privacy risks of RNNs vs FFNNs* and *On the vulnerability of RNNs to membership "
    "inference attacks*. The quick presets are small and fast: they show trends, not the papers' exact figures."
)
