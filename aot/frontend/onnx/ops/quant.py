"""Quantization: QuantizeLinear, DequantizeLinear, QLinearConv,
QLinearMatMul.

Semantics (the specification's, and onnxruntime's CPU kernels'):

* QuantizeLinear ``y = saturate(round(x / scale) + zero_point)`` with
  round half to even, the division in float32.  The IR's
  ``qnn.quantize`` rounds half away from zero (TFLite), so it is composed:
  ``divide``, ``round`` (half to even), ``add`` of the zero point as a
  float, ``clip`` to the output type's range, ``cast``.
* DequantizeLinear ``y = (x - zero_point) * scale``, onnxruntime's
  ``float(int32(x) - zp) * scale`` in float32: exactly ``qnn.dequantize``,
  used for per-tensor and per-axis parameters; blocked parameters (21) are
  composed the same way from elementwise operators.
* QLinearConv/QLinearMatMul: the exact int32 accumulator
  ``sum((x - x_zp) * (w - w_zp))`` (+ the int32 bias) -- ``qnn.conv2d`` for
  the convolution, an int32 matrix product of the zero-point-shifted
  operands for MatMul -- then onnxruntime's requantization
  ``saturate(round(float(acc) * M) + y_zp)`` in float32 with ``M =
  x_scale * w_scale / y_scale`` computed in float32 in that order (one
  value per output channel for per-channel weight scales).  Their scales
  and zero points must be constants.

Per-axis parameters are 1-D along ``axis`` (default 1); ``block_size``
(21) gives parameters of the input's rank, each entry covering
``block_size`` consecutive elements along ``axis`` (repeated, then cut to
the input's extent).  Output types: uint8, int8, uint16, int16, uint4,
int4 (21) and the four float8 formats (19): ``y = saturate(x / scale)``
rounded to nearest even by the conversion, ``saturate`` (default 1)
clipping to the format's largest finite value first; a float8 zero point
must be absent or a constant zero, and float8 dequantization is
``float(x) * scale``.  A QDQ graph
(DequantizeLinear -> float operators -> QuantizeLinear) imports node by
node with exactly those meanings.

Precision: QuantizeLinear divides in the scale's type (``precision``
from 23), DequantizeLinear multiplies in its output type (the scale's, or
``output_dtype`` from 23); float32 is the common case.

Versions: QuantizeLinear/DequantizeLinear 10, 13 (axis), 19 (float16
scales; ``saturate`` only concerns float8), 21 (blocked, int16,
``output_dtype``), 23 (``precision``; DequantizeLinear ``output_dtype``),
24 and 25 (float8e8m0, int2 and uint2 only); QLinearConv 10; QLinearMatMul
10, 21 (float16 scales).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ....ir.dtype import DType
from ....ir.expr import Expr
from ..dtypes import onnx_type_name, to_dtype
from ..graph import Node
from ..registry import converter
from .util import normalize_axis, reshape_to, spatial_ints, spatial_pads
from .linear import matmul

_QTYPES = (DType.UINT8, DType.INT8, DType.UINT16, DType.INT16, DType.UINT4, DType.INT4)
_FLOAT8 = (DType.FLOAT8_E4M3FN, DType.FLOAT8_E4M3FNUZ, DType.FLOAT8_E5M2, DType.FLOAT8_E5M2FNUZ)
_DEQ_IN = (DType.UINT8, DType.INT8, DType.UINT16, DType.INT16, DType.INT32, DType.UINT4,
           DType.INT4)


def _param_layout(node: Node, p: Expr, x_shape: tuple[int, ...], axis: int,
                  block: int, what: str) -> str:
    """``scalar``, ``axis`` (1-D along the axis) or ``block``."""
    shape = node.shape(p)
    if shape not in ((), (1,)) or block > 0:
        normalize_axis(node, axis, len(x_shape))
    if block > 0:
        if len(shape) != len(x_shape):
            raise node.error(f"with block_size={block} the {what} must have the input's rank "
                             f"{len(x_shape)}, got {list(shape)}")
        for i, (d, s) in enumerate(zip(x_shape, shape)):
            want = -(-d // block) if i == axis else d
            if s != want:
                raise node.error(f"the {what} {list(shape)} does not block the input "
                                 f"{list(x_shape)} by {block} along axis {axis}")
        return "block"
    if shape in ((), (1,)):
        return "scalar"
    if len(shape) == 1 and x_shape and shape[0] == x_shape[axis]:
        return "axis"
    raise node.error(f"the {what} of shape {list(shape)} is neither per-tensor nor per-axis "
                     f"for the input {list(x_shape)} (axis {axis})")


def _broadcastable(node: Node, p: Expr, x_shape: tuple[int, ...], axis: int, block: int,
                   what: str) -> Expr:
    """``p`` reshaped or expanded to broadcast against the input."""
    layout = _param_layout(node, p, x_shape, axis, block, what)
    if layout == "scalar":
        return p if node.shape(p) == () else reshape_to(node, p, ())
    if layout == "axis":
        shape = [1] * len(x_shape)
        shape[axis] = x_shape[axis]
        return reshape_to(node, p, tuple(shape))
    full = node.call("repeat", [p], repeats=block, axis=axis)
    if node.shape(full)[axis] != x_shape[axis]:
        full = node.call("strided_slice", [full], begin=(0,), end=(x_shape[axis],),
                         strides=(1,), axes=(axis,))
    return full


def _axis_and_block(node: Node, x_shape: tuple[int, ...]) -> tuple[int, int]:
    block = int(node.attr("block_size", 0)) if node.version >= 21 else 0
    if block < 0:
        raise node.unsupported("block_size", block, "must not be negative")
    axis = int(node.attr("axis", 1)) if node.version >= 13 else 1
    rank = len(x_shape)
    if -rank <= axis < 0:
        axis += rank
    # an out-of-range axis only matters for per-axis or blocked parameters
    # (_param_layout refuses those)
    return axis, block


def _qrange(dt: DType) -> tuple[int, int]:
    info = ml_dtypes.iinfo(dt.np)
    return int(info.min), int(info.max)


def _as_float32(node: Node, e: Expr) -> Expr:
    return e if node.dtype(e) is DType.FLOAT32 else node.call("cast", [e], dtype=DType.FLOAT32)


def _saturate(node: Node, r: Expr, zp: Expr | None, out: DType) -> Expr:
    """``cast(clip(r + zp))`` for a float32 ``r`` of integer values."""
    if zp is not None:
        zp_value = node.ctx.const_value(zp)
        if zp_value is None or np.any(zp_value != 0):
            r = node.call("add", [r, _as_float32(node, zp)])
    lo, hi = _qrange(out)
    r = node.call("clip", [r], a_min=float(lo), a_max=float(hi))
    return node.call("cast", [r], dtype=out)


def _output_dtype(node: Node, zp: Expr | None) -> DType:
    if zp is not None:
        dt = node.dtype(zp)
    else:
        code = int(node.attr("output_dtype", 0)) if node.version >= 21 else 0
        dt = DType.UINT8 if code == 0 else to_dtype(code)
        if dt is None:
            raise node.error(f"output_dtype={onnx_type_name(code)} is not supported")
    if dt not in _QTYPES + _FLOAT8:
        raise node.error(f"quantizing to {dt} is not supported (uint8, int8, uint16, int16, "
                         "uint4, int4 and the float8 formats are)")
    return dt


def _float8_zero_point(node: Node, zp: Expr | None) -> None:
    """A float8 zero point must be absent or a constant zero (the reference
    ignores it when quantizing and refuses a non-zero one dequantizing)."""
    if zp is None:
        return
    value = node.ctx.const_value(zp)
    if value is None or np.any(np.asarray(value).astype(np.float32) != 0):
        raise node.error("a float8 zero point must be a constant zero")


def _float_attr(node: Node, name: str, default: DType) -> DType:
    """A float dtype from an ``output_dtype``/``precision`` attribute (0 or
    absent: ``default``)."""
    code = int(node.attr(name, 0) or 0)
    if code == 0:
        return default
    dt = to_dtype(code)
    if dt is None or not dt.is_float:
        raise node.error(f"{name}={onnx_type_name(code)} is not supported")
    return dt


def _as(node: Node, e: Expr, dt: DType) -> Expr:
    return e if node.dtype(e) is dt else node.call("cast", [e], dtype=dt)


_LATER = (23, 24, 25)


@converter("QuantizeLinear", (10, 13, 19, 21) + _LATER)
def convert_quantize(node: Node) -> list[Expr]:
    x, scale, zp = node.input(0), node.input(1), node.optional(2)
    if not node.dtype(x).is_float or not node.dtype(scale).is_float:
        raise node.error(f"quantizing {node.dtype(x)} tensors with {node.dtype(scale)} scales "
                         "is not supported")
    if zp is not None and node.version >= 21 and node.attr("output_dtype", 0) not in (0, None):
        if to_dtype(int(node.attr("output_dtype"))) != node.dtype(zp):
            raise node.error("output_dtype differs from the zero point's dtype")
    out = _output_dtype(node, zp)
    shape = node.shape(x)
    axis, block = _axis_and_block(node, shape)
    # the division is done in the scale's type (or ``precision``, 23+)
    precision = _float_attr(node, "precision", node.dtype(scale)) if node.version >= 23 \
        else node.dtype(scale)
    s = _broadcastable(node, _as(node, scale, precision), shape, axis, block, "scale")
    ratio = node.call("divide", [_as(node, x, precision), s])
    if out in _FLOAT8:
        # y = saturate(x / scale): rounded to nearest even by the cast
        _float8_zero_point(node, zp)
        r = _as_float32(node, ratio)
        if int(node.attr("saturate", 1)):
            r = node.call("clip", [r], a_min=float(out.min), a_max=float(out.max))
        return [node.call("cast", [r], dtype=out)]
    q = node.call("round", [_as_float32(node, ratio)])
    zp_b = None if zp is None else _broadcastable(node, zp, shape, axis, block, "zero point")
    return [_saturate(node, q, zp_b, out)]


@converter("DequantizeLinear", (10, 13, 19, 21) + _LATER)
def convert_dequantize(node: Node) -> list[Expr]:
    x, scale, zp = node.input(0), node.input(1), node.optional(2)
    dt = node.dtype(x)
    if dt in _FLOAT8:
        # y = float(x) * scale, in the output type
        _float8_zero_point(node, zp)
        if not node.dtype(scale).is_float:
            raise node.error(f"the scale must be a float tensor, got {node.dtype(scale)}")
        out = _float_attr(node, "output_dtype", node.dtype(scale)) if node.version >= 23 \
            else node.dtype(scale)
        shape = node.shape(x)
        axis, block = _axis_and_block(node, shape)
        s = _broadcastable(node, _as(node, scale, out), shape, axis, block, "scale")
        return [node.call("multiply", [node.call("cast", [x], dtype=out), s])]
    if dt not in _DEQ_IN:
        raise node.error(f"dequantizing {dt} tensors is not supported")
    if zp is not None and node.dtype(zp) != dt:
        raise node.error(f"the zero point has dtype {node.dtype(zp)} but the input {dt}")
    if not node.dtype(scale).is_float:
        raise node.error(f"the scale must be a float tensor, got {node.dtype(scale)}")
    # the output type (the scale's, or ``output_dtype``, 23+) is also the
    # precision of the multiplication
    out = _float_attr(node, "output_dtype", node.dtype(scale)) if node.version >= 23 \
        else node.dtype(scale)
    shape = node.shape(x)
    axis, block = _axis_and_block(node, shape)
    zp32 = node.call("cast", [zp], dtype=DType.INT32) if zp is not None else \
        node.constant(np.zeros(node.shape(scale), np.int32))
    layout = _param_layout(node, scale, shape, axis, block, "scale")
    if layout != "block" and out is DType.FLOAT32:
        scale32 = _as_float32(node, scale)
        s = scale32 if layout == "axis" or node.shape(scale) == () else \
            reshape_to(node, scale32, ())
        z = zp32 if layout == "axis" or node.shape(zp32) == () else \
            reshape_to(node, zp32, ())
        return [node.call("qnn.dequantize", [x, s, z], axis=axis if shape else -1,
                          out_dtype=DType.FLOAT32)]
    s = _broadcastable(node, _as(node, scale, out), shape, axis, block, "scale")
    z = _broadcastable(node, zp32, shape, axis, block, "zero point")
    diff = node.call("subtract", [node.call("cast", [x], dtype=DType.INT32), z])
    return [node.call("multiply", [node.call("cast", [diff], dtype=out), s])]


# ------------------------------------------------------ QLinearConv/MatMul

def _const_param(node: Node, i: int, what: str) -> np.ndarray:
    return np.asarray(node.const(i, what))


def _multiplier(node: Node, a_scale: np.ndarray, b_scale: np.ndarray,
                y_scale: np.ndarray) -> np.ndarray:
    """``a_scale * b_scale / y_scale`` in float32, in that order."""
    a = a_scale.astype(np.float32).reshape(-1)
    b = b_scale.astype(np.float32).reshape(-1)
    y = y_scale.astype(np.float32).reshape(-1)
    if a.size != 1 or y.size != 1:
        raise node.error("the input and output scales must be per-tensor")
    with np.errstate(all="ignore"):
        return (a[0] * b) / y[0]


def _requantize(node: Node, acc: Expr, mult: np.ndarray, mult_shape: tuple[int, ...],
                y_zp: np.ndarray) -> Expr:
    out = DType.from_numpy(y_zp.dtype)
    if out not in (DType.UINT8, DType.INT8):
        raise node.error(f"the output zero point has dtype {out}; uint8 or int8 is required")
    if y_zp.size != 1:
        raise node.error("the output zero point must be per-tensor")
    f = node.call("cast", [acc], dtype=DType.FLOAT32)
    m = mult.reshape(mult_shape) if mult.size > 1 else mult.reshape(())
    f = node.call("multiply", [f, node.constant(m.astype(np.float32))])
    r = node.call("round", [f])
    return _saturate(node, r, node.constant(y_zp.reshape(()).astype(np.float32)), out)


@converter("QLinearConv", (10,))
def convert_qlinear_conv(node: Node) -> list[Expr]:
    x, w = node.input(0), node.input(3)
    x_scale, x_zp = _const_param(node, 1, "x_scale"), _const_param(node, 2, "x_zero_point")
    w_scale, w_zp = _const_param(node, 4, "w_scale"), _const_param(node, 5, "w_zero_point")
    y_scale, y_zp = _const_param(node, 6, "y_scale"), _const_param(node, 7, "y_zero_point")
    x_shape, w_shape = node.shape(x), node.shape(w)
    if len(x_shape) not in (3, 4) or len(w_shape) != len(x_shape):
        raise node.error(f"only 1-d and 2-d convolutions are supported (input "
                         f"{list(x_shape)}, weight {list(w_shape)})")
    n = len(x_shape) - 2
    m = w_shape[0]
    if w_scale.size not in (1, m) or w_zp.size not in (1, m) or x_zp.size != 1:
        raise node.error("scales and zero points must be per-tensor (the weight's may be per "
                         "output channel)")
    kernel = list(w_shape[2:])
    strides = spatial_ints(node, "strides", n, 1)
    dilations = spatial_ints(node, "dilations", n, 1)
    pads = spatial_pads(node, x_shape[2:], kernel, strides, dilations,
                        dilated_same=True)
    if n == 1:
        x = node.call("expand_dims", [x], axis=2)
        w = node.call("expand_dims", [w], axis=2)
        kernel, strides, dilations, pads = [1] + kernel, [1] + strides, [1] + dilations, \
            [(0, 0)] + pads
    (top, bottom), (left, right) = pads
    w_zp_arg = w_zp.astype(np.int32).reshape(()) if w_zp.size == 1 else \
        w_zp.astype(np.int32).reshape(-1)
    w_scale_arg = w_scale.astype(np.float32).reshape(()) if w_scale.size == 1 else \
        w_scale.astype(np.float32).reshape(-1)
    acc = node.call("qnn.conv2d", [x, w, node.constant(x_zp.astype(np.int32).reshape(())),
                                   node.constant(w_zp_arg),
                                   node.constant(x_scale.astype(np.float32).reshape(())),
                                   node.constant(w_scale_arg)],
                    strides=tuple(strides), dilation=tuple(dilations),
                    padding=(top, left, bottom, right), groups=int(node.attr("group", 1)),
                    channels=m, kernel_size=tuple(kernel), out_dtype=DType.INT32)
    if node.has(8):
        b = node.input(8)
        if node.dtype(b) is not DType.INT32:
            raise node.error(f"the bias must be int32, got {node.dtype(b)}")
        acc = node.call("nn.bias_add", [acc, b], axis=1)
    mult = _multiplier(node, x_scale, w_scale, y_scale)
    y = _requantize(node, acc, mult, (m, 1, 1), y_zp)
    if n == 1:
        y = node.call("squeeze", [y], axis=(2,))
    return [y]


@converter("QLinearMatMul", (10, 21))
def convert_qlinear_matmul(node: Node) -> list[Expr]:
    a, b = node.input(0), node.input(3)
    a_scale, a_zp = _const_param(node, 1, "a_scale"), _const_param(node, 2, "a_zero_point")
    b_scale, b_zp = _const_param(node, 4, "b_scale"), _const_param(node, 5, "b_zero_point")
    y_scale, y_zp = _const_param(node, 6, "y_scale"), _const_param(node, 7, "y_zero_point")
    for e, what in ((a, "a"), (b, "b")):
        if node.dtype(e) not in (DType.UINT8, DType.INT8):
            raise node.error(f"{what} has dtype {node.dtype(e)}; uint8 or int8 is required")
    b_shape = node.shape(b)
    n_cols = b_shape[-1] if b_shape else 1
    if a_zp.size != 1 or b_zp.size not in (1, n_cols) or b_scale.size not in (1, n_cols) \
            or len(b_shape) > 2 and (b_zp.size > 1 or b_scale.size > 1):
        raise node.error("scales and zero points must be per-tensor (b's may be per column "
                         "of a 2-d b)")

    def shifted(e: Expr, zp: np.ndarray) -> Expr:
        e32 = node.call("cast", [e], dtype=DType.INT32)
        if not np.any(zp != 0):
            return e32
        return node.call("subtract", [e32, node.constant(zp.astype(np.int32).reshape(
            () if zp.size == 1 else (-1,)))])

    acc = matmul(node, shifted(a, a_zp), shifted(b, b_zp))
    mult = _multiplier(node, a_scale, b_scale, y_scale)
    return [_requantize(node, acc, mult, (mult.size,), y_zp)]
