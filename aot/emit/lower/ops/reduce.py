"""Lowering of the reductions (``aot/ir/ops/reduce.py``): sum, prod, mean,
max, min, all, any, logsumexp, argmax, argmin, variance, std.

Design note
-----------
Every reduction is an anchor with one loop skeleton (:func:`_reduction`):
a loop nest over the *output* index (constant bounds, last dimension
innermost) and, inside it, one loop per reduced axis in ascending order,
so the innermost loop runs over the last reduced axis (contiguous when
that is the input's last axis).  The inner body updates a scalar
accumulator declared before the reduced loops; after them the finished
element goes to the sink (which applies the fused epilogue and stores).
The input is read only through ``args[i].read``: a fused prologue
(``sum(exp(x))``) is inlined into the inner loop, its repeated
sub-expressions hoisted by :func:`~aot.emit.kernel.cse.hoist`.

Values are exactly the NumPy reference's:

* Float ``sum``/``prod``/``mean``/``variance``/``std``/``logsumexp``
  accumulate in ``double`` and round once to the dtype, as the reference
  computes in float64 (the order of the additions differs from NumPy's
  pairwise sum, which is within float64 rounding).  An empty float mean is
  NaN.
* Integer ``sum``/``prod`` accumulate in the dtype with wrapping
  arithmetic, which equals the reference's wide sum truncated to the dtype
  (wrapping is a ring homomorphism).  Integer ``mean`` divides that wrapped
  sum by the element count truncating toward zero -- in the dtype when the
  count fits it, else in 64 bits (an empty mean is 0).
* ``max``/``min`` start from the identity (-inf/+inf, the integer limits,
  false/true for bool) and fold with kernel IR's NaN-propagating max/min
  (``||``/``&&`` on bool), in the dtype.
* ``all``/``any`` fold ``x != 0`` with ``&&``/``||`` and give 0/1 in the
  input's dtype.
* ``logsumexp`` makes two passes over each slice (maximum, then the sum of
  ``exp(x - m)``, ``m`` replaced by 0 when not finite), in double.
* ``argmax``/``argmin`` scan the reduced sub-block in row-major order and
  keep the best value and its flat position (int32).  The first index
  wins ties unless ``select_last_index``; NaN counts as the extreme value
  (NumPy's rule: the first NaN, or the last one with
  ``select_last_index``).  An empty slice gives 0.
* ``variance``/``std`` accumulate ``(x - mean)^2`` in double, the mean
  read at the broadcast index (once per output element when it is
  constant along the reduced axes, as ``mean(..., keepdims=True)`` is),
  and divide by the count (minus one when ``unbiased``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from ....ir.dtype import DType
from ....ir.ops.reduce import reduce_axes
from ...kernel import ir as K
from ...kernel.cse import hoist
from ..registry import (Index, LowerContext, Sink, TensorValue, anchor_lowering, broadcast_index,
                        loop_nest, out_tensor)
from .common import tensor

F64 = DType.FLOAT64
I32 = DType.INT32


# ============================================================ the skeleton

@dataclass(frozen=True, slots=True)
class _Slices:
    """Which input elements each output element reduces."""
    in_shape: tuple[int, ...]
    axes: tuple[int, ...]
    out_shape: tuple[int, ...]
    keepdims: bool

    @property
    def count(self) -> int:
        return math.prod(self.in_shape[a] for a in self.axes)

    def input_index(self, out_idx: Index, red: Sequence[K.Expr]) -> Index:
        """The input index of output ``out_idx`` at reduced position
        ``red`` (one expression per reduced axis)."""
        kept = iter(out_idx) if not self.keepdims else None
        reduced = dict(zip(self.axes, red))
        idx: list[K.Expr] = []
        for d in range(len(self.in_shape)):
            if d in reduced:
                idx.append(reduced[d])
            elif kept is None:
                idx.append(out_idx[d])
            else:
                idx.append(next(kept))
        return tuple(idx)

    def flat_position(self, red: Sequence[K.Expr]) -> K.Expr:
        """Row-major position of ``red`` within the reduced sub-block."""
        return K.flat_index(list(red), [self.in_shape[a] for a in self.axes])


def _slices(x: TensorValue, attrs, out_type) -> _Slices:
    axes = reduce_axes(x.ndim, attrs)
    out_shape = tuple(int(d) for d in out_tensor(out_type).shape)
    return _Slices(tuple(x.shape), axes, out_shape, bool(attrs.keepdims))


def _hoisted(ctx: LowerContext, value: K.Expr) -> tuple[list[K.Stmt], K.Expr]:
    return hoist(value, ctx.fresh)


def _update(ctx: LowerContext, acc: K.Var, value: K.Expr) -> list[K.Stmt]:
    """``acc = value`` with the value's shared sub-expressions hoisted."""
    decls, expr = _hoisted(ctx, value)
    return [*decls, K.Assign(acc, expr)]


