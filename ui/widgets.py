"""Config form widgets generated from the config dataclasses, so every task gets its controls.

A field whose preset value is the same for every selected architecture gets one widget; a field
that differs (e.g. the learning rate: the study trains the ReNet with 1e-2, the CNN with 1e-3)
gets one widget per architecture.
"""
from __future__ import annotations

import dataclasses
from concurrent.futures import Future, wait
from typing import Any, Callable, Iterator

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from core.foundations.config import ExperimentConfig, field_range
from core.foundations.names import ARCH_NAMES as ARCH_LABELS
from core.tasks import available_tasks, get_task

#: Top-level fields offered on the page, with help texts.
MAIN_FIELDS = {
    "n_train": "Records each model trains on (the members).",
    "n_eval": "Members and non-members each in the balanced attack evaluation set.",
    "epochs": "Training epochs of the victim and every shadow model.",
    "lr": "Adam learning rate.",
    "weight_decay": "L2 regularisation (a defense: it narrows the generalisation gap).",
    "n_shadows": "Shadow models the attacker trains on its own, disjoint data.",
    "seed": "Seeds splits, initialisation and training: same seed, same numbers.",
    "repeats": "Independent repeats (seeds derived from the seed; repeat r of FFNN and RNN share a split): numbers "
               "become means with 95 % intervals and the FFNN-vs-RNN difference gets a verdict. Each repeat is "
               "cached, so raising it trains only the new ones.",
}
MORE_FIELDS = {
    "attack_epochs": "Checkpoint epochs with a separate attack (comma-separated); the final epoch is always attacked.",
    "batch_size": "Mini-batch size of victim and shadows.",
    "attack_hidden": "Hidden width of the attack classifier.",
    "attack_train_epochs": "Training epochs of the attack classifier.",
    "attack_lr": "Learning rate of the attack classifier.",
    "match_utility": "off, lower, or a number: compare at matched utility by construction — each architecture "
                     "(victim and shadows) stops at the first epoch whose validation utility reaches the target (the "
                     "number, or the lower of the two final utilities).",
    "precision": "float32, or bf16: training forward passes under bfloat16 autocast (for GPUs; slower on most CPUs). "
                 "Everything measured after training stays float32. Not with DP-SGD; PPO trains in float32.",
}


def _input(label: str, value: Any, key: str, help: str | None = None, choices: tuple | None = None) -> Any:
    if choices:  # a field with a fixed set of values (e.g. navigation's curriculum): no free text
        options = list(choices) if value in choices else [value, *choices]
        return st.selectbox(label, options, index=options.index(value), key=key, help=help,
                            format_func=lambda v: v if v != "" else "none")
    if isinstance(value, bool):
        return st.checkbox(label, value=value, key=key, help=help)
    if isinstance(value, int):
        return st.number_input(label, value=value, step=1, key=key, help=help)
    if isinstance(value, float):
        return st.number_input(label, value=value, format="%g", key=key, help=help)
    if isinstance(value, tuple):
        return st.text_input(label, value=",".join(map(str, value)), key=key, help=help)
    return st.text_input(label, value=str(value), key=key, help=help)


def with_range(help_text: str | None, owner: Any, name: str) -> str | None:
    """The help text plus the field's documented range (the one ``validate()`` enforces), so
    the page says what is allowed before a value is refused."""
    rng = field_range(owner, name)
    if rng is None:
        return help_text
    allowed = f"Allowed: {rng.describe()}."
    return f"{help_text} {allowed}" if help_text else allowed


def _as_shown(value: Any) -> Any:
    return ",".join(map(str, value)) if isinstance(value, tuple) else value


class _Grid:
    """Lays widgets out in rows of ``width`` columns."""
    def __init__(self, width: int = 4):
        self.width, self.i, self.cols = width, 0, None

    def cell(self):
        if self.i % self.width == 0:
            self.cols = st.columns(self.width)
        self.i += 1
        return self.cols[(self.i - 1) % self.width]


