"""Kernel IR: one fused group of tensor operators as explicit loop nests.

Design note
-----------
A fused group becomes ONE C function.  Before it is printed it is data: the
classes below, frozen and compared by value (two structurally equal nodes
are equal and hash alike; hashes are cached, so a node is hashed in O(1)
whatever its depth).  Lowering builds it, :mod:`aot.emit.kernel.simplify` cleans
it, :mod:`aot.emit.c.printer` prints it -- the printer makes no decisions
beyond the spelling of each node in C.

Scalar expressions (:class:`Expr`) carry a :class:`~aot.ir.dtype.DType`;
statements (:class:`Stmt`) are loops, stores, scalar temporaries and
conditionals; a :class:`Kernel` is a name, its buffer parameters and a body.

Semantics (exactly the interpreter's, ``aot/ir/ops/elemwise.py`` and
``aot/ir/ops/transform_init.py``; :func:`~aot.emit.kernel.evaluate.evaluate`
and :func:`~aot.emit.kernel.evaluate.run_kernel` are the executable definition,
on NumPy scalars):

* Binary operands have the same dtype (shift amounts excepted: any integer
  dtype).  Integer ``+ - * <<`` and unary ``-`` wrap (two's complement).
  ``no_wrap=True`` on a signed ``+ - *`` marks index arithmetic: the
  lowering promises that no partial result of the expression (under any
  re-association of its sums and products, which :mod:`simplify` may
  perform) leaves the dtype's range -- true when every term is bounded by
  buffer sizes.  It prints as plain C.
* ``/`` and ``%`` on integers truncate toward zero; ``x / 0 == x % 0 == 0``;
  ``INT_MIN / -1 == INT_MIN`` and ``INT_MIN % -1 == 0``.  ``floordiv`` and
  ``floormod`` round toward negative infinity (NumPy ``//`` and ``%``).  On
  floats ``/`` is IEEE division, ``%`` is C ``fmod`` and ``floordiv`` /
  ``floormod`` are NumPy's ``floor_divide`` / ``mod``.
* ``min`` / ``max`` propagate NaN (``np.minimum`` / ``np.maximum``).
* Shifts: the amount must lie in ``[0, bits)`` (checked when constant; a
  lowering precondition otherwise).  ``>>`` on a signed value is arithmetic.
* Comparisons and ``&&`` ``||`` ``!`` give ``bool`` (logical operators take
  ``bool`` operands only).  ``bool`` values are 0 or 1.
* :class:`Cast`: float -> integer truncates toward zero, saturates at the
  type's limits, NaN -> 0; integer -> integer wraps; anything -> bool is
  ``x != 0``; to float rounds to nearest.
* The sign and payload of a NaN produced by arithmetic are unspecified
  (IEEE 754 leaves them open and compilers differ: gcc rewrites
  ``x - NAN`` as ``x + -NAN``), so only ``copysign``-like calls can tell.
* ``float16`` is stored as IEEE binary16 and computed in float32: every
  ``float16`` arithmetic result (``+ - * /``, ``floordiv``, ``floormod``,
  calls) is rounded back to half precision, as NumPy does; ``bfloat16`` and
  the float8 formats likewise (as ml_dtypes does).  ``int4``/``uint4``
  wrap modulo 2^4 and are stored packed two per byte (see
  :mod:`aot.ir.dtype`).
* :class:`Call` names a C function (a ``math.h`` function such as ``expf``
  or a runtime helper); :func:`math_call` picks the right name per dtype.

Scoping: a :class:`For` variable is visible in its body; a :class:`Decl`
is visible in the rest of its :class:`Block` (a Block nested directly in a
Block is a C compound statement, i.e. a new scope).  Buffers of scope
``LOCAL`` are small stack arrays declared at the top of the kernel; ``CONST``
buffers may also be referenced without being parameters (a global
``static const`` table).  :func:`~aot.emit.kernel.verify.verify_kernel`
checks all of this.

Traversals live in :mod:`aot.emit.kernel.walk`, the verifier in
:mod:`aot.emit.kernel.verify`, value ranges in :mod:`aot.emit.kernel.ranges`
and the reference evaluator in :mod:`aot.emit.kernel.evaluate`.
"""

