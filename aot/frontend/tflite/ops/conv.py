"""Convolutions and the fully connected layer: CONV_2D, DEPTHWISE_CONV_2D,
FULLY_CONNECTED.

Layouts stay TFLite's: data NHWC, CONV_2D kernels OHWI, and DEPTHWISE_CONV_2D
kernels ``1HWO``, which are reshaped (not transposed: the bytes are the
same) to ``HWOI`` with ``I = 1`` and ``groups = C_in``.  FULLY_CONNECTED
weights ``(units, in)`` are ``nn.dense``'s own layout; inputs of higher
rank are flattened to ``(-1, in)`` and, with ``keep_num_dims``, the result
is reshaped back.

Quantized (int8, or uint8 with per-tensor weights and a weight zero point):
``qnn.conv2d``/``qnn.dense`` give the exact int32 accumulator, the int32
bias is added, and ``qnn.requantize`` with TFLite's double rounding scales
it by ``input_scale * weight_scale / output_scale`` (per output channel for
per-channel weights) before the fused activation clamps it.  The factor
reaches ``qnn.requantize`` as ``float32(input_scale * weight_scale)`` over
``output_scale``: that is exactly TFLite's per-tensor computation
(``GetQuantizedConvolutionMultipler`` rounds the product to float32), while
its per-channel one multiplies in double.  The two can differ in the last
bits of the 31-bit fixed-point multiplier of a channel, which moves an
output by one step only when the exact result lies within about 2**-17 of a
step's rounding boundary.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....ir.dtype import DType
from ....ir.expr import Expr
from ...padding import same_padding
from ..graph import Op
from ..registry import converter
from .util import (QTYPES, fused_activation, is_quantized, qparams, require_float, requantize,
                   scale_of, zero_point_of)

SAME, VALID = 0, 1


def spatial_padding(op: Op, size: tuple[int, int], kernel: tuple[int, int],
                    strides: tuple[int, int], dilation: tuple[int, int]) -> tuple[int, ...]:
    """``(top, left, bottom, right)`` of the operator's ``padding`` option."""
    padding = int(op.option("padding", SAME))
    if padding == VALID:
        return (0, 0, 0, 0)
    if padding != SAME:
        raise op.error(f"padding={padding} is not supported (SAME or VALID are)")
    (top, bottom), (left, right) = (same_padding(n, k, s, d) for n, k, s, d in
                                    zip(size, kernel, strides, dilation))
    return (top, left, bottom, right)


def _window(op: Op, prefix: str) -> tuple[tuple[int, int], tuple[int, int]]:
    strides = (int(op.option("stride_h", 1)), int(op.option("stride_w", 1)))
    dilation = (int(op.option(f"dilation_h{prefix}", 1)), int(op.option(f"dilation_w{prefix}", 1)))
    if min(strides + dilation) < 1:
        raise op.error(f"strides {strides} and dilations {dilation} must be positive")
    return strides, dilation


def _kernel(op: Op, shape: tuple[int, ...]) -> Expr:
    """Input 1 with shape ``shape`` (a constant reshaped here, else a reshape)."""
    t = op.tensor(1)
    if t.data is not None:
        return op.constant(t.data.reshape(shape))
    return op.call("reshape", [op.input(1)], newshape=shape)


