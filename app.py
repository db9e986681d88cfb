"""MIA Explorer — home page. Run with ``make app`` (or ``streamlit run app.py``)."""
import streamlit as st

st.set_page_config(page_title="MIA Explorer", page_icon="🔍", layout="wide")

st.title("🔍 MIA Explorer")
st.markdown(
    """
How much does a trained neural network leak about its training data? **Membership inference attacks**
(MIAs) guess whether a record was in a model's training set from the model's answers alone.
This explorer trains victims and the attacker's *shadow models* in your browser session, attacks them,
and shows why **recurrent networks (RNNs) tend to leak more than feed-forward ones (FFNNs)** of the same size.

* **Tasks** — image classification (residual CNN vs ReNet-style LSTM); translation (Transformer vs LSTM
  with attention) and navigation (PPO agents, MLP vs MLP+LSTM) plug into the same pipeline.
* **Attacks** — Shokri et al.'s shadow-model attack (an MLP on one prediction, an LSTM over output
  sequences) with loss- and entropy-threshold baselines; accuracy, membership advantage, ROC AUC and
  TPR at low FPR.
* **Everything is cached**: a second visit with the same settings loads in about a second, and every
  number on a page can be reproduced headless with `python -m core run ... --out result.json`.
"""
)
st.page_link("pages/1_Train_and_attack.py", label="Train & attack →", icon="🎯")
st.caption(
    "The studies reproduced are in the project's reference folder: *Privacy risks of RNNs vs FFNNs* and "
    "*On the vulnerability of RNNs to membership inference attacks*. Numbers here come from small, fast presets; "
    "they reproduce trends, not the papers' exact figures."
)
