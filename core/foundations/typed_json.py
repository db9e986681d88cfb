"""The machinery of the typed results (:mod:`core.experiment.results` and every other layout): how one JSON value
is checked and read (a converter, :class:`Conv`) and written back, and :class:`Typed`, the shared ``from_dict`` /
``to_dict`` of every typed result (one-line :class:`core.foundations.errors.ResultFormatError` naming the field;
unknown keys refused unless a layout is open, :class:`Open`; ``to_dict`` gives back exactly the dict read). On the
bottom floor, so that a result is one class wherever it is born: the measurement floor's own results
(:class:`core.measurement.budget.BudgetPoint`, :class:`core.measurement.exposure.QuadrantCount`) are the layouts
their readers check. The interval converter lives beside its type (:func:`core.measurement.stats.estimate`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping, TypeVar

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
ANY = Conv(lambda v, where: v, lambda v: v)


def null(conv: Conv) -> Conv:
    """``conv`` or JSON null (None)."""
    return Conv(lambda v, where: None if v is None else conv.read(v, where),
                 lambda v: None if v is None else conv.write(v), nullable=True,
                 schema=lambda defs: {"anyOf": [schema_of(conv, defs), {"type": "null"}]})


def numbers() -> Conv:
    """A list of numbers, read as a tuple."""
    def read(v: Any, where: str) -> tuple:
        if not isinstance(v, list):
            raise fail(where, "a list of numbers", v)
        for i, x in enumerate(v):
            number(x, f"{where}[{i}]")
        return tuple(v)

    return Conv(read, list, schema={"type": "array", "items": {"type": "number"}})


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
        return Conv(lambda v, where, name=None: cls.from_dict(v, where, name), lambda v: v.to_dict(),
                    schema=lambda defs: reference(cls, defs, named_by_key=True))
    return Conv(lambda v, where: cls.from_dict(v, where), lambda v: v.to_dict(),
                schema=lambda defs: reference(cls, defs))


def sequence(conv: Conv) -> Conv:
    def read(v: Any, where: str) -> tuple:
        if not isinstance(v, list):
            raise fail(where, "a list", v)
        return tuple(conv.read(x, f"{where}[{i}]") for i, x in enumerate(v))

    return Conv(read, lambda v: [conv.write(x) for x in v],
                schema=lambda defs: {"type": "array", "items": schema_of(conv, defs)})


# ---------------------------------------------------------------------------- the base
@dataclass(frozen=True)
class Typed:
    """Shared ``from_dict`` / ``to_dict`` of the typed results (see the module docstring).

    A subclass lists its JSON keys in ``_FIELDS`` (``name -> (converter, required)``), in the
    layout's order; each is an attribute of the same name.
    """

    _FIELDS: ClassVar[dict[str, tuple[Conv, bool]]] = {}
    _WHAT: ClassVar[str] = "result"
    #: refuse keys that are not in ``_FIELDS`` (a layout this version does not know is an error, not
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
        values: dict[str, Any] = {}
        for key, (conv, required) in cls._FIELDS.items():
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
        extra = {k: v for k, v in d.items() if k not in cls._FIELDS}
        if extra and cls._STRICT:
            raise ResultFormatError(f"{where} has unknown key{'s' * (len(extra) > 1)} "
                                    f"{', '.join(map(repr, extra))} (written by another version?)")
        return cls(**values, extra=extra, keys=tuple(d))  # type: ignore[call-arg]

    @classmethod
    def coerce(cls: type[T], d: "T | Mapping[str, Any]") -> T:
        """``d`` itself when it is already typed, else :meth:`from_dict` (readers that accept both)."""
        return d if isinstance(d, cls) else cls.from_dict(d)

    def with_json(self: T, updates: Mapping[str, Any]) -> T:
        """A copy with ``updates`` (JSON values) written over the layout, as ``{**d, **updates}`` does to the dict
        (a key it lacks goes last), checked again; itself where nothing would change."""
        if all(k in self.keys and (getattr(self, k) if k in self._FIELDS else self.extra.get(k)) == v  # type: ignore[attr-defined]
               for k, v in updates.items()):
            return self
        return type(self).from_dict({**self.to_dict(), **updates})

    def to_dict(self) -> dict[str, Any]:
        """The JSON dict: exactly the one read (keys, order, values), or every field when built in code."""
        order = self.keys or tuple(k for k, (_, required) in self._FIELDS.items()
                                   if required or self._ALL or getattr(self, k) is not None) + tuple(self.extra)
        out: dict[str, Any] = {}
        for k in order:
            if k in self._FIELDS:
                out[k] = self._FIELDS[k][0].write(getattr(self, k))
            else:
                out[k] = self.extra[k]
        return out


@dataclass(frozen=True)
class Open(Typed):
    """An open layout: the typed fields, and every other key of the dict read kept in ``extra`` (``keys``: the
    dict's order), so ``to_dict()`` is the dict read. Keyword-only, so a layout lists its own fields first."""

    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False, kw_only=True)

    _STRICT: ClassVar[bool] = False


def optional_numbers() -> Conv:
    """A list of numbers or nulls (a record an attack could not score), read as a tuple."""
    def read(v: Any, where: str) -> tuple:
        if not isinstance(v, list):
            raise fail(where, "a list of numbers", v)
        for i, x in enumerate(v):
            if x is not None:
                number(x, f"{where}[{i}]")
        return tuple(v)

    return Conv(read, list, schema={"type": "array", "items": {"type": ["number", "null"]}})


def flags() -> Conv:
    def read(v: Any, where: str) -> tuple:
        if not isinstance(v, list) or not all(isinstance(x, bool) for x in v):
            raise fail(where, "a list of true / false", v)
        return tuple(v)

    return Conv(read, list, schema={"type": "array", "items": {"type": "boolean"}})


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
    required = [k for k, (_, req) in cls._FIELDS.items() if req and not (named_by_key and k == "name")]
    out: dict[str, Any] = {"type": "object"}
    if doc:
        out["description"] = doc
    out["properties"] = {k: schema_of(conv, defs) for k, (conv, _) in cls._FIELDS.items()}
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
    """The JSON Schema (draft 2020-12) of layout ``cls``, generated from its ``_FIELDS`` (and theirs, under
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
