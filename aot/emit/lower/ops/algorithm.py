"""Lowering of the sorting operators (``aot/ir/ops/algorithm.py``):
argsort, sort, topk.

Design note
-----------
All three are one anchor (:func:`_lower_sort`): for every *row* (every
index of the dimensions other than ``axis``) it finds the first ``k``
positions of the row's stable order and hands position ``t``'s value to
the values sink and its index (converted to the index dtype) to the
indices sink.  ``argsort``/``sort`` take ``k = n`` (the row length),
``topk`` its ``k`` (``n`` when ``k < 1``).

The order is the reference's: a total order on ``(value, index)`` pairs.
``a`` precedes ``b`` when it is strictly smaller (ascending) or larger
(descending), NaN counting as greater than every number -- last when
ascending, first when descending -- and equal values (NaNs among
themselves, ``-0.0`` and ``0.0``) keep their index order in both
directions.

Two algorithms, chosen at compile time from ``n`` and ``k``:

* **Selection** when ``k <= max(1, ceil(log2 n))`` (``topk`` with a small
  ``k``, the common ``k = 1`` above all): ``k`` scans of the row, scan
  ``t`` picking the first element (in index order) that precedes every
  other element coming after the pair picked by scan ``t - 1``.  O(k n)
  comparisons, no scratch memory at all; the input (and a fused
  prologue) is read ``k`` times.
* **Bottom-up merge sort** of an index array otherwise: O(n log n)
  comparisons, stable because a merge takes from the left run on ties.
  Scratch: ``2n`` int32 indices (two halves that the passes ping-pong
  between: pass ``p`` merges runs of width ``2^p`` from half ``p % 2``
  into the other, so the passes are one loop and the final half is known
  at compile time), plus a copy of the row's values when the input is not
  a plain buffer (a fused prologue is then computed once per element, not
  once per comparison).  The merge is branch-free on the data: the run
  cursors are clamped to valid positions before loading, so every load is
  in bounds whatever the comparison's evaluation order, and the taken
  index is a select.
"""

from __future__ import annotations

import math
from typing import Sequence

from ....ir.dtype import DType
from ....ir.ops.algorithm import TopKRetType
from ....ir.ops.shape_util import normalize_axis
from ...kernel import ir as K
from ...kernel.cse import hoist
from ..registry import (Index, LowerContext, LoweringError, Sink, TensorValue, anchor_lowering,
                        loop_nest)
from .common import tensor

I32 = DType.INT32
#: the longest row the merge sort indexes with int32 (its cursors reach 3n)
MAX_ROW = 2**29


def _is_nan(v: K.Expr) -> K.Expr:
    return K.ne(v, v)


def _precedes(a: K.Expr, b: K.Expr, ascending: bool) -> K.Expr:
    """Value ``a`` comes strictly before value ``b`` in the order (NaN
    greatest; equal values do not precede each other)."""
    if ascending:
        strict = K.lt(a, b)
        nan_rule = (b, a)      # b is NaN and a is not: a first
    else:
        strict = K.gt(a, b)
        nan_rule = (a, b)      # a is NaN and b is not: a first
    if not a.dtype.is_float:
        return strict
    nan, num = nan_rule
    return K.logical_or(strict, K.logical_and(_is_nan(nan), K.logical_not(_is_nan(num))))


def _declare(ctx: LowerContext, base: str, value: K.Expr) -> tuple[list[K.Stmt], K.Var]:
    """A temporary holding ``value`` (its shared sub-expressions hoisted)."""
    decls, expr = hoist(value, ctx.fresh)
    v = ctx.scalar(base, value.dtype)
    return [*decls, K.Decl(v, expr)], v


def _nw_add(a: K.Expr, b: K.Operand) -> K.Expr:
    return K.add(a, b, no_wrap=True)


def _index_min(a: K.Expr, b: K.Expr) -> K.Expr:
    return K.select(K.lt(a, b), a, b)


