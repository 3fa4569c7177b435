"""QUANTIZE and DEQUANTIZE.

QUANTIZE of a float32 tensor is ``qnn.quantize`` (TFLite's
``AffineQuantize``: float32 division, rounding half away from zero,
saturation), per tensor or per channel.  QUANTIZE of an int8/uint8 tensor
requantizes it (``qnn.requantize`` with TFLite's double rounding by
``input_scale / output_scale`` in double, as TFLite's ``Requantize``);
this is how converters give a model uint8 inputs and outputs.  DEQUANTIZE
of an int8/uint8 tensor is ``qnn.dequantize`` (exactly TFLite's
``scale * (q - zero_point)``), of a float16 tensor (float16 weights) a
``cast``.
"""

from __future__ import annotations

from ....ir.dtype import DType
from ....ir.expr import Expr
from ..graph import Op
from ..registry import converter
from .util import QTYPES, dequantize, qparams, quantize, requantize


@converter("QUANTIZE")
def convert_quantize(op: Op) -> list[Expr]:
    x_t, y_t = op.tensor(0), op.output()
    if y_t.dtype not in QTYPES:
        raise op.error(f"quantizing to {y_t.type_name} is not supported (int8, uint8 are)")
    if x_t.dtype is DType.FLOAT32:
        return [quantize(op, op.input(0), y_t)]
    if x_t.dtype in QTYPES:
        x_q = qparams(op, x_t)
        return [requantize(op, op.input(0), x_q.scale[0], int(x_q.zero_point[0]), y_t)]
    raise op.error(f"quantizing a {x_t.type_name} tensor is not supported")


@converter("DEQUANTIZE")
def convert_dequantize(op: Op) -> list[Expr]:
    x_t = op.tensor(0)
    if x_t.dtype is DType.FLOAT16:
        return [op.call("cast", [op.input(0)], dtype=DType.FLOAT32)]
    if x_t.dtype not in QTYPES:
        raise op.error(f"dequantizing a {x_t.type_name} tensor is not supported")
    return [dequantize(op, op.input(0), qparams(op, x_t, per_tensor=False))]
