"""Drawing of a task's ``examples`` block (translations with token probabilities, rendered maps)."""
from __future__ import annotations

import base64
from typing import Any

import streamlit as st

from core.report import navigation_stats, translation_html


def show_examples(examples: dict[str, Any], arch_name: str) -> None:
    """One architecture's examples (navigation maps are drawn by :func:`show_navigation_maps`;
    this draws their numbers, and the rendered images only when asked to)."""
    kind = examples.get("kind")
    if kind == "translation":
        st.markdown(translation_html(examples, arch_name), unsafe_allow_html=True)
    elif kind == "navigation":
        if examples.get("steps_to_goal"):
            st.markdown(navigation_stats(examples, arch_name))
    elif examples:
        st.json(examples)


def show_map_images(examples: dict[str, Any], arch_name: str) -> None:
    """The task's own rendered maps (path tinted blue), at their native size."""
    maps = examples.get("maps", [])
    cols = st.columns(max(len(maps), 1))
    for col, m in zip(cols, maps):
        with col:
            caption = f"{arch_name}, {m.get('role', '?')} map (seed {m.get('seed')}): return {m.get('return', 0):.2f}, " \
                      f"{m.get('steps', '?')} steps{'' if m.get('reached_goal', True) else ', goal not reached'}"
            st.image(base64.b64decode(m["png_base64"]), caption=caption)
