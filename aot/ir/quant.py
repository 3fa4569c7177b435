"""Exact fixed-point arithmetic of quantized kernels (TFLite and gemmlowp).

Design note
===========

A quantized kernel never multiplies by a real number at run time.  A real
rescaling factor ``M > 0`` (a ratio of float32 scales, computed in double
precision at compile time) is represented as

    M  ~=  multiplier * 2**(shift - 31)

where ``multiplier`` is an int32 in ``[2**30, 2**31)`` -- a Q0.31 fraction in
``[0.5, 1)`` -- and ``shift`` is a small integer exponent (positive: shift
left, negative: shift right).  Everything below is exact integer arithmetic
on NumPy ``int64`` arrays that hold C ``int32`` values, so the C backend can
reproduce it bit for bit with ``int32_t`` / ``int64_t`` arithmetic.

From a double to (multiplier, shift): :func:`quantize_multiplier`, TFLite's
``QuantizeMultiplier`` (tensorflow/lite/kernels/internal/quantization_util.cc):

1. ``(q, e) = frexp(M)`` so that ``M = q * 2**e`` with ``q`` in ``[0.5, 1)``
   (exact);
2. ``multiplier = round(q * 2**31)``, rounding half away from zero (C's
   ``round``; ``q * 2**31`` is exact in double, the rounding is the only
   approximation of the whole scheme), ``shift = e``;
3. if the rounding reached ``2**31``: ``multiplier = 2**30``, ``shift += 1``;
4. if ``shift < -31``: ``(multiplier, shift) = (0, 0)`` -- TFLite flushes
   multipliers below about ``2**-32`` to zero;
5. ``M == 0`` gives ``(0, 0)``.  Negative, NaN or infinite ``M``, and
   ``shift > 30`` (``M >= 2**30``, beyond what any of the kernels below
   accept: TFLite checks ``shift <= 30``) raise :class:`QuantizationError`.

Apply (multiplier, shift) to an int32 ``x``.  Two roundings exist:

* **double rounding** -- TFLite's reference ``MultiplyByQuantizedMultiplier``
  (tensorflow/lite/kernels/internal/common.h, default build):

  ``RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x * 2**ls, m), rs)``
  with ``ls = max(shift, 0)``, ``rs = max(-shift, 0)``.

  - ``x * 2**ls`` is an int32 product; it wraps modulo 2**32 here (it is
    undefined behaviour in C++, TFLite assumes it never overflows);
  - ``SaturatingRoundingDoublingHighMul(a, b)`` (gemmlowp) is the high 32 bits
    of ``2*a*b``: ``(a*b + nudge) / 2**31`` in int64 with C division
    (truncation toward zero) and ``nudge = 2**30`` if ``a*b >= 0`` else
    ``1 - 2**30``.  At an exact half this rounds toward +infinity for both
    signs (``+0.5 -> 1``, ``-0.5 -> 0``, ``-1.5 -> -1``).  The only overflow,
    ``a == b == INT32_MIN``, saturates to ``INT32_MAX``;
  - ``RoundingDivideByPOT(x, e)`` (gemmlowp) is ``x / 2**e`` rounded to
    nearest with ties away from zero: ``(x >> e) + (r > t)`` with
    ``r = x & (2**e - 1)`` and ``t = (2**e - 1) >> 1`` plus one if ``x < 0``;
    ``0 <= e <= 31``.

* **single rounding** -- TVM's ``FixedPointMultiply`` lowering (Relay's
  ``fixed_point_multiply`` and ``qnn.requantize`` with ``rounding="UPWARD"``
  or ``"TONEAREST"``), which for ``UPWARD`` equals TFLite built with
  ``TFLITE_SINGLE_ROUNDING``:

  ``t = (int64(x) << ls) * m``; ``n = 31 + rs``;
  ``UPWARD``:    ``(t + 2**(n-1)) >> n`` -- ties toward +infinity;
  ``TONEAREST``: ``(t + 2**(n-1) - (t < 0)) >> n`` -- ties away from zero;
  ``>>`` is an arithmetic (flooring) shift, int64 arithmetic wraps, and the
  result is truncated (wrapped) to int32 as TVM's final ``cast`` does.

Saturation to an output type is a separate, explicit step
(:func:`saturate`).  Float rounding where TFLite itself rounds a float
(``quantize`` of a float tensor) is :func:`round_half_away_from_zero`, C's
``round``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

__all__ = [
    "INT32_MIN", "INT32_MAX", "QuantizationError", "QuantizedMultiplier",
    "quantize_multiplier", "quantize_multiplier_smaller_than_one_exp", "wrap_int32",
    "saturating_rounding_doubling_high_mul", "rounding_divide_by_pot",
    "multiply_by_quantized_multiplier", "multiply_by_quantized_multiplier_smaller_than_one_exp",
    "multiply_by_quantized_multiplier_single_rounding", "saturate",
    "round_half_away_from_zero", "dtype_range",
]

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
#: largest shift the kernels accept (TFLite's ``shift <= 30``)
MAX_SHIFT = 30

IntArray = np.ndarray


class QuantizationError(ValueError):
    """A quantization parameter (scale, multiplier) cannot be represented:
    negative, zero where a division needs it, not finite, or too large."""


@dataclass(frozen=True, slots=True)
class QuantizedMultiplier:
    """``real ~= multiplier * 2**(shift - 31)``; ``multiplier`` is 0 or in
    ``[2**30, 2**31)``, ``-31 <= shift <= 30``."""

    multiplier: int
    shift: int

    @property
    def real(self) -> float:
        """The real number this pair represents exactly."""
        return math.ldexp(self.multiplier, self.shift - 31)


def quantize_multiplier(real: float) -> QuantizedMultiplier:
    """TFLite's ``QuantizeMultiplier`` (see the module note)."""
    real = float(real)
    if math.isnan(real) or math.isinf(real) or real < 0.0:
        raise QuantizationError(f"cannot represent the rescaling factor {real!r} as a "
                                f"fixed-point multiplier (it must be finite and >= 0)")
    if real == 0.0:
        return QuantizedMultiplier(0, 0)
    q, shift = math.frexp(real)
    fixed = _round_half_away_scalar(q * float(1 << 31))
    assert fixed <= (1 << 31), (real, fixed)
    if fixed == (1 << 31):
        fixed //= 2
        shift += 1
    if shift < -31:
        return QuantizedMultiplier(0, 0)
    if shift > MAX_SHIFT:
        raise QuantizationError(f"the rescaling factor {real!r} is too large for a "
                                f"fixed-point multiplier (it must be below 2**{MAX_SHIFT})")
    return QuantizedMultiplier(fixed, shift)