from __future__ import annotations

import enum
import math
import operator
import re
from dataclasses import dataclass, field, fields
from typing import Callable, Iterable, Mapping, Sequence, TypeVar, dataclass_transform

import ml_dtypes
import numpy as np

from ...ir.dtype import DType
from .fma import exact_fma

__all__ = [
    "BinaryOperator", "UnaryOperator", "BufferScope", "ForKind",
    "Expr", "Const", "Var", "Load", "BinOp", "UnaryOp", "Cast", "Select", "Call",
    "Stmt", "For", "Store", "Decl", "Assign", "Block", "IfThenElse", "Comment",
    "Buffer", "Kernel", "KernelIRError",
    "const", "as_expr", "var", "index_var", "load", "store", "binop", "add", "sub", "mul",
    "div", "mod", "floordiv", "floormod", "minimum", "maximum", "bit_and", "bit_or",
    "bit_xor", "shl", "shr", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
    "neg", "logical_not", "bit_not", "cast", "select", "call", "math_call", "MATH_FUNCTIONS",
    "block", "for_range", "if_then_else", "flat_index", "strided_index", "row_major_strides",
    "dtype_range", "C_KEYWORDS", "is_c_identifier",
]


class KernelIRError(AssertionError):
    """Malformed kernel IR: a bug in whoever built it (never a user error)."""


def check(ok: bool, message: str) -> None:
    if not ok:
        raise KernelIRError(message)


# ===================================================================== enums

class BinaryOperator(enum.Enum):
    __hash__ = object.__hash__    # identity, as DType's (aot.ir.dtype)

    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    MOD = "%"
    FLOORDIV = "floordiv"
    FLOORMOD = "floormod"
    MIN = "min"
    MAX = "max"
    BIT_AND = "&"
    BIT_OR = "|"
    BIT_XOR = "^"
    SHL = "<<"
    SHR = ">>"
    EQ = "=="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    AND = "&&"
    OR = "||"

    @property
    def is_comparison(self) -> bool:
        return self in _COMPARISONS

    @property
    def is_logical(self) -> bool:
        return self in (BinaryOperator.AND, BinaryOperator.OR)

    @property
    def is_shift(self) -> bool:
        return self in (BinaryOperator.SHL, BinaryOperator.SHR)

    @property
    def is_bitwise(self) -> bool:
        return self in (BinaryOperator.BIT_AND, BinaryOperator.BIT_OR, BinaryOperator.BIT_XOR)


_COMPARISONS = frozenset({BinaryOperator.EQ, BinaryOperator.NE, BinaryOperator.LT,
                          BinaryOperator.LE, BinaryOperator.GT, BinaryOperator.GE})
_RING = frozenset({BinaryOperator.ADD, BinaryOperator.SUB, BinaryOperator.MUL})
#: operators valid on any two operands of one non-bool dtype
_ANY_NUMBER = _RING | _COMPARISONS | frozenset({
    BinaryOperator.DIV, BinaryOperator.MOD, BinaryOperator.FLOORDIV, BinaryOperator.FLOORMOD,
    BinaryOperator.MIN, BinaryOperator.MAX})


class UnaryOperator(enum.Enum):
    __hash__ = object.__hash__    # identity, as DType's (aot.ir.dtype)

    NEG = "-"
    NOT = "!"
    BIT_NOT = "~"


class BufferScope(enum.Enum):
    __hash__ = object.__hash__    # identity, as DType's (aot.ir.dtype)

    INPUT = "input"      # a model input: read only
    OUTPUT = "output"    # a model output
    ARENA = "arena"      # an intermediate in the planned arena
    CONST = "const"      # a constant table (flash): read only
    LOCAL = "local"      # a small fixed-size stack array inside the kernel


