"""SimplifyExpr: algebraic identities and chains of data-movement operators.

Design note
-----------
After Relay's ``SimplifyExpr`` (``src/relay/transforms/simplify_expr.cc``),
restricted to rewrites that give **exactly** the same values (bit for bit,
NaN and signed zeros included) and the same type.  Like Relay's, each rule
is a dataflow pattern and a callback (:mod:`aot.ir.pattern`), the pattern
saying what the rule looks at (``cast(cast(x))``), the callback checking
the exactness condition and building the replacement, or declining by
returning the node as it is.  They run in one bottom-up walk
(:func:`~aot.ir.pattern.rewrite_bottom_up`, not Relay's round-based
``rewrite``): after a call's arguments are simplified the rules
(:data:`CALLBACKS`, in order) are matched against it, and a replacement is
matched again, so chains collapse in one walk (a merged chain may be the
identity: then it is ``x``).  Every replacement has the type of the call
it replaces (it carries that ``checked_type``, so the rules at the
parents read correct types), and the module is re-typed at the end.
Relay's ``rewrite`` would also work, but it refuses a match whose inner
call has other users (``reshape(%0)`` with ``%0 = reshape(x)`` used
elsewhere stays two reshapes), needs a round per step of a chain, and is
several times slower (4 ms against 1 ms on a 100-node model).

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
itself is safe, and so is merging a chain whose inner call has other
users (it stays for them; the merged call costs what the outer one did).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ..ir.dtype import DType
from ..ir.expr import Call, Constant, Expr, Op, op
from ..ir.module import IRModule
from ..ir.ops.transform import ReshapeAttrs, TransposeAttrs
from ..ir.ops.transform_init import CastAttrs
from ..ir.pattern import (DFPattern, DFPatternCallback, is_constant, is_op, is_tuple,
                          rewrite_bottom_up, wildcard)
from ..ir.types import TensorType
from .manager import register_pass
from .to_graph_normal_form import is_pure
from ..ir.dtype import np_kind

__all__ = ["simplify_expr", "holds_exactly", "cast_chain_exact", "CALLBACKS"]

NodeMap = dict[DFPattern, list[Expr]]


# ------------------------------------------------------------------ helpers

def _tensor(e: Expr) -> TensorType | None:
    t = e.checked_type
    return t if isinstance(t, TensorType) else None


def _static(t: TensorType | None) -> bool:
    return t is not None and all(isinstance(d, int) for d in t.shape)


def _op_name(e: Expr) -> str | None:
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else None


class _Rule(DFPatternCallback):
    """A rule: ``self.pattern`` what it matches, ``self.x`` the operand its
    replacement is made of; :meth:`callback` declines by returning
    ``post``."""

    def __init__(self) -> None:
        super().__init__()
        self.x = wildcard()


# ------------------------------------------------------ arithmetic identities

def _constant_is(data: np.ndarray, value: int, negative_zero: bool | None) -> bool:
    if data.size == 0 or np_kind(data.dtype) not in "iuf":
        return False
    if not np.all(data == value):
        return False
    if np_kind(data.dtype) == "f" and value == 0 and negative_zero is not None:
        signs = np.signbit(data)
        return bool(np.all(signs)) if negative_zero else not bool(np.any(signs))
    return True


_FILLS = {"zeros": 0, "zeros_like": 0, "ones": 1, "ones_like": 1}


def _is_identity(e: Expr, dtype: DType, value: int, negative_zero: bool | None) -> bool:
    """``e`` is a pure tensor of ``dtype`` whose every element is ``value``
    (with the given sign if a float zero)."""
    t = _tensor(e)
    if t is None or t.dtype != dtype:
        return False
    if isinstance(e, Constant):
        return _constant_is(e.data, value, negative_zero)
    name = _op_name(e)
    if name not in _FILLS or _FILLS[name] != value:
        return False
    if dtype.is_float and value == 0 and negative_zero:
        return False                      # zeros are +0
    return is_pure(e)


def _filled(name: str) -> DFPattern:
    """A constant, ``<name>s(...)`` or ``<name>s_like(y)``: what may be the
    identity of an operator (``name`` is "zero" or "one")."""
    return is_constant() | is_op(f"{name}s")() | is_op(f"{name}s_like")(wildcard())


#: operator -> (its identity, the sign a float zero identity must have:
#: x + (-0) = x, x - (+0) = x), and whether the identity may come first
_IDENTITIES = {"add": (0, True, True), "subtract": (0, False, False),
               "multiply": (1, None, True), "divide": (1, None, False)}


class EliminateIdentity(_Rule):
    """``x + 0, 0 + x``, ``x - 0``, ``x * 1, 1 * x`` or ``x / 1`` (the
    operator ``name``) -> ``x`` (the table of the note: no broadcast of
    ``x``, no booleans, signed float zeros)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.value, self.negative_zero, self.commutes = _IDENTITIES[name]
        self.c = _filled("zero" if self.value == 0 else "one")
        self.pattern = is_op(name)(self.x, self.c)

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        t = _tensor(post)
        if t is None or t.dtype.is_bool:
            return post
        sign = self.negative_zero if t.dtype.is_float and self.value == 0 else None
        x, c = node_map[self.x][0], node_map[self.c][0]
        # The matcher swaps the operands of add and multiply only if the
        # pattern fails as written; with two constant-like operands the
        # identity may be the first, so try that order too.
        for keep, drop in [(x, c), (c, x)] if self.commutes else [(x, c)]:
            if _tensor(keep) == t and _is_identity(drop, t.dtype, self.value, sign):
                return keep
        return post


