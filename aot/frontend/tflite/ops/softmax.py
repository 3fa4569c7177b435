"""SOFTMAX: float32 as ``nn.softmax`` on the last axis of ``beta * x``;
quantized as ``qnn.softmax`` (TFLite's reference integer kernels, see
``aot/ir/ops/qnn_softmax.py``).

The parameters given to ``qnn.softmax`` are the ones TFLite's kernel
computes with, not the output tensor's: TFLite's ``SoftmaxPrepare``
accepts an int8 output scale within 0.1% of 1/256 (zero point -128) and an
int16 one within 0.1% of 1/32768 (zero point 0; the input zero point must
be 0 too) and then computes as if they were exact; the reference kernel
ignores a uint8 output's parameters altogether (1/256, zero point 0).
Parameters TFLite refuses are refused here.  An int8 or uint8 input with
an int16 output (a mixed-type softmax) keeps the float fallback
(``qnn.dequantize`` -> ``nn.softmax`` -> ``qnn.quantize``).
"""

from __future__ import annotations

import numpy as np

from ....ir.dtype import DType
from ....ir.expr import Expr
from ..graph import Op
from ..registry import converter
from .util import float_fallback, qparams, require_float

#: per dtype: (output scale, output zero point) of TFLite's kernel
_CANONICAL = {DType.INT8: (1 / 256, -128), DType.UINT8: (1 / 256, 0),
              DType.INT16: (1 / 32768, 0)}


def _float(op: Op, x: Expr) -> Expr:
    beta = float(op.option("beta", 1.0))
    if beta != 1.0:
        x = op.call("multiply", [x, op.constant(np.float32(beta))])
    return op.call("nn.softmax", [x], axis=-1)


def _check(op: Op, dtype: DType, in_zp: int, out_scale: float, out_zp: int) -> None:
    scale, zp = _CANONICAL[dtype]
    if dtype is DType.UINT8:
        return
    if dtype is DType.INT16 and in_zp != 0:
        raise op.error(f"an int16 softmax needs input zero point 0, got {in_zp}")
    if out_zp != zp or abs(float(np.float32(out_scale)) - scale) > 0.001 * scale:
        raise op.error(f"a {dtype} softmax needs output scale 1/{round(1 / scale)} and zero "
                       f"point {zp} (TFLite's), got {out_scale!r} and {out_zp}")


@converter("SOFTMAX")
def convert_softmax(op: Op) -> list[Expr]:
    t_in, t_out = op.tensor(0), op.output()
    if t_in.quant is None or t_in.dtype not in _CANONICAL:
        require_float(op)
        return [_float(op, op.input(0))]
    if t_out.dtype is not t_in.dtype:
        return [float_fallback(op, [0], lambda xs: _float(op, xs[0]))]
    q_in, q_out = qparams(op, t_in), qparams(op, t_out)
    in_zp = int(q_in.zero_point[0])
    _check(op, t_in.dtype, in_zp, float(q_out.scale[0]), int(q_out.zero_point[0]))
    scale, zp = _CANONICAL[t_in.dtype]
    beta = float(np.float32(op.option("beta", 1.0)))
    return [op.call("qnn.softmax", [op.input(0), op.constant(np.float32(q_in.scale[0])),
                                    op.constant(np.int32(in_zp)), op.constant(np.float32(scale)),
                                    op.constant(np.int32(zp))], axis=-1, beta=beta)]
