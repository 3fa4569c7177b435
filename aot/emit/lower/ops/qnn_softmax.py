"""Lowering of qnn.softmax (``aot/ir/ops/qnn_softmax.py``) as an anchor:
the reference's integer arithmetic, bit for bit.

Design note
-----------
Like ``nn.softmax`` (:mod:`.nn`), a row reduction: loops over every axis
but ``axis``, and per row three passes over the axis -- the maximum, the
sum of exponentials, then each element handed to the sink -- with the
exponential recomputed in the last pass (TFLite's reference does the
same; no scratch row).  Everything known at compile time is computed in
Python by the reference's own functions and appears as literals: the
input multiplier, ``diff_min``, the output rescaling; the scales must
therefore be constants (a run-time scale is a :class:`LoweringError`).
The int16 path's two 513-entry tables are ``static const int16_t``
arrays (:meth:`~aot.emit.lower.registry.LowerContext.constant_table`),
read with TFLite's interpolation.  No float arithmetic is generated.

Row statements (int8/uint8; see :mod:`.gemmlowp` for the fixed-point
steps): ``mx`` the row maximum; ``sum += keep ? RDBPOT(exp, 12) : 0``;
``h = clz(sum)`` (``sum >= 2**19``, the maximum's ``exp(0)``); the
reciprocal of ``(sum << h) - 2**31``; per row the final shift ``t = 31 +
nbou - sh`` and its rounding term; per element ``keep ? (SRDHM(recip,
exp) * m) / 2**t rounded half up : 0`` (int64, :func:`round_shift_up
<aot.ir.ops.qnn_softmax.round_shift_up>`'s overflow-free form) plus the
zero point, saturated.  A difference below ``diff_min`` is clamped to it before the
shift (its value is discarded; this keeps the shift in range).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ....ir.dtype import DType
from ....ir.ops.qnn_softmax import (ACCUM_INTEGER_BITS, DIFF_INTEGER_BITS, Int8Params,
                                    QnnSoftmaxAttrs,
                                    int8_params, int16_lut, int16_multiplier,
                                    output_multiplier)
from ....ir import quant
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import (Index, LowerContext, LoweringError, Sink, TensorValue, anchor_lowering,
                        loop_nest)
from .common import tensor
from .fixed_point import I32, I64, Multiplier, i32, i64, multiply_double, saturate
from .gemmlowp import (Seq, count_leading_zeros_positive, exp_on_negative_values,
                       one_over_one_plus_x_for_x_in_0_1, rdbpot, srdhm)
from .qnn import check_scales, checked, constant_of, scalar_param

__all__: list[str] = []

_OP = "qnn.softmax"
I16 = DType.INT16


def _scale(ctx: LowerContext, p: TensorValue, what: str) -> float:
    check_scales(_OP, ctx, p, what)
    data = constant_of(ctx, p)
    if data is None:
        raise LoweringError(f"{_OP}: {what} must be a compile-time constant")
    return float(np.asarray(data, np.float32).reshape(-1)[0])


def _static(qm: quant.QuantizedMultiplier) -> Multiplier:
    return Multiplier(i32(qm.multiplier), i32(qm.shift))


def _rows(ctx: LowerContext, shape: tuple[int, ...], axis: int,
          body: Callable[[Callable[[K.Expr], Index]], list[K.Stmt]]) -> K.Stmt:
    outer = shape[:axis] + shape[axis + 1:]

    def row(idx: Index) -> list[K.Stmt]:
        return body(lambda k: (*idx[:axis], k, *idx[axis:]))
    return loop_nest(ctx, outer, row, "r")


def _row_max(ctx: LowerContext, x: TensorValue, at: Callable[[K.Expr], Index],
             n: int) -> tuple[list[K.Stmt], K.Var]:
    lo, _ = K.dtype_range(x.dtype)
    mx = ctx.scalar("max", x.dtype)
    k = ctx.index_var("k")
    return [K.Decl(mx, K.Const(lo, x.dtype)),
            K.for_range(k, n, K.Assign(mx, K.maximum(mx, x.read(at(k)))))], mx


def _int8_rows(ctx: LowerContext, x: TensorValue, s_in: float, s_out: float, z_out: K.Expr,
               attrs: QnnSoftmaxAttrs, axis: int, sink: Sink) -> K.Stmt:
    p = checked(_OP, lambda: int8_params(s_in, attrs.beta))
    assert isinstance(p, Int8Params)
    om = checked(_OP, lambda: output_multiplier(s_out))
    assert isinstance(om, quant.QuantizedMultiplier)
    # the final shift t = 31 + nbou - sh, nbou = 12 - h, h in [1, 12]
    t_max = 31 + ACCUM_INTEGER_BITS - 1 - om.shift
    n = x.shape[axis]

    def exp_of(s: Seq, at: Callable[[K.Expr], Index], mx: K.Var,
               k: K.Expr) -> tuple[K.Var, K.Var]:
        d = s.let(K.sub(K.cast(I32, x.read(at(k))), K.cast(I32, mx)), "d")
        keep = s.let(K.ge(d, i32(p.diff_min)), "keep")
        clamped = K.maximum(d, i32(p.diff_min))
        scaled = s.let(srdhm(K.shl(clamped, p.left_shift) if p.left_shift else clamped,
                             i32(p.multiplier)), "sd")
        return exp_on_negative_values(s, scaled, DIFF_INTEGER_BITS), keep

    def body(at: Callable[[K.Expr], Index]) -> list[K.Stmt]:
        stmts, mx = _row_max(ctx, x, at, n)
        total = ctx.scalar("sum", I32)
        stmts.append(K.Decl(total, i32(0)))
        k = ctx.index_var("k")
        s = Seq(ctx)
        e, keep = exp_of(s, at, mx, k)
        s.assign(total, K.add(total, K.select(keep, rdbpot(e, ACCUM_INTEGER_BITS), i32(0))))
        stmts.append(K.for_range(k, n, s.stmts))
        r = Seq(ctx)
        h = count_leading_zeros_positive(r, total)
        shifted = r.let(K.sub(K.shl(total, h), i32(quant.INT32_MIN)), "ss")
        recip = one_over_one_plus_x_for_x_in_0_1(r, shifted)
        t = r.let(K.sub(i32(31 + ACCUM_INTEGER_BITS - om.shift), h), "t")
        tc = r.let(K.minimum(t, i32(63)), "tc") if t_max >= 64 else t
        half = r.let(K.shl(i64(1), K.sub(tc, i32(2))), "half")
        stmts += r.stmts
        k2 = ctx.index_var("k")
        o = Seq(ctx)
        e2, keep2 = exp_of(o, at, mx, k2)
        scaled = K.mul(K.cast(I64, srdhm(recip, e2)), i64(om.multiplier))
        rounded = K.shr(K.add(K.shr(scaled, 1), half), K.sub(tc, i32(1)))
        value = K.cast(I32, rounded)
        if t_max >= 64:
            value = K.select(K.ge(t, i32(64)), i32(0), value)
        out = K.add(K.select(keep2, value, i32(0)), K.cast(I32, z_out))
        o.stmts.append(sink(at(k2), saturate(out, x.dtype)))
        stmts.append(K.for_range(k2, n, o.stmts))
        return stmts
    return _rows(ctx, x.shape, axis, body)


def _lookup(s: Seq, table: TensorValue, v: K.Expr) -> K.Var:
    """TFLite's int16 ``LUTLookup`` of an int32 ``v`` in ``[-32768, 32767]``."""
    vv = s.let(v, "lv")
    index = s.let(K.add(K.shr(vv, 7), i32(256)), "li")
    base = s.let(K.cast(I32, table.read((index,))), "lb")
    nxt = K.cast(I32, table.read((K.add(index, i32(1), no_wrap=True),)))
    slope = K.cast(I32, K.cast(I16, K.sub(nxt, base)))
    delta = K.shr(K.add(K.mul(slope, K.bit_and(vv, i32(0x7F))), i32(64)), 7)
    return s.let(K.cast(I32, K.cast(I16, K.add(base, delta))), "lut")


