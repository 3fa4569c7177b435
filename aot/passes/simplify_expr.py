"""SimplifyExpr: algebraic identities and chains of data-movement operators.

Design note
-----------
After Relay's ``SimplifyExpr`` (``src/relay/transforms/simplify_expr.cc``),
restricted to rewrites that give **exactly** the same values (bit for bit,
NaN and signed zeros included) and the same type.  One bottom-up
:class:`~aot.ir.visitor.ExprMutator` walk; after a call's arguments are
simplified, the rules of its operator (a table, :data:`RULES`) are tried in
order, each a small function from the call to a replacement or ``None``;
a replacement that is again a call is offered to the rules of its own
operator, so chains collapse in one walk.  Every replacement has the type
of the call it replaces (it carries that ``checked_type``, so the rules
at the parents read correct types), and the module is re-typed at the end.

The rules (``x`` any expression; ``T(e)`` its type):

* **Arithmetic identities**, only when ``T(call) == T(x)`` (the constant
  does not broadcast ``x`` to a bigger shape) and the constant operand --
  a constant, ``zeros``/``ones``, or ``zeros_like``/``ones_like`` of a
  pure expression -- has every element equal to the identity:

  ==================  ===========  =========================================
  rule                integers     floats (IEEE 754, round to nearest)
  ==================  ===========  =========================================
  ``x * 1, 1 * x``    yes          yes: exact for NaN, +-0, +-inf
  ``x / 1``           yes          yes: exact for every x
  ``x - 0``           yes          only ``+0``: ``x - (+0) = x`` for every x
  ``x + 0, 0 + x``    yes          only ``-0``: ``x + (-0) = x``;
                                   ``(-0) + (+0) = +0`` so ``x + (+0)`` is
                                   *not* ``x`` (nor ``x - (-0)``)
  ==================  ===========  =========================================

  Booleans are left alone.  ``zeros`` is ``+0``, so for floats only
  ``x - zeros(...)`` simplifies.
* **Shape chains**: ``reshape``, ``squeeze`` and ``expand_dims`` only
  re-index (row-major order is kept), so two of them in a row are one
  ``reshape`` to the final shape, and one whose result type equals its
  argument's is the identity -- covering reshape of reshape, reshape to
  the same shape and squeeze/expand_dims pairs.  Both need static shapes
  (with ``?`` dimensions two shapes that print alike may differ at run
  time).
* **Transpose**: ``transpose(transpose(x, a), b)`` is ``transpose(x,
  c)`` with ``c[j] = a[b[j]]``; a transpose by the identity permutation
  is ``x``.
* **Casts**: ``cast(x, T(x).dtype)`` is ``x``; ``cast_like(x, y)`` of a
  pure ``y`` is ``cast(x, T(y).dtype)``; ``cast(cast(x, m), d)`` is
  ``cast(x, d)`` when ``m`` represents every value of ``T(x).dtype``
  exactly (:func:`holds_exactly`: int8 -> int32 -> float32, float16 ->
  float32 -> int8, never through a narrowing step such as float32 ->
  int32 -> float32 or int64 -> bool -> int32) *and* the last step
  converts as the direct cast would (:func:`cast_chain_exact`): a
  conversion depends on the value, the target type and whether the
  source is a float, since float -> int truncates and *saturates* while
  int -> int *wraps*; so int8 -> float16 -> uint8 (saturating -1 to 0)
  is not int8 -> uint8 (wrapping -1 to 255), while int8 -> float16 ->
  int32 is int8 -> int32 (no value of int8 overflows int32).
* ``concatenate((x,))`` is ``x``.

Rules that drop an operand (the constant of an identity) drop only pure
ones (no effects lost); every operator is pure, so dropping the call
itself is safe.  Written as functions over :class:`Call` nodes; the
arithmetic and chain rules read like patterns (``multiply(x, 1)``,
``reshape(reshape(x))``) and would be shorter in the pattern language of
:mod:`aot.ir.pattern`, whose ``rewrite`` was not available when this was
written.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..ir.attrs import Attrs
from ..ir.dtype import DType
from ..ir.expr import Call, Constant, Expr, Op, Tuple, op
from ..ir.module import IRModule
from ..ir.ops.transform import ReshapeAttrs, TransposeAttrs
from ..ir.ops.transform_init import CastAttrs
from ..ir.types import TensorType, Type
from ..ir.visitor import ExprMutator, Visit
from .manager import register_pass
from .to_graph_normal_form import _pure

__all__ = ["simplify_expr", "holds_exactly", "cast_chain_exact", "RULES"]

Rule = Callable[[Call], "Expr | None"]


# ------------------------------------------------------------------ helpers

def _tensor(e: Expr) -> TensorType | None:
    t = e.checked_type
    return t if isinstance(t, TensorType) else None


def _static(t: TensorType | None) -> bool:
    return t is not None and all(isinstance(d, int) for d in t.shape)


def _make(name: str, args: tuple[Expr, ...], attrs: Attrs, like: Call, t: Type | None) -> Call:
    """A call of operator ``name`` standing for ``like`` (its span) with
    type ``t``."""
    return Call(op(name), args, attrs, span=like.span, checked_type=t)


def _op_name(e: Expr) -> str | None:
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else None


# ------------------------------------------------------ arithmetic identities

#: (value, sign of a float zero: True for -0, False for +0, None for any)
_Identity = tuple[int, "bool | None"]


def _constant_is(data: np.ndarray, value: int, negative_zero: bool | None) -> bool:
    if data.size == 0 or data.dtype.kind not in "iuf":
        return False
    if not np.all(data == value):
        return False
    if data.dtype.kind == "f" and value == 0 and negative_zero is not None:
        signs = np.signbit(data)
        return bool(np.all(signs)) if negative_zero else not bool(np.any(signs))
    return True


def _is_identity(e: Expr, dtype: DType, value: int, negative_zero: bool | None) -> bool:
    """``e`` is a pure tensor of ``dtype`` whose every element is ``value``
    (with the given sign if a float zero)."""
    t = _tensor(e)
    if t is None or t.dtype != dtype:
        return False
    if isinstance(e, Constant):
        return _constant_is(e.data, value, negative_zero)
    name = _op_name(e)
    fills = {"zeros": 0, "zeros_like": 0, "ones": 1, "ones_like": 1}
    if name not in fills or fills[name] != value:
        return False
    if dtype.is_float and value == 0 and negative_zero:
        return False                      # zeros are +0
    return _pure(e)


def _float_zero_sign(op_name: str) -> bool | None:
    """The sign a float zero must have to be the identity of ``op_name``
    (x + (-0) = x, x - (+0) = x)."""
    return {"add": True, "subtract": False}.get(op_name)


def _identity_rule(operand: int, value: int) -> Rule:
    """``op(x, c)`` (operand=1: c is the second argument) or ``op(c, x)``
    (operand=0) -> ``x`` when ``c`` is the identity ``value``."""

    def rule(call: Call) -> Expr | None:
        t = _tensor(call)
        x = call.args[1 - operand]
        if t is None or t.dtype.is_bool or _tensor(x) != t:
            return None
        assert isinstance(call.op, Op)
        sign = _float_zero_sign(call.op.name) if t.dtype.is_float and value == 0 else None
        if _is_identity(call.args[operand], t.dtype, value, sign):
            return x
        return None
    return rule


# ------------------------------------------------------------ shape chains

SHAPE_OPS = ("reshape", "squeeze", "expand_dims")


def _shape_chain(call: Call) -> Expr | None:
    """reshape/squeeze/expand_dims of x with x's type -> x; of another of
    them -> one reshape of its argument."""
    t = _tensor(call)
    if not _static(t):
        return None
    (arg,) = call.args
    if _tensor(arg) == t:
        return arg
    if _op_name(arg) in SHAPE_OPS:
        assert isinstance(arg, Call) and t is not None
        inner = arg.args[0]
        if _tensor(inner) == t:
            return inner
        attrs = ReshapeAttrs(newshape=tuple(int(d) for d in t.shape),
                             allowzero=0 in t.shape)
        return _make("reshape", (inner,), attrs, call, t)
    return None


# --------------------------------------------------------------- transpose

def _perm(attrs: Attrs, ndim: int) -> tuple[int, ...]:
    assert isinstance(attrs, TransposeAttrs)
    if attrs.axes is None:
        return tuple(reversed(range(ndim)))
    return tuple(a % ndim for a in attrs.axes)


def _transpose(call: Call) -> Expr | None:
    (arg,) = call.args
    at = _tensor(arg)
    if at is None:
        return None
    ndim = len(at.shape)
    outer = _perm(call.attrs, ndim)
    if outer == tuple(range(ndim)):
        return arg
    if _op_name(arg) != "transpose":
        return None
    assert isinstance(arg, Call)
    inner = _perm(arg.attrs, ndim)
    composed = tuple(inner[b] for b in outer)
    x = arg.args[0]
    if composed == tuple(range(ndim)):
        return x
    return _make("transpose", (x,), TransposeAttrs(axes=composed), call, call.checked_type)


# -------------------------------------------------------------------- casts

_MANTISSA_DIGITS = {DType.FLOAT16: 11, DType.FLOAT32: 24, DType.FLOAT64: 53}


def holds_exactly(src: DType, mid: DType) -> bool:
    """Every value of ``src`` is a value of ``mid`` (so casting through
    ``mid`` loses nothing)."""
    if src == mid or src.is_bool:
        return True
    if mid.is_bool:
        return False
    if src.is_float:
        return mid.is_float and mid.bits >= src.bits
    # src is an integer
    digits = src.bits - 1 if src.is_signed else src.bits
    if mid.is_float:
        return digits <= _MANTISSA_DIGITS[mid]
    if src.is_signed and not mid.is_signed:
        return False
    mid_digits = mid.bits - 1 if mid.is_signed else mid.bits
    return digits <= mid_digits


def cast_chain_exact(src: DType, mid: DType, dst: DType) -> bool:
    """``cast(cast(x, mid), dst) == cast(x, dst)`` for every ``x`` of
    ``src``: ``mid`` keeps every value, and the last step converts those
    values as the direct cast would -- which fails only for an integer
    ``dst`` reached from a float on one path and from an integer on the
    other (float -> int saturates, int -> int wraps), unless every value
    of ``src`` fits ``dst`` so that neither happens."""
    if not holds_exactly(src, mid):
        return False
    if dst.is_int and src.is_float != mid.is_float:
        return holds_exactly(src, dst)
    return True


def _cast(call: Call) -> Expr | None:
    (x,) = call.args
    attrs = call.attrs
    assert isinstance(attrs, CastAttrs)
    xt = _tensor(x)
    if xt is None:
        return None
    if xt.dtype == attrs.dtype:
        return x
    if _op_name(x) == "cast":
        assert isinstance(x, Call)
        src = _tensor(x.args[0])
        if src is not None and cast_chain_exact(src.dtype, xt.dtype, attrs.dtype):
            return _make("cast", (x.args[0],), attrs, call, call.checked_type)
    return None


def _cast_like(call: Call) -> Expr | None:
    x, like = call.args
    lt = _tensor(like)
    if lt is None or not _pure(like):
        return None
    return _make("cast", (x,), CastAttrs(dtype=lt.dtype), call, call.checked_type)


# -------------------------------------------------------------- concatenate

def _concatenate(call: Call) -> Expr | None:
    (arg,) = call.args
    if isinstance(arg, Tuple) and len(arg.fields) == 1 and _tensor(arg.fields[0]) == _tensor(call):
        return arg.fields[0]
    return None


# ------------------------------------------------------------------- table

RULES: dict[str, tuple[Rule, ...]] = {
    "add": (_identity_rule(1, 0), _identity_rule(0, 0)),
    "subtract": (_identity_rule(1, 0),),
    "multiply": (_identity_rule(1, 1), _identity_rule(0, 1)),
    "divide": (_identity_rule(1, 1),),
    "reshape": (_shape_chain,),
    "squeeze": (_shape_chain,),
    "expand_dims": (_shape_chain,),
    "transpose": (_transpose,),
    "cast": (_cast,),
    "cast_like": (_cast_like,),
    "concatenate": (_concatenate,),
}


def _apply_rules(e: Expr) -> Expr:
    """``e`` rewritten until no rule of its operator applies (each
    rewrite removes an operator or a step of a chain, so this ends)."""
    while True:
        name = _op_name(e)
        if name not in RULES:
            return e
        assert isinstance(e, Call)
        for rule in RULES[name]:
            new = rule(e)
            if new is not None:
                e = new
                break
        else:
            return e


class _Simplifier(ExprMutator):
    def __init__(self) -> None:
        super().__init__()
        self.changed = False

    def visit_call(self, node: Call) -> Visit:
        new = yield from super().visit_call(node)
        out = _apply_rules(new)
        self.changed |= out is not node
        return out


def simplify_expr(mod: IRModule) -> IRModule:
    """SimplifyExpr: exact algebraic identities, shape, transpose and cast
    chains.

    A new, typed module with the rewrites of the module note applied (the
    module itself when nothing applies)."""
    from .type_infer import infer_types
    assert mod.is_typed, "simplify_expr needs a typed module (run aot.infer_types)"
    out = mod.copy()
    changed = False
    for gv, func in mod.functions.items():
        s = _Simplifier()
        out.add(gv, s.visit(func))
        changed |= s.changed
    return infer_types(out) if changed else mod


register_pass("SimplifyExpr", opt_level=1)(simplify_expr)