class _Row:
    """One row: its elements ``at(j)`` and the sinks of its outputs."""

    def __init__(self, ctx: LowerContext, x: TensorValue, axis: int, ridx: Index,
                 value_sink: Sink | None, index_sink: Sink | None, index_dtype: DType) -> None:
        self.ctx, self.x, self.axis, self.ridx = ctx, x, axis, ridx
        self.value_sink, self.index_sink, self.index_dtype = value_sink, index_sink, index_dtype

    def at(self, j: K.Expr) -> Index:
        return (*self.ridx[:self.axis], j, *self.ridx[self.axis:])

    def read(self, j: K.Expr) -> K.Expr:
        return self.x.read(self.at(j))

    def emit(self, t: K.Expr, j: K.Expr, value: K.Expr) -> list[K.Stmt]:
        """Output position ``t`` is element ``j`` of value ``value``."""
        out: list[K.Stmt] = []
        if self.value_sink is not None:
            out.append(self.value_sink(self.at(t), value))
        if self.index_sink is not None:
            out.append(self.index_sink(self.at(t), K.cast(self.index_dtype, j)))
        return out


# ================================================================ selection

def _selection(ctx: LowerContext, row: _Row, n: int, k: int, ascending: bool) -> list[K.Stmt]:
    dtype = row.x.dtype
    zero = K.Const(0, dtype)
    prev_v, prev_j = ctx.scalar("prev", dtype), ctx.scalar("prevj", I32)
    t = ctx.index_var("t")
    best_v, best_j = ctx.scalar("best", dtype), ctx.scalar("bestj", I32)
    j = ctx.index_var("j")

    read, v = _declare(ctx, "v", row.read(j))
    wins = K.logical_or(K.lt(best_j, K.Const(0, I32)), _precedes(v, best_v, ascending))
    if k > 1:
        # (v, j) comes after the pair the previous scan picked
        after = K.logical_or(
            K.lt(prev_j, K.Const(0, I32)),
            K.logical_or(_precedes(prev_v, v, ascending),
                         K.logical_and(K.logical_not(_precedes(v, prev_v, ascending)),
                                       K.gt(j, prev_j))))
        wins = K.logical_and(after, wins)
    scan = K.for_range(j, n, [*read, K.if_then_else(wins, [K.Assign(best_v, v),
                                                           K.Assign(best_j, j)])])
    body: list[K.Stmt] = [K.Decl(best_v, zero), K.Decl(best_j, K.Const(-1, I32)), scan]
    if k > 1:
        body += [K.Assign(prev_v, best_v), K.Assign(prev_j, best_j)]
    body += row.emit(t, best_j, best_v)
    picks = K.for_range(t, k, body)
    if k == 1:
        return [picks]
    return [K.Decl(prev_v, zero), K.Decl(prev_j, K.Const(-1, I32)), picks]


# =============================================================== merge sort

def _merge_sort(ctx: LowerContext, row: _Row, n: int, k: int, ascending: bool,
                idx: K.Buffer, keys: K.Buffer | None) -> list[K.Stmt]:
    def key(j: K.Expr) -> K.Expr:
        return K.load(keys, j) if keys is not None else row.read(j)

    init_j = ctx.index_var("j")
    init = [K.store(idx, init_j, init_j)]
    if keys is not None:
        init.append(K.store(keys, init_j, row.read(init_j)))
    stmts: list[K.Stmt] = [K.for_range(init_j, n, init)]

    passes = (n - 1).bit_length()       # ceil(log2 n)
    p = ctx.index_var("pass")
    w, two_w = ctx.scalar("w", I32), ctx.scalar("w2", I32)
    src, dst = ctx.scalar("src", I32), ctx.scalar("dst", I32)
    q = ctx.index_var("q")
    lo, mid, hi = ctx.scalar("lo", I32), ctx.scalar("mid", I32), ctx.scalar("hi", I32)
    i, j = ctx.scalar("a", I32), ctx.scalar("b", I32)
    out = ctx.index_var("o")
    nn = K.Const(n, I32)

    # one merge step: output position `out` takes the head of the left run
    # (cursor i < mid) or of the right run (cursor j < hi)
    left_ok, right_ok = K.lt(i, mid), K.lt(j, hi)
    ic, jc = ctx.scalar("ia", I32), ctx.scalar("ib", I32)
    left, right = ctx.scalar("left", I32), ctx.scalar("right", I32)
    take = ctx.scalar("take", DType.BOOL)
    left_key, kl = _declare(ctx, "kl", key(left))
    right_key, kr = _declare(ctx, "kr", key(right))
    step = [
        K.Decl(ic, K.select(left_ok, i, lo)),
        K.Decl(jc, K.select(right_ok, j, lo)),
        K.Decl(left, K.load(idx, _nw_add(src, ic))),
        K.Decl(right, K.load(idx, _nw_add(src, jc))),
        *left_key, *right_key,
        K.Decl(take, K.logical_and(right_ok, K.logical_or(
            K.logical_not(left_ok), _precedes(kr, kl, ascending)))),
        K.store(idx, _nw_add(dst, out), K.select(take, right, left)),
        K.Assign(i, K.select(take, i, _nw_add(i, 1))),
        K.Assign(j, K.select(take, _nw_add(j, 1), j)),
    ]
    merge = K.for_range(out, K.sub(hi, lo, no_wrap=True), step, start=lo)
    pair = [
        K.Decl(lo, K.mul(q, two_w, no_wrap=True)),
        K.Decl(mid, _index_min(_nw_add(lo, w), nn)),
        K.Decl(hi, _index_min(_nw_add(lo, two_w), nn)),
        K.Decl(i, lo), K.Decl(j, mid),
        merge,
    ]
    # ceil(n / 2w) pairs of runs
    pairs = K.shr(_nw_add(two_w, n - 1), _nw_add(p, 1))
    one_pass = [
        K.Decl(w, K.shl(K.Const(1, I32), p)),
        K.Decl(two_w, _nw_add(w, w)),
        K.Decl(src, K.mul(K.bit_and(p, K.Const(1, I32)), nn, no_wrap=True)),
        K.Decl(dst, K.sub(nn, src, no_wrap=True)),
        K.for_range(q, pairs, pair),
    ]
    if passes:
        stmts.append(K.for_range(p, passes, one_pass))

    final = (passes % 2) * n
    t = ctx.index_var("t")
    pick, chosen = _declare(ctx, "j", K.load(idx, _nw_add(t, final)))
    stmts.append(K.for_range(t, k, [*pick, *row.emit(t, chosen, key(chosen))]))
    return stmts


