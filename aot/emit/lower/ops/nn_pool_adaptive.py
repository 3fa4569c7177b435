"""Lowering of the adaptive pools (``aot/ir/ops/nn_pool_adaptive.py``):
``nn.adaptive_{avg,max}_pool{1,2,3}d``, as anchors.

Design note
-----------
A plain loop nest in the layout's order: a loop per output axis; for a
spatial axis of input extent ``n`` and output extent ``m`` the window of
output ``o`` is ``[o*n/m, ((o+1)*n + m - 1)/m)`` (non-negative int32
divisions, so truncation is the floor).  When ``m`` divides ``n`` every
window has the constant size ``n/m`` and starts at ``o*n/m``: the tap loop
has a constant trip count and the divisor is a constant (the common case,
``7x7 -> 1x1`` or ``8x8 -> 4x4``).  The reduction loops over the spatial
axes, in layout order, innermost the layout's last spatial axis.
Max starts at the dtype's lowest value (floats use the NaN-propagating
``max``, as ``np.max``); the average accumulates as the fixed-window
average does (:mod:`.nn_pool`: float32 for float32/float16 data, exact
int32/int64 for integers) and divides truncating toward zero.
"""

from __future__ import annotations

from typing import Sequence

from ....ir.dtype import DType
from ....ir.ops.nn_pool_adaptive import adaptive_letters
from ...kernel import ir as K
from ..registry import ArgValue, LowerContext, anchor_lowering, out_tensor
from .common import tensor
from .nn_conv import accumulator_dtype, iadd, idx, imul, isub


def _lowest(dtype: DType) -> K.Const:
    if dtype.is_float:
        return K.Const(float("-inf"), dtype)
    return K.Const(K.dtype_range(dtype)[0], dtype)


def _int_acc(dtype: DType, taps: int) -> DType:
    lo, hi = K.dtype_range(dtype)
    return DType.INT32 if max(abs(lo), hi) * max(taps, 1) < 2**31 else DType.INT64


def _adaptive(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type, sinks,
              is_max: bool) -> K.Stmt:
    data = tensor(args[0])
    t = out_tensor(out_type)
    layout = attrs.layout
    spatial = adaptive_letters(attrs)
    n_in = {c: int(data.shape[layout.index(c)]) for c in spatial}
    n_out = {c: int(t.shape[i]) for i, c in enumerate(layout)}
    widest = 1
    for c in spatial:
        n, m = n_in[c], n_out[c]
        widest *= max(-((-(o + 1) * n) // m) - (o * n) // m for o in range(m))
    if is_max:
        acc_t = t.dtype
    elif t.dtype.is_float:
        acc_t = accumulator_dtype(t.dtype, t.dtype)
    else:
        acc_t = _int_acc(t.dtype, widest)
    outs = {c: ctx.index_var("o" + c.lower()) for c in layout}
    decls: list[K.Stmt] = []
    lo: dict[str, K.Expr] = {}
    size: dict[str, K.Expr | int] = {}
    for c in spatial:
        n, m, o = n_in[c], n_out[c], outs[c]
        if n % m == 0:
            lo[c], size[c] = imul(o, n // m), n // m
            continue
        s, e = ctx.scalar(c.lower() + "s", DType.INT32), ctx.scalar(c.lower() + "e", DType.INT32)
        decls += [K.Decl(s, K.div(imul(o, n), idx(m))),
                  K.Decl(e, K.div(iadd(imul(o, n), n + m - 1), idx(m)))]
        lo[c], size[c] = s, isub(e, s)
    acc = ctx.scalar("acc", acc_t)
    taps = {c: ctx.index_var("i" + c.lower()) for c in spatial}
    x = K.cast(acc_t, data.read(tuple(idx(taps[c] if c in taps else outs[c]) for c in layout)))
    if is_max:
        update = K.maximum(acc, x) if acc_t.is_float else K.select(K.lt(acc, x), x, acc)
    else:
        update = K.add(acc, x)
    red: K.Stmt = K.Assign(acc, update)
    for c in reversed(spatial):
        red = K.for_range(taps[c], idx(size[c]), red, start=lo[c])
    if is_max:
        value: K.Expr = acc
    else:
        count: K.Expr | int = 1
        for c in spatial:
            sc = size[c]
            count = count * sc if isinstance(count, int) and isinstance(sc, int) \
                else K.mul(idx(count), idx(sc), no_wrap=True)
        divisor = K.Const(count, acc_t) if isinstance(count, int) else K.cast(acc_t, count)
        value = K.div(acc, divisor)
    body: K.Stmt = K.block(*decls, K.Decl(acc, _lowest(acc_t) if is_max else K.Const(0, acc_t)),
                           red, sinks[0](tuple(idx(outs[c]) for c in layout),
                                         K.cast(t.dtype, value)))
    for c in reversed(layout):
        body = K.for_range(outs[c], n_out[c], body)
    return body


@anchor_lowering("nn.adaptive_avg_pool1d", "nn.adaptive_avg_pool2d", "nn.adaptive_avg_pool3d")
def _adaptive_avg(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type, sinks):
    return _adaptive(ctx, args, attrs, out_type, sinks, False)


@anchor_lowering("nn.adaptive_max_pool1d", "nn.adaptive_max_pool2d", "nn.adaptive_max_pool3d")
def _adaptive_max(ctx: LowerContext, args: Sequence[ArgValue], attrs, out_type, sinks):
    return _adaptive(ctx, args, attrs, out_type, sinks, True)