def _clamp16(v: K.Expr) -> K.Expr:
    return K.minimum(K.maximum(v, i32(-32768)), i32(32767))


def _int16_rows(ctx: LowerContext, x: TensorValue, s_in: float, s_out: float, z_out: K.Expr,
                attrs: QnnSoftmaxAttrs, axis: int, sink: Sink) -> K.Stmt:
    qm = checked(_OP, lambda: int16_multiplier(s_in, attrs.beta))
    rq = checked(_OP, lambda: quant.quantize_multiplier(2.0 ** -15 / s_out))
    assert isinstance(qm, quant.QuantizedMultiplier) and isinstance(rq, quant.QuantizedMultiplier)
    exp_table = ctx.constant_table(int16_lut("exp"), I16)
    recip_table = ctx.constant_table(int16_lut("recip"), I16)
    n = x.shape[axis]

    def exp_of(s: Seq, at: Callable[[K.Expr], Index], mx: K.Var, k: K.Expr) -> K.Var:
        d = K.sub(K.cast(I32, x.read(at(k))), K.cast(I32, mx))
        scaled = K.add(multiply_double(d, _static(qm)), i32(32767))
        return _lookup(s, exp_table, _clamp16(scaled))

    def body(at: Callable[[K.Expr], Index]) -> list[K.Stmt]:
        stmts, mx = _row_max(ctx, x, at, n)
        total = ctx.scalar("sum", I32)
        stmts.append(K.Decl(total, i32(0)))
        k = ctx.index_var("k")
        s = Seq(ctx)
        e = exp_of(s, at, mx, k)
        s.assign(total, K.add(total, e))
        stmts.append(K.for_range(k, n, s.stmts))
        r = Seq(ctx)
        h = count_leading_zeros_positive(r, total)
        shifted = K.cast(I32, K.shr(K.add(K.shl(K.cast(I64, total), K.sub(h, i32(1))),
                                          i64(1 << 13)), 14))
        sym = K.add(shifted, i32(-((1 << 15) + (1 << 16))))
        recip = _lookup(r, recip_table, _clamp16(sym))
        right = r.let(K.sub(i32(31), h), "rs")
        rounding = r.let(K.shl(i64(1), K.sub(right, i32(1))), "rnd")
        stmts += r.stmts
        k2 = ctx.index_var("k")
        o = Seq(ctx)
        e2 = exp_of(o, at, mx, k2)
        q = K.shr(K.add(K.mul(K.cast(I64, e2), K.cast(I64, recip)), rounding), right)
        q15 = K.cast(I32, K.minimum(K.maximum(q, i64(0)), i64(32767)))
        identity = (rq.multiplier, rq.shift) == (1 << 30, 1)     # exactly 1.0: x unchanged
        out = K.add(q15 if identity else multiply_double(q15, _static(rq)), K.cast(I32, z_out))
        o.stmts.append(sink(at(k2), saturate(out, x.dtype)))
        stmts.append(K.for_range(k2, n, o.stmts))
        return stmts
    return _rows(ctx, x.shape, axis, body)


@anchor_lowering(_OP)
def _softmax(ctx: LowerContext, args: Sequence, attrs, out_type: Type,
             sinks: Sequence[Sink]) -> K.Stmt:
    assert isinstance(attrs, QnnSoftmaxAttrs)
    x, s_in, _z_in, s_out, z_out = (tensor(a) for a in args)
    si = _scale(ctx, s_in, "input_scale")
    so = _scale(ctx, s_out, "output_scale")
    axis = attrs.axis % x.ndim
    if x.size == 0:
        return K.block()
    if x.dtype is I16:
        return _int16_rows(ctx, x, si, so, scalar_param(z_out), attrs, axis, sinks[0])
    return _int8_rows(ctx, x, si, so, scalar_param(z_out), attrs, axis, sinks[0])