# ================================================================= skeleton

def _lower_sort(ctx: LowerContext, x: TensorValue, axis: int, ascending: bool, k: int | None,
                value_sink: Sink | None, index_sink: Sink | None,
                index_dtype: DType = I32) -> K.Stmt:
    n = x.shape[axis]
    k = n if k is None or k < 1 else k
    row_shape = x.shape[:axis] + x.shape[axis + 1:]
    if n == 0 or k == 0 or math.prod(row_shape) == 0:
        return K.block()
    if n > MAX_ROW:
        raise LoweringError(f"a row of {n} elements is too long to sort with 32-bit indices")
    selection = k <= max(1, (n - 1).bit_length())
    idx = keys = None
    if not selection:
        idx = ctx.scratch(I32, (2 * n,), "order")
        if x.buffer is None:
            keys = ctx.scratch(x.dtype, (n,), "keys")

    def per_row(ridx: Index) -> list[K.Stmt]:
        row = _Row(ctx, x, axis, ridx, value_sink, index_sink, index_dtype)
        if selection:
            return _selection(ctx, row, n, k, ascending)
        return _merge_sort(ctx, row, n, k, ascending, idx, keys)
    return loop_nest(ctx, row_shape, per_row, base="i")


def _axis(x: TensorValue, axis: int) -> int:
    return normalize_axis(axis, x.ndim)


@anchor_lowering("argsort")
def _argsort(ctx: LowerContext, args: Sequence, attrs, out_type,
             sinks: Sequence[Sink]) -> K.Stmt:
    x = tensor(args[0])
    return _lower_sort(ctx, x, _axis(x, attrs.axis), attrs.is_ascend, None, None, sinks[0],
                       attrs.dtype)


@anchor_lowering("sort")
def _sort(ctx: LowerContext, args: Sequence, attrs, out_type,
          sinks: Sequence[Sink]) -> K.Stmt:
    x = tensor(args[0])
    return _lower_sort(ctx, x, _axis(x, attrs.axis), attrs.is_ascend, None, sinks[0], None)


@anchor_lowering("topk")
def _topk(ctx: LowerContext, args: Sequence, attrs, out_type,
          sinks: Sequence[Sink]) -> K.Stmt:
    x = tensor(args[0])
    value_sink: Sink | None = None
    index_sink: Sink | None = None
    if attrs.ret_type is TopKRetType.BOTH:
        value_sink, index_sink = sinks[0], sinks[1]
    elif attrs.ret_type is TopKRetType.VALUES:
        value_sink = sinks[0]
    else:
        index_sink = sinks[0]
    return _lower_sort(ctx, x, _axis(x, attrs.axis), attrs.is_ascend, attrs.k, value_sink,
                       index_sink, attrs.dtype)