class ForKind(enum.Enum):
    __hash__ = object.__hash__    # identity, as DType's (aot.ir.dtype)

    SERIAL = "serial"
    UNROLL = "unroll"        # hint: the loop is worth unrolling
    VECTORIZE = "vectorize"  # hint: iterations are independent, contiguous


INDEX_DTYPES = (DType.INT32, DType.INT64)

# ============================================================ identifiers

C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while _Bool _Complex _Imaginary bool true false
""".split())

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def is_c_identifier(name: str) -> bool:
    """A plain C identifier that is not a keyword and not reserved to the
    implementation (``__x``, ``_X``)."""
    return (bool(_IDENT.match(name)) and name not in C_KEYWORDS
            and not name.startswith("__") and not re.match(r"_[A-Z]", name))


# ============================================================ node plumbing

_N = TypeVar("_N")


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def _node(cls: type[_N]) -> type[_N]:
    """Frozen, slotted dataclass whose hash is computed once, at
    construction, from the children's cached hashes."""
    cls = dataclass(frozen=True, slots=True)(cls)
    cls.__hash__ = _cached_hash  # type: ignore[assignment,method-assign]
    names = tuple(f.name for f in fields(cls) if f.compare)  # type: ignore[arg-type]
    _KEYS[cls] = ((cls.__name__,), operator.attrgetter(*names) if len(names) > 1 else
                  (lambda node: (getattr(node, names[0]),)) if names else (lambda node: ()))
    return cls


#: for each node class, ``(its name,)`` and a getter of the fields its hash
#: and equality use (as a tuple)
_KEYS: dict[type, tuple[tuple[str], Callable[[object], tuple]]] = {}


def _cached_hash(self: object) -> int:
    return self._hash  # type: ignore[attr-defined]


def _seal(node: object) -> None:
    name, values = _KEYS[type(node)]
    object.__setattr__(node, "_hash", hash(name + values(node)))


# ======================================================= scalar expressions

class Expr:
    """A scalar expression with a dtype."""
    __slots__ = ()

    @property
    def dtype(self) -> DType:
        raise NotImplementedError


def _range(dtype: DType) -> tuple[int, int]:
    known = _RANGES.get(dtype)
    if known is not None:
        return known
    if dtype is DType.BOOL:
        return 0, 1
    info = ml_dtypes.iinfo(dtype.np)
    _RANGES[dtype] = int(info.min), int(info.max)
    return _RANGES[dtype]


#: integer ranges met so far (``ml_dtypes.iinfo`` is slow; every integer
#: constant checks its range)
_RANGES: dict[DType, tuple[int, int]] = {}


def dtype_range(t: DType) -> tuple[int, int]:
    """The smallest and largest value of an integer (or bool) dtype."""
    return _range(t)


@dataclass(frozen=True, slots=True, eq=False, init=False)
class Const(Expr):
    """A literal.  Integers must be in the dtype's range; floats are
    rounded to the dtype on construction; ``bool`` is 0 or 1.  Equality
    and hashing compare bit patterns, so ``-0.0 != 0.0`` and NaN equals
    itself."""
    value: int | float
    dtype: DType  # type: ignore[misc]
    _hash: int = field(repr=False, compare=False)
    _bits: int = field(repr=False, compare=False)

    def __init__(self, value: int | float | bool | np.generic, dtype: DType) -> None:
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "value", _normalize(value, dtype))
        if dtype.is_float:
            raw = np.array(self.value, dtype=dtype.np).view(f"u{dtype.itemsize}")
            bits = int(raw)
        else:
            bits = int(self.value)
        object.__setattr__(self, "_bits", bits)
        object.__setattr__(self, "_hash", hash(("Const", dtype, bits)))

    @property
    def bits(self) -> int:
        """The value's bit pattern in the dtype (integers: the value)."""
        return self._bits

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Const) and other.dtype is self.dtype
                and other._bits == self._bits)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"Const({self.value!r}, {self.dtype!r})"


