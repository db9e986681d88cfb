"""Home: what the explorer shows, a one-click demo, and one sentence per page."""
from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from core.analyses.answer import Answer, answer_key, cached_answer
from core.analyses.repeats import repeat_config
from core.foundations.errors import MIAError
from core.foundations.paths import cache_dir
from core.tasks import get_task
from core.views.home_cards import headline_cards
from core.views.plain import plain_markdown
from core.views.run_text import verdict_lines
from core.views.style import legend_beside
from ui.nav import page_meta, registered_pages
from ui.results import figures
from ui.shared import job_manager, summary_of

TRAIN = "app_pages/1_Train_and_attack.py"
ANALYSES = "app_pages/4_Analyses.py"
#: the fewest repeats the demo offers (repeat 0 trains first, the rest are one click beside its result); the button
#: asks for the answer's decidable N (core.analyses.arch_answer: its Holm family's floor) where that is larger
DEMO_REPEATS = 3
ROOT = Path(__file__).resolve().parent.parent

st.title("MIA Explorer")
st.markdown(
    """
How much does a trained neural network leak about its training data? **Membership inference attacks**
(MIAs) guess whether a record was in a model's training set from the model's answers alone.
This explorer trains victims and the attacker's *shadow models*, attacks them, and shows how
**recurrent networks (RNNs)** and **feed-forward networks (FFNNs)** of the same size compare.
"""
)
st.page_link("app_pages/5_Findings.py", icon=":material/fact_check:",
             label="Findings: each claim of the two studies beside what this machine measured (N, 95 % CI, verdict)")


@st.cache_resource(max_entries=8, show_spinner=False)
def demo_answer(key: tuple[str, ...]) -> Answer:
    """:func:`core.analyses.answer.cached_answer` for the demo, once per cache folder and set of cached
    runs (``key``: every repeat cached for both, :func:`core.analyses.answer.answer_key`): a new repeat in the
    cache changes the key, so the answer follows it."""
    return cached_answer("image", "quick")


# ---------------------------------------------------------------------------- one click to a result
task = get_task("image")
try:
    demo = [task.make_config(arch, "quick") for arch in ("ffnn", "rnn")]
except MIAError as exc:  # a preset that no longer validates is a bug: say so rather than hide the button
    st.error(f"The image demo's preset is invalid: {plain_markdown(exc)}")
    demo = []
