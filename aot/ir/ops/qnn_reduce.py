"""qnn.mean: the quantized mean over axes, as TFLite's reference
``MEAN`` computes it (part of the qnn family, see :mod:`aot.ir.ops.qnn`).

``qnn.mean(data, input_scale, input_zero_point, output_scale,
output_zero_point; axis, keepdims, exclude)`` -- Relay's ``ReduceAttrs``
(the axes and result shape exactly as ``mean``); data int8, uint8 or
int16, the result has its dtype; the four parameters are scalars.

Design note
-----------
TFLite's reference ``MEAN`` for 8- and 16-bit data
(``reference_ops::QuantizedMeanOrSum`` in ``reference/reduce.h``, with the
multiplier of ``PrepareMeanOrSum`` in ``kernels/reduce.cc``) folds the
division by the element count ``n`` into the fixed-point rescaling, so
the whole operator is integer (:func:`mean_multiplier`)::

    (M, s)  = QuantizeMultiplier(double(input_scale) / double(output_scale))
    k       = min(floor(log2 n), 32, 31 + s)
    M'      = int32((int64(M) << k) / n)        (truncating)
    s'      = s - k
    out     = clamp(MultiplyByQuantizedMultiplier(int32(sum q - izp * n), M', s') + ozp)

``sum q`` is the int32 sum of the raw codes (TFLite's ``temp_sum``); the
subtraction is done in 64 bits and truncated to int32, as TFLite's
``static_cast<U>``.  ``MultiplyByQuantizedMultiplier`` is the double-
rounding one (``quant.multiply_by_quantized_multiplier``).  An empty
reduction (``n == 0``) gives 0, TFLite's initial output.  TFLite requires
zero points 0 for int16 (the importer keeps that to LiteRT; the operator
takes any).
"""

from __future__ import annotations

import math
from typing import Sequence

from .. import quant
from ..registry import Solved
from ..types import Type
from .common import DType, PatternKind, RelationError, TensorType, as_array, defop, np, tensor_arg
from .qnn_common import io_scalar_params, scales, with_params, zero_points
from .reduce import ReduceAttrs, reduce_axes, reduce_shape

FAMILY = "qnn"

_MEAN_IN = (DType.INT8, DType.UINT8, DType.INT16)


def mean_multiplier(in_scale: float, out_scale: float, count: int) -> tuple[int, int]:
    """``(M', s')`` of the design note: ``input_scale / output_scale /
    count`` as TFLite's ``QuantizedMeanOrSum`` forms it (``count >= 1``)."""
    s_in = float(scales(np.asarray(in_scale, np.float32), "input_scale").reshape(()))
    s_out = float(scales(np.asarray(out_scale, np.float32), "output_scale").reshape(()))
    qm = quant.quantize_multiplier(s_in / s_out)
    k = min(count.bit_length() - 1, 32, 31 + qm.shift)
    return int((qm.multiplier << k) // count), qm.shift - k


def quantized_mean(data: np.ndarray, axes: tuple[int, ...], keepdims: bool, in_scale: float,
                   in_zp: int, out_scale: float, out_zp: int) -> np.ndarray:
    """The design note's arithmetic on an integer array."""
    count = math.prod(data.shape[a] for a in axes)
    total = quant.wrap_int32(np.sum(data.astype(np.int64), axis=axes, keepdims=keepdims))
    if count == 0:
        return np.zeros(np.shape(total), data.dtype)
    m, s = mean_multiplier(in_scale, out_scale, count)
    shifted = quant.wrap_int32(total - np.int64(in_zp) * count)
    out = quant.multiply_by_quantized_multiplier(shifted, m, s) + out_zp
    return quant.saturate(quant.wrap_int32(out), data.dtype)


def _mean_rel(args: Sequence[Type], attrs: ReduceAttrs) -> Type | Solved | None:
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    if data.dtype not in _MEAN_IN:
        raise RelationError(f"data must be int8, uint8 or int16, got {data}")
    axes = reduce_axes(data.ndim, attrs)
    out = TensorType(reduce_shape(data.shape, axes, attrs.keepdims), data.dtype)
    return with_params(out, io_scalar_params(args))


def _mean(args: Sequence[np.ndarray], attrs: ReduceAttrs, out: Type) -> np.ndarray:
    data, s_in, z_in, s_out, z_out = (np.asarray(a) for a in args)
    result = quantized_mean(data, reduce_axes(data.ndim, attrs), attrs.keepdims,
                            float(np.float32(s_in.reshape(()))),
                            int(zero_points(z_in).reshape(())),
                            float(np.float32(s_out.reshape(()))),
                            int(zero_points(z_out).reshape(())))
    return as_array(result, DType.from_numpy(data.dtype))


defop("qnn.mean", arity=5, rel=_mean_rel, pattern=PatternKind.COMM_REDUCE, compute=_mean,
      doc="quantized mean over axes: the int32 sum rescaled by input_scale / output_scale / n "
          "in fixed point (TFLite's reference MEAN)", attrs=ReduceAttrs, family=FAMILY)

__all__ = ["mean_multiplier", "quantized_mean"]
