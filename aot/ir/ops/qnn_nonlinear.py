"""qnn.sigmoid, qnn.tanh, qnn.hardswish: the quantized nonlinear
activations, computed as TFLite's reference kernels compute them (part of
the qnn family, see :mod:`aot.ir.ops.qnn`).

``qnn.sigmoid(data, input_scale, input_zero_point, output_scale,
output_zero_point)`` and likewise ``qnn.tanh`` / ``qnn.hardswish``: data
int8 or uint8, the result has its dtype, the four parameters scalars (as
``qnn.leaky_relu``).  No attributes.

Design note
-----------
**Sigmoid and tanh** are TFLite's ``LOGISTIC`` / ``TANH`` on 8-bit data
as its reference op resolver runs them (``kernels/activations.cc``,
``kReference``): a 256-entry lookup table filled at prepare time by
``LUTPopulate`` in float32 arithmetic and indexed by the input code.  For
every code ``v`` of the dtype::

    x = float32(input_scale) * float32(v - input_zero_point)      (float32)
    y = 1.0f / (1.0f + expf(-x))          or   tanhf(x)            (float32)
    t = roundf(y * (1.0f / float32(output_scale))) + output_zero_point
    table[v] = clamp(int32(t), dtype)

(``roundf`` rounds half away from zero; every operation is rounded to
float32 as in C++ ``float`` arithmetic).  ``expf``/``tanhf`` are taken as
the correctly rounded float32 values (the double result rounded to
float32), which is what glibc's ``expf`` gives and what its ``tanhf``
gives except within a few ulps of a rounding tie of the table; the tests
check the tables against LiteRT over several scales.  TFLite requires an
output scale of 1/256 for ``LOGISTIC`` (the importer keeps that check to
LiteRT); the operator itself takes any parameters.  The table is a
compile-time constant of the C kernel (:func:`lookup_table`), so the
kernel does no float arithmetic.  TFLite's int16 ``LOGISTIC``/``TANH``
(a different fixed-point algorithm) are not covered.

**Hard swish** is TFLite's ``reference_ops::HardSwish`` (``hard_swish.h``)
with the parameters of ``HardSwishPrepare`` (:func:`hard_swish_params`):
in float32 ``hires = (1/128) * input_scale``, ``output_multiplier = hires /
output_scale`` and ``reluish_multiplier = hires / (3/32768)``, each
quantized by ``QuantizeMultiplier`` (double) and narrowed to a Q0.15
int16 (``DownScaleInt32ToInt16Multiplier``); the output exponent must be
<= 0 (:class:`~aot.ir.quant.QuantizationError` otherwise, as TFLite's
prepare fails).  Per element, all in int16 with gemmlowp's 16-bit
``SaturatingRoundingDoublingHighMul`` / ``RoundingDivideByPOT``::

    x  = int16(q - izp) * 128
    o  = SRDHM(x, out_m16)                         (x on the output scale)
    r  = x  -> left shift by e-1 (saturating) -> SRDHM(., relu_m16)
            -> left shift by 1 (saturating)  when e > 0, rounding right
               shift by -e when e < 0           (x/3 in [-1, 1], Q0.15)
    r  = (r + 32768) >> 1                          ((x/3 + 1)/2 in [0, 1])
    y  = SaturatingDoublingHighMul(r, o)           (truncating)
    out = clamp(RDBPOT(y, -out_exp) + ozp)

(``e`` the reluish exponent).  Values are exactly TFLite's, including its
int16 wrap-arounds for zero points outside the dtype.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from .. import quant
from ..registry import Solved
from ..types import Type
from .common import DType, PatternKind, RelationError, TensorType, as_array, defop, np, tensor_arg
from .qnn_common import io_scalar_params, scales, with_params, zero_points

FAMILY = "qnn"

_LUT_IN = (DType.INT8, DType.UINT8)


# ============================================================ lookup tables

def _sigmoid_f32(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        e = np.exp(-x.astype(np.float64)).astype(np.float32)       # expf(-x)
    one = np.float32(1.0)
    return (one / (one + e)).astype(np.float32)


def _tanh_f32(x: np.ndarray) -> np.ndarray:
    return np.tanh(x.astype(np.float64)).astype(np.float32)        # tanhf(x)


TRANSFORMS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "qnn.sigmoid": _sigmoid_f32, "qnn.tanh": _tanh_f32}


def lookup_table(op: str, in_scale: float, in_zp: int, out_scale: float, out_zp: int,
                 dtype: DType) -> np.ndarray:
    """TFLite's ``LUTPopulate`` table of ``op`` (``qnn.sigmoid`` or
    ``qnn.tanh``): entry ``i`` is the result for input code ``lo + i``
    (``lo`` the dtype's minimum), in the dtype."""
    s_in = np.float32(scales(np.asarray(in_scale, np.float32), "input_scale").reshape(()))
    s_out = np.float32(scales(np.asarray(out_scale, np.float32), "output_scale").reshape(()))
    lo, hi = quant.dtype_range(dtype.np)
    codes = np.arange(lo, hi + 1, dtype=np.int64)
    with np.errstate(all="ignore"):
        x = (s_in * (codes - in_zp).astype(np.float32)).astype(np.float32)
        y = TRANSFORMS[op](x)
        inverse = np.float32(np.float32(1.0) / s_out)
        rescaled = quant.round_half_away_from_zero((y * inverse).astype(np.float32))
        total = (rescaled.astype(np.float32) + np.float32(out_zp)).astype(np.float32)
    total = np.where(np.isfinite(total), total, np.float32(lo))
    clamped = np.clip(total, np.float32(lo), np.float32(hi))
    return np.trunc(clamped).astype(np.int64).astype(dtype.np)


# ============================================================ hard swish

@dataclass(frozen=True, slots=True)
class HardSwishParams:
    """TFLite's ``HardSwishParams`` (the zero points apart)."""
    output_multiplier: int       # Q0.15 int16
    output_exponent: int         # <= 0
    reluish_multiplier: int      # Q0.15 int16
    reluish_exponent: int


def _downscale_int16(m: int) -> int:
    """TFLite's ``DownScaleInt32ToInt16Multiplier``."""
    if m >= (1 << 31) - 1 - (1 << 15):
        return (1 << 15) - 1
    return (m + (1 << 15)) >> 16


def hard_swish_params(in_scale: float, out_scale: float) -> HardSwishParams:
    """The multipliers of TFLite's ``HardSwishPrepare`` (float32 ratios)."""
    s_in = np.float32(scales(np.asarray(in_scale, np.float32), "input_scale").reshape(()))
    s_out = np.float32(scales(np.asarray(out_scale, np.float32), "output_scale").reshape(()))
    hires = np.float32(np.float32(1.0 / 128.0) * s_in)
    with np.errstate(all="ignore"):
        out_mult = np.float32(hires / s_out)
        reluish = np.float32(hires / np.float32(3.0 / 32768.0))
    qo = quant.quantize_multiplier(float(out_mult))
    if qo.shift > 0:
        raise quant.QuantizationError(
            f"hard swish needs input_scale / 128 / output_scale < 1 (TFLite's "
            f"HardSwishPrepare), got input_scale={float(s_in)!r}, output_scale={float(s_out)!r}")
    qr = quant.quantize_multiplier(float(reluish))
    return HardSwishParams(_downscale_int16(qo.multiplier), qo.shift,
                           _downscale_int16(qr.multiplier), qr.shift)


def _i16(x: np.ndarray) -> np.ndarray:
    """Two's-complement truncation to int16 (kept in int64)."""
    return ((np.asarray(x, np.int64) + (1 << 15)) & 0xFFFF) - (1 << 15)


def _trunc_div(x: np.ndarray, d: int) -> np.ndarray:
    """C division by a positive ``d`` (truncation toward zero)."""
    q = np.abs(x) // d
    return np.where(x < 0, -q, q)


def srdhm16(a: np.ndarray, b: int) -> np.ndarray:
    """gemmlowp's 16-bit ``SaturatingRoundingDoublingHighMul``."""
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    high = _i16(_trunc_div(ab + nudge, 1 << 15))
    return np.where((a == -32768) & (b == -32768), 32767, high)


def sdhm16(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """TFLite's ``SaturatingDoublingHighMul`` (truncating)."""
    high = _i16(_trunc_div(a * b, 1 << 15))
    return np.where((a == -32768) & (b == -32768), 32767, high)


def saturating_left_shift16(v: np.ndarray, amount: int) -> np.ndarray:
    return np.clip(v * (1 << amount), -32768, 32767)


def rdbpot16_constants(exponent: int) -> tuple[int, int]:
    """``(mask, mask >> 1)`` of gemmlowp's ``RoundingDivideByPOT`` on int16
    (the mask truncated to int16, as the template computes it)."""
    mask = int(_i16(np.asarray((1 << exponent) - 1, np.int64)))
    return mask, mask >> 1


def rdbpot16(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp's ``RoundingDivideByPOT`` on int16, ``0 <= exponent <= 31``."""
    mask, half = rdbpot16_constants(exponent)
    threshold = _i16(half + (x < 0))
    return _i16((x >> exponent) + ((x & mask) > threshold))


def hard_swish(q: np.ndarray, izp: int, ozp: int, p: HardSwishParams,
               dtype: DType) -> np.ndarray:
    """``reference_ops::HardSwish`` on int64 codes ``q`` (see the note)."""
    x = _i16(_i16(np.asarray(q, np.int64) - izp) * 128)
    on_output = srdhm16(x, p.output_multiplier)
    r = x
    e = p.reluish_exponent
    if e > 0:
        r = saturating_left_shift16(r, e - 1)
    r = srdhm16(r, p.reluish_multiplier)
    if e > 0:
        r = saturating_left_shift16(r, 1)
    if e < 0:
        r = rdbpot16(r, -e)
    r = _i16((r + (1 << 15)) >> 1)
    y = rdbpot16(sdhm16(r, on_output), -p.output_exponent)
    return quant.saturate(_i16(y + ozp), dtype.np)


# ============================================================ records

def _unary_rel(args: Sequence[Type], attrs: object) -> Type | Solved | None:
    data = tensor_arg(args, 0, "data")
    if data is None:
        return None
    if data.dtype not in _LUT_IN:
        raise RelationError(f"data must be int8 or uint8, got {data}")
    return with_params(TensorType(data.shape, data.dtype), io_scalar_params(args))


def _params(args: Sequence[np.ndarray]) -> tuple[np.ndarray, float, int, float, int]:
    data, s_in, z_in, s_out, z_out = (np.asarray(a) for a in args)
    return (data, float(np.float32(s_in.reshape(()))), int(zero_points(z_in).reshape(())),
            float(np.float32(s_out.reshape(()))), int(zero_points(z_out).reshape(())))


def _table_compute(op: str):
    def compute(args: Sequence[np.ndarray], attrs: object, out: Type) -> np.ndarray:
        data, si, zi, so, zo = _params(args)
        dtype = DType.from_numpy(data.dtype)
        table = lookup_table(op, si, zi, so, zo, dtype)
        lo = quant.dtype_range(data.dtype)[0]
        return as_array(table[data.astype(np.int64) - lo], dtype)
    return compute


def _hardswish(args: Sequence[np.ndarray], attrs: object, out: Type) -> np.ndarray:
    data, si, zi, so, zo = _params(args)
    dtype = DType.from_numpy(data.dtype)
    return as_array(hard_swish(data, zi, zo, hard_swish_params(si, so), dtype), dtype)


for _name, _fn in (("sigmoid", "1 / (1 + exp(-x))"), ("tanh", "tanh(x)")):
    defop(f"qnn.{_name}", arity=5, rel=_unary_rel, pattern=PatternKind.ELEMWISE,
          compute=_table_compute(f"qnn.{_name}"),
          doc=f"quantized {_name}: TFLite's 8-bit lookup table of {_fn} (float32 "
              "LUTPopulate at compile time)", family=FAMILY)

defop("qnn.hardswish", arity=5, rel=_unary_rel, pattern=PatternKind.ELEMWISE,
      compute=_hardswish,
      doc="quantized hard swish x * relu6(x + 3) / 6 in TFLite's 16-bit fixed point "
          "(reference_ops::HardSwish)", family=FAMILY)

__all__ = ["HardSwishParams", "TRANSFORMS", "hard_swish", "hard_swish_params", "lookup_table",
           "rdbpot16_constants"]