# ------------------------------------------------------------ shape chains

def _shape_op() -> DFPattern:
    """A call of an operator that only re-indexes in row-major order (a
    new pattern each time: one pattern object matches one node)."""
    return is_op("reshape") | is_op("squeeze") | is_op("expand_dims")


class DropNoOpReshape(_Rule):
    """reshape/squeeze/expand_dims of ``x`` with ``x``'s static type -> ``x``."""

    def __init__(self) -> None:
        super().__init__()
        self.pattern = _shape_op()(self.x)

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        t = _tensor(post)
        x = node_map[self.x][0]
        return x if _static(t) and _tensor(x) == t else post


class MergeReshapes(_Rule):
    """Two of reshape/squeeze/expand_dims in a row -> one reshape of ``x``
    to the final (static) shape, or ``x`` if that is its shape."""

    def __init__(self) -> None:
        super().__init__()
        self.pattern = _shape_op()(_shape_op()(self.x))

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        t = _tensor(post)
        if t is None or not _static(t):
            return post
        x = node_map[self.x][0]
        if _tensor(x) == t:
            return x
        attrs = ReshapeAttrs(newshape=tuple(int(d) for d in t.shape), allowzero=0 in t.shape)
        return Call(op("reshape"), (x,), attrs, span=post.span, checked_type=t)


# --------------------------------------------------------------- transpose

def _perm(call: Expr, ndim: int) -> tuple[int, ...]:
    assert isinstance(call, Call) and isinstance(call.attrs, TransposeAttrs)
    axes = call.attrs.axes
    if axes is None:
        return tuple(reversed(range(ndim)))
    return tuple(a % ndim for a in axes)


class DropNoOpTranspose(_Rule):
    """A transpose by the identity permutation -> ``x``."""

    def __init__(self) -> None:
        super().__init__()
        self.pattern = is_op("transpose")(self.x)

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        x = node_map[self.x][0]
        xt = _tensor(x)
        if xt is None:
            return post
        ndim = len(xt.shape)
        return x if _perm(post, ndim) == tuple(range(ndim)) else post


