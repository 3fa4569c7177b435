"""Operator family: fast approximations — ``fast_exp``, ``fast_tanh``,
``fast_erf`` and ``nn.fast_softmax`` (Relay's names; what the opt-in
``FastMath`` pass, :mod:`aot.passes.fast_math`, puts in place of ``exp``,
``tanh``, ``erf`` and ``nn.softmax``).

Design note
-----------
The float32 definitions are TOPI's, operation for operation in float32
(``include/tvm/topi/elemwise.h``, ``src/tir/op/op.cc``), so the interpreter
and the C kernels compute the same values (up to a C compiler's
contraction of ``a*b + c``):

* ``fast_exp``: ``x`` clamped to ``[-88.376, 88.376]``; ``n =
  floor(x*log2(e) + 1/2)``, ``f = x - n*ln(2)``; ``e^f`` by Cephes'
  degree-7 polynomial ``((((((p0 f + p1) f + p2) f + p3) f + p4) f + p5)
  f^2 + f + 1``; ``2^n`` built from its bits (``(n + 127) << 23``); the
  result is ``max(2^n * e^f, x)`` (TOPI's guard).  Below about ``-87.3``
  the result is 0 or a subnormal-free approximation (TOPI builds no
  subnormals); at the top of the clamp ``n = 128`` gives ``inf``.
* ``fast_tanh``: Eigen's rational approximation, ``x`` clamped to
  ``[-9, 9]``, odd numerator of degree 13 over even denominator of
  degree 6.
* ``fast_erf``: Eigen's rational approximation, ``x`` clamped to
  ``[-4, 4]``, odd numerator of degree 13 over even denominator of
  degree 8 (float16 data is computed in float32 and rounded once; TOPI
  evaluates the polynomial in float16).
* ``nn.fast_softmax``: TOPI's ``softmax_common`` with ``fast_exp``:
  row maximum, ``fast_exp(x - max)``, their float32 sum, the quotient.

Other float types (float64, and float16 for exp/tanh/softmax) fall back
to the exact functions, as TOPI's do; integer data is rejected.

Error bounds (``tests/ops/test_fast_math.py`` measures them over a dense
sweep of float32 inputs against the exact functions in float64):

==============  =====================  ==================
operator        inputs                 max relative error
==============  =====================  ==================
fast_exp        [-1, 1]                1e-7
fast_exp        [-20, 20]              1.1e-6
fast_exp        [-87, 88]              4.1e-6
fast_tanh       [-9, 9]                5e-7
fast_erf        [-4, 4]                5e-7
nn.fast_softmax rows in [-20, 20]      5e-6
==============  =====================  ==================

(``fast_exp``'s error grows with ``|x|``, about ``5e-8 * |x|``: TOPI
reduces the argument with a single-precision ``ln 2``, not Cephes'
two-part constant.)  Outside the clamps ``fast_tanh`` is ``+-1`` (exact
in float32 past 9), ``fast_erf`` is ``+-1`` (absolute error below 2e-8
past 4).

Pattern kind: element-wise for the three functions, out-elemwise-fusable
for ``nn.fast_softmax`` (as ``nn.softmax``).
"""

from __future__ import annotations

import math
from typing import Sequence

from ..registry import RelResult
from ..types import Type
from .common import Attrs, PatternKind, RelationError, as_array, defop, np, tensor_arg
from .nn import SoftmaxAttrs

FAMILY = "elemwise"
F32 = np.float32

EXP_HI, EXP_LO = F32(88.3762626647950), F32(-88.3762626647949)
LOG2E, LN2 = F32(1.44269504088896341), F32(0.6931471805599453)
EXP_P = [F32(v) for v in (1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3, 4.1665795894E-2,
                          1.6666665459E-1, 5.0000001201E-1)]
TANH_ALPHA = [F32(v) for v in (-2.76076847742355e-16, 2.00018790482477e-13,
                               -8.60467152213735e-11, 5.12229709037114e-08,
                               1.48572235717979e-05, 6.37261928875436e-04,
                               4.89352455891786e-03)]     # alpha_13 ... alpha_1
TANH_BETA = [F32(v) for v in (1.19825839466702e-06, 1.18534705686654e-04,
                              2.26843463243900e-03, 4.89352518554385e-03)]  # beta_6 ... beta_0
ERF_ALPHA = [F32(v) for v in (-2.72614225801306e-10, 2.77068142495902e-08,
                              -2.10102402082508e-06, -5.69250639462346e-05,
                              -7.34990630326855e-04, -2.95459980854025e-03,
                              -1.60960333262415e-02)]     # alpha_13 ... alpha_1
ERF_BETA = [F32(v) for v in (-1.45660718464996e-05, -2.13374055278905e-04,
                             -1.68282697438203e-03, -7.37332916720468e-03,
                             -1.42647390514189e-02)]     # beta_8 ... beta_0


