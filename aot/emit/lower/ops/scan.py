"""Lowering of the scans (``aot/ir/ops/scan.py``): cumsum and cumprod.

One anchor: for every *row* (every index of the axes other than ``axis``)
a running value in the result's dtype starts at 0 (1 for cumprod) and,
for ``k`` in order along the axis, takes the converted element ``k``
(cast's rules) with one addition or multiplication; the sink gets the
value after the step (before it when ``exclusive``).  That is the
reference's one-step-at-a-time accumulation, so integers wrap alike and
floats round alike.  ``axis`` None scans the flattened data: one row,
read through its flat index.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ....ir.attrs import Attrs
from ....ir.ops.scan import ScanopAttrs
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import Index, LowerContext, Sink, anchor_lowering, loop_nest, out_tensor
from .common import tensor
from .index_math import unravel


@anchor_lowering("cumsum")
def _cumsum(ctx: LowerContext, args: Sequence, attrs: Attrs, out_type: Type,
            sinks: Sequence[Sink]) -> K.Stmt:
    return _scan(ctx, args, attrs, out_type, sinks, product=False)


@anchor_lowering("cumprod")
def _cumprod(ctx: LowerContext, args: Sequence, attrs: Attrs, out_type: Type,
             sinks: Sequence[Sink]) -> K.Stmt:
    return _scan(ctx, args, attrs, out_type, sinks, product=True)


def _scan(ctx: LowerContext, args: Sequence, attrs: Attrs, out_type: Type,
          sinks: Sequence[Sink], product: bool) -> K.Stmt:
    assert isinstance(attrs, ScanopAttrs)
    x = tensor(args[0])
    t = out_tensor(out_type)
    shape, dtype = tuple(int(d) for d in t.shape), t.dtype
    step: Callable[[K.Expr, K.Expr], K.Expr] = K.mul if product else K.add
    init = K.Const(1 if product else 0, dtype)

    def row(n: int, read: Callable[[K.Expr], K.Expr], at: Callable[[K.Expr], Index]
            ) -> list[K.Stmt]:
        acc = ctx.scalar("acc", dtype)
        k = ctx.index_var("k")
        update = K.Assign(acc, step(acc, K.cast(dtype, read(k))))
        emit = sinks[0](at(k), acc)
        body = [emit, update] if attrs.exclusive else [update, emit]
        return [K.Decl(acc, init), K.for_range(k, n, body)]

    if attrs.axis is None:
        return K.block(*row(shape[0], lambda k: x.read(unravel(k, x.shape)), lambda k: (k,)))
    axis = attrs.axis % len(shape)
    outer = shape[:axis] + shape[axis + 1:]

    def rows(idx: Index) -> list[K.Stmt]:
        def at(k: K.Expr) -> Index:
            return (*idx[:axis], k, *idx[axis:])
        return row(shape[axis], lambda k: x.read(at(k)), at)
    return loop_nest(ctx, outer, rows, "r")