def _reduced_loops(ctx: LowerContext, s: _Slices, out_idx: Index,
                   body: Callable[[Index, Sequence[K.Var]], list[K.Stmt]]) -> K.Stmt:
    """One loop per reduced axis (ascending: the last one innermost) around
    ``body(input index, reduced loop variables)``."""
    red = ctx.index_vars(len(s.axes), "r")
    inner: K.Stmt = K.block(*body(s.input_index(out_idx, red), red))
    for v, a in zip(reversed(red), reversed(s.axes)):
        inner = K.for_range(v, s.in_shape[a], inner)
    return inner


def _reduction(ctx: LowerContext, s: _Slices,
               element: Callable[[Index], list[K.Stmt]]) -> K.Stmt:
    """The loop nest over the output; ``element(out_idx)`` gives the
    statements computing one output element (ending with its sink)."""
    return loop_nest(ctx, s.out_shape, element, base="i")


def _fold(ctx: LowerContext, x: TensorValue, s: _Slices, sink: Sink, acc_dtype: DType,
          init: K.Expr, step: Callable[[K.Expr, K.Expr], K.Expr],
          finish: Callable[[K.Expr], K.Expr]) -> K.Stmt:
    """``acc = init; for each reduced element v: acc = step(acc, v);
    sink(finish(acc))``."""
    def element(out_idx: Index) -> list[K.Stmt]:
        acc = ctx.scalar("acc", acc_dtype)
        loops = _reduced_loops(ctx, s, out_idx,
                               lambda in_idx, red: _update(ctx, acc, step(acc, x.read(in_idx))))
        return [K.Decl(acc, init), loops, sink(out_idx, finish(acc))]
    return _reduction(ctx, s, element)


def sum_fold(ctx: LowerContext, x: TensorValue, attrs, out_type, sink: Sink, acc_dtype: DType,
             finish: Callable[[K.Expr, int], K.Expr]) -> K.Stmt:
    """The skeleton summing ``x`` (cast to ``acc_dtype``, wrapping) over
    the reduced axes of ``attrs``; ``finish(acc, count)`` gives each output
    element (the quantized mean builds on it)."""
    s = _slices(x, attrs, out_type)
    return _fold(ctx, x, s, sink, acc_dtype, K.Const(0, acc_dtype), _sum_step,
                 lambda acc: finish(acc, s.count))


# ============================================================ simple folds

def _identity(dtype: DType, is_max: bool) -> K.Const:
    """The value max (``is_max``) or min starts from (the reference's
    ``initial``)."""
    if dtype is DType.BOOL:
        return K.Const(not is_max, dtype)
    if dtype.is_float:      # +-inf, or the largest finite value without infinities
        return K.Const(dtype.lowest if is_max else -dtype.lowest, dtype)
    lo, hi = K.dtype_range(dtype)
    return K.Const(lo if is_max else hi, dtype)


def _wide(dtype: DType) -> DType:
    """The accumulator of a sum or product: double for floats, the dtype
    itself (wrapping) for integers."""
    return F64 if dtype.is_float else dtype


def _sum_step(acc: K.Expr, v: K.Expr) -> K.Expr:
    return K.add(acc, K.cast(acc.dtype, v))


def _prod_step(acc: K.Expr, v: K.Expr) -> K.Expr:
    return K.mul(acc, K.cast(acc.dtype, v))


@anchor_lowering("sum")
def _sum(ctx: LowerContext, args: Sequence, attrs, out_type, sinks: Sequence[Sink]) -> K.Stmt:
    x = tensor(args[0])
    t = x.dtype
    return _fold(ctx, x, _slices(x, attrs, out_type), sinks[0], _wide(t),
                 K.Const(0, _wide(t)), _sum_step, lambda acc: K.cast(t, acc))


@anchor_lowering("prod")
def _prod(ctx: LowerContext, args: Sequence, attrs, out_type, sinks: Sequence[Sink]) -> K.Stmt:
    x = tensor(args[0])
    t = x.dtype
    return _fold(ctx, x, _slices(x, attrs, out_type), sinks[0], _wide(t),
                 K.Const(1, _wide(t)), _prod_step, lambda acc: K.cast(t, acc))


