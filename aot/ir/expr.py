"""Expression nodes.

Expressions are identities: frozen dataclasses with ``eq=False``, so ``==``
and ``hash`` are by object identity.  A node referenced twice is one shared
node (a graph binding ``%0 = ...`` in the text format), never a copy.
Structural (alpha-) equality lives in :mod:`aot.ir.structural`.

Every node carries ``span`` (where it came from) and ``checked_type``
(``None`` until type inference returns a new, typed node).  Nodes are never
mutated: type inference and passes build new nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..diagnostics import Span
from .attrs import EMPTY_FUNC_ATTRS, NO_ATTRS, Attrs, FuncAttrs
from .dtype import DType
from .types import TensorType, Type, TypeVar

if TYPE_CHECKING:
    from .adt import Clause
    from .registry import OpDef


@dataclass(frozen=True, eq=False, slots=True)
class Expr:
    span: Span | None = field(default=None, kw_only=True, repr=False)
    checked_type: Type | None = field(default=None, kw_only=True, repr=False)

    @property
    def type(self) -> Type:
        """The inferred type; only on nodes returned by type inference."""
        assert self.checked_type is not None, \
            f"{type(self).__name__} has no type: run aot.infer_types first"
        return self.checked_type

    def __str__(self) -> str:
        from .printer import print_expr
        return print_expr(self)

    def brief(self) -> str:
        """How this node appears in another node's ``repr``: a leaf by its
        own ``repr`` (``Var(%x)``, ``Op(add)``), any other node by its kind
        (``Call``).  So a ``repr`` shows one level and never recurses (the
        dataclass default did: a 10,000-deep expression's ``repr`` hit the
        recursion limit); ``str`` prints the whole text."""
        if isinstance(self, _WITH_SUBEXPRESSIONS):
            return type(self).__name__
        return repr(self)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@dataclass(frozen=True, eq=False, slots=True)
class Var(Expr):
    """A local variable.  Its binding site (let, function parameter,
    pattern) and every use are the same object."""

    name_hint: str
    type_annotation: Type | None = None

    def __repr__(self) -> str:
        return f"Var(%{self.name_hint})"


@dataclass(frozen=True, eq=False, slots=True)
class GlobalVar(Expr):
    """A global function name; an IRModule holds one GlobalVar per name."""

    name: str

    def __repr__(self) -> str:
        return f"GlobalVar(@{self.name})"


@dataclass(frozen=True, eq=False, slots=True)
class Constant(Expr):
    """A tensor literal (0-d for scalars).  The array is read-only."""

    data: np.ndarray

    def __post_init__(self) -> None:
        arr = np.asarray(self.data)
        DType.from_numpy(arr.dtype)  # validates the dtype
        if arr.flags.writeable or arr is not self.data:
            arr = np.array(arr, copy=True)
            arr.setflags(write=False)
            object.__setattr__(self, "data", arr)

    @property
    def dtype(self) -> DType:
        return DType.from_numpy(self.data.dtype)

    @property
    def tensor_type(self) -> TensorType:
        return TensorType(tuple(int(d) for d in self.data.shape), self.dtype)

    def __repr__(self) -> str:
        return f"Constant({self.data.dtype}{list(self.data.shape)})"


@dataclass(frozen=True, eq=False, slots=True)
class Tuple(Expr):
    fields: tuple[Expr, ...]

    def __repr__(self) -> str:
        return f"Tuple({_count(len(self.fields), 'field')})"


@dataclass(frozen=True, eq=False, slots=True)
class TupleGetItem(Expr):
    tuple_value: Expr
    index: int

    def __repr__(self) -> str:
        return f"TupleGetItem({self.tuple_value.brief()}, {self.index})"


@dataclass(frozen=True, eq=False, slots=True)
class Op(Expr):
    """A reference to a registered operator (``add``, ``nn.conv2d``)."""

    name: str

    @property
    def op_def(self) -> OpDef:
        from .registry import lookup
        op = lookup(self.name)
        assert op is not None, f"unregistered operator {self.name}"
        return op

    def __repr__(self) -> str:
        return f"Op({self.name})"


_OPS: dict[str, Op] = {}


def op(name: str) -> Op:
    """The canonical :class:`Op` node for ``name`` (no check that it is
    registered: the parser and type inference report unknown operators)."""
    node = _OPS.get(name)
    if node is None:
        node = _OPS[name] = Op(name)
    return node


@dataclass(frozen=True, eq=False, slots=True)
class Call(Expr):
    """A call of an operator, a function value, a global or a constructor.
    ``attrs`` is the operator's typed attributes; ``type_args`` are filled by
    type inference with the instantiation of a polymorphic callee."""

    op: Expr
    args: tuple[Expr, ...]
    attrs: Attrs = NO_ATTRS
    type_args: tuple[Type, ...] = ()

    def __repr__(self) -> str:
        return f"Call({self.op.brief()}, {_count(len(self.args), 'arg')})"


@dataclass(frozen=True, eq=False, slots=True)
class Function(Expr):
    params: tuple[Var, ...]
    body: Expr
    ret_type: Type | None = None
    type_params: tuple[TypeVar, ...] = ()
    attrs: FuncAttrs = EMPTY_FUNC_ATTRS

    def __repr__(self) -> str:
        params = ", ".join(f"%{p.name_hint}" for p in self.params)
        return f"Function({params})"


@dataclass(frozen=True, eq=False, slots=True)
class Let(Expr):
    """``let %var = value; body``.  When ``value`` is a Function it may refer
    to ``var`` (recursive let)."""

    var: Var
    value: Expr
    body: Expr

    def __repr__(self) -> str:
        return f"Let(%{self.var.name_hint}, {self.value.brief()})"


@dataclass(frozen=True, eq=False, slots=True)
class If(Expr):
    cond: Expr
    true_branch: Expr
    false_branch: Expr

    def __repr__(self) -> str:
        return f"If({self.cond.brief()})"


@dataclass(frozen=True, eq=False, slots=True)
class Match(Expr):
    """``match`` (complete=True) or ``match?`` (complete=False)."""

    data: Expr
    clauses: tuple[Clause, ...]
    complete: bool = True

    def __repr__(self) -> str:
        keyword = "Match" if self.complete else "Match?"
        return f"{keyword}({self.data.brief()}, {_count(len(self.clauses), 'clause')})"


@dataclass(frozen=True, eq=False, slots=True)
class RefCreate(Expr):
    value: Expr

    def __repr__(self) -> str:
        return f"RefCreate({self.value.brief()})"


@dataclass(frozen=True, eq=False, slots=True)
class RefRead(Expr):
    ref: Expr

    def __repr__(self) -> str:
        return f"RefRead({self.ref.brief()})"


@dataclass(frozen=True, eq=False, slots=True)
class RefWrite(Expr):
    ref: Expr
    value: Expr

    def __repr__(self) -> str:
        return f"RefWrite({self.ref.brief()}, {self.value.brief()})"


_WITH_SUBEXPRESSIONS = (Tuple, TupleGetItem, Call, Function, Let, If, Match, RefCreate, RefRead,
                        RefWrite)


# ------------------------------------------------------------ constructors

def const(value: object, dtype: DType | str | None = None, *, span: Span | None = None) -> Constant:
    """A constant from a Python or NumPy value.  Python ints default to
    int32, floats to float32, bools to bool (Relay's literal rules)."""
    if dtype is not None:
        dt = dtype if isinstance(dtype, DType) else DType.parse(dtype)
        assert dt is not None, dtype
        arr = np.asarray(value, dtype=dt.np)
    elif isinstance(value, np.ndarray) or isinstance(value, np.generic):
        arr = np.asarray(value)
    elif isinstance(value, bool):
        arr = np.asarray(value, dtype=np.bool_)
    elif isinstance(value, int):
        arr = np.asarray(value, dtype=np.int32)
    elif isinstance(value, float):
        arr = np.asarray(value, dtype=np.float32)
    else:
        arr = np.asarray(value)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        elif arr.dtype == np.int64:
            arr = arr.astype(np.int32)
    return Constant(arr, span=span)
