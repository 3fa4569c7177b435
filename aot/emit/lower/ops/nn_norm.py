"""Lowering of the normalisations of ``aot/ir/ops/nn_norm.py``:
nn.instance_norm, nn.group_norm and nn.l2_normalize.

SimplifyInference rewrites all three into reductions and arithmetic before
the C backend sees them (as Relay does), so these anchors serve programs
compiled without that pass (``--disable-pass SimplifyInference``).  Each
is a loop nest over the *groups* the operator normalises (instance and
channel; instance and channel group; the axes l2_normalize keeps) and,
inside, reduction loops over the group's elements in float64: the sum
(and for the affine norms the sum of squared deviations from the mean),
then one loop handing every element's float64 result, rounded once to the
data's dtype, to the sink -- the reference's arithmetic, summed in index
order.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from ....ir.attrs import Attrs
from ....ir.dtype import DType
from ....ir.ops.nn_norm import GroupNormAttrs, InstanceNormAttrs, L2NormalizeAttrs
from ....ir.ops.shape_util import instance_axes, l2_axes
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import Index, LowerContext, Sink, anchor_lowering, loop_nest, out_tensor
from .common import tensor

F64 = DType.FLOAT64


def _grouped(ctx: LowerContext, outer: Sequence[int], inner: Sequence[int],
             at: Callable[[Index, Index], Index],
             body: Callable[[Callable[[Callable[[Index], K.Stmt]], K.Stmt],
                             Callable[[Index], Index]], list[K.Stmt]]) -> K.Stmt:
    """``for g in outer: body(each, full)``: ``each(f)`` loops over the
    group's elements (``inner``) calling ``f`` with the full index."""
    def group(g: Index) -> list[K.Stmt]:
        def each(f: Callable[[Index], K.Stmt]) -> K.Stmt:
            return loop_nest(ctx, inner, lambda r: f(at(g, r)), "j")
        return body(each, lambda r: at(g, r))
    return loop_nest(ctx, outer, group, "g")


def _affine(ctx: LowerContext, args: Sequence, attrs: InstanceNormAttrs | GroupNormAttrs,
            out_type: Type, sinks: Sequence[Sink], outer: Sequence[int],
            inner: Sequence[int], at: Callable[[Index, Index], Index], axis: int) -> K.Stmt:
    x, gamma, beta = (tensor(a) for a in args)
    dtype = out_tensor(out_type).dtype
    count = K.Const(float(math.prod(inner)), F64)

    def body(each, full) -> list[K.Stmt]:
        total, sq = ctx.scalar("sum", F64), ctx.scalar("sq", F64)
        mean, std = ctx.scalar("mean", F64), ctx.scalar("std", F64)

        def centered(idx: Index) -> K.Expr:
            return K.sub(K.cast(F64, x.read(idx)), mean)

        def out(idx: Index) -> K.Stmt:
            y: K.Expr = K.div(centered(idx), std)
            channel = (idx[axis],)
            if attrs.scale:
                y = K.mul(y, K.cast(F64, gamma.read(channel)))
            if attrs.center:
                y = K.add(y, K.cast(F64, beta.read(channel)))
            return sinks[0](idx, K.cast(dtype, y))
        return [K.Decl(total, K.Const(0.0, F64)),
                each(lambda idx: K.Assign(total, K.add(total, K.cast(F64, x.read(idx))))),
                K.Decl(mean, K.div(total, count)),
                K.Decl(sq, K.Const(0.0, F64)),
                each(lambda idx: K.Assign(sq, K.add(sq, K.mul(centered(idx), centered(idx))))),
                K.Decl(std, K.math_call("sqrt", K.add(K.div(sq, count),
                                                      K.Const(attrs.epsilon, F64)))),
                each(out)]
    return _grouped(ctx, outer, inner, at, body)


def _split(shape: Sequence[int], axes: Sequence[int]) -> tuple[list[int], list[int]]:
    keep = [i for i in range(len(shape)) if i not in axes]
    return keep, list(axes)


def _merge(ndim: int, keep: Sequence[int], red: Sequence[int]) -> Callable[[Index, Index], Index]:
    def at(g: Index, r: Index) -> Index:
        full = dict(zip(keep, g)) | dict(zip(red, r))
        return tuple(full[i] for i in range(ndim))
    return at


@anchor_lowering("nn.instance_norm")
def _instance_norm(ctx: LowerContext, args: Sequence, attrs: Attrs, out_type: Type,
                   sinks: Sequence[Sink]) -> K.Stmt:
    assert isinstance(attrs, InstanceNormAttrs)
    shape = tensor(args[0]).shape
    axis = attrs.axis % len(shape)
    keep, red = _split(shape, instance_axes(len(shape), axis))
    return _affine(ctx, args, attrs, out_type, sinks, [shape[i] for i in keep],
                   [shape[i] for i in red], _merge(len(shape), keep, red), axis)


@anchor_lowering("nn.group_norm")
def _group_norm(ctx: LowerContext, args: Sequence, attrs: Attrs, out_type: Type,
                sinks: Sequence[Sink]) -> K.Stmt:
    """Groups are (the axes before ``axis``, the channel group); a group's
    elements are (its channels, the axes after ``axis``)."""
    assert isinstance(attrs, GroupNormAttrs)
    shape = tensor(args[0]).shape
    axis = attrs.axis % len(shape)
    per = shape[axis] // attrs.num_groups
    outer = [*shape[:axis], attrs.num_groups]
    inner = [per, *shape[axis + 1:]]

    def at(g: Index, r: Index) -> Index:
        channel = K.add(K.mul(g[axis], per, no_wrap=True), r[0], no_wrap=True)
        return (*g[:axis], channel, *r[1:])
    return _affine(ctx, args, attrs, out_type, sinks, outer, inner, at, axis)


@anchor_lowering("nn.l2_normalize")
def _l2_normalize(ctx: LowerContext, args: Sequence, attrs: Attrs, out_type: Type,
                  sinks: Sequence[Sink]) -> K.Stmt:
    assert isinstance(attrs, L2NormalizeAttrs)
    x = tensor(args[0])
    shape = x.shape
    dtype = out_tensor(out_type).dtype
    keep, red = _split(shape, l2_axes(len(shape), attrs.axis))
    at = _merge(len(shape), keep, red)

    def body(each, full) -> list[K.Stmt]:
        total, norm = ctx.scalar("sum", F64), ctx.scalar("norm", F64)

        def square(idx: Index) -> K.Expr:
            v = K.cast(F64, x.read(idx))
            return K.mul(v, v)
        return [K.Decl(total, K.Const(0.0, F64)),
                each(lambda idx: K.Assign(total, K.add(total, square(idx)))),
                K.Decl(norm, K.math_call("sqrt", K.maximum(total, K.Const(attrs.eps, F64)))),
                each(lambda idx: sinks[0](idx, K.cast(dtype, K.div(K.cast(F64, x.read(idx)),
                                                                    norm))))]
    return _grouped(ctx, [shape[i] for i in keep], [shape[i] for i in red], at, body)