def _normalize(value: int | float | bool | np.generic, dtype: DType) -> int | float:
    if dtype.is_float:
        check(isinstance(value, (int, float, np.integer, np.floating, np.bool_)),
               f"float constant must be a number, got {value!r}")
        with np.errstate(over="ignore"):
            return float(np.array(value, dtype=np.float64).astype(dtype.np))
    check(isinstance(value, (int, bool, np.integer, np.bool_)),
           f"{dtype} constant must be an integer, got {value!r}")
    lo, hi = _range(dtype)
    v = int(value)
    check(lo <= v <= hi, f"constant {v} out of range of {dtype}")
    return v


@_node
class Var(Expr):
    """A loop variable or scalar temporary."""
    name: str
    dtype: DType  # type: ignore[misc]
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check(is_c_identifier(self.name), f"bad variable name {self.name!r}")
        _seal(self)


@_node
class Buffer:
    """A flat array.  ``shape`` is static; the flat (row-major) index of a
    Load/Store is computed by the lowering (:func:`flat_index`).
    ``restrict``: the caller guarantees no other parameter aliases it.
    ``alignment``: bytes the caller guarantees for the base address (None:
    the dtype's natural alignment); recorded for the planner, not printed."""
    name: str
    dtype: DType
    shape: tuple[int, ...]
    scope: BufferScope
    restrict: bool = True
    alignment: int | None = None
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check(is_c_identifier(self.name), f"bad buffer name {self.name!r}")
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        check(all(d >= 0 for d in self.shape), f"buffer {self.name}: negative dim {self.shape}")
        if self.scope is BufferScope.LOCAL:
            check(self.size >= 1, f"local buffer {self.name} must have at least one element")
        if self.alignment is not None:
            check(self.alignment > 0 and self.alignment & (self.alignment - 1) == 0,
                   f"buffer {self.name}: alignment {self.alignment} is not a power of two")
        _seal(self)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.dtype.nbytes(self.size)

    @property
    def read_only(self) -> bool:
        return self.scope in (BufferScope.INPUT, BufferScope.CONST)


#: element types of buffers a 4-lane :class:`Load` reads
PACKABLE = (DType.INT8, DType.UINT8)


@_node
class Load(Expr):
    """``buffer[index]``; with ``lanes=4`` (8-bit integer buffers only) the
    four elements ``buffer[index .. index+3]`` as one ``uint32`` word,
    element ``index + k`` in bits ``8k .. 8k+7`` (printed as a ``memcpy``
    load: one ``ldr`` on a Cortex-M, no alignment or aliasing assumed)."""
    buffer: Buffer
    index: Expr
    lanes: int = 1
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check(self.index.dtype in INDEX_DTYPES,
               f"index into {self.buffer.name} must be int32/int64, got {self.index.dtype}")
        check(self.lanes == 1 or (self.lanes == 4 and self.buffer.dtype in PACKABLE),
               f"a {self.lanes}-lane load of a {self.buffer.dtype} buffer")
        _seal(self)

    @property
    def dtype(self) -> DType:
        return DType.UINT32 if self.lanes == 4 else self.buffer.dtype


@_node
class BinOp(Expr):
    op: BinaryOperator
    a: Expr
    b: Expr
    no_wrap: bool = False
    _hash: int = field(init=False, repr=False, compare=False)
    _dtype: DType = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_binop(self.op, self.a, self.b, self.no_wrap)
        boolean = self.op.is_comparison or self.op.is_logical
        object.__setattr__(self, "_dtype", DType.BOOL if boolean else self.a.dtype)
        _seal(self)

    @property
    def dtype(self) -> DType:
        return self._dtype


