"""Pooling and reductions: AVERAGE_POOL_2D, MAX_POOL_2D, MEAN.

NHWC pools (``layout="NHWC"``) with TFLite's ``SAME`` padding, whose
average counts only the taps inside the input (``count_include_pad``
false).

Quantized pools work on the stored integers, as TFLite's kernels do
(input and output share their parameters).  MAX_POOL_2D is the max of the
integers.  AVERAGE_POOL_2D is TFLite's integer average, composed from
int32 operators: the window sums (``nn.avg_pool2d`` over ``K * x`` with
padding counted, ``K`` the window size, which is exactly the sum), the
number of taps inside the input per output position (a constant), and
the sum divided by it rounded half away from zero,
``(sum +- count / 2) / count`` with C's truncating division.  Both then
clamp to the fused activation's range.  Quantized MEAN (int8, uint8, and
int16 with zero points 0 as TFLite requires) is ``qnn.mean``, TFLite's
reference integer mean (:mod:`aot.ir.ops.qnn_reduce`).
"""

from __future__ import annotations

import numpy as np

from ....ir.dtype import DType
from ....ir.expr import Expr
from ..graph import Op
from ..registry import converter
from .conv import spatial_padding
from .util import (NONE, activation_range, clip_to, const_ints, fused_activation,
                   is_quantized, normalize_axis, qparams, require_float, scale_of,
                   zero_point_of)


def _pool_attrs(op: Op) -> dict:
    shape = op.tensor(0).shape
    if len(shape) != 4:
        raise op.error(f"the input {list(shape)} must be 4-d (NHWC)")
    size = (int(op.option("filter_height", 1)), int(op.option("filter_width", 1)))
    strides = (int(op.option("stride_h", 1)), int(op.option("stride_w", 1)))
    if min(size + strides) < 1:
        raise op.error(f"filter {size} and strides {strides} must be positive")
    padding = spatial_padding(op, shape[1:3], size, strides, (1, 1))
    return dict(pool_size=size, strides=strides, padding=padding, layout="NHWC")


def _require_same_params(op: Op) -> None:
    x_q, y_q = qparams(op, op.tensor(0)), qparams(op, op.output())
    if (x_q.scale[0], x_q.zero_point[0]) != (y_q.scale[0], y_q.zero_point[0]):
        raise op.error("a quantized pool needs the same scale and zero point on its input and "
                       "output")


def _tap_counts(op: Op, attrs: dict) -> np.ndarray:
    """The number of window taps inside the input per output position,
    shaped ``(1, OH, OW, 1)``."""
    _, h, w, _ = op.tensor(0).shape
    _, oh, ow, _ = op.output().shape
    top, left = attrs["padding"][:2]

    def valid(n_out: int, size: int, k: int, stride: int, pad: int) -> np.ndarray:
        start = np.arange(n_out) * stride - pad
        return np.minimum(start + k, size) - np.maximum(start, 0)
    (kh, kw), (sh, sw) = attrs["pool_size"], attrs["strides"]
    counts = np.outer(valid(oh, h, kh, sh, top), valid(ow, w, kw, sw, left))
    return counts.reshape(1, oh, ow, 1).astype(np.int32)


def _integer_average(op: Op, attrs: dict) -> Expr:
    _require_same_params(op)
    (kh, kw) = attrs["pool_size"]
    x = op.call("cast", [op.input(0)], dtype=DType.INT32)
    scaled = op.call("multiply", [x, op.constant(np.int32(kh * kw))])
    sums = op.call("nn.avg_pool2d", [scaled], count_include_pad=True, **attrs)
    counts = _tap_counts(op, attrs)
    half = op.constant(counts // 2)
    rounded = op.call("where", [op.call("greater", [sums, op.constant(np.int32(0))]),
                                op.call("add", [sums, half]),
                                op.call("subtract", [sums, half])])
    avg = op.call("divide", [rounded, op.constant(counts)])
    code = int(op.option("fused_activation_function", NONE))
    avg = clip_to(op, avg, *activation_range(op, code, op.output()))
    return op.call("cast", [avg], dtype=op.output().dtype)


@converter("AVERAGE_POOL_2D")
def convert_average_pool(op: Op) -> list[Expr]:
    attrs = _pool_attrs(op)
    if is_quantized(op):
        return [_integer_average(op, attrs)]
    require_float(op)
    return [fused_activation(op, op.call("nn.avg_pool2d", [op.input(0)],
                                         count_include_pad=False, **attrs))]


@converter("MAX_POOL_2D")
def convert_max_pool(op: Op) -> list[Expr]:
    attrs = _pool_attrs(op)
    if is_quantized(op):
        _require_same_params(op)
    else:
        require_float(op)
    return [fused_activation(op, op.call("nn.max_pool2d", [op.input(0)], **attrs))]


@converter("MEAN")
def convert_mean(op: Op) -> list[Expr]:
    rank = len(op.tensor(0).shape)
    axes = sorted({normalize_axis(op, a, rank) for a in const_ints(op, 1, "axes")})
    keep = bool(op.option("keep_dims", False))

    x_t = op.tensor(0)
    if is_quantized(op) or (x_t.dtype is DType.INT16 and x_t.quant is not None):
        return [_quantized_mean(op, tuple(axes), keep)]
    require_float(op)
    return [op.call("mean", [op.input(0)], axis=tuple(axes), keepdims=keep)]


def _quantized_mean(op: Op, axes: tuple[int, ...], keep: bool) -> Expr:
    x_t, y_t = op.tensor(0), op.output()
    if y_t.dtype is not x_t.dtype:
        raise op.error(f"input '{x_t.name}' is {x_t.type_name} but output '{y_t.name}' is "
                       f"{y_t.type_name}; TFLite requires the same type")
    x_q, y_q = qparams(op, x_t), qparams(op, y_t)
    if x_t.dtype is DType.INT16 and (int(x_q.zero_point[0]) or int(y_q.zero_point[0])):
        raise op.error("quantized int16 MEAN needs zero points 0 (TFLite's requirement)")
    return op.call("qnn.mean", [op.input(0), scale_of(op, x_q), zero_point_of(op, x_q),
                                scale_of(op, y_q), zero_point_of(op, y_q)],
                   axis=axes, keepdims=keep)
