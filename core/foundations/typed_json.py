"""The machinery of the typed results (:mod:`core.experiment.results` and every other layout): how one JSON value
is checked and read (a converter, :class:`Conv`) and written back, and :class:`Typed`, the shared ``from_dict`` /
``to_dict`` of every typed result (one-line :class:`core.foundations.errors.ResultFormatError` naming the field;
unknown keys refused unless a layout is open, :class:`Open`; ``to_dict`` gives back exactly the dict read). On the
bottom floor, so that a result is one class wherever it is born: the measurement floor's own results
(:class:`core.measurement.budget.BudgetPoint`, :class:`core.measurement.exposure.QuadrantCount`) are the layouts
their readers check. The interval converter lives beside its type (:func:`core.measurement.stats.estimate`,
registered by :func:`converts`).

A layout is declared once, as a dataclass: its fields are its JSON keys in their order, and how each reads follows
from its annotation (:func:`fields_of`, :func:`converter`)::

    @dataclass(frozen=True, kw_only=True)
    class Point(Typed):
        metric: str                            # required (no default), a string, never null
        train: float | None = None             # may be left out or null; any number (an int stays an int)
        n: int | None = omissible()            # may be left out (None then), never null
        attacks: dict[str, AttackResult] = json_key(by_name=True)   # what the annotation cannot say

Keyword-only, so that a required key may follow an optional one as the layout has it."""
from __future__ import annotations

import types
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Callable, ClassVar, Mapping, TypeVar, Union, cast, get_args, get_origin, get_type_hints

from core.foundations.errors import ResultFormatError
from core.foundations.version import SCHEMA_KEY, envelope_problem, unstamped

T = TypeVar("T", bound="Typed")


# ---------------------------------------------------------------------------- field converters
@dataclass(frozen=True)
class Conv:
    """How one JSON value is checked and read (``read(value, where)``) and written back (``write``)."""

    read: Callable[[Any, str], Any]
    write: Callable[[Any], Any]
    nullable: bool = False
    #: the JSON Schema of the values it reads (:func:`json_schema`): a dict, or a function of the ``$defs`` being
    #: collected (a typed object's reference); None: any value (a converter that does not say)
    schema: Any = None


def fail(where: str, what: str, value: Any) -> ResultFormatError:
    shown = repr(value)
    return ResultFormatError(f"{where} must be {what}, got {shown if len(shown) <= 40 else shown[:37] + '...'}")


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def number(v: Any, where: str) -> Any:
    if not is_number(v):
        raise fail(where, "a number", v)
    return v  # as it was: an int stays an int, so the JSON written back is the JSON read


def integer(v: Any, where: str) -> Any:
    if not isinstance(v, int) or isinstance(v, bool):
        raise fail(where, "an integer", v)
    return v


def kind(kind: type | tuple[type, ...], what: str, schema: dict[str, Any] | None = None) -> Conv:
    def read(v: Any, where: str) -> Any:
        if not isinstance(v, kind) or (kind is not bool and isinstance(v, bool)):
            raise fail(where, what, v)
        return v

    return Conv(read, lambda v: v, schema=schema)


NUM = Conv(number, lambda v: v, schema={"type": "number"})
INT = Conv(integer, lambda v: v, schema={"type": "integer"})
STR = kind(str, "a string", {"type": "string"})
BOOL = kind(bool, "true or false", {"type": "boolean"})
DICT = kind(dict, "a JSON object", {"type": "object"})
LIST = kind(list, "a list", {"type": "array"})


def null(conv: Conv) -> Conv:
    """``conv`` or JSON null (None)."""
    return Conv(lambda v, where: None if v is None else conv.read(v, where),
                 lambda v: None if v is None else conv.write(v), nullable=True,
                 schema=lambda defs: {"anyOf": [schema_of(conv, defs), {"type": "null"}]})


def numbers(nullable: bool = False) -> Conv:
    """A list of numbers (``nullable``: or nulls, a record an attack could not score), read as a tuple."""
    def read(v: Any, where: str) -> tuple:
        if not isinstance(v, list):
            raise fail(where, "a list of numbers", v)
        for i, x in enumerate(v):
            if x is not None or not nullable:
                number(x, f"{where}[{i}]")
        return tuple(v)

    items = {"type": ["number", "null"]} if nullable else {"type": "number"}
    return Conv(read, list, schema={"type": "array", "items": items})


