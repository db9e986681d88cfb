"""A typed layout is declared once, as a dataclass: its converters, required keys and key order follow from the
annotations (core.foundations.typed_json.fields_of), and every layout in core/ derives its table."""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

import core
from core.foundations.errors import ResultFormatError
from core.foundations.typed_json import Open, Typed, fields_of, json_key, json_schema, omissible
from core.measurement.stats import Estimate


@dataclass(frozen=True, kw_only=True)
class Leaf(Typed):
    """A named leaf."""

    name: str
    score: float


@dataclass(frozen=True, kw_only=True)
class Layout(Typed):
    """A layout with one field of each kind."""

    label: str
    note: str | None = None
    count: int | None = omissible()
    required_or_null: float | None
    values: tuple[float, ...] | None = omissible(())
    maybe_values: tuple[float | None, ...] | None = omissible()
    flags: tuple[bool, ...] | None = omissible()
    words: tuple[str, ...] | None = omissible()
    by_key: dict[str, float | None] | None = omissible()
    blob: dict[str, Any] | None = None
    rows: list[Any] | None = omissible()
    interval: Estimate | None = None
    leaf: Leaf | None = None
    leaves: dict[str, Leaf] | None = json_key(default=None, nullable=False, by_name=True)

    _WHAT: ClassVar[str] = "layout"


def test_the_table_follows_the_annotations_in_field_order():
    table = fields_of(Layout)
    assert list(table) == ["label", "note", "count", "required_or_null", "values", "maybe_values", "flags", "words",
                           "by_key", "blob", "rows", "interval", "leaf", "leaves"]
    assert [k for k, (_, required) in table.items() if required] == ["label", "required_or_null"]
    assert [k for k, (conv, _) in table.items() if conv.nullable] == ["note", "required_or_null", "blob", "interval",
                                                                        "leaf"]
    props = json_schema(Layout, "t")["properties"]
    assert props["count"] == {"type": "integer"} and props["values"] == {"type": "array", "items": {"type": "number"}}
    assert props["maybe_values"]["items"] == {"type": ["number", "null"]}
    assert props["flags"]["items"] == {"type": "boolean"} and props["words"]["items"] == {"type": "string"}
    assert props["leaves"] == {"type": "object", "additionalProperties": {"$ref": "#/$defs/LeafByKey"}}


def test_a_layout_reads_checks_and_writes_back_what_it_read():
    d = {"required_or_null": None, "label": "x", "count": 3, "values": [1, 2.5], "maybe_values": [None, 1],
         "flags": [True], "by_key": {"a": None}, "blob": {"k": [1]}, "rows": [[1, None]],
         "interval": {"mean": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": 3}, "leaf": {"name": "l", "score": 1},
         "leaves": {"lira": {"score": 2}}}
    read = Layout.from_dict(d)
    assert read.values == (1, 2.5) and read.leaves["lira"] == Leaf(name="lira", score=2)
    assert isinstance(read.interval, Estimate) and read.interval.ci_low == 0.4 and read.note is None
    out = read.to_dict()  # the interval is written whole (its sd, method, …); every other key as read
    assert list(out) == list(d) and {k: v for k, v in out.items() if k != "interval"} == {
        k: v for k, v in d.items() if k != "interval"}
    with pytest.raises(ResultFormatError, match=r"layout\.count must be given \(not null\)"):
        Layout.from_dict({**d, "count": None})
    with pytest.raises(ResultFormatError, match=r"layout\.count must be an integer, got 2\.5"):
        Layout.from_dict({**d, "count": 2.5})
    with pytest.raises(ResultFormatError, match="layout lacks 'required_or_null'"):
        Layout.from_dict({"label": "x"})
    with pytest.raises(ResultFormatError, match="unknown key 'other'"):
        Layout.from_dict({**d, "other": 1})


def test_built_in_code_a_layout_writes_its_fields_in_their_order_and_leaves_out_the_unset_ones():
    built = Layout(label="x", required_or_null=None, leaf=Leaf(name="l", score=0.5))
    assert built.to_dict() == {"label": "x", "required_or_null": None, "values": [], "leaf": {"name": "l", "score": 0.5}}
    assert list(built.to_dict()) == ["label", "required_or_null", "values", "leaf"]


def test_an_annotation_without_a_converter_is_refused_naming_the_field():
    @dataclass(frozen=True, kw_only=True)
    class Unsaid(Open):
        either: int | str

    with pytest.raises(TypeError, match=r"Unsaid\.either: no converter"):
        fields_of(Unsaid)


def _layouts(cls: type) -> list[type]:
    return [c for s in cls.__subclasses__() for c in (s, *_layouts(s))]


def test_every_layout_in_core_derives_its_table():
    for m in pkgutil.walk_packages(core.__path__, "core."):
        if not m.name.endswith("__main__"):
            importlib.import_module(m.name)
    layouts = {c for c in _layouts(Typed) if c.__module__.startswith("core.") and c is not Open}
    assert len(layouts) > 60
    for cls in layouts:
        table = fields_of(cls)
        assert table, cls
        assert not hasattr(cls, "_FIELDS"), f"{cls.__qualname__}: a hand-written table beside its annotations"
