"""Tensor values and the lowering column of the operator records.

Design note
-----------
Lowering follows TVM's tensor expressions, reduced to what fusion needs.
A :class:`TensorValue` is a tensor *as a function*: its static shape, its
dtype and ``read(index) -> scalar expression`` (kernel IR), where ``index``
is one int32 expression per dimension.  A value read from a buffer loads
``buf[flat(index)]``; the value of ``add(a, b)`` reads ``a`` and ``b`` at
the broadcast index and adds the two scalars.  Composing ``read`` functions
*is* fusion: a chain of elementwise, broadcast and injective operators
becomes one scalar expression per output element, and no intermediate
tensor exists anywhere.

Every operator's record has a lowering here (the "lowering" column of
:mod:`aot.ir.registry`; it lives in ``aot/emit/lower/ops/<family>.py`` so
that the IR does not depend on the backend).  There are two kinds:

* **index lowerings** (elementwise, broadcast, injective operators):
  ``fn(ctx, args, attrs, out_type) -> TensorValue`` (or a tuple of them for
  a tuple-valued result such as ``split``).  They build reads; they emit no
  statements.
* **anchor lowerings** (reductions, convolutions, pooling, dense, softmax,
  sort, ...: operators that own a loop nest):
  ``fn(ctx, args, attrs, out_type, sinks) -> Stmt``.  The anchor writes its
  loop nest and, for each output element, calls ``sinks[k](index, value)``
  (``k`` the output number, 0 for a tensor result), which returns the
  statement that consumes the element: the fused epilogue (bias, activation
  ...) applied to it and the store into the kernel's output.  An anchor
  reads its inputs through ``args[i].read`` -- the fused prologue (padding,
  casts, zero-point subtraction) inlined -- and never assumes they are
  buffers.

Arguments of tuple type (``concatenate``'s tensors) arrive as tuples of
TensorValues.  Anchors that need scratch space (sorting, a row of
exponentials) ask the :class:`LowerContext` for a buffer: it lives in the
arena for the duration of the kernel and the memory planner places it.
Index expressions are int32 with ``no_wrap`` arithmetic: shapes are
checked to fit at lowering time.
"""

from __future__ import annotations

import math

import itertools
from dataclasses import dataclass, field
from typing import Callable, Sequence, Union

import numpy as np

from ...ir.attrs import Attrs
from ...ir.dtype import DType
from ...ir.types import TensorType, TupleType, Type
from ...registry import Registry
from ..kernel import ir as K

__all__ = [
    "Index", "TensorValue", "ArgValue", "Sink", "LowerContext", "Lowering",
    "IndexLowering", "AnchorLowering", "from_buffer", "constant_value", "is_splat", "scalar_value",
    "index_lowering", "anchor_lowering", "lookup_lowering", "all_lowerings",
    "materialize", "loop_nest", "broadcast_index", "out_tensor", "out_tensors",
    "LoweringError", "LOWERINGS",
]

Index = tuple[K.Expr, ...]
INDEX = DType.INT32
#: Largest element count an int32 flat index can address.
MAX_ELEMENTS = 2**31 - 1


class LoweringError(Exception):
    """The program is well typed but this backend cannot compile it (a
    shape too large for 32-bit indexing, an unsupported attribute value).
    The driver turns it into a diagnostic at the call's span."""


@dataclass(frozen=True, slots=True, eq=False)
class TensorValue:
    shape: tuple[int, ...]
    dtype: DType
    read: Callable[[Index], K.Expr]
    #: the buffer this value is read from row-major, when it is one
    buffer: K.Buffer | None = None
    #: the value's elements when it is a compile-time constant (a literal
    #: splat or a ``CONST`` table), so lowerings can precompute from them
    constant: np.ndarray | None = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __getitem__(self, index: Sequence[K.Operand]) -> K.Expr:
        idx = tuple(K.as_expr(i, INDEX) for i in index)
        assert len(idx) == len(self.shape), f"{len(idx)} indices for shape {self.shape}"
        return self.read(idx)


ArgValue = Union[TensorValue, tuple["ArgValue", ...]]
Sink = Callable[[Index, K.Expr], K.Stmt]


def from_buffer(buf: K.Buffer) -> TensorValue:
    shape = buf.shape

    def read(idx: Index) -> K.Expr:
        return K.load(buf, K.flat_index(idx, shape))
    return TensorValue(shape, buf.dtype, read, buf)


def scalar_value(value: K.Expr, shape: Sequence[int] = ()) -> TensorValue:
    """A tensor of ``shape`` whose every element is ``value``."""
    return TensorValue(tuple(shape), value.dtype, lambda idx: value)


def is_splat(flat: np.ndarray) -> bool:
    """All elements of a flat array bit-identical (NaN payloads and -0.0
    included): such a constant is read as one literal."""
    if flat.size == 0:
        return False
    bits = flat.view(np.dtype(f"u{flat.dtype.itemsize}")) if flat.dtype.kind != "b" else flat
    return bool(np.all(bits == bits[0]))


def constant_value(array: np.ndarray, dtype: DType) -> TensorValue:
    """A constant tensor whose elements are all equal (a scalar constant or
    a splat): its reads are a literal."""
    flat = np.ascontiguousarray(array).reshape(-1)
    assert is_splat(flat), "constant_value of a constant that is not a splat"
    value = K.Const(flat[0].item(), dtype)
    return TensorValue(tuple(array.shape), dtype, lambda idx: value, constant=np.asarray(array))


