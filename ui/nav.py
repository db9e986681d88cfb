"""Multi-page navigation (``st.navigation``) and the sidebar's job panel, shown on every page."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import streamlit as st

from core.views.plain import plain_markdown
from ui.shared import job_manager

ROOT = Path(__file__).resolve().parent.parent

#: the app's pages: file, title, icon, URL path (the URL paths are those of the former
#: automatic page list, so old links such as ``/Train_and_attack?task=navigation`` keep working)
PAGES = [
    ("app_pages/0_Home.py", "Home", ":material/home:", "home"),
    ("app_pages/1_Train_and_attack.py", "Train & attack", ":material/model_training:", "Train_and_attack"),
    ("app_pages/6_Your_model.py", "Your model", ":material/upload_file:", "Your_model"),
    ("app_pages/2_Defenses.py", "Defenses", ":material/shield:", "Defenses"),
    ("app_pages/3_Training_defenses.py", "Training defenses", ":material/health_and_safety:", "Training_defenses"),
    ("app_pages/4_Analyses.py", "Analyses", ":material/analytics:", "Analyses"),
    ("app_pages/5_Findings.py", "Findings", ":material/fact_check:", "Findings"),
]

#: one sentence per page, for the Home page (only pages whose file exists are listed)
ABOUT = {
    "app_pages/1_Train_and_attack.py":
        "train FFNN and RNN victims with the attacker's shadow models on a task, then see how well each attack "
        "tells members from non-members, epoch by epoch.",
    "app_pages/6_Your_model.py":
        "audit **your** model on **your** data: class folders of images, a CSV table or parallel text trained with "
        "our FFNN and RNN; your own trained weights as the victim; or just a file of per-record scores.",
    "app_pages/2_Defenses.py":
        "slide the noise of a defense that acts on a trained model (Dirichlet mechanism on outputs, Gaussian noise "
        "on weights) and watch attack accuracy and utility move.",
    "app_pages/3_Training_defenses.py":
        "retrain victims and shadows with a defense that acts during training (DP-SGD at a noise level or a target "
        "ε, L2, PPO clip) and compare utility, attack accuracy and ε.",
    "app_pages/4_Analyses.py":
        "do RNNs leak more, and why do the attacks work? The studies' analyses (entropy with the attacks' decision boundaries, "
        "vulnerability over training, memorization, overtraining, model mismatch) on a cached run, each with a "
        "verdict for this run.",
    "app_pages/5_Findings.py":
        "each claim of the studies beside what this machine measured (N, 95 % interval, verdict, utility gap, "
        "command); missing cells queue exactly the runs they need.",
}


#: where page files live. Not ``pages/``: Streamlit treats a ``pages/`` folder next to the entry
#: script as a legacy multipage app and serves a fresh server's first request from it, bypassing
#: ``st.navigation``. A page file left in ``pages/`` is still registered (found after ``app_pages/``).
PAGE_DIRS = ("app_pages", "pages")


def page_files() -> list[str]:
    """The pages to register: the known ones whose file exists (in ``app_pages/``, else ``pages/``),
    then any other numbered page file (``app_pages/5_Something.py``) under a title made from its name."""
    found: dict[str, str] = {}
    for folder in PAGE_DIRS:
        for p in sorted((ROOT / folder).glob("[0-9]*_*.py")):
            found.setdefault(p.name, f"{folder}/{p.name}")
    known = [Path(f).name for f, *_ in PAGES]
    files = [found[name] for name in known if name in found]
    return files + [f for name, f in sorted(found.items()) if name not in known]


def page_meta(path: str) -> tuple[str, str | None, str, str]:
    """(title, icon, url path, one-sentence description) of a page file."""
    for f, title, icon, url in PAGES:
        if Path(f).name == Path(path).name:
            return title, icon, url, ABOUT.get(f, "")
    return _title(path), None, re.sub(r"^\d+_", "", Path(path).stem), _docstring_sentence(path)


def _docstring_sentence(path: str) -> str:
    """The first sentence of a page file's docstring (what a page says it is for)."""
    try:
        doc = ast.get_docstring(ast.parse((ROOT / path).read_text())) or ""
    except (OSError, SyntaxError, ValueError):
        return ""
    first = " ".join(doc.split()).split(". ")[0]
    return first.split(": ", 1)[-1] if first else ""


