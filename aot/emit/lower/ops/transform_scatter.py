"""Lowering of the scatters (``aot/ir/ops/transform_scatter.py``):
scatter_elements and scatter_nd.

One anchor each, three loops over a scratch buffer of the result's shape
in the arena (the sink may be a fused epilogue that cannot be read back):
copy ``data`` in; for every position of ``updates`` in row-major order
(the reference's order, so a repeated position keeps the last ``update``
and accumulates one step at a time like it) compute the destination's
flat offset once, load, combine, store; hand every element to the sink.
A destination index is widened like ``take``'s, a negative
``scatter_elements`` index gets the axis extent added (a wrapping add:
the select's other arm may hold any value) and every component is
clamped into its axis, so no store leaves the buffer.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from ....ir.ops.shape_util import normalize_axis
from ....ir.ops.transform_scatter import ScatterReduction
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import (Index, LowerContext, Sink, TensorValue, anchor_lowering, from_buffer,
                        loop_nest)
from .common import tensor
from .index_math import INDEX, clamp_index, widen_index


def _combine(reduction: ScatterReduction, old: K.Expr, new: K.Expr) -> K.Expr:
    if reduction is ScatterReduction.UPDATE:
        return new
    if reduction is ScatterReduction.ADD:
        return K.add(old, new)
    if reduction is ScatterReduction.MUL:
        return K.mul(old, new)
    if reduction is ScatterReduction.MIN:
        return K.minimum(old, new)
    if reduction is ScatterReduction.MAX:
        return K.maximum(old, new)
    return K.div(K.add(old, new), K.Const(2, old.dtype))


def _component(ctx: LowerContext, e: K.Expr, extent: int, negative_from_end: bool,
               decls: list[K.Stmt]) -> K.Expr:
    """The int32 position an index value ``e`` addresses on an axis; the
    widened value is declared once (in ``decls``) so the selects that fix
    it read a variable."""
    if extent == 1:
        return K.Const(0, INDEX)
    w = widen_index(e)
    v = ctx.scalar("ix", w.dtype)
    decls.append(K.Decl(v, w))
    if negative_from_end and e.dtype.is_signed:
        fixed = ctx.scalar("ix", w.dtype)
        decls.append(K.Decl(fixed, K.select(K.lt(v, K.Const(0, v.dtype)),
                                            K.add(v, K.Const(extent, v.dtype)), v)))
        v = fixed
    return K.cast(INDEX, clamp_index(v, 0, extent - 1))


def _scatter(ctx: LowerContext, data: TensorValue, positions: Sequence[int],
             destination, updates: TensorValue, reduction: ScatterReduction,
             sink: Sink) -> K.Stmt:
    """The three loops; ``destination(idx, decls)`` is the result index
    element ``idx`` of ``positions`` (a shape) lands on and the index of
    its update, appending the declarations it needs to ``decls``."""
    shape = data.shape
    if math.prod(shape) == 0:
        return K.block()
    buf = ctx.scratch(data.dtype, shape, "scatter")
    acc = from_buffer(buf)

    def copy(idx: Index) -> K.Stmt:
        return K.store(buf, K.flat_index(idx, shape), data.read(idx))

    def step(idx: Index) -> list[K.Stmt]:
        decls: list[K.Stmt] = []
        dest, upd = destination(idx, decls)
        at = ctx.index_var("at")
        old = K.load(buf, at)
        return [*decls, K.Decl(at, K.flat_index(dest, shape)),
                K.store(buf, at, _combine(reduction, old, updates.read(upd)))]

    def out(idx: Index) -> K.Stmt:
        return sink(idx, acc.read(idx))

    stmts = [loop_nest(ctx, shape, copy, "c")]
    if math.prod(positions):
        stmts.append(loop_nest(ctx, positions, step, "u"))
    stmts.append(loop_nest(ctx, shape, out, "o"))
    return K.block(*stmts)


@anchor_lowering("scatter_elements")
def _scatter_elements(ctx: LowerContext, args: Sequence, attrs: Any, out_type: Type,
                      sinks: Sequence[Sink]) -> K.Stmt:
    data, indices, updates = (tensor(a) for a in args)
    axis = normalize_axis(attrs.axis, data.ndim)
    extent = data.shape[axis]

    def destination(idx: Index, decls: list[K.Stmt]) -> tuple[Index, Index]:
        dest = list(idx)
        dest[axis] = _component(ctx, indices.read(idx), extent, True, decls)
        return tuple(dest), idx
    return _scatter(ctx, data, indices.shape, destination, updates, attrs.reduction, sinks[0])


@anchor_lowering("scatter_nd")
def _scatter_nd(ctx: LowerContext, args: Sequence, attrs: Any, out_type: Type,
                sinks: Sequence[Sink]) -> K.Stmt:
    data, indices, updates = (tensor(a) for a in args)
    m = indices.shape[0]
    positions = tuple(updates.shape)        # (Y.., X_M..)
    n_y = indices.ndim - 1

    def destination(idx: Index, decls: list[K.Stmt]) -> tuple[Index, Index]:
        y, rest = idx[:n_y], idx[n_y:]
        tup = tuple(_component(ctx, indices.read((K.Const(k, INDEX), *y)), data.shape[k], False,
                               decls) for k in range(m))
        return (*tup, *rest), idx
    return _scatter(ctx, data, positions, destination, updates, attrs.mode, sinks[0])
