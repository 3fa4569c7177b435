"""gemmlowp's fixed-point transcendental functions, exactly, on NumPy
``int64`` arrays holding C ``int32`` values (the companion of
:mod:`aot.ir.quant`, whose ``saturating_rounding_doubling_high_mul`` and
``rounding_divide_by_pot`` they build on).

Design note
===========

gemmlowp (``fixedpoint/fixedpoint.h``) represents a real ``r`` as an int32
``raw = r * 2**(31 - I)``, ``I`` integer bits (``FixedPoint<int32_t, I>``).
Its operations on raw values:

* ``a + b``, ``a - b``: wrapping int32 addition (``Add``/``Sub``);
* ``a * b`` (``I = Ia + Ib``): ``SaturatingRoundingDoublingHighMul``;
* ``Rescale<J>(x)`` (``I -> J``) and ``SaturatingRoundingMultiplyByPOT<e>``
  with ``e = I - J``: ``e < 0`` is ``RoundingDivideByPOT(x, -e)``, ``e > 0``
  a left shift saturating at the int32 limits (:func:`saturating_shl`);
* ``ExactMulByPot<e>``: the raw value unchanged, only ``I`` moves;
* ``One()`` of ``I = 0`` is ``INT32_MAX`` (1.0 is not representable);
  ``ConstantPOT<k>`` is ``2**(31 - I + k)``.

:func:`exp_on_negative_values` is gemmlowp's ``exp`` for ``x <= 0`` in
``Q5.26`` (``I = 5``, TFLite softmax's ``kScaledDiffIntegerBits``): ``x``
is split into ``x mod 1/4`` minus 1/4 -- whose exp is a 4th-order Taylor
polynomial around -1/8 (:func:`exp_on_interval_between_negative_one_quarter_and_0_excl`)
-- and a remainder whose bits ``2**-2 .. 2**4`` each multiply the result
by the constant ``exp(-2**k)`` (the "barrel shifter"); ``x == 0`` gives
``One()``.  With ``I = 5`` every bit of the remainder has a constant and
gemmlowp's clamp below -32 does not apply.

:func:`one_over_one_plus_x_for_x_in_0_1` is ``1 / (1 + x)`` for ``x`` in
``[0, 1)`` (``I = 0``): three Newton-Raphson steps in ``Q2.29`` from the
estimate ``48/17 - 32/17 * d`` with ``d = (1 + x) / 2`` (``RoundingHalfSum``),
the result ``x / 2`` rescaled to ``Q0.31``.

:func:`count_leading_zeros` is TFLite's ``CountLeadingZeros`` of a
``uint32``.
"""

from __future__ import annotations

import numpy as np

from .quant import (INT32_MAX, INT32_MIN, rounding_divide_by_pot,
                    saturating_rounding_doubling_high_mul as srdhm, wrap_int32)

__all__ = ["saturating_shl", "rounding_half_sum", "count_leading_zeros",
           "exp_on_interval_between_negative_one_quarter_and_0_excl",
           "exp_on_negative_values", "one_over_one_plus_x_for_x_in_0_1",
           "EXP_BARREL", "EXP_CONSTANT_TERM", "ONE_THIRD", "RECIP_48_OVER_17",
           "RECIP_NEG_32_OVER_17"]

#: ``exp(-1/8)`` and ``1/3`` in Q0.31 (gemmlowp's checked constants)
EXP_CONSTANT_TERM = 1895147668
ONE_THIRD = 715827883
#: (k, exp(-2**k) in Q0.31) of the barrel shifter, k = -2 .. 4
EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
              (2, 39332535), (3, 720401), (4, 242))
#: 48/17 and -32/17 in Q2.29
RECIP_48_OVER_17 = 1515870810
RECIP_NEG_32_OVER_17 = -1010580540


def _i64(x: object) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def saturating_shl(x: object, e: int) -> np.ndarray:
    """``SaturatingRoundingMultiplyByPOT<e>`` for ``e > 0``: ``x << e``,
    ``INT32_MAX`` when ``x > 2**(31-e) - 1``, ``INT32_MIN`` when
    ``x < -(2**(31-e) - 1)``."""
    x = _i64(x)
    threshold = (1 << (31 - e)) - 1
    return np.where(x > threshold, INT32_MAX,
                    np.where(x < -threshold, INT32_MIN, wrap_int32(x << e))).astype(np.int64)


def rounding_half_sum(a: object, b: object) -> np.ndarray:
    """gemmlowp's ``RoundingHalfSum`` of int32: ``(a + b +- 1) / 2`` in
    int64, the sign term that of the sum, C (truncating) division."""
    s = _i64(a) + _i64(b)
    t = s + np.where(s >= 0, 1, -1)
    return np.where(t >= 0, t // 2, -((-t) // 2)).astype(np.int64)


def count_leading_zeros(x: object) -> np.ndarray:
    """Leading zero bits of ``uint32(x)`` (32 for 0)."""
    u = _i64(x) & 0xFFFFFFFF
    n = np.full(u.shape, 32, np.int64)
    for bit in range(32):
        n = np.where(u >= (np.int64(1) << bit), 31 - bit, n)
    return n


def exp_on_interval_between_negative_one_quarter_and_0_excl(a: object) -> np.ndarray:
    """``exp(a)`` for ``a`` in ``[-1/4, 0)``, Q0.31 in and out."""
    x = wrap_int32(_i64(a) + (1 << 28))
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(
        wrap_int32(srdhm(wrap_int32(x4_over_4 + x3), ONE_THIRD) + x2), 1)
    return wrap_int32(EXP_CONSTANT_TERM + srdhm(EXP_CONSTANT_TERM, wrap_int32(x + poly)))


def exp_on_negative_values(a: object, integer_bits: int = 5) -> np.ndarray:
    """``exp(a)`` for ``a <= 0`` given in ``Q(integer_bits)`` (TFLite
    softmax: 5), result Q0.31 (see the module note)."""
    assert 1 <= integer_bits <= 5, "only the barrel shifter without the -32 clamp"
    a = _i64(a)
    frac = 31 - integer_bits
    quarter = 1 << (frac - 2)
    a_mod = (a & (quarter - 1)) - quarter
    result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        saturating_shl(a_mod, integer_bits))
    remainder = wrap_int32(a_mod - a)
    for k, multiplier in EXP_BARREL:
        if integer_bits > k:
            bit = (remainder >> (frac + k)) & 1
            result = np.where(bit != 0, srdhm(result, multiplier), result)
    return np.where(a == 0, INT32_MAX, result).astype(np.int64)


def one_over_one_plus_x_for_x_in_0_1(a: object) -> np.ndarray:
    """``1 / (1 + a)`` for ``a`` in ``[0, 1)``, Q0.31 in and out."""
    half_denominator = rounding_half_sum(a, INT32_MAX)
    x = wrap_int32(RECIP_48_OVER_17 + srdhm(half_denominator, RECIP_NEG_32_OVER_17))
    for _ in range(3):
        one_minus = wrap_int32((1 << 29) - srdhm(half_denominator, x))
        x = wrap_int32(x + saturating_shl(srdhm(x, one_minus), 2))
    return saturating_shl(x, 1)