def _check_binop(op: BinaryOperator, a: Expr, b: Expr, no_wrap: bool) -> None:
    ta, tb = a.dtype, b.dtype
    if ta is tb and ta is not DType.BOOL and op in _ANY_NUMBER and (
            not no_wrap or op in _RING and ta.is_int and ta.is_signed):
        return  # the common cases, accepted without building a message
    what = f"{op.value} on {ta}, {tb}"
    if op.is_shift:
        check(ta.is_int and tb.is_int, f"{what}: shifts take integers")
        if isinstance(b, Const):
            check(0 <= int(b.value) < ta.bits, f"{what}: shift amount {b.value} out of range")
    else:
        check(ta is tb, f"{what}: operands must have the same dtype")
    if op.is_logical:
        check(ta is DType.BOOL, f"{what}: logical operators take bool")
    elif op.is_bitwise:
        check(not ta.is_float, f"{what}: bitwise operators take integers or bool")
    elif op in _RING or op in (BinaryOperator.DIV, BinaryOperator.MOD, BinaryOperator.FLOORDIV,
                               BinaryOperator.FLOORMOD):
        check(ta is not DType.BOOL, f"{what}: arithmetic on bool")
    if no_wrap:
        check(op in _RING and ta.is_int and ta.is_signed,
               f"{what}: no_wrap applies to signed integer + - * only")


@_node
class UnaryOp(Expr):
    op: UnaryOperator
    a: Expr
    _hash: int = field(init=False, repr=False, compare=False)
    _dtype: DType = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        t = self.a.dtype
        object.__setattr__(self, "_dtype", t)
        if self.op is UnaryOperator.NOT:
            check(t is DType.BOOL, f"! on {t}: logical not takes bool")
        elif self.op is UnaryOperator.BIT_NOT:
            check(t.is_int, f"~ on {t}: bitwise not takes integers")
        else:
            check(t is not DType.BOOL, "negation of bool")
        _seal(self)

    @property
    def dtype(self) -> DType:
        return self._dtype


@_node
class Cast(Expr):
    to: DType
    a: Expr
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _seal(self)

    @property
    def dtype(self) -> DType:
        return self.to


@_node
class Select(Expr):
    """``cond ? a : b`` (both arms are pure, either may be evaluated)."""
    cond: Expr
    a: Expr
    b: Expr
    _hash: int = field(init=False, repr=False, compare=False)
    _dtype: DType = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check(self.cond.dtype is DType.BOOL,
              f"select condition must be bool, got {self.cond.dtype}")
        check(self.a.dtype is self.b.dtype,
               f"select arms differ: {self.a.dtype} and {self.b.dtype}")
        object.__setattr__(self, "_dtype", self.a.dtype)
        _seal(self)

    @property
    def dtype(self) -> DType:
        return self._dtype


@_node
class Call(Expr):
    """A call of a pure C function (``math.h`` or a runtime helper)."""
    name: str
    args: tuple[Expr, ...]
    dtype: DType  # type: ignore[misc]
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check(is_c_identifier(self.name), f"bad function name {self.name!r}")
        object.__setattr__(self, "args", tuple(self.args))
        _seal(self)


# ================================================================ statements

class Stmt:
    __slots__ = ()


@_node
class For(Stmt):
    """``for (var = start; var < start + extent; ++var) body``."""
    var: Var
    start: Expr
    extent: Expr
    body: Stmt
    kind: ForKind = ForKind.SERIAL
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        t = self.var.dtype
        check(t in INDEX_DTYPES, f"loop variable {self.var.name} must be int32/int64, got {t}")
        check(self.start.dtype is t and self.extent.dtype is t,
               f"loop {self.var.name}: start/extent must be {t}")
        if isinstance(self.extent, Const):
            check(int(self.extent.value) >= 0, f"loop {self.var.name}: negative extent")
        _seal(self)


