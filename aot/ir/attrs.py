"""Typed operator attributes.

Every operator's attributes are a frozen dataclass deriving from
:class:`Attrs`, with a default for every field.  The text format hands us
raw values (``int``, ``float``, ``bool``, ``str``, ``None``, nested
lists); :meth:`Attrs.from_raw` converts them to the declared field types
and validates them, and :meth:`Attrs.to_raw` gives them back for printing.

Supported field types: ``int``, ``float``, ``bool``, ``str``,
:class:`~aot.ir.dtype.DType`, ``enum.Enum`` subclasses with string values,
``tuple[int, ...]``, ``tuple[float, ...]``, ``tuple[str, ...]``,
``tuple[tuple[int, ...], ...]`` and ``X | None`` of any of these.
A ``tuple[int, ...]`` field also accepts a single int (``axis=1``).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import operator
import reprlib
import types as pytypes
import typing
from dataclasses import dataclass, fields
from typing import Any, Callable, ClassVar

from .dtype import DType

RawValue = Any  # int | float | bool | str | None | list[RawValue]


class AttrError(Exception):
    """An attribute is unknown or has a value of the wrong kind."""


@dataclass(frozen=True, slots=True)
class Attrs:
    """Base of all attribute classes; an op without attributes uses it.

    Equality, hash and repr are the ones ``@dataclass`` would generate
    (over the fields' ``compare``/``hash``/``repr`` flags, the same
    results), written once here over each class's fields: a subclass
    declared with :func:`attrs_class` does not have them generated and
    compiled again (0.2 ms of the 0.7 ms a dataclass costs to create --
    the operator catalogue has 77 attribute classes)."""

    #: Name printed in diagnostics (``Conv2DAttrs``); set by subclasses.
    type_key: ClassVar[str] = "Attrs"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            get = _field_getters(self.__class__)[0]
            return bool(get(self) == get(other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(_field_getters(self.__class__)[1](self))

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        names = _field_getters(self.__class__)[2]
        return self.__class__.__qualname__ + \
            "(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")"

    @classmethod
    def from_raw(cls, raw: dict[str, RawValue]) -> Attrs:
        hints = field_hints(cls)
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in raw.items():
            if key not in known:
                allowed = ", ".join(sorted(known)) or "none"
                raise AttrError(f"unknown attribute `{key}` (allowed: {allowed})")
            try:
                values[key] = convert(value, hints[key])
            except AttrError as exc:
                raise AttrError(f"attribute `{key}`: {exc}") from None
        try:
            return cls(**values)
        except (TypeError, ValueError) as exc:
            raise AttrError(str(exc)) from None

    def to_raw(self, include_defaults: bool = False) -> dict[str, RawValue]:
        out: dict[str, RawValue] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if not include_defaults and f.default is not dataclasses.MISSING \
                    and value == f.default:
                continue
            out[f.name] = to_raw(value)
        return out


NO_ATTRS = Attrs()

_A = typing.TypeVar("_A", bound=Attrs)


def _tuple_getter(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda obj: (one(obj),)
    return operator.attrgetter(*names)


@functools.cache
def _field_getters(cls: type) -> tuple[Callable[[Any], tuple], Callable[[Any], tuple],
                                       tuple[str, ...]]:
    """The fields ``@dataclass`` would compare, hash and print, as
    ``(compared values, hashed values, printed names)``."""
    fs = fields(cls)
    return (_tuple_getter(tuple(f.name for f in fs if f.compare)),
            _tuple_getter(tuple(f.name for f in fs
                                if (f.compare if f.hash is None else f.hash))),
            tuple(f.name for f in fs if f.repr))


@typing.dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def attrs_class(cls: type[_A]) -> type[_A]:
    """``@dataclass(frozen=True, slots=True)`` for an :class:`Attrs`
    subclass, with :class:`Attrs`'s equality, hash and repr (the same as
    generated ones, see there).  A class that defines any of them itself,
    or inherits generated ones, gets the plain dataclass."""
    if all(getattr(cls, name) is getattr(Attrs, name) for name in ("__eq__", "__hash__",
                                                                    "__repr__")):
        return dataclass(frozen=True, slots=True, eq=False, repr=False)(cls)
    return dataclass(frozen=True, slots=True)(cls)


@functools.cache
def field_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def convert(value: RawValue, hint: Any) -> Any:
    """Convert a raw text-format value to the Python type ``hint``."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, pytypes.UnionType):
        if value is None and type(None) in args:
            return None
        last: AttrError | None = None
        for alt in args:
            if alt is type(None):
                continue
            try:
                return convert(value, alt)
            except AttrError as exc:
                last = exc
        raise last or AttrError(f"bad value {value!r}")
    if origin is tuple:
        elem = args[0]
        if isinstance(value, (int, float, str)) and not isinstance(value, bool) \
                and elem in (int, float, str):
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise AttrError(f"expected a list, got {value!r}")
        return tuple(convert(v, elem) for v in value)
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise AttrError(f"expected a bool, got {value!r}")
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise AttrError(f"expected an integer, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise AttrError(f"expected a number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise AttrError(f"expected a string, got {value!r}")
        return value
    if hint is DType:
        if isinstance(value, DType):
            return value
        parsed = DType.parse(value) if isinstance(value, str) else None
        if parsed is None:
            raise AttrError(f"expected a dtype name, got {value!r}")
        return parsed
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        if isinstance(value, hint):
            return value
        try:
            return hint(value)
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in hint)
            raise AttrError(f"expected one of {allowed}, got {value!r}") from None
    raise AssertionError(f"unsupported attribute field type {hint!r}")


