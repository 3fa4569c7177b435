"""Value ranges of integer kernel-IR expressions, and the comparisons
they decide.

Compilers warn (-Wtype-limits, -Wtautological-compare) about comparisons
whose result follows from the operands' types or from the expression's
shape (``u >= 0`` on unsigned, ``x < x``, ``(x & 4) == 3``).  Kernels must
not contain them: :mod:`aot.emit.kernel.simplify` folds what
:func:`decided_comparison` decides, and :mod:`aot.emit.kernel.verify`
rejects what is left.  :func:`int_range` is deliberately conservative: it
tracks constants, value-preserving casts and masks with a non-negative
constant, and otherwise answers the dtype's whole range.
"""

from __future__ import annotations

from ...ir.dtype import DType
from .ir import BinaryOperator, BinOp, Cast, Const, Expr, check, dtype_range

__all__ = ["int_range", "decided_comparison"]


def int_range(e: Expr) -> tuple[int, int]:
    """Bounds of an integer or bool expression's value (conservative:
    constants, bool-valued nodes and value-preserving casts are tracked)."""
    t = e.dtype
    check(t.is_int or t is DType.BOOL, f"int_range of a {t} expression")
    if isinstance(e, Const):
        return int(e.value), int(e.value)
    lo, hi = dtype_range(t)
    if isinstance(e, Cast) and (e.a.dtype.is_int or e.a.dtype is DType.BOOL):
        slo, shi = int_range(e.a)
        if lo <= slo and shi <= hi:     # value-preserving conversion
            return slo, shi
    if isinstance(e, BinOp) and e.op is BinaryOperator.BIT_AND:
        masks = [int(x.value) for x in (e.a, e.b) if isinstance(x, Const) and int(x.value) >= 0]
        if masks:
            return 0, min(masks)
    return lo, hi


def _bits(value: int, t: DType) -> int:
    return value % (1 << t.bits)


def _decided_by_bits(e: BinOp) -> bool | None:
    """``(x & C1) == C2`` with a bit of C2 outside C1, or ``(x | C1) == C2``
    with a bit of C1 outside C2, is never true (gcc: -Wtautological-compare)."""
    if e.op not in (BinaryOperator.EQ, BinaryOperator.NE):
        return None
    for masked, other in ((e.a, e.b), (e.b, e.a)):
        if not (isinstance(other, Const) and isinstance(masked, BinOp)
                and masked.op in (BinaryOperator.BIT_AND, BinaryOperator.BIT_OR)):
            continue
        consts = [x for x in (masked.a, masked.b) if isinstance(x, Const)]
        if not consts:
            continue
        t = other.dtype
        c1, c2 = _bits(int(consts[0].value), t), _bits(int(other.value), t)
        if (masked.op is BinaryOperator.BIT_AND and c2 & ~c1) or \
                (masked.op is BinaryOperator.BIT_OR and c1 & ~c2):
            return e.op is BinaryOperator.NE
    return None


def decided_comparison(e: BinOp) -> bool | None:
    """The result of an integer comparison when its operands' value ranges
    already decide it (``u >= 0`` on unsigned) or both sides are the same
    expression, else None.  Compilers warn
    about such comparisons (-Wtype-limits), so kernels must not contain
    them: :mod:`aot.emit.kernel.simplify` folds them."""
    if not e.op.is_comparison or not (e.a.dtype.is_int or e.a.dtype is DType.BOOL):
        return None
    if e.a == e.b:      # x < x (clang: -Wtautological-compare)
        return e.op in (BinaryOperator.EQ, BinaryOperator.LE, BinaryOperator.GE)
    by_bits = _decided_by_bits(e)
    if by_bits is not None:
        return by_bits
    (alo, ahi), (blo, bhi) = int_range(e.a), int_range(e.b)
    if e.op is BinaryOperator.LT:
        return True if ahi < blo else False if alo >= bhi else None
    if e.op is BinaryOperator.LE:
        return True if ahi <= blo else False if alo > bhi else None
    if e.op is BinaryOperator.GT:
        return True if alo > bhi else False if ahi <= blo else None
    if e.op is BinaryOperator.GE:
        return True if alo >= bhi else False if ahi < blo else None
    if ahi < blo or bhi < alo:      # == and != on disjoint ranges
        return e.op is BinaryOperator.NE
    if alo == ahi == blo == bhi:
        return e.op is BinaryOperator.EQ
    return None