def mapping(conv: Conv, key_name: bool = False) -> Conv:
    """A JSON object of ``conv`` values (``key_name``: each value's default name is its key)."""
    def read(v: Any, where: str) -> dict:
        if not isinstance(v, dict):
            raise fail(where, "a JSON object", v)
        out = {}
        for k, x in v.items():
            at = f"{where}[{k!r}]"
            out[k] = conv.read(x, at) if not key_name else conv.read(x, at, k)  # type: ignore[call-arg]
        return out

    return Conv(read, lambda v: {k: conv.write(x) for k, x in v.items()},
                schema=lambda defs: {"type": "object", "additionalProperties": schema_of(conv, defs)})


def objects(cls: type[Typed], key_name: bool = False) -> Conv:
    """One typed object (``cls.from_dict``)."""
    if key_name:
        def read(v: Any, where: str, name: str | None = None) -> Typed:
            return cls.from_dict(v, where, name)

        return Conv(read, lambda v: v.to_dict(), schema=lambda defs: reference(cls, defs, named_by_key=True))
    return Conv(lambda v, where: cls.from_dict(v, where), lambda v: v.to_dict(),
                schema=lambda defs: reference(cls, defs))


def sequence(conv: Conv) -> Conv:
    def read(v: Any, where: str) -> tuple:
        if not isinstance(v, list):
            raise fail(where, "a list", v)
        return tuple(conv.read(x, f"{where}[{i}]") for i, x in enumerate(v))

    return Conv(read, lambda v: [conv.write(x) for x in v],
                schema=lambda defs: {"type": "array", "items": schema_of(conv, defs)})


def flags() -> Conv:
    def read(v: Any, where: str) -> tuple:
        if not isinstance(v, list) or not all(isinstance(x, bool) for x in v):
            raise fail(where, "a list of true / false", v)
        return tuple(v)

    return Conv(read, list, schema={"type": "array", "items": {"type": "boolean"}})


# ---------------------------------------------------------------------------- a layout's fields, from its annotations
#: the converters of types below this floor that are not typed layouts (an interval: :func:`core.measurement.stats.
#: estimate`), registered beside their type by :func:`converts`
_CONVERTERS: dict[type, Conv] = {}
#: the ``field(metadata=...)`` keys of :func:`json_key`
_CONV, _NULLABLE, _BY_NAME = "json_conv", "json_nullable", "json_by_name"


def converts(tp: type, conv: Conv) -> None:
    """Read and write a field annotated ``tp`` (a plain class, not a :class:`Typed` layout) with ``conv``."""
    _CONVERTERS[tp] = conv


def json_key(*, default: Any = MISSING, nullable: bool = True, conv: Conv | None = None, by_name: bool = False) -> Any:
    """A layout's field where its annotation alone does not say how its JSON reads (:func:`fields_of`):

    ``default``: as :func:`dataclasses.field`'s (a field with one may be left out of the JSON);
    ``nullable=False``: annotated ``X | None`` for a key that may be left out (None then) but is never null;
    ``conv``: the converter of the value (wrapped in :func:`null` where the annotation admits None and ``nullable``);
    ``by_name``: the ``dict[str, T]`` of typed objects in the annotation is keyed by each one's name, which the
    object itself may leave out (:func:`objects` ``key_name``)."""
    meta = {k: v for k, v in ((_CONV, conv), (_NULLABLE, nullable), (_BY_NAME, by_name)) if v is not None}
    return field(default=default, metadata=meta)


def omissible(default: Any = None) -> Any:
    """A field whose key may be left out of the JSON (the attribute reads None then) but is never null in it;
    ``default``: its value when built in code."""
    return json_key(default=default, nullable=False)


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def _without_none(tp: Any) -> Any:
    """``X`` of ``X | None`` (``tp`` itself where it admits no None)."""
    if not _is_union(tp):
        return tp
    rest = tuple(a for a in get_args(tp) if a is not type(None))
    return rest[0] if len(rest) == 1 else Union[rest]