def to_raw(value: Any) -> RawValue:
    if isinstance(value, tuple):
        return [to_raw(v) for v in value]
    if isinstance(value, DType):
        return value.value
    if isinstance(value, enum.Enum):
        return value.value
    return value


# ----------------------------------------------------- function attributes

@dataclass(frozen=True, slots=True)
class FuncAttrs:
    """Free-form attributes of a function (``Primitive=1``,
    ``Compiler="foo"``), kept as sorted (key, raw value) pairs so they are
    hashable and print deterministically."""

    items: tuple[tuple[str, Any], ...] = ()

    @staticmethod
    def of(mapping: dict[str, RawValue] | None = None) -> FuncAttrs:
        if not mapping:
            return EMPTY_FUNC_ATTRS
        return FuncAttrs(tuple(sorted((k, _freeze(v)) for k, v in mapping.items())))

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self.items:
            if k == key:
                return v
        return default


    def __bool__(self) -> bool:
        return bool(self.items)


def _freeze(value: RawValue) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


EMPTY_FUNC_ATTRS = FuncAttrs()

#: The attribute of an entry function that names its outputs (a list of
#: strings, one per tensor of the flattened result, left to right): the
#: importers set it from the graph's output names; Relay text can write it
#: (``def @main(%x: ..., output_names=["probs"])``).
OUTPUT_NAMES_ATTR = "output_names"


def output_names(attrs: FuncAttrs, count: int) -> list[str]:
    """The names ``attrs`` gives ``count`` outputs, or ``""`` each when it
    gives none or they do not match the outputs one to one."""
    names = attrs.get(OUTPUT_NAMES_ATTR)
    if isinstance(names, tuple) and len(names) == count and all(isinstance(n, str) for n in names):
        return list(names)
    return [""] * count


# ------------------------------------------------- attributes of other calls

def _thaw(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


@attrs_class
class RawCallAttrs(Attrs):
    """Attributes written on a call whose callee is not an operator
    (``%f(%x, name="g")``): kept verbatim as sorted (key, value) pairs so
    that they print back and compare by value.  Nothing interprets them."""

    type_key: ClassVar[str] = "RawCallAttrs"
    items: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> RawCallAttrs:
        return cls(tuple(sorted((k, _freeze(v)) for k, v in raw.items())))

    def to_raw(self, include_defaults: bool = False) -> dict[str, Any]:
        return {k: _thaw(v) for k, v in self.items}
