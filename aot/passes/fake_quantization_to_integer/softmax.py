"""``quantize(nn.softmax(dequantize(q)))`` finished as ``qnn.softmax``
(TFLite's integer softmax, ``aot/ir/ops/qnn_softmax.py``) with the
quantize's parameters.

Applies to an 8-bit per-tensor Exact operand (int8 or uint8) quantized
per tensor to the same dtype, rows of at most 4095 elements, and an input
scale TFLite's ``PreprocessSoftmaxScaling`` represents without clamping
(``2**-26 < s < 32``).  The int16 path is not used: its interpolated
tables are a few 2**-15 off, more than the budget in 16-bit steps.

Error bound (``e_i`` of the package note, in steps ``s_out`` of the
quantize).  Against the exact real softmax ``p`` of the dequantized row,
the integer result before its final rounding is off by at most

    (3e-7 + n * 1.5e-6 + 2**-31) / s_out

with ``n`` the row length: gemmlowp's ``exp`` is within 2.3e-7 absolute
(measured on 2 million Q5.26 inputs), each term is rounded to Q12.19
(2**-20) in the sum, terms below ``diff_min`` (``exp(-15.5)`` at most)
are dropped, and the reciprocal (5e-9 relative), the input multiplier
(``32 * 2**-31`` relative in the exponent) and the Q0.31 products add
less than 1e-7; the sum is at least 1 (the row maximum's ``exp(0)``), so
absolute errors of the sum are relative errors of ``p``; the output
multiplier of ``2**-31 / s_out`` is within ``2**-31`` relative and the
result is rounded once.  For output scales 1/256 (TFLite) or 1/255
(onnxruntime's quantizer) and a 12-class softmax this is 0.005 of a
step; the region stays in float when the bound exceeds the budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...ir import quant
from ...ir.expr import Call
from ...ir.ops.qnn_softmax import MAX_ROW, QnnSoftmaxAttrs, int8_params, output_multiplier
from .representation import BUDGET, I8, U8, Core, QSite, make_call, make_cell, tensor_type

if TYPE_CHECKING:
    from .analysis import Analysis

__all__ = ["softmax_core", "softmax_error"]


def softmax_error(n: int, out_scale: float) -> float:
    """The bound of the module note, in output steps."""
    return (3e-7 + n * 1.5e-6 + 2.0 ** -31) / out_scale


def softmax_core(an: Analysis, node: Call, site: QSite) -> Core | None:
    x = an.exact(node.args[0])
    t = tensor_type(node)
    out = site.params
    if x is None or t is None or not x.params.per_tensor or not out.per_tensor \
            or x.params.dtype not in (I8, U8) or out.dtype != x.params.dtype:
        return None
    ndim = len(t.shape)
    if ndim == 0:
        return None
    axis = node.attrs.axis % ndim  # type: ignore[attr-defined]
    n = int(t.shape[axis])
    s_in, s_out = float(x.params.scale.reshape(-1)[0]), float(out.scale.reshape(-1)[0])
    if n > MAX_ROW[x.params.dtype] or not s_in * 2.0 ** 26 < (1 << 31) - 1:
        return None
    try:
        int8_params(s_in, 1.0)
        output_multiplier(s_out)
    except quant.QuantizationError:
        return None
    err = softmax_error(n, s_out)
    if err > BUDGET:
        return None
    expr = make_call("qnn.softmax", x.expr, x.params.scale_arg(), x.params.zero_point_arg(),
                     out.scale_arg(), out.zero_point_arg(), attrs=QnnSoftmaxAttrs(axis=axis),
                     like=node)
    return Core(expr, err, make_cell(node, x.cell))