@_node
class Store(Stmt):
    buffer: Buffer
    index: Expr
    value: Expr
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check(self.index.dtype in INDEX_DTYPES,
               f"index into {self.buffer.name} must be int32/int64, got {self.index.dtype}")
        check(self.value.dtype is self.buffer.dtype,
               f"store of {self.value.dtype} into {self.buffer.dtype} buffer {self.buffer.name}")
        check(not self.buffer.read_only, f"store into read-only buffer {self.buffer.name}")
        _seal(self)


@_node
class Decl(Stmt):
    """Declare a scalar temporary, optionally initialised."""
    var: Var
    init: Expr | None = None
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.init is not None:
            check(self.init.dtype is self.var.dtype,
                   f"{self.var.name}: {self.var.dtype} initialised with {self.init.dtype}")
        _seal(self)


@_node
class Assign(Stmt):
    var: Var
    value: Expr
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check(self.value.dtype is self.var.dtype,
               f"{self.var.name}: {self.var.dtype} assigned {self.value.dtype}")
        _seal(self)


@_node
class Block(Stmt):
    stmts: tuple[Stmt, ...]
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "stmts", tuple(self.stmts))
        _seal(self)


@_node
class IfThenElse(Stmt):
    cond: Expr
    then: Stmt
    else_: Stmt | None = None
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check(self.cond.dtype is DType.BOOL, f"if condition must be bool, got {self.cond.dtype}")
        _seal(self)


@_node
class Comment(Stmt):
    text: str
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _seal(self)


@_node
class Kernel:
    """One C function ``static void name(params...)``."""
    name: str
    params: tuple[Buffer, ...]
    body: Stmt
    comment: str = ""
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check(is_c_identifier(self.name), f"bad kernel name {self.name!r}")
        object.__setattr__(self, "params", tuple(self.params))
        _seal(self)


# ======================================================= helper constructors

Operand = Expr | int | float | bool


def const(value: int | float | bool, dtype: DType = DType.INT32) -> Const:
    return Const(value, dtype)


def as_expr(x: Operand, like: Expr | DType) -> Expr:
    """``x`` itself, or a Python number as a constant of ``like``'s dtype."""
    if isinstance(x, Expr):
        return x
    return Const(x, like if isinstance(like, DType) else like.dtype)


def var(name: str, dtype: DType = DType.INT32) -> Var:
    return Var(name, dtype)


def index_var(name: str, dtype: DType = DType.INT32) -> Var:
    check(dtype in INDEX_DTYPES, f"index variable {name} must be int32/int64")
    return Var(name, dtype)


def load(buffer: Buffer, index: Operand, lanes: int = 1) -> Load:
    return Load(buffer, as_expr(index, DType.INT32), lanes)


def store(buffer: Buffer, index: Operand, value: Operand) -> Store:
    return Store(buffer, as_expr(index, DType.INT32), as_expr(value, buffer.dtype))


def binop(op: BinaryOperator, a: Operand, b: Operand, no_wrap: bool = False) -> BinOp:
    """Build ``a op b``; a Python number takes the other operand's dtype."""
    if not isinstance(a, Expr):
        check(isinstance(b, Expr), "binop needs at least one expression operand")
        a = as_expr(a, b)  # type: ignore[arg-type]
    b = as_expr(b, a)
    return BinOp(op, a, b, no_wrap)


def _binary(op: BinaryOperator) -> Callable[..., BinOp]:
    def build(a: Operand, b: Operand) -> BinOp:
        return binop(op, a, b)
    build.__name__ = op.name.lower()
    build.__doc__ = f"``a {op.value} b``"
    return build


def add(a: Operand, b: Operand, no_wrap: bool = False) -> BinOp:
    return binop(BinaryOperator.ADD, a, b, no_wrap)


def sub(a: Operand, b: Operand, no_wrap: bool = False) -> BinOp:
    return binop(BinaryOperator.SUB, a, b, no_wrap)


