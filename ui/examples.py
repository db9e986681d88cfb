"""Drawing of one record (:class:`core.tasks.base.RecordView`, by its kind). A run's ``examples`` block
(translations with token probabilities, maps) is a section of :mod:`core.views.run_view`."""
from __future__ import annotations

import streamlit as st

from core.foundations.names import ARCH_NAMES
from core.tasks.base import RECORD_KINDS, RecordView
from core.views.map_figures import navigation_map
from core.views.plain import plain_markdown


def show_record(views: dict[str, RecordView], key: str, note: str = "", width: int = 120) -> None:
    """One record as :meth:`core.tasks.base.Task.describe_record` gives it, one view per
    architecture (arch → view, the same record): the record once, then each victim's answer on it
    (a translation; a map with its path), and ``note`` (scores) under it. Drawn by the view's kind
    alone, so a new task needs nothing here."""
    first = next(iter(views.values()))
    # the task's caption names the record's class or label (the user's data): as text; ``note`` is the caller's
    # Markdown (a caller escapes the user's strings it puts in, e.g. a record id)
    caption = f"{plain_markdown(first.caption)} · {note}" if note else plain_markdown(first.caption)
    if first.kind == "image":
        if first.image is None:
            raise ValueError("an image record without its image")
        st.image(first.image, caption=caption, width=width)
    elif first.kind == "text":
        # the record's text is the user's data: shown as it is, never as Markdown
        lines = [f"{plain_markdown(label)}: {plain_markdown(text)}" for label, text in first.lines]
        lines += [f"{ARCH_NAMES.get(a, a) + ' ' if len(views) > 1 else ''}victim: {plain_markdown(v.answer)}"
                  for a, v in views.items() if v.answer is not None]
        st.markdown("  \n".join(lines + ([note] if note else [])))
    elif first.kind == "map":
        drawn = {a: v.answer for a, v in views.items() if v.answer is not None}
        for col, (arch, view) in zip(st.columns(max(len(drawn), 1)), drawn.items()):
            with col:
                fig = navigation_map({arch: [view]}, view.role)
                if fig is not None:
                    st.plotly_chart(fig, width="stretch", key=f"{key}-{arch}")
        st.caption(caption)
    else:
        raise ValueError(f"unknown record kind {first.kind!r}; one of {RECORD_KINDS}")