def _horner(x2: np.ndarray, coefs: list) -> np.ndarray:
    acc = x2 * coefs[0] + coefs[1]
    for c in coefs[2:]:
        acc = x2 * acc + c
    return acc


def fast_exp_f32(x: np.ndarray) -> np.ndarray:
    """TOPI's ``fast_exp_float32`` in float32 (see the design note)."""
    x = x.astype(F32)
    with np.errstate(all="ignore"):
        xc = np.maximum(np.minimum(x, EXP_HI), EXP_LO)
        n = np.floor(xc * LOG2E + F32(0.5))
        f = xc - n * LN2
        p = EXP_P
        y = (((((p[0] * f + p[1]) * f + p[2]) * f + p[3]) * f + p[4]) * f + p[5]) * f * f \
            + f + F32(1)
        biased = np.nan_to_num(n, nan=0.0).astype(np.int32) + 127   # (the saturating cast)
        ef = (biased.astype(np.uint32) << np.uint32(23)).view(F32)
        return np.maximum(ef * y, x)


def fast_tanh_f32(x: np.ndarray) -> np.ndarray:
    x = np.maximum(F32(-9), np.minimum(F32(9), x.astype(F32)))
    with np.errstate(all="ignore"):
        x2 = x * x
        return x * _horner(x2, TANH_ALPHA) / _horner(x2, TANH_BETA)


def fast_erf_f32(x: np.ndarray) -> np.ndarray:
    x = np.maximum(np.minimum(x.astype(F32), F32(4)), F32(-4))
    with np.errstate(all="ignore"):
        x2 = x * x
        return x * _horner(x2, ERF_ALPHA) / _horner(x2, ERF_BETA)


_erf64 = np.vectorize(math.erf, otypes=[np.float64])


def _fast(approx, exact, also_f16: bool = False):
    def compute(args: Sequence[np.ndarray], attrs: object, out: Type) -> np.ndarray:
        (x,) = args
        if x.dtype == np.float32 or (also_f16 and x.dtype == np.float16):
            return as_array(approx(x), x.dtype)
        with np.errstate(all="ignore"):
            return as_array(exact(x.astype(np.float64)) if x.size else x.copy(), x.dtype)
    return compute


def _float_rel(args: Sequence[Type], attrs: Attrs) -> Type | None:
    out = tensor_arg(args, 0)
    if out is not None and not out.dtype.is_float:
        raise RelationError(f"needs a floating-point tensor, got {out.dtype}")
    return out


def _softmax_rel(args: Sequence[Type], attrs: SoftmaxAttrs) -> RelResult:
    """``nn.softmax``'s relation."""
    from ..registry import lookup
    op = lookup("nn.softmax")
    assert op is not None
    return op.rel(args, attrs)


def _fast_softmax(args: Sequence[np.ndarray], attrs: SoftmaxAttrs, out: Type) -> np.ndarray:
    (x,) = args
    if x.dtype != np.float32:
        x64 = x.astype(np.float64)
        with np.errstate(all="ignore"):
            e = np.exp(x64 - np.max(x64, axis=attrs.axis, keepdims=True))
            return as_array(e / np.sum(e, axis=attrs.axis, keepdims=True), x.dtype)
    with np.errstate(all="ignore"):
        e = fast_exp_f32(x - np.max(x, axis=attrs.axis, keepdims=True))
        total = np.moveaxis(e, attrs.axis, -1)
        s = np.zeros(total.shape[:-1], dtype=F32)
        for k in range(total.shape[-1]):          # float32, in order, as the C loop
            s = s + total[..., k]
        return e / np.expand_dims(s, attrs.axis)


EW = PatternKind.ELEMWISE
defop("fast_exp", arity=1, rel=_float_rel, pattern=EW,
      compute=_fast(fast_exp_f32, np.exp),
      doc="element-wise e ** x, TOPI's float32 approximation (exact for other floats)",
      family=FAMILY)
defop("fast_tanh", arity=1, rel=_float_rel, pattern=EW,
      compute=_fast(fast_tanh_f32, np.tanh),
      doc="element-wise tanh, Eigen's float32 rational approximation", family=FAMILY)
defop("fast_erf", arity=1, rel=_float_rel, pattern=EW,
      compute=_fast(fast_erf_f32, _erf64, also_f16=True),
      doc="element-wise erf, Eigen's rational approximation (float32 and float16)",
      family=FAMILY)
defop("nn.fast_softmax", arity=1, rel=_softmax_rel, pattern=PatternKind.OUT_ELEMWISE_FUSABLE,
      compute=_fast_softmax, doc="softmax along axis with fast_exp (float32)",
      attrs=SoftmaxAttrs, family="nn")

__all__ = ["fast_exp_f32", "fast_tanh_f32", "fast_erf_f32", "EXP_HI", "EXP_LO", "LOG2E", "LN2",
           "EXP_P", "TANH_ALPHA", "TANH_BETA", "ERF_ALPHA", "ERF_BETA"]
