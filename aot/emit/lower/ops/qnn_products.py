"""Lowering of qnn.batch_matmul and qnn.conv2d_transpose
(``aot/ir/ops/qnn_products.py``): the float operators' anchors applied to
zero-point-shifted operands, as :mod:`.qnn_linear` lowers qnn.conv2d.

Design note
-----------
``nn.batch_matmul``'s product nest (:mod:`.nn`) and
``nn.conv2d_transpose``'s scatter-free gather nest (:mod:`.nn_conv`) are
exact for integer operands: they accumulate in the output's integer type
(int32, or int64 for an int64 result), whose wrapping sums are congruent to
the reference's int64 sums modulo ``2^bits``.  Each operand is read as
``int32(v) - zero_point`` (the subtraction costs one instruction per load;
see :mod:`.qnn_linear`'s note on why zero points are not hoisted into a
correction term), or passed unchanged when its zero point is the literal 0.
A transposed convolution never reads padding (taps outside the input are
skipped), so the shifted operands need no padding value.  A per-channel
kernel zero point is read at the output channel of each weight element:
``o`` for one group, ``(i // (I / groups)) * O_g + o`` for several.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

from ....ir.attrs import Attrs
from ....ir.ops.nn import BatchMatmulAttrs
from ....ir.ops.nn_conv import Conv2DTransposeAttrs
from ....ir.types import Type
from ...kernel import ir as K
from ..registry import (INDEX, ArgValue, Index, LowerContext, Sink, anchor_lowering,
                        lookup_lowering, out_tensor)
from .common import tensor
from .qnn import check_scales, scalar_param
from .qnn_linear import accumulator_dtype, shifted

__all__: list[str] = []


def _anchor(name: str):
    low = lookup_lowering(name)
    assert low is not None and low.anchor
    return low.fn


@anchor_lowering("qnn.batch_matmul")
def _batch_matmul(ctx: LowerContext, args: Sequence[ArgValue], attrs: Attrs,
                  out_type: Type, sinks: Sequence[Sink]) -> K.Stmt:
    assert isinstance(attrs, BatchMatmulAttrs)
    x, y, x_zp, y_zp, x_scale, y_scale = (tensor(a) for a in args)
    check_scales("qnn.batch_matmul", ctx, x_scale, "x_scale")
    check_scales("qnn.batch_matmul", ctx, y_scale, "y_scale")
    acc = accumulator_dtype(out_tensor(out_type).dtype)
    zx, zy = scalar_param(x_zp), scalar_param(y_zp)
    xs = shifted(x, lambda idx: zx, acc, ())
    ys = shifted(y, lambda idx: zy, acc, ())
    float_attrs = BatchMatmulAttrs(out_dtype=None, transpose_a=attrs.transpose_a,
                                   transpose_b=attrs.transpose_b)
    return _anchor("nn.batch_matmul")(ctx, [xs, ys], float_attrs, out_type, sinks)


def _output_channel(attrs: Conv2DTransposeAttrs, weight_shape: tuple[int, ...]
                    ) -> Callable[[Index], K.Expr]:
    """The output channel a weight element (at an index in the kernel
    layout) contributes to."""
    layout = attrs.kernel_layout
    i_axis, o_axis = layout.index("I"), layout.index("O")
    if attrs.groups == 1:
        return lambda idx: idx[o_axis]
    per_group_in = weight_shape[i_axis] // attrs.groups
    per_group_out = weight_shape[o_axis]

    def channel(idx: Index) -> K.Expr:
        group = K.floordiv(idx[i_axis], K.Const(per_group_in, INDEX))
        return K.add(K.mul(group, K.Const(per_group_out, INDEX), no_wrap=True), idx[o_axis],
                     no_wrap=True)
    return channel


@anchor_lowering("qnn.conv2d_transpose")
def _conv2d_transpose(ctx: LowerContext, args: Sequence[ArgValue], attrs: Attrs,
                      out_type: Type, sinks: Sequence[Sink]) -> K.Stmt:
    assert isinstance(attrs, Conv2DTransposeAttrs)
    data, weight, in_zp, k_zp, in_scale, k_scale = (tensor(a) for a in args)
    check_scales("qnn.conv2d_transpose", ctx, in_scale, "input_scale")
    check_scales("qnn.conv2d_transpose", ctx, k_scale, "kernel_scale")
    acc = accumulator_dtype(out_tensor(out_type).dtype)
    zx = scalar_param(in_zp)
    x = shifted(data, lambda idx: zx, acc, ())
    if k_zp.size == 1:
        zw = scalar_param(k_zp)
        w = shifted(weight, lambda idx: zw, acc, ())
    else:
        channel = _output_channel(attrs, tuple(int(d) for d in weight.shape))
        probe = tuple(ctx.index_vars(weight.ndim, "q"))
        w = shifted(weight, lambda idx: k_zp.read((channel(idx),)), acc, probe)
    float_attrs = replace(attrs, out_dtype=None)
    return _anchor("nn.conv2d_transpose")(ctx, [x, w], float_attrs, out_type, sinks)
