"""qnn.avg_pool2d: quantized average pooling (part of the qnn family, see
:mod:`aot.ir.ops.qnn`).

``qnn.avg_pool2d(data, input_scale, input_zero_point, output_scale,
output_zero_point; pool_size, strides, dilation, padding, layout,
out_layout, ceil_mode, count_include_pad)`` -- Relay's operator with its
``AvgPool2DAttrs`` (windows, output shape and divisor exactly as
``nn.avg_pool2d``); data int8, uint8 or int16, the result has its dtype;
the four parameters are scalars.

Arithmetic, per output position, with ``S`` the exact sum of ``q - izp``
over the window's taps inside the input (padding is a real 0) and ``n``
the divisor of ``nn.avg_pool2d`` (taps inside the input, or with
``count_include_pad`` inside the padded input; at least 1):

* **same parameters** (``input_scale == output_scale`` as float32 and
  ``izp == ozp``): TFLite's reference ``AveragePool``
  (``reference_integer_ops/pooling.h``), which sums the raw values:
  ``T = S + n * izp`` (= the sum of ``q`` over the window when padding is
  not counted, TFLite's only mode), ``T / n`` rounded half away from zero
  (TFLite's ``(acc +- n/2) / n``), clamped to the dtype.  Rounding the raw
  average is not rounding ``S / n`` and adding the zero point: they differ
  at ties whose sign the zero point changes.
* **different parameters** (TFLite requires equal ones; Relay allows any):
  ``avg = S / n`` rounded half away from zero, truncated to int32, then
  requantized as ``qnn.requantize`` with ``rounding="TFLITE"``: TFLite's
  ``MultiplyByQuantizedMultiplier`` by ``M = input_scale / output_scale``
  (double precision), plus ``ozp``, clamped.

Sums are exact (int64); only a zero point far outside the dtype's range
makes ``avg`` leave int32.
"""

from __future__ import annotations

from typing import Sequence

from .. import quant
from ..registry import Solved, lookup
from ..types import Type
from .common import DType, PatternKind, RelationError, TensorType, as_array, defop, np, tensor_arg
from .nn_pool import AvgPool2DAttrs, avg_pool_sums
from .qnn_common import io_scalar_params, scales, with_params, zero_points

FAMILY = "qnn"

_POOL_IN = (DType.INT8, DType.UINT8, DType.INT16)


def round_half_away_div(total: np.ndarray, count: np.ndarray) -> np.ndarray:
    """``total / count`` (int64, ``count >= 1``) rounded half away from
    zero: TFLite's ``acc > 0 ? (acc + n/2) / n : (acc - n/2) / n`` with C
    division (truncating)."""
    total, count = np.asarray(total, np.int64), np.asarray(count, np.int64)
    half = count // 2
    magnitude = (np.abs(total) + half) // count
    return np.where(total < 0, -magnitude, magnitude)


def same_parameters(in_scale: np.ndarray, in_zp: np.ndarray, out_scale: np.ndarray,
                    out_zp: np.ndarray) -> bool:
    """Whether input and output parameters are equal (scales as float32)."""
    return bool(np.float32(np.asarray(in_scale).reshape(()))
                == np.float32(np.asarray(out_scale).reshape(()))
                and int(np.asarray(in_zp).reshape(())) == int(np.asarray(out_zp).reshape(())))


def _avg_pool2d_rel(args: Sequence[Type], attrs: AvgPool2DAttrs) -> Type | Solved | None:
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    if data.dtype not in _POOL_IN:
        raise RelationError(f"data must be int8, uint8 or int16, got {data}")
    pool = lookup("nn.avg_pool2d")
    assert pool is not None
    out = pool.rel([data], attrs)
    if out is None:
        return None
    assert isinstance(out, TensorType)
    return with_params(out, io_scalar_params(args))


def _avg_pool2d(args: Sequence[np.ndarray], attrs: AvgPool2DAttrs, out: Type) -> np.ndarray:
    data, in_scale, in_zp, out_scale, out_zp = (np.asarray(a) for a in args)
    s_in = float(scales(in_scale, "input_scale").reshape(()))
    s_out = float(scales(out_scale, "output_scale").reshape(()))
    z_in = int(zero_points(in_zp).reshape(()))
    z_out = int(zero_points(out_zp).reshape(()))
    raw, count = avg_pool_sums(data.astype(np.int64), attrs)
    inside, _ = avg_pool_sums(np.ones(data.shape, np.int64), attrs)
    shifted = raw - inside * z_in                      # S: padding counts as 0
    if same_parameters(in_scale, in_zp, out_scale, out_zp):
        result = round_half_away_div(shifted + count * z_in, count)
    else:
        avg = quant.wrap_int32(round_half_away_div(shifted, count))
        qm = quant.quantize_multiplier(s_in / s_out)
        result = quant.multiply_by_quantized_multiplier(avg, qm.multiplier, qm.shift) + z_out
    return as_array(quant.saturate(result, data.dtype), data.dtype)


defop("qnn.avg_pool2d", arity=5, rel=_avg_pool2d_rel, pattern=PatternKind.OUT_ELEMWISE_FUSABLE,
      compute=_avg_pool2d,
      doc="quantized 2-d average pooling (TFLite int8 AveragePool; requantized when the "
          "output parameters differ)", attrs=AvgPool2DAttrs, family=FAMILY,
      api_defaults=AvgPool2DAttrs(layout="NHWC", count_include_pad=True))

__all__ = ["round_half_away_div", "same_parameters"]