def converter(tp: Any, by_name: bool = False) -> Conv:
    """The converter of a field annotated ``tp``: ``float`` a number (an int stays an int), ``int``, ``str``,
    ``bool``; ``X | None`` :func:`null`; ``tuple[X, ...]`` a checked list read as a tuple (``float``:
    :func:`numbers`, ``float | None``: ``numbers(nullable=True)``, ``bool``: :func:`flags`); ``list[...]`` a list kept
    as read; ``dict[str, Any]`` a JSON object kept as read, ``dict[str, X]`` :func:`mapping`; a :class:`Typed`
    layout :func:`objects`; a type registered by :func:`converts`. ``by_name``: see :func:`json_key`."""
    if _is_union(tp):
        inner = _without_none(tp)
        if inner is tp:
            raise TypeError(f"no converter for the union {tp} (json_key(conv=...))")
        return null(converter(inner, by_name))
    if tp is float:
        return NUM
    if tp is int:
        return INT
    if tp is str:
        return STR
    if tp is bool:
        return BOOL
    origin, args = get_origin(tp), get_args(tp)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = args[0]
        if item is float:
            return numbers()
        if item is bool:
            return flags()
        if _is_union(item) and _without_none(item) is float:
            return numbers(nullable=True)
        return sequence(converter(item, by_name))
    if tp is list or origin is list:
        return LIST
    if tp is dict or (origin is dict and args[1] is Any):
        return DICT
    if origin is dict and args[0] is str:
        value = args[1]
        if by_name and isinstance(value, type) and issubclass(value, Typed):
            return mapping(objects(value, key_name=True), key_name=True)
        return mapping(converter(value, by_name))
    if isinstance(tp, type) and issubclass(tp, Typed):
        return objects(tp)
    if tp in _CONVERTERS:
        return _CONVERTERS[tp]
    raise TypeError(f"no converter for {tp!r} (json_key(conv=...))")


_TABLES: dict[type, dict[str, tuple[Conv, bool]]] = {}


def fields_of(cls: type[Typed]) -> dict[str, tuple[Conv, bool]]:
    """Layout ``cls``'s JSON keys, ``name -> (converter, required)`` in its fields' order (the order written), derived
    from its dataclass annotations once, on first use (:func:`converter`): required where the field has no default,
    null allowed where the annotation admits None, unless :func:`json_key` says otherwise."""
    table = _TABLES.get(cls)
    if table is not None:
        return table
    hints = get_type_hints(cls)
    base = {f.name for f in fields(Typed)}
    table = {}
    for f in fields(cls):
        if f.name in base:
            continue
        tp, meta = hints[f.name], f.metadata
        try:
            nullable = meta.get(_NULLABLE, True) and _without_none(tp) is not tp
            conv = meta.get(_CONV) or converter(_without_none(tp), meta.get(_BY_NAME, False))
        except TypeError as e:
            raise TypeError(f"{cls.__qualname__}.{f.name}: {e}") from None
        required = f.default is MISSING and f.default_factory is MISSING
        table[f.name] = (null(conv) if nullable else conv, required)
    _TABLES[cls] = table
    return table


# ---------------------------------------------------------------------------- the base
@dataclass(frozen=True)
class Typed:
    """Shared ``from_dict`` / ``to_dict`` of the typed results (see the module docstring).

    A subclass is a frozen, keyword-only dataclass whose fields are its JSON keys, in the layout's order; how each
    reads follows from its annotation (:func:`fields_of`). ``extra``: the keys of the dict read that the layout does
    not type (an open layout's, :class:`Open`); ``keys``: the dict's order, so ``to_dict`` writes it back as read.
    """

    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False, kw_only=True)

    _WHAT: ClassVar[str] = "result"
    #: refuse keys that are not fields (a layout this version does not know is an error, not
    #: something carried along unread); False where the layout is open by design (see each class)
    _STRICT: ClassVar[bool] = True
    #: built in code, ``to_dict`` writes every field, None ones as null (the layouts that were written by
    #: ``dataclasses.asdict``); False: an optional field that is None is left out
    _ALL: ClassVar[bool] = False

    @classmethod
    def from_dict(cls: type[T], d: Mapping[str, Any], where: str | None = None, name: str | None = None) -> T:
        """Check ``d`` and read it (:class:`ResultFormatError`, one line, on a missing or ill-typed field).

        ``name``: the default of a ``name`` field the dict itself lacks (an attack under its name's key).
        """
        where = where or cls._WHAT
        if isinstance(d, cls):
            return d
        if not isinstance(d, Mapping):
            raise fail(where, "a JSON object", d)
        if SCHEMA_KEY in d:  # a file the product wrote: its envelope says what it holds, the layout follows
            problem = envelope_problem(d)
            if problem is not None:
                raise ResultFormatError(f"{where}: {problem}")
            d = unstamped(d)
        table = fields_of(cls)
        values: dict[str, Any] = {}
        for key, (conv, required) in table.items():
            if key not in d:
                if key == "name" and name is not None:
                    values[key] = name
                    continue
                if required:
                    raise ResultFormatError(f"{where} lacks {key!r}")
                values[key] = None
                continue
            value = d[key]
            if value is None and not conv.nullable:
                raise fail(f"{where}.{key}", "given (not null)", value)
            values[key] = conv.read(value, f"{where}.{key}")
        extra = {k: v for k, v in d.items() if k not in table}
        if extra and cls._STRICT:
            raise ResultFormatError(f"{where} has unknown key{'s' * (len(extra) > 1)} "
                                    f"{', '.join(map(repr, extra))} (written by another version?)")
        return cls(**values, extra=extra, keys=tuple(d))

    @classmethod
    def coerce(cls: type[T], d: "T | Mapping[str, Any]") -> T:
        """``d`` itself when it is already typed, else :meth:`from_dict` (readers that accept both)."""
        return d if isinstance(d, cls) else cls.from_dict(cast(Mapping[str, Any], d))  # not a T: its mapping

    def with_json(self: T, updates: Mapping[str, Any]) -> T:
        """A copy with ``updates`` (JSON values) written over the layout, as ``{**d, **updates}`` does to the dict
        (a key it lacks goes last), checked again; itself where nothing would change."""
        table = fields_of(type(self))
        if all(k in self.keys and (getattr(self, k) if k in table else self.extra.get(k)) == v
               for k, v in updates.items()):
            return self
        return type(self).from_dict({**self.to_dict(), **updates})

    def to_dict(self) -> dict[str, Any]:
        """The JSON dict: exactly the one read (keys, order, values), or every field when built in code."""
        table = fields_of(type(self))
        order = self.keys or tuple(k for k, (_, required) in table.items()
                                   if required or self._ALL or getattr(self, k) is not None) + tuple(self.extra)
        out: dict[str, Any] = {}
        for k in order:
            if k in table:
                out[k] = table[k][0].write(getattr(self, k))
            else:
                out[k] = self.extra[k]
        return out


