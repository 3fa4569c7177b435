"""TRANSPOSE_CONV and BATCH_MATMUL.

TRANSPOSE_CONV (inputs: the output shape, a constant int32 vector; the
filter, OHWI with ``I`` the input's channels; the input; an optional bias)
is ``nn.conv2d_transpose`` / ``qnn.conv2d_transpose`` in NHWC with the
filter kept in OHWI.  TFLite's padding is that of the forward convolution
from the output back to the input (``ComputePaddingHeightWidth`` with the
output as the "input" size): ``total = (H_in - 1) * stride + K - H_out``,
``top = total // 2``; the scatter keeps output rows ``[0, H_out)``.  So the
crop is ``top`` before and ``total - top`` after; a negative total (an
output larger than the full scatter) is ``output_padding`` at the end.

Quantized (TFLite's per-channel ``reference_integer_ops::TransposeConv``):
int8 input with its zero point, symmetric int8 weights (TFLite ignores a
weight zero point; a non-zero one is refused), int32 bias, requantized with
TFLite's double rounding by ``input_scale * weight_scale / output_scale``
per output channel, then the fused activation's clamp.  16x8: int16 input
and output (zero points 0), int64 bias (TFLite's int64 scratch) and the
64-bit multiply (``rounding="TFLITE_INT64"``).  The factor is the float32
product over the output scale, as CONV_2D's (see :mod:`.conv`).

BATCH_MATMUL (``adj_x``/``adj_y`` transpose the last two axes of the
left/right operand) of rank-3 operands (a batch of 1 broadcasts) is
``nn.batch_matmul`` / ``qnn.batch_matmul``; rank-2 operands get a batch of
1.  Quantized int8 (``reference_ops::BatchMatMul`` with int32 accumulators):
both zero points subtracted, requantized with TFLite's double rounding by
``float32(lhs_scale * rhs_scale) / output_scale`` (TFLite's
``GetQuantizedConvolutionMultipler``); no fused activation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....ir.dtype import DType
from ....ir.expr import Expr
from ..graph import Op
from ..registry import converter
from .conv import SAME, VALID, accumulator_16x8
from .util import fused_activation, is_quantized, qparams, require_float, requantize, \
    scale_of, zero_point_of


def _transpose_pads(op: Op, out_size: int, in_size: int, kernel: int, stride: int
                    ) -> tuple[int, int, int]:
    """``(before, after, output_padding)`` along one axis."""
    padding = int(op.option("padding", SAME))
    if padding not in (SAME, VALID):
        raise op.error(f"padding={padding} is not supported (SAME or VALID are)")
    expected = -(-out_size // stride) if padding == SAME else (out_size - kernel + stride) // stride
    if expected != in_size:
        raise op.error(f"the output size {out_size} does not give the input size {in_size} "
                       f"(stride {stride}, filter {kernel})")
    total = (in_size - 1) * stride + kernel - out_size
    before = max(total, 0) // 2
    return before, total - before if total >= 0 else 0, max(-total, 0)


@converter("TRANSPOSE_CONV")
def convert_transpose_conv(op: Op) -> list[Expr]:
    out_shape = [int(v) for v in np.asarray(op.const(0, "output shape")).reshape(-1)]
    w_t, x_t = op.tensor(1), op.tensor(2)
    if len(out_shape) != 4 or len(w_t.shape) != 4 or len(x_t.shape) != 4:
        raise op.error(f"output shape {out_shape}, filter {list(w_t.shape)} and input "
                       f"{list(x_t.shape)} must be 4-d")
    o, kh, kw, ci = w_t.shape
    n, h, w, c = x_t.shape
    if ci != c or out_shape[3] != o or out_shape[0] != n:
        raise op.error(f"the filter {list(w_t.shape)} does not match the input "
                       f"{list(x_t.shape)} and output shape {out_shape}")
    sh, sw = int(op.option("stride_h", 1)), int(op.option("stride_w", 1))
    if min(sh, sw) < 1:
        raise op.error(f"strides {(sh, sw)} must be positive")
    top, bottom, extra_h = _transpose_pads(op, out_shape[1], h, kh, sh)
    left, right, extra_w = _transpose_pads(op, out_shape[2], w, kw, sw)
    attrs: dict[str, Any] = dict(strides=(sh, sw), padding=(top, left, bottom, right),
                 output_padding=(extra_h, extra_w), channels=o, kernel_size=(kh, kw),
                 data_layout="NHWC", kernel_layout="OHWI")
    x, weight = op.input(2), op.input(1)
    if not (is_quantized(op, 2) or is_quantized(op, 2, (DType.INT16,))):
        require_float(op, 2)
        y = op.call("nn.conv2d_transpose", [x, weight], **attrs)
        if op.has(3):
            y = op.call("nn.bias_add", [y, op.input(3)], axis=3)
        return [fused_activation(op, y)]
    return [fused_activation(op, _quantized_transpose_conv(op, x, weight, o, attrs))]


def _quantized_transpose_conv(op: Op, x: Expr, weight: Expr, units: int, attrs: dict) -> Expr:
    x_q = qparams(op, op.tensor(2))
    w_t = op.tensor(1)
    if w_t.dtype is not DType.INT8:
        raise op.error(f"the filter has type {w_t.type_name}; int8 is required")
    w_q = qparams(op, w_t, per_tensor=False)
    if np.any(w_q.zero_point != 0):
        raise op.error("the filter's zero point must be 0 (TFLite's kernel ignores it)")
    if w_q.per_channel and w_q.scale.size != units:
        raise op.error(f"the filter has {w_q.scale.size} scales for {units} output channels")
    wide = op.tensor(2).dtype is DType.INT16
    y_t = op.output()
    if wide and (y_t.dtype is not DType.INT16 or int(x_q.zero_point[0]) != 0
                 or int(qparams(op, y_t).zero_point[0]) != 0):
        raise op.error("16x8 TRANSPOSE_CONV needs an int16 output and zero points 0")
    if not wide and y_t.dtype is not op.tensor(2).dtype:
        raise op.error(f"the output has type {y_t.type_name}; {op.tensor(2).type_name} is "
                       "required")
    acc_t = accumulator_16x8(op, 3) if wide else DType.INT32
    acc = op.call("qnn.conv2d_transpose",
                  [x, weight, zero_point_of(op, x_q), op.constant(np.int32(0)),
                   scale_of(op, x_q), scale_of(op, w_q)], out_dtype=acc_t, **attrs)
    if op.has(3):
        b = op.input(3)
        if op.dtype(b) is not acc_t:
            raise op.error(f"the bias has type {op.dtype(b)}; {acc_t} is required")
        acc = op.call("nn.bias_add", [acc, b], axis=3)
    product = (x_q.scale[0] * w_q.scale).astype(np.float32)
    return requantize(op, acc, product if w_q.per_channel else product.reshape(()), 0, y_t,
                      axis=3, rounding="TFLITE_INT64" if acc_t is DType.INT64 else "TFLITE")


def _rank3(op: Op, i: int) -> Expr:
    t = op.tensor(i)
    if len(t.shape) == 3:
        return op.input(i)
    if len(t.shape) == 2:
        return op.call("reshape", [op.input(i)], newshape=(1, *t.shape))
    raise op.error(f"input {i} has shape {list(t.shape)}; rank 2 or 3 is supported")


@converter("BATCH_MATMUL")
def convert_batch_matmul(op: Op) -> list[Expr]:
    a, b = _rank3(op, 0), _rank3(op, 1)
    attrs: dict[str, Any] = dict(transpose_a=bool(op.option("adj_x", False)),
                 transpose_b=bool(op.option("adj_y", False)))
    if not is_quantized(op):
        require_float(op)
        y = op.call("nn.batch_matmul", [a, b], **attrs)
    else:
        ts = [op.tensor(0), op.tensor(1), op.output()]
        if any(t.dtype is not DType.INT8 for t in ts):
            raise op.error("quantized BATCH_MATMUL needs int8 inputs and output")
        qa, qb = qparams(op, ts[0]), qparams(op, ts[1])
        acc = op.call("qnn.batch_matmul", [a, b, zero_point_of(op, qa), zero_point_of(op, qb),
                                           scale_of(op, qa), scale_of(op, qb)],
                      out_dtype=DType.INT32, **attrs)
        product = np.float32(qa.scale[0] * qb.scale[0])
        y = requantize(op, acc, product, 0, ts[2])
    out = op.output().shape
    if op.shape(y) != out:
        y = op.call("reshape", [y], newshape=out)
    return [y]