def _conv(op: Op, depthwise: bool) -> list[Expr]:
    x_t, w_t = op.tensor(0), op.tensor(1)
    if len(x_t.shape) != 4 or len(w_t.shape) != 4:
        raise op.error(f"input {list(x_t.shape)} and filter {list(w_t.shape)} must be 4-d")
    _, h, w, c = x_t.shape
    strides, dilation = _window(op, "_factor")
    if depthwise:
        _, kh, kw, o = w_t.shape
        if o % c:
            raise op.error(f"the filter's {o} channels are not a multiple of the input's {c}")
        weight, layout, groups = _kernel(op, (kh, kw, o, 1)), "HWOI", c
    else:
        o, kh, kw, ci = w_t.shape
        if c % ci:
            raise op.error(f"the input's {c} channels are not a multiple of the filter's {ci}")
        weight, layout, groups = op.input(1), "OHWI", c // ci
    attrs: dict[str, Any] = dict(strides=strides, dilation=dilation, groups=groups, channels=o,
                 padding=spatial_padding(op, (h, w), (kh, kw), strides, dilation),
                 kernel_size=(kh, kw), data_layout="NHWC", kernel_layout=layout)
    x = op.input(0)
    if is_quantized(op):
        y = _quantized(op, "qnn.conv2d", x, weight, o, 3, attrs)
    else:
        require_float(op)
        y = op.call("nn.conv2d", [x, weight], **attrs)
        if op.has(2):
            y = op.call("nn.bias_add", [y, op.input(2)], axis=3)
    return [fused_activation(op, y)]


def _quantized(op: Op, name: str, x: Expr, weight: Expr, units: int, axis: int,
               attrs: dict) -> Expr:
    """The accumulator of ``name`` (qnn.conv2d or qnn.dense), plus the bias,
    requantized to the output (see the module docstring)."""
    x_q = qparams(op, op.tensor(0))
    w_t = op.tensor(1)
    if w_t.dtype not in QTYPES:
        raise op.error(f"the filter has type {w_t.type_name}; int8 or uint8 is required "
                       "with quantized inputs (hybrid models are not supported)")
    w_q = qparams(op, w_t, per_tensor=False)
    if w_q.per_channel and w_q.scale.size != units:
        raise op.error(f"the filter has {w_q.scale.size} scales for {units} output channels")
    acc = op.call(name, [x, weight, zero_point_of(op, x_q), zero_point_of(op, w_q),
                         scale_of(op, x_q), scale_of(op, w_q)], out_dtype=DType.INT32, **attrs)
    if op.has(2):
        b = op.input(2)
        if op.dtype(b) is not DType.INT32:
            raise op.error(f"the bias has type {op.dtype(b)}; int32 is required")
        acc = op.call("nn.bias_add", [acc, b], axis=axis)
    product = (x_q.scale[0] * w_q.scale).astype(np.float32)
    return requantize(op, acc, product if w_q.per_channel else product.reshape(()), 0,
                      op.output(), axis=axis)


@converter("CONV_2D")
def convert_conv2d(op: Op) -> list[Expr]:
    return _conv(op, depthwise=False)


@converter("DEPTHWISE_CONV_2D")
def convert_depthwise_conv2d(op: Op) -> list[Expr]:
    return _conv(op, depthwise=True)


@converter("FULLY_CONNECTED")
def convert_fully_connected(op: Op) -> list[Expr]:
    x_t, w_t = op.tensor(0), op.tensor(1)
    if int(op.option("weights_format", 0)) != 0:
        raise op.error("only the DEFAULT weights format is supported")
    if len(w_t.shape) != 2:
        raise op.error(f"the weights have shape {list(w_t.shape)}; (units, inputs) is required")
    units, depth = w_t.shape
    n = int(np.prod(x_t.shape, dtype=np.int64))
    if not x_t.shape or n % depth:
        raise op.error(f"the input {list(x_t.shape)} does not flatten to rows of {depth}")
    x = op.input(0)
    if op.shape(x) != (n // depth, depth):
        x = op.call("reshape", [x], newshape=(n // depth, depth))
    if is_quantized(op):
        y = _quantized(op, "qnn.dense", x, op.input(1), units, 1, {"units": units})
    else:
        require_float(op)
        y = op.call("nn.dense", [x, op.input(1)], units=units)
        if op.has(2):
            y = op.call("nn.bias_add", [y, op.input(2)], axis=1)
    y = fused_activation(op, y)
    out = op.output().shape
    if op.shape(y) != out and int(np.prod(out, dtype=np.int64)) == n // depth * units:
        y = op.call("reshape", [y], newshape=out)
    return [y]