def mul(a: Operand, b: Operand, no_wrap: bool = False) -> BinOp:
    return binop(BinaryOperator.MUL, a, b, no_wrap)


div = _binary(BinaryOperator.DIV)
mod = _binary(BinaryOperator.MOD)
floordiv = _binary(BinaryOperator.FLOORDIV)
floormod = _binary(BinaryOperator.FLOORMOD)
minimum = _binary(BinaryOperator.MIN)
maximum = _binary(BinaryOperator.MAX)
bit_and = _binary(BinaryOperator.BIT_AND)
bit_or = _binary(BinaryOperator.BIT_OR)
bit_xor = _binary(BinaryOperator.BIT_XOR)
eq = _binary(BinaryOperator.EQ)
ne = _binary(BinaryOperator.NE)
lt = _binary(BinaryOperator.LT)
le = _binary(BinaryOperator.LE)
gt = _binary(BinaryOperator.GT)
ge = _binary(BinaryOperator.GE)
logical_and = _binary(BinaryOperator.AND)
logical_or = _binary(BinaryOperator.OR)


def shl(a: Expr, amount: Operand) -> BinOp:
    return BinOp(BinaryOperator.SHL, a, as_expr(amount, a))


def shr(a: Expr, amount: Operand) -> BinOp:
    return BinOp(BinaryOperator.SHR, a, as_expr(amount, a))


def neg(a: Expr) -> UnaryOp:
    return UnaryOp(UnaryOperator.NEG, a)


def logical_not(a: Expr) -> UnaryOp:
    return UnaryOp(UnaryOperator.NOT, a)


def bit_not(a: Expr) -> UnaryOp:
    return UnaryOp(UnaryOperator.BIT_NOT, a)


def cast(dtype: DType, a: Expr) -> Expr:
    """``a`` converted to ``dtype`` (``a`` itself when already of it)."""
    return a if a.dtype is dtype else Cast(dtype, a)


def select(cond: Expr, a: Operand, b: Operand) -> Select:
    if not isinstance(a, Expr):
        a = as_expr(a, b)  # type: ignore[arg-type]
    return Select(cond, a, as_expr(b, a))


def call(name: str, args: Sequence[Expr], dtype: DType) -> Call:
    return Call(name, tuple(args), dtype)


# name -> (arity, NumPy reference); the C name is name + "f" for float32
# and float16 (computed in float32), name for float64.
MATH_FUNCTIONS: Mapping[str, tuple[int, Callable[..., np.ndarray]]] = {
    "exp": (1, np.exp), "expm1": (1, np.expm1), "exp2": (1, np.exp2),
    "log": (1, np.log), "log2": (1, np.log2), "log10": (1, np.log10), "log1p": (1, np.log1p),
    "sqrt": (1, np.sqrt), "cbrt": (1, np.cbrt),
    "sin": (1, np.sin), "cos": (1, np.cos), "tan": (1, np.tan),
    "asin": (1, np.arcsin), "acos": (1, np.arccos), "atan": (1, np.arctan),
    "sinh": (1, np.sinh), "cosh": (1, np.cosh), "tanh": (1, np.tanh),
    "asinh": (1, np.arcsinh), "acosh": (1, np.arccosh), "atanh": (1, np.arctanh),
    "erf": (1, np.vectorize(math.erf, otypes=[np.float64])),
    "floor": (1, np.floor), "ceil": (1, np.ceil), "trunc": (1, np.trunc),
    "nearbyint": (1, np.rint),   # round half to even in the default rounding mode
    "fabs": (1, np.fabs),
    "pow": (2, np.power), "fmod": (2, np.fmod), "atan2": (2, np.arctan2),
    "fma": (3, exact_fma),       # a * b + c rounded once (aot.emit.kernel.fma)
    "copysign": (2, np.copysign), "hypot": (2, np.hypot),
}