def quantize_multiplier_smaller_than_one_exp(real: float) -> QuantizedMultiplier:
    """TFLite's ``QuantizeMultiplierSmallerThanOneExp``: ``0 < real < 1``,
    so ``shift <= 0`` (TFLite aborts otherwise; we raise)."""
    if not (0.0 < float(real) < 1.0):
        raise QuantizationError(f"the rescaling factor {real!r} must be in (0, 1)")
    return quantize_multiplier(real)


def _round_half_away_scalar(x: float) -> int:
    r = math.trunc(x)
    if abs(x - r) >= 0.5:
        r += 1 if x > 0 else -1
    return r


# ------------------------------------------------------------ integer helpers

def _i64(x: object) -> IntArray:
    return np.asarray(x, dtype=np.int64)


def wrap_int32(x: object) -> IntArray:
    """Two's-complement truncation of int64 values to int32 (kept in int64)."""
    x = _i64(x)
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _trunc_div_pow2(x: IntArray, n: int) -> IntArray:
    """C division ``x / 2**n`` (truncation toward zero) of int64 values."""
    floor = x >> n
    inexact_negative = (x < 0) & ((x & ((1 << n) - 1)) != 0)
    return floor + inexact_negative


def saturating_rounding_doubling_high_mul(a: object, b: object) -> IntArray:
    """gemmlowp's ``SaturatingRoundingDoublingHighMul`` on int32 values."""
    a, b = _i64(a), _i64(b)
    product = a * b                       # |a*b| <= 2**62: no int64 overflow
    nudge = np.where(product >= 0, 1 << 30, 1 - (1 << 30))
    high = _trunc_div_pow2(product + nudge, 31)
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    return np.where(overflow, INT32_MAX, high).astype(np.int64)