def registered_pages() -> list[str]:
    """The page files :func:`navigation` registered in this script run."""
    return list(st.session_state.get("_mia_pages") or page_files())


def _title(path: str) -> str:
    stem = re.sub(r"^\d+_", "", Path(path).stem)
    return stem.replace("_and_", " & ").replace("_", " ")


def navigation() -> st.Page:
    """Register the pages (Home is the default) and return the one to run."""
    pages = []
    files = page_files()
    st.session_state["_mia_pages"] = files  # what this run registered (a page file may appear meanwhile)
    for f in files:
        title, icon, url, _ = page_meta(f)
        pages.append(st.Page(str(ROOT / f), title=title, icon=icon, url_path=url, default=f.endswith("/0_Home.py")))
    return st.navigation(pages, position="sidebar")


def _fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "estimating…"
    seconds = int(round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def job_line(job) -> str:
    """One line about a running job: stage, percentage, ETA."""
    ev = job.event
    if ev is None:
        return "starting the worker…"
    left = job.eta_s
    return f"{ev.stage} · {job.fraction:.0%} · {_fmt_s(left) + ' left' if left is not None else 'estimating time left…'}"


def _panel() -> None:
    manager = job_manager()
    active = manager.active()
    if not active:
        recent = [j for j in manager.recent(300) if j.state in ("failed", "cancelled")]
        if recent:
            st.caption("Recent jobs: " + "; ".join(f"{plain_markdown(j.label)} {j.state}" for j in recent[:3]))
        return
    st.markdown("**Every job on this server** (lecturer)" if manager.lecturer else "**Your jobs**")
    for job in active:
        cols = st.columns([5, 1])
        with cols[0]:
            if job.state == "running":
                st.progress(job.fraction, text=f":material/play_arrow: {plain_markdown(job.label)}")
                st.caption(job_line(job))
            else:
                place = manager.place(job)
                st.caption(f":material/hourglass_empty: {plain_markdown(job.label)} — queued, #{place} in line" if place
                           else f":material/hourglass_empty: {plain_markdown(job.label)} — queued")
        with cols[1]:
            if manager.may_cancel(job) and st.button(":material/close:", key=f"cancel-side-{job.id}", type="tertiary",
                         help=f"Cancel {plain_markdown(job.label)} (models already trained stay cached)"):
                manager.cancel(job)
                st.rerun(scope="app")


#: seconds between refreshes of the sidebar's job panel while jobs run / otherwise (every fragment rerun costs the
#: server CPU that a 2-core machine shares with the training: polling is kept slow; docs/performance.md, "Figures
#: behind the code's choices")
POLL_BUSY_S, POLL_IDLE_S = 4.0, 15.0


def jobs_sidebar() -> None:
    """The running and queued jobs of this session (a lecturer's: of the whole server), on every page. The panel refreshes itself
    (every ``POLL_BUSY_S`` while jobs run, every ``POLL_IDLE_S`` otherwise) and reruns the page when a
    job starts or ends, so a page waiting for a model shows it as soon as it is cached."""
    def state() -> tuple:
        return tuple(j.id for j in job_manager().active())

    seen = state()

    @st.fragment(run_every=POLL_BUSY_S if any(seen) else POLL_IDLE_S)
    def panel() -> None:
        _panel()
        if state() != seen:
            st.rerun(scope="app")

    with st.sidebar:
        panel()


def format_seconds(seconds: float | None) -> str:
    return _fmt_s(seconds)
