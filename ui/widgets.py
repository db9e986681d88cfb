"""Config form widgets generated from the config dataclasses, so every task gets its controls."""
from __future__ import annotations

import dataclasses
from typing import Any

import streamlit as st

from core.config import ExperimentConfig

#: Top-level fields offered on the page, with help texts.
MAIN_FIELDS = {
    "n_train": "Records each model trains on (the members).",
    "n_eval": "Members and non-members each in the balanced attack evaluation set.",
    "epochs": "Training epochs of the victim and every shadow model.",
    "lr": "Adam learning rate.",
    "weight_decay": "L2 regularisation (a defense: it narrows the generalisation gap).",
    "n_shadows": "Shadow models the attacker trains on its own, disjoint data.",
    "seed": "Seeds splits, initialisation and training: same seed, same numbers.",
}


def _input(label: str, value: Any, key: str, help: str | None = None) -> Any:
    if isinstance(value, bool):
        return st.checkbox(label, value=value, key=key, help=help)
    if isinstance(value, int):
        return st.number_input(label, value=value, step=1, key=key, help=help)
    if isinstance(value, float):
        return st.number_input(label, value=value, format="%g", key=key, help=help)
    if isinstance(value, tuple):
        text = st.text_input(label, value=",".join(map(str, value)), key=key, help=help)
        return text
    return st.text_input(label, value=str(value), key=key, help=help)


def config_overrides(base: ExperimentConfig, key_prefix: str) -> dict[str, Any]:
    """Widgets for the main fields and the task's options; returns the values that differ from ``base``."""
    overrides: dict[str, Any] = {}
    cols = st.columns(4)
    for i, (name, help_text) in enumerate(MAIN_FIELDS.items()):
        with cols[i % 4]:
            value = _input(name.replace("_", " "), getattr(base, name), f"{key_prefix}:{name}", help_text)
        if value != getattr(base, name):
            overrides[name] = value
    with st.expander("More settings: attack checkpoints, attack classifier, task options"):
        cols = st.columns(4)
        extra = ["attack_epochs", "batch_size", "attack_hidden", "attack_train_epochs", "attack_lr"]
        for i, name in enumerate(extra):
            with cols[i % 4]:
                current = getattr(base, name)
                value = _input(name.replace("_", " "), current, f"{key_prefix}:{name}")
                if name == "attack_epochs":
                    if value != ",".join(map(str, current)):
                        overrides[name] = value
                elif value != current:
                    overrides[name] = value
        if base.options is not None:
            st.markdown("**Task options**")
            cols = st.columns(4)
            for i, f in enumerate(dataclasses.fields(base.options)):
                current = getattr(base.options, f.name)
                with cols[i % 4]:
                    value = _input(f.name.replace("_", " "), current, f"{key_prefix}:opt:{f.name}")
                if value != current:
                    overrides[f.name] = value
    return overrides
