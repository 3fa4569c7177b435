"""Lowering of qnn.conv2d and qnn.dense (``aot/ir/ops/qnn_linear.py``):
the integer accumulators of quantized convolution and matrix product, as
anchors.

Design note
-----------
Both compute ``sum((x - x_zp) * (w - w_zp))`` exactly (the reference
accumulates in int64 and wraps to ``out_dtype``; accumulating in int32 --
int64 for an int64 result -- with wrapping arithmetic is congruent modulo
``2^bits``, hence bit-identical).

**Zero points are subtracted from the loaded operands**, not hoisted into
a correction term: in a register tile each loaded input value feeds every
output channel of the tile and each loaded weight every column, so the
subtraction costs one instruction per *load*, not per multiply-accumulate.
A correction ``- w_zp*sum(x) - x_zp*sum(w) + K*x_zp*w_zp`` would cost as
much (``sum(x)`` and, at clipped borders, ``sum(w)`` over the valid taps
are per-position running sums) unless the weight sums were precomputed
into a constant table, which lowerings cannot add yet.  A zero point that
is the literal 0 (TFLite's symmetric int8 weights) costs nothing.

**qnn.conv2d** is ``nn.conv2d``'s lowering (:mod:`.nn_conv`: register
tiles, padding by clipped tap ranges, no bounds test in the reduction
loops) applied to the shifted operands: padding taps are skipped, which is
exactly the reference's padding with the input zero point (``x_zp - x_zp
= 0``).  An operand whose zero point is the literal 0 is passed unchanged,
so buffer-backed operands keep nn_conv's hoisted flat indices; a shifted
one is a read ``int32(x) - zp`` (the C compiler hoists the loop-invariant
part of its index).

An int8 convolution of channels-first data with a constant symmetric
weight takes the dual 16-bit multiply-accumulate kernels instead: one
group, that of :mod:`.qnn_conv_dsp`; a depthwise 3x3 one (stride 1 or 2,
padding 0 or 1), that of :mod:`.qnn_depthwise`.

**qnn.dense** tiles ``UNITS`` output units: for each output row and tile
the shifted input element ``x[row, k] - x_zp`` is loaded once per ``k`` and
multiplied by the ``UNITS`` weights ``w[j, k]`` (contiguous in ``k`` in
every weight row), one scalar accumulator per unit.  Per-unit weight zero
points are loaded once per tile, outside the ``k`` loop.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ....ir.dtype import DType
from ....ir.ops.nn_conv import Conv2DAttrs
from ....ir.ops.qnn_linear import QnnConv2DAttrs, QnnDenseAttrs
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import (INDEX, ArgValue, Index, LowerContext, Sink, TensorValue, anchor_lowering,
                        lookup_lowering, out_tensor)
from .common import tensor
from .qnn import check_scales, scalar_param
from .qnn_conv_dsp import conv_int8_dsp
from .qnn_depthwise import depthwise_int8

__all__ = ["UNITS", "shifted", "kernel_zp_at", "accumulator_dtype"]

#: output units per register tile of qnn.dense (int32 accumulators; half as
#: many int64 ones)
UNITS = 4


def accumulator_dtype(out: DType) -> DType:
    return DType.INT64 if out.bits > 32 else DType.INT32


def _is_zero(e: K.Expr) -> bool:
    return isinstance(e, K.Const) and e.value == 0


def shifted(v: TensorValue, zp_at: Callable[[Index], K.Expr], acc: DType,
             probe: Index) -> TensorValue:
    """``v - zp`` in the accumulator type, or ``v`` itself when every zero
    point is the literal 0 (``probe``: a symbolic index)."""
    if _is_zero(zp_at(probe)):
        return v

    def read(idx: Index) -> K.Expr:
        return K.sub(K.cast(acc, v.read(idx)), K.cast(acc, zp_at(idx)))
    return TensorValue(v.shape, acc, read)


def kernel_zp_at(k_zp: TensorValue, channel_axis: int) -> Callable[[Index], K.Expr]:
    """The weight zero point of the output channel at ``channel_axis`` of
    an index: one for all channels, or one per channel."""
    if k_zp.size == 1:
        zero = scalar_param(k_zp)
        return lambda idx: zero
    return lambda idx: k_zp.read((idx[channel_axis],))


def _check(ctx: LowerContext, op: str, in_scale: TensorValue, k_scale: TensorValue) -> None:
    check_scales(op, ctx, in_scale, "input_scale")
    check_scales(op, ctx, k_scale, "kernel_scale")


# ================================================================ conv2d

@anchor_lowering("qnn.conv2d")
def _conv2d(ctx: LowerContext, args: Sequence[ArgValue], attrs: QnnConv2DAttrs,
            out_type: Type, sinks: Sequence[Sink]) -> K.Stmt:
    data, weight, in_zp, k_zp, in_scale, k_scale = (tensor(a) for a in args)
    _check(ctx, "qnn.conv2d", in_scale, k_scale)
    fast = conv_int8_dsp(ctx, data, weight, in_zp, k_zp, attrs, out_type, sinks)
    if fast is None:
        fast = depthwise_int8(ctx, data, weight, in_zp, k_zp, attrs, out_type, sinks)
    if fast is not None:
        return fast
    acc = accumulator_dtype(out_tensor(out_type).dtype)
    x_zero = scalar_param(in_zp)
    x = shifted(data, lambda idx: x_zero, acc, ())
    probe = tuple(ctx.index_vars(weight.ndim, "q"))
    w = shifted(weight, kernel_zp_at(k_zp, attrs.kernel_layout.index("O")), acc, probe)
    conv_attrs = Conv2DAttrs(strides=attrs.strides, padding=attrs.padding,
                             dilation=attrs.dilation, groups=attrs.groups,
                             data_layout=attrs.data_layout, kernel_layout=attrs.kernel_layout,
                             out_layout=attrs.out_layout)
    conv = lookup_lowering("nn.conv2d")
    assert conv is not None and conv.anchor
    return conv.fn(ctx, [x, w], conv_attrs, out_type, sinks)


# ================================================================= dense

def _idx(v: int) -> K.Const:
    return K.Const(v, INDEX)


@anchor_lowering("qnn.dense")
def _dense(ctx: LowerContext, args: Sequence[ArgValue], attrs: QnnDenseAttrs,
           out_type: Type, sinks: Sequence[Sink]) -> K.Stmt:
    data, weight, in_zp, k_zp, in_scale, k_scale = (tensor(a) for a in args)
    _check(ctx, "qnn.dense", in_scale, k_scale)
    t = out_tensor(out_type)
    shape, out = tuple(int(d) for d in t.shape), t.dtype
    acc_t = accumulator_dtype(out)
    units, reduce = weight.shape
    per_tile = UNITS if acc_t is DType.INT32 else UNITS // 2
    w_zp = kernel_zp_at(k_zp, 0)
    stmts: list[K.Stmt] = []
    x_zero = K.cast(acc_t, scalar_param(in_zp))
    if not isinstance(x_zero, K.Const):
        zx = ctx.scalar("zx", acc_t)
        stmts.append(K.Decl(zx, x_zero))
        x_zero = zx

    def tile(row: Index, j0: K.Expr, n: int) -> list[K.Stmt]:
        accs = [ctx.scalar("acc", acc_t) for _ in range(n)]
        body: list[K.Stmt] = [K.Decl(a, K.Const(0, acc_t)) for a in accs]
        zeros: list[K.Expr] = []
        for i in range(n):
            z = K.cast(acc_t, w_zp((K.add(j0, _idx(i), no_wrap=True) if i else j0,)))
            if not isinstance(z, K.Const):
                zv = ctx.scalar("zw", acc_t)
                body.append(K.Decl(zv, z))
                z = zv
            zeros.append(z)
        k = ctx.index_var("k")
        xv = ctx.scalar("x", acc_t)
        x_read = K.cast(acc_t, data.read((*row, k)))
        inner: list[K.Stmt] = [K.Decl(xv, x_read if _is_zero(x_zero) else K.sub(x_read, x_zero))]
        for i in range(n):
            j = K.add(j0, _idx(i), no_wrap=True) if i else j0
            wv = K.cast(acc_t, weight.read((j, k)))
            if not _is_zero(zeros[i]):
                wv = K.sub(wv, zeros[i])
            inner.append(K.Assign(accs[i], K.add(accs[i], K.mul(xv, wv))))
        body.append(K.for_range(k, reduce, K.block(*inner)))
        for i, a in enumerate(accs):
            j = K.add(j0, _idx(i), no_wrap=True) if i else j0
            body.append(sinks[0]((*row, j), K.cast(out, a)))
        return body

    def row_body(row: Index) -> list[K.Stmt]:
        full, rem = divmod(units, per_tile)
        parts: list[K.Stmt] = []
        if full:
            jt = ctx.index_var("jt")
            j0 = K.mul(jt, _idx(per_tile), no_wrap=True)
            parts.append(K.for_range(jt, full, K.block(*tile(row, j0, per_tile))))
        if rem:
            parts.append(K.block(*tile(row, _idx(full * per_tile), rem)))
        return parts

    rows = shape[:-1]
    vs = ctx.index_vars(len(rows), "r")
    nest: K.Stmt = K.block(*row_body(tuple(vs)))
    for v, extent in zip(reversed(vs), reversed(rows)):
        nest = K.for_range(v, extent, nest)
    return K.block(*stmts, nest)
