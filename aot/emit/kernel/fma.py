"""The reference semantics of C99 ``fmaf`` / ``fma``: ``a * b + c`` rounded once.

Design note
-----------
The convolution and dense kernels accumulate with ``fmaf`` (one
instruction on every FPU we target: Cortex-M4F/M7/M33 ``vfma.f32``, x86
FMA3, AArch64 ``fmadd``; C99 requires the correctly rounded result, so the
value is the same on every conforming target).  The kernel evaluator must
compute exactly that, on NumPy arrays, without ``math.fma`` (Python 3.13).

float32: the product of two float32 values is exact in float64 (24 + 24
significant bits, exponents far inside float64's range), so ``s = p + c``
in float64 is the exact sum rounded once, to 53 bits.  Rounding ``s`` to
float32 is then a second rounding, and the two together differ from one
rounding of the exact sum only when ``s`` lands exactly on a midpoint
between two float32 neighbours while the exact sum does not (a float32
midpoint is a float64 value, so the first rounding can reach it but never
cross it).  TwoSum gives the exact error ``e = (p + c) - s``; at a midpoint
with ``e != 0`` the answer is the neighbour on ``e``'s side.  The largest
finite float32's upper "neighbour" is 2**128, which rounds to infinity.

float64: exact rational arithmetic per element (slow; no kernel of ours
uses a double fma today -- it is here so the semantics are total).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

__all__ = ["exact_fma"]


def exact_fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` rounded once to the arguments' float dtype."""
    a, b, c = np.asarray(a), np.asarray(b), np.asarray(c)
    if a.dtype == np.float32:
        return _fma32(a, b.astype(np.float32), c.astype(np.float32))
    return np.vectorize(_fma64, otypes=[np.float64])(a, b, c)


def _fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        p = a.astype(np.float64) * b.astype(np.float64)          # exact
        c64 = c.astype(np.float64)
        s = p + c64
        bb = s - p                                               # TwoSum
        err = (p - (s - bb)) + (c64 - bb)
        r = s.astype(np.float32)
        r64 = r.astype(np.float64)
        finite = np.isfinite(s)
        # the rounding of s overflowed: its neighbour below is FLT_MAX and
        # the value it stands for is 2**128
        r64 = np.where(np.isinf(r) & finite, np.copysign(2.0 ** 128, s), r64)
        toward = np.where(s > r64, np.float32(np.inf), np.float32(-np.inf))
        other = np.nextafter(np.where(np.isinf(r) & finite, np.copysign(np.float32(np.inf), r),
                                      r), toward).astype(np.float64)
        tie = finite & (s != r64) & (np.abs(s - r64) == np.abs(other - s)) & (err != 0)
        lo, hi = np.minimum(r64, other), np.maximum(r64, other)
        fixed = np.where(err > 0, hi, lo)
        out = np.where(tie, fixed, r64).astype(np.float32)
    return out


def _fma64(a: float, b: float, c: float) -> float:
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
        with np.errstate(all="ignore"):
            return float(np.float64(a) * np.float64(b) + np.float64(c))
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    if exact == 0:
        # the sign of an exact zero sum follows IEEE: -0 only if both are -0
        prod_neg = (np.signbit(a) != np.signbit(b))
        return -0.0 if (prod_neg and np.signbit(c)) else 0.0
    try:
        return float(exact)           # Fraction -> float rounds to nearest, ties to even
    except OverflowError:
        return float("inf") if exact > 0 else float("-inf")
