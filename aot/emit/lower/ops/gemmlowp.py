"""gemmlowp's fixed-point functions in kernel IR: the exact counterpart of
:mod:`aot.ir.gemmlowp` (read its design note first), for the lowerings
that need ``exp`` and ``1 / (1 + x)`` in integers (qnn.softmax).

Design note
-----------
The functions reuse their intermediate values several times (``x``,
``x**2`` and the running result of the barrel shifter's seven
conditional multiplications), so they are built as a sequence of
declared int32 temporaries (:class:`Seq`) rather than one expression:
the C stays linear in the number of steps and reads like gemmlowp's
code.  Identities (``>>`` arithmetic, products int64):

* ``SaturatingRoundingDoublingHighMul(a, b) = (a*b + 2**30) >> 31`` for
  every int32 pair but ``a == b == INT32_MIN`` (see
  :mod:`.fixed_point`, whose derivation holds for either sign of the
  product); no call below can meet that pair (the operands are bounded
  away from ``INT32_MIN``: the exp polynomial works on ``[-1/4, 1/4)``,
  the reciprocal on ``[1/2, 3]`` in Q2.29 and probabilities are
  non-negative).
* ``RoundingDivideByPOT(v, e)``, ties away from zero, is ``(v + 2**(e-1) -
  (v < 0)) >> e`` in int64 for a constant ``e >= 1``.
* The saturating left shift is two selects on a temporary.
* ``CountLeadingZeros`` of a positive int32 is ``31`` minus the position
  of its highest set bit, found by five conditional shifts (16, 8, 4, 2,
  1).
"""

from __future__ import annotations

from ....ir import gemmlowp as ref
from ....ir.quant import INT32_MAX, INT32_MIN
from ...kernel import ir as K
from ..registry import LowerContext
from .fixed_point import I32, I64, i32, i64

__all__ = ["Seq", "srdhm", "rdbpot", "exp_on_negative_values",
           "one_over_one_plus_x_for_x_in_0_1", "count_leading_zeros_positive"]


class Seq:
    """Statements under construction; :meth:`let` declares a temporary."""

    def __init__(self, ctx: LowerContext) -> None:
        self.ctx = ctx
        self.stmts: list[K.Stmt] = []

    def let(self, value: K.Expr, base: str = "t") -> K.Var:
        v = self.ctx.scalar(base, value.dtype)
        self.stmts.append(K.Decl(v, value))
        return v

    def assign(self, var: K.Var, value: K.Expr) -> None:
        self.stmts.append(K.Assign(var, value))


def srdhm(a: K.Expr, b: K.Expr) -> K.Expr:
    """``SaturatingRoundingDoublingHighMul`` of int32 ``a``, ``b`` (int32)."""
    b64 = i64(int(b.value)) if isinstance(b, K.Const) else K.cast(I64, b)
    return K.cast(I32, K.shr(K.add(K.mul(K.cast(I64, a), b64), i64(1 << 30)), 31))


def _negative(v: K.Expr) -> K.Expr:
    return K.cast(v.dtype, K.lt(v, K.Const(0, v.dtype)))


def rdbpot(v: K.Expr, e: int) -> K.Expr:
    """``RoundingDivideByPOT(v, e)`` of an int32 ``v``, constant ``e``
    (int32 result)."""
    if e == 0:
        return v
    v64 = K.cast(I64, v)
    return K.cast(I32, K.shr(K.sub(K.add(v64, i64(1 << (e - 1))), _negative(v64)), e))


def _saturating_shl(s: Seq, x: K.Expr, e: int) -> K.Var:
    xv = x if isinstance(x, K.Var) else s.let(x)
    threshold = (1 << (31 - e)) - 1
    return s.let(K.select(K.gt(xv, i32(threshold)), i32(INT32_MAX),
                          K.select(K.lt(xv, i32(-threshold)), i32(INT32_MIN), K.shl(xv, e))))


def _exp_quarter(s: Seq, a: K.Expr) -> K.Var:
    """``exp`` on ``[-1/4, 0)`` (Q0.31)."""
    x = s.let(K.add(a, i32(1 << 28)), "x")
    x2 = s.let(srdhm(x, x), "x2")
    x3 = s.let(srdhm(x2, x), "x3")
    x4 = s.let(srdhm(x2, x2), "x4")
    inner = s.let(K.add(srdhm(K.add(rdbpot(x4, 2), x3), i32(ref.ONE_THIRD)), x2))
    poly = s.let(rdbpot(inner, 1))
    c = i32(ref.EXP_CONSTANT_TERM)
    return s.let(K.add(c, srdhm(c, K.add(x, poly))), "ex")


def exp_on_negative_values(s: Seq, a: K.Var, integer_bits: int) -> K.Var:
    """``exp(a)``, ``a <= 0`` in ``Q(integer_bits)``, result Q0.31."""
    assert 1 <= integer_bits <= 5
    frac = 31 - integer_bits
    quarter = 1 << (frac - 2)
    a_mod = s.let(K.sub(K.bit_and(a, i32(quarter - 1)), i32(quarter)), "am")
    result = _exp_quarter(s, _saturating_shl(s, a_mod, integer_bits))
    remainder = s.let(K.sub(a_mod, a), "rem")
    for k, multiplier in ref.EXP_BARREL:
        if integer_bits > k:
            bit = K.ne(K.bit_and(remainder, i32(1 << (frac + k))), i32(0))
            s.assign(result, K.select(bit, srdhm(result, i32(multiplier)), result))
    s.assign(result, K.select(K.eq(a, i32(0)), i32(INT32_MAX), result))
    return result


def one_over_one_plus_x_for_x_in_0_1(s: Seq, a: K.Expr) -> K.Var:
    """``1 / (1 + a)``, ``a`` in ``[0, 1)``, Q0.31 in and out.
    ``RoundingHalfSum(a, INT32_MAX)`` is ``(a + 2**31) >> 1`` for ``a >= 0``."""
    half = s.let(K.cast(I32, K.shr(K.add(K.cast(I64, a), i64(1 << 31)), 1)), "hd")
    x = s.let(K.add(i32(ref.RECIP_48_OVER_17), srdhm(half, i32(ref.RECIP_NEG_32_OVER_17))), "nr")
    for _ in range(3):
        one_minus = K.sub(i32(1 << 29), srdhm(half, x))
        step = _saturating_shl(s, srdhm(x, one_minus), 2)
        s.assign(x, K.add(x, step))
    return _saturating_shl(s, x, 1)


def count_leading_zeros_positive(s: Seq, v: K.Expr) -> K.Var:
    """``CountLeadingZeros(uint32(v))`` of an int32 ``v >= 1``."""
    rest = s.let(v, "clzv")
    top = s.let(i32(0), "msb")
    for k in (16, 8, 4, 2, 1):
        big = K.ge(rest, i32(1 << k))
        s.assign(top, K.add(top, K.select(big, i32(k), i32(0))))
        s.assign(rest, K.select(big, K.shr(rest, k), rest))
    return s.let(K.sub(i32(31), top), "clz")
