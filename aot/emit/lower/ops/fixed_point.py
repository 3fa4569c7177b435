"""Fixed-point arithmetic of the quantized lowerings, in kernel IR: the
exact counterpart of :mod:`aot.ir.quant` (read its design note first).

Design note
-----------
A rescaling factor is a :class:`Multiplier`: ``multiplier`` and ``shift``
as int32 expressions.  When the scales are compile-time constants they are
literals computed in Python by :func:`aot.ir.quant.quantize_multiplier`
itself (:func:`static_multiplier`), and the arithmetic below specialises on
them: shifts by constants, constant rounding terms, no branches.  When they
are not (run-time scales) :func:`runtime_multiplier` computes the same pair
in the kernel from the float64 factor (see below); the arithmetic then
shifts by variable amounts.

Identities used (``>>`` is the arithmetic shift, products are int64):

* gemmlowp's ``SaturatingRoundingDoublingHighMul(a, m)`` for ``m >= 0`` is
  ``(a*m + 2**30) >> 31``.  For ``p = a*m >= 0`` the nudge is ``2**30`` and
  truncation is the floor; for ``p < 0`` the nudged value ``p + 1 - 2**30``
  is negative and C's truncating division by ``2**31`` is
  ``floor((p + 1 - 2**30 + 2**31 - 1) / 2**31) = floor((p + 2**30) / 2**31)``.
  Its single overflow (``a == m == INT32_MIN``) needs ``m < 0``, which no
  multiplier from ``QuantizeMultiplier`` is.
* ``RoundingDivideByPOT(v, e)`` (ties away from zero), ``e >= 1``, is
  ``(v + 2**(e-1) - (v < 0)) >> e`` computed in int64 (no overflow); for a
  variable ``e`` (possibly 0) gemmlowp's own mask-and-threshold form is
  used.
* TVM's single rounding: ``(x << left) * m`` is, modulo 2**64, ``x * (m <<
  left)``: one int64 product by a constant.

**Run-time multipliers** (:func:`runtime_multiplier`) reproduce
``QuantizeMultiplier`` on a float64 factor ``M``: the factor is clamped to
``[2**-40, 2**40]`` (factors below ``2**-33`` all give ``(0, 0)``; above
``2**30`` the reference rejects them), then normalised into ``[1, 2)`` by
six conditional multiplications by ``2**(+-k)``, ``k = 32, 16, .., 1``, in
each direction -- all exact on normal doubles -- which gives frexp's
exponent; ``q * 2**31`` rounded half away from zero is ``trunc(v * 2**30 +
0.5)`` (exact: the sum is below ``2**32`` on a grid of ``2**-22``).  The
mantissa overflow, the flush to zero and the clamping of the shift to
``[-31, 30]`` follow.  Invalid run-time scales (the reference raises) give
unspecified values but never undefined C.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....ir import quant
from ....ir.dtype import DType
from ...kernel import ir as K

__all__ = ["Multiplier", "static_multiplier", "runtime_multiplier",
           "multiply_double", "multiply_single", "multiply_int64", "saturate", "saturate_int",
           "round_half_away",
           "i32", "i64", "f64", "wrap_sub", "I32", "I64", "F32", "F64"]

I32 = DType.INT32
I64 = DType.INT64
F32 = DType.FLOAT32
F64 = DType.FLOAT64


def i32(v: int) -> K.Const:
    return K.Const(v, I32)


def i64(v: int) -> K.Const:
    return K.Const(v, I64)


def f64(v: float) -> K.Const:
    return K.Const(v, F64)


def wrap_sub(a: K.Expr, b: K.Expr) -> K.Expr:
    """``int32(a) - int32(b)``, wrapping (``quant.wrap_int32`` of the
    difference of int32 values)."""
    a, b = K.cast(I32, a), K.cast(I32, b)
    if isinstance(b, K.Const) and b.value == 0:
        return a
    return K.sub(a, b)


@dataclass(frozen=True, slots=True)
class Multiplier:
    """``real ~= multiplier * 2**(shift - 31)``, both int32 expressions;
    literals when known at compile time."""

    multiplier: K.Expr
    shift: K.Expr
    #: for per-channel tables whose shifts are all <= -2 (see
    #: :func:`multiply_single`): ``-shift - 2``, read like ``shift``;
    #: None otherwise
    high_shift: K.Expr | None = None
    #: every multiplier (of a table) is known to be positive
    positive: bool = False
    #: with ``high_shift``, when the caller's output zero point ``z`` is
    #: folded in: ``2**e + z * 2**(e+1)`` (the rounding term plus the zero
    #: point, scaled) and ``e + 1``, read like ``shift``; the result of
    #: :func:`multiply_single` then includes ``z``
    high_round: K.Expr | None = None
    high_total: K.Expr | None = None

    @property
    def static(self) -> tuple[int, int] | None:
        m, s = self.multiplier, self.shift
        if isinstance(m, K.Const) and isinstance(s, K.Const):
            return int(m.value), int(s.value)
        return None


def static_multiplier(real: float) -> Multiplier:
    """``QuantizeMultiplier(real)`` as literals (raises
    :class:`~aot.ir.quant.QuantizationError` as the reference does)."""
    qm = quant.quantize_multiplier(real)
    return Multiplier(i32(qm.multiplier), i32(qm.shift))


# ------------------------------------------------------- run-time multipliers

_CLAMP_LO = 2.0 ** -40
_CLAMP_HI = 2.0 ** 40
_STEPS = (32, 16, 8, 4, 2, 1)


def _pick(cond: K.Expr, a: K.Expr, b: K.Expr) -> K.Expr:
    return K.select(cond, a, b)


def runtime_multiplier(real: K.Expr) -> Multiplier:
    """``QuantizeMultiplier`` of a float64 expression, computed in the
    kernel (see the design note)."""
    assert real.dtype is F64
    v = _pick(K.lt(real, f64(_CLAMP_LO)), f64(_CLAMP_LO),
              _pick(K.gt(real, f64(_CLAMP_HI)), f64(_CLAMP_HI), real))
    e: K.Expr = i32(0)
    for k in _STEPS:
        big = K.ge(v, f64(2.0 ** k))
        v = _pick(big, K.mul(v, f64(2.0 ** -k)), v)
        e = K.add(e, _pick(big, i32(k), i32(0)))
    for k in _STEPS:
        small = K.lt(v, f64(2.0 ** (1 - k)))
        v = _pick(small, K.mul(v, f64(2.0 ** k)), v)
        e = K.sub(e, _pick(small, i32(k), i32(0)))
    # real = v * 2**e with v in [1, 2): frexp gives q = v / 2, exponent e + 1
    fixed = K.cast(I64, K.add(K.mul(v, f64(2.0 ** 30)), f64(0.5)))
    bump = K.eq(fixed, i64(1 << 31))
    mult = K.cast(I32, _pick(bump, i64(1 << 30), fixed))
    shift = K.add(e, _pick(bump, i32(2), i32(1)))
    flush = K.lt(shift, i32(-31))
    shift = _pick(K.gt(shift, i32(quant.MAX_SHIFT)), i32(quant.MAX_SHIFT), shift)
    return Multiplier(_pick(flush, i32(0), mult), _pick(flush, i32(0), shift))


# ------------------------------------------------------------- application

def _left_right(q: Multiplier) -> tuple[K.Expr, K.Expr]:
    s = q.shift
    left = _pick(K.gt(s, i32(0)), s, i32(0))
    right = _pick(K.lt(s, i32(0)), K.neg(s), i32(0))
    return left, right


def _srdhm(x: K.Expr, m: K.Expr) -> K.Expr:
    """``SaturatingRoundingDoublingHighMul(x, m)`` for ``m >= 0``, as an
    int64 expression holding an int32 value."""
    m64 = i64(int(m.value)) if isinstance(m, K.Const) else K.cast(I64, m)
    return K.shr(K.add(K.mul(K.cast(I64, x), m64), i64(1 << 30)), 31)


def _negative(v: K.Expr) -> K.Expr:
    return K.cast(v.dtype, K.lt(v, K.Const(0, v.dtype)))


def _rdbpot_static(v: K.Expr, e: int) -> K.Expr:
    """``RoundingDivideByPOT(v, e)`` of an int64 ``v`` holding an int32."""
    if e == 0:
        return v
    return K.shr(K.sub(K.add(v, i64(1 << (e - 1))), _negative(v)), e)


def _rdbpot_dynamic(v: K.Expr, e: K.Expr) -> K.Expr:
    mask = K.sub(K.shl(i64(1), e), i64(1))
    remainder = K.bit_and(v, mask)
    threshold = K.add(K.shr(mask, 1), _negative(v))
    return K.add(K.shr(v, e), K.cast(I64, K.gt(remainder, threshold)))


def multiply_double(x: K.Expr, q: Multiplier) -> K.Expr:
    """TFLite's ``MultiplyByQuantizedMultiplier`` of an int32 ``x``
    (``quant.multiply_by_quantized_multiplier``); also its
    ``...SmallerThanOneExp`` form, whose shift is never positive."""
    assert x.dtype is I32
    static = q.static
    if static is not None:
        m, s = static
        if m == 0:
            return i32(0)
        left, right = max(s, 0), max(-s, 0)
        shifted = K.shl(x, left) if left else x
        return K.cast(I32, _rdbpot_static(_srdhm(shifted, i32(m)), right))
    left, right = _left_right(q)
    return K.cast(I32, _rdbpot_dynamic(_srdhm(K.shl(x, left), q.multiplier), right))


def multiply_single(x: K.Expr, q: Multiplier, to_nearest: bool) -> K.Expr:
    """TVM's ``FixedPointMultiply`` of an int32 ``x``, UPWARD (ties toward
    +infinity) or TONEAREST (ties away from zero), wrapped to int32
    (``quant.multiply_by_quantized_multiplier_single_rounding``)."""
    assert x.dtype is I32
    static = q.static
    if static is not None:
        m, s = static
        if m == 0:
            return i32(0)
        left, right = max(s, 0), max(-s, 0)
        total = 31 + right
        scaled = K.mul(K.cast(I64, x), i64(m << left))
        rounding: K.Expr = i64(1 << (total - 1))
        shift: K.Expr = i32(total)
    elif q.high_shift is not None:
        # every shift s <= -2, e = -s - 2 >= 0: the total shift is
        # t = 33 + e and the rounding term 2**(t-1) = 2**e * 2**32, so with
        # h = floor(v / 2**32) (the high word of the product, minus the
        # nudge) the result is floor((h + 2**e) / 2**(e+1)) -- exact,
        # floor divisions compose; |h| < 2**30, so the int32 sum cannot
        # overflow.  On a Cortex-M: SMULL, then 32-bit arithmetic.
        # The two floor divisions are one: floor((h + 2**e) / 2**(e+1)).
        # When every multiplier is positive the product is negative
        # exactly when x is, and the nudge -(v < 0) is -(x < 0) =
        # int64(x >> 31): SMLAL onto the sign word instead of a 64-bit
        # compare and subtract.
        scaled = K.mul(K.cast(I64, x), K.cast(I64, q.multiplier))
        if to_nearest and q.positive:
            scaled = K.add(scaled, K.cast(I64, K.shr(x, i32(31))))
        elif to_nearest:
            scaled = K.sub(scaled, _negative(scaled))
        high = K.cast(I32, K.shr(scaled, i32(32)))
        if q.high_round is not None and q.high_total is not None:
            # floor((h + 2**e) / 2**(e+1)) + z = floor((h + 2**e + z * 2**(e+1))
            # / 2**(e+1)): the zero point's addition folded into the table
            # (the caller checked that the sum stays inside int32).  (Adding
            # the term to the 64-bit sum before the high word is taken, for
            # one SMLAL onto it, made gcc 12 spill: MobileNet +0.7%.)
            return K.shr(K.add(high, q.high_round), q.high_total)
        e = q.high_shift
        return K.shr(K.add(high, K.shl(i32(1), e)), K.add(e, i32(1)))
    else:
        left, right = _left_right(q)
        total_e = K.add(right, i32(31))
        scaled = K.mul(K.shl(K.cast(I64, x), left), K.cast(I64, q.multiplier))
        rounding = K.shl(i64(1), K.sub(total_e, i32(1)))
        shift = total_e
    summed = K.add(scaled, rounding)
    if to_nearest:
        summed = K.sub(summed, _negative(scaled))
    return K.cast(I32, K.shr(summed, shift))


def multiply_int64(x: K.Expr, q: Multiplier) -> K.Expr:
    """TFLite's 64-bit ``MultiplyByQuantizedMultiplier`` of an int64 ``x``
    (``quant.multiply_by_quantized_multiplier_int64``): the multiplier
    rounded to 15 bits, one int64 product, one rounding shift (ties toward
    +infinity), wrapped to int32.  A run-time shift is clamped so that the
    C shift stays defined (the reference rejects shifts above 7)."""
    assert x.dtype is I64
    static = q.static
    if static is not None:
        m, s = static
        reduced = (m + (1 << 15)) >> 16 if m < 0x7FFF0000 else 0x7FFF
        if reduced == 0:
            return i32(0)
        total = 15 - s
        assert 1 <= total <= 62, s
        return K.cast(I32, K.shr(K.add(K.mul(x, i64(reduced)), i64(1 << (total - 1))), total))
    m64 = K.cast(I64, q.multiplier)
    reduced = _pick(K.lt(q.multiplier, i32(0x7FFF0000)), K.shr(K.add(m64, i64(1 << 15)), 16),
                    i64(0x7FFF))
    total_e = K.maximum(K.sub(i32(15), q.shift), i32(1))
    rounding = K.shl(i64(1), K.sub(total_e, i32(1)))
    return K.cast(I32, K.shr(K.add(K.mul(x, reduced), rounding), total_e))


# ------------------------------------------------------------- saturation

#: the runtime's saturating narrowings of an int32
SATURATING_HELPERS = {DType.INT8: "aot_sat_i32_i8", DType.INT16: "aot_sat_i32_i16",
                      DType.UINT8: "aot_sat_i32_u8", DType.UINT16: "aot_sat_i32_u16"}


def saturate(x: K.Expr, dtype: DType) -> K.Expr:
    """Clamp an integer expression to ``dtype``'s range and convert
    (``quant.saturate``).  An int32 value narrowed to 8 or 16 bits calls
    the runtime's ``aot_sat_i32_<dtype>``: one ``SSAT``/``USAT`` where the
    compiler defines ``__ARM_FEATURE_SAT`` (gcc does not find it from
    min/max once a kernel clamps several outputs: the shared bound is
    hoisted into a register and the pattern no longer matches), a
    min/max in portable C elsewhere.  Other pairs: min/max (inline
    helpers in C) rather than selects, so the value is computed once
    without a temporary."""
    if x.dtype is DType.INT32 and dtype in SATURATING_HELPERS:
        return K.call(SATURATING_HELPERS[dtype], [x], dtype)
    lo, hi = K.dtype_range(dtype)
    xlo, xhi = K.dtype_range(x.dtype)
    if hi < xhi:
        x = K.minimum(x, K.Const(hi, x.dtype))
    if lo > xlo:
        x = K.maximum(x, K.Const(lo, x.dtype))
    return K.cast(dtype, x)


def saturate_int(value: int, dtype: DType) -> int:
    lo, hi = K.dtype_range(dtype)
    return min(max(value, lo), hi)


def round_half_away(x: K.Expr) -> K.Expr:
    """C's ``round`` in ``x``'s own float precision
    (``quant.round_half_away_from_zero``): ``trunc(x)`` plus
    ``copysign(1, x)`` when ``|x - trunc(x)| >= 0.5``; NaN and infinities
    pass through."""
    whole = K.math_call("trunc", x)
    one = K.Const(1.0, x.dtype)
    bump = K.ge(K.math_call("fabs", K.sub(x, whole)), K.Const(0.5, x.dtype))
    return _pick(bump, K.add(whole, K.math_call("copysign", one, x)), whole)
