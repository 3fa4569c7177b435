"""Helpers shared by the converter families: quantization parameters as IR
constants, fused activations, and the float fallback.

Quantized tensors
-----------------
A TFLite tensor of type int8 or uint8 with quantization parameters stands
for ``scale * (q - zero_point)``; the IR's qnn operators take the scale
(float32) and zero point (int32) as constant arguments, scalars or one
value per channel.  :func:`is_quantized` decides which path a converter
takes: an operator whose first input is such a tensor imports as integer
arithmetic.

Fused activations
-----------------
Float: ``RELU`` -> ``nn.relu``, ``RELU6`` -> ``clip(0, 6)``,
``RELU_N1_TO_1`` -> ``clip(-1, 1)``, ``TANH`` -> ``tanh``.  Quantized:
TFLite's ``CalculateActivationRangeQuantized``, a ``clip`` of the output
to ``[max(qmin, q(lo)), min(qmax, q(hi))]`` with ``q(f) = zero_point +
round(f / scale)`` (float32 division, rounded half away from zero).
``SIGN_BIT`` is refused.

The float fallback
------------------
Quantized operators the IR has only in float (a softmax with an int16 output of an
8-bit input) import as ``qnn.dequantize``
of each input, the float operator, and ``qnn.quantize`` to the output's
parameters.  TFLite's kernels compute these in fixed point (lookup tables,
integer exp approximations, integer averages), so results may differ from
TFLite's by one quantization step where the real value lies near a
rounding boundary; the tests bound this (at most one step, at least 99%
exact).  Integer versions of these operators are a separate issue.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ....ir.dtype import DType
from ....ir.expr import Expr
from ....ir.quant import round_half_away_from_zero
from ..graph import Op
from ..reader import QuantInfo, TensorInfo

#: the integer types of quantized activations
QTYPES = (DType.INT8, DType.UINT8)

NONE, RELU, RELU_N1_TO_1, RELU6, TANH, SIGN_BIT = range(6)
_FLOAT_RANGE = {RELU: (0.0, None), RELU6: (0.0, 6.0), RELU_N1_TO_1: (-1.0, 1.0)}


def is_quantized(op: Op, i: int = 0, dtypes: Sequence[DType] = QTYPES) -> bool:
    """Whether input ``i`` is a quantized (int8/uint8 -- or ``dtypes`` --
    with parameters) tensor."""
    t = op.tensor(i)
    return t.dtype in dtypes and t.quant is not None


def require_float(op: Op, i: int = 0) -> None:
    t = op.tensor(i)
    if t.dtype is not DType.FLOAT32:
        raise op.error(f"input '{t.name}' has type {t.type_name}; float32 or quantized "
                       "int8/uint8 is supported")


def qparams(op: Op, t: TensorInfo, per_tensor: bool = True) -> QuantInfo:
    q = op.quant(t)
    if per_tensor and q.per_channel:
        raise op.error(f"tensor '{t.name}' is quantized per channel; per-tensor quantization "
                       "is required here")
    return q


def scale_of(op: Op, q: QuantInfo) -> Expr:
    """The scale as a float32 constant: a scalar, or a vector per channel."""
    s = q.scale.astype(np.float32)
    return op.constant(s if q.per_channel else s.reshape(()))


def zero_point_of(op: Op, q: QuantInfo) -> Expr:
    z = q.zero_point.astype(np.int32)
    return op.constant(z if q.per_channel else z.reshape(()))


def dequantize(op: Op, x: Expr, q: QuantInfo) -> Expr:
    axis = q.axis if q.per_channel else -1
    return op.call("qnn.dequantize", [x, scale_of(op, q), zero_point_of(op, q)], axis=axis,
                   out_dtype=DType.FLOAT32)


def quantize(op: Op, x: Expr, t: TensorInfo) -> Expr:
    """``x`` (float32) quantized to the parameters and type of tensor ``t``."""
    q = qparams(op, t, per_tensor=False)
    axis = q.axis if q.per_channel else -1
    return op.call("qnn.quantize", [x, scale_of(op, q), zero_point_of(op, q)], axis=axis,
                   out_dtype=t.dtype)


def float_fallback(op: Op, inputs: Sequence[int], build: Callable[[list[Expr]], Expr],
                   out: int = 0) -> Expr:
    """``build`` over the dequantized ``inputs``, quantized to output ``out``
    (see the module docstring)."""
    floats = [dequantize(op, op.input(i), qparams(op, op.tensor(i), per_tensor=False))
              for i in inputs]
    return quantize(op, build(floats), op.output(out))


def activation_range(op: Op, code: int, t: TensorInfo) -> tuple[int, int]:
    """TFLite's quantized ``[act_min, act_max]`` of a fused activation for
    output tensor ``t``."""
    assert t.dtype is not None, "quantized tensors have a dtype"
    info = np.iinfo(t.dtype.np)
    lo, hi = int(info.min), int(info.max)
    if code == NONE:
        return lo, hi
    if code not in _FLOAT_RANGE:
        raise op.error(f"the fused activation {_name(code)} on a quantized output is not "
                       "supported")
    q = qparams(op, t)

    def quant(f: float) -> int:
        r = np.asarray(np.float32(f) / q.scale[0], dtype=np.float32)
        return int(q.zero_point[0]) + int(round_half_away_from_zero(r))

    f_lo, f_hi = _FLOAT_RANGE[code]
    lo = max(lo, quant(f_lo))
    if f_hi is not None:
        hi = min(hi, quant(f_hi))
    return lo, hi


def clip_to(op: Op, y: Expr, lo: int, hi: int) -> Expr:
    """``clip(y, lo, hi)`` on an integer tensor, nothing when the range is
    the whole dtype."""
    info = np.iinfo(op.dtype(y).np)
    if lo <= info.min and hi >= info.max:
        return y
    return op.call("clip", [y], a_min=float(lo), a_max=float(hi))


def fused_activation(op: Op, y: Expr, out: int = 0) -> Expr:
    """Apply the operator's ``fused_activation_function`` to ``y``."""
    return activation(op, y, int(op.option("fused_activation_function", NONE)), out)