if demo:
    manager = job_manager()
    found = [summary_of(c) for c in demo]
    cached = [s for s in found if s is not None]  # the demo's cached runs (all of them, or it is not in the cache)
    jobs = [manager.job(c) for c in demo]
    with st.container(border=True):
        st.markdown("#### Start here: the image demo")
        if len(cached) == len(found):
            st.markdown("FFNN (residual CNN) and RNN (ReNet) trained on 8×8 digits with the *quick* preset, attacked "
                        "by every attack of the Train & attack page. It is in the cache:")
            ans = demo_answer((str(cache_dir()),) + answer_key("image", "quick"))
            n_rep = ans.repeats
            # the button offers the N at which the answer's test can decide at all (its Holm family's floor)
            target = max(DEMO_REPEATS, ans.decidable_at or DEMO_REPEATS)
            extra = [repeat_config(c, r) for r in range(1, target) for c in demo]
            have = [summary_of(c) for c in extra]
            # the big numbers are the metric the answer below reads, both architectures, each with its 95 %
            # interval (core.views.home_cards)
            cols = st.columns(len(cached))
            for col, card in zip(cols, headline_cards(ans, {s.arch: s for s in cached})):
                with col:
                    st.metric(card.label, card.value, help="chance is 0.5; the answer below reads this metric")
                    st.caption(card.interval)
            # the question asked, and answered from the cached repeats by core (python -m core compare --cached
            # prints the same): the verdict with its interval and N, or the one-repeat difference, never a claim
            st.markdown(f"##### {ans.question}")
            st.markdown(f"On **{ans.data}** ({n_rep} paired repeat{'s' * (n_rep != 1)} cached):  \n{ans.sentence}")
            if n_rep >= 2:
                assert ans.comparison is not None  # the answer's comparison is there from N = 1 on
                lines = verdict_lines(ans.comparison)
                st.markdown("Every leakage metric, FFNN − RNN (below 0: the RNN leaks more, as the studies found):  \n"
                            + "  \n".join(lines))
            if not all(h is not None for h in have):
                lacking = [c for c, h in zip(extra, have) if h is None]
                adding = any((j := manager.job(c)) is not None and j.active for c in lacking)
                took = sum(s.timing("total_s") for s in cached)
                if n_rep < 2:
                    st.caption("One seed per architecture: the difference above has no interval yet, so it is not a "
                               "verdict; the repeats measure how far it moves from seed to seed.")
                if adding:
                    st.markdown(f"**Adding repeats**: {len(extra) - len(lacking)} of {len(extra)} runs done; follow "
                                "them in the sidebar.")
                elif n_rep < target and st.button(
                        f"➕ Run to N = {target} repeats ({len(lacking)} runs; repeat 1 took {took:.0f} s here)",
                        help=f"N = {target} is the fewest repeats at which the answer's test (attack accuracy, "
                             "Holm-adjusted over the comparison's secondary metrics) can decide at all: below it "
                             "the answer stays inconclusive whatever the data. Trains the missing repeats in the "
                             "background; the verdict is read once, at that N."):
                    manager.submit(lacking)
                    st.rerun()
            st.caption("This is the small built-in demo, not the studies' data. Answers on real data: "
                       + "; ".join(ans.elsewhere) + ".")
            st.page_link(ANALYSES, label="Analyses: why the attacks work, with verdicts over repeats",
                         icon=":material/analytics:")
            if n_rep >= 2:
                st.caption(f"The curve below is repeat 1 of {n_rep} (the demo's own seed).")
            # the legend beside the plot (18 entries below it pushed it a screen down): a copy, the Train & attack
            # page's figure is the cached original
            st.plotly_chart(legend_beside(go.Figure(figures(cached).attack_by_epoch)), width="stretch")
            if st.button("Open the image demo's results →", type="primary"):
                st.switch_page(TRAIN, query_params={"task": "image"})
        else:
            running = any(j is not None and j.active for j in jobs)
            st.markdown("Trains FFNN (residual CNN) and RNN (ReNet) on 8×8 digits with the *quick* preset — a minute "
                        "or more on 2 CPU cores (longer on a busy machine), in a background worker — then attacks "
                        "both. "
                        + ("**It is training now**: follow it on the Train & attack page or in the sidebar."
                           if running else "One click:"))
            if st.button("▶ Run the image demo" if not running else "Follow the image demo →", type="primary"):
                missing = [c for c, s in zip(demo, found) if s is None]
                manager.submit(missing)
                st.switch_page(TRAIN, query_params={"task": "image"})
            if not running:
                manager.prewarm()

# ---------------------------------------------------------------------------- the pages
st.markdown("#### The pages")
for f in registered_pages():
    if f.endswith("/0_Home.py"):
        continue
    title, icon, _, about = page_meta(f)
    c1, c2 = st.columns([1, 4])
    with c1:
        st.page_link(f, label=title, icon=icon)
    with c2:
        st.markdown(about[:1].upper() + about[1:])

st.markdown(
    """
#### What is compared
* **Tasks** — image classification (residual CNN vs ReNet-style LSTM), machine translation (Transformer vs
  LSTM with attention) and navigation by deep RL (PPO agents, MLP vs MLP+LSTM). Open another task with the
  *Task* box of Train & attack, or link to it: `…/Train_and_attack?task=navigation`.
* **Attacks** — Shokri et al.'s shadow-model attack (an MLP on one prediction, an LSTM over output
  sequences) with loss- and entropy-threshold baselines; accuracy, membership advantage (TPR − FPR),
  ROC AUC and TPR at low FPR, at every checkpoint epoch.
* **Everything is cached**: a second visit with the same settings loads in about a second, and every
  number on a page can be reproduced headless with `python -m core run ... --out result.json`.
"""
)
st.caption(
    "Reproduced studies: *Privacy risks of RNNs vs FFNNs* and *On the vulnerability of RNNs to membership "
    "inference attacks*. The quick presets are small and fast: their numbers are not the papers' figures, and "
    "whether a paper's finding holds on them is the verdict over repeats, with its interval and N."
)
