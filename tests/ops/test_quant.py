"""Exact fixed-point helpers (aot/ir/quant.py): golden values from TFLite's
semantics worked out by hand, and properties against exact rational
arithmetic (fractions.Fraction) as an independent reference."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aot.ir import quant
from aot.ir.quant import INT32_MAX, INT32_MIN, QuantizationError

int32s = st.integers(INT32_MIN, INT32_MAX)
multipliers = st.integers(1 << 30, INT32_MAX)


# ------------------------------------------------------- quantize_multiplier

@pytest.mark.parametrize("real, multiplier, shift", [
    # TFLite / NNAPI quantization_util tests
    (0.125, 1 << 30, -2),
    (0.25, 1 << 30, -1),
    (0.5, 1 << 30, 0),
    (1.0, 1 << 30, 1),
    (2.0, 1 << 30, 2),
    (4.0, 1 << 30, 3),
    (1 + 1e-11, 1073741824, 1),
    (1.25, 1342177280, 1),
    (1.50, 1610612736, 1),
    (1.75, 1879048192, 1),
    (2 - 1e-9, 2147483647, 1),
    (2 - 1e-11, 1073741824, 2),     # the mantissa rounds up to 2**31: renormalised
    (math.ldexp(1.0, -31), 1 << 30, -30),
    (math.ldexp(1.0, -32), 1 << 30, -31),
    (math.ldexp(0.99, -32), 0, 0),  # flushed to zero below 2**-32
    (math.ldexp(1.0, -33), 0, 0),
    (0.0, 0, 0),
    # 0.3 = 0.6 * 2**-1 ; 0.6 * 2**31 = 1288490188.8 -> 1288490189
    (0.3, 1288490189, -1),
    # a tie: (2**30 + 0.5) / 2**31 * 2**-3; the mantissa rounds away from zero
    ((2 ** 30 + 0.5) / 2 ** 34, 2 ** 30 + 1, -3),
    (math.ldexp(1.0, 29), 1 << 30, 30),
])
def test_quantize_multiplier_golden(real: float, multiplier: int, shift: int) -> None:
    qm = quant.quantize_multiplier(real)
    assert (qm.multiplier, qm.shift) == (multiplier, shift)


@pytest.mark.parametrize("real", [-0.5, float("nan"), float("inf"), float(1 << 30), 1e12])
def test_quantize_multiplier_rejects(real: float) -> None:
    with pytest.raises(QuantizationError):
        quant.quantize_multiplier(real)


@pytest.mark.parametrize("real", [0.0, 1.0, 1.5, -0.1])
def test_smaller_than_one_exp_rejects(real: float) -> None:
    with pytest.raises(QuantizationError, match=r"\(0, 1\)"):
        quant.quantize_multiplier_smaller_than_one_exp(real)


@settings(deadline=None)
@given(st.floats(min_value=2.0 ** -31, max_value=2.0 ** 29.9, allow_nan=False))
def test_quantize_multiplier_is_nearest_q31(real: float) -> None:
    qm = quant.quantize_multiplier(real)
    assert (1 << 30) <= qm.multiplier < (1 << 31)
    # the error is at most half a unit of the Q0.31 mantissa
    exact = Fraction(real)
    represented = Fraction(qm.multiplier) * Fraction(2) ** (qm.shift - 31)
    assert abs(represented - exact) <= Fraction(2) ** (qm.shift - 32)
    assert qm.real == float(represented)


# ------------------------------------------------------------------ SRDHM

def srdhm_reference(a: int, b: int) -> int:
    """High 32 bits of 2*a*b rounded half toward +infinity (what gemmlowp's
    nudge-and-truncate computes), saturating the single overflow."""
    if a == b == INT32_MIN:
        return INT32_MAX
    return math.floor(Fraction(a * b, 1 << 31) + Fraction(1, 2))


@pytest.mark.parametrize("a, b, expected", [
    (1, 1 << 30, 1),            # +0.5 -> 1
    (-1, 1 << 30, 0),           # -0.5 -> 0 (toward +infinity)
    (3, 1 << 30, 2),            # +1.5 -> 2
    (-3, 1 << 30, -1),          # -1.5 -> -1
    (-5, 1 << 30, -2),          # -2.5 -> -2
    (100, INT32_MAX, 100),      # 100 * (1 - 2**-31) -> 100
    (-100, INT32_MAX, -100),
    (INT32_MIN, INT32_MIN, INT32_MAX),   # the only overflow saturates
    (INT32_MIN, INT32_MAX, -INT32_MAX),
    (INT32_MAX, INT32_MAX, INT32_MAX - 1),
    (0, INT32_MAX, 0),
])
def test_srdhm_golden(a: int, b: int, expected: int) -> None:
    assert int(quant.saturating_rounding_doubling_high_mul(a, b)) == expected


@settings(deadline=None)
@given(int32s, int32s)
def test_srdhm_matches_exact_rounding(a: int, b: int) -> None:
    assert int(quant.saturating_rounding_doubling_high_mul(a, b)) == srdhm_reference(a, b)


def test_srdhm_vectorised() -> None:
    a = np.array([1, -1, 3, -3])
    got = quant.saturating_rounding_doubling_high_mul(a, 1 << 30)
    assert got.tolist() == [1, 0, 2, -1]


# ------------------------------------------------------------------ RDBPOT

def rdbpot_reference(x: int, e: int) -> int:
    """x / 2**e rounded to nearest, ties away from zero."""
    v = Fraction(x, 1 << e)
    magnitude = math.floor(abs(v) + Fraction(1, 2))
    return magnitude if v >= 0 else -magnitude


@pytest.mark.parametrize("x, e, expected", [
    (5, 1, 3), (-5, 1, -3), (6, 1, 3), (-6, 1, -3), (7, 1, 4), (-7, 1, -4),
    (3, 2, 1), (-3, 2, -1), (2, 2, 1), (-2, 2, -1), (1, 2, 0), (-1, 2, 0),
    (12, 3, 2), (-12, 3, -2), (11, 3, 1), (-11, 3, -1),
    (INT32_MAX, 31, 1), (INT32_MIN, 31, -1), (-(1 << 30), 31, -1), ((1 << 30) - 1, 31, 0),
    (123, 0, 123), (-123, 0, -123),
])
def test_rdbpot_golden(x: int, e: int, expected: int) -> None:
    assert int(quant.rounding_divide_by_pot(x, e)) == expected


@settings(deadline=None)
@given(int32s, st.integers(0, 31))
def test_rdbpot_matches_exact_rounding(x: int, e: int) -> None:
    assert int(quant.rounding_divide_by_pot(x, e)) == rdbpot_reference(x, e)


def test_rdbpot_per_element_exponents() -> None:
    got = quant.rounding_divide_by_pot(np.array([5, 5, -5]), np.array([0, 1, 2]))
    assert got.tolist() == [5, 3, -1]


# ------------------------------------------- MultiplyByQuantizedMultiplier

def double_rounding_reference(x: int, m: int, shift: int) -> int:
    left, right = max(shift, 0), max(-shift, 0)
    shifted = quant.wrap_int32(x << left).item()
    return rdbpot_reference(srdhm_reference(shifted, m), right)


@pytest.mark.parametrize("x, m, shift, expected", [
    (5, 1 << 30, 0, 3),          # 2.5 -> 3
    (-5, 1 << 30, 0, -2),        # -2.5 -> -2: SRDHM's tie goes toward +inf
    (6, 1 << 30, -1, 2),         # 1.5: SRDHM exact (3), RDBPOT tie away -> 2
    (-6, 1 << 30, -1, -2),       # -1.5 -> -2 (RDBPOT ties away from zero)
    (1, (1 << 30) + 1, -1, 1),   # ~0.25 but the two roundings give 1
    (3, 1 << 30, 2, 6),          # real multiplier 2
    (-7, 1 << 30, 1, -7),        # multiplier 1 is the identity
    (1000, 1288490189, -1, 300),     # 0.3
    (-1000, 1288490189, -1, -300),
    (127, 1 << 30, -31, 0),
])
def test_multiply_by_quantized_multiplier_golden(x: int, m: int, shift: int,
                                                 expected: int) -> None:
    assert int(quant.multiply_by_quantized_multiplier(x, m, shift)) == expected


@settings(deadline=None)
@given(int32s, multipliers, st.integers(-31, 30))
def test_multiply_by_quantized_multiplier_reference(x: int, m: int, shift: int) -> None:
    assert int(quant.multiply_by_quantized_multiplier(x, m, shift)) == \
        double_rounding_reference(x, m, shift)


@settings(deadline=None)
@given(st.integers(-(1 << 20), 1 << 20), multipliers, st.integers(-31, 0))
def test_double_rounding_error_is_small(x: int, m: int, shift: int) -> None:
    exact = Fraction(x * m) * Fraction(2) ** (shift - 31)
    got = int(quant.multiply_by_quantized_multiplier(x, m, shift))
    assert abs(got - exact) <= 1


def test_smaller_than_one_exp_is_a_right_shift() -> None:
    got = quant.multiply_by_quantized_multiplier_smaller_than_one_exp(
        np.array([6, -6, 1 << 20]), 1 << 30, -1)
    assert got.tolist() == [2, -2, 1 << 18]


# ---------------------------------------------------------- single rounding

def single_rounding_reference(x: int, m: int, shift: int, to_nearest: bool) -> int:
    v = Fraction(x * m) * Fraction(2) ** (shift - 31)
    if to_nearest:
        magnitude = math.floor(abs(v) + Fraction(1, 2))
        r = magnitude if v >= 0 else -magnitude
    else:
        r = math.floor(v + Fraction(1, 2))
    return quant.wrap_int32(r).item()


@pytest.mark.parametrize("x, m, shift, upward, tonearest", [
    (5, 1 << 30, 0, 3, 3),        # 2.5
    (-5, 1 << 30, 0, -2, -3),     # -2.5: UPWARD toward +inf, TONEAREST away
    (-3, 1 << 30, 0, -1, -2),     # -1.5
    (-6, 1 << 30, -1, -1, -2),    # -1.5
    (1, (1 << 30) + 1, -1, 0, 0),  # ~0.25: one rounding only (double rounding gives 1)
    (3, 1 << 30, 2, 6, 6),
    (1 << 30, 1 << 30, 2, INT32_MIN, INT32_MIN),   # 2**31 wraps to int32
    # the corpus program: fixed_point_multiply(multiplier=2080045879, shift=-4)
    (100, 2080045879, -4, 6, 6),
    (-100, 2080045879, -4, -6, -6),
    (INT32_MAX, 2080045879, -4, 130002867, 130002867),
])
def test_single_rounding_golden(x: int, m: int, shift: int, upward: int,
                                tonearest: int) -> None:
    f = quant.multiply_by_quantized_multiplier_single_rounding
    assert int(f(x, m, shift)) == upward
    assert int(f(x, m, shift, to_nearest=True)) == tonearest


@settings(deadline=None)
@given(int32s, multipliers, st.integers(-31, 30), st.booleans())
def test_single_rounding_reference(x: int, m: int, shift: int, to_nearest: bool) -> None:
    got = quant.multiply_by_quantized_multiplier_single_rounding(x, m, shift, to_nearest)
    if abs(x) * m < (1 << 62) >> max(shift, 0):   # no int64 overflow: exact reference
        assert int(got) == single_rounding_reference(x, m, shift, to_nearest)


# ------------------------------------------------------------ wrap, saturate

def test_wrap_int32() -> None:
    got = quant.wrap_int32([1 << 31, -(1 << 31) - 1, 5, -5, (1 << 32) + 7])
    assert got.tolist() == [INT32_MIN, INT32_MAX, 5, -5, 7]


@pytest.mark.parametrize("dtype, values, expected", [
    (np.int8, [-129, -128, 0, 127, 128, 1 << 40], [-128, -128, 0, 127, 127, 127]),
    (np.uint8, [-1, 0, 255, 256], [0, 0, 255, 255]),
    (np.int16, [-40000, 40000], [-32768, 32767]),
    (np.int32, [-(1 << 33), 1 << 33], [INT32_MIN, INT32_MAX]),
])
def test_saturate(dtype: type, values: list[int], expected: list[int]) -> None:
    got = quant.saturate(np.array(values, dtype=np.int64), dtype)
    assert got.dtype == dtype and got.tolist() == expected


# ------------------------------------------------------------ float rounding

def test_round_half_away_from_zero_float32() -> None:
    x = np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.49999997, 8388609.0,
                  -0.0, 0.0, np.inf, -np.inf, 1e30], dtype=np.float32)
    got = quant.round_half_away_from_zero(x)
    assert got.dtype == np.float32
    assert got.tolist() == [1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 0.0, -0.0, 8388609.0,
                            -0.0, 0.0, np.inf, -np.inf, np.float32(1e30)]
    assert np.isnan(quant.round_half_away_from_zero(np.array([np.nan], np.float32)))[0]


@settings(deadline=None, max_examples=200)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_round_half_away_matches_exact(x: float) -> None:
    got = float(quant.round_half_away_from_zero(np.array([x], dtype=np.float32))[0])
    v = Fraction(x)
    magnitude = math.floor(abs(v) + Fraction(1, 2))
    assert got == (magnitude if v >= 0 else -magnitude)
