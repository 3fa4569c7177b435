"""Elementwise binary operators: ADD, SUB, MUL, MAXIMUM, MINIMUM, with
NumPy broadcasting (TFLite's, up to rank 6 in its kernels) and the fused
activation of ADD, SUB and MUL.

Quantized: ADD and MUL are ``qnn.add``/``qnn.mul``, which implement
TFLite's int8/uint8 reference kernels bit for bit.  SUB is ``qnn.add`` of
the negated right operand: TFLite's SUB is its ADD with the right input's
multiplier negated, and the negation is exact in the stored integers --
``q' = (qmin + qmax) - q`` with zero point ``(qmin + qmax) - zp`` stands for
exactly ``-(scale * (q - zp))`` and stays in range (``-1 - q`` for int8,
``255 - q`` for uint8) -- so the fixed-point products are the same
integers.  MAXIMUM and MINIMUM compare the stored integers, as TFLite's
kernel does (its converter gives inputs and output one set of parameters).

16x8 ADD (int16 operands and output, zero points 0): LiteRT's general-scale
int16 path, TFLite's 8-bit algorithm with 15 bits of headroom instead of 20,
which is ``qnn.add`` on int16.  LiteRT takes another kernel (a saturating
fixed-point add of power-of-two scales) when ``pot_scale_int16`` is set --
the schema's default -- and all three scales are powers of two; such
models are refused.
"""

from __future__ import annotations

import numpy as np

from ....ir.expr import Expr
from ..graph import Op
from ..registry import converter
from ....ir.dtype import DType
from .util import fused_activation, is_quantized, qparams, require_float, scale_of, zero_point_of

_FLOAT = {"ADD": "add", "SUB": "subtract", "MUL": "multiply", "MAXIMUM": "maximum",
          "MINIMUM": "minimum"}


@converter("ADD", "SUB", "MUL")
def convert_arith(op: Op) -> list[Expr]:
    a, b = op.input(0), op.input(1)
    if op.name == "ADD" and is_quantized(op, 0, (DType.INT16,)):
        return [_add_16x8(op, a, b)]
    if not is_quantized(op):
        require_float(op)
        return [fused_activation(op, op.call(_FLOAT[op.name], [a, b]))]
    if op.dtype(a) != op.dtype(b):
        raise op.error(f"the inputs have types {op.dtype(a)} and {op.dtype(b)}")
    a_q, b_q = qparams(op, op.tensor(0)), qparams(op, op.tensor(1))
    y_q = qparams(op, op.output())
    b_scale, b_zp = scale_of(op, b_q), zero_point_of(op, b_q)
    if op.name == "SUB":
        info = np.iinfo(op.dtype(b).np)
        flip = int(info.min) + int(info.max)
        b = op.call("subtract", [op.constant(np.asarray(flip, op.dtype(b).np)), b])
        b_zp = op.constant(np.int32(flip - int(b_q.zero_point[0])))
    name = "qnn.mul" if op.name == "MUL" else "qnn.add"
    y = op.call(name, [a, b, scale_of(op, a_q), zero_point_of(op, a_q), b_scale, b_zp,
                       scale_of(op, y_q), zero_point_of(op, y_q)])
    return [fused_activation(op, y)]


def _is_power_of_two(scale: float) -> bool:
    mantissa, _ = np.frexp(np.float64(np.float32(scale)))
    return bool(mantissa == 0.5)


def _add_16x8(op: Op, a: Expr, b: Expr) -> Expr:
    ts = [op.tensor(0), op.tensor(1), op.output()]
    if any(t.dtype is not DType.INT16 for t in ts):
        raise op.error("int16 ADD needs int16 inputs and output")
    qs = [qparams(op, t) for t in ts]
    if any(int(q.zero_point[0]) != 0 for q in qs):
        raise op.error("int16 ADD needs zero points 0 on its inputs and output")
    if bool(op.option("pot_scale_int16", True)) and all(_is_power_of_two(q.scale[0])
                                                        for q in qs):
        raise op.error("int16 ADD with power-of-two scales and pot_scale_int16 runs TFLite's "
                       "power-of-two kernel, which is not supported")
    y = op.call("qnn.add", [a, b, scale_of(op, qs[0]), zero_point_of(op, qs[0]),
                            scale_of(op, qs[1]), zero_point_of(op, qs[1]),
                            scale_of(op, qs[2]), zero_point_of(op, qs[2])])
    return fused_activation(op, y)


@converter("MAXIMUM", "MINIMUM")
def convert_min_max(op: Op) -> list[Expr]:
    if not is_quantized(op):
        require_float(op)
    return [op.call(_FLOAT[op.name], [op.input(0), op.input(1)])]
