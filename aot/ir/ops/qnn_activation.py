"""qnn.leaky_relu: the quantized activations computed with fixed-point
multipliers (part of the qnn family, see :mod:`aot.ir.ops.qnn`).

``qnn.leaky_relu(data, input_scale, input_zero_point, output_scale,
output_zero_point; alpha)`` -- Relay's operator (``LeakyReluAttrs``);
data int8, uint8 or int16, the result has its dtype; scalar parameters.
TFLite's reference ``QuantizeLeakyRelu`` (``reference/leaky_relu.h``) with
the multipliers of TFLite's ``LeakyReluPrepare``
(``kernels/activations.cc``): ``identity = double(float32(is / os))`` and
``alpha' = double(float32(float32(is * alpha) / os))`` -- the ratios formed
in float32, as TFLite does (TFLM's ``CalculateOpDataLeakyRelu`` forms them
in double; the two differ only when the float32 rounding moves the Q0.31
multiplier).  Per element ``x = q - izp``; ``x >= 0`` is rescaled by
``identity``, ``x < 0`` by ``alpha'``, each with TFLite's double-rounding
``MultiplyByQuantizedMultiplier``; plus ``ozp``, clamped.  ``alpha``
must be >= 0 (a negative one, whose multiplier TFLite keeps negative,
raises :class:`~aot.ir.quant.QuantizationError`).
"""

from __future__ import annotations

from typing import Sequence

from .. import quant
from ..registry import Solved
from ..types import Type
from .common import DType, PatternKind, RelationError, TensorType, as_array, defop, np, tensor_arg
from .nn import LeakyReluAttrs
from .qnn_common import io_scalar_params, scales, with_params, zero_points

FAMILY = "qnn"

_ACT_IN = (DType.INT8, DType.UINT8, DType.INT16)


def leaky_relu_multipliers(in_scale: float, out_scale: float,
                           alpha: float) -> tuple[int, int, int, int]:
    """``(identity multiplier, shift, alpha multiplier, shift)`` as TFLite's
    ``LeakyReluPrepare`` computes them (float32 ratios)."""
    s_in, s_out, a = np.float32(in_scale), np.float32(out_scale), np.float32(alpha)
    with np.errstate(all="ignore"):
        identity = float(np.float32(s_in / s_out))
        scaled = float(np.float32(np.float32(s_in * a) / s_out))
    qi = quant.quantize_multiplier(identity)
    qa = quant.quantize_multiplier(scaled)            # raises for a negative alpha
    return qi.multiplier, qi.shift, qa.multiplier, qa.shift


def _unary_rel(args: Sequence[Type], attrs: object) -> Type | Solved | None:
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    if data.dtype not in _ACT_IN:
        raise RelationError(f"data must be int8, uint8 or int16, got {data}")
    return with_params(TensorType(data.shape, data.dtype), io_scalar_params(args))


def _leaky_relu(args: Sequence[np.ndarray], attrs: LeakyReluAttrs, out: Type) -> np.ndarray:
    data, s_in, z_in, s_out, z_out = (np.asarray(a) for a in args)
    si = float(scales(s_in, "input_scale").reshape(()))
    so = float(scales(s_out, "output_scale").reshape(()))
    mi, shi, ma, sha = leaky_relu_multipliers(si, so, attrs.alpha)
    x = quant.wrap_int32(data.astype(np.int64) - zero_points(z_in).reshape(()))
    pos = quant.multiply_by_quantized_multiplier(x, mi, shi)
    neg = quant.multiply_by_quantized_multiplier(x, ma, sha)
    y = quant.wrap_int32(np.where(x >= 0, pos, neg) + zero_points(z_out).reshape(()))
    return as_array(quant.saturate(y, data.dtype), data.dtype)


defop("qnn.leaky_relu", arity=5, rel=_unary_rel, pattern=PatternKind.ELEMWISE,
      compute=_leaky_relu,
      doc="quantized leaky relu: x >= 0 and x < 0 rescaled by their own fixed-point "
          "multipliers (TFLite's QuantizeLeakyRelu)", attrs=LeakyReluAttrs, family=FAMILY)

__all__ = ["leaky_relu_multipliers"]
