"""Drawing of a task's ``examples`` block (translations with token probabilities, rendered maps)."""
from __future__ import annotations

import base64
import html
from typing import Any

import streamlit as st


def _token_html(tokens: list[str], probs: list[float]) -> str:
    """Reference tokens shaded by the probability the model gave them (green = confident)."""
    spans = []
    for tok, p in zip(tokens, probs):
        alpha = 0.15 + 0.75 * float(p)
        spans.append(f'<span title="p={p:.3f}" style="background: rgba(46,160,67,{alpha:.2f}); padding:1px 3px; '
                     f'border-radius:3px; margin-right:2px">{html.escape(tok)}</span>')
    return " ".join(spans)


def translation_html(examples: dict[str, Any], arch_name: str) -> str:
    """The translation examples of one architecture as HTML (the page and the report use it)."""
    parts = []
    for group, title in ((True, "Members (in the victim's training set)"), (False, "Non-members")):
        parts.append(f"<p><b>{html.escape(arch_name)} — {title}</b></p>")
        for ex in [e for e in examples.get("sentences", []) if bool(e.get("member")) == group]:
            tokens = ex.get("tokens", [])
            mean_p = sum(t["prob"] for t in tokens) / max(len(tokens), 1)
            parts.append(
                f"<p><small>source:</small> {html.escape(ex.get('source', ''))}<br>"
                f"<small>victim's translation (sentence BLEU {ex.get('sentence_bleu', 0):.0f}):</small> "
                f"{html.escape(ex.get('translation', ''))}<br>"
                f"<small>reference, each token shaded by the probability the victim gives it "
                f"(mean {mean_p:.2f}):</small> "
                f"{_token_html([t['token'] for t in tokens], [t['prob'] for t in tokens])}</p>")
    return "\n".join(parts)


def navigation_stats(examples: dict[str, Any], arch_name: str) -> str:
    """One Markdown line: steps, return and success on member vs unseen maps."""
    steps = examples.get("steps_to_goal", {})
    ret = examples.get("return", {})
    success = examples.get("success_rate", {})
    n = examples.get("n_maps", {})
    maps = f" ({n.get('member', '?')} vs {n.get('unseen', '?')} maps)" if n else ""
    return (f"**{arch_name}**{maps} — mean steps to goal: member maps **{steps.get('member', float('nan')):.1f}**, "
            f"unseen maps **{steps.get('unseen', float('nan')):.1f}** · mean return {ret.get('member', 0):.3f} vs "
            f"{ret.get('unseen', 0):.3f} · goal reached {success.get('member', 0):.0%} vs {success.get('unseen', 0):.0%}")


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