def config_overrides(bases: dict[str, ExperimentConfig], key_prefix: str) -> dict[str, dict[str, Any]]:
    """Widgets for the main fields and the task's options; returns per-architecture overrides
    (only values that differ from that architecture's preset)."""
    archs = list(bases)
    overrides: dict[str, dict[str, Any]] = {a: {} for a in archs}

    def widget(grid: _Grid, name: str, get: Callable[[ExperimentConfig], Any], help_text: str | None,
               owner: Any = None) -> None:
        help_text = with_range(help_text, owner if owner is not None else bases[archs[0]], name)
        choices = getattr(type(owner if owner is not None else bases[archs[0]]), "FIELD_CHOICES", {}).get(name)
        shown = {a: _as_shown(get(bases[a])) for a in archs}
        label = name.replace("_", " ")
        if len({repr(v) for v in shown.values()}) == 1:
            with grid.cell():
                value = _input(label, get(bases[archs[0]]), f"{key_prefix}:{name}", help_text, choices)
            for a in archs:
                if value != shown[a]:
                    overrides[a][name] = value
        else:
            for a in archs:
                with grid.cell():
                    value = _input(f"{label} ({ARCH_LABELS[a]})", get(bases[a]), f"{key_prefix}:{name}:{a}", help_text,
                                   choices)
                if value != shown[a]:
                    overrides[a][name] = value

    def config_field(n: str) -> Callable[[ExperimentConfig], Any]:
        """The reader of the config's field ``n``."""
        def get(c: ExperimentConfig) -> Any:
            return getattr(c, n)
        return get

    def task_option(n: str) -> Callable[[ExperimentConfig], Any]:
        """The reader of the task option ``n`` of a config."""
        def get(c: ExperimentConfig) -> Any:
            return getattr(c.options, n)
        return get

    grid = _Grid()
    for name, help_text in MAIN_FIELDS.items():
        widget(grid, name, config_field(name), help_text)
    with st.expander("More settings: attack checkpoints, attack classifier, matched utility, precision, task options"):
        grid = _Grid()
        for name, help_text in MORE_FIELDS.items():
            if name == "precision" and len(get_task(bases[archs[0]].task).precisions) < 2:
                continue  # one precision only (PPO: float32)
            widget(grid, name, config_field(name), help_text)
        options = bases[archs[0]].options
        if options is not None:
            st.markdown("**Task options**")
            grid = _Grid()
            for f in dataclasses.fields(options):
                widget(grid, f.name, task_option(f.name), None, owner=options)
    return overrides




def one_architecture_note(task) -> None:
    """Under the architecture picker of a task that provides one model (a plugin's): say that the
    FFNN-vs-RNN comparison is unavailable, instead of offering an architecture it lacks."""
    if len(task.archs) < 2:
        st.caption(f"{task.label or task.name} provides the {ARCH_LABELS[task.archs[0]]} only: "
                   "the FFNN-vs-RNN comparison is unavailable for it.")


def arch_label(arch: str) -> str:
    """An architecture's display name (FFNN, RNN), for an architecture picker's ``format_func``."""
    return ARCH_LABELS.get(arch, arch)


def task_label(name: str) -> str:
    """A task's display name (:attr:`core.tasks.base.Task.label`)."""
    return get_task(name).label or name


def task_selector(key: str | None = None) -> str:
    """The task select box shared by the pages, pre-selected by a ``?task=`` deep link."""
    tasks = available_tasks()
    wanted = st.query_params.get("task")
    return st.selectbox("Task", tasks, index=tasks.index(wanted) if wanted in tasks else 0,
                        format_func=task_label, key=key)


def drawn(tab) -> Iterator[None]:
    """``for _ in drawn(tab):`` runs its body once inside ``tab`` when ``tab`` is the open tab of
    tabs made with ``on_change="rerun"``, and not at all otherwise (a conditional ``with``: the
    tabs' bodies keep their indentation). A hidden tab's views are then neither computed nor sent
    to the browser. ``tab.open`` None (tabs that do not track which is open): draw every tab."""
    if tab.open is False:
        return
    with tab:
        yield


def remembered(key: str) -> str:
    """``key``, with the value its widget had when the user left the page put back: Streamlit drops
    a page's widget state on a visit to another page, so a user coming back would find the
    default again. Pair with :func:`remember` after the widget. For widgets created without an
    explicit default (one given beside a Session State value makes Streamlit warn)."""
    kept = f"_remembered:{key}"
    if key not in st.session_state and kept in st.session_state:
        st.session_state[key] = st.session_state[kept]
    return key


def remember(key: str) -> None:
    """Keep the current value of the widget ``key`` for :func:`remembered`."""
    if key in st.session_state:
        st.session_state[f"_remembered:{key}"] = st.session_state[key]


#: seconds of one wait slice of :func:`wait_yielding`: the longest a user's next step waits on it
WAIT_SLICE_S = 0.05


def wait_yielding(futures: list[Future], ticker: DeltaGenerator) -> str | None:
    """Wait for ``futures`` within this script run; None once all are done, else the first that failed or was
    cancelled, as one line. The caller then draws what they computed in place, in the same run (a
    rerun to show them cost a second script run and a second drawing of everything).

    Between wait slices ``ticker`` (an ``st.empty()`` the caller placed where an empty element shows nothing, the
    same spot on every run, so no other element's spot is left blank during the wait) is emptied again: every
    Streamlit call is where a rerun the user asked for meanwhile (a slider step) interrupts the script, so the
    wait never holds the next step up by more than :data:`WAIT_SLICE_S` (a plain ``future.result()`` would, by
    the whole computation left)."""
    while wait(futures, timeout=WAIT_SLICE_S).not_done:
        ticker.empty()
    for f in futures:
        if f.cancelled():
            return "cancelled"
        if (exc := f.exception()) is not None:
            return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None
