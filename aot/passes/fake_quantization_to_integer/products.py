"""The accumulator rules of ``nn.batch_matmul`` and ``nn.conv2d_transpose``:
``qnn.batch_matmul`` / ``qnn.conv2d_transpose`` of the integer operands
(the ONNX QDQ forms of a 3-D MatMul and of ConvTranspose), like the dense
and convolution rules of :mod:`.accumulators`.

The bound on the accumulator is the float one: at most ``K * dev(x) *
dev(y)`` for a product over ``K`` terms (with a constant operand, its
largest sum of ``|w - zw|`` instead of ``K * dev(w)``); for a transposed
convolution every output sums at most ``I * KH * KW`` products (fewer with
strides), so the same form with ``K = I * KH * KW`` holds.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from ...ir.dtype import DType
from ...ir.expr import Call
from ...ir.ops.nn import BatchMatmulAttrs
from ...ir.ops.nn_conv import Conv2DTransposeAttrs
from ...ir.pattern import is_op
from .representation import (I32, SAFE, Acc, Exact, Rep, acc_scale, make_call, make_cell,
                             tensor_type)
from .rules import W, X, rule

if TYPE_CHECKING:
    from .analysis import Analysis

_DATA = (DType.INT8, DType.UINT8, DType.INT16)
_WEIGHT = (DType.INT8, DType.UINT8)


@rule("nn.batch_matmul", is_op("nn.batch_matmul")(X, W))
def _batch_matmul(an: Analysis, node: Call, nm: dict) -> Rep | None:
    x, y = an.exact(nm[X][0]), an.exact(nm[W][0])
    t, xt = tensor_type(node), tensor_type(nm[X][0])
    a = node.attrs
    assert isinstance(a, BatchMatmulAttrs)
    if x is None or y is None or t is None or xt is None or a.out_dtype not in (None,
                                                                                 DType.FLOAT32):
        return None
    if not (x.params.per_tensor and y.params.per_tensor) or x.params.dtype not in _DATA \
            or y.params.dtype not in _WEIGHT:
        return None
    k = int(xt.shape[1] if a.transpose_a else xt.shape[2])
    bound = x.params.deviation * k * y.params.deviation
    if bound >= SAFE:
        return None
    expr = make_call("qnn.batch_matmul", x.expr, y.expr, x.params.zero_point_arg(),
                     y.params.zero_point_arg(), x.params.scale_arg(), y.params.scale_arg(),
                     attrs=replace(a, out_dtype=I32), like=node)
    return Acc(expr, acc_scale(x, y), None, bound, 0.0, t, make_cell(node, x.cell, y.cell))


def _kernel_bound(an: Analysis, x: Exact, w: Exact, o_axis: int, taps: int) -> int:
    v = an.value(w.expr)
    if v is None:
        return x.params.deviation * taps * w.params.deviation
    z = w.params.zero_point_at(v.ndim)
    dev = np.abs(v.astype(np.int64) - z)
    other = tuple(i for i in range(v.ndim) if i != o_axis)
    sums = dev.sum(axis=other)
    return x.params.deviation * (int(np.max(sums)) if sums.size else 0)


@rule("nn.conv2d_transpose", is_op("nn.conv2d_transpose")(X, W))
def _conv2d_transpose(an: Analysis, node: Call, nm: dict) -> Rep | None:
    x, w = an.exact(nm[X][0]), an.exact(nm[W][0])
    t, wt = tensor_type(node), tensor_type(nm[W][0])
    a = node.attrs
    assert isinstance(a, Conv2DTransposeAttrs)
    if x is None or w is None or t is None or wt is None or not x.params.per_tensor:
        return None
    if x.params.dtype not in _DATA or w.params.dtype not in _WEIGHT \
            or a.out_dtype not in (None, DType.FLOAT32):
        return None
    o_axis = a.kernel_layout.index("O")
    if not w.params.per_tensor and (w.params.axis != o_axis or a.groups != 1):
        return None
    dims = [int(d) for d in wt.shape]
    taps = int(np.prod(dims)) // dims[o_axis]
    bound = _kernel_bound(an, x, w, o_axis, taps)
    if bound >= SAFE:
        return None
    expr = make_call("qnn.conv2d_transpose", x.expr, w.expr, x.params.zero_point_arg(),
                     w.params.zero_point_arg(), x.params.scale_arg(), w.params.scale_arg(),
                     attrs=replace(a, out_dtype=I32), like=node)
    axis = None if w.params.per_tensor else (a.out_layout or a.data_layout).index("C")
    return Acc(expr, acc_scale(x, w), axis, bound, 0.0, t, make_cell(node, x.cell, w.cell))