def rounding_divide_by_pot(x: object, exponent: object) -> IntArray:
    """gemmlowp's ``RoundingDivideByPOT``: ``x / 2**exponent`` rounded to
    nearest, ties away from zero; ``0 <= exponent <= 31``."""
    x, e = _i64(x), _i64(exponent)
    assert np.all((e >= 0) & (e <= 31)), "RoundingDivideByPOT exponent out of [0, 31]"
    mask = (np.int64(1) << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + (remainder > threshold)


def multiply_by_quantized_multiplier(x: object, multiplier: object, shift: object) -> IntArray:
    """TFLite's ``MultiplyByQuantizedMultiplier`` (double rounding).
    ``multiplier``/``shift`` broadcast against ``x`` (per-channel use)."""
    x, m, s = _i64(x), _i64(multiplier), _i64(shift)
    left = np.maximum(s, 0)
    right = np.maximum(-s, 0)
    shifted = wrap_int32(x << left)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, m), right)


#: the largest shift TFLite's 64-bit ``MultiplyByQuantizedMultiplier`` takes
MAX_SHIFT_INT64 = 7


def multiply_by_quantized_multiplier_int64(x: object, multiplier: object,
                                           shift: object) -> IntArray:
    """TFLite's ``MultiplyByQuantizedMultiplier(int64_t x, ...)``, the
    requantization of its 16x8 kernels (int64 accumulators): the Q0.31
    multiplier rounded to 15 bits (``(m + 2**15) >> 16``, 0x7FFF from
    0x7FFF0000 up), then one product and one rounding shift, ties toward
    +infinity: ``(x * m15 + 2**(14 - shift)) >> (15 - shift)``.  The int64
    arithmetic wraps and the result wraps to int32 (TFLite asserts both
    away).  ``shift`` must be at most :data:`MAX_SHIFT_INT64`."""
    x, m, s = _i64(x), _i64(multiplier), _i64(shift)
    assert np.all(s <= MAX_SHIFT_INT64), "shift out of range for the 64-bit multiply"
    reduced = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)
    total = 15 - s
    with np.errstate(over="ignore"):
        prod = x * reduced + (np.int64(1) << (total - 1))
    return wrap_int32(prod >> total)


def multiply_by_quantized_multiplier_smaller_than_one_exp(
        x: object, multiplier: object, left_shift: object) -> IntArray:
    """TFLite's ``MultiplyByQuantizedMultiplierSmallerThanOneExp``:
    ``left_shift <= 0`` is a right shift."""
    s = _i64(left_shift)
    assert np.all(s <= 0), "expected a non-positive shift"
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier), -s)


def multiply_by_quantized_multiplier_single_rounding(
        x: object, multiplier: object, shift: object, to_nearest: bool = False) -> IntArray:
    """TVM's ``FixedPointMultiply`` (``to_nearest=False``: UPWARD, ties toward
    +infinity; ``True``: TONEAREST, ties away from zero).  Wraps to int32."""
    x, m, s = _i64(x), _i64(multiplier), _i64(shift)
    assert np.all(s >= -32) and np.all(s <= 31), "fixed-point shift out of range"
    left = np.maximum(s, 0)
    total_right = 31 + np.maximum(-s, 0)
    with np.errstate(over="ignore"):
        scaled = (x << left) * m
        rounding = (np.int64(1) << (total_right - 1))
        if to_nearest:
            rounding = rounding - (scaled < 0)
        result = (scaled + rounding) >> total_right
    return wrap_int32(result)


# ----------------------------------------------------------- saturation, floats

def dtype_range(dtype: np.dtype | type) -> tuple[int, int]:
    info = ml_dtypes.iinfo(dtype)
    return int(info.min), int(info.max)


def saturate(x: object, dtype: np.dtype | type) -> np.ndarray:
    """Clamp integers to ``dtype``'s range and convert."""
    lo, hi = dtype_range(dtype)
    return np.clip(_i64(x), lo, hi).astype(dtype)


def round_half_away_from_zero(x: np.ndarray) -> np.ndarray:
    """C's ``round`` (TFLite's ``TfLiteRound``) in the array's own float
    precision: ``x - trunc(x)`` is exact, so no double rounding happens."""
    x = np.asarray(x)
    whole = np.trunc(x)
    with np.errstate(invalid="ignore"):
        bump = np.abs(x - whole) >= 0.5
    return np.where(bump, whole + np.copysign(np.ones_like(x), x), whole).astype(x.dtype)