def math_base(name: str) -> str | None:
    """``expf`` / ``exp`` -> ``exp``; None when not a known math function."""
    if name in MATH_FUNCTIONS:
        return name
    if name.endswith("f") and name[:-1] in MATH_FUNCTIONS:
        return name[:-1]
    return None


def math_call(fn: str, *args: Expr) -> Call:
    """The ``math.h`` function ``fn`` (``"exp"``, ``"sqrt"``, ...) for the
    arguments' float dtype: ``expf`` for float32 and float16, ``exp`` for
    float64."""
    check(fn in MATH_FUNCTIONS, f"unknown math function {fn!r}")
    arity, _ = MATH_FUNCTIONS[fn]
    check(len(args) == arity, f"{fn} takes {arity} arguments")
    dtype = args[0].dtype
    check(dtype.is_float and all(a.dtype is dtype for a in args),
           f"{fn} takes float arguments of one dtype")
    return Call(fn if dtype is DType.FLOAT64 else fn + "f", tuple(args), dtype)


def block(*stmts: Stmt | Iterable[Stmt]) -> Block:
    """A Block of the statements given, nested iterables flattened."""
    out: list[Stmt] = []
    for s in stmts:
        if isinstance(s, Stmt):
            out.append(s)
        else:
            out.extend(s)
    return Block(tuple(out))


def for_range(v: Var, extent: Operand, body: Stmt | Sequence[Stmt], start: Operand = 0,
              kind: ForKind = ForKind.SERIAL) -> For:
    body_stmt = body if isinstance(body, Stmt) else block(*body)
    return For(v, as_expr(start, v), as_expr(extent, v), body_stmt, kind)


def if_then_else(cond: Expr, then: Stmt | Sequence[Stmt],
                 else_: Stmt | Sequence[Stmt] | None = None) -> IfThenElse:
    t = then if isinstance(then, Stmt) else block(*then)
    e = else_ if (else_ is None or isinstance(else_, Stmt)) else block(*else_)
    return IfThenElse(cond, t, e)


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * max(int(shape[i + 1]), 1)
    return tuple(strides)


def strided_index(indices: Sequence[Operand], strides: Sequence[int], offset: int = 0,
                  dtype: DType = DType.INT32) -> Expr:
    """``offset + sum(indices[i] * strides[i])`` as no-wrap index arithmetic.
    Terms with stride 0 (broadcast) are dropped, stride 1 is not multiplied,
    constant indices are folded into the offset."""
    check(len(indices) == len(strides), "one stride per index")
    check(dtype in INDEX_DTYPES, "index dtype must be int32/int64")
    total = int(offset)
    terms: list[Expr] = []
    for idx, stride in zip(indices, strides):
        stride = int(stride)
        if stride == 0:
            continue
        if isinstance(idx, Const) or not isinstance(idx, Expr):
            total += int(idx.value if isinstance(idx, Const) else idx) * stride
            continue
        check(idx.dtype is dtype, f"index of dtype {idx.dtype}, expected {dtype}")
        terms.append(idx if stride == 1 else BinOp(BinaryOperator.MUL, idx, Const(stride, dtype),
                                                   no_wrap=True))
    result: Expr | None = None
    for t in terms:
        result = t if result is None else BinOp(BinaryOperator.ADD, result, t, no_wrap=True)
    if result is None:
        return Const(total, dtype)
    if total > 0:
        return BinOp(BinaryOperator.ADD, result, Const(total, dtype), no_wrap=True)
    if total < 0:
        return BinOp(BinaryOperator.SUB, result, Const(-total, dtype), no_wrap=True)
    return result


def flat_index(indices: Sequence[Operand], shape: Sequence[int],
               dtype: DType = DType.INT32) -> Expr:
    """Row-major flat index of an N-d index into a tensor of ``shape``."""
    check(len(indices) == len(shape), f"{len(indices)} indices for shape {tuple(shape)}")
    return strided_index(indices, row_major_strides(shape), 0, dtype)