def _int_mean(total: K.Expr, count: int) -> K.Expr:
    """``total / count`` truncated toward zero (0 for an empty slice), in
    the dtype when ``count`` fits it, else in 64 bits."""
    t = total.dtype
    if count == 0:
        return K.Const(0, t)
    if count <= K.dtype_range(t)[1]:
        return K.div(total, K.Const(count, t))
    wide = DType.UINT64 if t.is_unsigned else DType.INT64
    return K.cast(t, K.div(K.cast(wide, total), K.Const(count, wide)))


@anchor_lowering("mean")
def _mean(ctx: LowerContext, args: Sequence, attrs, out_type, sinks: Sequence[Sink]) -> K.Stmt:
    x = tensor(args[0])
    t = x.dtype
    s = _slices(x, attrs, out_type)
    count = s.count
    if t.is_float:
        def finish(acc: K.Expr) -> K.Expr:
            if count == 0:
                return K.Const(math.nan, t)
            return K.cast(t, K.div(acc, K.Const(float(count), F64)))
    else:
        def finish(acc: K.Expr) -> K.Expr:
            return _int_mean(acc, count)
    return _fold(ctx, x, s, sinks[0], _wide(t), K.Const(0, _wide(t)), _sum_step, finish)


def _extreme_lowering(name: str, is_max: bool) -> None:
    @anchor_lowering(name)
    def lower(ctx: LowerContext, args: Sequence, attrs, out_type,
              sinks: Sequence[Sink]) -> K.Stmt:
        x = tensor(args[0])
        t = x.dtype
        if t is DType.BOOL:
            step = K.logical_or if is_max else K.logical_and
        else:
            step = K.maximum if is_max else K.minimum
        return _fold(ctx, x, _slices(x, attrs, out_type), sinks[0], t, _identity(t, is_max),
                     step, lambda acc: acc)


_extreme_lowering("max", True)
_extreme_lowering("min", False)


def _truth(v: K.Expr) -> K.Expr:
    return v if v.dtype is DType.BOOL else K.ne(v, K.Const(0, v.dtype))


def _logical_lowering(name: str, is_all: bool) -> None:
    @anchor_lowering(name)
    def lower(ctx: LowerContext, args: Sequence, attrs, out_type,
              sinks: Sequence[Sink]) -> K.Stmt:
        x = tensor(args[0])
        t = x.dtype
        combine = K.logical_and if is_all else K.logical_or
        return _fold(ctx, x, _slices(x, attrs, out_type), sinks[0], DType.BOOL,
                     K.Const(is_all, DType.BOOL), lambda acc, v: combine(acc, _truth(v)),
                     lambda acc: K.cast(t, acc))


_logical_lowering("all", True)
_logical_lowering("any", False)


# =============================================================== logsumexp

def _is_finite(v: K.Expr) -> K.Expr:
    return K.lt(K.math_call("fabs", v), K.Const(math.inf, v.dtype))


@anchor_lowering("logsumexp")
def _logsumexp(ctx: LowerContext, args: Sequence, attrs, out_type,
               sinks: Sequence[Sink]) -> K.Stmt:
    x = tensor(args[0])
    t = x.dtype
    s = _slices(x, attrs, out_type)

    def wide(in_idx: Index) -> K.Expr:
        return K.cast(F64, x.read(in_idx))

    def element(out_idx: Index) -> list[K.Stmt]:
        m = ctx.scalar("m", F64)
        shift = ctx.scalar("shift", F64)
        acc = ctx.scalar("acc", F64)
        max_pass = _reduced_loops(ctx, s, out_idx,
                                  lambda in_idx, red: _update(ctx, m, K.maximum(m, wide(in_idx))))
        sum_pass = _reduced_loops(
            ctx, s, out_idx,
            lambda in_idx, red: _update(
                ctx, acc, K.add(acc, K.math_call("exp", K.sub(wide(in_idx), shift)))))
        result = K.add(K.math_call("log", acc), shift)
        return [K.Decl(m, K.Const(-math.inf, F64)), max_pass,
                K.Decl(shift, K.select(_is_finite(m), m, K.Const(0.0, F64))),
                K.Decl(acc, K.Const(0.0, F64)), sum_pass,
                sinks[0](out_idx, K.cast(t, result))]
    return _reduction(ctx, s, element)


