"""Runtime values of the reference interpreter.

* A tensor is a ``numpy.ndarray`` of exactly its dtype (a 0-d array for a
  scalar, never a NumPy scalar).
* A tuple is a Python ``tuple`` (the unit value is ``()``).
* An ADT value is a :class:`ConstructorValue`: ``.constructor`` (with
  ``.name``) and ``.fields`` (a tuple).  It prints as Relay text,
  ``Cons(1, Cons(2, Nil))``, and ``==`` compares structurally.
* Function values are opaque: a :class:`Closure` (a Function plus the
  values of its free variables), a :class:`ConstructorFunction` (a
  constructor with fields used as a value, ``@foldr(Cons, ...)``) or an
  :class:`OpFunction` (an operator used as a value).
* A reference is a :class:`RefValue`, a mutable cell compared by identity.

ADT values can be arbitrarily deep (a 10,000-element list is a chain of
10,000 cells), so printing and comparing are iterative walks with explicit
stacks, never Python recursion.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import numpy as np

from .ir.dtype import DType
from .ir.types import TensorType, TupleType, Type
from .ir.dtype import np_kind

if TYPE_CHECKING:
    from .ir.adt import Constructor
    from .ir.expr import Function, Op, Var

#: Any runtime value (ndarray, tuple, ConstructorValue, Closure, ...).
Value = Any


class ConstructorValue:
    """An ADT cell: a constructor applied to its field values."""

    __slots__ = ("constructor", "fields")

    def __init__(self, constructor: Constructor, fields: tuple[Value, ...] = ()) -> None:
        assert isinstance(fields, tuple), fields
        self.constructor = constructor
        self.fields = fields

    @property
    def name(self) -> str:
        return self.constructor.name

    @property
    def tag(self) -> int:
        return self.constructor.tag

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConstructorValue):
            return NotImplemented
        return values_equal(self, other)

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None  # type: ignore[assignment]  # fields may hold arrays

    def __str__(self) -> str:
        return format_value(self)

    def __repr__(self) -> str:
        return format_value(self)


class Closure:
    """A function value: the Function node and the values of its free
    variables (``env``).  A closure bound by a recursive ``let`` finds
    itself in its own ``env``."""

    __slots__ = ("func", "env", "name")

    def __init__(self, func: Function, env: dict[Var, Value], name: str | None = None) -> None:
        self.func = func
        self.env = env
        #: the global's name for a global used as a value, else None
        self.name = name

    def __repr__(self) -> str:
        if self.name is not None:
            return f"<closure @{self.name}>"
        params = ", ".join("%" + p.name_hint for p in self.func.params)
        return f"<closure fn ({params})>"

    __str__ = __repr__


class ConstructorFunction:
    """A constructor with fields used as a function value (``Cons`` in
    ``@foldr(Cons, Nil, %xs)``)."""

    __slots__ = ("constructor",)

    def __init__(self, constructor: Constructor) -> None:
        self.constructor = constructor

    def __repr__(self) -> str:
        return f"<constructor {self.constructor.name}>"

    __str__ = __repr__


class OpFunction:
    """An operator used as a function value (called with default attrs)."""

    __slots__ = ("op",)

    def __init__(self, op: Op) -> None:
        self.op = op

    def __repr__(self) -> str:
        return f"<operator {self.op.name}>"

    __str__ = __repr__


class RefValue:
    """A mutable cell (``ref(v)``), compared by identity."""

    __slots__ = ("value",)

    def __init__(self, value: Value) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<ref>"

    __str__ = __repr__


FunctionValue = (Closure, ConstructorFunction, OpFunction)


# ------------------------------------------------------------------ types

def value_type(v: Value) -> Type:
    """The type of a tensor or tuple value (ADT and function values have
    no type of their own at run time: types are erased)."""
    if isinstance(v, np.generic):
        v = np.asarray(v)
    if isinstance(v, np.ndarray):
        return TensorType(tuple(int(d) for d in v.shape), DType.from_numpy(v.dtype))
    if isinstance(v, tuple):
        return TupleType(tuple(value_type(f) for f in v))
    raise TypeError(f"value_type: {describe_value(v)} has no run-time type")


def describe_value(v: Value) -> str:
    """A short description of a value for diagnostics (its type for
    tensors and tuples, its Python type otherwise)."""
    if isinstance(v, np.ndarray):
        try:
            return f"a tensor of type {value_type(v)}"
        except ValueError:
            return f"a NumPy array of unsupported dtype {v.dtype}"
    if isinstance(v, np.generic):
        return f"a NumPy scalar of dtype {v.dtype}"
    if isinstance(v, tuple):
        return f"a tuple of {len(v)} field{'s' if len(v) != 1 else ''}"
    if isinstance(v, ConstructorValue):
        return f"an ADT value {v.constructor.name}"
    if isinstance(v, FunctionValue):
        return f"a function value {v!r}"
    if isinstance(v, RefValue):
        return "a reference"
    if isinstance(v, bool):
        return f"the Python bool {v!r}"
    if isinstance(v, (int, float)):
        return f"the Python {type(v).__name__} {v!r}"
    return f"a Python {type(v).__name__}"


# --------------------------------------------------------------- printing

_SUFFIX = {
    DType.INT8: "i8", DType.INT16: "i16", DType.INT32: "", DType.INT64: "i64",
    DType.UINT8: "u8", DType.UINT16: "u16", DType.UINT32: "u32", DType.UINT64: "u64",
    DType.FLOAT16: "f16", DType.FLOAT32: "f", DType.FLOAT64: "f64",
}


def format_scalar(a: np.ndarray) -> str:
    """A 0-d array as a Relay literal: ``1``, ``1f``, ``2.5f64``, ``3i64``,
    ``True``."""
    dtype = DType.from_numpy(a.dtype)
    item = a.item()
    if dtype is DType.BOOL:
        return "True" if item else "False"
    if dtype.is_float:
        x = float(item)
        if math.isnan(x):
            text = "nan"
        elif math.isinf(x):
            text = "inf" if x > 0 else "-inf"
        elif x != 0 and not 1e-4 <= abs(x) < 1e16:
            text = np.format_float_scientific(a[()], unique=True, trim="-")
        else:
            text = np.format_float_positional(a[()], unique=True, trim="-")
        return text + _SUFFIX.get(dtype, f"({dtype})")
    return str(int(item)) + _SUFFIX.get(dtype, f"({dtype})")


def _format_tensor(a: np.ndarray) -> str:
    if a.ndim == 0:
        try:
            return format_scalar(a)
        except ValueError:
            return repr(a)
    return repr(a)


def format_value(v: Value, limit: int | None = None) -> str:
    """Relay-style text of a value: ``Cons(1f, Nil)``, ``(1, 2f)``.  With
    ``limit``, the text is cut after about ``limit`` characters and ends
    with ``...``."""
    out: list[str] = []
    size = 0
    # The work stack holds values to print and literal strings to emit.
    stack: list[tuple[bool, Any]] = [(False, v)]
    while stack:
        is_text, item = stack.pop()
        if is_text:
            piece = item
        elif isinstance(item, ConstructorValue):
            if not item.fields:
                piece = item.constructor.name
            else:
                piece = item.constructor.name + "("
                stack.append((True, ")"))
                _push_fields(stack, item.fields)
        elif isinstance(item, tuple):
            piece = "("
            stack.append((True, ",)" if len(item) == 1 else ")"))
            _push_fields(stack, item)
        elif isinstance(item, np.ndarray):
            piece = _format_tensor(item)
        elif isinstance(item, np.generic):
            piece = _format_tensor(np.asarray(item))
        else:
            piece = repr(item)
        out.append(piece)
        size += len(piece)
        if limit is not None and size > limit:
            return "".join(out)[:limit] + "..."
    return "".join(out)


def _push_fields(stack: list[tuple[bool, Any]], fields: tuple[Value, ...]) -> None:
    for i in range(len(fields) - 1, -1, -1):
        stack.append((False, fields[i]))
        if i > 0:
            stack.append((True, ", "))


# --------------------------------------------------------------- equality

def values_equal(a: Value, b: Value, rtol: float = 0.0, atol: float = 0.0) -> bool:
    """Structural equality over tensors, tuples and ADT values (nested to
    any depth).  Tensors must agree in shape and dtype; their elements are
    compared exactly (NaN equals NaN) unless a tolerance is given, in which
    case floating-point elements may differ by ``atol + rtol * |b|``.
    Function values and references compare by identity."""
    stack: list[tuple[Value, Value]] = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if isinstance(x, np.generic):
            x = np.asarray(x)
        if isinstance(y, np.generic):
            y = np.asarray(y)
        children = _equal_here(x, y, rtol, atol)
        if children is None:
            return False
        stack.extend(children)
    return True


def _equal_here(x: Value, y: Value, rtol: float,
                atol: float) -> Iterable[tuple[Value, Value]] | None:
    """None if ``x`` and ``y`` differ at the top; else the pairs of their
    children still to compare."""
    if isinstance(x, np.ndarray):
        if not isinstance(y, np.ndarray) or not _arrays_equal(x, y, rtol, atol):
            return None
        return ()
    if isinstance(x, tuple):
        if not isinstance(y, tuple) or len(x) != len(y):
            return None
        return zip(x, y)
    if isinstance(x, ConstructorValue):
        if not isinstance(y, ConstructorValue) or not _same_constructor(x, y) \
                or len(x.fields) != len(y.fields):
            return None
        return zip(x.fields, y.fields)
    if isinstance(x, ConstructorFunction):
        if not isinstance(y, ConstructorFunction) or \
                not _same_ctor(x.constructor, y.constructor):
            return None
        return ()
    if isinstance(x, OpFunction):
        if not isinstance(y, OpFunction) or x.op.name != y.op.name:
            return None
        return ()
    return None  # closures and references: identity only


def _same_constructor(x: ConstructorValue, y: ConstructorValue) -> bool:
    return _same_ctor(x.constructor, y.constructor)


def _same_ctor(c: Constructor, d: Constructor) -> bool:
    return c is d or (c.name == d.name and c.belong_to == d.belong_to and c.tag == d.tag)


def _arrays_equal(x: np.ndarray, y: np.ndarray, rtol: float, atol: float) -> bool:
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    if np_kind(x.dtype) in "fc":
        if rtol == 0 and atol == 0:
            return bool(np.array_equal(x, y, equal_nan=True))
        with np.errstate(all="ignore"):
            return bool(np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True))
    return bool(np.array_equal(x, y))


# ------------------------------------------------------------ list helpers

def make_list(items: Iterable[Value], cons: Constructor, nil: Constructor) -> ConstructorValue:
    """``Cons(items[0], Cons(items[1], ... Nil))`` built without recursion."""
    result = ConstructorValue(nil, ())
    for item in reversed(list(items)):
        result = ConstructorValue(cons, (item, result))
    return result


def list_items(v: ConstructorValue) -> list[Value]:
    """The elements of a ``Cons``/``Nil`` list value, in order."""
    return list(iter_list(v))


def iter_list(v: ConstructorValue) -> Iterator[Value]:
    while isinstance(v, ConstructorValue) and len(v.fields) == 2:
        yield v.fields[0]
        v = v.fields[1]
    assert isinstance(v, ConstructorValue) and not v.fields, f"not a list: {v!r}"


__all__ = ["Value", "ConstructorValue", "Closure", "ConstructorFunction", "OpFunction",
           "RefValue", "FunctionValue", "value_type", "describe_value", "format_value",
           "format_scalar", "values_equal", "make_list", "list_items", "iter_list"]
