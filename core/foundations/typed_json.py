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

T = TypeVar("T", bound="Typed")


# ---------------------------------------------------------------------------- field converters
@dataclass(frozen=True)
class Conv:
    """How one JSON value is checked and read (``read(value, where)``) and written back (``write``)."""

    read: Callable[[Any, str], Any]
    write: Callable[[Any], Any]
    nullable: bool = False


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


def kind(kind: type | tuple[type, ...], what: str) -> Conv:
    def read(v: Any, where: str) -> Any:
        if not isinstance(v, kind) or (kind is not bool and isinstance(v, bool)):
            raise fail(where, what, v)
        return v

    return Conv(read, lambda v: v)


NUM = Conv(number, lambda v: v)
INT = Conv(integer, lambda v: v)
STR = kind(str, "a string")
BOOL = kind(bool, "true or false")
DICT = kind(dict, "a JSON object")
LIST = kind(list, "a list")
ANY = Conv(lambda v, where: v, lambda v: v)


def null(conv: Conv) -> Conv:
    """``conv`` or JSON null (None)."""
    return Conv(lambda v, where: None if v is None else conv.read(v, where),
                 lambda v: None if v is None else conv.write(v), nullable=True)


def numbers() -> Conv:
    """A list of numbers, read as a tuple."""
    def read(v: Any, where: str) -> tuple:
        if not isinstance(v, list):
            raise fail(where, "a list of numbers", v)
        for i, x in enumerate(v):
            number(x, f"{where}[{i}]")
        return tuple(v)

    return Conv(read, list)


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

    return Conv(read, lambda v: {k: conv.write(x) for k, x in v.items()})


def objects(cls: type[Typed], key_name: bool = False) -> Conv:
    """One typed object (``cls.from_dict``)."""
    if key_name:
        return Conv(lambda v, where, name=None: cls.from_dict(v, where, name), lambda v: v.to_dict())
    return Conv(lambda v, where: cls.from_dict(v, where), lambda v: v.to_dict())


def sequence(conv: Conv) -> Conv:
    def read(v: Any, where: str) -> tuple:
        if not isinstance(v, list):
            raise fail(where, "a list", v)
        return tuple(conv.read(x, f"{where}[{i}]") for i, x in enumerate(v))

    return Conv(read, lambda v: [conv.write(x) for x in v])


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

    return Conv(read, list)


def flags() -> Conv:
    def read(v: Any, where: str) -> tuple:
        if not isinstance(v, list) or not all(isinstance(x, bool) for x in v):
            raise fail(where, "a list of true / false", v)
        return tuple(v)

    return Conv(read, list)