class MergeTransposes(_Rule):
    """``transpose(transpose(x, a), b)`` -> ``transpose(x, c)`` with
    ``c[j] = a[b[j]]``, or ``x`` if ``c`` is the identity."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = is_op("transpose")(self.x)
        self.pattern = is_op("transpose")(self.inner)

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        inner = node_map[self.inner][0]
        it = _tensor(inner)
        if it is None:
            return post
        ndim = len(it.shape)
        a, b = _perm(inner, ndim), _perm(post, ndim)
        composed = tuple(a[j] for j in b)
        x = node_map[self.x][0]
        if composed == tuple(range(ndim)):
            return x
        return Call(op("transpose"), (x,), TransposeAttrs(axes=composed), span=post.span,
                    checked_type=post.checked_type)


# -------------------------------------------------------------------- casts

def _float_format(d: DType) -> tuple[int, int, int, bool]:
    """(significand digits, largest exponent, exponent of the smallest
    subnormal, has infinities) of float dtype ``d``."""
    info = ml_dtypes.finfo(d.np)
    no_inf = d.is_float8 and d is not DType.FLOAT8_E5M2
    return int(info.nmant) + 1, int(info.maxexp), int(info.minexp) - int(info.nmant), \
        not no_inf


def holds_exactly(src: DType, mid: DType) -> bool:
    """Every value of ``src`` is a value of ``mid`` (so casting through
    ``mid`` loses nothing)."""
    if src == mid or src.is_bool:
        return True
    if mid.is_bool:
        return False
    if src.is_float:
        if not mid.is_float:
            return False
        (sd, smax, ssub, sinf), (md, mmax, msub, minf) = _float_format(src), _float_format(mid)
        return md >= sd and mmax >= smax and msub <= ssub and (minf or not sinf)
    # src is an integer
    digits = src.bits - 1 if src.is_signed else src.bits
    if mid.is_float:
        md, mmax, _, _ = _float_format(mid)
        return digits <= md and digits < mmax
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


def _cast_to(post: Expr) -> DType:
    assert isinstance(post, Call) and isinstance(post.attrs, CastAttrs)
    return post.attrs.dtype


class DropNoOpCast(_Rule):
    """``cast(x, T(x).dtype)`` -> ``x``."""

    def __init__(self) -> None:
        super().__init__()
        self.pattern = is_op("cast")(self.x)

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        x = node_map[self.x][0]
        xt = _tensor(x)
        return x if xt is not None and xt.dtype == _cast_to(post) else post


class MergeCasts(_Rule):
    """``cast(cast(x, mid), dst)`` -> ``cast(x, dst)`` when every value
    survives (:func:`cast_chain_exact`), or ``x`` if ``dst`` is its dtype."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = is_op("cast")(self.x)
        self.pattern = is_op("cast")(self.inner)

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        assert isinstance(post, Call)
        x = node_map[self.x][0]
        src, mid = _tensor(x), _tensor(node_map[self.inner][0])
        dst = _cast_to(post)
        if src is None or mid is None or not cast_chain_exact(src.dtype, mid.dtype, dst):
            return post
        if src.dtype == dst:
            return x
        return Call(op("cast"), (x,), post.attrs, span=post.span,
                    checked_type=post.checked_type)


class CastLikeToCast(_Rule):
    """``cast_like(x, y)`` of a pure ``y`` -> ``cast(x, T(y).dtype)``."""

    def __init__(self) -> None:
        super().__init__()
        self.like = wildcard()
        self.pattern = is_op("cast_like")(self.x, self.like)

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        like = node_map[self.like][0]
        lt = _tensor(like)
        if lt is None or not is_pure(like):
            return post
        return Call(op("cast"), (node_map[self.x][0],), CastAttrs(dtype=lt.dtype),
                    span=post.span, checked_type=post.checked_type)


# -------------------------------------------------------------- concatenate

class ConcatenateOfOne(_Rule):
    """``concatenate((x,))`` -> ``x``."""

    def __init__(self) -> None:
        super().__init__()
        self.pattern = is_op("concatenate")(is_tuple([self.x]))

    def callback(self, pre: Expr, post: Expr, node_map: NodeMap) -> Expr:
        x = node_map[self.x][0]
        return x if _tensor(x) == _tensor(post) else post


# ------------------------------------------------------------------- rules

#: the rules, in the order they are tried on a call (a no-op before a merge)
CALLBACKS: tuple[_Rule, ...] = (
    *(EliminateIdentity(name) for name in _IDENTITIES),
    DropNoOpReshape(), MergeReshapes(),
    DropNoOpTranspose(), MergeTransposes(),
    DropNoOpCast(), MergeCasts(), CastLikeToCast(),
    ConcatenateOfOne(),
)


def simplify_expr(mod: IRModule) -> IRModule:
    """SimplifyExpr: exact algebraic identities, shape, transpose and cast
    chains.

    A new, typed module with the rewrites of the module note applied (the
    module itself when nothing applies)."""
    assert mod.is_typed, "simplify_expr needs a typed module (run aot.infer_types)"
    out = rewrite_bottom_up(list(CALLBACKS), mod)
    assert isinstance(out, IRModule)
    return out


register_pass("SimplifyExpr", opt_level=1)(simplify_expr)
