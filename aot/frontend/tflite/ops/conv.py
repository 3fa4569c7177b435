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

16x8 (int16 activations with zero point 0, int8 weights, int64 bias --
TFLite's default -- or int32 bias when ``quantized_bias_type`` says so):
CONV_2D and DEPTHWISE_CONV_2D accumulate in the bias's width
(``qnn.conv2d`` with ``out_dtype`` int64 or int32) and requantize with
TFLite's multiply of that width: ``rounding="TFLITE_INT64"`` (the 64-bit
``MultiplyByQuantizedMultiplier``, a 15-bit multiplier and one rounding)
for int64, ``"TFLITE"`` for int32.  FULLY_CONNECTED follows LiteRT's
reference ``FullyConnected`` for int16, which requantizes in double:
``round(double(acc) * (double(s_in) * double(s_w) / double(s_out)))``
(C ``round``, half away from zero), then the activation clamp -- imported
as exactly that float64 arithmetic (the factor a float64 constant per
output channel).  TFLite Micro's int16 kernel uses the 64-bit fixed-point
multiply instead; the two differ by one step near rounding boundaries.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....ir.dtype import DType
from ....ir.expr import Expr
from ...padding import same_padding
from ..graph import Op
from ..registry import converter
from .util import (QTYPES, activation_range, fused_activation, is_quantized, qparams,
                   require_float, requantize, scale_of, zero_point_of)

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
    if is_quantized(op) or is_16x8(op):
        y = _quantized(op, "qnn.conv2d", x, weight, o, 3, attrs)
    else:
        require_float(op)
        y = op.call("nn.conv2d", [x, weight], **attrs)
        if op.has(2):
            y = op.call("nn.bias_add", [y, op.input(2)], axis=3)
    return [fused_activation(op, y)]


#: TFLite's TensorType codes of ``quantized_bias_type``
_TFLITE_INT32, _TFLITE_INT64 = 2, 4


def is_16x8(op: Op) -> bool:
    """int16 activations (TFLite's 16x8 quantization)."""
    return is_quantized(op, 0, (DType.INT16,))


def accumulator_16x8(op: Op, bias: int) -> DType:
    """The accumulator of a 16x8 kernel: the bias's width; int64 without a
    bias unless ``quantized_bias_type`` is int32 (LiteRT reads the bias with
    that type, so an int32 bias needs it)."""
    declared = int(op.option("quantized_bias_type", 0))
    b_type = op.dtype(op.input(bias)) if op.has(bias) else None
    if b_type not in (None, DType.INT32, DType.INT64):
        raise op.error(f"the bias has type {b_type}; int64 or int32 is required with int16 "
                       "inputs")
    if b_type is DType.INT32 and declared != _TFLITE_INT32:
        raise op.error("an int32 bias with int16 inputs needs quantized_bias_type=INT32 "
                       "(LiteRT reads the bias as int64 otherwise)")
    if b_type is DType.INT64 and declared not in (0, _TFLITE_INT64):
        raise op.error("the int64 bias does not match quantized_bias_type")
    return DType.INT32 if declared == _TFLITE_INT32 else DType.INT64


def _check_16x8(op: Op, x_q) -> None:
    if op.tensor(1).dtype is not DType.INT8:
        raise op.error(f"the filter has type {op.tensor(1).type_name}; int8 is required with "
                       "int16 inputs")
    y = op.output()
    if y.dtype is not DType.INT16:
        raise op.error(f"the output has type {y.type_name}; int16 is required with int16 inputs")
    if int(x_q.zero_point[0]) != 0 or int(qparams(op, y).zero_point[0]) != 0:
        raise op.error("16x8 quantization needs zero points 0 on the input and output")


def _quantized(op: Op, name: str, x: Expr, weight: Expr, units: int, axis: int,
               attrs: dict) -> Expr:
    """The accumulator of ``name`` (qnn.conv2d or qnn.dense), plus the bias,
    requantized to the output (see the module docstring)."""
    x_q = qparams(op, op.tensor(0))
    w_t = op.tensor(1)
    wide = is_16x8(op)
    if wide:
        _check_16x8(op, x_q)
    elif w_t.dtype not in QTYPES:
        raise op.error(f"the filter has type {w_t.type_name}; int8 or uint8 is required "
                       "with quantized inputs (hybrid models are not supported)")
    w_q = qparams(op, w_t, per_tensor=False)
    if w_q.per_channel and w_q.scale.size != units:
        raise op.error(f"the filter has {w_q.scale.size} scales for {units} output channels")
    acc_t = accumulator_16x8(op, 2) if wide else DType.INT32
    acc = op.call(name, [x, weight, zero_point_of(op, x_q), zero_point_of(op, w_q),
                         scale_of(op, x_q), scale_of(op, w_q)], out_dtype=acc_t, **attrs)
    if op.has(2):
        b = op.input(2)
        if op.dtype(b) is not acc_t:
            raise op.error(f"the bias has type {op.dtype(b)}; {acc_t} is required")
        acc = op.call("nn.bias_add", [acc, b], axis=axis)
    if wide and name == "qnn.dense":
        return _float_requantize(op, acc, x_q.scale[0], w_q.scale)
    product = (x_q.scale[0] * w_q.scale).astype(np.float32)
    rounding = "TFLITE_INT64" if acc_t is DType.INT64 else "TFLITE"
    return requantize(op, acc, product if w_q.per_channel else product.reshape(()), 0,
                      op.output(), axis=axis, rounding=rounding)


def _float_requantize(op: Op, acc: Expr, in_scale: np.floating,
                      w_scales: np.ndarray) -> Expr:
    """LiteRT's int16 FULLY_CONNECTED requantization (see the module
    docstring): ``round(double(acc) * factor)`` with C's ``round``, clamped
    to the fused activation's range, as the output's type.  The factor is
    TFLite's double ``s_in * s_w / s_out``, per output unit (the last axis)."""
    y_t = op.output()
    out_scale = float(np.float32(qparams(op, y_t).scale[0]))
    factor = (float(np.float32(in_scale)) * w_scales.astype(np.float32).astype(np.float64)
              / out_scale)
    t = op.call("multiply", [op.call("cast", [acc], dtype=DType.FLOAT64),
                             op.constant(factor if factor.size > 1 else factor.reshape(()))])
    whole = op.call("trunc", [t])
    frac = op.call("abs", [op.call("subtract", [t, whole])])
    bump = op.call("where", [op.call("greater_equal", [frac, op.constant(np.float64(0.5))]),
                             op.call("sign", [t]), op.constant(np.float64(0.0))])
    rounded = op.call("cast", [op.call("add", [whole, bump])], dtype=DType.INT32)
    lo, hi = activation_range(op, int(op.option("fused_activation_function", 0)), y_t)
    assert y_t.dtype is not None
    clipped = op.call("clip", [rounded], a_min=float(lo), a_max=float(hi))
    return op.call("cast", [clipped], dtype=y_t.dtype)


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
    if is_quantized(op) or is_16x8(op):
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