# ========================================================= argmax / argmin

def _is_nan(v: K.Expr) -> K.Expr:
    return K.ne(v, v)


def _takes_over(v: K.Expr, best: K.Expr, is_max: bool, last: bool) -> K.Expr:
    """Whether the element ``v`` scanned after the current ``best``
    replaces it: strictly more extreme (or as extreme, for the last
    index); NaN is the most extreme value of all."""
    if last:
        better = K.ge(v, best) if is_max else K.le(v, best)
    else:
        better = K.gt(v, best) if is_max else K.lt(v, best)
    if not v.dtype.is_float:
        return better
    if last:   # the last NaN, or a better number while no NaN was seen
        return K.logical_or(_is_nan(v), K.logical_and(K.logical_not(_is_nan(best)), better))
    # the first NaN, or a better number (never once best is NaN: v > NaN is false)
    return K.logical_or(better, K.logical_and(_is_nan(v), K.logical_not(_is_nan(best))))


def _arg_lowering(name: str, is_max: bool) -> None:
    @anchor_lowering(name)
    def lower(ctx: LowerContext, args: Sequence, attrs, out_type,
              sinks: Sequence[Sink]) -> K.Stmt:
        x = tensor(args[0])
        t = x.dtype
        s = _slices(x, attrs, out_type)
        last = bool(attrs.select_last_index)

        def element(out_idx: Index) -> list[K.Stmt]:
            best = ctx.scalar("best", t)
            pos = ctx.scalar("pos", I32)

            def body(in_idx: Index, red: Sequence[K.Var]) -> list[K.Stmt]:
                decls, value = _hoisted(ctx, x.read(in_idx))
                v = ctx.scalar("v", t)
                take = K.if_then_else(_takes_over(v, best, is_max, last),
                                      [K.Assign(best, v), K.Assign(pos, s.flat_position(red))])
                return [*decls, K.Decl(v, value), take]
            loops = _reduced_loops(ctx, s, out_idx, body)
            return [K.Decl(best, _identity(t, is_max)), K.Decl(pos, K.Const(0, I32)), loops,
                    sinks[0](out_idx, pos)]
        return _reduction(ctx, s, element)


_arg_lowering("argmax", True)
_arg_lowering("argmin", False)


# ========================================================= variance / std

def _variance_lowering(name: str, take_sqrt: bool) -> None:
    @anchor_lowering(name)
    def lower(ctx: LowerContext, args: Sequence, attrs, out_type,
              sinks: Sequence[Sink]) -> K.Stmt:
        x, mean = tensor(args[0]), tensor(args[1])
        t = x.dtype
        s = _slices(x, attrs, out_type)
        divisor = float(s.count - (1 if attrs.unbiased else 0))
        # the mean is one value per output element when it does not vary
        # along the reduced axes
        invariant = all(mean.shape[a] == 1 for a in s.axes)

        def mean_at(in_idx: Index) -> K.Expr:
            return K.cast(F64, mean.read(broadcast_index(in_idx, x.shape, mean.shape)))

        def element(out_idx: Index) -> list[K.Stmt]:
            acc = ctx.scalar("acc", F64)
            pre: list[K.Stmt] = []
            m_hoisted: K.Expr | None = None
            if invariant:
                m = ctx.scalar("mu", F64)
                zeros = [K.Const(0, I32)] * len(s.axes)
                decls, value = _hoisted(ctx, mean_at(s.input_index(out_idx, zeros)))
                pre = [*decls, K.Decl(m, value)]
                m_hoisted = m

            def body(in_idx: Index, red: Sequence[K.Var]) -> list[K.Stmt]:
                mu = m_hoisted if m_hoisted is not None else mean_at(in_idx)
                d = ctx.scalar("d", F64)
                decls, diff = _hoisted(ctx, K.sub(K.cast(F64, x.read(in_idx)), mu))
                return [*decls, K.Decl(d, diff), K.Assign(acc, K.add(acc, K.mul(d, d)))]
            loops = _reduced_loops(ctx, s, out_idx, body)
            result: K.Expr = K.div(acc, K.Const(divisor, F64))
            if take_sqrt:
                result = K.math_call("sqrt", result)
            return [*pre, K.Decl(acc, K.Const(0.0, F64)), loops,
                    sinks[0](out_idx, K.cast(t, result))]
        return _reduction(ctx, s, element)


_variance_lowering("variance", False)
_variance_lowering("std", True)
