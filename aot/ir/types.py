"""The type language.

Types are values: frozen, slotted dataclasses compared by value.  Two
exceptions carry an identity inside their value: a :class:`TypeVar` is
``(name, uid)`` so that the ``A`` of ``@id`` is not the ``A`` of
``@compose``, and an :class:`IncompleteType` (a hole that type inference
fills) is its ``uid``.  Alpha-equivalence of polymorphic function types is
the business of :mod:`aot.ir.structural`, not of ``==``.

``str(t)`` prints the Relay text syntax of a type; the text printer uses it.
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field
from typing import Callable, NoReturn, Union

from .dtype import DType

_uids = itertools.count(1)


def fresh_uid() -> int:
    return next(_uids)


class AnyDim:
    """A dimension unknown at compile time (``?`` in the text format)."""

    _instance: AnyDim | None = None

    def __new__(cls) -> AnyDim:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ANY"

    def __str__(self) -> str:
        return "?"

    def __int__(self) -> NoReturn:
        # int(dim) is how static-shape code reads a dimension; an unknown
        # one fails there as it always did (TypeError), now with a message.
        raise TypeError("a dimension unknown at compile time (?) has no integer value")

    def __reduce__(self):
        return (AnyDim, ())


ANY = AnyDim()
Dim = Union[int, AnyDim]


class Type:
    """Base class of all types."""

    __slots__ = ()

    def __str__(self) -> str:  # overridden
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class TensorType(Type):
    shape: tuple[Dim, ...]
    dtype: DType

    def __post_init__(self) -> None:
        assert isinstance(self.shape, tuple), self.shape
        assert isinstance(self.dtype, DType), self.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            assert isinstance(d, int), "size of a dynamic shape"
            n *= d
        return n

    def __str__(self) -> str:
        if not self.shape:
            return str(self.dtype)
        dims = ", ".join(str(d) for d in self.shape)
        if len(self.shape) == 1:
            dims += ""
        return f"Tensor[({dims}), {self.dtype}]"


@dataclass(frozen=True, slots=True)
class TupleType(Type):
    fields: tuple[Type, ...]

    def __str__(self) -> str:
        if len(self.fields) == 1:
            return f"({self.fields[0]},)"
        return "(" + ", ".join(str(f) for f in self.fields) + ")"


class TypeKind(enum.Enum):
    TYPE = "Type"
    SHAPE_VAR = "ShapeVar"
    CONSTRAINT = "Constraint"
    ADT = "AdtHandle"


@dataclass(frozen=True, slots=True)
class TypeVar(Type):
    """A type parameter.  ``TypeVar("A")`` makes a new, distinct variable."""

    name: str
    kind: TypeKind = TypeKind.TYPE
    uid: int = field(default_factory=fresh_uid)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class GlobalTypeVar(Type):
    """The name of an algebraic data type (``List``), compared by name."""

    name: str
    kind: TypeKind = TypeKind.ADT

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class TypeCall(Type):
    """An ADT applied to type arguments: ``List[Tensor[(), int32]]``."""

    func: GlobalTypeVar
    args: tuple[Type, ...]

    def __str__(self) -> str:
        if not self.args:
            return str(self.func)
        return f"{self.func}[" + ", ".join(str(a) for a in self.args) + "]"


@dataclass(frozen=True, slots=True)
class TypeRelation(Type):
    """A constraint ``name(args...)`` inside a function type: the operator
    ``name``'s relation must hold between its argument types and its result
    type (the last of ``args``).  ``attrs`` are the call's operator attributes
    (None: the operator's defaults)."""

    name: str
    args: tuple[Type, ...]
    attrs: object = None

    def __str__(self) -> str:
        return f"{self.name}(" + ", ".join(str(a) for a in self.args) + ")"


@dataclass(frozen=True, slots=True)
class FuncType(Type):
    arg_types: tuple[Type, ...]
    ret_type: Type
    type_params: tuple[TypeVar, ...] = ()
    type_constraints: tuple[TypeRelation, ...] = ()

    def __str__(self) -> str:
        tps = ""
        if self.type_params:
            tps = "[" + ", ".join(str(t) for t in self.type_params) + "]"
        args = ", ".join(str(a) for a in self.arg_types)
        where = ""
        if self.type_constraints:
            where = " where " + ", ".join(str(c) for c in self.type_constraints)
        return f"fn {tps}({args}) -> {self.ret_type}{where}"


@dataclass(frozen=True, slots=True)
class RefType(Type):
    value: Type

    def __str__(self) -> str:
        return f"Ref[{self.value}]"


@dataclass(frozen=True, slots=True)
class IncompleteType(Type):
    """A hole to be filled by type inference (``_`` in the text format)."""

    kind: TypeKind = TypeKind.TYPE
    uid: int = field(default_factory=fresh_uid)

    def __str__(self) -> str:
        return "_"


# ----------------------------------------------------------------- helpers

UNIT = TupleType(())


def scalar_type(dtype: DType | str) -> TensorType:
    if isinstance(dtype, str):
        parsed = DType.parse(dtype)
        assert parsed is not None, dtype
        dtype = parsed
    return TensorType((), dtype)


BOOL_SCALAR = TensorType((), DType.BOOL)


def type_children(t: Type) -> tuple[Type, ...]:
    if isinstance(t, TupleType):
        return t.fields
    if isinstance(t, TypeCall):
        return (t.func, *t.args)
    if isinstance(t, FuncType):
        return (*t.arg_types, t.ret_type, *t.type_constraints)
    if isinstance(t, RefType):
        return (t.value,)
    if isinstance(t, TypeRelation):
        return t.args
    return ()


def map_type(t: Type, fn: Callable[[Type], Type | None]) -> Type:
    """Rebuild ``t`` bottom-up.  ``fn`` is asked first for each node: a
    non-None answer replaces the node (and its subtree) outright."""
    replaced = fn(t)
    if replaced is not None:
        return replaced
    if isinstance(t, TupleType):
        return TupleType(tuple(map_type(f, fn) for f in t.fields))
    if isinstance(t, TypeCall):
        return TypeCall(t.func, tuple(map_type(a, fn) for a in t.args))
    if isinstance(t, FuncType):
        return FuncType(tuple(map_type(a, fn) for a in t.arg_types),
                        map_type(t.ret_type, fn), t.type_params,
                        tuple(map_type(c, fn) for c in t.type_constraints))  # type: ignore[misc]
    if isinstance(t, RefType):
        return RefType(map_type(t.value, fn))
    if isinstance(t, TypeRelation):
        return TypeRelation(t.name, tuple(map_type(a, fn) for a in t.args), t.attrs)
    return t


def substitute(t: Type, mapping: dict[Type, Type]) -> Type:
    """Replace type variables / holes by ``mapping`` (not under binders that
    rebind them)."""
    if not mapping:
        return t

    def fn(node: Type) -> Type | None:
        if isinstance(node, FuncType) and node.type_params:
            inner = {k: v for k, v in mapping.items() if k not in node.type_params}
            if len(inner) != len(mapping):
                return FuncType(tuple(substitute(a, inner) for a in node.arg_types),
                                substitute(node.ret_type, inner), node.type_params,
                                node.type_constraints)
            return None
        return mapping.get(node)

    return map_type(t, fn)


def free_type_vars(t: Type) -> list[TypeVar]:
    """Type variables of ``t`` not bound by an enclosing FuncType, in order
    of first occurrence."""
    out: list[TypeVar] = []

    def walk(node: Type, bound: frozenset[TypeVar]) -> None:
        if isinstance(node, TypeVar):
            if node not in bound and node not in out:
                out.append(node)
            return
        if isinstance(node, FuncType):
            bound = bound | frozenset(node.type_params)
        for child in type_children(node):
            walk(child, bound)

    walk(t, frozenset())
    return out


def holes(t: Type) -> list[IncompleteType]:
    out: list[IncompleteType] = []

    def walk(node: Type) -> None:
        if isinstance(node, IncompleteType):
            if node not in out:
                out.append(node)
            return
        for child in type_children(node):
            walk(child)

    walk(t)
    return out
