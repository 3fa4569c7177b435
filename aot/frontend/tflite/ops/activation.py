"""Activations: RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU, LOGISTIC, TANH,
HARD_SWISH (SOFTMAX has its own module, :mod:`.softmax`).

Float: the catalogue's operators (``nn.relu``, ``clip``,
``nn.leaky_relu``, ``sigmoid``, ``tanh``) and HARD_SWISH as TFLite's reference writes it,
``x * min(6, max(0, x + 3)) / 6``.

Quantized RELU, RELU6 and RELU_N1_TO_1 are integer, as TFLite's
``QuantizedReluX``: the input is requantized to the output's parameters
(``qnn.requantize``, double rounding, by the ratio
``input_scale / output_scale`` which TFLite computes in float32) and
clamped to the activation's range.  Quantized LEAKY_RELU is TFLite's
``QuantizeLeakyRelu``: inputs at or above the zero point are requantized
by ``input_scale / output_scale``, the others by
``input_scale * alpha / output_scale`` (both float32, as TFLite computes
them).  Quantized LOGISTIC, TANH and HARD_SWISH are ``qnn.sigmoid``,
``qnn.tanh`` and ``qnn.hardswish`` (TFLite's reference integer kernels,
:mod:`aot.ir.ops.qnn_nonlinear`), with TFLite's prepare-time checks
(LOGISTIC's output scale 1/256, HARD_SWISH's output multiplier below
one).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ....ir.expr import Expr
from ....ir.ops.qnn_nonlinear import hard_swish_params
from ....ir.quant import QuantizationError
from ..graph import Op
from ..registry import converter
from .util import (RELU, RELU6, RELU_N1_TO_1, activation, activation_range, clip_to,
                   float_fallback, is_quantized, qparams, require_float, requantize, scale_of,
                   zero_point_of)

_RELUS = {"RELU": RELU, "RELU6": RELU6, "RELU_N1_TO_1": RELU_N1_TO_1}


@converter("RELU", "RELU6", "RELU_N1_TO_1")
def convert_relu(op: Op) -> list[Expr]:
    code = _RELUS[op.name]
    x = op.input(0)
    if not is_quantized(op):
        require_float(op)
        return [activation(op, x, code)]
    x_q, y_t = qparams(op, op.tensor(0)), op.output()
    ratio = np.float32(x_q.scale[0]) / np.float32(qparams(op, y_t).scale[0])
    y = requantize(op, x, ratio, int(x_q.zero_point[0]), y_t, factor_over=1.0)
    return [clip_to(op, y, *activation_range(op, code, y_t))]


@converter("LEAKY_RELU")
def convert_leaky_relu(op: Op) -> list[Expr]:
    alpha = np.float32(op.option("alpha", 0.2))
    x = op.input(0)
    if not is_quantized(op):
        require_float(op)
        return [op.call("nn.leaky_relu", [x], alpha=float(alpha))]
    if not alpha > 0:
        raise op.error(f"alpha={alpha} is not supported with quantized tensors (it must be "
                       "positive)")
    x_q, y_t = qparams(op, op.tensor(0)), op.output()
    in_s, out_s = np.float32(x_q.scale[0]), np.float32(qparams(op, y_t).scale[0])
    zp = int(x_q.zero_point[0])
    identity = requantize(op, x, in_s / out_s, zp, y_t, factor_over=1.0)
    scaled = requantize(op, x, in_s * alpha / out_s, zp, y_t, factor_over=1.0)
    at_or_above = op.call("greater_equal", [x, op.constant(np.asarray(zp, op.dtype(x).np))])
    return [op.call("where", [at_or_above, identity, scaled])]


def _scalar(op: Op, value: float) -> Expr:
    return op.constant(np.float32(value))


def _hard_swish(op: Op, x: Expr) -> Expr:
    relu6 = op.call("clip", [op.call("add", [x, _scalar(op, 3.0)])], a_min=0.0, a_max=6.0)
    return op.call("divide", [op.call("multiply", [x, relu6]), _scalar(op, 6.0)])


_FLOAT: dict[str, Callable[[Op, Expr], Expr]] = {
    "LOGISTIC": lambda op, x: op.call("sigmoid", [x]),
    "TANH": lambda op, x: op.call("tanh", [x]),
    "HARD_SWISH": _hard_swish,
}


_QNN = {"LOGISTIC": "qnn.sigmoid", "TANH": "qnn.tanh", "HARD_SWISH": "qnn.hardswish"}


def _quantized_unary(op: Op) -> Expr:
    """``qnn.sigmoid`` / ``qnn.tanh`` / ``qnn.hardswish`` with TFLite's
    prepare-time checks."""
    x_t, y_t = op.tensor(0), op.output()
    if y_t.dtype is not x_t.dtype:
        raise op.error(f"input '{x_t.name}' is {x_t.type_name} but output '{y_t.name}' is "
                       f"{y_t.type_name}; TFLite requires the same type")
    x_q, y_q = qparams(op, x_t), qparams(op, y_t)
    if op.name == "LOGISTIC" and np.float32(y_q.scale[0]) != np.float32(1 / 256):
        raise op.error(f"quantized LOGISTIC needs output scale 1/256 (TFLite's requirement), "
                       f"got {float(y_q.scale[0])!r}")
    if op.name == "HARD_SWISH":
        try:
            hard_swish_params(float(x_q.scale[0]), float(y_q.scale[0]))
        except QuantizationError as e:
            raise op.error(str(e)) from None
    return op.call(_QNN[op.name], [op.input(0), scale_of(op, x_q), zero_point_of(op, x_q),
                                   scale_of(op, y_q), zero_point_of(op, y_q)])


@converter(*_FLOAT)
def convert_float_activation(op: Op) -> list[Expr]:
    build = _FLOAT[op.name]
    if is_quantized(op) and op.name in _QNN:
        return [_quantized_unary(op)]
    if is_quantized(op):
        return [float_fallback(op, [0], lambda xs: build(op, xs[0]))]
    require_float(op)
    return [build(op, op.input(0))]