def activation(op: Op, y: Expr, code: int, out: int = 0) -> Expr:
    """Apply the activation ``code`` (``RELU`` ...) to ``y``, which is
    quantized like output ``out`` when it is an integer tensor."""
    if op.dtype(y) in QTYPES + (DType.INT16,):
        return clip_to(op, y, *activation_range(op, code, op.output(out)))
    if code == NONE:
        return y
    if code == RELU:
        return op.call("nn.relu", [y])
    if code == TANH:
        return op.call("tanh", [y])
    if code in _FLOAT_RANGE:
        lo, hi = _FLOAT_RANGE[code]
        return op.call("clip", [y], a_min=lo, a_max=hi)
    raise op.error(f"the fused activation {_name(code)} is not supported")


def _name(code: int) -> str:
    names = ["NONE", "RELU", "RELU_N1_TO_1", "RELU6", "TANH", "SIGN_BIT"]
    return names[code] if 0 <= code < len(names) else f"#{code}"


def const_ints(op: Op, i: int, what: str) -> list[int]:
    return [int(v) for v in np.asarray(op.const(i, what)).reshape(-1)]


def normalize_axis(op: Op, axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise op.error(f"{what}={axis} is out of range for a tensor of rank {rank}")
    return axis + rank if axis < 0 else axis


def requantize(op: Op, x: Expr, factor: np.ndarray | np.floating, in_zp: int, t: TensorInfo,
               axis: int = -1, factor_over: float | None = None,
               rounding: str = "TFLITE") -> Expr:
    """``qnn.requantize`` of ``x`` to tensor ``t``'s zero point and type with
    TFLite's double rounding: ``(x - in_zp) * factor / t.scale`` (per
    ``axis`` when ``factor`` is a vector), or ``(x - in_zp) * factor`` when
    ``factor_over`` is 1.0 (the factor is then TFLite's float32 ratio)."""
    q = qparams(op, t)
    out_scale = scale_of(op, q) if factor_over is None else \
        op.constant(np.float32(factor_over))
    f = np.asarray(factor, np.float32)
    return op.call("qnn.requantize", [x, op.constant(f), op.constant(np.int32(in_zp)),
                                      out_scale, zero_point_of(op, q)],
                   axis=axis if f.ndim else -1, rounding=rounding, out_dtype=t.dtype)