@dataclass(frozen=True)
class Open(Typed):
    """An open layout: the typed fields, and every other key of the dict read kept in ``extra`` (``keys``: the
    dict's order), so ``to_dict()`` is the dict read."""

    _STRICT: ClassVar[bool] = False


# ---------------------------------------------------------------------------- JSON Schema of a layout
#: the JSON Schema dialect written
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def schema_of(conv: Conv, defs: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of the values ``conv`` reads (``{}``, any value, where the converter does not say)."""
    if conv.schema is None:
        return {}
    return conv.schema(defs) if callable(conv.schema) else dict(conv.schema)


def _class_schema(cls: type[Typed], defs: dict[str, Any], named_by_key: bool = False) -> dict[str, Any]:
    doc = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
    table = fields_of(cls)
    required = [k for k, (_, req) in table.items() if req and not (named_by_key and k == "name")]
    out: dict[str, Any] = {"type": "object"}
    if doc:
        out["description"] = doc
    out["properties"] = {k: schema_of(conv, defs) for k, (conv, _) in table.items()}
    if required:
        out["required"] = required
    out["additionalProperties"] = not cls._STRICT  # an open layout keeps every other key (in ``extra``)
    return out


def reference(cls: type[Typed], defs: dict[str, Any], named_by_key: bool = False) -> dict[str, Any]:
    """A ``$ref`` to ``cls``'s schema in ``defs``, added there the first time (``named_by_key``: under a mapping
    whose keys are the objects' names, so ``name`` may be left out)."""
    name = cls.__name__ + ("ByKey" if named_by_key else "")
    if name in defs and defs[name].get("x-python") not in (None, f"{cls.__module__}.{cls.__qualname__}"):
        name = f"{cls.__module__.rpartition('.')[2]}.{name}"  # two layouts of one name in different modules
    if name not in defs:
        defs[name] = {"x-python": f"{cls.__module__}.{cls.__qualname__}"}  # placeholder: a layout may nest itself
        defs[name].update(_class_schema(cls, defs, named_by_key))
    return {"$ref": f"#/$defs/{name}"}


def json_schema(cls: type[Typed], title: str, envelope: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of layout ``cls``, generated from its fields (and theirs, under
    ``$defs``): what :meth:`Typed.from_dict` accepts, as far as the converters say (a converter without a schema
    accepts anything; checks in code, such as a primary attack being among ``attacks``, are not expressed).
    ``envelope``: the ``schema`` value the product's files carry (:mod:`core.foundations.version`), added as an
    optional property with the package version beside it."""
    defs: dict[str, Any] = {}
    root = _class_schema(cls, defs)
    props = root.pop("properties")
    if envelope is not None:
        props = {"schema": {"type": "object", "properties": {"name": {"const": envelope["name"]},
                                                             "version": {"const": envelope["version"]}},
                            "required": ["name", "version"]},
                 "mia_explorer_version": {"type": "string"}, **props}
    out = {"$schema": JSON_SCHEMA_DIALECT, "title": title, **root, "properties": props}
    out["required"] = out.pop("required", [])
    out["additionalProperties"] = out.pop("additionalProperties")
    out["$defs"] = {k: defs[k] for k in sorted(defs)}
    return out
