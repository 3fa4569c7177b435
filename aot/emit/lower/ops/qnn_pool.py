"""Lowering of qnn.avg_pool2d (``aot/ir/ops/qnn_pool.py``) as an anchor:
the loop nest of ``nn.avg_pool2d`` (:func:`.nn_pool.avg_pool_nest`) with
the quantized average as its last step.

Design note
-----------
Without ``count_include_pad`` (TFLite's only mode) the nest sums the raw
values ``q`` -- the window sum ``T`` of TFLite's ``AveragePool`` --
reading the input buffer directly, and ``S = T - n * izp``.  With
``count_include_pad`` it sums ``q - izp`` (``S``), and ``T = S + n *
izp``.  A window with no tap inside the input (count 0) has ``S = 0`` and
divisor 1, so ``T = izp``.  Sums and divisions are int32 when they
provably fit (a literal zero point in the data's range), else int64.

The last step is the reference's: ``T / n`` rounded half away from zero
(``(T +- n/2) / n``, C division) when the parameters are equal,
else ``S / n`` rounded the same way and requantized with TFLite's double
rounding (:func:`.fixed_point.multiply_double`, the multiplier a literal
for constant scales).  Equality is decided at compile time for constant
parameters, else by a select in the kernel; a run-time multiplier and
that condition are computed once, before the nest.
"""

from __future__ import annotations

from typing import Sequence

from ....ir.dtype import DType
from ....ir.ops.nn_util import pair
from ....ir.types import Type
from ...kernel import ir as K
from ...kernel.cse import hoist
from ..registry import ArgValue, LowerContext, TensorValue, anchor_lowering, out_tensor
from .common import tensor
from .fixed_point import I32, I64, Multiplier, multiply_double, saturate
from .nn_pool import avg_pool_nest
from .qnn import check_scales, constant_of, rescale_at, scalar_param

__all__: list[str] = []


def _round_half_away_div(total: K.Expr, n: K.Expr) -> K.Expr:
    """``total / n`` (``n >= 1``) rounded half away from zero."""
    half = K.div(n, K.Const(2, n.dtype))
    return K.select(K.lt(total, K.Const(0, total.dtype)), K.div(K.sub(total, half), n),
                    K.div(K.add(total, half), n))


def _wide_dtype(ctx: LowerContext, data: TensorValue, z_in: TensorValue, attrs) -> DType:
    """int32 for the sums and the division when they provably fit (a
    literal zero point in the data's range: ``|S| <= 2 * max|q| * taps``,
    ``|T| + n/2 <= 4 * max|q| * taps``), else int64 (its division is a
    library call on 32-bit cores)."""
    lo, hi = K.dtype_range(data.dtype)
    kh, kw = pair(attrs.pool_size)
    z = constant_of(ctx, z_in)
    if z is None or not lo <= int(z.reshape(-1)[0]) <= hi:
        return I64
    return I32 if 4 * max(abs(lo), hi) * (kh * kw + 1) < 2**31 else I64


def _hoist(ctx: LowerContext, decls: list[K.Stmt], name: str, value: K.Expr) -> K.Var:
    """``value`` computed once before the nest (a run-time multiplier is a
    large expression: printed at every output it would blow up the C)."""
    inner, expr = hoist(value, ctx.fresh)
    var = ctx.scalar(name, value.dtype)
    decls.extend([*inner, K.Decl(var, expr)])
    return var


def _same(ctx: LowerContext, params: Sequence[TensorValue]) -> bool | K.Expr:
    """Whether the input and output parameters are equal: a Python bool
    when they are constants, else a kernel condition."""
    s_in, z_in, s_out, z_out = params
    values = [constant_of(ctx, p) for p in params]
    if all(v is not None for v in values):
        a, b, c, d = (v.reshape(-1)[0] for v in values)  # type: ignore[union-attr]
        return bool(a == c and int(b) == int(d))
    return K.logical_and(K.eq(scalar_param(s_in), scalar_param(s_out)),
                         K.eq(scalar_param(z_in), scalar_param(z_out)))


@anchor_lowering("qnn.avg_pool2d")
def _avg_pool2d(ctx: LowerContext, args: Sequence[ArgValue], attrs,
                out_type: Type, sinks):
    data, s_in, z_in, s_out, z_out = (tensor(a) for a in args)
    for p, what in ((s_in, "input_scale"), (s_out, "output_scale")):
        check_scales("qnn.avg_pool2d", ctx, p, what)
    dtype = out_tensor(out_type).dtype
    shifted = attrs.count_include_pad
    wide = _wide_dtype(ctx, data, z_in, attrs)
    izp = K.cast(wide, scalar_param(z_in))
    source = data
    if shifted:
        source = TensorValue(data.shape, wide,
                             lambda idx: K.sub(K.cast(wide, data.read(idx)), izp))
    decls: list[K.Stmt] = []
    same = _same(ctx, [s_in, z_in, s_out, z_out])
    if not isinstance(same, bool):
        same = _hoist(ctx, decls, "same", same)
    mult = rescale_at(ctx, "qnn.avg_pool2d", s_in, s_out, 0, 0)(())
    if mult.static is None:
        mult = Multiplier(_hoist(ctx, decls, "mult", mult.multiplier),
                          _hoist(ctx, decls, "shift", mult.shift))

    def sums(total: K.Expr, count: K.Expr | int) -> tuple[K.Expr, K.Expr, K.Expr]:
        """``(S, T, n)`` of the design note."""
        zero = K.Const(0, wide)
        if isinstance(count, int):
            n: K.Expr = K.Const(max(count, 1), wide)
            if shifted:
                return total, K.add(total, K.mul(n, izp)), n
            if count == 0:
                return zero, izp, n
            return K.sub(total, K.mul(n, izp)), total, n
        count_e = K.cast(wide, count)
        n = K.select(K.lt(count_e, K.Const(1, wide)), K.Const(1, wide), count_e)
        if shifted:
            return total, K.add(total, K.mul(n, izp)), n
        empty = K.eq(count_e, zero)
        return (K.select(empty, zero, K.sub(total, K.mul(n, izp))),
                K.select(empty, izp, total), n)

    def finish(total: K.Expr, count: K.Expr | int) -> K.Expr:
        s, t, n = sums(K.cast(wide, total), count)
        plain = saturate(_round_half_away_div(t, n), dtype)
        if same is True:
            return plain
        avg = K.cast(I32, _round_half_away_div(s, n))
        out = saturate(K.add(multiply_double(avg, mult), K.cast(I32, scalar_param(z_out))),
                       dtype)
        return out if same is False else K.select(same, plain, out)

    return K.block(*decls, avg_pool_nest(ctx, source, attrs, out_type, sinks[0], wide, finish))
