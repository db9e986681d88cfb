"""Setting the config form's fields in a Streamlit ``AppTest`` (shared by the page tests).

A field is one widget keyed ``{prefix}:{name}`` when both architectures' presets agree, or one per
architecture keyed ``{prefix}:{name}:{arch}`` when they differ (``ui.widgets.config_overrides``).
A key the page does not have is an error here, never skipped: a renamed widget key must fail the
test instead of silently running the preset's value."""
from typing import Any

from streamlit.testing.v1 import AppTest

KINDS = ("number_input", "text_input", "selectbox", "checkbox")
ARCHS = ("ffnn", "rnn")


def field_widgets(at: AppTest, prefix: str, name: str) -> list:
    """Every widget of field ``name`` on the page: the shared one, or the per-architecture ones."""
    found = []
    for key in (f"{prefix}:{name}", *(f"{prefix}:{name}:{a}" for a in ARCHS)):
        for kind in KINDS:
            matches = [w for w in getattr(at, kind) if w.key == key]
            found.extend(matches)
    return found


def set_field(at: AppTest, prefix: str, name: str, value: Any) -> None:
    """Set field ``name`` (shared or per architecture) to ``value``; fails if the page has no such field."""
    widgets = field_widgets(at, prefix, name)
    keys = sorted(w.key for w in widgets)
    assert widgets, f"the page has no widget for {name!r} (looked for key {prefix}:{name}[:arch])"
    assert not (f"{prefix}:{name}" in keys and len(keys) > 1), f"{name!r} is both shared and per architecture: {keys}"
    for w in widgets:
        w.set_value(value)


def set_fields(at: AppTest, prefix: str, values: dict[str, Any]) -> None:
    """Set every field of ``values``; each must exist on the page."""
    for name, value in values.items():
        set_field(at, prefix, name, value)
