"""Who a browser session is, for what the server keeps per user: its jobs (:class:`core.jobs.manager.SessionJobs`) and
its uploads (:func:`ui.shared.my_uploads`).

A session is its browser tab's Streamlit session unless the server is told which HTTP header its reverse proxy
puts the log-in name in (``MIA_USER_HEADER``): then a user is that name, the same in every tab and after a
reload. Only a proxy that sets (and overwrites) that header may reach the app — the app binds to the loopback
interface by default for that reason (docs/operations.md, "Serving a class"). Lecturers are the log-in names in
``MIA_LECTURERS``: the server's own configuration, never anything the browser sends but the proxy's header.
"""
from __future__ import annotations

import secrets

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from core.foundations.environment import env_value

_KEY = "_mia_session_id"


def login_name() -> str | None:
    """The log-in name the reverse proxy passed (None when ``MIA_USER_HEADER`` is not set or the header is absent)."""
    header = env_value("MIA_USER_HEADER")
    if not header:
        return None
    try:
        name = st.context.headers.get(str(header))
    except Exception:  # noqa: BLE001 — no request behind this run (a test's script run): no log-in
        return None
    name = (name or "").strip()
    return name[:256] or None


def session_owner() -> str:
    """This session's owner id: ``user:<log-in name>`` behind a proxy's log-in, else ``session:<random id>`` kept
    in the session's state (a reload is a new session)."""
    name = login_name()
    if name:
        return f"user:{name}"
    if _KEY not in st.session_state:
        st.session_state[_KEY] = secrets.token_hex(12)
    return f"session:{st.session_state[_KEY]}"


def is_lecturer() -> bool:
    """Whether this session's log-in name is one of ``MIA_LECTURERS``."""
    name = login_name()
    lecturers = env_value("MIA_LECTURERS")  # names_list's tuple of names, or None when unset
    return bool(name) and isinstance(lecturers, tuple) and name in lecturers


def in_session() -> bool:
    """Whether this code runs in a browser session's script run (not a test's or a thread's own call)."""
    return get_script_run_ctx(suppress_warning=True) is not None