def broadcast_index(idx: Index, out_shape: Sequence[int], in_shape: Sequence[int]) -> Index:
    """The index into an operand of ``in_shape`` broadcast (NumPy rules) to
    ``out_shape`` at output index ``idx``."""
    offset = len(out_shape) - len(in_shape)
    assert offset >= 0
    result = []
    for i, d in enumerate(in_shape):
        result.append(K.const(0, INDEX) if d == 1 and out_shape[offset + i] != 1
                      else idx[offset + i])
    return tuple(result)


def out_tensor(t: Type) -> TensorType:
    assert isinstance(t, TensorType), f"expected a tensor type, got {t}"
    return t


def out_tensors(t: Type) -> list[TensorType]:
    """The tensor leaves of a (nested) tuple type, in order."""
    if isinstance(t, TupleType):
        return [leaf for f in t.fields for leaf in out_tensors(f)]
    return [out_tensor(t)]


_RESERVED_BASES = frozenset({"p", "c", "out"})


@dataclass(slots=True)
class LowerContext:
    """Per-kernel services for lowerings: fresh names and scratch buffers."""

    prefix: str = "k"
    _counter: itertools.count = field(default_factory=itertools.count)
    scratch_buffers: list[K.Buffer] = field(default_factory=list)
    #: constant tables a lowering computed at compile time: (buffer, flat data)
    tables: list[tuple[K.Buffer, np.ndarray]] = field(default_factory=list)
    #: the data of the program's constants the kernel reads, by buffer name
    #: (flat), for lowerings that fold them at compile time
    constant_data: dict[str, np.ndarray] = field(default_factory=dict)

    def fresh(self, base: str) -> str:
        """A name no other in the kernel has.  The group lowering names the
        kernel's parameters ``p<i>``, ``c<i>`` and ``out``/``out<i>``, so
        those bases get a suffix."""
        if base in _RESERVED_BASES:
            base += "v"
        return f"{base}{next(self._counter)}"

    def index_var(self, base: str = "i") -> K.Var:
        return K.index_var(self.fresh(base), INDEX)

    def index_vars(self, n: int, base: str = "i") -> list[K.Var]:
        return [self.index_var(base) for _ in range(n)]

    def scalar(self, base: str, dtype: DType) -> K.Var:
        return K.var(self.fresh(base), dtype)

    def constant_table(self, data: np.ndarray, dtype: DType) -> TensorValue:
        """A compile-time table (per-channel multipliers, say) the kernel
        reads from flash: it becomes one of the model's ``static const``
        arrays, passed to the kernel like a constant of the program."""
        arr = np.asarray(data, dtype=dtype.np)
        buf = K.Buffer(self.fresh("tab"), dtype, tuple(arr.shape), K.BufferScope.CONST)
        self.tables.append((buf, np.ascontiguousarray(arr).reshape(-1)))
        value = from_buffer(buf)
        return TensorValue(value.shape, value.dtype, value.read, buf, constant=arr)

    def scratch(self, dtype: DType, shape: Sequence[int], base: str = "scratch") -> K.Buffer:
        """A buffer in the arena, live only while this kernel runs."""
        buf = K.Buffer(self.fresh(base), dtype, tuple(shape), K.BufferScope.ARENA)
        self.scratch_buffers.append(buf)
        return buf


IndexLowering = Callable[[LowerContext, Sequence[ArgValue], Attrs, Type],
                         Union[TensorValue, tuple[TensorValue, ...]]]
AnchorLowering = Callable[[LowerContext, Sequence[ArgValue], Attrs, Type, Sequence[Sink]],
                          K.Stmt]


@dataclass(frozen=True, slots=True)
class Lowering:
    op: str
    fn: Callable
    anchor: bool


def _load_families() -> None:
    from . import ops  # noqa: F401  (registers every family)


LOWERINGS: Registry[str, Lowering] = Registry("lowering", _load_families)


def _register(names: Sequence[str], fn: Callable, anchor: bool) -> None:
    for name in names:
        LOWERINGS.register(name, Lowering(name, fn, anchor))


def index_lowering(*names: str) -> Callable[[IndexLowering], IndexLowering]:
    def deco(fn: IndexLowering) -> IndexLowering:
        _register(names, fn, anchor=False)
        return fn
    return deco


def anchor_lowering(*names: str) -> Callable[[AnchorLowering], AnchorLowering]:
    def deco(fn: AnchorLowering) -> AnchorLowering:
        _register(names, fn, anchor=True)
        return fn
    return deco


def lookup_lowering(name: str) -> Lowering | None:
    return LOWERINGS.get(name)


def all_lowerings() -> dict[str, Lowering]:
    """Every lowering by operator name, in name order."""
    return dict(LOWERINGS.items())


# ------------------------------------------------------------------ loops

def loop_nest(ctx: LowerContext, shape: Sequence[int],
              body: Callable[[Index], K.Stmt | Sequence[K.Stmt]], base: str = "i") -> K.Stmt:
    """``for i0 < shape[0]: ... for in < shape[n-1]: body((i0..in))``, loop
    bounds constant, the last dimension innermost (contiguous)."""
    vs = ctx.index_vars(len(shape), base)
    stmt = body(tuple(vs))
    inner = stmt if isinstance(stmt, K.Stmt) else K.block(*stmt)
    for v, extent in zip(reversed(vs), reversed(tuple(shape))):
        inner = K.for_range(v, int(extent), inner)
    return inner


def materialize(ctx: LowerContext, value: TensorValue, sink: Sink) -> K.Stmt:
    """A loop nest over ``value``'s shape handing every element to ``sink``."""
    return loop_nest(ctx, value.shape, lambda idx: sink(idx, value.read(idx)))


def check_index_range(shape: Sequence[int], what: str) -> None:
    n = 1
    for d in shape:
        n *= int(d)
    if n > MAX_ELEMENTS:
        raise LoweringError(f"{what} has {n} elements, more than 32-bit indexing allows")
